//! Contract: the record bpf/record/ccrecord.h defines (struct ccr_rec, 272 bytes), read
//! by offset into [`Rec`] (no unsafe casts), and the trace text format written from it
//! (docs/dev/cc-replay.md, "The trace format"): `#` header lines, then one CSV header
//! line naming the columns, then one line per record.

/// Size of struct ccr_rec (a static assertion in ccrecord.h keeps the C side to it).
pub const RECORD_SIZE: usize = 272;
const SNAP: usize = 104;

/// enum ccr_kind, with the name the trace uses.
pub const KINDS: &[(u32, &str)] = &[
    (1, "init_in"), (2, "init_out"),
    (3, "set_state_in"), (4, "set_state_out"),
    (5, "cc_pre"), (6, "cc_post"),
    (7, "in_ack_event"),
    (8, "cwnd_reduction"),
    (9, "cwnd_restart_in"), (10, "cwnd_restart_out"),
    (11, "enter_loss_in"), (12, "enter_loss_out"),
    (13, "undo_in"), (14, "undo_out"),
    (20, "op_ssthresh_in"), (21, "op_ssthresh_out"),
    (22, "op_cong_avoid_in"), (23, "op_cong_avoid_out"),
    (24, "op_undo_cwnd_in"), (25, "op_undo_cwnd_out"),
    (26, "op_pkts_acked_in"), (27, "op_pkts_acked_out"),
    (28, "op_cwnd_event_in"), (29, "op_cwnd_event_out"),
    (30, "op_in_ack_event_in"), (31, "op_in_ack_event_out"),
];

pub fn kind_name(k: u32) -> Option<&'static str> {
    KINDS.iter().find(|(n, _)| *n == k).map(|(_, s)| *s)
}

/// struct ccr_snap's fields in order: (name, byte size). u32 fields, four u8, pad, u64s.
pub const SNAP_FIELDS: &[(&str, usize)] = &[
    ("cwnd", 4), ("ssthresh", 4), ("cwnd_cnt", 4), ("cwnd_clamp", 4),
    ("srtt_us", 4), ("mdev_us", 4), ("min_rtt_us", 4),
    ("packets_out", 4), ("sacked_out", 4), ("lost_out", 4), ("retrans_out", 4), ("max_packets_out", 4),
    ("delivered", 4), ("delivered_ce", 4), ("lost", 4),
    ("snd_una", 4), ("snd_nxt", 4), ("high_seq", 4), ("rcv_nxt", 4),
    ("prior_cwnd", 4), ("prior_ssthresh", 4), ("prr_delivered", 4), ("prr_out", 4),
    ("undo_marker", 4), ("undo_retrans", 4), ("reordering", 4),
    ("cwnd_stamp", 4), ("lsndtime", 4), ("cwnd_used", 4), ("app_limited", 4),
    ("rcv_tsval", 4), ("rcv_tsecr", 4),
    ("mss_cache", 4), ("icsk_rto", 4), ("delack_max", 4),
    ("ca_state", 1), ("is_cwnd_limited", 1), ("ecn_flags", 1), ("saw_tstamp", 1),
    ("tcp_mstamp", 8), ("pacing_rate", 8), ("max_pacing_rate", 8),
];

/// One record, decoded.
#[derive(Clone, Debug)]
pub struct Rec {
    pub t_ns: u64,
    pub jiffies: u64,
    pub sk: u64,
    pub kind: u32,
    pub arg: [i64; 8],
    pub ret: i64,
    /// the snapshot, in SNAP_FIELDS order
    pub snap: Vec<u64>,
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

/// Decode one ring-buffer record; None when it is too short.
pub fn decode(b: &[u8]) -> Option<Rec> {
    if b.len() < RECORD_SIZE {
        return None;
    }
    let mut arg = [0i64; 8];
    for (i, a) in arg.iter_mut().enumerate() {
        *a = u64_at(b, 32 + 8 * i) as i64;
    }
    let mut snap = Vec::with_capacity(SNAP_FIELDS.len());
    let mut o = SNAP;
    for &(_, size) in SNAP_FIELDS {
        if size == 8 {
            o = (o + 7) & !7;
        }
        let v = match size {
            1 => b[o] as u64,
            4 => u32::from_ne_bytes(b[o..o + 4].try_into().unwrap()) as u64,
            _ => u64_at(b, o),
        };
        snap.push(v);
        o += size;
    }
    debug_assert_eq!(o, RECORD_SIZE);
    Some(Rec {
        t_ns: u64_at(b, 0),
        jiffies: u64_at(b, 8),
        sk: u64_at(b, 16),
        kind: u32::from_ne_bytes(b[24..28].try_into().unwrap()),
        arg,
        ret: u64_at(b, 96) as i64,
        snap,
    })
}

/// The CSV column line.
pub fn columns() -> String {
    let mut c = vec!["kind", "conn", "t_ns", "jiffies", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "ret"];
    c.extend(SNAP_FIELDS.iter().map(|(n, _)| *n));
    c.join(",")
}

/// One CSV line; `conn` numbers the traced sockets in order of appearance.
pub fn line(r: &Rec, conn: usize) -> String {
    let mut s = format!("{},{},{},{}", kind_name(r.kind).unwrap_or("unknown"), conn, r.t_ns, r.jiffies);
    for a in r.arg {
        s.push_str(&format!(",{a}"));
    }
    s.push_str(&format!(",{}", r.ret));
    for v in &r.snap {
        s.push_str(&format!(",{v}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_fills_the_record_exactly() {
        let mut o = SNAP;
        for &(_, size) in SNAP_FIELDS {
            if size == 8 {
                o = (o + 7) & !7;
            }
            o += size;
        }
        assert_eq!(o, RECORD_SIZE);
    }

    #[test]
    fn a_record_decodes_field_by_field() {
        let mut b = vec![0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&7u64.to_ne_bytes());
        b[24..28].copy_from_slice(&5u32.to_ne_bytes());
        b[32..40].copy_from_slice(&(-3i64).to_ne_bytes());
        b[SNAP..SNAP + 4].copy_from_slice(&12u32.to_ne_bytes()); // cwnd
        b[SNAP + 140] = 3; // ca_state
        b[264..272].copy_from_slice(&99u64.to_ne_bytes()); // max_pacing_rate
        let r = decode(&b).unwrap();
        assert_eq!((r.t_ns, r.kind, r.arg[0]), (7, 5, -3));
        assert_eq!(r.snap[0], 12);
        let i = SNAP_FIELDS.iter().position(|(n, _)| *n == "ca_state").unwrap();
        assert_eq!(r.snap[i], 3);
        assert_eq!(*r.snap.last().unwrap(), 99);
        assert!(line(&r, 0).starts_with("cc_pre,0,7,"));
        assert_eq!(line(&r, 0).split(',').count(), columns().split(',').count());
        assert!(decode(&b[..100]).is_none());
    }
}
