//! Contract: one TCP connection as the event loop sees it, whatever its flow kind.
//! - The *output side* is generic: an optional head (`pre`: hello, HTTP request or
//!   response head, error page) is sent first, then up to `budget` payload bytes from
//!   the engine's static buffer. Kinds only move `budget` (bulk: all of it; paced: one
//!   write per gap; rr: one request or response). With `finish_when_sent`, the write
//!   side is shut down (FIN) once head and budget are out.
//! - The *input side* hands every chunk read to the kind (`flows::FlowConn::on_data`),
//!   which counts payload with `note_rx`.
//! - A connection is finished when the peer has closed and our write side is shut, or
//!   when the kind or an error says so (`closing`). Its `ConnLog` then becomes one line
//!   of conns.jsonl.
//! - A failure is one line in `error`, the first that happened. The connection's own
//!   failures start with their class (`error_class`): "timed out" (no answer to the SYN
//!   — the kernel gave up, or the connection was still not connected when it had to
//!   stop — or an established connection the kernel timed out), "refused" (RST or ICMP
//!   port unreachable answering the SYN), "reset" (RST after connecting); the detail
//!   follows: `timed out: connect: Connection timed out (os error 110)`.
//!
//! Invariants: `budget` saturates (u64::MAX = unlimited bulk); payload counters exclude
//! hellos and HTTP heads; times are CLOCK_MONOTONIC ns, None = not (yet) applicable.
//! Dependencies go one way: `flows` drives a `Conn`, a `Conn` knows nothing of kinds.

use crate::net::{self, Outcome};
use serde::Serialize;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// How conns.jsonl names a connection's failure, by the socket error that says it.
pub fn error_class(e: &io::Error) -> Option<&'static str> {
    match e.raw_os_error()? {
        libc::ETIMEDOUT => Some(TIMED_OUT),
        libc::ECONNREFUSED => Some("refused"),
        libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED => Some("reset"),
        _ => None,
    }
}

pub const TIMED_OUT: &str = "timed out";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Send,
    Recv,
}

/// One line of conns.jsonl.
#[derive(Debug, Clone, Serialize)]
pub struct ConnLog {
    pub flow: u32,
    pub conn: u32,
    pub kind: Option<&'static str>,
    pub role: Role,
    pub side: Option<Side>,
    pub cc: Option<String>,
    pub local: Option<String>,
    pub remote: Option<String>,
    pub connect_start_ns: Option<u64>,
    pub connected_ns: Option<u64>,
    pub first_byte_ns: Option<u64>,
    pub last_byte_ns: Option<u64>,
    pub end_ns: Option<u64>,
    pub bytes: Option<u64>,
    pub error: Option<String>,
}

pub struct Conn {
    pub fd: OwnedFd,
    /// Unique over the process lifetime (slots are reused, uids are not).
    pub uid: u64,
    /// Index of the client flow this belongs to (None for accepted connections).
    pub flow_idx: Option<usize>,
    pub log: ConnLog,
    pub connected: bool,
    pub pre: Vec<u8>,
    pub pre_off: usize,
    pub budget: u64,
    pub sent: u64,
    pub rcvd: u64,
    pub finish_when_sent: bool,
    pub wr_shut: bool,
    pub peer_eof: bool,
    pub closing: bool,
}

impl Conn {
    pub fn new(fd: OwnedFd, uid: u64, log: ConnLog) -> Conn {
        Conn {
            fd,
            uid,
            flow_idx: None,
            log,
            connected: false,
            pre: Vec::new(),
            pre_off: 0,
            budget: 0,
            sent: 0,
            rcvd: 0,
            finish_when_sent: false,
            wr_shut: false,
            peer_eof: false,
            closing: false,
        }
    }

    pub fn side(&self) -> Option<Side> {
        self.log.side
    }

    pub fn add_budget(&mut self, n: u64) {
        self.budget = self.budget.saturating_add(n);
    }

    pub fn note_rx(&mut self, now: u64, n: usize) {
        if n == 0 {
            return;
        }
        if self.log.first_byte_ns.is_none() {
            self.log.first_byte_ns = Some(now);
        }
        self.log.last_byte_ns = Some(now);
        self.rcvd += n as u64;
    }

    pub fn fail(&mut self, what: &str, e: impl std::fmt::Display) {
        if self.log.error.is_none() {
            self.log.error = Some(format!("{what}: {e}"));
        }
        self.closing = true;
    }

    /// A socket call `what` failed with `e`: the line starts with its class, if it has one.
    pub fn fail_io(&mut self, what: &str, e: &io::Error) {
        match error_class(e) {
            Some(class) => self.fail(class, format_args!("{what}: {e}")),
            None => self.fail(what, e),
        }
    }

    /// A client that is still not connected when it has to stop (`when`: "the flow
    /// stopped", "the host ended") gives up: "timed out: SYN unanswered for <s> s when …",
    /// counted from `connect_start_ns`.
    pub fn give_up_connecting(&mut self, now: u64, when: &str) {
        let waited = now.saturating_sub(self.log.connect_start_ns.unwrap_or(now));
        self.fail(TIMED_OUT, format_args!("SYN unanswered for {:.3} s when {when}", waited as f64 / 1e9));
    }

    /// Send head then payload until the socket is full or there is nothing left.
    /// `data` is the engine's static payload buffer.
    pub fn pump(&mut self, now: u64, data: &[u8]) {
        if !self.connected || self.wr_shut || self.closing {
            return;
        }
        while self.pre_off < self.pre.len() {
            match net::send(self.fd.as_fd(), &self.pre[self.pre_off..]) {
                Ok(Outcome::Done(n)) => self.pre_off += n,
                Ok(_) => return,
                Err(e) => return self.fail_io("send", &e),
            }
        }
        while self.budget > 0 {
            let n = (self.budget.min(data.len() as u64)) as usize;
            match net::send(self.fd.as_fd(), &data[..n]) {
                Ok(Outcome::Done(k)) => {
                    self.budget -= k as u64;
                    self.sent += k as u64;
                    if self.log.first_byte_ns.is_none() {
                        self.log.first_byte_ns = Some(now);
                    }
                    self.log.last_byte_ns = Some(now);
                }
                Ok(_) => return,
                Err(e) => return self.fail_io("send", &e),
            }
        }
        if self.finish_when_sent && !self.wr_shut {
            if let Err(e) = net::shutdown_write(self.fd.as_fd()) {
                return self.fail_io("shutdown", &e);
            }
            self.wr_shut = true;
        }
    }

    pub fn is_finished(&self) -> bool {
        self.closing || (self.peer_eof && self.wr_shut)
    }

    /// Fill in the closing fields of the log.
    pub fn finish_log(&mut self, now: u64) -> ConnLog {
        let mut l = self.log.clone();
        l.end_ns = Some(now);
        l.bytes = Some(match self.log.side {
            Some(Side::Send) => self.sent,
            _ => self.rcvd,
        });
        l
    }
}
