//! The packet-I/O shell around the core: the ports (AF_PACKET sockets, optionally with
//! TPACKET receive rings, or AF_XDP sockets), one or two forwarding threads each running
//! its own `Link` core, and the files the run leaves (link_stats.bin, link_events.bin,
//! link.json).
//!
//! Contract: frames are forwarded unchanged (a `virtio_net_hdr` travels with each frame
//! so checksum-offload state — CHECKSUM_PARTIAL from a veth peer — survives the hop);
//! the shell reads the clock once per batch and passes it to the core; it measures how
//! late each release is against the core's due time and counts kernel-side receive drops.
//!
//! Here: `Shell` opens the ports and files before READY, runs the workers until a
//! signal, and reports. `worker` moves frames between the ports and the core, `timing`
//! is the workers' loop (sleep, busy-poll, real-time budget), `accounting` the shell's
//! self-accounting; `af_packet` and `xsk` are the kernel interfaces (over ccarena-sys,
//! which also holds the TPACKET receive ring).

pub mod accounting;
pub mod af_packet;
pub mod error;
pub mod hist;
pub mod timing;
pub mod worker;
pub mod xsk;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use crate::config::{Config, Io, RtYield};
use crate::link::{Link, E2W, W2E};
use crate::stats::{events_schema, stats_schema};
use accounting::ShellStats;
use af_packet::{PacketSocket, VNET_HDR_LEN};
use ccarena_sys::clock::{now_ns, set_timer_slack_ns};
use ccarena_sys::signal::SignalFd;
use ccarena_sys::mmsg::SendBatch;
use ccarena_sys::{cpu, sched};
use error::ShellError;
use ccarena_sys::packet_ring::RxRing;
use timing::fair_phase_ns;
use worker::{rx_batch, Worker};
use xsk::XskPort;

/// Slots of each receive ring (~100 ms of 1500-byte frames at 2 Gbit/s; ~26 MiB).
const RING_FRAMES: usize = 16384;
/// Nice of the forwarding thread while it runs as an ordinary task (Config::rt_yield):
/// the largest share among ordinary tasks, so it loses the CPU only to one that waits.
const FAIR_NICE: i32 = -20;

fn create(path: &Path) -> Result<File, ShellError> {
    File::create(path).map_err(|e| ShellError {
        attempt: "create".into(),
        object: path.display().to_string(),
        cause: e,
    })
}

/// Sockets and output files, opened before READY.
pub struct Shell {
    socks: Arc<[PacketSocket; 2]>,
    slot: usize,
    stats_w: Arc<Mutex<BufWriter<File>>>,
    events_w: Option<Arc<Mutex<BufWriter<File>>>>,
    pub start_ns: u64,
    cfg: Config,
    workers: Vec<Worker>,
    threads: usize,
    rings: [Option<RxRing>; 2],
    /// Bytes per receive-ring slot (0 without rings).
    ring_frame_bytes: usize,
    xsk: [Option<XskPort>; 2],
    /// Why io "auto" fell back to AF_PACKET.
    io_fallback: Option<String>,
}

impl Shell {
    /// Open both sockets and the output files. Nothing is forwarded yet.
    pub fn open(cfg: &Config) -> Result<Shell, ShellError> {
        let out_dir = Path::new(&cfg.out_dir);
        std::fs::create_dir_all(out_dir).map_err(|e| ShellError {
            attempt: "create out_dir".into(),
            object: cfg.out_dir.clone(),
            cause: e,
        })?;
        let (xsk, io_fallback) = open_xsk(cfg)?;
        let (west, east) = if xsk[0].is_some() {
            // AF_XDP carries the frames; the packet sockets only describe the ports
            (PacketSocket::describe(&cfg.west)?, PacketSocket::describe(&cfg.east)?)
        } else {
            (PacketSocket::open(&cfg.west)?, PacketSocket::open(&cfg.east)?)
        };
        // Room for the vnet header, an Ethernet header with one VLAN tag and the MTU.
        let slot = (VNET_HDR_LEN + 18 + west.mtu.max(east.mtu)).max(2048);
        let w = |name: &str, v: serde_json::Value| -> Result<(), ShellError> {
            let p = out_dir.join(name);
            std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).map_err(|e| ShellError {
                attempt: "write".into(),
                object: p.display().to_string(),
                cause: e,
            })
        };
        w("link_stats.bin.schema.json", stats_schema())?;
        let stats_w = Arc::new(Mutex::new(BufWriter::with_capacity(
            1 << 16,
            create(&out_dir.join("link_stats.bin"))?,
        )));
        let events_w = if cfg.link.event_log {
            w("link_events.bin.schema.json", events_schema())?;
            Some(Arc::new(Mutex::new(BufWriter::with_capacity(
                1 << 20,
                create(&out_dir.join("link_events.bin"))?,
            ))))
        } else {
            None
        };
        set_timer_slack_ns(1);
        let mut rings = [None, None];
        let mut ring_frame_bytes = 0;
        if cfg.rx_ring && xsk[0].is_none() {
            // tpacket2_hdr (32) + alignment (16) + vnet header + frame, 16-byte aligned.
            ring_frame_bytes = (64 + VNET_HDR_LEN + 18 + west.mtu.max(east.mtu) + 15) & !15;
            for (i, s) in [&west, &east].into_iter().enumerate() {
                rings[i] = Some(
                    RxRing::new(s.fd.as_fd(), ring_frame_bytes, RING_FRAMES).map_err(|e| ShellError::new(e.step, &s.ifname, e.cause))?,
                );
            }
        }
        Ok(Shell {
            xsk,
            io_fallback,
            ring_frame_bytes,
            socks: Arc::new([west, east]),
            slot,
            stats_w,
            events_w,
            start_ns: 0,
            cfg: cfg.clone(),
            workers: Vec::new(),
            threads: cfg.threads,
            rings,
        })
    }

    fn worker(&self, dirs: Vec<usize>, stop: &Arc<AtomicBool>) -> Worker {
        Worker {
            socks: self.socks.clone(),
            dirs,
            link: Link::new(&self.cfg.link, self.start_ns),
            slot: self.slot,
            pool: Vec::new(),
            rx: [rx_batch(), rx_batch()],
            tx_batch: SendBatch::new(),
            out: Vec::with_capacity(1024),
            by_dir: [Vec::with_capacity(1024), Vec::with_capacity(1024)],
            spin_ns: self.cfg.spin_ns,
            rt_busy_ns: self.cfg.rt_busy_ns,
            rt_nap_ns: self.cfg.rt_nap_ns,
            rt_fair: self.cfg.rt_yield == RtYield::Fair,
            fair_ns: fair_phase_ns(self.cfg.rt_busy_ns, self.cfg.rt_nap_ns, sched::rt_budget_us()),
            rt_prio: self.cfg.rt_priority,
            late_tol: self.cfg.late_tolerance_ns,
            stats_w: self.stats_w.clone(),
            events_w: self.events_w.clone(),
            enc: Vec::with_capacity(1 << 16),
            evbuf: Vec::new(),
            stop: stop.clone(),
            use_rx_ts: self.cfg.rx_timestamps,
            rings: [None, None],
            xsk: [None, None],
            rt: false,
            cpu: None,
            rx_poll_ns: if self.cfg.rx_ring || self.xsk[0].is_some() {
                self.cfg.rx_poll_ns
            } else {
                0
            },
            st: ShellStats::default(),
        }
    }

    /// Forward until SIGTERM/SIGINT arrives on `sig`: one thread per direction (or one
    /// thread for both with `threads: 1`).
    pub fn run(&mut self, sig: &SignalFd) -> Result<(), ShellError> {
        self.start_ns = now_ns();
        let stop = Arc::new(AtomicBool::new(false));
        let groups: Vec<Vec<usize>> = if self.threads >= 2 {
            vec![vec![W2E], vec![E2W]]
        } else {
            vec![vec![W2E, E2W]]
        };
        // each thread reads the one signalfd through its own duplicate
        let mut sigfds = (0..groups.len())
            .map(|_| sig.as_fd().try_clone_to_owned())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ShellError::new("dup", "signalfd", e))?;
        let mut handles = Vec::new();
        for (i, g) in groups.into_iter().enumerate() {
            let mut w = self.worker(g.clone(), &stop);
            for d in g {
                w.rings[d] = self.rings[d].take();
                w.xsk[d] = self.xsk[d].take();
            }
            let sigfd = sigfds.pop().expect("one per thread");
            let prio = self.cfg.rt_priority;
            let cpu = (!self.cfg.cpus.is_empty()).then(|| self.cfg.cpus[i % self.cfg.cpus.len()]);
            handles.push(std::thread::spawn(move || {
                if let Some(c) = cpu {
                    w.cpu = sched::pin_to_cpu(c).then_some(c);
                }
                if prio > 0 {
                    w.rt = sched::set_fifo(prio);
                    // "fair" phases run at nice -20; where that is refused, sleep instead
                    w.rt_fair = w.rt_fair && sched::set_nice(FAIR_NICE);
                }
                let r = w.run(sigfd.as_fd());
                (w, r)
            }));
        }
        let mut err = None;
        for h in handles {
            let (w, r) = h.join().expect("worker thread panicked");
            if let Err(e) = r {
                err.get_or_insert(e);
            }
            self.workers.push(w);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Close the statistics, flush the files and return link.json's content.
    pub fn finish(&mut self) -> serde_json::Value {
        let end = now_ns();
        for w in self.workers.iter_mut() {
            w.link.finish(end);
            w.flush_records();
        }
        let _ = self.stats_w.lock().unwrap().flush();
        if let Some(w) = self.events_w.as_ref() {
            let _ = w.lock().unwrap().flush();
        }
        let mut st = ShellStats::default();
        for w in self.workers.iter() {
            st.merge(&w.st);
        }
        for s in self.socks.iter() {
            let (pk, dr) = s.take_stats();
            st.kernel_rx_packets += pk;
            st.rx_ring_drops += dr;
        }
        let mut xdp = serde_json::Map::new();
        for w in self.workers.iter() {
            for x in w.xsk.iter().flatten() {
                let k = x.stats();
                // frames the kernel could not put on our receive ring
                // (rx_dropped already counts frames dropped for an empty fill ring)
                st.rx_ring_drops += k.rx_dropped + k.rx_ring_full;
                st.tx_errors += x.tx_lost + x.unsent() + k.tx_invalid_descs;
                st.tx_waits += x.tx_waits;
                xdp.insert(x.ifname.clone(), serde_json::json!({
                    "rx_dropped": k.rx_dropped, "rx_ring_full": k.rx_ring_full,
                    "rx_fill_ring_empty_descs": k.rx_fill_ring_empty_descs,
                    "rx_invalid_descs": k.rx_invalid_descs, "tx_invalid_descs": k.tx_invalid_descs,
                    "tx_lost": x.tx_lost, "tx_unsent_at_exit": x.unsent(), "tx_waits": x.tx_waits, "tx_refused": x.tx_refused,
                }));
            }
        }
        let xdp_on = !xdp.is_empty();
        let cpu::Usage { user_s: user, sys_s, max_rss_kib: rss } = cpu::process_usage();
        let dir = |i: usize| {
            let w = self.workers.iter().find(|w| w.dirs.contains(&i)).unwrap();
            let t = w.link.totals(i);
            let (ql, qb) = w.link.queue_len(i);
            let mut v = serde_json::to_value(t).unwrap();
            v["qlen_pkts_end"] = ql.into();
            v["qlen_bytes_end"] = qb.into();
            v["in_flight_end"] = w.link.in_flight(i).into();
            v
        };
        serde_json::json!({
            "version": 1,
            "start_ns": self.start_ns,
            "end_ns": end,
            "forwarded": st.forwarded,
            "rx_packets": st.rx_packets,
            "rx_ring_drops": st.rx_ring_drops,
            "rx_truncated": st.rx_truncated,
            "tx_errors": st.tx_errors,
            "tx_waits": st.tx_waits,
            "late_tolerance_ns": self.cfg.late_tolerance_ns,
            "late_packets": st.late_packets,
            "max_late_ns": st.late.max,
            "max_late_at_ns": st.max_late_at_ns,
            "p50_late_ns": st.late.quantile(0.5),
            "p99_late_ns": st.late.quantile(0.99),
            "p999_late_ns": st.late.quantile(0.999),
            "cpu_user_s": user,
            "cpu_sys_s": sys_s,
            "max_rss_kib": rss,
            "loops": st.loops,
            "sleeps": st.sleeps,
            "spins": st.spins,
            "naps": st.naps,
            "fair_phases": st.fair_phases,
            "realtime": self.workers.iter().all(|w| w.rt),
            "cpus": self.workers.iter().map(|w| w.cpu).collect::<Vec<_>>(),
            "timer_wake_late_p50_ns": st.wake_late.quantile(0.5),
            "timer_wake_late_p99_ns": st.wake_late.quantile(0.99),
            "spin_ns": self.cfg.spin_ns,
            "rt_busy_ns": self.cfg.rt_busy_ns,
            "rt_nap_ns": self.cfg.rt_nap_ns,
            "fair_phase_ns": self.workers.first().map(|w| w.fair_ns),
            "rt_yield": match self.cfg.rt_yield {
                RtYield::Fair => "fair",
                RtYield::Sleep => "sleep",
            },
            "rx_poll_ns": self.workers.first().map_or(0, |w| w.rx_poll_ns),
            "rx_timestamps": self.cfg.rx_timestamps,
            "threads": self.workers.len(),
            "rt_priority": self.cfg.rt_priority,
            // receive rings: slots per port and bytes per slot (memory = 2 x their product,
            // touched as traffic fills them)
            "rx_ring_frames": if self.cfg.rx_ring && !xdp_on { RING_FRAMES } else { 0 },
            "xdp_umem_frames": if xdp_on { xsk::UMEM_FRAMES } else { 0 },
            "rx_ring_frame_bytes": self.ring_frame_bytes,
            "io": if xdp_on { "AF_XDP copy mode, XDP arrival stamps, TX checksum metadata, epoll+timerfd" } else if self.cfg.rx_ring { "AF_PACKET TPACKET_V2 rx ring + sendmmsg, PACKET_VNET_HDR, epoll+timerfd" } else { "AF_PACKET recvmmsg/sendmmsg, PACKET_VNET_HDR, epoll+timerfd" },
            "io_kind": if xdp_on { "xdp" } else { "packet" },
            "io_fallback": self.io_fallback,
            "xdp": if xdp_on { serde_json::Value::Object(xdp) } else { serde_json::Value::Null },
            "w2e": dir(W2E),
            "e2w": dir(E2W),
        })
    }
}

/// Open the AF_XDP ports when the config asks for them: (ports, why "auto" fell back).
fn open_xsk(cfg: &Config) -> Result<([Option<XskPort>; 2], Option<String>), ShellError> {
    if cfg.io == Io::Packet {
        return Ok(([None, None], None));
    }
    if cfg.threads != 1 {
        return Ok(([None, None], Some("threads = 2 (AF_XDP runs in one thread)".into())));
    }
    let mtu = |n: &str| PacketSocket::describe(n).map(|p| p.mtu);
    let frame_max = mtu(&cfg.west)?.max(mtu(&cfg.east)?) + 18;
    let open = || -> Result<[Option<XskPort>; 2], ShellError> {
        let w = XskPort::open(&cfg.west, frame_max)?;
        let e = XskPort::open(&cfg.east, frame_max)?;
        Ok([Some(w), Some(e)])
    };
    match open() {
        Ok(p) => Ok((p, None)),
        Err(e) if cfg.io == Io::Auto => {
            eprintln!("ccarena-link: AF_XDP unavailable ({e}); using AF_PACKET");
            Ok(([None, None], Some(e.to_string())))
        }
        Err(e) => Err(e),
    }
}
