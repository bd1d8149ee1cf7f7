//! AF_PACKET sockets, the shell's default packet I/O: one raw socket per port, bound to
//! the interface, promiscuous, with a `virtio_net_hdr` in front of every frame
//! (PACKET_VNET_HDR, so checksum-offload state survives the hop), the socket's own
//! transmissions ignored, the qdisc bypassed on send, and kernel receive timestamps.
//!
//! Contract: `PacketSocket::open` returns a socket that receives every frame of its
//! interface and sends frames unchanged; `describe` only looks the interface up (index,
//! MTU) for AF_XDP ports. Each error names the call and the interface. The calls are
//! ccarena-sys's `sock`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use ccarena_sys::sock::{self, OptValue};

use super::error::ShellError;

/// Size of `struct virtio_net_hdr` that precedes every frame with PACKET_VNET_HDR.
pub const VNET_HDR_LEN: usize = 10;

/// setsockopt, its failure named `what` on `ifname`.
pub(super) fn setopt<T: OptValue + ?Sized>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
    what: &str,
    ifname: &str,
) -> Result<(), ShellError> {
    sock::setsockopt(fd, level, opt, val).map_err(|e| ShellError::new(what, ifname, e))
}

/// One AF_PACKET socket bound to one interface, used for both directions of I/O.
pub struct PacketSocket {
    pub fd: OwnedFd,
    pub ifname: String,
    pub ifindex: u32,
    pub mtu: usize,
}

impl PacketSocket {
    pub fn open(ifname: &str) -> Result<PacketSocket, ShellError> {
        // Protocol 0 first: the socket receives nothing until it is bound to the interface.
        let s = PacketSocket::describe(ifname)?;
        let fd = s.fd.as_fd();
        let one: libc::c_int = 1;
        for (level, opt, what) in [
            (libc::SOL_PACKET, libc::PACKET_VNET_HDR, "setsockopt PACKET_VNET_HDR"),
            (libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, "setsockopt PACKET_IGNORE_OUTGOING"),
            (libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, "setsockopt PACKET_QDISC_BYPASS"),
            (libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, "setsockopt SO_TIMESTAMPNS"),
        ] {
            setopt(fd, level, opt, &one, what, ifname)?;
        }
        // the *FORCE variants pass the limits of net.core.[rw]mem_max (CAP_NET_ADMIN)
        for (force, plain, size, what) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, 64 << 20, "setsockopt SO_RCVBUF"),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, 16 << 20, "setsockopt SO_SNDBUF"),
        ] {
            let size: libc::c_int = size;
            if sock::setsockopt(fd, libc::SOL_SOCKET, force, &size).is_err() {
                setopt(fd, libc::SOL_SOCKET, plain, &size, what, ifname)?;
            }
        }
        sock::bind_packet(fd, s.ifindex, libc::ETH_P_ALL as u16).map_err(|e| ShellError::new("bind AF_PACKET socket", ifname, e))?;
        let mreq = libc::packet_mreq {
            mr_ifindex: s.ifindex as i32,
            mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        setopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq, "setsockopt PACKET_ADD_MEMBERSHIP promisc", ifname)?;
        Ok(s)
    }

    /// A socket that only describes the interface (index, MTU): protocol 0 and unbound,
    /// so it receives nothing. Used when AF_XDP carries the frames.
    pub fn describe(ifname: &str) -> Result<PacketSocket, ShellError> {
        let ifindex = sock::if_index(ifname).map_err(|e| ShellError::new("look up interface", ifname, e))?;
        let fd = sock::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0)
            .map_err(|e| ShellError::new("open AF_PACKET socket", ifname, e))?;
        let mtu = sock::if_mtu(fd.as_fd(), ifname).unwrap_or(1500);
        Ok(PacketSocket { fd, ifname: ifname.into(), ifindex, mtu })
    }

    /// Packets dropped by the kernel for this socket since the last call
    /// (PACKET_STATISTICS, which resets the counters): (received, dropped).
    pub fn take_stats(&self) -> (u64, u64) {
        match sock::getsockopt::<libc::tpacket_stats>(self.fd.as_fd(), libc::SOL_PACKET, libc::PACKET_STATISTICS) {
            Ok((st, _)) => (st.tp_packets as u64, st.tp_drops as u64),
            Err(_) => (0, 0),
        }
    }
}
