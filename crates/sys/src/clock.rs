//! Contract: the clocks every part shares. Timestamps are CLOCK_MONOTONIC ns: all
//! network namespaces share the one kernel clock, so records of different hosts line up.

/// ns of a `timespec`.
pub fn timespec_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A `timespec` for `ns` (absolute or relative).
pub fn ns_timespec(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as i64, tv_nsec: (ns % 1_000_000_000) as i64 }
}

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the kernel writes one timespec into `ts`.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_ns(&ts)
}

/// CLOCK_MONOTONIC in ns (the clock shared by all namespaces).
pub fn now_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// (CLOCK_MONOTONIC now, CLOCK_REALTIME − CLOCK_MONOTONIC) in ns.
///
/// The REALTIME read is bracketed by two MONOTONIC reads and the pair with the tightest
/// bracket of a few tries is kept, so a preemption between the reads cannot skew the
/// offset (which maps kernel receive timestamps onto CLOCK_MONOTONIC).
pub fn mono_and_real_offset() -> (u64, u64) {
    let mut best = (u64::MAX, 0u64, 0u64); // (bracket width, mono midpoint, real)
    for _ in 0..5 {
        let m1 = read(libc::CLOCK_MONOTONIC);
        let r = read(libc::CLOCK_REALTIME);
        let m2 = read(libc::CLOCK_MONOTONIC);
        let w = m2.saturating_sub(m1);
        if w < best.0 {
            best = (w, m1 + w / 2, r);
        }
        if w < 2_000 {
            break;
        }
    }
    (best.1, best.2.wrapping_sub(best.1))
}

/// Sleep for `ns` (relative, CLOCK_MONOTONIC).
pub fn nap(ns: u64) {
    let ts = ns_timespec(ns);
    // SAFETY: `ts` is read during the call; the remainder is not asked for (null).
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// Timer slack of the calling thread (default 50 µs): 1 ns lets hrtimers (timerfd)
/// fire when they are set.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes a number, no pointer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_does_not_go_back_and_the_offset_is_the_epoch_distance() {
        let a = now_ns();
        let (m, off) = mono_and_real_offset();
        assert!(m >= a && now_ns() >= m);
        // REALTIME is seconds since 1970, MONOTONIC since boot: the offset is years.
        assert!(off > 1_000_000_000 * 3600 * 24 * 365);
        assert_eq!(timespec_ns(&ns_timespec(12_345_678_901)), 12_345_678_901);
    }
}
