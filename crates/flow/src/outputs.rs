//! Contract: the files a run leaves in `out_dir` (docs/dev/contracts.md §2):
//! tcpinfo.bin, rx.bin, rr.bin, udp.bin (each with `.schema.json`, created at start so a run
//! without such records still has empty, readable files), conns.jsonl (one line per
//! finished connection) and engine.json (written once, at exit). All buffered; `finish`
//! flushes everything.

use crate::conn::ConnLog;
use crate::records::{RecordFile, RR_FIELDS, RX_FIELDS, TCPINFO_FIELDS, UDP_FIELDS};
use crate::sampler::TickStats;
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct Outputs {
    pub dir: PathBuf,
    pub tcpinfo: RecordFile,
    pub rx: RecordFile,
    pub rr: RecordFile,
    pub udp: RecordFile,
    conns: BufWriter<File>,
    pub conns_written: u64,
}

#[derive(Serialize)]
pub struct EngineReport<'a> {
    pub version: u32,
    pub host: &'a str,
    pub t0_ns: Option<u64>,
    pub end_ns: u64,
    pub sample_interval_ns: u64,
    pub samples: u64,
    pub sample_gaps: u64,
    pub missed_ticks: u64,
    pub max_tick_late_ns: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub records: serde_json::Value,
    pub conns: u64,
    pub max_start_late_ns: u64,
    pub max_timer_late_ns: u64,
    pub stopped_by: &'a str,
    pub errors: &'a [String],
    pub errors_dropped: u64,
    /// Per udp_probe flow: sends, echoes, losses, send lateness (null without probes).
    pub udp_probes: serde_json::Value,
    /// Datagrams the udp_echo listeners sent back, and sends that failed.
    pub udp_echo: serde_json::Value,
}

impl Outputs {
    pub fn create(dir: &Path) -> std::io::Result<Outputs> {
        std::fs::create_dir_all(dir)?;
        Ok(Outputs {
            dir: dir.to_path_buf(),
            tcpinfo: RecordFile::create(dir, "tcpinfo.bin", "tcpinfo", TCPINFO_FIELDS)?,
            rx: RecordFile::create(dir, "rx.bin", "rx", RX_FIELDS)?,
            rr: RecordFile::create(dir, "rr.bin", "rr", RR_FIELDS)?,
            udp: RecordFile::create(dir, "udp.bin", "udp", UDP_FIELDS)?,
            conns: BufWriter::new(File::create(dir.join("conns.jsonl"))?),
            conns_written: 0,
        })
    }

    pub fn conn(&mut self, log: &ConnLog) -> std::io::Result<()> {
        self.conns_written += 1;
        serde_json::to_writer(&mut self.conns, log)?;
        self.conns.write_all(b"\n")
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.tcpinfo.flush()?;
        self.rx.flush()?;
        self.rr.flush()?;
        self.udp.flush()?;
        self.conns.flush()
    }

    pub fn engine_report(&self, mut r: EngineReport, ticks: TickStats) -> std::io::Result<()> {
        r.samples = ticks.samples;
        r.sample_gaps = ticks.gaps;
        r.missed_ticks = ticks.missed;
        r.max_tick_late_ns = ticks.max_late_ns;
        r.records = serde_json::json!({
            "tcpinfo": self.tcpinfo.records, "rx": self.rx.records, "rr": self.rr.records,
            "udp": self.udp.records
        });
        r.conns = self.conns_written;
        let text = serde_json::to_string_pretty(&r)? + "\n";
        std::fs::write(self.dir.join("engine.json"), text)
    }
}
