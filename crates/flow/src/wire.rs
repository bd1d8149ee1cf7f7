//! Contract: the bytes a client sends first, and how a listener tells them apart.
//! Pure functions, no I/O (docs/dev/contracts.md §2 "Wire protocol"):
//! - hello: `b"CCAF"`, u32 flow, u32 conn, u32 kind (0 bulk, 1 paced, 2 rr), little
//!   endian; for rr two more u32 (request_bytes, response_bytes) → 24 bytes.
//! - download: HTTP/1.1 `GET /bytes/<size>[?flow=<f>&conn=<c>]`; the answer is
//!   `200 OK` with `Content-Length: <size>` and `Connection: close`.
//!
//! `classify` looks at the first bytes a listener received and says which of the two it
//! is, or that it needs more bytes, or that the peer speaks neither.

pub const MAGIC: &[u8; 4] = b"CCAF";
pub const HELLO_LEN: usize = 16;
pub const HELLO_RR_LEN: usize = 24;
/// Longest HTTP head (request or response) we accept before calling it garbage.
pub const MAX_HTTP_HEAD: usize = 16 * 1024;
/// flow id given to downloads that carry no `?flow=` (curl, wget).
pub const FLOW_UNKNOWN: u32 = 0xFFFF_FFFF;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelloKind {
    Bulk,
    Paced,
    Rr { request_bytes: u32, response_bytes: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub flow: u32,
    pub conn: u32,
    pub kind: HelloKind,
}

impl Hello {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HELLO_RR_LEN);
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&self.flow.to_le_bytes());
        v.extend_from_slice(&self.conn.to_le_bytes());
        let code: u32 = match self.kind {
            HelloKind::Bulk => 0,
            HelloKind::Paced => 1,
            HelloKind::Rr { .. } => 2,
        };
        v.extend_from_slice(&code.to_le_bytes());
        if let HelloKind::Rr { request_bytes, response_bytes } = self.kind {
            v.extend_from_slice(&request_bytes.to_le_bytes());
            v.extend_from_slice(&response_bytes.to_le_bytes());
        }
        v
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// Parsed `/bytes/<size>`; None for any other path.
    pub size: Option<u64>,
    pub flow: u32,
    pub conn: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum First {
    /// Not enough bytes yet to decide.
    NeedMore,
    /// A ccarena hello; `consumed` bytes belong to it, the rest is payload.
    Hello { hello: Hello, consumed: usize },
    /// An HTTP request head of `consumed` bytes.
    Http { req: HttpRequest, consumed: usize },
    /// Neither: the reason, for the connection's error field.
    Invalid(String),
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

pub fn classify(buf: &[u8]) -> First {
    let n = buf.len().min(4);
    if buf[..n] == MAGIC[..n] {
        if buf.len() < HELLO_LEN {
            return First::NeedMore;
        }
        let flow = u32_at(buf, 4);
        let conn = u32_at(buf, 8);
        return match u32_at(buf, 12) {
            0 => First::Hello { hello: Hello { flow, conn, kind: HelloKind::Bulk }, consumed: HELLO_LEN },
            1 => First::Hello { hello: Hello { flow, conn, kind: HelloKind::Paced }, consumed: HELLO_LEN },
            2 => {
                if buf.len() < HELLO_RR_LEN {
                    return First::NeedMore;
                }
                let kind = HelloKind::Rr { request_bytes: u32_at(buf, 16), response_bytes: u32_at(buf, 20) };
                First::Hello { hello: Hello { flow, conn, kind }, consumed: HELLO_RR_LEN }
            }
            k => First::Invalid(format!("hello with unknown kind {k}")),
        };
    }
    // Anything else must look like an HTTP request line: an upper-case token then a space.
    let tok = buf.iter().take_while(|b| b.is_ascii_uppercase()).count();
    if tok == buf.len() && tok < 16 {
        return First::NeedMore;
    }
    if tok == 0 || tok >= 16 || buf[tok] != b' ' {
        return First::Invalid("neither a CCAF hello nor an HTTP request".into());
    }
    match find_head_end(buf) {
        None if buf.len() > MAX_HTTP_HEAD => First::Invalid(format!("HTTP head longer than {MAX_HTTP_HEAD} bytes")),
        None => First::NeedMore,
        Some(end) => match parse_http_request(&buf[..end]) {
            Ok(req) => First::Http { req, consumed: end },
            Err(e) => First::Invalid(e),
        },
    }
}

/// Offset just past the blank line that ends an HTTP head (`\r\n\r\n`, or bare `\n\n`).
pub fn find_head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i] == b'\n' {
            if buf[i + 1..].starts_with(b"\r\n") {
                return Some(i + 3);
            }
            if buf[i + 1..].starts_with(b"\n") {
                return Some(i + 2);
            }
        }
        i += 1;
    }
    None
}

/// Parse a complete request head (up to and including the blank line).
pub fn parse_http_request(head: &[u8]) -> Result<HttpRequest, String> {
    let text = std::str::from_utf8(head).map_err(|_| "HTTP head is not UTF-8".to_string())?;
    let line = text.lines().next().unwrap_or("");
    let mut parts = line.split_whitespace();
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => (m, t, v),
        _ => return Err(format!("malformed request line {line:?}")),
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported version {version:?}"));
    }
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let size = path.strip_prefix("/bytes/").and_then(|s| s.parse::<u64>().ok());
    let mut flow = FLOW_UNKNOWN;
    let mut conn = None;
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "flow" => flow = v.parse().map_err(|_| format!("bad flow in query {v:?}"))?,
            "conn" => conn = Some(v.parse().map_err(|_| format!("bad conn in query {v:?}"))?),
            _ => {}
        }
    }
    Ok(HttpRequest { method: method.to_string(), path: path.to_string(), size, flow, conn })
}

pub fn format_http_request(size: u64, flow: u32, conn: u32, host: &str) -> Vec<u8> {
    format!(
        "GET /bytes/{size}?flow={flow}&conn={conn} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: ccarena-flow\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

pub fn format_http_ok(content_length: u64) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nServer: ccarena-flow\r\nContent-Type: application/octet-stream\r\nContent-Length: {content_length}\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

pub fn format_http_error(status: u16, reason: &str) -> Vec<u8> {
    let body = format!("{status} {reason}\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\nServer: ccarena-flow\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseHead {
    NeedMore,
    Done { status: u16, content_length: Option<u64>, consumed: usize },
    Invalid(String),
}

pub fn parse_http_response_head(buf: &[u8]) -> ResponseHead {
    let end = match find_head_end(buf) {
        Some(e) => e,
        None if buf.len() > MAX_HTTP_HEAD => return ResponseHead::Invalid("HTTP response head too long".into()),
        None => return ResponseHead::NeedMore,
    };
    let text = match std::str::from_utf8(&buf[..end]) {
        Ok(t) => t,
        Err(_) => return ResponseHead::Invalid("HTTP response head is not UTF-8".into()),
    };
    let mut lines = text.lines();
    let status_line = lines.next().unwrap_or("");
    let mut sp = status_line.split_whitespace();
    let status = match (sp.next(), sp.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => match code.parse::<u16>() {
            Ok(c) => c,
            Err(_) => return ResponseHead::Invalid(format!("bad status line {status_line:?}")),
        },
        _ => return ResponseHead::Invalid(format!("bad status line {status_line:?}")),
    };
    let mut content_length = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                match v.trim().parse::<u64>() {
                    Ok(n) => content_length = Some(n),
                    Err(_) => return ResponseHead::Invalid(format!("bad Content-Length {:?}", v.trim())),
                }
            }
        }
    }
    ResponseHead::Done { status, content_length, consumed: end }
}

/// The start command on stdin: `GO <t0_ns>` (CLOCK_MONOTONIC ns). A bare `GO` means
/// "now" (handy by hand). Returns None for anything else.
pub fn parse_go(line: &str) -> Option<Option<u64>> {
    let mut it = line.split_whitespace();
    if it.next()? != "GO" {
        return None;
    }
    match (it.next(), it.next()) {
        (None, _) => Some(None),
        (Some(t), None) => t.parse::<u64>().ok().map(Some),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_line_parses() {
        assert_eq!(parse_go("GO 123456789\n"), Some(Some(123456789)));
        assert_eq!(parse_go("GO"), Some(None));
        assert_eq!(parse_go("GO x"), None);
        assert_eq!(parse_go("GO 1 2"), None);
        assert_eq!(parse_go("STOP"), None);
    }

    #[test]
    fn hello_roundtrips_and_payload_follows() {
        let h = Hello { flow: 7, conn: 3, kind: HelloKind::Bulk };
        let mut b = h.encode();
        assert_eq!(b.len(), HELLO_LEN);
        assert_eq!(&b[..4], b"CCAF");
        assert_eq!(&b[4..8], &[7, 0, 0, 0]);
        b.extend_from_slice(b"payload");
        assert_eq!(classify(&b), First::Hello { hello: h, consumed: 16 });
        let p = Hello { flow: 1, conn: 0, kind: HelloKind::Paced };
        assert_eq!(classify(&p.encode()), First::Hello { hello: p, consumed: 16 });
    }

    #[test]
    fn rr_hello_is_24_bytes_and_carries_sizes() {
        let h = Hello { flow: 4, conn: 1, kind: HelloKind::Rr { request_bytes: 100, response_bytes: 1000 } };
        let b = h.encode();
        assert_eq!(b.len(), HELLO_RR_LEN);
        assert_eq!(classify(&b[..20]), First::NeedMore);
        assert_eq!(classify(&b), First::Hello { hello: h, consumed: 24 });
    }

    #[test]
    fn partial_hello_needs_more_and_bad_kind_is_invalid() {
        let b = Hello { flow: 1, conn: 2, kind: HelloKind::Bulk }.encode();
        for n in 1..16 {
            assert_eq!(classify(&b[..n]), First::NeedMore, "at {n} bytes");
        }
        let mut bad = b.clone();
        bad[12] = 9;
        assert!(matches!(classify(&bad), First::Invalid(_)));
        assert!(matches!(classify(b"\x00\x01garbage"), First::Invalid(_)));
    }

    #[test]
    fn curl_request_parses_with_unknown_flow() {
        let req = b"GET /bytes/178176 HTTP/1.1\r\nHost: 10.1.1.2:5000\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n";
        for n in 1..req.len() {
            assert_eq!(classify(&req[..n]), First::NeedMore, "at {n} bytes");
        }
        match classify(req) {
            First::Http { req: r, consumed } => {
                assert_eq!(consumed, req.len());
                assert_eq!(r.method, "GET");
                assert_eq!(r.size, Some(178176));
                assert_eq!(r.flow, FLOW_UNKNOWN);
                assert_eq!(r.conn, None);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn own_request_carries_flow_and_conn() {
        let req = format_http_request(1000, 2, 4, "10.1.1.2:5000");
        let r = parse_http_request(&req).unwrap();
        assert_eq!((r.size, r.flow, r.conn), (Some(1000), 2, Some(4)));
        assert_eq!(r.path, "/bytes/1000");
    }

    #[test]
    fn other_paths_and_bad_lines() {
        let r = parse_http_request(b"GET /index.html HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(r.size, None);
        assert!(parse_http_request(b"GET /bytes/1 SPDY/3\r\n\r\n").is_err());
        assert!(parse_http_request(b"GET\r\n\r\n").is_err());
        assert!(parse_http_request(b"GET /bytes/1?flow=x HTTP/1.1\r\n\r\n").is_err());
        // wget sends a bare LF head in some configurations; accept it.
        assert!(matches!(classify(b"GET /bytes/5 HTTP/1.1\nHost: x\n\n"), First::Http { .. }));
    }

    #[test]
    fn response_head_gives_status_and_length() {
        let mut b = format_http_ok(178176);
        let head_len = b.len();
        b.extend_from_slice(&[0u8; 10]);
        assert_eq!(
            parse_http_response_head(&b),
            ResponseHead::Done { status: 200, content_length: Some(178176), consumed: head_len }
        );
        assert_eq!(parse_http_response_head(&b[..head_len - 1]), ResponseHead::NeedMore);
        match parse_http_response_head(&format_http_error(404, "Not Found")) {
            ResponseHead::Done { status, content_length, .. } => {
                assert_eq!(status, 404);
                assert_eq!(content_length, Some(14));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse_http_response_head(b"SSH-2.0\r\n\r\n"), ResponseHead::Invalid(_)));
    }
}
