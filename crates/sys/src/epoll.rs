//! Contract: one epoll instance. Each registered fd carries a caller-chosen `u64`
//! token that comes back with its events; `wait` fills a reused vector with
//! (token, events) pairs and treats EINTR as "no events". Closed on drop.

use std::io;
use std::os::fd::RawFd;

use crate::cvt;

pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
pub const EV_RDHUP: u32 = libc::EPOLLRDHUP as u32;
pub const EV_ET: u32 = libc::EPOLLET as u32;

pub struct Epoll {
    fd: RawFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// An epoll instance that reports up to `max_events` ready fds per `wait`.
    pub fn new(max_events: usize) -> io::Result<Epoll> {
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll { fd, events: vec![libc::epoll_event { events: 0, u64: 0 }; max_events.max(1)] })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        cvt(unsafe { libc::epoll_ctl(self.fd, op, fd, &mut ev) }).map(|_| ())
    }

    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// Change what a registered fd is watched for (0: nothing; it stays registered).
    pub fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    /// Stop watching `fd` (closing an fd removes it as well).
    pub fn del(&self, fd: RawFd) {
        let _ = self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0);
    }

    /// Wait up to `timeout_ms` (-1: until something is ready) and put the (token, events)
    /// pairs into `out` (cleared first). A signal interrupting the wait is no error.
    pub fn wait(&mut self, timeout_ms: i32, out: &mut Vec<(u64, u32)>) -> io::Result<()> {
        out.clear();
        let n = unsafe { libc::epoll_wait(self.fd, self.events.as_mut_ptr(), self.events.len() as i32, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) { Ok(()) } else { Err(e) };
        }
        out.extend(self.events[..n as usize].iter().map(|ev| (ev.u64, ev.events)));
        Ok(())
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readable_pipe_comes_back_with_its_token() {
        let mut p = [0; 2];
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }, 0);
        let mut ep = Epoll::new(4).unwrap();
        ep.add(p[0], EV_IN, 77).unwrap();
        let mut out = Vec::new();
        ep.wait(0, &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(unsafe { libc::write(p[1], b"x".as_ptr() as *const libc::c_void, 1) }, 1);
        ep.wait(1000, &mut out).unwrap();
        assert_eq!(out, vec![(77, EV_IN)]);
        ep.modify(p[0], 0, 77).unwrap();
        ep.wait(0, &mut out).unwrap();
        assert!(out.is_empty(), "not watched any more");
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
        }
    }
}
