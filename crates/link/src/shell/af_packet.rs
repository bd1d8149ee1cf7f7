//! AF_PACKET sockets, the shell's default packet I/O: one raw socket per port, bound to
//! the interface, promiscuous, with a `virtio_net_hdr` in front of every frame
//! (PACKET_VNET_HDR, so checksum-offload state survives the hop), the socket's own
//! transmissions ignored, the qdisc bypassed on send, and kernel receive timestamps.
//!
//! Contract: `PacketSocket::open` returns a socket that receives every frame of its
//! interface and sends frames unchanged; `describe` only looks the interface up (index,
//! MTU) for AF_XDP ports. Each error names the call and the interface.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use super::error::{os_result, ShellError};

pub const SOL_PACKET: libc::c_int = 263;
pub const ETH_P_ALL: u16 = 0x0003;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// Size of `struct virtio_net_hdr` that precedes every frame with PACKET_VNET_HDR.
pub const VNET_HDR_LEN: usize = 10;


/// The SO_TIMESTAMPNS receive time (CLOCK_REALTIME ns) carried by a received message.
pub fn rx_timestamp(h: &libc::msghdr) -> Option<u64> {
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

pub(super) fn setopt<T>(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
    what: &str,
    ifname: &str,
) -> Result<(), ShellError> {
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    os_result(rc, what, ifname).map(|_| ())
}

/// One AF_PACKET socket bound to one interface, used for both directions of I/O.
pub struct PacketSocket {
    pub fd: RawFd,
    pub ifname: String,
    pub ifindex: i32,
    pub mtu: usize,
}

impl PacketSocket {
    pub fn open(ifname: &str) -> Result<PacketSocket, ShellError> {
        // Protocol 0 first: the socket receives nothing until it is bound to the interface.
        let s = PacketSocket::describe(ifname)?;
        let (fd, ifindex) = (s.fd, s.ifindex);
        let one: libc::c_int = 1;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_VNET_HDR,
            &one,
            "setsockopt PACKET_VNET_HDR",
            ifname,
        )?;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            &one,
            "setsockopt PACKET_IGNORE_OUTGOING",
            ifname,
        )?;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_QDISC_BYPASS,
            &one,
            "setsockopt PACKET_QDISC_BYPASS",
            ifname,
        )?;
        setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one,
            "setsockopt SO_TIMESTAMPNS",
            ifname,
        )?;
        let buf: libc::c_int = 64 << 20;
        if setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &buf,
            "setsockopt SO_RCVBUFFORCE",
            ifname,
        )
        .is_err()
        {
            setopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &buf,
                "setsockopt SO_RCVBUF",
                ifname,
            )?;
        }
        let sbuf: libc::c_int = 16 << 20;
        if setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            &sbuf,
            "setsockopt SO_SNDBUFFORCE",
            ifname,
        )
        .is_err()
        {
            setopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                &sbuf,
                "setsockopt SO_SNDBUF",
                ifname,
            )?;
        }
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        os_result(
            unsafe {
                libc::bind(
                    fd,
                    &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                )
            },
            "bind AF_PACKET socket",
            ifname,
        )?;
        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex,
            mr_type: PACKET_MR_PROMISC,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        setopt(
            fd,
            SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            &mreq,
            "setsockopt PACKET_ADD_MEMBERSHIP promisc",
            ifname,
        )?;
        Ok(s)
    }

    /// A socket that only describes the interface (index, MTU): protocol 0 and unbound,
    /// so it receives nothing. Used when AF_XDP carries the frames.
    pub fn describe(ifname: &str) -> Result<PacketSocket, ShellError> {
        let cname = CString::new(ifname).map_err(|_| ShellError {
            attempt: "look up interface".into(),
            object: ifname.into(),
            cause: io::Error::from(io::ErrorKind::InvalidInput),
        })?;
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(ShellError {
                attempt: "look up interface".into(),
                object: ifname.into(),
                cause: io::Error::last_os_error(),
            });
        }
        let fd = os_result(
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) },
            "open AF_PACKET socket",
            ifname,
        )?;
        let mut s = PacketSocket {
            fd,
            ifname: ifname.into(),
            ifindex,
            mtu: 1500,
        };
        s.mtu = s.query_mtu().unwrap_or(1500);
        Ok(s)
    }

    fn query_mtu(&self) -> Option<usize> {
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (i, b) in self.ifname.bytes().take(15).enumerate() {
            ifr.ifr_name[i] = b as libc::c_char;
        }
        let rc = unsafe { libc::ioctl(self.fd, libc::SIOCGIFMTU, &mut ifr) };
        if rc == 0 {
            Some(unsafe { ifr.ifr_ifru.ifru_mtu } as usize)
        } else {
            None
        }
    }

    /// Packets dropped by the kernel for this socket since the last call
    /// (PACKET_STATISTICS, which resets the counters): (received, dropped).
    pub fn take_stats(&self) -> (u64, u64) {
        let mut st = [0u32; 2];
        let mut len = 8 as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                self.fd,
                SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            (0, 0)
        } else {
            (st[0] as u64, st[1] as u64)
        }
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}
