//! Contract: CPU time of this process (getrusage RUSAGE_SELF), for the self-accounting
//! every part writes at exit (engine.json, link.json, trace.json).

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    /// Peak resident set size, KiB.
    pub max_rss_kib: u64,
}

/// User and system CPU seconds and peak RSS of this process so far.
pub fn process_usage() -> Usage {
    // SAFETY: rusage is plain integers, valid all-zero.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes one rusage into `ru`.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Usage { user_s: s(ru.ru_utime), sys_s: s(ru.ru_stime), max_rss_kib: ru.ru_maxrss as u64 }
}
