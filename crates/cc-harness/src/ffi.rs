//! The C side of the harness, called through safe wrappers: the C model of the kernel
//! (csrc/model.c), the algorithms of bpf/cc compiled unchanged for the host, and
//! cca_common.h's helpers (csrc/common.c). build.rs compiles them into this crate.
//!
//! The crate's one exception to `deny(unsafe_code)` (docs/dev/libraries.md, "Unsafe
//! code"). It stays here rather than in ccarena-sys: these are no system calls but the
//! harness's own C, built only for this test crate; ccarena-sys would have to compile
//! bpf/cc to hold them. Why the calls are sound:
//! - a `Sock` is the pointer `cch_new` returned (never null: checked), used only while
//!   the `Sock` lives and freed once by its drop; the model keeps a socket and its maps
//!   in that allocation and in thread-local state, and `Sock` is not `Send`;
//! - the model's functions take any field, op or state number (unknown ones are
//!   ignored or refused with a return value; an op the algorithm lacks is refused here
//!   before the model would call it through a null pointer) and write only through the
//!   pointers they are given, each sized as the C side declares it (`[u64; 5]`, one
//!   `Frac`, one `RateSample`, one u32; bbr_view.c's array only when told its length);
//! - the ops are the algorithms' own code, which the kernel's verifier accepts (`make
//!   bpf` loads them): every memory access they make stays inside the socket and the
//!   maps, which the model provides with the kernel's layout (vmlinux.h).
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::NonNull;

/// struct cca_frac: the remainder of a fractional increase (1/1024 segment-acks) and
/// the window it was counted at (the layout of cca_common.h's struct)
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frac {
    pub acc: u64,
    pub cwnd: u32,
}

/// `struct rate_sample` as the C model passes it to the cong_control op (csrc/model.c,
/// `struct cch_rs`: the kernel's fields in fixed-width types, so this side needs no
/// knowledge of the kernel's layout). Times in µs; −1 means "none". rate.rs makes them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    pub prior_mstamp: u64,
    pub prior_delivered: u32,
    pub prior_delivered_ce: u32,
    pub delivered: i32,
    pub delivered_ce: i32,
    pub interval_us: i64,
    pub snd_interval_us: u32,
    pub rcv_interval_us: u32,
    pub rtt_us: i64,
    pub losses: i32,
    pub acked_sacked: u32,
    pub prior_in_flight: u32,
    pub last_end_seq: u32,
    pub is_app_limited: u8,
    pub is_retrans: u8,
    pub is_ack_delayed: u8,
}

/// The values of csrc/bbr_view.c's view of a BBR model (its CB_FIELDS).
pub const BBR_VIEW_LEN: usize = 41;

mod c {
    use super::{Frac, RateSample};
    use std::ffi::{c_char, c_int, c_void};

    extern "C" {
        pub fn cch_new(name: *const c_char) -> *mut c_void;
        pub fn cch_free(s: *mut c_void);
        pub fn cch_set_now_ns(t: u64);
        pub fn cch_now_ns() -> u64;
        pub fn cch_send_ack_calls() -> u64;
        pub fn cch_send_ack_rcv_nxt() -> u32;
        pub fn cch_send_ack_ece() -> u32;
        pub fn cch_get(s: *mut c_void, f: c_int) -> u64;
        pub fn cch_set(s: *mut c_void, f: c_int, v: u64) -> c_int;
        pub fn cch_has_op(s: *mut c_void, op: c_int) -> c_int;
        pub fn cch_ops_flags(s: *mut c_void) -> u32;
        pub fn cch_ops_name(s: *mut c_void) -> *const c_char;
        pub fn cch_priv(s: *mut c_void) -> *mut u8;
        pub fn cch_op_init(s: *mut c_void);
        pub fn cch_op_ssthresh(s: *mut c_void) -> u32;
        pub fn cch_set_ca_state(s: *mut c_void, st: u8);
        pub fn cch_op_cwnd_event(s: *mut c_void, ev: c_int);
        pub fn cch_op_in_ack_event(s: *mut c_void, flags: u32);
        pub fn cch_op_pkts_acked(s: *mut c_void, pkts: u32, rtt_us: i32, in_flight: u32);
        pub fn cch_op_cong_control_rs(s: *mut c_void, ack: u32, flag: c_int, rs: *const RateSample);
        pub fn cch_op_min_tso_segs(s: *mut c_void) -> u32;
        pub fn cch_set_jiffies(j: u64);
        pub fn cch_set_prandom_seed(seed: u64);
        pub fn cch_set_storage_fails(on: c_int);
        pub fn cch_bbr_view(s: *mut c_void, out: *mut u64, n: u32) -> c_int;
        pub fn cch_op_cong_avoid(s: *mut c_void, ack: u32, acked: u32);
        pub fn cch_op_undo_cwnd(s: *mut c_void) -> u32;
        pub fn cch_guard_counts(s: *mut c_void, out: *mut u64) -> c_int;

        pub fn cch_sqrt(x: u64) -> u32;
        pub fn cch_cbrt(x: u64) -> u32;
        pub fn cch_ilog2(x: u64) -> u32;
        pub fn cch_nz(y: u64) -> u64;
        pub fn cch_ltu(a: u64, b: u64) -> u64;
        pub fn cch_seq_after(a: u32, b: u32) -> i32;
        pub fn cch_set_cwnd(sk: *mut c_void, cwnd: u32);
        pub fn cch_slow_start(sk: *mut c_void, acked: u32) -> u32;
        pub fn cch_cong_avoid_ai(sk: *mut c_void, w: u32, acked: u32);
        pub fn cch_cong_avoid_frac(sk: *mut c_void, f: *mut Frac, inc_fp: u64, acked: u32);
        pub fn cch_frac_credit(sk: *mut c_void, f: *mut Frac) -> u64;
        pub fn cch_cong_avoid_frac_one(sk: *mut c_void, f: *mut Frac, inc_fp: u64, acked: u32);
        pub fn cch_grow_prologue(sk: *mut c_void, acked: *mut u32) -> i32;
        pub fn cch_half_cwnd(sk: *mut c_void) -> u32;
    }
}

/// Bytes of icsk_ca_priv (13 u64 in struct inet_connection_sock).
pub const PRIV_LEN: usize = 104;

// ---- the fake clock and the send_ack record (thread-local in the model) -------------

pub fn now_ns() -> u64 {
    // SAFETY: reads a thread-local of the model.
    unsafe { c::cch_now_ns() }
}
pub fn set_now_ns(t: u64) {
    // SAFETY: writes a thread-local of the model.
    unsafe { c::cch_set_now_ns(t) }
}
pub fn set_jiffies(j: u64) {
    // SAFETY: writes a thread-local of the model.
    unsafe { c::cch_set_jiffies(j) }
}
pub fn set_prandom_seed(seed: u64) {
    // SAFETY: writes a thread-local of the model.
    unsafe { c::cch_set_prandom_seed(seed) }
}
pub fn set_storage_fails(on: bool) {
    // SAFETY: writes a thread-local of the model.
    unsafe { c::cch_set_storage_fails(on as c_int) }
}
pub fn send_ack_calls() -> u64 {
    // SAFETY: reads a thread-local of the model.
    unsafe { c::cch_send_ack_calls() }
}
pub fn send_ack_rcv_nxt() -> u32 {
    // SAFETY: reads a thread-local of the model.
    unsafe { c::cch_send_ack_rcv_nxt() }
}
pub fn send_ack_ece() -> bool {
    // SAFETY: reads a thread-local of the model.
    unsafe { c::cch_send_ack_ece() != 0 }
}

// ---- cca_common.h's pure arithmetic ---------------------------------------------------

macro_rules! pure {
    ($($name:ident => $c:ident ($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
        pub fn $name($($a: $t),*) -> $r {
            // SAFETY: arithmetic on its arguments, no pointer.
            unsafe { c::$c($($a),*) }
        }
    )*};
}
pure! {
    sqrt => cch_sqrt(x: u64) -> u32;
    cbrt => cch_cbrt(x: u64) -> u32;
    ilog2 => cch_ilog2(x: u64) -> u32;
    nz => cch_nz(y: u64) -> u64;
    ltu => cch_ltu(a: u64, b: u64) -> u64;
    seq_after => cch_seq_after(a: u32, b: u32) -> i32;
}

// ---- one model socket ---------------------------------------------------------------

/// One model socket with an algorithm's ops attached (freed on drop; not `Send`: the
/// model's state is thread-local).
pub struct Sock(NonNull<c_void>);

impl Drop for Sock {
    fn drop(&mut self) {
        // SAFETY: the pointer came from cch_new and is freed once, here.
        unsafe { c::cch_free(self.0.as_ptr()) }
    }
}

/// Calls of the model on this socket: `name(args) -> ret => cch_function`.
macro_rules! on_sock {
    ($($name:ident ($($a:ident: $t:ty),*) $(-> $r:ty)? => $c:ident;)*) => {$(
        pub fn $name(&self $(, $a: $t)*) $(-> $r)? {
            // SAFETY: a live socket of cch_new and plain numbers (module contract).
            unsafe { c::$c(self.0.as_ptr() $(, $a)*) }
        }
    )*};
}

impl Sock {
    /// A socket after the handshake with `algo`'s ops attached; None for an unknown name.
    pub fn new(algo: &CStr) -> Option<Sock> {
        // SAFETY: `algo` is NUL-terminated and only read during the call.
        NonNull::new(unsafe { c::cch_new(algo.as_ptr()) }).map(Sock)
    }

    on_sock! {
        get(f: c_int) -> u64 => cch_get;
        set(f: c_int, v: u64) -> c_int => cch_set;
        has_op(op: c_int) -> c_int => cch_has_op;
        ops_flags() -> u32 => cch_ops_flags;
        op_init() => cch_op_init;
        set_ca_state(st: u8) => cch_set_ca_state;
        op_cwnd_event(ev: c_int) => cch_op_cwnd_event;
        op_in_ack_event(flags: u32) => cch_op_in_ack_event;
        op_pkts_acked(pkts: u32, rtt_us: i32, in_flight: u32) => cch_op_pkts_acked;
        set_cwnd(cwnd: u32) => cch_set_cwnd;
        slow_start(acked: u32) -> u32 => cch_slow_start;
        cong_avoid_ai(w: u32, acked: u32) => cch_cong_avoid_ai;
        half_cwnd() -> u32 => cch_half_cwnd;
    }

    /// Panics unless the algorithm has `op`: the model calls ssthresh, cong_avoid,
    /// cong_control and undo_cwnd without looking, as the kernel may (it refuses ops
    /// without them), and a missing one is a null pointer.
    fn need(&self, op: crate::Op) {
        assert!(self.has_op(op as c_int) != 0, "{}: no {op:?} op", self.ops_name());
    }

    pub fn op_ssthresh(&self) -> u32 {
        self.need(crate::Op::Ssthresh);
        // SAFETY: a live socket whose ops have ssthresh (checked).
        unsafe { c::cch_op_ssthresh(self.0.as_ptr()) }
    }

    pub fn op_cong_avoid(&self, ack: u32, acked: u32) {
        self.need(crate::Op::CongAvoid);
        // SAFETY: a live socket whose ops have cong_avoid (checked).
        unsafe { c::cch_op_cong_avoid(self.0.as_ptr(), ack, acked) }
    }

    pub fn op_undo_cwnd(&self) -> u32 {
        self.need(crate::Op::UndoCwnd);
        // SAFETY: a live socket whose ops have undo_cwnd (checked).
        unsafe { c::cch_op_undo_cwnd(self.0.as_ptr()) }
    }

    /// The cong_control op with the rate sample `rs`.
    pub fn op_cong_control_rs(&self, ack: u32, flag: c_int, rs: &RateSample) {
        self.need(crate::Op::CongControl);
        // SAFETY: a live socket whose ops have cong_control (checked); `rs` is one
        // RateSample (repr(C), as struct cch_rs), only read during the call.
        unsafe { c::cch_op_cong_control_rs(self.0.as_ptr(), ack, flag, rs) }
    }

    /// The min_tso_segs op; None when the algorithm has none (the C side would call a
    /// null pointer).
    pub fn op_min_tso_segs(&self) -> Option<u32> {
        if self.has_op(crate::Op::MinTsoSegs as c_int) == 0 {
            return None;
        }
        // SAFETY: a live socket whose ops have min_tso_segs (checked above).
        Some(unsafe { c::cch_op_min_tso_segs(self.0.as_ptr()) })
    }

    /// csrc/bbr_view.c's reading of the socket's BBR model; None when it has none (not
    /// bbr2/bbr3, or init not run).
    pub fn bbr_view(&self) -> Option<[u64; BBR_VIEW_LEN]> {
        let mut out = [0u64; BBR_VIEW_LEN];
        // SAFETY: a live socket; bbr_view.c writes `out` only when the length it is told
        // is its own CB_FIELDS, and then exactly that many u64.
        let rc = unsafe { c::cch_bbr_view(self.0.as_ptr(), out.as_mut_ptr(), BBR_VIEW_LEN as u32) };
        assert_ne!(rc, -2, "csrc/bbr_view.c's CB_FIELDS is not ffi::BBR_VIEW_LEN");
        (rc == 0).then_some(out)
    }

    /// The algorithm's name as its ops say.
    pub fn ops_name(&self) -> String {
        // SAFETY: the ops' name is a NUL-terminated array of the static ops struct.
        unsafe { CStr::from_ptr(c::cch_ops_name(self.0.as_ptr()) as *const c_char) }.to_string_lossy().into_owned()
    }

    /// A copy of the algorithm's private state (icsk_ca_priv): a copy, because the ops,
    /// called through `&self`, write it.
    pub fn private(&self) -> [u8; PRIV_LEN] {
        let mut out = [0u8; PRIV_LEN];
        // SAFETY: icsk_ca_priv is PRIV_LEN bytes inside the live socket; nothing else
        // runs on this thread during the copy.
        unsafe { std::ptr::copy_nonoverlapping(c::cch_priv(self.0.as_ptr()), out.as_mut_ptr(), PRIV_LEN) };
        out
    }

    /// The cca_guard counters of the socket's namespace.
    pub fn guard_counts(&self) -> [u64; 5] {
        let mut out = [0u64; 5];
        // SAFETY: the model writes exactly 5 u64 into `out`.
        unsafe { c::cch_guard_counts(self.0.as_ptr(), out.as_mut_ptr()) };
        out
    }

    pub fn cong_avoid_frac(&self, f: &mut Frac, inc_fp: u64, acked: u32) {
        // SAFETY: a live socket; `f` is one Frac (repr(C), as cca_common.h's struct).
        unsafe { c::cch_cong_avoid_frac(self.0.as_ptr(), f, inc_fp, acked) }
    }
    pub fn frac_credit(&self, f: &mut Frac) -> u64 {
        // SAFETY: as above.
        unsafe { c::cch_frac_credit(self.0.as_ptr(), f) }
    }
    pub fn cong_avoid_frac_one(&self, f: &mut Frac, inc_fp: u64, acked: u32) {
        // SAFETY: as above.
        unsafe { c::cch_cong_avoid_frac_one(self.0.as_ptr(), f, inc_fp, acked) }
    }
    pub fn grow_prologue(&self, acked: &mut u32) -> i32 {
        // SAFETY: a live socket; `acked` is one u32 the helper updates.
        unsafe { c::cch_grow_prologue(self.0.as_ptr(), acked) }
    }
}
