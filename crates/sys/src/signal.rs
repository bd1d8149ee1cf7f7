//! Contract: SIGINT and SIGTERM as a file descriptor. `SignalFd::new` blocks both
//! signals for the calling thread (and the threads it starts later) and returns a
//! non-blocking signalfd that becomes readable when one arrives: a part stops in an
//! orderly way (flush, report, `DONE`) instead of dying. Create it first, before other
//! threads exist, so no signal is delivered the default way.

use std::io;
use std::os::fd::RawFd;

use crate::cvt;

pub struct SignalFd {
    fd: RawFd,
}

impl SignalFd {
    pub fn new() -> io::Result<SignalFd> {
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            // pthread_sigmask returns the error number instead of setting errno
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            let fd = cvt(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC))?;
            Ok(SignalFd { fd })
        }
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// True if a signal is pending (consumes it).
    pub fn pending(&self) -> bool {
        pending_on(self.fd)
    }
}

/// True if a signal is pending on signalfd `fd` (consumes it); for threads that share
/// the fd of a `SignalFd` owned elsewhere.
pub fn pending_on(fd: RawFd) -> bool {
    let mut b = [0u8; 128];
    unsafe { libc::read(fd, b.as_mut_ptr() as *mut libc::c_void, b.len()) > 0 }
}

/// Ignore SIGPIPE: a write to a closed pipe or socket then fails with EPIPE instead of
/// killing the process (sockets use MSG_NOSIGNAL anyway; this covers stdout).
pub fn ignore_sigpipe() {
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

impl Drop for SignalFd {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}
