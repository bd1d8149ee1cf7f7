//! Contract: the client side of `download`. Each download is a new connection that
//! sends `GET /bytes/<size>?flow=<f>&conn=<c> HTTP/1.1` (`Connection: close`), reads
//! the response head, then exactly `Content-Length` body bytes; with the last one the
//! download is complete (`last_byte_ns`) and the client closes. A non-200 status, a
//! missing Content-Length, a length other than `size`, or FIN before the body is
//! complete are errors in conns.jsonl. The server side is `KindState::HttpServe` (see
//! `accept`): head, body from the static buffer, FIN.

use super::Ctx;
use crate::conn::Conn;
use crate::wire::{self, ResponseHead};

pub struct HttpGet {
    pub size: u64,
    pub host: String,
    pub head: Vec<u8>,
    /// Body length once the head is parsed.
    pub body_len: Option<u64>,
}

pub fn on_connected(c: &mut Conn, g: &HttpGet) {
    c.pre = wire::format_http_request(g.size, c.log.flow, c.log.conn, &g.host);
}

pub fn client_on_data(c: &mut Conn, g: &mut HttpGet, data: &[u8], ctx: &mut Ctx) {
    let body: &[u8];
    let mut tmp = Vec::new();
    match g.body_len {
        Some(_) => body = data,
        None => {
            if g.head.is_empty() && c.log.first_byte_ns.is_none() {
                // The first byte of the response counts, head included.
                c.log.first_byte_ns = Some(ctx.now);
            }
            g.head.extend_from_slice(data);
            match wire::parse_http_response_head(&g.head) {
                ResponseHead::NeedMore => return,
                ResponseHead::Invalid(why) => return c.fail("read response", why),
                ResponseHead::Done { status, content_length, consumed } => {
                    if status != 200 {
                        return c.fail("download", format!("HTTP status {status}"));
                    }
                    match content_length {
                        Some(n) if n == g.size => g.body_len = Some(n),
                        Some(n) => {
                            let msg = format!("Content-Length {n}, asked for {}", g.size);
                            return c.fail("download", msg);
                        }
                        None => return c.fail("download", "response without Content-Length"),
                    }
                    tmp = g.head.split_off(consumed);
                    body = &tmp;
                }
            }
        }
    }
    let first = c.log.first_byte_ns;
    c.note_rx(ctx.now, body.len());
    c.log.first_byte_ns = first.or(Some(ctx.now));
    drop(tmp);
    let want = g.body_len.unwrap_or(u64::MAX);
    if c.rcvd >= want {
        if c.rcvd > want {
            c.log.error = Some(format!("{} bytes more than Content-Length", c.rcvd - want));
        }
        // Complete: close our side now; the server's FIN may still be on its way.
        c.closing = true;
    }
}

pub fn client_on_eof(c: &mut Conn, g: &HttpGet) {
    match g.body_len {
        Some(n) if c.rcvd >= n => c.closing = true,
        Some(n) => c.fail("download", format!("connection closed after {} of {n} body bytes", c.rcvd)),
        None => c.fail("download", "connection closed before the response head"),
    }
}
