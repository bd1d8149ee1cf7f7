//! Contract (feature `bpf`): the BPF calls libbpf-rs has no safe form of, over libbpf's
//! own C functions: run-time statistics of every program while an fd is open
//! (BPF_ENABLE_STATS) and a program's counts; attaching a loaded program to an
//! interface's tcx hook, or to its XDP hook in native mode only, as a BPF link (which
//! detaches when its fd closes, also when the process dies).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use libbpf_sys as sys;

/// libbpf returns -errno.
fn owned_or_errno(rc: libc::c_int) -> io::Result<OwnedFd> {
    if rc < 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    // SAFETY: a non-negative result of the calls below is a new fd nothing else owns.
    unsafe { crate::fd::owned(rc) }
}

/// BPF_ENABLE_STATS(BPF_STATS_RUN_TIME): the kernel counts run_cnt and run_time_ns of
/// every program while the returned fd is open.
pub fn enable_run_time_stats() -> io::Result<OwnedFd> {
    // SAFETY: bpf_enable_stats takes a number and returns a new fd or -errno.
    owned_or_errno(unsafe { sys::bpf_enable_stats(sys::BPF_STATS_RUN_TIME) })
}

/// Which tcx hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tcx {
    Ingress,
    Egress,
}

/// Attach program `prog` (a loaded tcx program's fd) to hook `at` of interface
/// `ifindex` (of the calling thread's network namespace); the link is the returned fd.
pub fn attach_tcx(prog: BorrowedFd<'_>, ifindex: u32, at: Tcx) -> io::Result<OwnedFd> {
    let ty = match at {
        Tcx::Ingress => sys::BPF_TCX_INGRESS,
        Tcx::Egress => sys::BPF_TCX_EGRESS,
    };
    let target = libc::c_int::try_from(ifindex).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: fds and numbers only; null options are libbpf's defaults (append, no
    // relative program); the result is a new link fd or -errno.
    owned_or_errno(unsafe { sys::bpf_link_create(prog.as_raw_fd(), target, ty, std::ptr::null()) })
}

/// What the kernel counted for a program while run-time statistics were on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunStats {
    pub run_cnt: u64,
    pub run_time_ns: u64,
}

/// The run count and time of program `prog` (BPF_OBJ_GET_INFO_BY_FD).
pub fn run_stats(prog: BorrowedFd<'_>) -> io::Result<RunStats> {
    let mut info = sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<sys::bpf_prog_info>() as u32;
    // SAFETY: the kernel writes at most `len` bytes into `info`; its array pointers are
    // null (zero counts), so it fills no array.
    let rc = unsafe { sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if rc < 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    Ok(RunStats { run_cnt: info.run_cnt, run_time_ns: info.run_time_ns })
}

/// Attach XDP program `prog` (a loaded program's fd) to interface `ifindex` in native
/// (driver) mode only, as a BPF link (the returned fd). A device without native XDP
/// refuses (EOPNOTSUPP) instead of falling back to generic XDP, which libbpf's
/// attach call without flags would do.
pub fn attach_xdp_native(prog: BorrowedFd<'_>, ifindex: u32) -> io::Result<OwnedFd> {
    let target = libc::c_int::try_from(ifindex).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let opts = sys::bpf_link_create_opts {
        sz: std::mem::size_of::<sys::bpf_link_create_opts>() as sys::size_t,
        flags: sys::XDP_FLAGS_DRV_MODE,
        ..Default::default()
    };
    // SAFETY: fds, numbers and `opts`, which libbpf reads during the call (its size
    // field says which fields it has); the result is a new link fd or -errno.
    owned_or_errno(unsafe { sys::bpf_link_create(prog.as_raw_fd(), target, sys::BPF_XDP, &opts) })
}
