//! Contract: which kernel function implements each congestion-control op of a Linux
//! algorithm (read from its module's `struct tcp_congestion_ops`, Linux 6.12), so the
//! recorder can attach its generic op programs to them. `init` and `set_state` need no
//! row: the recorder hooks the kernel's own callers (tcp_init_congestion_control,
//! tcp_set_ca_state). An algorithm not listed here is recorded with `--op OP=FUNCTION`.

/// The op programs of ccrecord.bpf.c (op_<name>_in / op_<name>_out).
pub const OPS: &[&str] = &["ssthresh", "cong_avoid", "undo_cwnd", "pkts_acked", "cwnd_event", "in_ack_event"];

/// algorithm -> [(op, function)]
pub const TABLE: &[(&str, &[(&str, &str)])] = &[
    ("reno", &[("ssthresh", "tcp_reno_ssthresh"), ("cong_avoid", "tcp_reno_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd")]),
    ("scalable", &[("ssthresh", "tcp_scalable_ssthresh"), ("cong_avoid", "tcp_scalable_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd")]),
    ("bic", &[
        ("ssthresh", "bictcp_recalc_ssthresh"), ("cong_avoid", "bictcp_cong_avoid"),
        ("undo_cwnd", "tcp_reno_undo_cwnd"), ("pkts_acked", "bictcp_acked"),
    ]),
];

/// The op table of `algo` with `extra` (op, function) pairs added or replacing rows.
pub fn ops_for(algo: &str, extra: &[(String, String)]) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = TABLE
        .iter()
        .find(|(a, _)| *a == algo)
        .map(|(_, rows)| rows.iter().map(|(o, f)| (o.to_string(), f.to_string())).collect())
        .unwrap_or_default();
    for (op, f) in extra {
        if !OPS.contains(&op.as_str()) {
            return Err(format!("--op {op}={f}: unknown op (have {})", OPS.join(", ")));
        }
        out.retain(|(o, _)| o != op);
        out.push((op.clone(), f.clone()));
    }
    if out.is_empty() {
        return Err(format!("no op table for {algo:?}: give its functions with --op OP=FUNCTION"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_known_op() {
        for (algo, rows) in TABLE {
            for (op, _) in *rows {
                assert!(OPS.contains(op), "{algo}: {op}");
            }
        }
    }

    #[test]
    fn extra_ops_replace_or_add_and_unknown_ones_are_refused() {
        let t = ops_for("reno", &[("ssthresh".into(), "x".into())]).unwrap();
        assert!(t.contains(&("ssthresh".into(), "x".into())));
        assert_eq!(t.len(), 3);
        assert!(ops_for("reno", &[("bogus".into(), "x".into())]).is_err());
        assert!(ops_for("nosuch", &[]).is_err());
        assert_eq!(ops_for("nosuch", &[("ssthresh".into(), "f".into())]).unwrap().len(), 1);
    }
}
