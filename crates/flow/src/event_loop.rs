//! Contract: the one event loop of a host. It owns every socket, the timer heap and the
//! outputs, and does the lifecycle of docs/dev/contracts.md §2:
//! `setup` (outputs, congestion controls checked, listeners bound) → `READY` →
//! `GO <t0>` on stdin → flows opened at `t0 + start_ns`, stopped at `t0 + stop_ns` →
//! end at `t0 + end_ns`, on SIGINT/SIGTERM, or when a host without listeners has no
//! flow left → final samples, conns.jsonl for open connections, engine.json → `DONE`.
//! Readiness comes from one epoll (edge-triggered for connections), every deadline from
//! one absolute CLOCK_MONOTONIC timerfd armed for the earliest of the timer heap and the
//! sampling grid. Per-connection behaviour lives in `flows`; the loop only does I/O.
//! Invariant: a token or timer names a connection by (slot, uid), so an event for a
//! closed connection never reaches a new one in the same slot.
//! UDP: a `udp_echo` listener answers every datagram in its readiness handler; a
//! `udp_probe` flow owns one connected UDP socket, sends on its own grid from
//! `Timer::UdpSend` (the same timer heap and timerfd as paced writes) and matches
//! echoes in `udp::Window`; its records go to udp.bin in send order.

use crate::config::{Config, Flow, FlowKind, ListenProto};
use crate::conn::{Conn, ConnLog, Role, Side};
use crate::error::Failure;
use crate::flows::{self, accept::Detect, bulk, download::HttpGet, paced::Paced, rr::RrClient, Ctx, Proto};
use crate::outputs::{EngineReport, Outputs};
use crate::records;
use crate::rng::GapSource;
use crate::sampler::{self, Ticker};
use crate::timers::{Timer, Timers};
use crate::udp;
use crate::wire;
use crate::net::{self, Io};
use ccarena_sys::clock::{now_ns, set_timer_slack_ns};
use ccarena_sys::epoll::{Epoll, EV_ERR, EV_ET, EV_IN, EV_OUT, EV_RDHUP};
use ccarena_sys::signal::{self, SignalFd};
use ccarena_sys::timer::TimerFd;
use ccarena_sys::{cpu, fd, stdio};
use std::os::fd::RawFd;

const TOK_SIGNAL: u64 = 0;
const TOK_TIMER: u64 = 1;
const TOK_STDIN: u64 = 2;
const TOK_LISTEN: u64 = 16;
/// Tokens [TOK_UDP, 1 << SLOT_BITS) are UDP probe sockets (index = token - TOK_UDP).
const TOK_UDP: u64 = 1 << 23;
/// How long a stopped UDP probe waits for its last echoes (unless the host ends first).
const UDP_DRAIN_NS: u64 = 2_000_000_000;
const SLOT_BITS: u32 = 24;
const PAYLOAD_BUF: usize = 256 * 1024;
const MAX_ERRORS: usize = 1000;

struct Listener {
    fd: RawFd,
    cc: Option<String>,
    seq: u32,
    addr: String,
    proto: ListenProto,
}

/// One `udp_probe` flow at run time.
struct UdpProbe {
    fi: usize,
    flow: u32,
    fd: RawFd,
    /// The datagram (header rewritten per send, zeros after it): allocated once.
    buf: Vec<u8>,
    stop_at: Option<u64>,
    sched: udp::Schedule,
    win: udp::Window,
    stopped: bool,
    closed: bool,
    echoed: u64,
    lost: u64,
    duplicates: u64,
    stray: u64,
    send_errors: u64,
    recv_errors: u64,
    interval_ns: u64,
}

struct FlowRt {
    cfg: Flow,
    /// Connections opened so far (also the next conn number).
    opened: u32,
    open: u32,
    stopped: bool,
    launched_all: bool,
}

impl FlowRt {
    fn done(&self) -> bool {
        (self.launched_all || self.stopped) && self.open == 0
    }
}

pub struct Engine {
    cfg: Config,
    epoll: Epoll,
    timerfd: TimerFd,
    armed_ns: u64,
    /// Readable on SIGINT/SIGTERM (epoll token TOK_SIGNAL); kept open, never read.
    _sigfd: SignalFd,
    stdin_open: bool,
    stdin_buf: Vec<u8>,
    listeners: Vec<Listener>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    next_uid: u64,
    flows: Vec<FlowRt>,
    timers: Timers,
    ticker: Option<Ticker>,
    t0: Option<u64>,
    out: Outputs,
    payload: Vec<u8>,
    rbuf: Vec<u8>,
    info: [u8; 256],
    errors: Vec<String>,
    errors_dropped: u64,
    stop: Option<&'static str>,
    /// How late connections were opened (flow starts, scheduled downloads), and how late
    /// any timer fired: a run whose starts were late is not the run that was asked for.
    max_start_late_ns: u64,
    max_timer_late_ns: u64,
    probes: Vec<UdpProbe>,
    echo_from: net::RawAddr,
    echo_served: u64,
    echo_errors: u64,
}

fn conn_token(slot: usize, uid: u64) -> u64 {
    (uid << SLOT_BITS) | slot as u64
}

fn cc_probe(cc: &str, key: &str) -> Result<(), Failure> {
    let probe_addr: std::net::SocketAddr = "0.0.0.0:0".parse().unwrap();
    let fd = net::tcp_socket(&probe_addr).map_err(|e| Failure::os("create socket", "probe", e))?;
    let r = net::set_congestion(fd, cc);
    net::close(fd);
    r.map_err(|e| {
        Failure::config(
            "set congestion control",
            key,
            format!("{cc:?}: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"),
        )
    })
}

impl Engine {
    pub fn setup(cfg: Config) -> Result<Engine, Failure> {
        for (i, f) in cfg.flows.iter().enumerate() {
            if let Some(cc) = &f.cc {
                cc_probe(cc, &format!("flows[{i}].cc"))?;
            }
        }
        for (i, l) in cfg.listen.iter().enumerate() {
            if let Some(cc) = &l.cc {
                cc_probe(cc, &format!("listen[{i}].cc"))?;
            }
        }
        let out = Outputs::create(&cfg.out_dir)
            .map_err(|e| Failure::os("create outputs", cfg.out_dir.display().to_string(), e))?;
        set_timer_slack_ns(1);
        let epoll = Epoll::new(1024).map_err(|e| Failure::os("create", "epoll", e))?;
        let timerfd = TimerFd::new().map_err(|e| Failure::os("create", "timerfd", e))?;
        epoll.add(timerfd.fd(), EV_IN, TOK_TIMER).map_err(|e| Failure::os("epoll add", "timerfd", e))?;
        signal::ignore_sigpipe();
        let sigfd = SignalFd::new().map_err(|e| Failure::os("create", "signalfd", e))?;
        epoll.add(sigfd.fd(), EV_IN, TOK_SIGNAL).map_err(|e| Failure::os("epoll add", "signalfd", e))?;
        // stdin may be something epoll refuses (a regular file, /dev/null): then it is read
        // once, blocking, right after READY.
        let stdin_open = epoll.add(0, EV_IN, TOK_STDIN).is_ok();
        let mut listeners = Vec::new();
        for (i, l) in cfg.listen.iter().enumerate() {
            let fd = match l.proto {
                ListenProto::Tcp => net::listen(&l.addr, l.cc.as_deref())
                    .map_err(|e| Failure::os("listen", format!("{} (listen[{i}])", l.addr), e))?,
                ListenProto::UdpEcho => net::udp_bind(&l.addr)
                    .map_err(|e| Failure::os("bind udp_echo", format!("{} (listen[{i}])", l.addr), e))?,
            };
            epoll.add(fd, EV_IN, TOK_LISTEN + i as u64).map_err(|e| Failure::os("epoll add", "listener", e))?;
            listeners.push(Listener { fd, cc: l.cc.clone(), seq: 0, addr: l.addr.to_string(), proto: l.proto });
        }
        let flows = cfg
            .flows
            .iter()
            .map(|f| FlowRt { cfg: f.clone(), opened: 0, open: 0, stopped: false, launched_all: false })
            .collect();
        let payload: Vec<u8> = (0..PAYLOAD_BUF).map(|i| (i % 251) as u8).collect();
        Ok(Engine {
            cfg,
            epoll,
            timerfd,
            armed_ns: 0,
            _sigfd: sigfd,
            stdin_open,
            stdin_buf: Vec::new(),
            listeners,
            conns: Vec::new(),
            free: Vec::new(),
            next_uid: 1,
            flows,
            timers: Timers::default(),
            ticker: None,
            t0: None,
            out,
            payload,
            rbuf: vec![0u8; PAYLOAD_BUF],
            info: [0u8; 256],
            errors: Vec::new(),
            errors_dropped: 0,
            stop: None,
            max_start_late_ns: 0,
            max_timer_late_ns: 0,
            probes: Vec::new(),
            echo_from: net::RawAddr::new(),
            echo_served: 0,
            echo_errors: 0,
        })
    }

    fn error(&mut self, e: String) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(e);
        } else {
            self.errors_dropped += 1;
        }
    }

    pub fn run(mut self) -> Result<(), Failure> {
        stdio::say("READY");
        if !self.stdin_open {
            self.read_stdin_blocking()?;
        }
        let mut events = Vec::with_capacity(1024);
        while self.stop.is_none() {
            self.arm_timer()?;
            self.epoll.wait(-1, &mut events).map_err(|e| Failure::os("epoll_wait", "event loop", e))?;
            for &(tok, ev) in events.iter() {
                match tok {
                    TOK_SIGNAL => self.stop = Some("signal"),
                    TOK_TIMER => {
                        self.timerfd.drain();
                        self.armed_ns = 0;
                    }
                    TOK_STDIN => self.on_stdin()?,
                    t if (TOK_UDP..(1 << SLOT_BITS)).contains(&t) => self.on_udp_probe((t - TOK_UDP) as usize),
                    t if t < (1 << SLOT_BITS) => self.on_listener((t - TOK_LISTEN) as usize),
                    t => self.on_conn_event((t & ((1 << SLOT_BITS) - 1)) as usize, t >> SLOT_BITS, ev),
                }
            }
            self.run_timers();
            if self.t0.is_some() && self.listeners.is_empty() && self.flows.iter().all(|f| f.done()) {
                self.stop.get_or_insert("flows done");
            }
        }
        self.finish()
    }

    // ---- lifecycle -----------------------------------------------------------------

    fn read_stdin_blocking(&mut self) -> Result<(), Failure> {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map_err(|e| Failure::os("wait for GO", "stdin", e))?;
        match wire::parse_go(&line) {
            Some(t0) => {
                self.go(t0.unwrap_or_else(now_ns));
                Ok(())
            }
            None => Err(Failure::runtime("wait for GO", "stdin", format!("expected `GO <t0_ns>`, got {:?}", line.trim()))),
        }
    }

    fn on_stdin(&mut self) -> Result<(), Failure> {
        let mut b = [0u8; 512];
        match fd::read(0, &mut b) {
            Ok(Io::Done(n)) => self.stdin_buf.extend_from_slice(&b[..n]),
            Ok(Io::WouldBlock) => return Ok(()),
            Ok(Io::Eof) | Err(_) => {
                self.epoll.del(0);
                self.stdin_open = false;
                if self.t0.is_none() {
                    return Err(Failure::runtime("wait for GO", "stdin", "closed before `GO <t0_ns>`"));
                }
                return Ok(());
            }
        }
        while let Some(nl) = self.stdin_buf.iter().position(|&c| c == b'\n') {
            let line: Vec<u8> = self.stdin_buf.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line).to_string();
            if self.t0.is_some() || line.trim().is_empty() {
                continue; // only the first GO counts
            }
            match wire::parse_go(&line) {
                Some(t0) => self.go(t0.unwrap_or_else(now_ns)),
                None => {
                    return Err(Failure::runtime(
                        "wait for GO",
                        "stdin",
                        format!("expected `GO <t0_ns>`, got {:?}", line.trim()),
                    ))
                }
            }
        }
        Ok(())
    }

    fn go(&mut self, t0: u64) {
        self.t0 = Some(t0);
        let now = now_ns();
        let iv = self.cfg.sample_interval_ns;
        let first = if now <= t0 { t0 } else { t0 + (now - t0).div_ceil(iv) * iv };
        self.ticker = Some(Ticker::new(first, iv));
        for (i, f) in self.flows.iter().enumerate() {
            self.timers.at(t0 + f.cfg.start_ns, Timer::FlowStart(i));
            if let Some(stop) = f.cfg.stop_ns {
                self.timers.at(t0 + stop, Timer::FlowStop(i));
            }
        }
        if let Some(end) = self.cfg.end_ns {
            self.timers.at(t0 + end, Timer::End);
        }
    }

    fn arm_timer(&mut self) -> Result<(), Failure> {
        let next = match (self.timers.next_deadline(), self.ticker.as_ref().map(|t| t.due_ns())) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return Ok(()),
        };
        if next != self.armed_ns {
            self.timerfd.arm_at(next).map_err(|e| Failure::os("arm", "timerfd", e))?;
            self.armed_ns = next;
        }
        Ok(())
    }

    fn run_timers(&mut self) {
        loop {
            let now = now_ns();
            if let Some(t) = &mut self.ticker {
                if t.due_ns() <= now {
                    t.fire(now);
                    self.sample_all();
                    continue;
                }
            }
            let Some((due, timer)) = self.timers.pop_due(now) else { break };
            let late = now - due;
            self.max_timer_late_ns = self.max_timer_late_ns.max(late);
            if matches!(timer, Timer::FlowStart(_) | Timer::DownloadNext(_)) {
                self.max_start_late_ns = self.max_start_late_ns.max(late);
            }
            match timer {
                Timer::FlowStart(i) => self.flow_start(i),
                Timer::FlowStop(i) => self.flow_stop(i),
                Timer::DownloadNext(i) => self.download_next(i),
                Timer::End => {
                    self.stop.get_or_insert("end_ns");
                }
                Timer::Conn(slot, uid) => {
                    if self.conns.get(slot).and_then(|c| c.as_ref()).map(|c| c.uid) == Some(uid) {
                        self.with_conn(slot, flows::on_timer);
                    }
                }
                Timer::UdpSend(pi) => self.udp_send(pi),
                Timer::UdpDrain(pi) => self.udp_close(pi),
            }
        }
    }

    fn finish(mut self) -> Result<(), Failure> {
        let now = now_ns();
        self.sample_all();
        for slot in 0..self.conns.len() {
            if let Some(c) = &mut self.conns[slot] {
                if let Proto::HttpGet(g) = &c.proto {
                    if c.log.error.is_none() && g.body_len.is_none_or(|n| c.rcvd < n) {
                        c.log.error = Some(format!("download incomplete at end ({} bytes)", c.rcvd));
                    }
                }
                self.close_conn(slot, now);
            }
        }
        for pi in 0..self.probes.len() {
            self.udp_close(pi);
        }
        for l in &self.listeners {
            net::close(l.fd);
        }
        let udp_probes = if self.probes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Array(self.probes.iter().map(|p| p.report()).collect())
        };
        let udp_echo = if self.listeners.iter().any(|l| l.proto == ListenProto::UdpEcho) {
            serde_json::json!({"echoed": self.echo_served, "errors": self.echo_errors})
        } else {
            serde_json::Value::Null
        };
        let stopped_by = self.stop.unwrap_or("end");
        let ticks = self.ticker.as_ref().map(|t| t.stats).unwrap_or_default();
        let cpu::Usage { user_s: u, sys_s: s, .. } = cpu::process_usage();
        let report = EngineReport {
            version: 1,
            host: &self.cfg.host,
            t0_ns: self.t0,
            end_ns: now,
            sample_interval_ns: self.cfg.sample_interval_ns,
            samples: 0,
            sample_gaps: 0,
            missed_ticks: 0,
            max_tick_late_ns: 0,
            cpu_user_s: u,
            cpu_sys_s: s,
            records: serde_json::Value::Null,
            conns: 0,
            max_start_late_ns: self.max_start_late_ns,
            max_timer_late_ns: self.max_timer_late_ns,
            stopped_by,
            errors: &self.errors,
            errors_dropped: self.errors_dropped,
            udp_probes,
            udp_echo,
        };
        let dir = self.out.dir.display().to_string();
        self.out.flush().map_err(|e| Failure::os("write outputs", dir.clone(), e))?;
        self.out.engine_report(report, ticks).map_err(|e| Failure::os("write", format!("{dir}/engine.json"), e))?;
        stdio::say("DONE");
        Ok(())
    }

    // ---- sampling ------------------------------------------------------------------

    fn sample_conn(out: &mut Outputs, info: &mut [u8; 256], c: &Conn, now: u64) -> Result<(), String> {
        match c.side() {
            Some(Side::Send) if c.connected => {
                let n = net::tcp_info_raw(c.fd, info).map_err(|e| format!("getsockopt TCP_INFO: {e}"))?;
                let rec = sampler::decode_tcp_info(now, c.log.flow, c.log.conn, &info[..], n);
                out.tcpinfo.append(&rec.encode()).map_err(|e| format!("write tcpinfo.bin: {e}"))
            }
            Some(Side::Recv) if c.connected => out
                .rx
                .append(&records::encode_rx(now, c.log.flow, c.log.conn, c.rcvd))
                .map_err(|e| format!("write rx.bin: {e}")),
            _ => Ok(()),
        }
    }

    fn sample_all(&mut self) {
        for c in self.conns.iter().flatten() {
            let now = now_ns();
            if let Err(e) = Self::sample_conn(&mut self.out, &mut self.info, c, now) {
                if self.errors.len() < MAX_ERRORS {
                    self.errors.push(e);
                }
            }
        }
    }

    // ---- flows ---------------------------------------------------------------------

    fn flow_start(&mut self, fi: usize) {
        let f = self.flows[fi].cfg.clone();
        match &f.kind {
            FlowKind::Bulk { bytes } => {
                for _ in 0..f.conns {
                    self.open_client(fi, Proto::BulkSend(bulk::BulkSend { limit: *bytes }));
                }
            }
            FlowKind::Parallel { bytes } => {
                for i in 0..f.conns {
                    let limit = bytes.map(|b| bulk::stripe(b, f.conns, i));
                    self.open_client(fi, Proto::BulkSend(bulk::BulkSend { limit }));
                }
            }
            FlowKind::Paced { write_bytes, gap_ns, dist, seed, bytes } => {
                for i in 0..f.conns {
                    let p = Paced {
                        // Each connection its own stream: seed, seed+1, ...
                        gaps: GapSource::new(*gap_ns, *dist, seed.wrapping_add(i as u64)),
                        write_bytes: *write_bytes,
                        left: *bytes,
                        next_ns: 0,
                        stopped: false,
                    };
                    self.open_client(fi, Proto::Paced(p));
                }
            }
            FlowKind::Rr { request_bytes, response_bytes, count, gap_ns } => {
                for _ in 0..f.conns {
                    let r = RrClient {
                        request_bytes: *request_bytes,
                        response_bytes: *response_bytes,
                        left: *count,
                        gap_ns: *gap_ns,
                        sent_ns: 0,
                        got: 0,
                        stopped: false,
                    };
                    self.open_client(fi, Proto::RrClient(r));
                }
            }
            FlowKind::Download { .. } => {
                self.download_next(fi);
                return;
            }
            FlowKind::UdpProbe { interval_ns, size } => self.udp_open(fi, *interval_ns, *size),
        }
        self.flows[fi].launched_all = true;
    }

    fn download_next(&mut self, fi: usize) {
        let (size, count, every) = match self.flows[fi].cfg.kind {
            FlowKind::Download { size, count, every_ns } => (size, count, every_ns),
            _ => return,
        };
        let fr = &self.flows[fi];
        if fr.stopped || fr.launched_all {
            return;
        }
        let k = fr.opened as u64;
        if count.is_some_and(|c| k >= c) {
            self.flows[fi].launched_all = true;
            return;
        }
        let host = self.flows[fi].cfg.dst.to_string();
        self.open_client(fi, Proto::HttpGet(HttpGet { size, host, head: Vec::new(), body_len: None }));
        if count.is_some_and(|c| k + 1 >= c) {
            self.flows[fi].launched_all = true;
        } else if every > 0 {
            let t0 = self.t0.unwrap_or(0);
            let at = t0 + self.flows[fi].cfg.start_ns + (k + 1) * every;
            self.timers.at(at, Timer::DownloadNext(fi));
        }
        // every == 0: the next one starts when this one ends (close_conn).
    }

    fn flow_stop(&mut self, fi: usize) {
        self.flows[fi].stopped = true;
        if let Some(pi) = self.probes.iter().position(|p| p.fi == fi) {
            self.probes[pi].stopped = true;
            if self.probes[pi].win.outstanding() == 0 {
                self.udp_close(pi);
            } else {
                self.timers.at(now_ns() + UDP_DRAIN_NS, Timer::UdpDrain(pi));
            }
        }
        let now = now_ns();
        for slot in 0..self.conns.len() {
            let mine = matches!(&self.conns[slot], Some(c) if c.flow_idx == Some(fi));
            if mine {
                if let Some(c) = &mut self.conns[slot] {
                    flows::on_stop(c);
                    c.pump(now, &self.payload);
                }
                self.maybe_close(slot, now);
            }
        }
    }

    fn alloc_slot(&mut self) -> usize {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        }
    }

    fn open_client(&mut self, fi: usize, proto: Proto) {
        let f = self.flows[fi].cfg.clone();
        let kind = f.kind.name();
        let side = match f.kind {
            FlowKind::Download { .. } | FlowKind::Rr { .. } => Side::Recv,
            _ => Side::Send,
        };
        let conn_no = self.flows[fi].opened;
        self.flows[fi].opened += 1;
        let now = now_ns();
        let mut log = ConnLog {
            flow: f.flow,
            conn: conn_no,
            kind: Some(kind),
            role: Role::Client,
            side: Some(side),
            cc: None,
            local: None,
            remote: Some(f.dst.to_string()),
            connect_start_ns: Some(now),
            connected_ns: None,
            first_byte_ns: None,
            last_byte_ns: None,
            end_ns: None,
            bytes: None,
            error: None,
        };
        let dst = f.dst;
        let cc = f.cc.clone();
        let nodelay = f.nodelay;
        let fd = match net::tcp_socket(&dst) {
            Ok(fd) => fd,
            Err(e) => {
                log.error = Some(format!("socket: {e}"));
                log.end_ns = Some(now);
                return self.log_failed(log);
            }
        };
        let setup = (|| -> Result<(), String> {
            if let Some(c) = &cc {
                net::set_congestion(fd, c).map_err(|e| format!("set congestion control {c:?}: {e}"))?;
            }
            if nodelay {
                net::set_nodelay(fd, true).map_err(|e| format!("set TCP_NODELAY: {e}"))?;
            }
            net::connect(fd, &dst).map_err(|e| format!("connect: {e}"))
        })();
        log.cc = net::get_congestion(fd).ok();
        if let Err(e) = setup {
            net::close(fd);
            log.error = Some(e);
            log.end_ns = Some(now);
            return self.log_failed(log);
        }
        let slot = self.alloc_slot();
        let uid = self.next_uid;
        self.next_uid += 1;
        let mut c = Conn::new(fd, uid, log, proto);
        c.flow_idx = Some(fi);
        if let Err(e) = self.epoll.add(fd, EV_IN | EV_OUT | EV_RDHUP | EV_ET, conn_token(slot, uid)) {
            net::close(fd);
            c.log.error = Some(format!("epoll add: {e}"));
            c.log.end_ns = Some(now);
            self.free.push(slot);
            return self.log_failed(c.log);
        }
        self.conns[slot] = Some(c);
        self.flows[fi].open += 1;
    }

    fn log_failed(&mut self, log: ConnLog) {
        self.error(format!("flow {} conn {}: {}", log.flow, log.conn, log.error.as_deref().unwrap_or("?")));
        if let Err(e) = self.out.conn(&log) {
            self.error(format!("write conns.jsonl: {e}"));
        }
    }

    // ---- I/O events ----------------------------------------------------------------

    fn on_listener(&mut self, li: usize) {
        if self.listeners[li].proto == ListenProto::UdpEcho {
            return self.on_udp_echo(li);
        }
        loop {
            let fd = match net::accept(self.listeners[li].fd) {
                Ok(Some(fd)) => fd,
                Ok(None) => return,
                Err(e) => {
                    let msg = format!("accept on {}: {e}", self.listeners[li].addr);
                    self.error(msg);
                    return;
                }
            };
            let now = now_ns();
            let l = &mut self.listeners[li];
            let seq = l.seq;
            l.seq = l.seq.wrapping_add(1);
            // Accepted sockets inherit the listener's algorithm; make sure, and record
            // what the kernel says.
            let mut cc = net::get_congestion(fd).ok();
            if let Some(want) = &l.cc {
                if cc.as_deref() != Some(want.as_str()) {
                    let _ = net::set_congestion(fd, want);
                    cc = net::get_congestion(fd).ok();
                }
            }
            let log = ConnLog {
                flow: wire::FLOW_UNKNOWN,
                conn: seq,
                kind: None,
                role: Role::Server,
                side: None,
                cc,
                local: net::local_addr(fd).map(|a| a.to_string()),
                remote: net::peer_addr(fd).map(|a| a.to_string()),
                connect_start_ns: None,
                connected_ns: Some(now),
                first_byte_ns: None,
                last_byte_ns: None,
                end_ns: None,
                bytes: None,
                error: None,
            };
            let slot = self.alloc_slot();
            let uid = self.next_uid;
            self.next_uid += 1;
            let mut c = Conn::new(fd, uid, log, Proto::Detect(Detect { buf: Vec::new(), seq }));
            c.connected = true;
            if let Err(e) = self.epoll.add(fd, EV_IN | EV_OUT | EV_RDHUP | EV_ET, conn_token(slot, uid)) {
                net::close(fd);
                self.free.push(slot);
                self.error(format!("epoll add accepted socket: {e}"));
                continue;
            }
            self.conns[slot] = Some(c);
        }
    }

    /// Run `f` on the connection in `slot` with a context, then pump and maybe close it.
    fn with_conn(&mut self, slot: usize, f: impl FnOnce(&mut Conn, &mut Ctx)) {
        let now = now_ns();
        let Some(c) = self.conns[slot].as_mut() else { return };
        let mut ctx = Ctx { now, slot, timers: &mut self.timers, rr_out: &mut self.out.rr, errors: &mut self.errors };
        f(c, &mut ctx);
        c.pump(now, &self.payload);
        self.maybe_close(slot, now);
    }

    fn on_conn_event(&mut self, slot: usize, uid: u64, ev: u32) {
        let now = now_ns();
        let Some(c) = self.conns.get_mut(slot).and_then(|c| c.as_mut()) else { return };
        if c.uid != uid {
            return;
        }
        let mut ctx = Ctx { now, slot, timers: &mut self.timers, rr_out: &mut self.out.rr, errors: &mut self.errors };
        if !c.connected && ev & (EV_OUT | EV_ERR) != 0 {
            match net::so_error(c.fd) {
                Ok(None) => {
                    c.connected = true;
                    c.log.connected_ns = Some(now);
                    c.log.local = net::local_addr(c.fd).map(|a| a.to_string());
                    flows::on_connected(c, &mut ctx);
                    // Stopped while connecting: say hello, send nothing, close.
                    if c.flow_idx.is_some_and(|fi| self.flows[fi].stopped) {
                        flows::on_stop(c);
                    }
                }
                Ok(Some(e)) | Err(e) => c.fail("connect", e),
            }
        }
        if c.connected && !c.closing && !c.peer_eof && ev & (EV_IN | EV_RDHUP | EV_ERR) != 0 {
            loop {
                match net::recv(c.fd, &mut self.rbuf) {
                    Ok(Io::Done(n)) => {
                        flows::on_data(c, &self.rbuf[..n], &mut ctx);
                        if c.closing {
                            break;
                        }
                    }
                    Ok(Io::WouldBlock) => break,
                    Ok(Io::Eof) => {
                        flows::on_eof(c, &mut ctx);
                        break;
                    }
                    Err(e) => {
                        c.fail("recv", e);
                        break;
                    }
                }
            }
        }
        c.pump(now, &self.payload);
        self.maybe_close(slot, now);
    }

    fn maybe_close(&mut self, slot: usize, now: u64) {
        if matches!(&self.conns[slot], Some(c) if c.is_finished()) {
            self.close_conn(slot, now);
        }
    }

    fn close_conn(&mut self, slot: usize, now: u64) {
        let Some(mut c) = self.conns[slot].take() else { return };
        self.free.push(slot);
        // A last sample so totals at close are exact.
        if let Err(e) = Self::sample_conn(&mut self.out, &mut self.info, &c, now) {
            self.error(e);
        }
        net::close(c.fd);
        let log = c.finish_log(now);
        if let Some(e) = &log.error {
            let role = if log.role == Role::Client { "client" } else { "server" };
            self.error(format!("flow {} conn {} ({role}): {e}", log.flow, log.conn));
        }
        if let Err(e) = self.out.conn(&log) {
            self.error(format!("write conns.jsonl: {e}"));
        }
        c.closing = true;
        if let Some(fi) = c.flow_idx {
            self.flows[fi].open -= 1;
            let every0 = matches!(self.flows[fi].cfg.kind, FlowKind::Download { every_ns: 0, .. });
            if every0 && self.stop.is_none() {
                self.download_next(fi);
            }
        }
    }
}

// ---- UDP probe and echo -----------------------------------------------------------------

impl UdpProbe {
    fn report(&self) -> serde_json::Value {
        serde_json::json!({
            "flow": self.flow,
            "interval_ns": self.interval_ns,
            "size": self.buf.len(),
            "window": self.win.cap(),
            "sent": self.sched.sends,
            "echoed": self.echoed,
            "lost": self.lost,
            "duplicates": self.duplicates,
            "stray": self.stray,
            "send_errors": self.send_errors,
            "recv_errors": self.recv_errors,
            "skipped_sends": self.sched.skipped,
            "max_send_late_ns": self.sched.max_late_ns,
            "mean_send_late_ns": self.sched.sum_late_ns.checked_div(self.sched.sends).unwrap_or(0),
        })
    }
}

fn emit_udp(out: &mut Outputs, errors: &mut Vec<String>, p: &mut UdpProbe, r: udp::Rec) {
    if r.rtt_ns == udp::LOST {
        p.lost += 1;
    }
    if let Err(e) = out.udp.append(&records::encode_udp(r.t_ns, p.flow, r.seq, r.rtt_ns)) {
        if errors.len() < MAX_ERRORS {
            errors.push(format!("write udp.bin: {e}"));
        }
    }
}

impl Engine {
    fn udp_open(&mut self, fi: usize, interval_ns: u64, size: u32) {
        let f = self.flows[fi].cfg.clone();
        self.flows[fi].launched_all = true;
        let opened = (|| -> Result<RawFd, String> {
            let fd = net::udp_socket(&f.dst).map_err(|e| format!("udp socket: {e}"))?;
            if let Err(e) = net::connect(fd, &f.dst) {
                net::close(fd);
                return Err(format!("connect udp {}: {e}", f.dst));
            }
            Ok(fd)
        })();
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => return self.error(format!("flow {} (udp_probe): {e}", f.flow)),
        };
        let pi = self.probes.len();
        if let Err(e) = self.epoll.add(fd, EV_IN, TOK_UDP + pi as u64) {
            net::close(fd);
            return self.error(format!("flow {} (udp_probe): epoll add: {e}", f.flow));
        }
        let t0 = self.t0.unwrap_or(0);
        self.probes.push(UdpProbe {
            fi,
            flow: f.flow,
            fd,
            buf: vec![0u8; size as usize],
            stop_at: f.stop_ns.map(|s| t0 + s),
            sched: udp::Schedule::new(t0 + f.start_ns, interval_ns),
            win: udp::Window::new(udp::window_cap(interval_ns)),
            stopped: false,
            closed: false,
            echoed: 0,
            lost: 0,
            duplicates: 0,
            stray: 0,
            send_errors: 0,
            recv_errors: 0,
            interval_ns,
        });
        self.flows[fi].open += 1;
        self.udp_send(pi);
    }

    /// Timer::UdpSend: one datagram for the current grid point, then the next timer.
    fn udp_send(&mut self, pi: usize) {
        let p = &mut self.probes[pi];
        if p.stopped || p.closed {
            return;
        }
        let now = now_ns();
        let due = p.sched.next_due;
        if p.stop_at.is_some_and(|s| due >= s || now >= s) {
            return; // FlowStop closes it
        }
        if p.sched.take(now).is_some() {
            let seq = p.win.next_seq();
            let t = now_ns();
            udp::encode(&mut p.buf, p.flow, seq, t);
            match net::send(p.fd, &p.buf) {
                Ok(Io::Done(_)) => {}
                Ok(_) | Err(_) => p.send_errors += 1, // it counts as sent and, without echo, lost
            }
            if let Some(r) = p.win.sent(t) {
                emit_udp(&mut self.out, &mut self.errors, p, r);
            }
        }
        let next = p.sched.next_due;
        self.timers.at(next, Timer::UdpSend(pi));
    }

    fn on_udp_probe(&mut self, pi: usize) {
        let Some(p) = self.probes.get_mut(pi) else { return };
        if p.closed {
            return;
        }
        loop {
            match net::recv(p.fd, &mut self.rbuf) {
                Ok(Io::Done(n)) => {
                    let now = now_ns();
                    match udp::decode(&self.rbuf[..n]) {
                        Some((flow, seq, t)) if flow == p.flow => match p.win.echo(seq, t, now) {
                            udp::Echo::Rtt(_) => p.echoed += 1,
                            udp::Echo::Duplicate => p.duplicates += 1,
                            udp::Echo::Stray => p.stray += 1,
                        },
                        _ => p.stray += 1,
                    }
                }
                Ok(Io::Eof) => p.stray += 1, // an empty datagram
                Ok(Io::WouldBlock) => break,
                Err(_) => {
                    // e.g. ECONNREFUSED after an ICMP port unreachable; level-triggered
                    // epoll calls again if more is waiting
                    p.recv_errors += 1;
                    break;
                }
            }
        }
        while let Some(r) = p.win.pop_answered() {
            emit_udp(&mut self.out, &mut self.errors, p, r);
        }
        if p.stopped && p.win.outstanding() == 0 {
            self.udp_close(pi);
        }
    }

    /// Write every record still in the window (unanswered = lost), close the socket.
    fn udp_close(&mut self, pi: usize) {
        let p = &mut self.probes[pi];
        if p.closed {
            return;
        }
        p.closed = true;
        p.stopped = true;
        while let Some(r) = p.win.pop_any() {
            emit_udp(&mut self.out, &mut self.errors, p, r);
        }
        self.epoll.del(p.fd);
        net::close(p.fd);
        let fi = p.fi;
        self.flows[fi].open = self.flows[fi].open.saturating_sub(1);
    }

    fn on_udp_echo(&mut self, li: usize) {
        let fd = self.listeners[li].fd;
        // bounded per wakeup (level-triggered: the rest comes with the next epoll_wait)
        for _ in 0..1024 {
            match net::recv_from(fd, &mut self.rbuf, &mut self.echo_from) {
                Ok(Some(n)) => match net::send_to(fd, &self.rbuf[..n], &self.echo_from) {
                    Ok(_) => self.echo_served += 1,
                    Err(_) => self.echo_errors += 1,
                },
                Ok(None) => break,
                Err(_) => {
                    self.echo_errors += 1;
                    break;
                }
            }
        }
    }
}
