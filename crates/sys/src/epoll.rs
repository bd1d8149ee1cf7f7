//! Contract: one epoll instance. Each registered fd carries a caller-chosen `u64`
//! token that comes back with its events; `wait` fills a reused vector with
//! (token, events) pairs and treats EINTR as "no events". Closed on drop.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::cvt;
use crate::fd::owned;

pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
pub const EV_RDHUP: u32 = libc::EPOLLRDHUP as u32;
pub const EV_ET: u32 = libc::EPOLLET as u32;

pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// An epoll instance that reports up to `max_events` ready fds per `wait`.
    pub fn new(max_events: usize) -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes no pointers and returns a new fd.
        let fd = unsafe { owned(libc::epoll_create1(libc::EPOLL_CLOEXEC)) }?;
        Ok(Epoll { fd, events: vec![libc::epoll_event { events: 0, u64: 0 }; max_events.max(1)] })
    }

    fn ctl(&self, op: libc::c_int, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid epoll_event the kernel only reads during the call.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) }).map(|_| ())
    }

    pub fn add(&self, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// Change what a registered fd is watched for (0: nothing; it stays registered).
    pub fn modify(&self, fd: BorrowedFd<'_>, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    /// Stop watching `fd` (closing an fd removes it as well).
    pub fn del(&self, fd: BorrowedFd<'_>) {
        let _ = self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0);
    }

    /// Wait up to `timeout_ms` (-1: until something is ready) and put the (token, events)
    /// pairs into `out` (cleared first). A signal interrupting the wait is no error.
    pub fn wait(&mut self, timeout_ms: i32, out: &mut Vec<(u64, u32)>) -> io::Result<()> {
        out.clear();
        let cap = self.events.len().min(i32::MAX as usize) as i32;
        // SAFETY: the kernel writes at most `cap` events into `self.events`, which holds
        // that many.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), self.events.as_mut_ptr(), cap, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) { Ok(()) } else { Err(e) };
        }
        out.extend(self.events[..n as usize].iter().map(|ev| (ev.u64, ev.events)));
        Ok(())
    }
}

impl AsFd for Epoll {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::pipe;
    use std::io::Write;

    #[test]
    fn a_readable_pipe_comes_back_with_its_token() {
        let (r, w) = pipe().unwrap();
        let mut ep = Epoll::new(4).unwrap();
        ep.add(r.as_fd(), EV_IN, 77).unwrap();
        let mut out = Vec::new();
        ep.wait(0, &mut out).unwrap();
        assert!(out.is_empty());
        let mut w = std::fs::File::from(w);
        w.write_all(b"x").unwrap();
        ep.wait(1000, &mut out).unwrap();
        assert_eq!(out, vec![(77, EV_IN)]);
        ep.modify(r.as_fd(), 0, 77).unwrap();
        ep.wait(0, &mut out).unwrap();
        assert!(out.is_empty(), "not watched any more");
    }
}
