//! Contract: what each flow kind does on a connection, as small state machines driven
//! by the event loop through five entry points of `FlowConn`: `on_connected` (client
//! socket became writable for the first time), `on_data` (bytes read), `on_eof` (peer
//! sent FIN), `on_timer` (a `Timer::Conn` of this connection fired) and `on_stop` (the
//! flow's stop time came). They only change the `Conn` (budget, head, finish flags,
//! payload counters) and their own state, and schedule timers; all socket I/O stays in
//! `Conn::pump` and the loop. One module per kind, each handed its own state; `accept`
//! turns a fresh server connection into one of them.

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

/// What this end of a connection does, by flow kind and role: each variant carries the
/// state of its kind's state machine.
pub enum KindState {
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

/// A connection together with the state machine of its kind: what the event loop keeps
/// per slot. Socket I/O stays with `conn`; `state` decides what to send next.
pub struct FlowConn {
    pub conn: Conn,
    pub state: KindState,
}

impl FlowConn {
    pub fn new(conn: Conn, state: KindState) -> FlowConn {
        FlowConn { conn, state }
    }

    /// The client's socket became writable for the first time.
    pub fn on_connected(&mut self, ctx: &mut Ctx) {
        let c = &mut self.conn;
        match &mut self.state {
            KindState::BulkSend(b) => bulk::on_connected(c, b),
            KindState::Paced(p) => paced::on_connected(c, p, ctx),
            KindState::HttpGet(g) => download::on_connected(c, g),
            KindState::RrClient(r) => rr::client_on_connected(c, r, ctx),
            _ => {}
        }
    }

    /// Bytes read from the socket.
    pub fn on_data(&mut self, data: &[u8], ctx: &mut Ctx) {
        let c = &mut self.conn;
        match &mut self.state {
            KindState::Detect(_) => accept::on_data(c, &mut self.state, data, ctx),
            KindState::Sink => c.note_rx(ctx.now, data.len()),
            KindState::HttpGet(g) => download::client_on_data(c, g, data, ctx),
            KindState::RrClient(r) => rr::client_on_data(c, r, data, ctx),
            KindState::RrServer(s) => rr::server_on_data(c, s, data, ctx),
            // Senders and the HTTP server ignore what the peer sends after its request.
            KindState::BulkSend(_) | KindState::Paced(_) | KindState::HttpServe => {}
        }
    }

    /// The peer sent FIN.
    pub fn on_eof(&mut self, _ctx: &mut Ctx) {
        let c = &mut self.conn;
        c.peer_eof = true;
        match (&self.state, c.log.role) {
            (KindState::Detect(d), _) => {
                if d.buf.is_empty() {
                    c.closing = true; // a port check or an aborted client: nothing to log as error
                } else {
                    c.fail("read hello", format!("peer closed after {} bytes", d.buf.len()));
                }
            }
            (KindState::HttpGet(g), _) => download::client_on_eof(c, g),
            (_, Role::Server) => c.finish_when_sent = true,
            (_, Role::Client) => {
                if !c.finish_when_sent {
                    c.fail("send", "peer closed the connection");
                }
            }
        }
    }

    /// A `Timer::Conn` of this connection fired.
    pub fn on_timer(&mut self, ctx: &mut Ctx) {
        let c = &mut self.conn;
        match &mut self.state {
            KindState::Paced(p) => paced::on_timer(c, p, ctx),
            KindState::RrClient(r) => rr::client_on_timer(c, r, ctx),
            _ => {}
        }
    }

    /// The flow's stop time came.
    pub fn on_stop(&mut self) {
        let c = &mut self.conn;
        match &mut self.state {
            KindState::BulkSend(_) | KindState::Paced(_) | KindState::RrClient(_) => {
                // Stop producing; what is already in the socket buffer still drains.
                if let KindState::RrClient(r) = &mut self.state {
                    r.stopped = true;
                }
                if let KindState::Paced(p) = &mut self.state {
                    p.stopped = true;
                }
                c.budget = 0;
                c.finish_when_sent = true;
            }
            // A download in progress runs to its end (or the host's end time).
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! The kinds' state machines without sockets: a `Conn` over /dev/null (`no_socket`)
    //! is never pumped.
    use super::*;
    use crate::conn::{ConnLog, Side};
    use crate::records::{RecordFile, RR_FIELDS};
    use crate::wire;

    fn log(role: Role) -> ConnLog {
        ConnLog {
            flow: 5,
            conn: 1,
            kind: None,
            role,
            side: None,
            cc: None,
            local: None,
            remote: None,
            connect_start_ns: None,
            connected_ns: None,
            first_byte_ns: None,
            last_byte_ns: None,
            end_ns: None,
            bytes: None,
            error: None,
        }
    }

    /// An fd for a `Conn` that is never pumped.
    fn no_socket() -> std::os::fd::OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    fn with_ctx(f: impl FnOnce(&mut Ctx)) -> u64 {
        let dir = std::env::temp_dir().join(format!("ccaflow-unit-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rr = RecordFile::create(&dir, "rr.bin", "rr", RR_FIELDS).unwrap();
        let mut timers = Timers::default();
        let mut errors = Vec::new();
        let mut ctx = Ctx { now: 1_000, slot: 0, timers: &mut timers, rr_out: &mut rr, errors: &mut errors };
        f(&mut ctx);
        let n = rr.records;
        std::fs::remove_dir_all(&dir).ok();
        n
    }

    #[test]
    fn server_turns_a_bulk_hello_into_a_sink_and_counts_the_rest_as_payload() {
        with_ctx(|ctx| {
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Server)), KindState::Detect(accept::Detect { buf: vec![], seq: 0 }));
            let mut b = wire::Hello { flow: 9, conn: 2, kind: wire::HelloKind::Bulk }.encode();
            b.extend_from_slice(&[0u8; 100]);
            c.on_data(&b[..10], ctx);
            assert!(matches!(c.state, KindState::Detect(_)));
            c.on_data(&b[10..], ctx);
            assert!(matches!(c.state, KindState::Sink));
            assert_eq!((c.conn.log.flow, c.conn.log.conn, c.conn.log.side, c.conn.rcvd), (9, 2, Some(Side::Recv), 100));
            c.on_eof(ctx);
            assert!(c.conn.finish_when_sent && c.conn.peer_eof);
        });
    }

    #[test]
    fn rr_server_answers_each_complete_request() {
        with_ctx(|ctx| {
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Server)), KindState::RrServer(rr::RrServer::new(100, 1000)));
            c.on_data(&[0u8; 150], ctx);
            assert_eq!(c.conn.budget, 1000);
            c.on_data(&[0u8; 250], ctx);
            assert_eq!(c.conn.budget, 4000); // 400 bytes = 4 requests
        });
    }

    #[test]
    fn rr_client_records_latency_and_asks_again() {
        let recs = with_ctx(|ctx| {
            let r = rr::RrClient {
                request_bytes: 10,
                response_bytes: 50,
                left: Some(2),
                gap_ns: 0,
                sent_ns: 0,
                got: 0,
                stopped: false,
            };
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Client)), KindState::RrClient(r));
            c.on_connected(ctx);
            assert_eq!(c.conn.budget, 10);
            assert_eq!(c.conn.pre.len(), wire::HELLO_RR_LEN);
            c.conn.budget = 0; // as if sent
            ctx.now = 5_000;
            c.on_data(&[0u8; 50], ctx);
            assert_eq!(c.conn.budget, 10, "second request");
            c.conn.budget = 0;
            c.on_data(&[0u8; 50], ctx);
            assert_eq!(c.conn.budget, 0, "count reached");
            assert!(c.conn.finish_when_sent);
        });
        assert_eq!(recs, 2);
    }

    #[test]
    fn download_client_completes_on_the_last_body_byte_and_rejects_short_bodies() {
        with_ctx(|ctx| {
            let g = download::HttpGet { size: 10, host: "h".into(), head: vec![], body_len: None };
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Client)), KindState::HttpGet(g));
            c.on_connected(ctx);
            assert!(c.conn.pre.starts_with(b"GET /bytes/10?flow=5&conn=1 HTTP/1.1\r\n"));
            let mut resp = wire::format_http_ok(10);
            resp.extend_from_slice(&[1u8; 4]);
            c.on_data(&resp, ctx);
            assert_eq!(c.conn.rcvd, 4);
            assert!(!c.conn.closing);
            c.on_data(&[1u8; 6], ctx);
            assert!(c.conn.closing && c.conn.log.error.is_none());

            let g = download::HttpGet { size: 10, host: "h".into(), head: vec![], body_len: None };
            let mut c = FlowConn::new(Conn::new(no_socket(), 2, log(Role::Client)), KindState::HttpGet(g));
            c.on_data(&wire::format_http_ok(10), ctx);
            c.on_eof(ctx);
            assert!(c.conn.log.error.as_deref().unwrap().contains("0 of 10"));
        });
    }

    #[test]
    fn http_server_answers_curl_and_404s_other_paths() {
        with_ctx(|ctx| {
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Server)), KindState::Detect(accept::Detect { buf: vec![], seq: 7 }));
            c.on_data(b"GET /bytes/500 HTTP/1.1\r\nHost: x\r\n\r\n", ctx);
            assert!(matches!(c.state, KindState::HttpServe));
            assert_eq!((c.conn.budget, c.conn.log.flow, c.conn.log.conn), (500, wire::FLOW_UNKNOWN, 7));
            assert!(c.conn.pre.starts_with(b"HTTP/1.1 200 OK"));
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Server)), KindState::Detect(accept::Detect { buf: vec![], seq: 0 }));
            c.on_data(b"GET /x HTTP/1.1\r\n\r\n", ctx);
            assert!(c.conn.pre.starts_with(b"HTTP/1.1 404"));
            assert_eq!(c.conn.budget, 0);
        });
    }

    #[test]
    fn paced_writes_one_chunk_per_gap_and_stops_at_its_byte_limit() {
        with_ctx(|ctx| {
            let p = paced::Paced {
                gaps: crate::rng::GapSource::new(1_000, crate::config::GapDist::Const, 1),
                write_bytes: 100,
                left: Some(250),
                next_ns: 0,
                stopped: false,
            };
            let mut c = FlowConn::new(Conn::new(no_socket(), 1, log(Role::Client)), KindState::Paced(p));
            c.on_connected(ctx);
            assert_eq!(c.conn.budget, 100);
            assert_eq!(ctx.timers.next_deadline(), Some(2_000));
            c.on_timer(ctx);
            c.on_timer(ctx);
            assert_eq!(c.conn.budget, 250);
            assert!(c.conn.finish_when_sent);
        });
    }
}
