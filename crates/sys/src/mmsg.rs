//! Contract: many datagrams per system call. `RecvBatch::recv` is one recvmmsg(2) into
//! the batch's buffers, with each one's length, truncation and SO_TIMESTAMPNS arrival
//! time; `SendBatch::send` is one sendmmsg(2) of a run of frames. The message headers
//! and I/O vectors are rebuilt before every call from buffers the batch holds (receive)
//! or borrows for the call (send), and kept only as reused allocations: no pointer in
//! them is read after the call returns, so a batch may move between threads.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Room for the control messages of one datagram (a SCM_TIMESTAMPNS is 32 bytes);
/// u64 for the alignment cmsghdr needs.
type Ctrl = [u64; 8];

fn empty_msg() -> libc::mmsghdr {
    libc::mmsghdr {
        msg_hdr: libc::msghdr {
            msg_name: std::ptr::null_mut(),
            msg_namelen: 0,
            msg_iov: std::ptr::null_mut(),
            msg_iovlen: 0,
            msg_control: std::ptr::null_mut(),
            msg_controllen: 0,
            msg_flags: 0,
        },
        msg_len: 0,
    }
}

fn empty_iov() -> libc::iovec {
    libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }
}

/// Receive buffers and the headers of one recvmmsg call.
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    ctrl: Vec<Ctrl>,
    msgs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    /// Datagrams the last `recv` returned.
    got: usize,
}

// SAFETY: the raw pointers in `msgs`/`iovs` point into `bufs`/`ctrl`, are rebuilt
// before every recvmmsg and are never dereferenced by Rust code; the batch owns
// everything they point to.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    /// A batch of `n` datagrams; every slot starts without a buffer (see `buf_mut`).
    pub fn new(n: usize) -> RecvBatch {
        RecvBatch {
            bufs: (0..n).map(|_| Vec::new()).collect(),
            ctrl: vec![[0; 8]; n],
            msgs: (0..n).map(|_| empty_msg()).collect(),
            iovs: (0..n).map(|_| empty_iov()).collect(),
            got: 0,
        }
    }

    /// Slots of the batch.
    pub fn slots(&self) -> usize {
        self.bufs.len()
    }

    /// Slot `i`'s buffer: `recv` receives into its capacity (its contents are dropped
    /// first). Give a slot a buffer with room for the largest datagram.
    pub fn buf_mut(&mut self, i: usize) -> &mut Vec<u8> {
        &mut self.bufs[i]
    }

    /// One recvmmsg(2) with `flags` (MSG_DONTWAIT, ...): each slot receives up to
    /// `max_len` bytes (less if its buffer holds less), into the leading slots that have
    /// a buffer. Returns how many datagrams came; slots `0..n` then hold them. EAGAIN and
    /// EINTR are 0.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, max_len: usize, flags: libc::c_int) -> io::Result<usize> {
        self.got = 0;
        // a slot without room would take a datagram and keep none of it
        let n = self.bufs.iter().take_while(|b| b.capacity() > 0).count();
        if n == 0 || max_len == 0 {
            return Ok(0);
        }
        for i in 0..n {
            let b = &mut self.bufs[i];
            b.clear();
            self.iovs[i] = libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.capacity().min(max_len) };
        }
        for i in 0..n {
            let h = &mut self.msgs[i];
            *h = empty_msg();
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = self.ctrl[i].as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = std::mem::size_of::<Ctrl>();
        }
        // MSG_TRUNC in the flags would make msg_len the datagram's full length, longer
        // than what was written: never passed.
        let flags = flags & !libc::MSG_TRUNC;
        // SAFETY: each header points to one iovec into a live buffer's capacity and to
        // its own control buffer, with their lengths; the kernel writes only there and
        // into the headers, at most `n` of them.
        let r = unsafe { libc::recvmmsg(fd.as_raw_fd(), self.msgs.as_mut_ptr(), n as u32, flags, std::ptr::null_mut()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        let got = (r as usize).min(n);
        for i in 0..got {
            let len = (self.msgs[i].msg_len as usize).min(self.iovs[i].iov_len);
            // SAFETY: without MSG_TRUNC in the flags the kernel reports the bytes it
            // copied into this buffer, at most iov_len <= capacity.
            unsafe { self.bufs[i].set_len(len) };
        }
        self.got = got;
        Ok(got)
    }

    /// Slot `i`'s bytes: after `recv`, datagram `i` (for `i` below what it returned).
    pub fn datagram(&self, i: usize) -> &[u8] {
        &self.bufs[i]
    }

    /// Datagram `i` of the last `recv` did not fit its buffer (MSG_TRUNC).
    pub fn truncated(&self, i: usize) -> bool {
        i < self.got && self.msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0
    }

    /// Take datagram `i`'s buffer (the slot is left without one).
    pub fn take(&mut self, i: usize) -> Vec<u8> {
        std::mem::take(&mut self.bufs[i])
    }

    /// The SO_TIMESTAMPNS receive time (CLOCK_REALTIME ns) of datagram `i` of the last
    /// `recv`, if the socket asked for one.
    pub fn timestamp_ns(&self, i: usize) -> Option<u64> {
        if i >= self.got {
            return None;
        }
        // A header over this slot's own control buffer, with the length the kernel
        // left (at most the buffer's size): the walk below never leaves the buffer.
        let mut h = empty_msg().msg_hdr;
        h.msg_control = self.ctrl[i].as_ptr() as *mut libc::c_void;
        h.msg_controllen = self.msgs[i].msg_hdr.msg_controllen.min(std::mem::size_of::<Ctrl>());
        // SAFETY: CMSG_LEN is arithmetic on its argument.
        let want = unsafe { libc::CMSG_LEN(std::mem::size_of::<libc::timespec>() as u32) } as usize;
        // SAFETY: CMSG_FIRSTHDR/NXTHDR only compute addresses inside
        // [msg_control, msg_control + msg_controllen) (or return null); a header is read
        // only when it lies inside, and its data only when cmsg_len says the timespec
        // is there.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS && (*c).cmsg_len >= want {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(&h, c);
            }
        }
        None
    }
}

/// The reused headers of sendmmsg calls.
#[derive(Default)]
pub struct SendBatch {
    msgs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
}

// SAFETY: the raw pointers left in the reused vectors point into frames borrowed for
// one `send` call only; they are cleared before the next call builds new ones and
// never dereferenced by Rust code.
unsafe impl Send for SendBatch {}

impl SendBatch {
    pub fn new() -> SendBatch {
        SendBatch::default()
    }

    /// One sendmmsg(2) of `frames` with `flags`: how many the kernel took (from the
    /// first), or the error of the first it refused.
    pub fn send<'a>(&mut self, fd: BorrowedFd<'_>, frames: impl Iterator<Item = &'a [u8]>, flags: libc::c_int) -> io::Result<usize> {
        self.iovs.clear();
        self.msgs.clear();
        for f in frames {
            // the kernel only reads through this pointer (send)
            self.iovs.push(libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() });
        }
        // headers after the vector is complete: it does not move any more
        for iov in self.iovs.iter_mut() {
            let mut m = empty_msg();
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            self.msgs.push(m);
        }
        let n = self.msgs.len().min(u32::MAX as usize) as u32;
        // SAFETY: each header points to one iovec over a frame borrowed for this call;
        // the kernel reads the frames and writes only msg_len of the `n` headers.
        let r = unsafe { libc::sendmmsg(fd.as_raw_fd(), self.msgs.as_mut_ptr(), n, flags) };
        self.iovs.clear();
        self.msgs.clear();
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sock::{bind, connect, local_addr, setsockopt, socket};
    use std::os::fd::AsFd;

    #[test]
    fn a_batch_of_datagrams_arrives_with_lengths_truncation_and_stamps() {
        let lo: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        let udp = || socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0).unwrap();
        let (a, b) = (udp(), udp());
        bind(b.as_fd(), &lo).unwrap();
        setsockopt(b.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1).unwrap();
        connect(a.as_fd(), &local_addr(b.as_fd()).unwrap()).unwrap();
        let frames: [&[u8]; 3] = [b"one", b"two-two", &[7u8; 100]];
        let mut tx = SendBatch::new();
        assert_eq!(tx.send(a.as_fd(), frames.iter().copied(), 0).unwrap(), 3);
        let mut rx = RecvBatch::new(4);
        for i in 0..rx.slots() {
            *rx.buf_mut(i) = Vec::with_capacity(64);
        }
        let real = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        let n = rx.recv(b.as_fd(), 50, libc::MSG_DONTWAIT).unwrap();
        assert_eq!(n, 3);
        assert_eq!(rx.take(0), b"one");
        assert_eq!(rx.take(1), b"two-two");
        assert!(rx.truncated(2) && !rx.truncated(1));
        assert_eq!(rx.take(2).len(), 50, "cut at max_len");
        let t = rx.timestamp_ns(1).expect("SO_TIMESTAMPNS");
        assert!(t.abs_diff(real) < 60_000_000_000, "a realtime stamp: {t} vs {real}");
        assert_eq!(rx.timestamp_ns(3), None, "slot 3 got nothing");
        assert_eq!(rx.recv(b.as_fd(), 50, libc::MSG_DONTWAIT).unwrap(), 0, "EAGAIN is none");
    }
}
