//! Contract: stop signals as a file descriptor. `SignalFd::new` blocks SIGINT and
//! SIGTERM (`SignalFd::with` a chosen set) for the calling thread and the threads it
//! starts later, and returns a non-blocking signalfd that becomes readable when one
//! arrives: a part stops in an orderly way (flush, report, `DONE`) instead of dying.
//! Create it first, before other threads exist, so no signal is delivered the default
//! way. `send` sends a signal to a process; `ignore_sigpipe` turns SIGPIPE into EPIPE.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::fd::{self, owned, Outcome};

pub struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// SIGINT and SIGTERM.
    pub fn new() -> io::Result<SignalFd> {
        SignalFd::with(&[libc::SIGINT, libc::SIGTERM])
    }

    /// The signals `sigs`, blocked and read through the fd.
    pub fn with(sigs: &[libc::c_int]) -> io::Result<SignalFd> {
        // SAFETY: an all-zero sigset_t is a valid value to start from (sigemptyset
        // then makes it the empty set).
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t for the duration of these calls;
        // pthread_sigmask and signalfd only read it (the old mask is not asked for).
        unsafe {
            libc::sigemptyset(&mut set);
            for &s in sigs {
                if libc::sigaddset(&mut set, s) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            // pthread_sigmask returns the error number instead of setting errno
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            let fd = owned(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC))?;
            Ok(SignalFd { fd })
        }
    }

    /// True if a signal is pending (consumes it).
    pub fn pending(&self) -> bool {
        pending_on(self.fd.as_fd())
    }
}

impl AsFd for SignalFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// True if a signal is pending on signalfd `fd` (consumes it); for threads that share
/// (a duplicate of) the fd of a `SignalFd` owned elsewhere.
pub fn pending_on(fd: BorrowedFd<'_>) -> bool {
    // one struct signalfd_siginfo is 128 bytes
    matches!(fd::read(fd, &mut [0u8; 128]), Ok(Outcome::Done(_)))
}

/// Send signal `sig` to process `pid`.
pub fn send(pid: u32, sig: libc::c_int) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill takes no pointers.
    crate::cvt(unsafe { libc::kill(pid, sig) }).map(|_| ())
}

/// Ignore SIGPIPE: a write to a closed pipe or socket then fails with EPIPE instead of
/// killing the process (sockets use MSG_NOSIGNAL anyway; this covers stdout).
pub fn ignore_sigpipe() {
    // SAFETY: SIG_IGN is a valid disposition; no handler code runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_signal_shows_on_the_fd_once() {
        // SIGUSR2, on this test's own thread: the signal is sent to the thread itself
        // (tgkill), since other test threads do not block it.
        let s = SignalFd::with(&[libc::SIGUSR2]).unwrap();
        assert!(!s.pending());
        // SAFETY: test only; raise sends to the calling thread, which blocks SIGUSR2.
        assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
        assert!(s.pending());
        assert!(!s.pending(), "consumed");
    }
}
