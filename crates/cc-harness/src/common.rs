//! cca_common.h's arithmetic and window helpers, called directly (csrc/common.c exports
//! them, built against the same header as the algorithms).
use super::{ffi, Conn};

/// struct cca_frac (declared with the C calls that take it)
pub use super::ffi::Frac;

/// floor(sqrt(x))
pub fn sqrt(x: u64) -> u32 {
    ffi::sqrt(x)
}
/// floor(cbrt(x))
pub fn cbrt(x: u64) -> u32 {
    ffi::cbrt(x)
}
/// floor(log2(x)), 0 for 0
pub fn ilog2(x: u64) -> u32 {
    ffi::ilog2(x)
}
/// 1 if y != 0
pub fn nz(y: u64) -> u64 {
    ffi::nz(y)
}
/// 1 if a < b
pub fn ltu(a: u64, b: u64) -> u64 {
    ffi::ltu(a, b)
}
pub fn seq_after(a: u32, b: u32) -> bool {
    ffi::seq_after(a, b) != 0
}
pub fn set_cwnd(c: &Conn, cwnd: u32) {
    c.s.set_cwnd(cwnd)
}
/// returns the acked segments left once ssthresh is reached
pub fn slow_start(c: &Conn, acked: u32) -> u32 {
    c.s.slow_start(acked)
}
pub fn cong_avoid_ai(c: &Conn, w: u32, acked: u32) {
    c.s.cong_avoid_ai(w, acked)
}
pub fn cong_avoid_frac(c: &Conn, f: &mut Frac, inc_fp: u64, acked: u32) {
    c.s.cong_avoid_frac(f, inc_fp, acked)
}
/// the remainder, dropped first if cwnd is below the window it was counted at
pub fn frac_credit(c: &Conn, f: &mut Frac) -> u64 {
    c.s.frac_credit(f)
}
pub fn cong_avoid_frac_one(c: &Conn, f: &mut Frac, inc_fp: u64, acked: u32) {
    c.s.cong_avoid_frac_one(f, inc_fp, acked)
}
/// Some(segments left for congestion avoidance), or None when nothing is left to do
pub fn grow_prologue(c: &Conn, acked: u32) -> Option<u32> {
    let mut a = acked;
    (c.s.grow_prologue(&mut a) != 0).then_some(a)
}
pub fn half_cwnd(c: &Conn) -> u32 {
    c.s.half_cwnd()
}
