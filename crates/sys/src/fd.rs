//! Contract: reading and closing raw file descriptors, and the three outcomes of a
//! non-blocking read or write (`Outcome`), shared by sockets, pipes and signalfds.

use std::io;
use std::os::fd::RawFd;

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

pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Outcome> {
    io_outcome(unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) })
}

pub fn close(fd: RawFd) {
    unsafe { libc::close(fd) };
}
