//! Contract: request/response (`rr`). The client sends a 24-byte hello (kind 2,
//! request_bytes, response_bytes), then repeatedly: writes `request_bytes`, waits for
//! `response_bytes`, records `rr.bin {t_ns = request sent, flow, conn, latency_ns}`,
//! waits `gap_ns` (0 = at once), until `count` exchanges or the flow's stop time. The
//! server answers every complete request with `response_bytes` (it is the data-sending
//! side, so its socket is sampled into tcpinfo.bin; the client's into rx.bin).

use super::Ctx;
use crate::conn::Conn;
use crate::records;
use crate::timers::Timer;
use crate::wire::{Hello, HelloKind};

pub struct RrClient {
    pub request_bytes: u32,
    pub response_bytes: u32,
    pub left: Option<u64>,
    pub gap_ns: u64,
    /// When the outstanding request was handed to the socket (0 = none outstanding).
    pub sent_ns: u64,
    /// Response bytes received for the outstanding request.
    pub got: u64,
    pub stopped: bool,
}

pub struct RrServer {
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Bytes of the current, incomplete request.
    pub partial: u64,
}

impl RrServer {
    pub fn new(request_bytes: u32, response_bytes: u32) -> RrServer {
        RrServer { request_bytes: request_bytes as u64, response_bytes: response_bytes as u64, partial: 0 }
    }
}

fn send_request(c: &mut Conn, r: &mut RrClient, ctx: &mut Ctx) {
    if r.stopped || r.left == Some(0) {
        return;
    }
    if let Some(l) = &mut r.left {
        *l -= 1;
    }
    r.sent_ns = ctx.now;
    r.got = 0;
    c.add_budget(r.request_bytes as u64);
}

pub fn client_on_connected(c: &mut Conn, r: &mut RrClient, ctx: &mut Ctx) {
    let kind = HelloKind::Rr { request_bytes: r.request_bytes, response_bytes: r.response_bytes };
    c.pre = Hello { flow: c.log.flow, conn: c.log.conn, kind }.encode();
    send_request(c, r, ctx);
}

pub fn client_on_data(c: &mut Conn, r: &mut RrClient, data: &[u8], ctx: &mut Ctx) {
    c.note_rx(ctx.now, data.len());
    let mut left = data.len() as u64;
    while left > 0 {
        let take = left.min(r.response_bytes as u64 - r.got);
        r.got += take;
        left -= take;
        if r.got < r.response_bytes as u64 {
            break;
        }
        let lat = ctx.now.saturating_sub(r.sent_ns);
        let rec = records::encode_rr(r.sent_ns, c.log.flow, c.log.conn, lat);
        if let Err(e) = ctx.rr_out.append(&rec) {
            ctx.errors.push(format!("write rr.bin: {e}"));
        }
        r.got = 0;
        if !r.stopped && r.left != Some(0) {
            if r.gap_ns == 0 {
                send_request(c, r, ctx);
            } else {
                ctx.timers.at(ctx.now + r.gap_ns, Timer::Conn(ctx.slot, c.uid));
            }
        } else {
            c.finish_when_sent = true;
        }
    }
}

pub fn client_on_timer(c: &mut Conn, r: &mut RrClient, ctx: &mut Ctx) {
    send_request(c, r, ctx);
}

pub fn server_on_data(c: &mut Conn, s: &mut RrServer, data: &[u8], ctx: &mut Ctx) {
    c.note_rx(ctx.now, data.len());
    let total = s.partial + data.len() as u64;
    s.partial = total % s.request_bytes;
    c.add_budget((total / s.request_bytes) * s.response_bytes);
}
