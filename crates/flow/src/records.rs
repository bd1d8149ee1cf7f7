//! Contract: the binary record files of docs/dev/contracts.md §2 and their sidecars.
//! Each record kind has one field table (`*_FIELDS`), from which both the encoder's
//! layout and `<file>.schema.json` follow; a unit test checks that the encoded size is
//! the sum of the field sizes, so writer and schema cannot drift apart.
//! Records are little-endian, packed, fixed size; `RecordFile` appends whole records
//! through a `BufWriter` and is flushed at exit (a reader ignores a trailing partial
//! record). Padding fields written as arrays are described as `["_pad","u8",3]`
//! (name, type, count) in the schema; every other field is `[name, type]`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub const SCHEMA_VERSION: u32 = 1;

/// (name, type, count)
pub type Field = (&'static str, &'static str, usize);

pub const TCPINFO_FIELDS: &[Field] = &[
    ("t_ns", "u64", 1),
    ("flow", "u32", 1),
    ("conn", "u32", 1),
    ("cwnd", "u32", 1),
    ("ssthresh", "u32", 1),
    ("srtt_us", "u32", 1),
    ("rttvar_us", "u32", 1),
    ("min_rtt_us", "u32", 1),
    ("mss", "u32", 1),
    ("total_retrans", "u32", 1),
    ("lost", "u32", 1),
    ("unacked", "u32", 1),
    ("sacked", "u32", 1),
    ("ca_state", "u8", 1),
    ("_pad", "u8", 3),
    ("snd_wnd", "u32", 1),
    ("rcv_wnd", "u32", 1),
    ("delivery_rate", "u64", 1),
    ("pacing_rate", "u64", 1),
    ("bytes_acked", "u64", 1),
    ("bytes_sent", "u64", 1),
    ("bytes_retrans", "u64", 1),
    ("busy_us", "u64", 1),
    ("rwnd_limited_us", "u64", 1),
    ("sndbuf_limited_us", "u64", 1),
    ("delivered", "u32", 1),
    ("delivered_ce", "u32", 1),
    ("notsent_bytes", "u32", 1),
    ("retrans", "u32", 1),
    ("sndbuf", "u32", 1),
    ("wmem_queued", "u32", 1),
];

pub const RX_FIELDS: &[Field] = &[("t_ns", "u64", 1), ("flow", "u32", 1), ("conn", "u32", 1), ("bytes", "u64", 1)];

pub const RR_FIELDS: &[Field] =
    &[("t_ns", "u64", 1), ("flow", "u32", 1), ("conn", "u32", 1), ("latency_ns", "u64", 1)];

/// One UDP probe datagram: send time, and its RTT (`u64::MAX` = no echo before the end).
pub const UDP_FIELDS: &[Field] =
    &[("t_ns", "u64", 1), ("flow", "u32", 1), ("seq", "u32", 1), ("rtt_ns", "u64", 1)];

pub fn type_size(t: &str) -> usize {
    match t {
        "u8" => 1,
        "u16" => 2,
        "u32" | "i32" => 4,
        "u64" | "i64" | "f64" => 8,
        other => panic!("unknown field type {other}"),
    }
}

pub fn record_size(fields: &[Field]) -> usize {
    fields.iter().map(|(_, t, n)| type_size(t) * n).sum()
}

pub fn schema_json(record: &str, fields: &[Field]) -> String {
    let fs: Vec<serde_json::Value> = fields
        .iter()
        .map(|(name, t, n)| {
            if *n == 1 {
                serde_json::json!([name, t])
            } else {
                serde_json::json!([name, t, n])
            }
        })
        .collect();
    serde_json::json!({
        "version": SCHEMA_VERSION,
        "record": record,
        "record_size": record_size(fields),
        "byte_order": "little",
        "fields": fs,
    })
    .to_string()
}

/// One TCP_INFO sample of one socket, already reduced to the contract's fields.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpInfoRec {
    pub t_ns: u64,
    pub flow: u32,
    pub conn: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub mss: u32,
    pub total_retrans: u32,
    pub lost: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub ca_state: u8,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub delivery_rate: u64,
    pub pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub notsent_bytes: u32,
    /// Segments retransmitted and not yet acknowledged (`tcpi_retrans`, `retrans_out`).
    pub retrans: u32,
    /// The socket's send buffer, bytes (`sk_sndbuf`: SO_MEMINFO; autotuned up to
    /// tcp_wmem[2]); 0 when the kernel could not say.
    pub sndbuf: u32,
    /// Memory charged to the send queue, bytes (`sk_wmem_queued`: unacknowledged and
    /// unsent data with its buffers' overhead); a writer is held back when it reaches
    /// `sndbuf`.
    pub wmem_queued: u32,
}

pub const TCPINFO_SIZE: usize = 156;
pub const RX_SIZE: usize = 24;
pub const RR_SIZE: usize = 24;
pub const UDP_SIZE: usize = 24;

/// Little writer over a fixed array: appends fields in order.
struct Put<'a, const N: usize> {
    b: &'a mut [u8; N],
    at: usize,
}

impl<const N: usize> Put<'_, N> {
    fn bytes(&mut self, v: &[u8]) {
        self.b[self.at..self.at + v.len()].copy_from_slice(v);
        self.at += v.len();
    }
    fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

impl TcpInfoRec {
    pub fn encode(&self) -> [u8; TCPINFO_SIZE] {
        let mut b = [0u8; TCPINFO_SIZE];
        let mut p = Put { b: &mut b, at: 0 };
        p.u64(self.t_ns);
        p.u32(self.flow);
        p.u32(self.conn);
        p.u32(self.cwnd);
        p.u32(self.ssthresh);
        p.u32(self.srtt_us);
        p.u32(self.rttvar_us);
        p.u32(self.min_rtt_us);
        p.u32(self.mss);
        p.u32(self.total_retrans);
        p.u32(self.lost);
        p.u32(self.unacked);
        p.u32(self.sacked);
        p.u8(self.ca_state);
        p.bytes(&[0, 0, 0]);
        p.u32(self.snd_wnd);
        p.u32(self.rcv_wnd);
        p.u64(self.delivery_rate);
        p.u64(self.pacing_rate);
        p.u64(self.bytes_acked);
        p.u64(self.bytes_sent);
        p.u64(self.bytes_retrans);
        p.u64(self.busy_us);
        p.u64(self.rwnd_limited_us);
        p.u64(self.sndbuf_limited_us);
        p.u32(self.delivered);
        p.u32(self.delivered_ce);
        p.u32(self.notsent_bytes);
        p.u32(self.retrans);
        p.u32(self.sndbuf);
        p.u32(self.wmem_queued);
        debug_assert_eq!(p.at, TCPINFO_SIZE);
        b
    }
}

pub fn encode_rx(t_ns: u64, flow: u32, conn: u32, bytes: u64) -> [u8; RX_SIZE] {
    let mut b = [0u8; RX_SIZE];
    let mut p = Put { b: &mut b, at: 0 };
    p.u64(t_ns);
    p.u32(flow);
    p.u32(conn);
    p.u64(bytes);
    b
}

pub fn encode_rr(t_ns: u64, flow: u32, conn: u32, latency_ns: u64) -> [u8; RR_SIZE] {
    let mut b = [0u8; RR_SIZE];
    let mut p = Put { b: &mut b, at: 0 };
    p.u64(t_ns);
    p.u32(flow);
    p.u32(conn);
    p.u64(latency_ns);
    b
}

pub fn encode_udp(t_ns: u64, flow: u32, seq: u32, rtt_ns: u64) -> [u8; UDP_SIZE] {
    let mut b = [0u8; UDP_SIZE];
    let mut p = Put { b: &mut b, at: 0 };
    p.u64(t_ns);
    p.u32(flow);
    p.u32(seq);
    p.u64(rtt_ns);
    b
}

/// An output file of fixed-size records plus its `.schema.json` sidecar.
pub struct RecordFile {
    out: BufWriter<File>,
    pub records: u64,
}

impl RecordFile {
    pub fn create(dir: &Path, name: &str, record: &str, fields: &[Field]) -> std::io::Result<RecordFile> {
        let path = dir.join(name);
        std::fs::write(dir.join(format!("{name}.schema.json")), schema_json(record, fields) + "\n")?;
        let f = File::create(&path)?;
        Ok(RecordFile { out: BufWriter::with_capacity(256 * 1024, f), records: 0 })
    }

    pub fn append(&mut self, rec: &[u8]) -> std::io::Result<()> {
        self.records += 1;
        self.out.write_all(rec)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes_match_their_schemas() {
        assert_eq!(record_size(TCPINFO_FIELDS), TCPINFO_SIZE);
        assert_eq!(record_size(RX_FIELDS), RX_SIZE);
        assert_eq!(record_size(RR_FIELDS), RR_SIZE);
        assert_eq!(record_size(UDP_FIELDS), UDP_SIZE);
        assert_eq!(TcpInfoRec::default().encode().len(), TCPINFO_SIZE);
    }

    /// Offset of a field from the schema table.
    fn offset(fields: &[Field], name: &str) -> usize {
        let mut at = 0;
        for (n, t, c) in fields {
            if *n == name {
                return at;
            }
            at += type_size(t) * c;
        }
        panic!("no field {name}");
    }

    fn o_end(fields: &[Field]) -> usize {
        offset(fields, "wmem_queued") + 4
    }

    #[test]
    fn every_field_lands_at_its_schema_offset() {
        let r = TcpInfoRec {
            t_ns: 0x0102030405060708,
            flow: 11,
            conn: 12,
            cwnd: 13,
            ssthresh: 14,
            srtt_us: 15,
            rttvar_us: 16,
            min_rtt_us: 17,
            mss: 18,
            total_retrans: 19,
            lost: 20,
            unacked: 21,
            sacked: 22,
            ca_state: 23,
            snd_wnd: 24,
            rcv_wnd: 25,
            delivery_rate: 26,
            pacing_rate: 27,
            bytes_acked: 28,
            bytes_sent: 29,
            bytes_retrans: 30,
            busy_us: 31,
            rwnd_limited_us: 32,
            sndbuf_limited_us: 33,
            delivered: 34,
            delivered_ce: 35,
            notsent_bytes: 36,
            retrans: 37,
            sndbuf: 38,
            wmem_queued: 39,
        };
        let b = r.encode();
        let u32_at = |n: &str| {
            let o = offset(TCPINFO_FIELDS, n);
            u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
        };
        let u64_at = |n: &str| {
            let o = offset(TCPINFO_FIELDS, n);
            u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
        };
        assert_eq!(u64_at("t_ns"), 0x0102030405060708);
        assert_eq!(&b[0..2], &[8, 7], "little endian");
        assert_eq!(u32_at("flow"), 11);
        assert_eq!(u32_at("sacked"), 22);
        assert_eq!(b[offset(TCPINFO_FIELDS, "ca_state")], 23);
        assert_eq!(u32_at("snd_wnd"), 24);
        assert_eq!(u32_at("rcv_wnd"), 25);
        assert_eq!(u64_at("delivery_rate"), 26);
        assert_eq!(u64_at("sndbuf_limited_us"), 33);
        assert_eq!(u32_at("delivered"), 34);
        assert_eq!(u32_at("notsent_bytes"), 36);
        assert_eq!(u32_at("retrans"), 37);
        assert_eq!(u32_at("sndbuf"), 38);
        assert_eq!(u32_at("wmem_queued"), 39);
        assert_eq!(o_end(TCPINFO_FIELDS), TCPINFO_SIZE, "wmem_queued is the last field");
        let rx = encode_rx(1, 2, 3, 4);
        assert_eq!(u64::from_le_bytes(rx[16..24].try_into().unwrap()), 4);
        let rr = encode_rr(1, 2, 3, 5);
        assert_eq!(u32::from_le_bytes(rr[12..16].try_into().unwrap()), 3);
        assert_eq!(u64::from_le_bytes(rr[16..24].try_into().unwrap()), 5);
        let u = encode_udp(1, 2, 3, u64::MAX);
        assert_eq!(u32::from_le_bytes(u[offset(UDP_FIELDS, "seq")..][..4].try_into().unwrap()), 3);
        assert_eq!(u64::from_le_bytes(u[offset(UDP_FIELDS, "rtt_ns")..][..8].try_into().unwrap()), u64::MAX);
    }

    #[test]
    fn schema_json_lists_fields_in_order_with_version() {
        let s: serde_json::Value = serde_json::from_str(&schema_json("rx", RX_FIELDS)).unwrap();
        assert_eq!(s["version"], 1);
        assert_eq!(s["record"], "rx");
        assert_eq!(s["record_size"], 24);
        assert_eq!(s["fields"][0], serde_json::json!(["t_ns", "u64"]));
        assert_eq!(s["fields"][3], serde_json::json!(["bytes", "u64"]));
        let t: serde_json::Value = serde_json::from_str(&schema_json("tcpinfo", TCPINFO_FIELDS)).unwrap();
        assert_eq!(t["fields"][14], serde_json::json!(["_pad", "u8", 3]));
        assert_eq!(t["fields"].as_array().unwrap().len(), TCPINFO_FIELDS.len());
    }
}
