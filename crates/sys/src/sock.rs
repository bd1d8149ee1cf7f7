//! Contract: sockets of every family the parts use, as std fds: creation, options,
//! binding, TCP connection calls, send/receive, datagram peers, and interface lookups
//! (index, MTU). Each function is one call; which options a part sets and how it reads
//! would-block or in-progress stays with the part (ccarena-flow's `net`, ccarena-link's
//! shell).
//!
//! Option values cross as bytes. setsockopt takes only the value types of `OptValue`
//! (numbers, names, and structs of numbers the kernel reads and never follows as
//! addresses); getsockopt fills only the types of `OptOut` (structs of integers, for
//! which every byte pattern is a value).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use crate::cvt;
use crate::fd::{io_outcome, owned, Outcome};

mod sealed {
    pub trait Sealed {}
}

/// A value setsockopt may pass: plain data the kernel reads; no field is an address.
pub trait OptValue: sealed::Sealed {}

/// A value getsockopt may fill: integers only, so every byte pattern is a valid value,
/// and all-zero is the starting value.
pub trait OptOut: sealed::Sealed + Copy {}

macro_rules! impl_all {
    ($tr:path: $($t:ty),*) => { $(impl $tr for $t {})* };
}
impl_all!(sealed::Sealed: libc::c_int, [u8], libc::linger, libc::packet_mreq, libc::tpacket_req,
          libc::tpacket_stats, libc::xdp_mmap_offsets, libc::xdp_statistics);
impl_all!(OptValue: libc::c_int, [u8], libc::linger, libc::packet_mreq, libc::tpacket_req);
impl_all!(OptOut: libc::c_int, libc::tpacket_stats, libc::xdp_mmap_offsets, libc::xdp_statistics);

/// socket(2); `ty` carries SOCK_NONBLOCK/SOCK_CLOEXEC as wanted.
pub fn socket(domain: libc::c_int, ty: libc::c_int, protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket takes no pointers and returns a new fd.
    unsafe { owned(libc::socket(domain, ty, protocol)) }
}

/// setsockopt(2) with `v`'s bytes as the option value.
pub fn setsockopt<T: OptValue + ?Sized>(fd: BorrowedFd<'_>, level: libc::c_int, opt: libc::c_int, v: &T) -> io::Result<()> {
    let len = std::mem::size_of_val(v) as libc::socklen_t;
    // SAFETY: the kernel reads `len` bytes at `v`, all of them `v`'s; OptValue types
    // hold no address the kernel would follow.
    cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), level, opt, (v as *const T).cast(), len) }).map(|_| ())
}

/// getsockopt(2) into a `T`: the value and how many bytes the kernel filled (the rest
/// of `T` stays zero).
pub fn getsockopt<T: OptOut>(fd: BorrowedFd<'_>, level: libc::c_int, opt: libc::c_int) -> io::Result<(T, usize)> {
    // SAFETY: OptOut types are integers only: all-zero is a value.
    let mut v: T = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `v`; any bytes are a valid T.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), level, opt, (&mut v as *mut T).cast(), &mut len) })?;
    Ok((v, len as usize))
}

/// getsockopt(2) into `buf` (a name, a kernel struct read by offsets); returns the
/// length the kernel filled.
pub fn getsockopt_bytes(fd: BorrowedFd<'_>, level: libc::c_int, opt: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` = buf.len() bytes into `buf`.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), level, opt, buf.as_mut_ptr().cast(), &mut len) })?;
    Ok((len as usize).min(buf.len()))
}

// ---- IPv4/IPv6 addresses ------------------------------------------------------------

/// A socket address as the kernel takes it: (storage, length used).
fn to_sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is integers only, valid all-zero.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for every sockaddr.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in, which it is
            // large enough and aligned for.
            let sin = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)), u16::from_be(sin6.sin6_port)))
        }
        _ => None,
    }
}

fn name_of(
    fd: BorrowedFd<'_>,
    call: unsafe extern "C" fn(libc::c_int, *mut libc::sockaddr, *mut libc::socklen_t) -> libc::c_int,
) -> Option<SocketAddr> {
    // SAFETY: integers only, valid all-zero.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `call` is getsockname or getpeername: it writes at most `len` bytes.
    let r = unsafe { call(fd.as_raw_fd(), (&mut ss as *mut libc::sockaddr_storage).cast(), &mut len) };
    if r < 0 {
        None
    } else {
        from_sockaddr(&ss)
    }
}

/// The address the socket is bound to (getsockname).
pub fn local_addr(fd: BorrowedFd<'_>) -> Option<SocketAddr> {
    name_of(fd, libc::getsockname)
}

/// The address of the connected peer (getpeername).
pub fn peer_addr(fd: BorrowedFd<'_>) -> Option<SocketAddr> {
    name_of(fd, libc::getpeername)
}

pub fn bind(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<()> {
    let (ss, len) = to_sockaddr(addr);
    // SAFETY: the kernel reads `len` bytes of `ss`.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&ss as *const libc::sockaddr_storage).cast(), len) }).map(|_| ())
}

/// connect(2); on a non-blocking socket EINPROGRESS comes back as the error.
pub fn connect(fd: BorrowedFd<'_>, to: &SocketAddr) -> io::Result<()> {
    let (ss, len) = to_sockaddr(to);
    // SAFETY: the kernel reads `len` bytes of `ss`.
    cvt(unsafe { libc::connect(fd.as_raw_fd(), (&ss as *const libc::sockaddr_storage).cast(), len) }).map(|_| ())
}

pub fn listen(fd: BorrowedFd<'_>, backlog: libc::c_int) -> io::Result<()> {
    // SAFETY: listen takes no pointers.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) }).map(|_| ())
}

/// accept4(2) with `flags` (SOCK_NONBLOCK, SOCK_CLOEXEC); the peer's address is not asked for.
pub fn accept(fd: BorrowedFd<'_>, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: null address and length: nothing is written; accept4 returns a new fd.
    unsafe { owned(libc::accept4(fd.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), flags)) }
}

pub fn shutdown(fd: BorrowedFd<'_>, how: libc::c_int) -> io::Result<()> {
    // SAFETY: shutdown takes no pointers.
    cvt(unsafe { libc::shutdown(fd.as_raw_fd(), how) }).map(|_| ())
}

/// send(2) with `flags`: Done(bytes taken) or WouldBlock (EAGAIN, EINTR).
pub fn send(fd: BorrowedFd<'_>, buf: &[u8], flags: libc::c_int) -> io::Result<Outcome> {
    // SAFETY: the kernel reads at most `buf.len()` bytes of `buf`.
    let r = unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
    io_outcome(r).map(|o| if o == Outcome::Eof { Outcome::Done(0) } else { o })
}

/// recv(2) with `flags`: Done(bytes), WouldBlock (EAGAIN, EINTR) or Eof.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> io::Result<Outcome> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    io_outcome(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// A datagram peer's address as the kernel gave it, passed back unchanged (no
/// conversion per datagram).
pub struct RawAddr {
    ss: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl Default for RawAddr {
    fn default() -> RawAddr {
        // SAFETY: integers only, valid all-zero.
        RawAddr { ss: unsafe { std::mem::zeroed() }, len: 0 }
    }
}

impl RawAddr {
    pub fn new() -> RawAddr {
        RawAddr::default()
    }

    pub fn addr(&self) -> Option<SocketAddr> {
        from_sockaddr(&self.ss)
    }
}

/// recvfrom(2): Done(bytes) with the sender in `from`, or WouldBlock (EAGAIN, EINTR).
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8], from: &mut RawAddr) -> io::Result<Outcome> {
    from.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf` and at most
    // `from.len` bytes into `from.ss`.
    let r = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            0,
            (&mut from.ss as *mut libc::sockaddr_storage).cast(),
            &mut from.len,
        )
    };
    io_outcome(r).map(|o| if o == Outcome::Eof { Outcome::Done(0) } else { o })
}

/// sendto(2) with MSG_NOSIGNAL to an address from `recv_from`: the bytes sent.
pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], to: &RawAddr) -> io::Result<usize> {
    // SAFETY: the kernel reads `buf.len()` bytes of `buf` and `to.len` (at most the
    // storage's size, as recvfrom set it) bytes of `to.ss`.
    let r = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
            (&to.ss as *const libc::sockaddr_storage).cast(),
            to.len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

// ---- link layer ---------------------------------------------------------------------

/// Bind an AF_PACKET socket to interface `ifindex` for `protocol` (host order, e.g.
/// ETH_P_ALL).
pub fn bind_packet(fd: BorrowedFd<'_>, ifindex: u32, protocol: u16) -> io::Result<()> {
    let sll = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: protocol.to_be(),
        sll_ifindex: ifindex as i32,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: the kernel reads `len` bytes of `sll`.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&sll as *const libc::sockaddr_ll).cast(), len) }).map(|_| ())
}

/// The index of interface `name` (if_nametoindex).
pub fn if_index(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a NUL-terminated string, read during the call.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        i => Ok(i),
    }
}

/// The MTU of interface `name` (SIOCGIFMTU through any socket `fd`).
pub fn if_mtu(fd: BorrowedFd<'_>, name: &str) -> io::Result<usize> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: ifreq is a name and a union of integers and addresses, valid all-zero.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in name.bytes().enumerate() {
        ifr.ifr_name[i] = b as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the NUL-terminated name and writes the int ifru_mtu
    // inside `ifr`.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, &mut ifr) })?;
    // SAFETY: the call succeeded, so the kernel wrote the union's ifru_mtu member.
    Ok(unsafe { ifr.ifr_ifru.ifru_mtu } as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn addresses_go_to_the_kernel_and_back_unchanged() {
        for a in ["127.0.0.1:0", "[::1]:0"] {
            let a: SocketAddr = a.parse().unwrap();
            let af = if a.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
            let s = socket(af, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0).unwrap();
            if bind(s.as_fd(), &a).is_err() {
                continue; // no IPv6 on this host
            }
            let got = local_addr(s.as_fd()).unwrap();
            assert_eq!(got.ip(), a.ip());
            assert_ne!(got.port(), 0, "the kernel picked a port");
        }
    }

    #[test]
    fn options_are_set_and_read_back() {
        let s = socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0).unwrap();
        setsockopt(s.as_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, &1).unwrap();
        let (v, n): (libc::c_int, usize) = getsockopt(s.as_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap();
        assert_eq!((v != 0, n), (true, 4));
        let mut name = [0u8; 16];
        let n = getsockopt_bytes(s.as_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut name).unwrap();
        assert!(n > 0 && name[0].is_ascii_lowercase(), "{:?}", &name[..n]);
        assert!(setsockopt(s.as_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, b"no-such-cc".as_slice()).is_err());
    }

    #[test]
    fn a_datagram_comes_back_to_its_sender() {
        let a = socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0).unwrap();
        let b = socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0).unwrap();
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        bind(a.as_fd(), &lo).unwrap();
        bind(b.as_fd(), &lo).unwrap();
        let mut buf = [0u8; 8];
        let mut from = RawAddr::new();
        assert_eq!(recv_from(b.as_fd(), &mut buf, &mut from).unwrap(), Outcome::WouldBlock);
        connect(a.as_fd(), &local_addr(b.as_fd()).unwrap()).unwrap();
        assert_eq!(send(a.as_fd(), b"ping", 0).unwrap(), Outcome::Done(4));
        assert_eq!(recv_from(b.as_fd(), &mut buf, &mut from).unwrap(), Outcome::Done(4));
        assert_eq!(from.addr(), local_addr(a.as_fd()));
        assert_eq!(send_to(b.as_fd(), b"pong", &from).unwrap(), 4);
        assert_eq!(recv(a.as_fd(), &mut buf, 0).unwrap(), Outcome::Done(4));
        assert_eq!(&buf[..4], b"pong");
    }

    #[test]
    fn the_loopback_interface_is_found_with_its_mtu() {
        let s = socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0).unwrap();
        assert!(if_index("lo").unwrap() > 0);
        assert!(if_mtu(s.as_fd(), "lo").unwrap() >= 1500);
        assert!(if_index("no-such-if0").is_err());
        assert!(if_mtu(s.as_fd(), "a-name-far-too-long-for-ifreq").is_err());
    }
}
