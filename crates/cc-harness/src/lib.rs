//! ccarena-cc-harness: the BPF congestion controls of bpf/cc, compiled unchanged for the
//! host (build.rs) and driven deterministically from Rust tests: a socket with the
//! kernel's struct layout, each struct tcp_congestion_ops op callable directly, and a
//! fake clock (docs/dev/cc-harness.md).
//!
//! Two levels:
//! - [`Conn`]'s op calls (`ssthresh`, `set_state`, `pkts_acked`, `cong_control`, ...) and
//!   field accessors: exactly one kernel call, nothing else;
//! - kernel-shaped sequences built from them, in the order tcp_ack() calls the ops
//!   (net/ipv4/tcp_input.c): [`Conn::ack`] (RTT estimator, pkts_acked, in_ack_event,
//!   cong_control, then the sender fills the window), [`Conn::round`] (one RTT of ACKs),
//!   [`Conn::enter_recovery`] / [`Conn::enter_cwr`] / [`Conn::enter_loss`] /
//!   [`Conn::exit_reduction`] / [`Conn::undo`] (tcp_init_cwnd_reduction,
//!   tcp_enter_loss, tcp_set_ca_state, tcp_undo_cwnd_reduction).
//!
//! The clock and the map store are thread-local in the C model, so each test (a thread
//! under `cargo test`) has its own; a [`Conn`] is therefore not `Send`.
//!
//! Unsafe code only in `ffi`, the calls into the C side (docs/dev/libraries.md).
#![deny(unsafe_code)]
use std::ffi::{c_int, CString};
use std::marker::PhantomData;

mod ffi;

include!(concat!(env!("OUT_DIR"), "/algos.rs"));

/// Fields of the model socket (csrc/model.c, enum cch_field).
#[repr(i32)]
#[derive(Clone, Copy, Debug)]
pub enum Field {
    Cwnd, Ssthresh, SrttUs, PacketsOut, SackedOut, LostOut, RetransOut, IsCwndLimited,
    MaxPacketsOut, CaState, Mss, Delivered, DeliveredCe, SndUna, SndNxt, HighSeq, PriorCwnd,
    PrrOut, CwndClamp, CwndCnt, UndoMarker, Reordering, EcnFlags, PriorSsthresh, RcvNxt,
    PacingRate, AckPending, CwndStamp, NetnsInum, MaxPacingRate,
    // the rest of what a recorded trace carries (replay.rs)
    /// tp->srtt_us as the kernel keeps it (scaled by 8)
    SrttRaw, MdevUs, MinRttUs, Lost, PrrDelivered, UndoRetrans, Lsndtime, CwndUsed, AppLimited,
    RcvTsval, RcvTsecr, SawTstamp, TcpMstamp, IcskRto, DelackMax,
    // what the rate sampler and BBR read (rate.rs, sim/flow.rs)
    PacingStatus, SackOk,
    /// sk->sk_gso_max_size (tcp_cubic's HyStart reads it)
    GsoMaxSize,
}

/// struct tcp_congestion_ops members (enum cch_op).
#[repr(i32)]
#[derive(Clone, Copy, Debug)]
pub enum Op { Init, Ssthresh, CongAvoid, SetState, CwndEvent, InAckEvent, PktsAcked, CongControl, UndoCwnd, Release, MinTsoSegs }

/// enum tcp_ca_state
pub const OPEN: u8 = 0;
pub const DISORDER: u8 = 1;
pub const CWR: u8 = 2;
pub const RECOVERY: u8 = 3;
pub const LOSS: u8 = 4;
/// enum tcp_ca_event
pub const CA_EVENT_TX_START: i32 = 0;
pub const CA_EVENT_CWND_RESTART: i32 = 1;
pub const CA_EVENT_COMPLETE_CWR: i32 = 2;
pub const CA_EVENT_LOSS: i32 = 3;
pub const CA_EVENT_ECN_NO_CE: i32 = 4;
pub const CA_EVENT_ECN_IS_CE: i32 = 5;
/// in_ack_event flags (enum tcp_ca_ack_event_flags)
pub const CA_ACK_SLOWPATH: u32 = 1;
pub const CA_ACK_WIN_UPDATE: u32 = 2;
pub const CA_ACK_ECE: u32 = 4;
/// cong_control flags (net/ipv4/tcp_input.c FLAG_*)
pub const FLAG_DATA: i32 = 0x01;
pub const FLAG_WIN_UPDATE: i32 = 0x02;
pub const FLAG_DATA_ACKED: i32 = 0x04;
pub const FLAG_SYN_ACKED: i32 = 0x10;
pub const FLAG_DATA_SACKED: i32 = 0x20;
pub const FLAG_ECE: i32 = 0x40;
pub const FLAG_SND_UNA_ADVANCED: i32 = 0x400;
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// icsk_ack.pending flags (enum inet_csk_ack_state_t)
pub const ICSK_ACK_TIMER: u64 = 2;
pub const ICSK_ACK_NOW: u64 = 16;
/// tp->ecn_flags: the receiver echoes ECE (TCP_ECN_DEMAND_CWR)
pub const TCP_ECN_DEMAND_CWR: u64 = 4;
pub const TCP_CONG_NEEDS_ECN: u32 = 0x2;

/// The fake clock, in microseconds (shared by every connection of this thread).
pub fn now_us() -> u64 {
    ffi::now_ns() / 1000
}
pub fn set_now_us(t: u64) {
    ffi::set_now_ns(t * 1000)
}
/// The fake clock in nanoseconds (a replayed trace gives the kernel's own).
pub fn set_now_ns(t: u64) {
    ffi::set_now_ns(t)
}
/// Fix bpf_jiffies64() at `j` (a replayed trace's jiffies; otherwise they follow the clock).
pub fn set_jiffies(j: u64) {
    ffi::set_jiffies(j)
}
pub fn advance_us(dt: u64) {
    set_now_us(now_us() + dt)
}
/// The fake clock in nanoseconds.
pub fn now_ns() -> u64 {
    ffi::now_ns()
}
/// Restart this thread's bpf_get_prandom_u32 sequence from `seed` (each new connection
/// restarts it from a fixed seed, so a test is deterministic without this).
pub fn set_prandom_seed(seed: u64) {
    ffi::set_prandom_seed(seed)
}
/// Make bpf_sk_storage_get's creation fail on this thread (the kernel's -ENOMEM), or not.
pub fn set_storage_fails(on: bool) { ffi::set_storage_fails(on) }
/// Calls of bpf_tcp_send_ack on this thread.
pub fn send_ack_calls() -> u64 {
    ffi::send_ack_calls()
}
/// The rcv_nxt the last bpf_tcp_send_ack call acknowledged.
pub fn send_ack_rcv_nxt() -> u32 {
    ffi::send_ack_rcv_nxt()
}
/// Whether the last bpf_tcp_send_ack call's ACK carried ECE (TCP_ECN_DEMAND_CWR set as
/// it was sent).
pub fn send_ack_ece() -> bool {
    ffi::send_ack_ece()
}

/// One synthetic ACK (see [`Conn::ack`]).
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// segments newly acknowledged (cumulatively)
    pub segs: u32,
    /// the RTT sample it carries (<= 0: none)
    pub rtt_us: i32,
    /// it carries ECE
    pub ece: bool,
    /// of the acknowledged segments, how many were CE-marked at the receiver
    pub ce_segs: u32,
}

impl Ack {
    pub fn new(segs: u32, rtt_us: u32) -> Ack {
        Ack { segs, rtt_us: rtt_us as i32, ece: false, ce_segs: 0 }
    }
}

/// A bottleneck as a fluid model, for growth over many rounds: a flow with window `w`
/// (plus `other` segments of cross traffic) sees RTT = base + queue / rate, queue =
/// the part of the window beyond the path's BDP; more than `buffer` queued is a loss.
#[derive(Clone, Copy, Debug)]
pub struct Path {
    pub base_us: u32,
    /// segments per second
    pub rate_pps: f64,
    /// segments
    pub buffer: u32,
}

impl Path {
    /// e.g. Path::new(20e6, 20_000, 300): 20 Mbit/s of 1514-byte frames, 20 ms, 300 p
    pub fn new(rate_bps: f64, base_us: u32, buffer: u32) -> Path {
        Path { base_us, rate_pps: rate_bps / (1514.0 * 8.0), buffer }
    }
    pub fn bdp(&self) -> f64 {
        self.rate_pps * self.base_us as f64 / 1e6
    }
    /// segments queued with `inflight` segments in the network
    pub fn queue(&self, inflight: f64) -> f64 {
        (inflight - self.bdp()).max(0.0)
    }
    pub fn rtt_us(&self, inflight: f64) -> u32 {
        self.base_us + (self.queue(inflight) / self.rate_pps * 1e6) as u32
    }
    pub fn overflows(&self, inflight: f64) -> bool {
        self.queue(inflight) > self.buffer as f64
    }
}

/// One connection of one algorithm, on the model socket.
pub struct Conn {
    s: ffi::Sock,
    pub algo: String,
    /// the sender always has data: after each ACK the window is filled (packets_out = cwnd)
    app_unlimited: std::cell::Cell<bool>,
    /// snd_nxt before the refill of the last ACK of the previous round (see round_with)
    round_target: std::cell::Cell<Option<u64>>,
    pre_refill_nxt: std::cell::Cell<u64>,
    /// segments a round's ACK acknowledges (set_ack_every)
    ack_every: std::cell::Cell<u32>,
    /// the rate sampler: the snapshot of each outstanding segment (oldest first)
    txq: std::cell::RefCell<std::collections::VecDeque<rate::TxInfo>>,
    rate: std::cell::RefCell<rate::RateState>,
    _not_send: PhantomData<*mut ()>,
}

impl Conn {
    /// A socket after the handshake (cwnd 10, ssthresh infinite, mss 1448, Open) with
    /// `algo`'s ops attached and its init op run. Panics for an unknown algorithm.
    pub fn new(algo: &str) -> Conn {
        let c = Conn::bare(algo);
        c.init();
        c
    }

    /// The same without calling init.
    pub fn bare(algo: &str) -> Conn {
        let name = CString::new(algo).unwrap();
        let s = ffi::Sock::new(&name).unwrap_or_else(|| panic!("no algorithm {algo:?} in bpf/cc (have {ALGOS:?})"));
        Conn {
            s,
            algo: algo.to_string(),
            app_unlimited: std::cell::Cell::new(true),
            round_target: std::cell::Cell::new(None),
            pre_refill_nxt: std::cell::Cell::new(0),
            ack_every: std::cell::Cell::new(1),
            txq: Default::default(),
            rate: Default::default(),
            _not_send: PhantomData,
        }
    }

    /// Segments each ACK of a round acknowledges: 1 (the default), 2 for a receiver's
    /// delayed ACKs (RFC 5681 §4.2), more for stretch ACKs (GRO, ACK loss); a round's last
    /// ACK takes what is left.
    pub fn set_ack_every(&self, k: u32) {
        self.ack_every.set(k.max(1))
    }

    /// Whether the sender fills the window after each ACK (default: yes).
    pub fn set_app_unlimited(&self, on: bool) {
        self.app_unlimited.set(on)
    }

    pub fn get(&self, f: Field) -> u64 {
        self.s.get(f as c_int)
    }
    pub fn set(&self, f: Field, v: u64) {
        let rc = self.s.set(f as c_int, v);
        assert_eq!(rc, 0, "field {f:?} is read-only in the model");
    }
    pub fn cwnd(&self) -> u32 {
        self.get(Field::Cwnd) as u32
    }
    pub fn ssthresh(&self) -> u32 {
        self.get(Field::Ssthresh) as u32
    }
    pub fn state(&self) -> u8 {
        self.get(Field::CaState) as u8
    }
    pub fn srtt_us(&self) -> u32 {
        self.get(Field::SrttUs) as u32
    }
    pub fn set_cwnd(&self, w: u32) {
        self.set(Field::Cwnd, w as u64)
    }
    pub fn set_ssthresh(&self, w: u32) {
        self.set(Field::Ssthresh, w as u64)
    }
    pub fn mss(&self) -> u32 {
        self.get(Field::Mss) as u32
    }
    pub fn has_op(&self, op: Op) -> bool {
        self.s.has_op(op as c_int) != 0
    }
    pub fn ops_flags(&self) -> u32 {
        self.s.ops_flags()
    }
    pub fn ops_name(&self) -> String {
        self.s.ops_name()
    }
    /// A copy of the algorithm's private state (icsk_ca_priv, 104 bytes).
    pub fn private(&self) -> [u8; 104] {
        self.s.private()
    }
    /// The cca_guard counters of this socket's namespace: [late, at_entry, late_ssthresh,
    /// late_cwnd, late_states].
    pub fn guard_counts(&self) -> [u64; 5] {
        self.s.guard_counts()
    }

    // ---- single op calls
    pub fn init(&self) {
        self.s.op_init()
    }
    pub fn op_ssthresh(&self) -> u32 {
        self.s.op_ssthresh()
    }
    /// tcp_set_ca_state: the set_state op, then the kernel stores the state.
    pub fn set_ca_state(&self, st: u8) {
        self.s.set_ca_state(st)
    }
    pub fn cwnd_event(&self, ev: i32) {
        self.s.op_cwnd_event(ev)
    }
    pub fn in_ack_event(&self, flags: u32) {
        self.s.op_in_ack_event(flags)
    }
    pub fn pkts_acked(&self, pkts: u32, rtt_us: i32, in_flight: u32) {
        self.s.op_pkts_acked(pkts, rtt_us, in_flight)
    }
    /// The cong_control op with an ACK that carries no delivery rate sample.
    pub fn cong_control(&self, flag: i32, acked_sacked: u32, losses: i32, rtt_us: i32) {
        self.cong_control_rs(flag, &rate::RateSample::no_sample(acked_sacked, losses, rtt_us))
    }
    pub fn cong_avoid(&self, acked: u32) {
        let ack = self.get(Field::SndUna) as u32;
        self.s.op_cong_avoid(ack, acked)
    }
    pub fn op_undo_cwnd(&self) -> u32 {
        self.s.op_undo_cwnd()
    }

    // ---- kernel-shaped sequences
    /// The RTT estimator of RFC 6298 §2 (srtt = 7/8 srtt + 1/8 R), as tcp_rtt_estimator
    /// keeps it before the ops see the sample.
    fn rtt_sample(&self, rtt_us: i32) {
        if rtt_us <= 0 {
            return;
        }
        let s = self.srtt_us();
        let n = if s == 0 { rtt_us as u32 } else { s - s / 8 + rtt_us as u32 / 8 };
        self.set(Field::SrttUs, n.max(1) as u64);
    }

    /// Fill the window, as the sender does after an ACK when it has data: packets_out =
    /// cwnd (in Recovery: what PRR's cwnd allows), snd_nxt behind it.
    pub fn transmit(&self) {
        if !self.app_unlimited.get() {
            return;
        }
        let cwnd = self.cwnd() as u64;
        let out = self.get(Field::PacketsOut);
        let mss = self.mss() as u64;
        if cwnd > out {
            let sent = cwnd - out;
            let (now, delivered, ce) = (now_ns(), self.get(Field::Delivered) as u32, self.get(Field::DeliveredCe) as u32);
            let app_limited = self.get(Field::AppLimited) != 0;
            let nxt = self.get(Field::SndNxt);
            for k in 0..sent {
                let tx = self.rate.borrow_mut().on_send(now, (out + k) as u32, delivered, ce, app_limited, false, nxt + (k + 1) * mss);
                self.txq.borrow_mut().push_back(tx);
            }
            self.set(Field::PacketsOut, cwnd);
            self.set(Field::SndNxt, (self.get(Field::SndNxt) + sent * mss) & 0xffff_ffff);
            if matches!(self.state(), CWR | RECOVERY) {
                self.set(Field::PrrOut, self.get(Field::PrrOut) + sent);
            }
        }
        self.set(Field::MaxPacketsOut, self.get(Field::MaxPacketsOut).max(self.get(Field::PacketsOut)));
        self.set(Field::IsCwndLimited, 1);
    }

    /// One ACK in tcp_ack()'s order: snd_una and delivered advance (tcp_clean_rtx_queue,
    /// with the RTT estimator and then pkts_acked), in_ack_event, then cong_control with
    /// the rate sample of the acknowledged segments (rate.rs: from the snapshots the
    /// segments took when [`Conn::transmit`] sent them; none for segments a test put in
    /// flight by setting fields); then the sender fills the window.
    pub fn ack(&self, a: Ack) {
        let mss = self.mss() as u64;
        let in_flight = self.get(Field::PacketsOut) as u32;
        let mut b = rate::RsBuilder::default();
        {
            let mut q = self.txq.borrow_mut();
            while q.len() > in_flight as usize {
                q.pop_front();
            }
            for _ in 0..a.segs.min(q.len() as u32) {
                b.delivered(&q.pop_front().unwrap());
            }
        }
        if a.segs > 0 {
            self.set(Field::SndUna, (self.get(Field::SndUna) + a.segs as u64 * mss) & 0xffff_ffff);
            self.set(Field::PacketsOut, self.get(Field::PacketsOut).saturating_sub(a.segs as u64));
            self.set(Field::Delivered, self.get(Field::Delivered) + a.segs as u64);
            self.set(Field::DeliveredCe, self.get(Field::DeliveredCe) + a.ce_segs as u64);
            self.rtt_sample(a.rtt_us);
            self.pkts_acked(a.segs, a.rtt_us, in_flight);
        }
        if a.rtt_us > 0 {
            self.rate.borrow_mut().rtt_sample(a.rtt_us as u64);
        }
        let mut ev = CA_ACK_WIN_UPDATE;
        let mut flag = 0;
        if a.ece {
            ev |= CA_ACK_ECE;
            flag |= FLAG_ECE;
        }
        self.in_ack_event(ev);
        if a.segs > 0 {
            flag |= FLAG_DATA_ACKED | FLAG_SND_UNA_ADVANCED;
        }
        if self.has_op(Op::CongControl) {
            let mut rs = self.rate.borrow_mut().generate(
                &b, now_ns(), self.get(Field::Delivered) as u32, self.get(Field::DeliveredCe) as u32,
                a.segs, 0, if a.rtt_us > 0 { a.rtt_us as i64 } else { -1 });
            rs.prior_in_flight = in_flight;
            self.cong_control_rs(flag, &rs);
        } else if a.segs > 0 {
            self.cong_avoid(a.segs);
        }
        self.pre_refill_nxt.set(self.get(Field::SndNxt));
        self.transmit();
    }

    /// Rounds of [`Conn::round`] at `rtt_us` until cwnd reaches `w` (slow start or growth
    /// back to a window); returns how many it took. Panics past `max` rounds: a window
    /// that does not get there is the test's finding, not a reason to loop for ever.
    pub fn rounds_until(&self, w: u32, rtt_us: u32, max: u32) -> u32 {
        let mut n = 0;
        while self.cwnd() < w {
            assert!(n < max, "{}: cwnd {} after {max} rounds, not {w}", self.algo, self.cwnd());
            self.round(rtt_us);
            n += 1;
        }
        n
    }

    /// One round trip: the ACKs of the data outstanding when the previous round ended,
    /// one ACK per segment (or per `set_ack_every` segments), spread evenly over `rtt_us`
    /// of the fake clock, each carrying the RTT sample `rtt_us`.
    pub fn round(&self, rtt_us: u32) {
        self.round_with(rtt_us, |_| rtt_us)
    }

    /// The same, with the RTT sample of the i-th ACK of the round from `rtt_of(i)`.
    ///
    /// Rounds are the algorithms' own: an algorithm that counts rounds records snd_nxt
    /// on the ACK that ends a round, before that ACK's own transmission, and the next
    /// round ends when snd_una reaches it (Vegas' rule). This round ends at the same ACK,
    /// so every ACK of a harness round falls in one round of the algorithm.
    pub fn round_with(&self, rtt_us: u32, rtt_of: impl FnMut(u32) -> u32) {
        self.round_then(rtt_us, rtt_of, |_| ())
    }

    /// The same, calling `before_last` just before the round's last ACK: the one that ends
    /// the algorithm's round, where its once-per-round rules are judged (a test can set
    /// the window they are judged with).
    pub fn round_then(&self, rtt_us: u32, mut rtt_of: impl FnMut(u32) -> u32, before_last: impl FnOnce(&Conn)) {
        let segs = self.next_round_acks();
        let k = self.ack_every.get();
        let n = segs.div_ceil(k);
        let step = (rtt_us / n).max(1) as u64;
        let mut before_last = Some(before_last);
        for i in 0..n {
            advance_us(step);
            if i + 1 == n {
                (before_last.take().unwrap())(self);
            }
            self.ack(Ack::new(k.min(segs - i * k), rtt_of(i)));
        }
        self.round_target.set(Some(self.pre_refill_nxt.get()));
    }

    /// The segments the next [`Conn::round`] acknowledges (the data outstanding when the
    /// previous round ended: one ACK each unless `set_ack_every`); fills the window first,
    /// as the round does.
    pub fn next_round_acks(&self) -> u32 {
        self.transmit();
        let mss = self.mss() as u64;
        let una = self.get(Field::SndUna);
        let target = match self.round_target.get() {
            Some(t) if t > una => t,
            _ => self.get(Field::SndNxt),
        };
        ((target.saturating_sub(una)) / mss).max(1) as u32
    }

    /// One round on `path` with `other` segments of cross traffic in the network: every
    /// ACK carries the RTT of the window at the round's start. Returns true if the
    /// round overflowed the buffer (the caller decides how the loss is detected).
    pub fn round_on(&self, path: &Path, other: f64) -> bool {
        let inflight = self.cwnd() as f64 + other;
        self.round(path.rtt_us(inflight));
        path.overflows(inflight)
    }

    /// `n` ACKs of one segment each, `gap_us` apart, each carrying `rtt_us`.
    pub fn ack_segments(&self, n: u32, gap_us: u64, rtt_us: u32) {
        self.transmit();
        for _ in 0..n {
            advance_us(gap_us);
            self.ack(Ack::new(1, rtt_us));
        }
    }

    /// tcp_init_cwnd_reduction + tcp_set_ca_state(state): high_seq = snd_nxt,
    /// prior_cwnd = cwnd, PRR counters 0, ssthresh from the op, then the state change.
    fn start_reduction(&self, state: u8) {
        self.set(Field::HighSeq, self.get(Field::SndNxt));
        self.set(Field::CwndCnt, 0);
        self.set(Field::PriorCwnd, self.get(Field::Cwnd));
        self.set(Field::PrrOut, 0);
        self.set(Field::PriorSsthresh, self.ssthresh().max(self.cwnd() * 3 / 4) as u64);
        self.set(Field::UndoMarker, self.get(Field::SndUna).max(1));
        let ss = self.op_ssthresh();
        self.set_ssthresh(ss);
        self.set_ca_state(state);
    }

    /// A loss detected by duplicate ACKs / SACK (tcp_enter_recovery): at least one
    /// outstanding segment is marked lost first, as tcp_fastretrans_alert does.
    pub fn enter_recovery(&self) {
        if self.get(Field::PacketsOut) > 0 && self.get(Field::LostOut) == 0 {
            self.set(Field::LostOut, 1);
        }
        self.start_reduction(RECOVERY);
    }

    /// An ECN echo (tcp_enter_cwr), from Open or Disorder.
    pub fn enter_cwr(&self) {
        self.start_reduction(CWR);
    }

    /// A retransmission time-out (tcp_enter_loss): prior_cwnd, ssthresh from the op,
    /// CA_EVENT_LOSS, cwnd = packets in flight + 1 (everything outstanding is lost: 1),
    /// then the state change.
    pub fn enter_loss(&self) {
        self.set(Field::PriorSsthresh, self.ssthresh().max(self.cwnd() * 3 / 4) as u64);
        self.set(Field::PriorCwnd, self.get(Field::Cwnd));
        self.set(Field::UndoMarker, self.get(Field::SndUna).max(1));
        let ss = self.op_ssthresh();
        self.set_ssthresh(ss);
        self.cwnd_event(CA_EVENT_LOSS);
        self.set(Field::HighSeq, self.get(Field::SndNxt));
        self.set(Field::PacketsOut, 0);
        self.txq.borrow_mut().clear();
        self.set_cwnd(1);
        self.set_ca_state(LOSS);
    }

    /// The end of a reduction (snd_una passed high_seq): the holes are repaired, back to
    /// Open.
    pub fn exit_reduction(&self) {
        for f in [Field::LostOut, Field::SackedOut, Field::RetransOut] {
            self.set(f, 0);
        }
        self.set_ca_state(OPEN);
    }

    /// tcp_undo_cwnd_reduction: cwnd from the undo_cwnd op, ssthresh back to the prior
    /// one if larger, undo_marker cleared, then back to Open.
    pub fn undo(&self) {
        for f in [Field::LostOut, Field::SackedOut, Field::RetransOut] {
            self.set(f, 0);
        }
        let w = self.op_undo_cwnd();
        self.set_cwnd(w);
        let prior = self.get(Field::PriorSsthresh) as u32;
        if prior > self.ssthresh() {
            self.set_ssthresh(prior);
        }
        self.set(Field::UndoMarker, 0);
        self.set_ca_state(OPEN);
    }

    /// Leave slow start at once: ssthresh = cwnd (as after a first reduction); a helper
    /// for tests that start in congestion avoidance.
    pub fn start_in_ca(&self, cwnd: u32) {
        self.set_cwnd(cwnd);
        self.set_ssthresh(cwnd);
        self.transmit();
    }

    /// The application stops sending, the connection sits idle, and it sends again after
    /// RFC 5681 §4.1's restart as the kernel makes it (tcp_cwnd_restart): the flight is
    /// acknowledged (ACKs of one segment carrying `rtt_us`) while the sender is not
    /// cwnd-limited, so without growth (RFC 7661); `idle_us` pass; CA_EVENT_CWND_RESTART;
    /// then the kernel's own ssthresh (when given) and window: no ssthresh op, no loss.
    /// Returns the window the flight was acknowledged at.
    pub fn idle_restart(&self, rtt_us: u32, idle_us: u64, ssthresh: Option<u32>, cwnd: u32) -> u32 {
        self.set_app_unlimited(false);
        self.set(Field::IsCwndLimited, 0);
        let rest = self.get(Field::PacketsOut) as u32;
        self.ack_segments(rest, 100, rtt_us);
        assert_eq!(self.get(Field::PacketsOut), 0, "the flight acknowledged");
        let before = self.cwnd();
        advance_us(idle_us);
        self.cwnd_event(CA_EVENT_CWND_RESTART);
        if let Some(s) = ssthresh {
            self.set_ssthresh(s);
        }
        self.set_cwnd(cwnd);
        self.set_app_unlimited(true);
        before
    }
}

/// cca_common.h's arithmetic and window helpers, called directly (common.rs).
pub mod common;
/// Traces recorded from Linux's own modules, replayed call by call (replay.rs).
pub mod replay;
/// The trace file format (trace.rs).
pub mod trace;
/// The kernel's delivery rate sampler and `struct rate_sample`.
pub mod rate;
/// BBR's model as the harness reads it (TCP_CC_INFO and more).
pub mod bbr;
/// A packet-level simulation of flows through one bottleneck.
pub mod sim;
