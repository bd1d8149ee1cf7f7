//! Contract: the `tcpprobe.bin` record of docs/dev/contracts.md §6 and its sidecar.
//! The record is produced by the kernel side (struct tcpprobe_rec in
//! bpf/probe/tcpprobe.h, 64 bytes, packed little-endian) and written unchanged; this
//! table describes it for `tcpprobe.bin.schema.json` and the tests check that the
//! table's offsets are those of the C struct (which static-asserts its size).

/// (name, type, count)
pub type Field = (&'static str, &'static str, usize);

pub const RECORD_SIZE: usize = 64;

pub const FIELDS: &[Field] = &[
    ("t_ns", "u64", 1),
    ("netns", "u32", 1),
    ("saddr", "u32", 1),
    ("daddr", "u32", 1),
    ("sport", "u16", 1),
    ("dport", "u16", 1),
    ("snd_cwnd", "u32", 1),
    ("ssthresh", "u32", 1),
    ("snd_wnd", "u32", 1),
    ("rcv_wnd", "u32", 1),
    ("srtt_us", "u32", 1),
    ("snd_nxt", "u32", 1),
    ("snd_una", "u32", 1),
    ("data_len", "u32", 1),
    ("mark", "u32", 1),
    ("ca_state", "u8", 1),
    ("_pad", "u8", 3),
];

fn type_size(t: &str) -> usize {
    match t {
        "u8" => 1,
        "u16" => 2,
        "u32" => 4,
        "u64" => 8,
        other => panic!("unknown field type {other}"),
    }
}

pub fn record_size(fields: &[Field]) -> usize {
    fields.iter().map(|(_, t, n)| type_size(t) * n).sum()
}

pub fn offset(name: &str) -> Option<usize> {
    let mut at = 0;
    for (n, t, c) in FIELDS {
        if *n == name {
            return Some(at);
        }
        at += type_size(t) * c;
    }
    None
}

pub fn schema_json() -> String {
    let fs: Vec<serde_json::Value> = FIELDS
        .iter()
        .map(|(name, t, n)| if *n == 1 { serde_json::json!([name, t]) } else { serde_json::json!([name, t, n]) })
        .collect();
    serde_json::json!({
        "version": 1,
        "record": "tcpprobe",
        "record_size": record_size(FIELDS),
        "byte_order": "little",
        "fields": fs,
    })
    .to_string()
}

/// A few fields of one record (for checks and tests; the writer never decodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek {
    pub t_ns: u64,
    pub netns: u32,
    pub snd_cwnd: u32,
}

pub fn peek(rec: &[u8]) -> Option<Peek> {
    if rec.len() < RECORD_SIZE {
        return None;
    }
    let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().unwrap());
    Some(Peek {
        t_ns: u64::from_le_bytes(rec[0..8].try_into().unwrap()),
        netns: u32_at(8),
        snd_cwnd: u32_at(offset("snd_cwnd").unwrap()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_64_bytes_like_the_c_struct() {
        assert_eq!(record_size(FIELDS), RECORD_SIZE);
    }

    #[test]
    fn offsets_match_struct_tcpprobe_rec() {
        // Offsets of struct tcpprobe_rec (bpf/probe/tcpprobe.h), naturally aligned.
        let want = [
            ("t_ns", 0),
            ("netns", 8),
            ("saddr", 12),
            ("daddr", 16),
            ("sport", 20),
            ("dport", 22),
            ("snd_cwnd", 24),
            ("ssthresh", 28),
            ("snd_wnd", 32),
            ("rcv_wnd", 36),
            ("srtt_us", 40),
            ("snd_nxt", 44),
            ("snd_una", 48),
            ("data_len", 52),
            ("mark", 56),
            ("ca_state", 60),
            ("_pad", 61),
        ];
        for (n, o) in want {
            assert_eq!(offset(n), Some(o), "{n}");
        }
        // every field naturally aligned, so the C struct has no hidden padding
        for (n, t, _) in FIELDS {
            assert_eq!(offset(n).unwrap() % type_size(t), 0, "{n}");
        }
    }

    #[test]
    fn schema_lists_fields_in_order() {
        let s: serde_json::Value = serde_json::from_str(&schema_json()).unwrap();
        assert_eq!(s["record"], "tcpprobe");
        assert_eq!(s["record_size"], 64);
        assert_eq!(s["fields"][0], serde_json::json!(["t_ns", "u64"]));
        assert_eq!(s["fields"][16], serde_json::json!(["_pad", "u8", 3]));
    }

    #[test]
    fn peek_reads_little_endian() {
        let mut r = [0u8; 64];
        r[0..8].copy_from_slice(&7u64.to_le_bytes());
        r[8..12].copy_from_slice(&4026531840u32.to_le_bytes());
        r[24..28].copy_from_slice(&10u32.to_le_bytes());
        assert_eq!(peek(&r), Some(Peek { t_ns: 7, netns: 4026531840, snd_cwnd: 10 }));
        assert_eq!(peek(&r[..10]), None);
    }
}
