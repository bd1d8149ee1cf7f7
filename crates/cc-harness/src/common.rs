//! cca_common.h's arithmetic and window helpers, called directly (csrc/common.c exports
//! them, built against the same header as the algorithms).
use super::Conn;
use std::ffi::c_void;

/// struct cca_frac: the remainder of a fractional increase (1/1024 segment-acks) and
/// the window it was counted at
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frac {
    pub acc: u64,
    pub cwnd: u32,
}

extern "C" {
    fn cch_sqrt(x: u64) -> u32;
    fn cch_cbrt(x: u64) -> u32;
    fn cch_ilog2(x: u64) -> u32;
    fn cch_nz(y: u64) -> u64;
    fn cch_ltu(a: u64, b: u64) -> u64;
    fn cch_seq_after(a: u32, b: u32) -> i32;
    fn cch_set_cwnd(sk: *mut c_void, cwnd: u32);
    fn cch_slow_start(sk: *mut c_void, acked: u32) -> u32;
    fn cch_cong_avoid_ai(sk: *mut c_void, w: u32, acked: u32);
    fn cch_cong_avoid_frac(sk: *mut c_void, f: *mut Frac, inc_fp: u64, acked: u32);
    fn cch_frac_credit(sk: *mut c_void, f: *mut Frac) -> u64;
    fn cch_cong_avoid_frac_one(sk: *mut c_void, f: *mut Frac, inc_fp: u64, acked: u32);
    fn cch_grow_prologue(sk: *mut c_void, acked: *mut u32) -> i32;
    fn cch_half_cwnd(sk: *mut c_void) -> u32;
}

/// floor(sqrt(x))
pub fn sqrt(x: u64) -> u32 {
    unsafe { cch_sqrt(x) }
}
/// floor(cbrt(x))
pub fn cbrt(x: u64) -> u32 {
    unsafe { cch_cbrt(x) }
}
/// floor(log2(x)), 0 for 0
pub fn ilog2(x: u64) -> u32 {
    unsafe { cch_ilog2(x) }
}
/// 1 if y != 0
pub fn nz(y: u64) -> u64 {
    unsafe { cch_nz(y) }
}
/// 1 if a < b
pub fn ltu(a: u64, b: u64) -> u64 {
    unsafe { cch_ltu(a, b) }
}
pub fn seq_after(a: u32, b: u32) -> bool {
    unsafe { cch_seq_after(a, b) != 0 }
}
pub fn set_cwnd(c: &Conn, cwnd: u32) {
    unsafe { cch_set_cwnd(c.s, cwnd) }
}
/// returns the acked segments left once ssthresh is reached
pub fn slow_start(c: &Conn, acked: u32) -> u32 {
    unsafe { cch_slow_start(c.s, acked) }
}
pub fn cong_avoid_ai(c: &Conn, w: u32, acked: u32) {
    unsafe { cch_cong_avoid_ai(c.s, w, acked) }
}
pub fn cong_avoid_frac(c: &Conn, f: &mut Frac, inc_fp: u64, acked: u32) {
    unsafe { cch_cong_avoid_frac(c.s, f, inc_fp, acked) }
}
/// the remainder, dropped first if cwnd is below the window it was counted at
pub fn frac_credit(c: &Conn, f: &mut Frac) -> u64 {
    unsafe { cch_frac_credit(c.s, f) }
}
pub fn cong_avoid_frac_one(c: &Conn, f: &mut Frac, inc_fp: u64, acked: u32) {
    unsafe { cch_cong_avoid_frac_one(c.s, f, inc_fp, acked) }
}
/// Some(segments left for congestion avoidance), or None when nothing is left to do
pub fn grow_prologue(c: &Conn, acked: u32) -> Option<u32> {
    let mut a = acked;
    (unsafe { cch_grow_prologue(c.s, &mut a) } != 0).then_some(a)
}
pub fn half_cwnd(c: &Conn) -> u32 {
    unsafe { cch_half_cwnd(c.s) }
}
