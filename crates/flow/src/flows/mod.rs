//! Contract: what each flow kind does on a connection, as small state machines driven
//! by the event loop through five entry points: `on_connected` (client socket became
//! writable for the first time), `on_data` (bytes read), `on_eof` (peer sent FIN),
//! `on_timer` (a `Timer::Conn` of this connection fired) and `on_stop` (the flow's
//! stop time came). They only change the `Conn` (budget, head, finish flags, payload
//! counters) and schedule timers; all socket I/O stays in `Conn::pump` and the loop.
//! One module per kind; `accept` turns a fresh server connection into one of them.

pub mod accept;
pub mod bulk;
pub mod download;
pub mod paced;
pub mod rr;

use crate::conn::{Conn, Role};
use crate::records::RecordFile;
use crate::timers::Timers;

pub struct Ctx<'a> {
    pub now: u64,
    /// Slot of the connection being handled (for its timers).
    pub slot: usize,
    pub timers: &'a mut Timers,
    pub rr_out: &'a mut RecordFile,
    /// Runtime errors for engine.json.
    pub errors: &'a mut Vec<String>,
}

pub enum Proto {
    /// Server side, before the first bytes said what the client wants.
    Detect(accept::Detect),
    /// Client of bulk/parallel: sends a fixed amount or until stopped.
    BulkSend(bulk::BulkSend),
    /// Server side of bulk/parallel/paced: counts what arrives.
    Sink,
    Paced(paced::Paced),
    HttpGet(download::HttpGet),
    HttpServe,
    RrClient(rr::RrClient),
    RrServer(rr::RrServer),
}

pub fn on_connected(c: &mut Conn, ctx: &mut Ctx) {
    match &mut c.proto {
        Proto::BulkSend(_) => bulk::on_connected(c),
        Proto::Paced(_) => paced::on_connected(c, ctx),
        Proto::HttpGet(_) => download::on_connected(c),
        Proto::RrClient(_) => rr::client_on_connected(c, ctx),
        _ => {}
    }
}

pub fn on_data(c: &mut Conn, data: &[u8], ctx: &mut Ctx) {
    match &mut c.proto {
        Proto::Detect(_) => accept::on_data(c, data, ctx),
        Proto::Sink => c.note_rx(ctx.now, data.len()),
        Proto::HttpGet(_) => download::client_on_data(c, data, ctx),
        Proto::RrClient(_) => rr::client_on_data(c, data, ctx),
        Proto::RrServer(_) => rr::server_on_data(c, data, ctx),
        // Senders and the HTTP server ignore what the peer sends after its request.
        Proto::BulkSend(_) | Proto::Paced(_) | Proto::HttpServe => {}
    }
}

pub fn on_eof(c: &mut Conn, _ctx: &mut Ctx) {
    c.peer_eof = true;
    match (&c.proto, c.log.role) {
        (Proto::Detect(d), _) => {
            if d.buf.is_empty() {
                c.closing = true; // a port check or an aborted client: nothing to log as error
            } else {
                c.fail("read hello", format!("peer closed after {} bytes", d.buf.len()));
            }
        }
        (Proto::HttpGet(_), _) => download::client_on_eof(c),
        (_, Role::Server) => c.finish_when_sent = true,
        (_, Role::Client) => {
            if !c.finish_when_sent {
                c.fail("send", "peer closed the connection");
            }
        }
    }
}

pub fn on_timer(c: &mut Conn, ctx: &mut Ctx) {
    match &mut c.proto {
        Proto::Paced(_) => paced::on_timer(c, ctx),
        Proto::RrClient(_) => rr::client_on_timer(c, ctx),
        _ => {}
    }
}

pub fn on_stop(c: &mut Conn) {
    match &mut c.proto {
        Proto::BulkSend(_) | Proto::Paced(_) | Proto::RrClient(_) => {
            // Stop producing; what is already in the socket buffer still drains.
            if let Proto::RrClient(r) = &mut c.proto {
                r.stopped = true;
            }
            if let Proto::Paced(p) = &mut c.proto {
                p.stopped = true;
            }
            c.budget = 0;
            c.finish_when_sent = true;
        }
        // A download in progress runs to its end (or the host's end time).
        _ => {}
    }
}
