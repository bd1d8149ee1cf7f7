//! Contract: the one event loop of a host. It owns every socket, the timer heap and the
//! outputs, and does the lifecycle of docs/dev/contracts.md §2:
//! `setup` (outputs, congestion controls checked, listeners bound) → one `LISTEN <i>
//! <addr:port>` line per listener → `READY` →
//! `GO <t0>` on stdin → flows opened at `t0 + start_ns`, stopped at `t0 + stop_ns` →
//! end at `t0 + end_ns`, on SIGINT/SIGTERM, or when a host without listeners has no
//! flow left → final samples, conns.jsonl for open connections, engine.json → `DONE`.
//! Readiness comes from one epoll (edge-triggered for connections), every deadline from
//! one absolute CLOCK_MONOTONIC timerfd armed for the earliest of the timer heap and the
//! sampling grid. Per-connection behaviour lives in `flows`; the loop only does I/O.
//! Invariant: a token or timer names a connection by (slot, uid), so an event for a
//! closed connection never reaches a new one in the same slot.
//! Here: the engine's state, setup, the loop, the lifecycle, and when flows start and
//! stop; `conns` does the TCP connections (listeners, clients, their I/O and samples),
//! `udp_probes` the UDP probe flows and echo listeners.

mod conns;
mod udp_probes;

use crate::config::{Config, Flow, FlowKind, ListenProto};
use crate::conn::Role;
use crate::error::Failure;
use crate::flows::{bulk, download::HttpGet, paced::Paced, rr::RrClient, FlowConn, KindState};
use crate::net::{self, Outcome};
use crate::outputs::{EngineReport, Outputs};
use crate::rng::GapSource;
use crate::sampler::Ticker;
use crate::timers::{Timer, Timers};
use crate::wire;
use ccarena_sys::clock::{now_ns, set_timer_slack_ns};
use ccarena_sys::epoll::{Epoll, EV_IN};
use ccarena_sys::signal::{self, SignalFd};
use ccarena_sys::timer::TimerFd;
use ccarena_sys::{cpu, fd, stdio};
use std::os::fd::{AsFd, OwnedFd};
use udp_probes::UdpProbe;

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
    fd: OwnedFd,
    cc: Option<String>,
    seq: u32,
    addr: String,
    proto: ListenProto,
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
    conns: Vec<Option<FlowConn>>,
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

fn cc_probe(cc: &str, key: &str) -> Result<(), Failure> {
    let probe_addr: std::net::SocketAddr = "0.0.0.0:0".parse().unwrap();
    let fd = net::tcp_socket(&probe_addr).map_err(|e| Failure::os("create socket", "probe", e))?;
    net::set_congestion(fd.as_fd(), cc).map_err(|e| {
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
        epoll.add(timerfd.as_fd(), EV_IN, TOK_TIMER).map_err(|e| Failure::os("epoll add", "timerfd", e))?;
        signal::ignore_sigpipe();
        let sigfd = SignalFd::new().map_err(|e| Failure::os("create", "signalfd", e))?;
        epoll.add(sigfd.as_fd(), EV_IN, TOK_SIGNAL).map_err(|e| Failure::os("epoll add", "signalfd", e))?;
        // stdin may be something epoll refuses (a regular file, /dev/null): then it is read
        // once, blocking, right after READY.
        let stdin_open = epoll.add(std::io::stdin().as_fd(), EV_IN, TOK_STDIN).is_ok();
        let mut listeners = Vec::new();
        for (i, l) in cfg.listen.iter().enumerate() {
            let fd = match l.proto {
                ListenProto::Tcp => net::listen(&l.addr, l.cc.as_deref())
                    .map_err(|e| Failure::os("listen", format!("{} (listen[{i}])", l.addr), e))?,
                ListenProto::UdpEcho => net::udp_bind(&l.addr)
                    .map_err(|e| Failure::os("bind udp_echo", format!("{} (listen[{i}])", l.addr), e))?,
            };
            epoll.add(fd.as_fd(), EV_IN, TOK_LISTEN + i as u64).map_err(|e| Failure::os("epoll add", "listener", e))?;
            // as bound: with port 0, the port the kernel picked
            let addr = net::local_addr(fd.as_fd()).unwrap_or(l.addr).to_string();
            listeners.push(Listener { fd, cc: l.cc.clone(), seq: 0, addr, proto: l.proto });
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
        // Where each listener is bound (the port the kernel picked for port 0).
        for (i, l) in self.listeners.iter().enumerate() {
            stdio::say(&format!("LISTEN {i} {}", l.addr));
        }
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
        match fd::read(std::io::stdin().as_fd(), &mut b) {
            Ok(Outcome::Done(n)) => self.stdin_buf.extend_from_slice(&b[..n]),
            Ok(Outcome::WouldBlock) => return Ok(()),
            Ok(Outcome::Eof) | Err(_) => {
                self.epoll.del(std::io::stdin().as_fd());
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
                    if self.conns.get(slot).and_then(|c| c.as_ref()).map(|c| c.conn.uid) == Some(uid) {
                        self.with_conn(slot, FlowConn::on_timer);
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
            if let Some(FlowConn { conn: c, state }) = &mut self.conns[slot] {
                if !c.connected && c.log.role == Role::Client {
                    c.give_up_connecting(now, "the host ended");
                }
                if let KindState::HttpGet(g) = state {
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
        let udp_echo_on = self.listeners.iter().any(|l| l.proto == ListenProto::UdpEcho);
        self.listeners.clear(); // closes them
        let udp_probes = if self.probes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Array(self.probes.iter().map(|p| p.report()).collect())
        };
        let udp_echo = if udp_echo_on {
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

    // ---- flows ---------------------------------------------------------------------

    fn flow_start(&mut self, fi: usize) {
        let f = self.flows[fi].cfg.clone();
        match &f.kind {
            FlowKind::Bulk { bytes } => {
                for _ in 0..f.conns {
                    self.open_client(fi, KindState::BulkSend(bulk::BulkSend { limit: *bytes }));
                }
            }
            FlowKind::Parallel { bytes } => {
                for i in 0..f.conns {
                    let limit = bytes.map(|b| bulk::stripe(b, f.conns, i));
                    self.open_client(fi, KindState::BulkSend(bulk::BulkSend { limit }));
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
                    self.open_client(fi, KindState::Paced(p));
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
                    self.open_client(fi, KindState::RrClient(r));
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
        self.open_client(fi, KindState::HttpGet(HttpGet { size, host, head: Vec::new(), body_len: None }));
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
        self.udp_stop(fi);
        let now = now_ns();
        for slot in 0..self.conns.len() {
            let mine = matches!(&self.conns[slot], Some(c) if c.conn.flow_idx == Some(fi));
            if mine {
                if let Some(c) = &mut self.conns[slot] {
                    // Still no answer to its SYN: the connection timed out. (A download
                    // in progress, connecting or not, runs on to the host's end.)
                    if !c.conn.connected && !matches!(c.state, KindState::HttpGet(_)) {
                        c.conn.give_up_connecting(now, "the flow stopped");
                    }
                    c.on_stop();
                    c.conn.pump(now, &self.payload);
                }
                self.maybe_close(slot, now);
            }
        }
    }
}
