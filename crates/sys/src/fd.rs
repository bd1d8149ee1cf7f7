//! Contract: reading file descriptors without blocking, pipes, and the three outcomes
//! of a non-blocking read or write (`Outcome`), shared by sockets, pipes and signalfds.
//! Descriptors are std's `OwnedFd` (closed on drop) and `BorrowedFd` (used, not owned).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::cvt;

/// Outcome of a non-blocking read or write that did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done(usize),
    /// EAGAIN or EINTR: nothing now, try again when the fd is ready.
    WouldBlock,
    /// End of file (a read of 0 bytes).
    Eof,
}

/// Map a read/recv/send return value: `n` bytes, would-block, end of file or an error.
pub fn io_outcome(r: isize) -> io::Result<Outcome> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(Outcome::WouldBlock),
            _ => Err(e),
        };
    }
    Ok(if r == 0 { Outcome::Eof } else { Outcome::Done(r as usize) })
}

/// read(2) into `buf`.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Outcome> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    io_outcome(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// A non-blocking, close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut p = [0; 2];
    // SAFETY: the kernel writes two fds into `p`.
    cvt(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: on success both are new fds that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) })
}

/// Take ownership of the fd a system call just returned (`rc`, or the errno if < 0).
///
/// # Safety
/// `rc` is the return value of a call that creates a descriptor (socket, accept4,
/// signalfd, timerfd_create, ...), so a non-negative `rc` is an fd nothing else owns.
pub(crate) unsafe fn owned(rc: libc::c_int) -> io::Result<OwnedFd> {
    let fd = cvt(rc)?;
    // SAFETY: the caller guarantees `fd` is new and unowned.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
