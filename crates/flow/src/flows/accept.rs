//! Contract: a connection accepted by a listener reads its first bytes here until
//! `wire::classify` decides: a CCAF hello turns it into a bulk/paced sink or an rr
//! server, an HTTP request into the download server (404/405 pages for anything but
//! `GET|HEAD /bytes/<size>`), garbage closes it with an error in conns.jsonl.
//! Bytes after the hello are payload and go to the new state.

use super::{rr, Ctx, KindState};
use crate::conn::{Conn, Side};
use crate::wire::{self, First, HelloKind};

pub struct Detect {
    pub buf: Vec<u8>,
    /// Accept sequence number on this listener: the conn id of downloads without `?conn=`.
    pub seq: u32,
}

/// Bytes arrived on a connection in `KindState::Detect`; may replace `state` with the kind
/// the first bytes asked for.
pub fn on_data(c: &mut Conn, state: &mut KindState, data: &[u8], ctx: &mut Ctx) {
    let d = match state {
        KindState::Detect(d) => d,
        _ => return,
    };
    d.buf.extend_from_slice(data);
    let seq = d.seq;
    match wire::classify(&d.buf) {
        First::NeedMore => {}
        First::Invalid(why) => c.fail("read hello", why),
        First::Hello { hello, consumed } => {
            let rest = d.buf.split_off(consumed);
            c.log.flow = hello.flow;
            c.log.conn = hello.conn;
            match hello.kind {
                HelloKind::Bulk | HelloKind::Paced => {
                    c.log.kind = Some(if hello.kind == HelloKind::Bulk { "bulk" } else { "paced" });
                    c.log.side = Some(Side::Recv);
                    *state = KindState::Sink;
                    c.note_rx(ctx.now, rest.len());
                }
                HelloKind::Rr { request_bytes, response_bytes } => {
                    c.log.kind = Some("rr");
                    c.log.side = Some(Side::Send);
                    let mut s = rr::RrServer::new(request_bytes, response_bytes);
                    if !rest.is_empty() {
                        rr::server_on_data(c, &mut s, &rest, ctx);
                    }
                    *state = KindState::RrServer(s);
                }
            }
        }
        First::Http { req, .. } => {
            c.log.flow = req.flow;
            c.log.conn = req.conn.unwrap_or(seq);
            c.log.kind = Some("download");
            c.log.side = Some(Side::Send);
            *state = KindState::HttpServe;
            c.finish_when_sent = true;
            let head_only = req.method == "HEAD";
            match (req.method.as_str(), req.size) {
                ("GET" | "HEAD", Some(size)) => {
                    c.pre = wire::format_http_ok(size);
                    c.budget = if head_only { 0 } else { size };
                }
                ("GET" | "HEAD", None) => {
                    c.pre = wire::format_http_error(404, "Not Found");
                    c.log.error = Some(format!("HTTP 404: no such path {:?} (only /bytes/<size>)", req.path));
                }
                (m, _) => {
                    c.pre = wire::format_http_error(405, "Method Not Allowed");
                    c.log.error = Some(format!("HTTP 405: method {m}"));
                }
            }
        }
    }
}
