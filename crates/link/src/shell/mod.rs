//! The packet-I/O shell around the core: two AF_PACKET sockets (one per port), batched
//! `recvmmsg`/`sendmmsg`, and a timing loop that sleeps in `epoll_wait` on the sockets,
//! a timerfd armed `spin_ns` before the next deadline, and a signalfd; within `spin_ns`
//! of a deadline it busy-polls the sockets instead of sleeping (see docs/link.md for the
//! measurements behind this choice).
//!
//! Contract: frames are forwarded unchanged (a `virtio_net_hdr` travels with each frame
//! so checksum-offload state — CHECKSUM_PARTIAL from a veth peer — survives the hop);
//! the shell reads the clock once per batch and passes it to the core; it measures how
//! late each release is against the core's due time and counts kernel-side receive drops.

pub mod af_packet;
pub mod error;
pub mod hist;
pub mod rx_ring;
pub mod xsk;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::{Config, Io, RtYield};
use crate::link::{Link, Released, E2W, W2E};
use crate::packet::Packet;
use crate::stats::{events_schema, stats_schema, EventRecord};
use af_packet::{rx_timestamp, PacketSocket, VNET_HDR_LEN};
use ccarena_sys::clock::{mono_and_real_offset, nap, now_ns, set_timer_slack_ns};
use ccarena_sys::epoll::{Epoll, EV_IN};
use ccarena_sys::signal::{self, SignalFd};
use ccarena_sys::timer::TimerFd;
use ccarena_sys::{cpu, sched};
use error::ShellError;
use hist::Hist;
use rx_ring::RxRing;
use xsk::XskPort;

const BATCH: usize = 64;
const POOL_MAX: usize = 8192;
/// Slots of each receive ring (~100 ms of 1500-byte frames at 2 Gbit/s; ~26 MiB).
const RING_FRAMES: usize = 16384;
/// Longest sleep of an idle worker (ns): bounds how stale the statistics files get.
const IDLE_WAKE_NS: u64 = 100_000_000;
/// Pause before re-sending when the receiving backlog is full (ns), and the longest
/// total wait for one batch before its packet is dropped and counted in tx_errors.
const TX_WAIT_NAP_NS: u64 = 20_000;
const TX_WAIT_MAX_NS: u64 = 5_000_000;
/// Smallest busy-poll window before a deadline (ns).
const MIN_SPIN_NS: u64 = 5_000;
/// Nice of the forwarding thread while it runs as an ordinary task (Config::rt_yield):
/// the largest share among ordinary tasks, so it loses the CPU only to one that waits.
const FAIR_NICE: i32 = -20;

/// Receive-side batch: buffers stay allocated across calls; consumed ones are replaced.
struct RxBatch {
    bufs: Vec<Vec<u8>>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    /// Control buffers for the SO_TIMESTAMPNS receive timestamps (u64 for alignment).
    ctrl: Vec<[u64; 8]>,
    /// Last arrival time handed to the core (arrivals are kept nondecreasing).
    last_ns: u64,
}

/// Self-accounting of the shell (goes to link.json).
#[derive(Default)]
pub struct ShellStats {
    pub rx_packets: u64,
    pub rx_truncated: u64,
    pub rx_ring_drops: u64,
    pub kernel_rx_packets: u64,
    pub forwarded: u64,
    pub tx_errors: u64,
    /// Pauses because the receiving side's backlog was full (ENOBUFS).
    pub tx_waits: u64,
    pub late: Hist,
    pub late_packets: u64,
    pub loops: u64,
    pub sleeps: u64,
    pub spins: u64,
    pub naps: u64,
    /// times the thread ran as an ordinary task (`fair_ns`) instead of napping
    pub fair_phases: u64,
    /// Due time of the latest packet (when the worst lateness happened).
    pub max_late_at_ns: u64,
    /// How late the timerfd woke the thread (ns).
    pub wake_late: Hist,
}

/// One forwarding thread: receives on the ports of its directions, runs its own core
/// (directions are independent, so each thread owns a `Link` and uses only its
/// directions of it), sends out of the opposite ports.
pub struct Worker {
    socks: Arc<[PacketSocket; 2]>,
    dirs: Vec<usize>,
    link: Link,
    slot: usize,
    pool: Vec<Vec<u8>>,
    rx: [RxBatch; 2],
    tx_iovs: Vec<libc::iovec>,
    tx_msgs: Vec<libc::mmsghdr>,
    out: Vec<Released>,
    by_dir: [Vec<Released>; 2],
    spin_ns: u64,
    /// See Config::rt_busy_ns / rt_nap_ns (the default nap is ~5 % of the CPU, the
    /// share the kernel reserves for ordinary tasks: sched_rt_runtime_us 950000 of 1e6).
    rt_busy_ns: u64,
    rt_nap_ns: u64,
    /// Config::rt_yield == Fair (cleared if the kernel refuses the switch)
    rt_fair: bool,
    /// Length of a fair phase: rt_nap_ns, or more where the kernel's RT budget needs it.
    fair_ns: u64,
    rt_prio: i32,
    late_tol: u64,
    stats_w: Arc<Mutex<BufWriter<File>>>,
    events_w: Option<Arc<Mutex<BufWriter<File>>>>,
    enc: Vec<u8>,
    evbuf: Vec<EventRecord>,
    stop: Arc<AtomicBool>,
    use_rx_ts: bool,
    rt: bool,
    /// CPU the thread is pinned to (None: not pinned, or pinning was refused).
    cpu: Option<usize>,
    rx_poll_ns: u64,
    rings: [Option<RxRing>; 2],
    /// AF_XDP ports (io "xdp"): both, in the one worker, or neither.
    xsk: [Option<XskPort>; 2],
    pub st: ShellStats,
}

// SAFETY: the raw pointers inside iovec/mmsghdr are rebuilt before every system call
// and only point into buffers owned by the same Worker.
unsafe impl Send for Worker {}

fn rx_batch(slot: usize) -> RxBatch {
    RxBatch {
        bufs: (0..BATCH).map(|_| vec![0u8; slot]).collect(),
        iovs: vec![
            libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0
            };
            BATCH
        ],
        msgs: vec![unsafe { std::mem::zeroed() }; BATCH],
        ctrl: vec![[0u64; 8]; BATCH],
        last_ns: 0,
    }
}

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
                rings[i] = Some(RxRing::new(s, ring_frame_bytes, RING_FRAMES)?);
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
            rx: [rx_batch(self.slot), rx_batch(self.slot)],
            tx_iovs: Vec::with_capacity(1024),
            tx_msgs: Vec::with_capacity(1024),
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
        let mut handles = Vec::new();
        for (i, g) in groups.into_iter().enumerate() {
            let mut w = self.worker(g.clone(), &stop);
            for d in g {
                w.rings[d] = self.rings[d].take();
                w.xsk[d] = self.xsk[d].take();
            }
            let sigfd = sig.fd();
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
                let r = w.run(sigfd);
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

impl ShellStats {
    /// Account one release: due at `due_ns`, sent at `t`.
    fn count_release(&mut self, due_ns: u64, t: u64, tol: u64) {
        let late = t.saturating_sub(due_ns);
        if late > self.late.max {
            self.max_late_at_ns = due_ns;
        }
        self.late.add(late);
        if late > tol {
            self.late_packets += 1;
        }
    }

    fn merge(&mut self, o: &ShellStats) {
        self.rx_packets += o.rx_packets;
        self.rx_truncated += o.rx_truncated;
        self.forwarded += o.forwarded;
        self.tx_errors += o.tx_errors;
        self.tx_waits += o.tx_waits;
        if o.late.max >= self.late.max {
            self.max_late_at_ns = o.max_late_at_ns;
        }
        self.late.merge(&o.late);
        self.late_packets += o.late_packets;
        self.loops += o.loops;
        self.sleeps += o.sleeps;
        self.spins += o.spins;
        self.naps += o.naps;
        self.fair_phases += o.fair_phases;
        self.wake_late.merge(&o.wake_late);
    }
}

impl Worker {
    fn new_buf(&mut self) -> Vec<u8> {
        match self.pool.pop() {
            Some(mut b) => {
                // SAFETY: every pooled buffer was created as `vec![0; slot]`; its bytes
                // stay initialised when it is truncated, so restoring the length is sound.
                unsafe { b.set_len(self.slot) };
                b
            }
            None => vec![0u8; self.slot],
        }
    }

    fn recycle(&mut self, b: Vec<u8>) {
        if self.pool.len() < POOL_MAX && b.capacity() >= self.slot {
            self.pool.push(b);
        }
    }

    /// Take up to one batch from the rx ring of port `s` and hand it to the core.
    fn rx_ring(&mut self, s: usize, now: u64, offset: u64) -> usize {
        let mut n = 0;
        while n < BATCH {
            let mut b = None;
            let mut t = 0;
            {
                let Some(f) = self.rings[s].as_ref().unwrap().peek() else {
                    break;
                };
                if f.truncated || f.data.len() < VNET_HDR_LEN + 14 {
                    if self.st.rx_truncated == 0 {
                        eprintln!(
                            "ccarena-link: receive: {}: frame of {} bytes does not fit the MTU-sized slot; dropped (GRO/LRO on?)",
                            self.socks[s].ifname, f.wire_len
                        );
                    }
                    self.st.rx_truncated += 1;
                } else {
                    // Clamp to a clock read now, not to the loop's `now`: a frame that
                    // landed after the loop read its clock would otherwise get an earlier
                    // arrival time than its real one, and leave early.
                    let now = now.max(now_ns());
                    t = if self.use_rx_ts {
                        f.real_ns.wrapping_sub(offset).min(now)
                    } else {
                        now
                    };
                    let mut buf = self.pool.pop().unwrap_or_else(|| vec![0u8; self.slot]);
                    buf.clear();
                    buf.extend_from_slice(f.data);
                    b = Some(buf);
                }
            }
            self.rings[s].as_mut().unwrap().release();
            n += 1;
            if let Some(buf) = b {
                let t = t.max(self.rx[s].last_ns);
                self.rx[s].last_ns = t;
                self.st.rx_packets += 1;
                self.link.enqueue(t, s, Packet::new(buf, VNET_HDR_LEN));
            }
        }
        n
    }

    /// Receive up to one batch from socket `s` and hand it to the core. Returns the count.
    /// `now` is CLOCK_MONOTONIC at the start of this loop, `offset` is REALTIME − MONOTONIC.
    fn rx(&mut self, s: usize, now: u64, offset: u64) -> usize {
        if self.xsk[s].is_some() {
            return self.rx_xsk(s, now);
        }
        if self.rings[s].is_some() {
            return self.rx_ring(s, now, offset);
        }
        let fd = self.socks[s].fd;
        for i in 0..BATCH {
            if self.rx[s].bufs[i].len() != self.slot {
                let b = self.new_buf();
                self.rx[s].bufs[i] = b;
            }
        }
        let rb = &mut self.rx[s];
        for i in 0..BATCH {
            rb.iovs[i] = libc::iovec {
                iov_base: rb.bufs[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: rb.bufs[i].len(),
            };
            let h = &mut rb.msgs[i].msg_hdr;
            *h = unsafe { std::mem::zeroed() };
            h.msg_iov = &mut rb.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = rb.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = std::mem::size_of::<[u64; 8]>();
            rb.msgs[i].msg_len = 0;
        }
        let n = unsafe {
            libc::recvmmsg(
                fd,
                rb.msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n <= 0 {
            return 0;
        }
        let n = n as usize;
        // Every frame of this batch arrived before recvmmsg returned: clamp to a clock
        // read after it (the loop's `now` may predate arrivals and make them leave early).
        let now = now.max(now_ns());
        // Kernel receive timestamps are CLOCK_REALTIME: map them onto CLOCK_MONOTONIC
        // with the offset (refreshed every 10 ms).
        // W2E (0) arrives on the west socket (0); E2W (1) on the east socket (1).
        let dir = s;
        for i in 0..n {
            let len = self.rx[s].msgs[i].msg_len as usize;
            let trunc = self.rx[s].msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            if trunc || len < VNET_HDR_LEN + 14 {
                self.st.rx_truncated += 1;
                continue;
            }
            let t = match rx_timestamp(&self.rx[s].msgs[i].msg_hdr) {
                Some(real) if self.use_rx_ts => {
                    real.wrapping_sub(offset).min(now).max(self.rx[s].last_ns)
                }
                _ => now.max(self.rx[s].last_ns),
            };
            self.rx[s].last_ns = t;
            let mut b = std::mem::take(&mut self.rx[s].bufs[i]);
            b.truncate(len);
            self.st.rx_packets += 1;
            self.link.enqueue(t, dir, Packet::new(b, VNET_HDR_LEN));
        }
        n
    }

    /// Take up to one batch from the AF_XDP port `s` and hand it to the core.
    fn rx_xsk(&mut self, s: usize, now: u64) -> usize {
        let mut x = self.xsk[s].take().unwrap();
        let use_ts = self.use_rx_ts;
        // Every frame on the ring arrived before the clock read at the first frame, which
        // comes after recv has read the ring's producer (see rx_ring): a stamp is clamped
        // to it, never to an earlier clock.
        let mut now_read: Option<u64> = None;
        let slot = self.slot;
        let (link, pool, st, rb) = (&mut self.link, &mut self.pool, &mut self.st, &mut self.rx[s]);
        let n = x.recv(BATCH, |frame, stamp| {
            if frame.len() < 14 {
                st.rx_truncated += 1;
                return;
            }
            let now = *now_read.get_or_insert_with(|| now.max(now_ns()));
            // stamps are CLOCK_MONOTONIC (bpf_ktime_get_ns), the core's clock
            let t = if use_ts && stamp != 0 { stamp.min(now) } else { now };
            let t = t.max(rb.last_ns);
            rb.last_ns = t;
            let mut buf = pool.pop().unwrap_or_else(|| Vec::with_capacity(slot));
            buf.clear();
            buf.extend_from_slice(frame);
            st.rx_packets += 1;
            link.enqueue(t, s, Packet::new(buf, 0));
        });
        self.xsk[s] = Some(x);
        n
    }

    /// Send the released packets of direction `dir` out of the opposite port.
    fn tx(&mut self, dir: usize) {
        let mut pkts = std::mem::take(&mut self.by_dir[dir]);
        if pkts.is_empty() {
            self.by_dir[dir] = pkts;
            return;
        }
        if self.xsk[1 - dir].is_some() {
            let mut x = self.xsk[1 - dir].take().unwrap();
            let frames: Vec<(&[u8], u64)> = pkts.iter().map(|r| (r.pkt.frame(), r.due_ns)).collect();
            let (st, tol) = (&mut self.st, self.late_tol);
            x.send(&frames, TX_WAIT_NAP_NS, TX_WAIT_MAX_NS, |due, t| {
                st.count_release(due, t, tol);
                st.forwarded += 1;
            });
            drop(frames);
            self.xsk[1 - dir] = Some(x);
            for r in pkts.drain(..) {
                self.recycle(r.pkt.buf);
            }
            self.by_dir[dir] = pkts;
            return;
        }
        let fd = self.socks[1 - dir].fd;
        self.tx_iovs.clear();
        self.tx_msgs.clear();
        for r in pkts.iter_mut() {
            self.tx_iovs.push(libc::iovec {
                iov_base: r.pkt.buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: r.pkt.buf.len(),
            });
        }
        for i in 0..pkts.len() {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut self.tx_iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            self.tx_msgs.push(m);
        }
        let mut t = now_ns();
        let mut off = 0;
        let mut waited = 0;
        while off < pkts.len() {
            let k = (pkts.len() - off).min(1024);
            let r = unsafe { libc::sendmmsg(fd, self.tx_msgs.as_mut_ptr().add(off), k as u32, 0) };
            if r < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // The receiving side's backlog is full (with RPS the peer's packets
                    // queue for another CPU, netdev_max_backlog deep): wait for it to
                    // drain rather than drop — a late packet is counted as late, a
                    // dropped one would look like congestion loss.
                    Some(libc::ENOBUFS) if waited < TX_WAIT_MAX_NS => {
                        nap(TX_WAIT_NAP_NS);
                        waited += TX_WAIT_NAP_NS;
                        self.st.tx_waits += 1;
                        t = now_ns();
                        continue;
                    }
                    _ => {}
                }
                self.st.tx_errors += 1;
                off += 1;
            } else {
                for p in &pkts[off..off + r as usize] {
                    self.st.count_release(p.due_ns, t, self.late_tol);
                }
                self.st.forwarded += r as u64;
                off += r as usize;
            }
        }
        for r in pkts.drain(..) {
            self.recycle(r.pkt.buf);
        }
        self.by_dir[dir] = pkts;
    }

    fn flush_records(&mut self) {
        self.enc.clear();
        let dirs = self.dirs.clone();
        for r in self.link.drain_stats() {
            if dirs.contains(&(r.dir as usize)) {
                r.encode(&mut self.enc);
            }
        }
        if !self.enc.is_empty() {
            let _ = self.stats_w.lock().unwrap().write_all(&self.enc);
        }
        if let Some(w) = self.events_w.as_ref() {
            self.link.drain_events(&mut self.evbuf);
            self.enc.clear();
            for e in self.evbuf.drain(..) {
                e.encode(&mut self.enc);
            }
            if !self.enc.is_empty() {
                let _ = w.lock().unwrap().write_all(&self.enc);
            }
        }
    }

    /// Forward until a signal arrives on `sigfd` (or another worker saw one).
    ///
    /// Timing: sleep in epoll with a timerfd armed `spin` before the next deadline, then
    /// busy-poll the ports until the deadline. `spin` adapts to the measured timer
    /// wake-up lateness like a TCP retransmission timer adapts to RTT (RFC 6298 §2:
    /// smoothed mean + 4 × mean deviation), clamped to [`MIN_SPIN_NS`, `spin_ns`].
    fn run(&mut self, sigfd: i32) -> Result<(), ShellError> {
        let timer = TimerFd::new().map_err(|e| ShellError::new("timerfd_create", "CLOCK_MONOTONIC", e))?;
        // Lazy receive (rx_poll_ns > 0): arrivals carry kernel timestamps, so they need
        // not wake the thread; it reads the rings at least every rx_poll_ns (less than
        // the smallest one-way delay) and at every deadline. Otherwise every arrival
        // wakes it through epoll.
        // While nothing is queued or in flight the sockets are watched even in lazy mode,
        // so an idle link sleeps until traffic comes instead of polling every rx_poll_ns.
        let lazy = self.rx_poll_ns > 0;
        let sock_fds: Vec<i32> = self
            .dirs
            .iter()
            .map(|&d| self.xsk[d].as_ref().map_or(self.socks[d].fd, |x| x.fd))
            .collect();
        let mut watching = true;
        let mut fds = sock_fds.clone();
        fds.push(timer.fd());
        fds.push(sigfd);
        let mut ep = Epoll::new(fds.len()).map_err(|e| ShellError::new("epoll_create1", "-", e))?;
        for (i, &fd) in fds.iter().enumerate() {
            ep.add(fd, EV_IN, i as u64).map_err(|e| ShellError::new("epoll_ctl", "ADD", e))?;
        }
        let mut ready = Vec::with_capacity(fds.len());
        let mut next_sig_check = 0u64;
        let dirs = self.dirs.clone();
        let (mut wake_mean, mut wake_dev) = (self.spin_ns as f64 / 2.0, self.spin_ns as f64 / 8.0);
        let mut spin = self.spin_ns;
        let (mut now, mut offset) = mono_and_real_offset();
        let mut next_offset = now + 10_000_000;
        let mut last_block = now;
        let mut fair_until: Option<u64> = None;
        loop {
            self.st.loops += 1;
            let mut got = 0;
            now = now_ns();
            for &d in &dirs {
                got += self.rx(d, now, offset);
            }
            now = now_ns();
            self.link.poll(now, &mut self.out);
            if !self.out.is_empty() {
                for r in self.out.drain(..) {
                    self.by_dir[r.dir].push(r);
                }
                for &d in &dirs {
                    self.tx(d);
                }
            }
            if now >= next_sig_check {
                self.flush_records();
                if signal::pending_on(sigfd) {
                    self.stop.store(true, Ordering::SeqCst);
                }
                if self.stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
                next_sig_check = now + 5_000_000;
            }
            if now >= next_offset {
                (now, offset) = mono_and_real_offset();
                next_offset = now + 10_000_000;
            }
            if fair_until.is_some_and(|t| now >= t) {
                // FIFO again; restored (or lost) here, so `realtime` says how it ended
                self.rt = sched::set_fifo(self.rt_prio);
                fair_until = None;
                last_block = now;
            }
            if self.rt
                && fair_until.is_none()
                && self.rt_nap_ns > 0
                && now.saturating_sub(last_block) > self.rt_busy_ns
            {
                // The kernel stops RT tasks past their budget (950 ms of each second)
                // for the rest of the second: a 50 ms stall of the link. Stay under it,
                // preferably as an ordinary task (Config::rt_yield "fair"): that time is
                // not RT time, and the thread forwards on, losing the CPU only to a task
                // that waits (for that task's time slice). Or sleep, which gives every
                // other task on this CPU the gap (and delays what is due meanwhile).
                if self.rt_fair && sched::set_other() {
                    fair_until = Some(now + self.fair_ns);
                    self.st.fair_phases += 1;
                } else {
                    if self.rt_fair {
                        self.rt = sched::set_fifo(self.rt_prio);
                    }
                    self.rt_fair = false;
                    nap(self.rt_nap_ns);
                    self.st.naps += 1;
                    last_block = now_ns();
                }
            }
            if got > 0 {
                continue;
            }
            now = now_ns();
            let dl = self.link.next_deadline();
            if dl.is_some_and(|d| d <= now + spin) {
                self.st.spins += 1;
                continue; // busy-poll the last stretch before a deadline
            }
            // Statistics intervals are closed with their own timestamps whenever the
            // core is polled, so an idle link need not wake for them: it wakes for
            // traffic, signals, deadlines, and every IDLE_WAKE_NS to flush the files.
            let mut wake = now + IDLE_WAKE_NS;
            if let Some(d) = dl {
                wake = wake.min(d - spin);
            }
            let want_watch = !lazy || dl.is_none();
            if want_watch != watching {
                // the sockets stay registered; only what they are watched for changes
                for (i, &fd) in sock_fds.iter().enumerate() {
                    let _ = ep.modify(fd, if want_watch { EV_IN } else { 0 }, i as u64);
                }
                watching = want_watch;
            }
            if !watching {
                wake = wake.min(now + self.rx_poll_ns);
            }
            if fair_until.take().is_some() {
                // blocking gives the CPU away anyway; wake up as a FIFO task
                self.rt = sched::set_fifo(self.rt_prio);
            }
            timer.arm_at(wake).map_err(|e| ShellError::new("timerfd_settime", "CLOCK_MONOTONIC", e))?;
            self.st.sleeps += 1;
            // woken by a port, the timer or a signal: which one does not matter here
            let _ = ep.wait(-1, &mut ready);
            timer.drain();
            let now = now_ns();
            last_block = now;
            if now >= wake {
                let sample = (now - wake) as f64;
                wake_dev += ((sample - wake_mean).abs() - wake_dev) / 4.0;
                wake_mean += (sample - wake_mean) / 8.0;
                self.st.wake_late.add(now - wake);
                spin = ((wake_mean + 4.0 * wake_dev) as u64)
                    .clamp(MIN_SPIN_NS.min(self.spin_ns), self.spin_ns);
            }
        }
    }
}

/// Length of an ordinary-task phase after `busy_ns` as a FIFO task. Each phase and each
/// busy stretch ends at the first loop pass past its time, so the FIFO share must stay
/// below the kernel's RT budget (runtime/period, 950/1000 by default) with room: the
/// phase is at least 1.5 x busy x (period - runtime) / runtime (79 us for the defaults),
/// and never shorter than `nap_ns`.
pub fn fair_phase_ns(busy_ns: u64, nap_ns: u64, budget_us: Option<(u64, u64)>) -> u64 {
    match budget_us {
        Some((runtime, period)) if runtime > 0 => {
            let need = busy_ns as u128 * 3 * (period - runtime) as u128 / (2 * runtime as u128);
            nap_ns.max(need as u64)
        }
        _ => nap_ns,
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

#[cfg(test)]
mod tests {
    use super::fair_phase_ns;

    #[test]
    fn fair_phases_keep_the_fifo_share_under_the_kernels_rt_budget() {
        // 950/1000 ms: 1 ms busy needs > 52.6 us outside RT; 1.5 x that, rounded down
        assert_eq!(fair_phase_ns(1_000_000, 50_000, Some((950_000, 1_000_000))), 78_947);
        let f = fair_phase_ns(1_000_000, 50_000, Some((950_000, 1_000_000)));
        assert!(1_000_000.0 / (1_000_000.0 + f as f64) < 0.95 - 0.01);
        // a longer nap asked for is kept; no budget (unlimited or unreadable): the nap
        assert_eq!(fair_phase_ns(1_000_000, 200_000, Some((950_000, 1_000_000))), 200_000);
        assert_eq!(fair_phase_ns(1_000_000, 50_000, None), 50_000);
        // a tighter budget asks for more
        assert_eq!(fair_phase_ns(1_000_000, 50_000, Some((800_000, 1_000_000))), 375_000);
    }
}
