//! ccarena-trace — per-ACK `tcp:tcp_probe` tracer for one ccarena run.
//!
//! Contract (docs/dev/contracts.md §6, docs/probes.md):
//!
//! ```text
//! ccarena-trace --out DIR --netns /run/netns/<name> [--netns ...] [--ports LO-HI] [--bpf-stats] [--ring-kib N]
//! ```
//! Stats each `--netns` path for its namespace inode, loads bpf/probe/tcpprobe.bpf.o
//! (embedded at build time), puts the inodes and the port range into the program's
//! filter maps, attaches it to the tcp_probe tracepoint (tp_btf) and prints `READY`.
//! Then it writes every event to DIR/tcpprobe.bin (+ .schema.json) until SIGTERM or
//! SIGINT: detach (drop the BPF link), drain the ring buffer, flush, write
//! DIR/trace.json, print `DONE`, exit 0. The link and the program are fds of this
//! process, so nothing stays attached even if it is killed with SIGKILL.
//! Errors: one line `ccarena-trace: <attempt>: <object>: <cause>` (plus libbpf's log
//! tail for load failures); exit 2 for bad arguments, 1 at run time.
//!
//! No unsafe code: system calls go through ccarena-sys (docs/dev/libraries.md).
#![forbid(unsafe_code)]

mod args;
mod record;

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Duration;

use ccarena_sys::bpf;
use ccarena_sys::clock::now_ns;
use ccarena_sys::signal::SignalFd;
use ccarena_sys::{cpu, stdio::say};
use libbpf_rs::{set_print, MapCore, MapFlags, ObjectBuilder, PrintLevel, RingBufferBuilder};

static BPF_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tcpprobe.bpf.o"));
const POLL: Duration = Duration::from_millis(50);
const LOG_TAIL: usize = 30;

const USAGE: &str = "usage: ccarena-trace --out DIR --netns /run/netns/NAME [--netns ...] [--ports LO-HI] [--bpf-stats] [--ring-kib N]\n\
  Traces tcp:tcp_probe (one event per segment an ESTABLISHED socket receives: per ACK\n\
  on a data sender) of the sockets in the given network namespaces into DIR/tcpprobe.bin.\n\
  Prints READY once attached; on SIGTERM/SIGINT detaches, flushes, writes DIR/trace.json,\n\
  prints DONE. --bpf-stats: also measure the BPF program's run count and time (kernel\n\
  BPF_ENABLE_STATS while tracing; adds ~2 clock reads per event). --ring-kib: ring buffer\n\
  size (power of two, default 16384 KiB). See docs/probes.md.";

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture_log(level: PrintLevel, msg: String) {
    if matches!(level, PrintLevel::Debug) {
        return;
    }
    let mut log = LOG.lock().unwrap();
    log.extend(msg.lines().map(String::from));
    let n = log.len();
    if n > 4 * LOG_TAIL {
        log.drain(0..n - LOG_TAIL);
    }
}

struct Failure {
    code: i32,
    line: String,
}

fn fail(code: i32, attempt: &str, object: impl std::fmt::Display, cause: impl std::fmt::Display) -> Failure {
    Failure { code, line: format!("ccarena-trace: {attempt}: {object}: {cause}") }
}

fn bpf_fail(attempt: &str, object: &str, e: libbpf_rs::Error) -> Failure {
    let mut f = fail(1, attempt, object, format!("{e:#}"));
    let log = LOG.lock().unwrap();
    let start = log.len().saturating_sub(LOG_TAIL);
    for l in &log[start..] {
        f.line.push_str("\n  ");
        f.line.push_str(l);
    }
    f
}

/// The inode of the network namespace bind-mounted (or linked) at `p`.
fn netns_inode(p: &Path) -> Result<u32, Failure> {
    let md = std::fs::metadata(p).map_err(|e| fail(2, "stat network namespace", p.display(), e))?;
    if matches!(ccarena_sys::ns::is_namespace_file(p), Ok(false)) {
        return Err(fail(2, "check network namespace", p.display(), "not a namespace file (expected /run/netns/<name> or /proc/<pid>/ns/net)"));
    }
    u32::try_from(md.ino()).map_err(|_| fail(2, "check network namespace", p.display(), "inode does not fit in 32 bits"))
}

struct Sink {
    out: BufWriter<File>,
    events: u64,
    short: u64,
    first_t_ns: Option<u64>,
    last_t_ns: Option<u64>,
    write_error: Option<String>,
}

impl Sink {
    fn take(&mut self, data: &[u8]) {
        if data.len() < record::RECORD_SIZE {
            self.short += 1;
            return;
        }
        let rec = &data[..record::RECORD_SIZE];
        if let Some(p) = record::peek(rec) {
            self.first_t_ns.get_or_insert(p.t_ns);
            self.last_t_ns = Some(p.t_ns);
        }
        self.events += 1;
        if self.write_error.is_none() {
            if let Err(e) = self.out.write_all(rec) {
                self.write_error = Some(e.to_string());
            }
        }
    }
}

fn run() -> Result<(), Failure> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let a = match args::parse(&argv).map_err(|(arg, why)| fail(2, "parse arguments", arg, why))? {
        args::Parsed::Help => {
            println!("{USAGE}");
            return Ok(());
        }
        args::Parsed::Version => {
            println!("{}", env!("CCARENA_VERSION"));
            return Ok(());
        }
        args::Parsed::Run(a) => a,
    };
    let mut inodes = Vec::new();
    for p in &a.netns {
        inodes.push((p.clone(), netns_inode(p)?));
    }
    let out_dir: PathBuf = a.out.clone();
    std::fs::create_dir_all(&out_dir).map_err(|e| fail(1, "create output directory", out_dir.display(), e))?;
    let bin_path = out_dir.join("tcpprobe.bin");
    std::fs::write(out_dir.join("tcpprobe.bin.schema.json"), record::schema_json() + "\n")
        .map_err(|e| fail(1, "write", out_dir.join("tcpprobe.bin.schema.json").display(), e))?;
    let file = File::create(&bin_path).map_err(|e| fail(1, "create", bin_path.display(), e))?;

    set_print(Some((PrintLevel::Info, capture_log)));
    let mut open = ObjectBuilder::default().open_memory(BPF_OBJ).map_err(|e| bpf_fail("open BPF object", "tcpprobe.bpf.o", e))?;
    if a.ring_kib != args::DEFAULT_RING_KIB {
        let mut m = open.maps_mut().find(|m| m.name() == "events").ok_or_else(|| fail(1, "find map", "events", "not in tcpprobe.bpf.o"))?;
        m.set_max_entries(a.ring_kib * 1024).map_err(|e| bpf_fail("size ring buffer", "events", e))?;
    }
    let obj = open.load().map_err(|e| bpf_fail("load BPF object (needs root/CAP_BPF+CAP_PERFMON)", "tcpprobe.bpf.o", e))?;

    let map = |name: &str| {
        obj.maps().find(|m| m.name() == name).ok_or_else(|| fail(1, "find map", name, "not in tcpprobe.bpf.o"))
    };
    let filter = map("netns_filter")?;
    for (p, ino) in &inodes {
        filter
            .update(&ino.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(|e| bpf_fail("add network namespace to filter", &p.display().to_string(), e))?;
    }
    let cfg = map("cfg")?;
    let mut cfg_val = [0u8; 8];
    cfg_val[0..2].copy_from_slice(&a.ports.0.to_ne_bytes());
    cfg_val[2..4].copy_from_slice(&a.ports.1.to_ne_bytes());
    cfg.update(&0u32.to_ne_bytes(), &cfg_val, MapFlags::ANY).map_err(|e| bpf_fail("set port range", "cfg", e))?;
    let counters = map("counters")?;
    let events_map = map("events")?;

    let sigfd = SignalFd::new().map_err(|e| fail(1, "create", "signalfd", e))?;
    let sink = Rc::new(RefCell::new(Sink {
        out: BufWriter::with_capacity(1 << 20, file),
        events: 0,
        short: 0,
        first_t_ns: None,
        last_t_ns: None,
        write_error: None,
    }));
    let mut rbb = RingBufferBuilder::new();
    let s2 = Rc::clone(&sink);
    rbb.add(&events_map, move |data: &[u8]| {
        s2.borrow_mut().take(data);
        0
    })
    .map_err(|e| bpf_fail("set up ring buffer", "events", e))?;
    let rb = rbb.build().map_err(|e| bpf_fail("set up ring buffer", "events", e))?;

    let prog = obj.progs_mut().find(|p| p.name() == "tcp_probe").ok_or_else(|| fail(1, "find program", "tcp_probe", "not in object"))?;
    // BPF_ENABLE_STATS: the kernel counts run_cnt/run_time_ns of every program while
    // this fd is open (closed with the process).
    let stats_fd = if a.bpf_stats {
        Some(bpf::enable_run_time_stats().map_err(|e| fail(1, "enable BPF run-time statistics", "bpf(BPF_ENABLE_STATS)", e))?)
    } else {
        None
    };
    let link = prog.attach().map_err(|e| bpf_fail("attach", "tp_btf/tcp_probe", e))?;
    let t_attach = now_ns();
    say("READY");

    let mut poll_errors = 0u64;
    loop {
        if rb.poll(POLL).is_err() {
            poll_errors += 1;
        }
        let _ = rb.consume();
        if sigfd.pending() {
            break;
        }
        if sink.borrow().write_error.is_some() {
            break;
        }
    }
    let stats = stats_fd.map(|fd| {
        let r = bpf::run_stats(prog.as_fd());
        drop(fd); // statistics off
        match r {
            Ok(s) => serde_json::json!({"run_cnt": s.run_cnt, "run_time_ns": s.run_time_ns,
                "ns_per_run": if s.run_cnt > 0 { s.run_time_ns as f64 / s.run_cnt as f64 } else { 0.0 }}),
            Err(e) => serde_json::json!({"error": e.to_string()}),
        }
    });
    drop(link); // detach first, then drain what is left
    let t_detach = now_ns();
    let _ = rb.consume();
    drop(rb);

    let mut matched = 0u64;
    let mut lost = 0u64;
    for (i, slot) in [&mut matched, &mut lost].into_iter().enumerate() {
        if let Ok(Some(per_cpu)) = counters.lookup_percpu(&(i as u32).to_ne_bytes(), MapFlags::ANY) {
            *slot = per_cpu.iter().map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap())).sum();
        }
    }
    let mut s = sink.borrow_mut();
    if let Err(e) = s.out.flush() {
        s.write_error.get_or_insert(e.to_string());
    }
    let cpu::Usage { user_s: u, sys_s: sy, .. } = cpu::process_usage();
    let report = serde_json::json!({
        "version": 1,
        "events": s.events,
        "lost": lost,
        "matched": matched,
        "short_records": s.short,
        "poll_errors": poll_errors,
        "attached_ns": t_attach,
        "detached_ns": t_detach,
        "first_t_ns": s.first_t_ns,
        "last_t_ns": s.last_t_ns,
        "netns": inodes.iter().map(|(p, i)| serde_json::json!({"path": p.display().to_string(), "inode": i})).collect::<Vec<_>>(),
        "ports": [a.ports.0, a.ports.1],
        "ring_bytes": a.ring_kib as u64 * 1024,
        "cpu_user_s": u,
        "cpu_sys_s": sy,
        "write_error": s.write_error,
        "bpf_stats": stats,
    });
    let jp = out_dir.join("trace.json");
    std::fs::write(&jp, serde_json::to_string_pretty(&report).unwrap() + "\n").map_err(|e| fail(1, "write", jp.display(), e))?;
    if let Some(e) = &s.write_error {
        return Err(fail(1, "write", bin_path.display(), e));
    }
    say("DONE");
    Ok(())
}

fn main() {
    // Die with the orchestrator: a tracer must not outlive its run (contracts §6).
    ccarena_sys::parent::die_with_parent("ccarena-trace");
    if let Err(f) = run() {
        eprintln!("{}", f.line);
        std::process::exit(f.code);
    }
}
