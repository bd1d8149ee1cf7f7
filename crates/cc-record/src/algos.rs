//! Contract: which kernel function implements each congestion-control op of a Linux
//! algorithm (read from its module's `struct tcp_congestion_ops`, Linux 6.12; only the
//! rows of reno, scalable and bic have recorded traces yet), so the
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
    ("cubic", &[
        ("ssthresh", "cubictcp_recalc_ssthresh"), ("cong_avoid", "cubictcp_cong_avoid"),
        ("undo_cwnd", "tcp_reno_undo_cwnd"), ("pkts_acked", "cubictcp_acked"), ("cwnd_event", "cubictcp_cwnd_event"),
    ]),
    ("dctcp", &[
        ("ssthresh", "dctcp_ssthresh"), ("cong_avoid", "tcp_reno_cong_avoid"), ("undo_cwnd", "dctcp_cwnd_undo"),
        ("in_ack_event", "dctcp_update_alpha"), ("cwnd_event", "dctcp_cwnd_event"),
    ]),
    ("highspeed", &[("ssthresh", "hstcp_ssthresh"), ("cong_avoid", "hstcp_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd")]),
    ("hybla", &[("ssthresh", "tcp_reno_ssthresh"), ("cong_avoid", "hybla_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd")]),
    ("vegas", &[
        ("ssthresh", "tcp_reno_ssthresh"), ("cong_avoid", "tcp_vegas_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd"),
        ("pkts_acked", "tcp_vegas_pkts_acked"), ("cwnd_event", "tcp_vegas_cwnd_event"),
    ]),
    ("htcp", &[
        ("ssthresh", "htcp_recalc_ssthresh"), ("cong_avoid", "htcp_cong_avoid"), ("undo_cwnd", "htcp_cwnd_undo"),
        ("pkts_acked", "measure_achieved_throughput"),
    ]),
    ("illinois", &[
        ("ssthresh", "tcp_illinois_ssthresh"), ("cong_avoid", "tcp_illinois_cong_avoid"),
        ("undo_cwnd", "tcp_reno_undo_cwnd"), ("pkts_acked", "tcp_illinois_acked"),
    ]),
    ("westwood", &[
        ("ssthresh", "tcp_reno_ssthresh"), ("cong_avoid", "tcp_reno_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd"),
        ("cwnd_event", "tcp_westwood_event"), ("in_ack_event", "tcp_westwood_ack"), ("pkts_acked", "tcp_westwood_pkts_acked"),
    ]),
    ("veno", &[
        ("ssthresh", "tcp_veno_ssthresh"), ("cong_avoid", "tcp_veno_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd"),
        ("pkts_acked", "tcp_veno_pkts_acked"), ("cwnd_event", "tcp_veno_cwnd_event"),
    ]),
    ("yeah", &[
        ("ssthresh", "tcp_yeah_ssthresh"), ("cong_avoid", "tcp_yeah_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd"),
        ("pkts_acked", "tcp_vegas_pkts_acked"), ("cwnd_event", "tcp_vegas_cwnd_event"),
    ]),
    ("lp", &[
        ("ssthresh", "tcp_reno_ssthresh"), ("cong_avoid", "tcp_lp_cong_avoid"), ("undo_cwnd", "tcp_reno_undo_cwnd"),
        ("pkts_acked", "tcp_lp_pkts_acked"),
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
