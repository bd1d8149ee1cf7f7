//! Contract: scheduling of the calling thread (the link's forwarding threads): real-time
//! priority, nice value, CPU pinning, and the kernel's RT budget. Best effort: each call
//! says whether the kernel agreed, none fails the caller.

/// Run the calling thread under SCHED_FIFO at `prio` (false if refused).
pub fn set_fifo(prio: i32) -> bool {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: `p` is read during the call.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Run the calling thread under the ordinary scheduler (SCHED_OTHER). It keeps the nice
/// value set earlier with `set_nice` (the kernel carries it across policy changes).
pub fn set_other() -> bool {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is read during the call.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) == 0 }
}

/// Nice value of the calling thread (it matters only while it runs SCHED_OTHER).
pub fn set_nice(nice: i32) -> bool {
    // SAFETY: setpriority takes numbers, no pointer.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) == 0 }
}

/// The kernel's budget for RT tasks: (sched_rt_runtime_us, sched_rt_period_us), None
/// when unlimited (runtime -1) or unreadable.
pub fn rt_budget_us() -> Option<(u64, u64)> {
    let rd = |f: &str| -> Option<i64> { std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).ok()?.trim().parse().ok() };
    let (r, p) = (rd("sched_rt_runtime_us")?, rd("sched_rt_period_us")?);
    (r >= 0 && p > 0 && r < p).then_some((r as u64, p as u64))
}

/// Pin the calling thread to `cpu` (false if refused, e.g. the CPU is not in this
/// process's cpuset).
pub fn pin_to_cpu(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: cpu_set_t is a bit array, valid all-zero (the empty set).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked): the bit is inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the kernel reads `size_of::<cpu_set_t>()` bytes of `set`.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}
