//! ccarena-sys: the system calls the ccarena binaries make, each wrapped once, and the
//! only crate of the workspace with unsafe code (docs/dev/libraries.md, "Unsafe code").
//!
//! Contract: every wrapper is thin (one or two calls, no policy), safe to call with any
//! argument, and returns `std::io::Result` where the kernel can refuse; naming the
//! attempt and the object is left to the caller, whose per-operation error type turns
//! it into one line (`<attempt>: <object>: <cause>`). File descriptors are std's
//! `OwnedFd` (closed on drop) and `BorrowedFd`. Each `unsafe` block carries a `SAFETY:`
//! comment saying why it is sound (clippy's `undocumented_unsafe_blocks` is denied);
//! memory shared with the kernel (packet rings, AF_XDP) is handed out only through
//! views whose soundness the module's contract explains. Users: ccarena-flow,
//! ccarena-link, ccarena-trace and ccarena-cc.
//!
//! Modules: `clock` (CLOCK_MONOTONIC ns, the REALTIME offset, sleeping, timer slack),
//! `cpu` (getrusage), `epoll`, `fd` (reads, pipes, a non-blocking `Outcome`), `rand`
//! (SplitMix64), `parent` (die with the parent process), `sched` (SCHED_FIFO, nice, CPU
//! pinning), `signal` (signalfd for stop signals, kill), `stdio` (lifecycle lines on
//! stdout), `timer` (absolute timerfd), `sock` (sockets: options, TCP/UDP calls,
//! interfaces), `mmsg` (recvmmsg/sendmmsg batches), `packet_ring` (the TPACKET_V2
//! receive ring), `xdp` (an AF_XDP socket, its UMEM and rings), `ns` (network namespace
//! files), `bpf` (feature `bpf`: BPF calls libbpf-rs has no safe form of); `mmap`
//! (private: an owned mapping).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod clock;
pub mod cpu;
pub mod epoll;
pub mod fd;
mod mmap;
pub mod mmsg;
pub mod ns;
pub mod packet_ring;
pub mod parent;
pub mod rand;
pub mod sched;
pub mod signal;
pub mod sock;
pub mod stdio;
pub mod timer;
pub mod xdp;

#[cfg(feature = "bpf")]
pub mod bpf;

use std::io;

/// `Ok(rc)` for a non-negative return code, else the thread's errno.
pub fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}
