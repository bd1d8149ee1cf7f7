//! Contract: the UDP side of the event loop (docs/dev/contracts.md §2). A `udp_echo`
//! listener answers every datagram in its readiness handler. A `udp_probe` flow owns one
//! connected UDP socket, sends on its own grid from `Timer::UdpSend` (the same timer heap
//! and timerfd as paced writes), matches echoes in `udp::Window`, and writes its records
//! to udp.bin in send order; after its stop time it waits up to `UDP_DRAIN_NS` for the
//! last echoes. The protocol itself (datagram, grid, window) is `crate::udp`, pure.

use super::{Engine, MAX_ERRORS, TOK_UDP, UDP_DRAIN_NS};
use crate::net::{self, Outcome};
use crate::outputs::Outputs;
use crate::records;
use crate::timers::Timer;
use crate::udp;
use ccarena_sys::clock::now_ns;
use ccarena_sys::epoll::EV_IN;
use std::os::fd::{AsFd, OwnedFd};

/// One `udp_probe` flow at run time.
pub(super) struct UdpProbe {
    fi: usize,
    flow: u32,
    /// The socket; None once closed.
    fd: Option<OwnedFd>,
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

impl UdpProbe {
    /// This probe's object in engine.json `udp_probes`.
    pub(super) fn report(&self) -> serde_json::Value {
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
    /// FlowStop of a udp_probe flow: no more sends; close once the outstanding echoes
    /// are in, or after UDP_DRAIN_NS.
    pub(super) fn udp_stop(&mut self, fi: usize) {
        if let Some(pi) = self.probes.iter().position(|p| p.fi == fi) {
            let p = &mut self.probes[pi];
            p.sched.skip_until(p.stop_at.unwrap_or_else(now_ns));
            p.stopped = true;
            if self.probes[pi].win.outstanding() == 0 {
                self.udp_close(pi);
            } else {
                self.timers.at(now_ns() + UDP_DRAIN_NS, Timer::UdpDrain(pi));
            }
        }
    }

    pub(super) fn udp_open(&mut self, fi: usize, interval_ns: u64, size: u32) {
        let f = self.flows[fi].cfg.clone();
        self.flows[fi].launched_all = true;
        let opened = (|| -> Result<OwnedFd, String> {
            let fd = net::udp_socket(&f.dst).map_err(|e| format!("udp socket: {e}"))?;
            net::connect(fd.as_fd(), &f.dst).map_err(|e| format!("connect udp {}: {e}", f.dst))?;
            Ok(fd)
        })();
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => return self.error(format!("flow {} (udp_probe): {e}", f.flow)),
        };
        let pi = self.probes.len();
        if let Err(e) = self.epoll.add(fd.as_fd(), EV_IN, TOK_UDP + pi as u64) {
            return self.error(format!("flow {} (udp_probe): epoll add: {e}", f.flow));
        }
        let t0 = self.t0.unwrap_or(0);
        self.probes.push(UdpProbe {
            fi,
            flow: f.flow,
            fd: Some(fd),
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
    pub(super) fn udp_send(&mut self, pi: usize) {
        let p = &mut self.probes[pi];
        if p.stopped || p.closed {
            return;
        }
        let now = now_ns();
        if let Some(stop) = p.stop_at.filter(|&s| p.sched.next_due >= s || now >= s) {
            // Reached too late to send before the stop: what is left of the grid is
            // skipped. FlowStop closes it.
            p.sched.skip_until(stop);
            return;
        }
        if p.sched.take(now).is_some() {
            let seq = p.win.next_seq();
            // The time the grid point was judged by is the send time: a record's grid
            // point is always the last one at or before its t_ns.
            let t = now;
            udp::encode(&mut p.buf, p.flow, seq, t);
            match p.fd.as_ref().map(|fd| net::send(fd.as_fd(), &p.buf)) {
                Some(Ok(Outcome::Done(_))) => {}
                _ => p.send_errors += 1, // it counts as sent and, without echo, lost
            }
            if let Some(r) = p.win.sent(t) {
                emit_udp(&mut self.out, &mut self.errors, p, r);
            }
        }
        let next = p.sched.next_due;
        self.timers.at(next, Timer::UdpSend(pi));
    }

    pub(super) fn on_udp_probe(&mut self, pi: usize) {
        let Some(p) = self.probes.get_mut(pi) else { return };
        let Some(fd) = p.fd.as_ref().filter(|_| !p.closed) else { return };
        loop {
            match net::recv(fd.as_fd(), &mut self.rbuf) {
                Ok(Outcome::Done(n)) => {
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
                Ok(Outcome::Eof) => p.stray += 1, // an empty datagram
                Ok(Outcome::WouldBlock) => break,
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
    pub(super) fn udp_close(&mut self, pi: usize) {
        let p = &mut self.probes[pi];
        if p.closed {
            return;
        }
        p.closed = true;
        p.stopped = true;
        // closed by the host's end before its stop: the grid points that passed unsent
        p.sched.skip_until(p.stop_at.map_or(now_ns(), |s| s.min(now_ns())));
        while let Some(r) = p.win.pop_any() {
            emit_udp(&mut self.out, &mut self.errors, p, r);
        }
        if let Some(fd) = p.fd.take() {
            self.epoll.del(fd.as_fd());
        }
        let fi = p.fi;
        self.flows[fi].open = self.flows[fi].open.saturating_sub(1);
    }

    pub(super) fn on_udp_echo(&mut self, li: usize) {
        let fd = self.listeners[li].fd.as_fd();
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

