//! Contract: the TCP side of the event loop. Listeners accept and hand each new
//! connection to `flows` (kind detected from its first bytes); clients are opened for
//! the flows (`open_client`), their connect completes on EPOLLOUT; every readiness
//! event reads until EAGAIN, hands the bytes to the kind and pumps what it wants sent;
//! a finished connection is sampled a last time, closed and logged to conns.jsonl.
//! Sampling writes one tcpinfo.bin record per data-sending socket and one rx.bin record
//! per data-receiving socket per tick.
//! Invariant: epoll tokens and timers name a connection by (slot, uid); a stale event
//! (a closed connection whose slot was reused) is dropped.

use std::os::fd::AsFd;

use super::{Engine, MAX_ERRORS, SLOT_BITS};
use crate::config::{FlowKind, ListenProto};
use crate::conn::{error_class, Conn, ConnLog, Role, Side};
use crate::flows::{accept::Detect, Ctx, FlowConn, KindState};
use crate::net::{self, Outcome};
use crate::outputs::Outputs;
use crate::records;
use crate::sampler;
use crate::wire;
use ccarena_sys::clock::now_ns;
use ccarena_sys::epoll::{EV_ERR, EV_ET, EV_IN, EV_OUT, EV_RDHUP};

fn conn_token(slot: usize, uid: u64) -> u64 {
    (uid << SLOT_BITS) | slot as u64
}


impl Engine {
    // ---- sampling ------------------------------------------------------------------

    fn sample_conn(out: &mut Outputs, info: &mut [u8; 256], c: &Conn, now: u64) -> Result<(), String> {
        match c.side() {
            Some(Side::Send) if c.connected => {
                let n = net::tcp_info_raw(c.fd.as_fd(), info).map_err(|e| format!("getsockopt TCP_INFO: {e}"))?;
                let rec = sampler::decode_tcp_info(now, c.log.flow, c.log.conn, &info[..], n);
                // the send buffer's size and fill; a kernel without SO_MEMINFO leaves them 0
                let mut mem = [0u32; 16];
                let m = net::sk_meminfo(c.fd.as_fd(), &mut mem).unwrap_or(0);
                let rec = sampler::with_meminfo(rec, &mem, m);
                out.tcpinfo.append(&rec.encode()).map_err(|e| format!("write tcpinfo.bin: {e}"))
            }
            Some(Side::Recv) if c.connected => out
                .rx
                .append(&records::encode_rx(now, c.log.flow, c.log.conn, c.rcvd))
                .map_err(|e| format!("write rx.bin: {e}")),
            _ => Ok(()),
        }
    }

    pub(super) fn sample_all(&mut self) {
        for c in self.conns.iter().flatten() {
            let now = now_ns();
            if let Err(e) = Self::sample_conn(&mut self.out, &mut self.info, &c.conn, now) {
                if self.errors.len() < MAX_ERRORS {
                    self.errors.push(e);
                }
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

    pub(super) fn open_client(&mut self, fi: usize, state: KindState) {
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
                net::set_congestion(fd.as_fd(), c).map_err(|e| format!("set congestion control {c:?}: {e}"))?;
            }
            if nodelay {
                net::set_nodelay(fd.as_fd(), true).map_err(|e| format!("set TCP_NODELAY: {e}"))?;
            }
            net::connect(fd.as_fd(), &dst).map_err(|e| match error_class(&e) {
                Some(class) => format!("{class}: connect: {e}"),
                None => format!("connect: {e}"),
            })
        })();
        log.cc = net::get_congestion(fd.as_fd()).ok();
        if let Err(e) = setup {
            drop(fd);
            log.error = Some(e);
            log.end_ns = Some(now);
            return self.log_failed(log);
        }
        let slot = self.alloc_slot();
        let uid = self.next_uid;
        self.next_uid += 1;
        let mut c = Conn::new(fd, uid, log);
        c.flow_idx = Some(fi);
        if let Err(e) = self.epoll.add(c.fd.as_fd(), EV_IN | EV_OUT | EV_RDHUP | EV_ET, conn_token(slot, uid)) {
            c.log.error = Some(format!("epoll add: {e}"));
            c.log.end_ns = Some(now);
            self.free.push(slot);
            return self.log_failed(c.log);
        }
        self.conns[slot] = Some(FlowConn::new(c, state));
        self.flows[fi].open += 1;
    }

    fn log_failed(&mut self, log: ConnLog) {
        self.error(format!("flow {} conn {}: {}", log.flow, log.conn, log.error.as_deref().unwrap_or("?")));
        if let Err(e) = self.out.conn(&log) {
            self.error(format!("write conns.jsonl: {e}"));
        }
    }

    // ---- I/O events ----------------------------------------------------------------

    pub(super) fn on_listener(&mut self, li: usize) {
        if self.listeners[li].proto == ListenProto::UdpEcho {
            return self.on_udp_echo(li);
        }
        loop {
            let fd = match net::accept(self.listeners[li].fd.as_fd()) {
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
            let mut cc = net::get_congestion(fd.as_fd()).ok();
            if let Some(want) = &l.cc {
                if cc.as_deref() != Some(want.as_str()) {
                    let _ = net::set_congestion(fd.as_fd(), want);
                    cc = net::get_congestion(fd.as_fd()).ok();
                }
            }
            let log = ConnLog {
                flow: wire::FLOW_UNKNOWN,
                conn: seq,
                kind: None,
                role: Role::Server,
                side: None,
                cc,
                local: net::local_addr(fd.as_fd()).map(|a| a.to_string()),
                remote: net::peer_addr(fd.as_fd()).map(|a| a.to_string()),
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
            let mut c = Conn::new(fd, uid, log);
            c.connected = true;
            if let Err(e) = self.epoll.add(c.fd.as_fd(), EV_IN | EV_OUT | EV_RDHUP | EV_ET, conn_token(slot, uid)) {
                self.free.push(slot);
                self.error(format!("epoll add accepted socket: {e}"));
                continue;
            }
            self.conns[slot] = Some(FlowConn::new(c, KindState::Detect(Detect { buf: Vec::new(), seq })));
        }
    }

    /// Run `f` on the connection in `slot` with a context, then pump and maybe close it.
    pub(super) fn with_conn(&mut self, slot: usize, f: impl FnOnce(&mut FlowConn, &mut Ctx)) {
        let now = now_ns();
        let Some(c) = self.conns[slot].as_mut() else { return };
        let mut ctx = Ctx { now, slot, timers: &mut self.timers, rr_out: &mut self.out.rr, errors: &mut self.errors };
        f(c, &mut ctx);
        c.conn.pump(now, &self.payload);
        self.maybe_close(slot, now);
    }

    pub(super) fn on_conn_event(&mut self, slot: usize, uid: u64, ev: u32) {
        let now = now_ns();
        let Some(fc) = self.conns.get_mut(slot).and_then(|c| c.as_mut()) else { return };
        if fc.conn.uid != uid {
            return;
        }
        let mut ctx = Ctx { now, slot, timers: &mut self.timers, rr_out: &mut self.out.rr, errors: &mut self.errors };
        if !fc.conn.connected && ev & (EV_OUT | EV_ERR) != 0 {
            match net::so_error(fc.conn.fd.as_fd()) {
                Ok(None) => {
                    fc.conn.connected = true;
                    fc.conn.log.connected_ns = Some(now);
                    fc.conn.log.local = net::local_addr(fc.conn.fd.as_fd()).map(|a| a.to_string());
                    fc.on_connected(&mut ctx);
                    // Stopped while connecting: say hello, send nothing, close.
                    if fc.conn.flow_idx.is_some_and(|fi| self.flows[fi].stopped) {
                        fc.on_stop();
                    }
                }
                Ok(Some(e)) | Err(e) => fc.conn.fail_io("connect", &e),
            }
        }
        let c = &fc.conn;
        if c.connected && !c.closing && !c.peer_eof && ev & (EV_IN | EV_RDHUP | EV_ERR) != 0 {
            loop {
                match net::recv(fc.conn.fd.as_fd(), &mut self.rbuf) {
                    Ok(Outcome::Done(n)) => {
                        fc.on_data(&self.rbuf[..n], &mut ctx);
                        if fc.conn.closing {
                            break;
                        }
                    }
                    Ok(Outcome::WouldBlock) => break,
                    Ok(Outcome::Eof) => {
                        fc.on_eof(&mut ctx);
                        break;
                    }
                    Err(e) => {
                        fc.conn.fail_io("recv", &e);
                        break;
                    }
                }
            }
        }
        fc.conn.pump(now, &self.payload);
        self.maybe_close(slot, now);
    }

    pub(super) fn maybe_close(&mut self, slot: usize, now: u64) {
        if matches!(&self.conns[slot], Some(c) if c.conn.is_finished()) {
            self.close_conn(slot, now);
        }
    }

    pub(super) fn close_conn(&mut self, slot: usize, now: u64) {
        let Some(FlowConn { conn: mut c, .. }) = self.conns[slot].take() else { return };
        self.free.push(slot);
        // A last sample so totals at close are exact.
        if let Err(e) = Self::sample_conn(&mut self.out, &mut self.info, &c, now) {
            self.error(e);
        }
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
