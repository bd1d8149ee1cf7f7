//! Contract: the flow engine's sockets: non-blocking TCP and UDP sockets with the
//! congestion control set and read back, connect, listen, accept, send/recv, TCP_INFO,
//! and datagrams to and from a peer address passed back unchanged. Each function
//! decides what the engine wants of one or two calls (which flags, which errors mean
//! "not now"); the calls themselves are ccarena-sys's `sock`, as are clocks, epoll,
//! timerfd and signals.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use ccarena_sys::sock::{self, setsockopt};

pub use ccarena_sys::fd::Outcome;
pub use ccarena_sys::sock::{local_addr, peer_addr, RawAddr};

fn family(a: &SocketAddr) -> libc::c_int {
    if a.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    }
}

// ---- TCP sockets --------------------------------------------------------------------

pub fn tcp_socket(for_addr: &SocketAddr) -> io::Result<OwnedFd> {
    sock::socket(family(for_addr), libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
}

/// The name goes without a NUL: the kernel takes the length.
pub fn set_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes())
}

/// The congestion control the kernel says this socket uses.
pub fn get_congestion(fd: BorrowedFd<'_>) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let n = sock::getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut buf)?;
    let s = &buf[..n];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Ok(String::from_utf8_lossy(&s[..end]).into_owned())
}

pub fn set_nodelay(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &(on as libc::c_int))
}

/// Non-blocking connect: Ok(()) when started or done; completion shows as EPOLLOUT.
pub fn connect(fd: BorrowedFd<'_>, to: &SocketAddr) -> io::Result<()> {
    match sock::connect(fd, to) {
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(()),
        r => r,
    }
}

pub fn so_error(fd: BorrowedFd<'_>) -> io::Result<Option<io::Error>> {
    let (v, _): (libc::c_int, usize) = sock::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
    Ok(if v == 0 { None } else { Some(io::Error::from_raw_os_error(v)) })
}

pub fn listen(addr: &SocketAddr, cc: Option<&str>) -> io::Result<OwnedFd> {
    let fd = tcp_socket(addr)?;
    setsockopt(fd.as_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, &1)?;
    if let Some(c) = cc {
        set_congestion(fd.as_fd(), c)?;
    }
    sock::bind(fd.as_fd(), addr)?;
    sock::listen(fd.as_fd(), 1024)?;
    Ok(fd)
}

/// Ok(None) when no connection is waiting.
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    loop {
        match sock::accept(fd, libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) {
            Ok(c) => return Ok(Some(c)),
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(None),
                // The peer gave up before we got to it; try the next one.
                Some(libc::ECONNABORTED) | Some(libc::EINTR) => continue,
                _ => return Err(e),
            },
        }
    }
}

pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<Outcome> {
    sock::send(fd, buf, libc::MSG_NOSIGNAL)
}

pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Outcome> {
    sock::recv(fd, buf, 0)
}

pub fn shutdown_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    sock::shutdown(fd, libc::SHUT_WR)
}

/// Raw `struct tcp_info` bytes; returns how many the kernel filled in.
pub fn tcp_info_raw(fd: BorrowedFd<'_>, buf: &mut [u8; 256]) -> io::Result<usize> {
    sock::getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf)
}

/// asm-generic/socket.h (the libc crate does not name it)
const SO_MEMINFO: libc::c_int = 55;

/// SO_MEMINFO's slots (`sk_rmem_alloc`, `sk_rcvbuf`, ..., `sk_sndbuf`, `sk_wmem_queued`,
/// ...; include/uapi/linux/sock_diag.h); returns how many the kernel filled in.
pub fn sk_meminfo(fd: BorrowedFd<'_>, buf: &mut [u32; 16]) -> io::Result<usize> {
    let mut raw = [0u8; 64];
    let n = sock::getsockopt_bytes(fd, libc::SOL_SOCKET, SO_MEMINFO, &mut raw)?;
    for (v, b) in buf.iter_mut().zip(raw.chunks_exact(4)) {
        *v = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(n / 4)
}

// ---- UDP ----------------------------------------------------------------------------

pub fn udp_socket(for_addr: &SocketAddr) -> io::Result<OwnedFd> {
    sock::socket(family(for_addr), libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
}

/// A non-blocking UDP socket bound to `addr`.
pub fn udp_bind(addr: &SocketAddr) -> io::Result<OwnedFd> {
    let fd = udp_socket(addr)?;
    sock::bind(fd.as_fd(), addr)?;
    Ok(fd)
}

/// Ok(None) when nothing is waiting.
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8], from: &mut RawAddr) -> io::Result<Option<usize>> {
    Ok(match sock::recv_from(fd, buf, from)? {
        Outcome::Done(n) => Some(n),
        Outcome::WouldBlock | Outcome::Eof => None,
    })
}

pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], to: &RawAddr) -> io::Result<usize> {
    sock::send_to(fd, buf, to)
}
