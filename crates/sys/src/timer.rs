//! Contract: a timerfd on CLOCK_MONOTONIC armed for absolute deadlines (ns); it becomes
//! readable (for epoll) when the deadline passes. Non-blocking, closed on drop.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::clock::ns_timespec;
use crate::cvt;
use crate::fd::{self, owned};

pub struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: timerfd_create takes no pointers and returns a new fd.
        let fd = unsafe { owned(libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)) }?;
        Ok(TimerFd { fd })
    }

    /// Fire once at absolute CLOCK_MONOTONIC time `at_ns` (a past time fires at once).
    pub fn arm_at(&self, at_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: ns_timespec(0),
            it_value: ns_timespec(at_ns.max(1)), // an it_value of 0 would disarm
        };
        // SAFETY: `spec` is read during the call; the old value is not asked for (null).
        cvt(unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) })
            .map(|_| ())
    }

    /// Consume the expiry count, so the fd is not readable until it fires again.
    pub fn drain(&self) {
        let _ = fd::read(self.fd.as_fd(), &mut [0u8; 8]);
    }
}

impl AsFd for TimerFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now_ns;
    use crate::epoll::{Epoll, EV_IN};

    #[test]
    fn fires_at_the_absolute_deadline() {
        let t = TimerFd::new().unwrap();
        let mut ep = Epoll::new(1).unwrap();
        ep.add(t.as_fd(), EV_IN, 1).unwrap();
        let at = now_ns() + 2_000_000;
        t.arm_at(at).unwrap();
        let mut out = Vec::new();
        while out.is_empty() {
            ep.wait(1000, &mut out).unwrap();
        }
        assert!(now_ns() >= at);
        t.drain();
        ep.wait(0, &mut out).unwrap();
        assert!(out.is_empty());
    }
}
