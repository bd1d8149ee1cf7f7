//! ccarena-sys: the system calls the ccarena binaries share, each wrapped once.
//!
//! Contract: every wrapper is thin (one or two calls, no policy), returns
//! `std::io::Result` where the kernel can refuse, and leaves naming the attempt and the
//! object to the caller, whose per-operation error type turns it into one line
//! (`<attempt>: <object>: <cause>`). Users: ccarena-flow, ccarena-link (shell and core)
//! and ccarena-trace. Socket families stay with their one user (TCP/UDP in
//! ccarena-flow, AF_PACKET and AF_XDP in ccarena-link's shell).
//!
//! Modules: `clock` (CLOCK_MONOTONIC ns, the REALTIME offset, sleeping, timer slack),
//! `cpu` (getrusage), `epoll`, `fd` (read/close, a non-blocking `Outcome`), `rand` (SplitMix64),
//! `parent` (die with the parent process), `sched` (SCHED_FIFO, nice, CPU pinning),
//! `signal` (signalfd for SIGINT/SIGTERM),
//! `stdio` (lifecycle lines on stdout), `timer` (absolute timerfd).

pub mod clock;
pub mod cpu;
pub mod epoll;
pub mod fd;
pub mod parent;
pub mod rand;
pub mod sched;
pub mod signal;
pub mod stdio;
pub mod timer;

use std::io;

/// `Ok(rc)` for a non-negative return code, else the thread's errno.
pub fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}
