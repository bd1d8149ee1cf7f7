//! Contract: replay a trace recorded from Linux's own module (crates/cc-record) through
//! one of our BPF algorithms, call by call, and report where the two differ
//! (docs/dev/cc-replay.md).
//!
//! Before each recorded call the model socket's fields are set from the record's
//! snapshot (what the kernel's socket held when it made the call); then our program's
//! op is called and what it wrote or returned is compared with what the kernel's did.
//! Only the algorithm's private state (icsk_ca_priv, and the pack's PRR state) carries
//! over from call to call, built by our own ops: a difference anywhere in it shows as a
//! difference in cwnd, ssthresh or a return value at some later call.
//!
//! The calls, by record kind:
//! - `init_in`: init; `set_state_in`: set_state, then the state is stored (as
//!   tcp_set_ca_state does); `op_ssthresh_in`, `op_undo_cwnd_in`: the op, whose return
//!   is compared at the matching `_out`; `op_pkts_acked_in`, `in_ack_event`,
//!   `op_cwnd_event_in`: the op, if our algorithm has it;
//! - `cc_pre` .. `cc_post`: the ACK's congestion update. The kernel ran tcp_cong_control
//!   (PRR in CWR and Recovery, else the module's cong_avoid when the ACK may raise the
//!   window, then the pacing rate); ours is the cong_control op of cca_cong_control.h,
//!   called with the ACK's flag and rate sample, compared at `cc_post`.
//!
//! Compared: at `cc_post`, `init_out`, `set_state_out` and (when ours has the op)
//! `op_pkts_acked_out`: cwnd, ssthresh, snd_cwnd_cnt and the pacing rate
//! (`Options::fields`); at `_out` of an op that returns: the return value.
//! Two exceptions, by design of the pack (cca_state_change in cca_cong_control.h), where
//! our set_state does at once what the kernel does around it:
//! - entering Recovery, our set_state already sets cwnd to what PRR's first step gives,
//!   where the kernel leaves it to the same ACK's tcp_cwnd_reduction: cwnd is not
//!   compared at that set_state (it is at the ACK's `cc_post`);
//! - leaving Recovery, the kernel sets cwnd = ssthresh in tcp_end_cwnd_reduction just
//!   after tcp_set_ca_state (tcp_fastretrans_alert), ours in set_state: our cwnd and
//!   ssthresh are compared with the kernel's at the next record, after its
//!   tcp_end_cwnd_reduction (and after the module's CA_EVENT_COMPLETE_CWR, when it has a
//!   cwnd_event op: the record after that op's `_out`).
//!
//! CA_EVENT_COMPLETE_CWR is the one event the kernel sends only to a module without
//! cong_control (tcp_end_cwnd_reduction returns first for one): our cwnd_event is not
//! called with it, and what the module does there is ours to do in set_state (compared
//! as above, or at the `set_state_out` of leaving CWR, which follows the event). After
//! any other event our cwnd, ssthresh, snd_cwnd_cnt and pacing rate are compared with
//! the kernel's at the op's `_out`.
use std::path::Path;

use crate::rate::RateSample;
use crate::trace::{Rec, Trace};
use crate::{Conn, Field, Op, RECOVERY};

/// Trace column -> model field, for the snapshot loaded before each call.
pub const FIELDS: &[(&str, Field)] = &[
    ("cwnd", Field::Cwnd), ("ssthresh", Field::Ssthresh), ("cwnd_cnt", Field::CwndCnt),
    ("cwnd_clamp", Field::CwndClamp), ("srtt_us", Field::SrttRaw), ("mdev_us", Field::MdevUs),
    ("min_rtt_us", Field::MinRttUs), ("packets_out", Field::PacketsOut), ("sacked_out", Field::SackedOut),
    ("lost_out", Field::LostOut), ("retrans_out", Field::RetransOut), ("max_packets_out", Field::MaxPacketsOut),
    ("delivered", Field::Delivered), ("delivered_ce", Field::DeliveredCe), ("lost", Field::Lost),
    ("snd_una", Field::SndUna), ("snd_nxt", Field::SndNxt), ("high_seq", Field::HighSeq),
    ("rcv_nxt", Field::RcvNxt), ("prior_cwnd", Field::PriorCwnd), ("prior_ssthresh", Field::PriorSsthresh),
    ("prr_delivered", Field::PrrDelivered), ("prr_out", Field::PrrOut), ("undo_marker", Field::UndoMarker),
    ("undo_retrans", Field::UndoRetrans), ("reordering", Field::Reordering), ("cwnd_stamp", Field::CwndStamp),
    ("lsndtime", Field::Lsndtime), ("cwnd_used", Field::CwndUsed), ("app_limited", Field::AppLimited),
    ("rcv_tsval", Field::RcvTsval), ("rcv_tsecr", Field::RcvTsecr), ("mss_cache", Field::Mss),
    ("icsk_rto", Field::IcskRto), ("delack_max", Field::DelackMax), ("ca_state", Field::CaState),
    ("is_cwnd_limited", Field::IsCwndLimited), ("ecn_flags", Field::EcnFlags), ("saw_tstamp", Field::SawTstamp),
    ("tcp_mstamp", Field::TcpMstamp), ("pacing_rate", Field::PacingRate), ("max_pacing_rate", Field::MaxPacingRate),
];

/// in_ack_event's flags from the ACK's flag (tcp_in_ack_event, Linux 6.12)
fn ack_event_flags(flag: i64) -> u32 {
    let mut ev = 0;
    if flag & 0x02 != 0 {
        ev |= crate::CA_ACK_WIN_UPDATE;
    }
    if flag & 0x100 != 0 {
        ev |= crate::CA_ACK_SLOWPATH;
        if flag & 0x40 != 0 {
            ev |= crate::CA_ACK_ECE;
        }
    }
    ev
}

/// What a replay compares.
#[derive(Clone, Debug)]
pub struct Options {
    /// fields compared after a call (trace column names)
    pub fields: Vec<&'static str>,
    /// records of context kept for a divergence
    pub context: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options { fields: vec!["cwnd", "ssthresh", "cwnd_cnt", "pacing_rate"], context: 12 }
    }
}

/// A call where ours and the kernel's differ.
#[derive(Clone, Debug)]
pub struct Divergence {
    pub line: usize,
    pub kind: String,
    pub what: String,
    pub kernel: i64,
    pub ours: i64,
    /// the records before it, one line each
    pub context: Vec<String>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "line {} ({}): {} kernel {} ours {}", self.line, self.kind, self.what, self.kernel, self.ours)?;
        for c in &self.context {
            writeln!(f, "    {c}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
pub struct Report {
    /// calls made to our program
    pub calls: usize,
    /// values compared
    pub compared: usize,
    pub divergences: Vec<Divergence>,
}

impl Report {
    /// One line, then the first divergence with its context.
    pub fn summary(&self, name: &str) -> String {
        let mut s = format!("{name}: {} calls, {} values compared, {} differ", self.calls, self.compared, self.divergences.len());
        for d in self.divergences.iter().skip(1).take(20) {
            s.push_str(&format!("\n  line {} ({}): {} kernel {} ours {}", d.line, d.kind, d.what, d.kernel, d.ours));
        }
        if let Some(d) = self.divergences.first() {
            s.push_str(&format!("\nthe first:\n{d}"));
        }
        s
    }
}

struct Replayer<'t> {
    trace: &'t Trace,
    conn: Conn,
    opts: Options,
    idx: Vec<(usize, Field)>,
    report: Report,
    /// the return value of our last op call, compared at the record's `_out`
    pending_ret: Option<i64>,
    /// fields not compared at the next `_out` (the Recovery entry exception)
    skip: Vec<&'static str>,
    /// cwnd and ssthresh compared with the next record's instead (leaving Recovery, see
    /// below)
    deferred: Option<(i64, i64)>,
    leaving: bool,
    /// our pkts_acked ran: its window compared at `op_pkts_acked_out` (TCP-LP's acts there)
    acked_called: bool,
    /// our cwnd_event was called: compare at its `_out`
    event_called: bool,
}

impl<'t> Replayer<'t> {
    fn describe(&self, r: &Rec) -> String {
        let g = |n: &str| r.snap[self.trace.field(n)];
        format!(
            "line {} {} a={:?} ret={} | kernel cwnd={} ssthresh={} cnt={} state={} out={} sacked={} lost={} retrans={} delivered={} | ours cwnd={} ssthresh={} cnt={}",
            r.line, r.kind, &r.a[..4], r.ret, g("cwnd"), g("ssthresh"), g("cwnd_cnt"), g("ca_state"), g("packets_out"),
            g("sacked_out"), g("lost_out"), g("retrans_out"), g("delivered"),
            self.conn.cwnd(), self.conn.ssthresh(), self.conn.get(Field::CwndCnt)
        )
    }

    fn load(&self, r: &Rec) {
        crate::set_now_ns(r.t_ns);
        crate::set_jiffies(r.jiffies);
        for (i, f) in &self.idx {
            self.conn.set(*f, r.snap[*i]);
        }
    }

    fn diverge(&mut self, i: usize, what: String, kernel: i64, ours: i64) {
        let r = &self.trace.recs[i];
        let lo = i.saturating_sub(self.opts.context);
        let context = self.trace.recs[lo..i].iter().map(|c| self.describe(c)).collect();
        self.report.divergences.push(Divergence { line: r.line, kind: r.kind.clone(), what, kernel, ours, context });
    }

    fn compare_fields(&mut self, i: usize) {
        let fields = self.opts.fields.clone();
        for name in fields {
            if self.skip.contains(&name) {
                continue;
            }
            let f = FIELDS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f).expect("a field of FIELDS");
            let kernel = self.trace.recs[i].snap[self.trace.field(name)] as i64;
            let ours = self.conn.get(f) as i64;
            self.report.compared += 1;
            if kernel != ours {
                self.diverge(i, name.to_string(), kernel, ours);
            }
        }
        self.skip.clear();
    }

    fn step(&mut self, i: usize) {
        let trace: &'t Trace = self.trace;
        let r = &trace.recs[i];
        // leaving Recovery: the module's CA_EVENT_COMPLETE_CWR (its in and out) comes
        // before the record our values are compared with
        let complete_cwr = |r: &Rec| r.kind.starts_with("op_cwnd_event_") && r.a[0] == crate::CA_EVENT_COMPLETE_CWR as i64;
        if self.deferred.is_some() && !(r.kind == "op_cwnd_event_in" && complete_cwr(r)) {
            let (cwnd, ssthresh) = self.deferred.take().unwrap();
            for (name, ours) in [("cwnd", cwnd), ("ssthresh", ssthresh)] {
                let kernel = r.snap[trace.field(name)] as i64;
                self.report.compared += 1;
                if kernel != ours {
                    self.diverge(i, format!("{name} after leaving Recovery"), kernel, ours);
                }
            }
        }
        let r = &self.trace.recs[i];
        let c = &self.conn;
        match r.kind.as_str() {
            "init_in" => {
                self.load(r);
                if c.has_op(Op::Init) {
                    c.init();
                    self.report.calls += 1;
                }
            }
            "set_state_in" => {
                self.load(r);
                let (old, new) = (c.state(), r.a[0] as u8);
                c.set_ca_state(new);
                self.report.calls += 1;
                // (also from Loss: the RACK reordering timer enters Recovery from there)
                if new == RECOVERY && old != crate::CWR && old != RECOVERY {
                    self.skip.push("cwnd");
                }
                if old == RECOVERY && new < crate::CWR {
                    self.skip.push("cwnd");
                    self.skip.push("ssthresh");
                    self.leaving = true;
                }
            }
            "op_ssthresh_in" => {
                self.load(r);
                self.pending_ret = Some(c.op_ssthresh() as i64);
                self.report.calls += 1;
            }
            "op_undo_cwnd_in" => {
                self.load(r);
                self.pending_ret = Some(c.op_undo_cwnd() as i64);
                self.report.calls += 1;
            }
            "op_pkts_acked_in" => {
                self.load(r);
                if c.has_op(Op::PktsAcked) {
                    c.pkts_acked(r.a[0] as u32, r.a[1] as i32, r.a[2] as u32);
                    self.report.calls += 1;
                    self.acked_called = true;
                }
            }
            "in_ack_event" => {
                self.load(r);
                if c.has_op(Op::InAckEvent) {
                    c.in_ack_event(ack_event_flags(r.a[0]));
                    self.report.calls += 1;
                }
            }
            "op_cwnd_event_in" => {
                self.load(r);
                if c.has_op(Op::CwndEvent) && !complete_cwr(r) {
                    c.cwnd_event(r.a[0] as i32);
                    self.report.calls += 1;
                    self.event_called = true;
                }
            }
            "op_cwnd_event_out" => {
                if std::mem::take(&mut self.event_called) {
                    self.compare_fields(i);
                }
            }
            "cc_pre" => {
                self.load(r);
                // a: flag, acked_sacked, losses, rtt_us, rs.delivered, interval_us,
                // is_app_limited, prior_in_flight
                let rs = RateSample {
                    acked_sacked: r.a[1] as u32,
                    losses: r.a[2] as i32,
                    rtt_us: r.a[3],
                    delivered: r.a[4] as i32,
                    interval_us: r.a[5],
                    is_app_limited: (r.a[6] != 0) as u8,
                    prior_in_flight: r.a[7] as u32,
                    ..Default::default()
                };
                c.cong_control_rs(r.a[0] as i32, &rs);
                self.report.calls += 1;
            }
            "cc_post" | "init_out" => self.compare_fields(i),
            "op_pkts_acked_out" => {
                if std::mem::take(&mut self.acked_called) {
                    self.compare_fields(i);
                }
            }
            "set_state_out" => {
                self.compare_fields(i);
                if std::mem::take(&mut self.leaving) {
                    self.deferred = Some((self.conn.cwnd() as i64, self.conn.ssthresh() as i64));
                }
            }
            "op_ssthresh_out" | "op_undo_cwnd_out" => {
                if let Some(ours) = self.pending_ret.take() {
                    self.report.compared += 1;
                    if ours != r.ret {
                        let what = format!("{} return", r.kind.trim_end_matches("_out"));
                        self.diverge(i, what, r.ret, ours);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Our ops that only the module's own op feeds (the kernel calls none of them for a
/// module without it): an algorithm that has one its module lacks cannot be replayed.
pub fn unfed_ops(trace: &Trace, conn: &Conn) -> Vec<&'static str> {
    let ops = trace.header.get("ops").cloned().unwrap_or_default();
    let has = |name: &str| ops.split_whitespace().any(|o| o.split('=').next() == Some(name));
    [(Op::PktsAcked, "pkts_acked"), (Op::CwndEvent, "cwnd_event")]
        .into_iter()
        .filter(|(op, name)| conn.has_op(*op) && !has(name))
        .map(|(_, name)| name)
        .collect()
}

/// Replay every record of `trace` through `algo` (a bpf/cc source name, e.g. "bic").
pub fn replay(trace: &Trace, algo: &str, opts: Options) -> Report {
    let conns: std::collections::BTreeSet<u32> = trace.recs.iter().map(|r| r.conn).collect();
    assert!(conns.len() <= 1, "{}: {} connections; replay one per trace", trace.path.display(), conns.len());
    let idx = FIELDS.iter().map(|(n, f)| (trace.field(n), *f)).collect();
    let mut rp = Replayer { trace, conn: Conn::bare(algo), opts, idx, report: Report::default(), pending_ret: None, skip: vec![], deferred: None, leaving: false, acked_called: false, event_called: false };
    for i in 0..trace.recs.len() {
        rp.step(i);
    }
    rp.report
}

/// Load `traces/<dir>/<scenario>.csv.gz` (relative to this crate) and replay it through
/// `algo`; panics with the report's summary when any call differs.
pub fn assert_replays(dir: &str, scenario: &str, algo: &str) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces").join(dir).join(format!("{scenario}.csv.gz"));
    let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let unfed = unfed_ops(&trace, &Conn::bare(algo));
    assert!(unfed.is_empty(), "{algo}: has {unfed:?}, which Linux's module ({}) does not: the kernel never \
            calls them, so the trace cannot replay them (docs/dev/cc-replay.md)", trace.header.get("module").map(String::as_str).unwrap_or("?"));
    let rep = replay(&trace, algo, Options::default());
    assert!(rep.calls > 0 && rep.compared > 0, "{}: nothing replayed", path.display());
    assert!(rep.divergences.is_empty(), "{}", rep.summary(&format!("{algo} on {}", path.display())));
    rep
}
