//! Contract: the flow engine's sockets, the thin unsafe edge to the kernel for TCP and
//! UDP: non-blocking sockets (congestion control set and read back), connect, listen,
//! accept, send/recv, TCP_INFO, and datagrams to and from a peer address passed back
//! unchanged. Every function wraps one or two calls, returns `io::Result`, and owns no
//! policy. Clocks, epoll, timerfd and signals come from ccarena-sys; nothing else in the
//! crate calls `libc` directly except the sampler's struct-offset test.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

use ccarena_sys::cvt;
use ccarena_sys::fd::io_outcome;
pub use ccarena_sys::fd::{close, Outcome};

// ---- socket addresses ---------------------------------------------------------------

fn to_sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            (ss, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (ss, std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)), u16::from_be(sin6.sin6_port)))
        }
        _ => None,
    }
}

pub fn local_addr(fd: RawFd) -> Option<SocketAddr> {
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let r = unsafe { libc::getsockname(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut len) };
    if r < 0 {
        None
    } else {
        from_sockaddr(&ss)
    }
}

pub fn peer_addr(fd: RawFd) -> Option<SocketAddr> {
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let r = unsafe { libc::getpeername(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut len) };
    if r < 0 {
        None
    } else {
        from_sockaddr(&ss)
    }
}

// ---- TCP sockets --------------------------------------------------------------------

pub fn tcp_socket(for_addr: &SocketAddr) -> io::Result<RawFd> {
    let af = if for_addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    cvt(unsafe { libc::socket(af, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })
}

/// setsockopt with the option value `v` passed as its bytes: a `c_int` flag, or a name
/// (`&[u8]`, without a NUL: the kernel takes the length).
fn setsockopt<T: ?Sized>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &T) -> io::Result<()> {
    cvt(unsafe {
        libc::setsockopt(fd, level, opt, v as *const T as *const libc::c_void, std::mem::size_of_val(v) as libc::socklen_t)
    })
    .map(|_| ())
}

pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes())
}

/// The congestion control the kernel says this socket uses.
pub fn get_congestion(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    cvt(unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr() as *mut libc::c_void, &mut len)
    })?;
    let s = &buf[..len as usize];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Ok(String::from_utf8_lossy(&s[..end]).into_owned())
}

pub fn set_nodelay(fd: RawFd, on: bool) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &(on as libc::c_int))
}

/// Non-blocking connect: Ok(()) when started or done; completion shows as EPOLLOUT.
pub fn connect(fd: RawFd, to: &SocketAddr) -> io::Result<()> {
    let (ss, len) = to_sockaddr(to);
    let r = unsafe { libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINPROGRESS) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

pub fn so_error(fd: RawFd) -> io::Result<Option<io::Error>> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    cvt(unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut v as *mut _ as *mut libc::c_void, &mut len) })?;
    Ok(if v == 0 { None } else { Some(io::Error::from_raw_os_error(v)) })
}

pub fn listen(addr: &SocketAddr, cc: Option<&str>) -> io::Result<RawFd> {
    let fd = tcp_socket(addr)?;
    let r = (|| {
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &(1 as libc::c_int))?;
        if let Some(c) = cc {
            set_congestion(fd, c)?;
        }
        let (ss, len) = to_sockaddr(addr);
        cvt(unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) })?;
        cvt(unsafe { libc::listen(fd, 1024) })?;
        Ok(())
    })();
    match r {
        Ok(()) => Ok(fd),
        Err(e) => {
            close(fd);
            Err(e)
        }
    }
}

/// Ok(None) when no connection is waiting.
pub fn accept(fd: RawFd) -> io::Result<Option<RawFd>> {
    let r = unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(None),
            // The peer gave up before we got to it; try the next one.
            Some(libc::ECONNABORTED) | Some(libc::EINTR) => accept(fd),
            _ => Err(e),
        };
    }
    Ok(Some(r))
}

pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<Outcome> {
    let r = unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), libc::MSG_NOSIGNAL) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(Outcome::WouldBlock),
            _ => Err(e),
        };
    }
    Ok(Outcome::Done(r as usize))
}

pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<Outcome> {
    io_outcome(unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) })
}

pub fn shutdown_write(fd: RawFd) -> io::Result<()> {
    cvt(unsafe { libc::shutdown(fd, libc::SHUT_WR) }).map(|_| ())
}

/// Raw `struct tcp_info` bytes; returns how many the kernel filled in.
pub fn tcp_info_raw(fd: RawFd, buf: &mut [u8; 256]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    cvt(unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr() as *mut libc::c_void, &mut len) })?;
    Ok(len as usize)
}

/// asm-generic/socket.h (the libc crate does not name it)
const SO_MEMINFO: libc::c_int = 55;

/// SO_MEMINFO's slots (`sk_rmem_alloc`, `sk_rcvbuf`, ..., `sk_sndbuf`, `sk_wmem_queued`,
/// ...; include/uapi/linux/sock_diag.h); returns how many the kernel filled in.
pub fn sk_meminfo(fd: RawFd, buf: &mut [u32; 16]) -> io::Result<usize> {
    let mut len = std::mem::size_of_val(buf) as libc::socklen_t;
    cvt(unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, SO_MEMINFO, buf.as_mut_ptr() as *mut libc::c_void, &mut len) })?;
    Ok(len as usize / 4)
}

// ---- UDP ----------------------------------------------------------------------------

pub fn udp_socket(for_addr: &SocketAddr) -> io::Result<RawFd> {
    let af = if for_addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    cvt(unsafe { libc::socket(af, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })
}

/// A non-blocking UDP socket bound to `addr`.
pub fn udp_bind(addr: &SocketAddr) -> io::Result<RawFd> {
    let fd = udp_socket(addr)?;
    let (ss, len) = to_sockaddr(addr);
    if let Err(e) = cvt(unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) }) {
        close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// A peer address as the kernel gave it, passed back unchanged (no conversion per datagram).
pub struct RawAddr {
    ss: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl RawAddr {
    pub fn new() -> RawAddr {
        RawAddr { ss: unsafe { std::mem::zeroed() }, len: 0 }
    }
}

/// Ok(None) when nothing is waiting.
pub fn recv_from(fd: RawFd, buf: &mut [u8], from: &mut RawAddr) -> io::Result<Option<usize>> {
    from.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let r = unsafe {
        libc::recvfrom(
            fd,
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
            0,
            &mut from.ss as *mut _ as *mut libc::sockaddr,
            &mut from.len,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(r as usize))
}

pub fn send_to(fd: RawFd, buf: &[u8], to: &RawAddr) -> io::Result<usize> {
    let r = unsafe {
        libc::sendto(
            fd,
            buf.as_ptr() as *const libc::c_void,
            buf.len(),
            libc::MSG_NOSIGNAL,
            &to.ss as *const _ as *const libc::sockaddr,
            to.len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}
