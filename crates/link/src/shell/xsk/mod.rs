//! AF_XDP ports: the emulator's alternative packet I/O (`io: "xdp"`), copy mode.
//!
//! Why: with AF_PACKET every forwarded frame is its own `sendmmsg` message (message
//! header import, socket hooks, virtio-net header parsing) and every received frame is
//! copied into a TPACKET ring and again into the core's buffer. With AF_XDP a small XDP
//! program redirects each arriving frame into a ring of ours (the copy happens in the
//! sender's context, as with the TPACKET ring) and stamps its arrival time, and a send is
//! one `sendto` per 32 descriptors. Kernel interfaces used, all documented in
//! Documentation/networking/af_xdp.rst and xsk-tx-metadata.rst:
//! - one UMEM per port: receive frames circulate fill ring -> rx ring -> (copied out) ->
//!   fill ring; transmit frames circulate tx ring -> completion ring -> free list. The
//!   socket, its UMEM and rings are ccarena-sys's `xdp::Xsk` (which also does the
//!   receive side); the transmit ring logic is here;
//! - an XDP program (bpf/link/xsk_redirect.bpf.c, loaded in `program`) that writes
//!   `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) into 8 bytes of metadata in front of the
//!   frame and redirects it to the port's socket through an XSKMAP; it is attached with a
//!   bpf_link, so it goes away with the process however the process ends (no BPF object
//!   is left behind);
//! - the TX metadata checksum request (XDP_TXMD_FLAGS_CHECKSUM, kernel >= 6.8): the
//!   kernel marks the skb CHECKSUM_PARTIAL, as the virtio-net header does on the AF_PACKET
//!   path. An XDP frame does not say whether its L4 checksum was complete or partial;
//!   frames from veth peers are partial, and a partial skb is trusted on local delivery,
//!   so every TCP/UDP frame (IPv4, or IPv6 without extension headers) is sent as
//!   partial (see docs/link.md).
//!
//! Contract: `recv` hands out (frame bytes, arrival ns or 0) in arrival order and returns
//! the frames to the kernel at once; `send` keeps order, retries frames the receiving
//! side refused (as the AF_PACKET path does on ENOBUFS) and counts the ones it gave up on.

mod program;

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use super::error::ShellError;
use ccarena_sys::clock::{nap, now_ns};
use ccarena_sys::sock;
use ccarena_sys::xdp::{Xsk, XskConfig, XskStep};
use program::XdpAttachment;
pub use program::PROG_NAME;

/// Bytes of TX metadata in front of a transmitted frame: struct xsk_tx_metadata (its
/// flags and checksum request; later fields, e.g. launch_time, are not used).
const TXMD_LEN: u32 = std::mem::size_of::<libc::xsk_tx_metadata>() as u32;
/// Where a transmitted frame starts inside its chunk (room for the TX metadata).
const TX_OFF: u64 = 64;
/// Descriptors per ring; receive frames per port (~65 ms of 1500-byte frames at 2 Gbit/s).
const RX_FRAMES: u32 = 16384;
const TX_FRAMES: u32 = 4096;
/// Frames of one port's UMEM.
pub const UMEM_FRAMES: u32 = RX_FRAMES + TX_FRAMES;
/// The kernel's transmit budget per sendto in copy mode (max_tx_budget, default 32).
const KICK_BATCH: usize = 32;

/// (csum_start, csum_offset) of a TCP/UDP frame over IPv4 or IPv6 (no extension
/// headers), for the TX checksum request; None for anything else.
fn l4_checksum(f: &[u8]) -> Option<(u16, u16)> {
    if f.len() < 14 {
        return None;
    }
    let (start, proto) = match (u16::from_be_bytes([f[12], f[13]]), f.get(14).map(|b| b >> 4)) {
        (0x0800, Some(4)) if f.len() >= 34 => {
            // a fragment (MF set or an offset): its checksum covers the whole datagram
            if u16::from_be_bytes([f[20], f[21]]) & 0x3fff != 0 {
                return None;
            }
            (14 + ((f[14] & 0x0f) as usize) * 4, f[23])
        }
        (0x86dd, Some(6)) if f.len() >= 54 => (54, f[20]),
        _ => return None,
    };
    match proto {
        6 if f.len() >= start + 18 => Some((start as u16, 16)),
        // an IPv4 UDP checksum of 0 means "none" (RFC 768): leave it so
        17 if f.len() >= start + 8 && (f[start + 6] | f[start + 7]) != 0 => Some((start as u16, 6)),
        _ => None,
    }
}

/// Marks a TX ring entry left by an earlier `send` call (its bytes are not at hand).
const FOREIGN: usize = usize::MAX;

/// The kernel's TX read position after a kick, from our previous copy `old`, the
/// published consumer `published` and whether the kick returned EBUSY. The kernel
/// (6.18 __xsk_generic_xmit) publishes its position only when the call sent a frame:
/// when the first frame of a call is dropped by the device (EBUSY) it has moved past that
/// one descriptor without saying so.
fn kernel_consumer(old: u32, published: u32, ebusy: bool) -> u32 {
    let ahead = (published.wrapping_sub(old) as i32) > 0;
    match (ahead, ebusy) {
        (true, _) => published,
        (false, true) => old.wrapping_add(1),
        (false, false) => old,
    }
}

/// What failed when `Xsk::open` failed at `step`.
fn open_attempt(step: XskStep) -> &'static str {
    match step {
        XskStep::Config => "AF_XDP: ring and chunk sizes",
        XskStep::Socket => "open AF_XDP socket",
        XskStep::MapUmem => "map AF_XDP UMEM",
        XskStep::RegisterUmem => "setsockopt XDP_UMEM_REG (TX metadata needs kernel >= 6.8)",
        XskStep::RingSize => "setsockopt AF_XDP ring size",
        XskStep::MmapOffsets => "getsockopt XDP_MMAP_OFFSETS",
        XskStep::MapRing => "map AF_XDP ring",
        XskStep::Bind => "bind AF_XDP socket (copy mode, queue 0)",
    }
}

/// An AF_XDP socket on queue 0 of one interface, with its UMEM and XDP program.
pub struct XskPort {
    // dropped first: the XDP program stops redirecting before the socket goes
    _xdp: XdpAttachment,
    xsk: Xsk,
    pub ifname: String,
    /// Transmit frames not in the kernel's hands (chunk addresses).
    tx_free: Vec<u64>,
    /// Sends the receiving side refused and that were sent again / given up.
    pub tx_waits: u64,
    pub tx_lost: u64,
    /// Kicks in which the receiving side dropped a frame (EBUSY), each sent again.
    pub tx_refused: u64,
    /// Frames on the TX ring, in ring order, from the kernel's read position on: (index
    /// into `send`'s argument or FOREIGN for one left by an earlier call, due time).
    pending: VecDeque<(usize, u64)>,
    /// Our copy of the kernel's own TX read position, which it publishes late (see
    /// `kernel_consumer`).
    kc: u32,
}

impl XskPort {
    /// Open the socket, map its rings and UMEM, attach the XDP program. `frame_max` is the
    /// longest frame (Ethernet header included) the port must carry.
    pub fn open(ifname: &str, frame_max: usize) -> Result<XskPort, ShellError> {
        let ifindex = sock::if_index(ifname).map_err(|e| ShellError::new("look up interface", ifname, e))?;
        // Copy mode puts a received frame XDP_PACKET_HEADROOM (256) into its chunk.
        let chunk: u32 = if frame_max + 256 <= 2048 { 2048 } else { 4096 };
        if frame_max + 256 > 4096 {
            let e = io::Error::from(io::ErrorKind::InvalidInput);
            return Err(ShellError::new("AF_XDP: frames of this MTU do not fit a 4 KiB chunk", ifname, e));
        }
        let cfg = XskConfig {
            ifindex,
            queue_id: 0,
            chunk_size: chunk,
            rx_frames: RX_FRAMES,
            tx_frames: TX_FRAMES,
            tx_metadata_len: TXMD_LEN,
            bind_flags: libc::XDP_COPY,
        };
        let xsk = Xsk::open(&cfg).map_err(|e| ShellError::new(open_attempt(e.step), ifname, e.cause))?;
        // Every frame in flight is an skb charged to this socket until the receiving side
        // frees it (with RPS, up to a backlog of them): room for 16 MiB, as on AF_PACKET.
        let sbuf: libc::c_int = 16 << 20;
        for opt in [libc::SO_SNDBUFFORCE, libc::SO_SNDBUF] {
            if sock::setsockopt(xsk.as_fd(), libc::SOL_SOCKET, opt, &sbuf).is_ok() {
                break;
            }
        }
        let tx_free = xsk.tx_frames().rev().collect();
        let xdp = program::attach(ifindex, xsk.as_fd(), ifname)?;
        Ok(XskPort {
            _xdp: xdp,
            xsk,
            ifname: ifname.into(),
            tx_free,
            tx_waits: 0,
            tx_lost: 0,
            tx_refused: 0,
            pending: VecDeque::with_capacity(TX_FRAMES as usize),
            kc: 0,
        })
    }

    /// Hand up to `max` received frames to `f(frame, arrival_ns)` (0 when the XDP program
    /// had no room for its stamp), then give the frames back to the kernel. `f` runs only
    /// after the ring's producer was read: a clock read in `f` is later than every
    /// arrival it is handed.
    pub fn recv(&mut self, max: usize, f: impl FnMut(&[u8], u64)) -> usize {
        self.xsk.recv(max, f)
    }

    fn reclaim(&mut self) {
        let free = &mut self.tx_free;
        self.xsk.reclaim(|a| free.push(a));
    }

    /// Whether `frame` fits a transmit frame after the room for its TX metadata (every
    /// frame received on the other port does: it came in a chunk of the same size, after
    /// 256 bytes of headroom).
    fn fits(&self, frame: &[u8]) -> bool {
        TX_OFF + frame.len() as u64 <= self.xsk.chunk()
    }

    /// Put `frame` (which `fits`) on the TX ring at index `at` in a fresh transmit frame,
    /// with the checksum request if `csum` (not for a frame the core corrupted: its
    /// receiver must verify the checksum).
    fn write_desc(&mut self, at: u32, frame: &[u8], csum: bool) {
        let base = self.tx_free.pop().expect("a free transmit frame");
        let request = l4_checksum(frame).filter(|_| csum);
        let d = self.xsk.write_frame(base + TX_OFF, frame, request).expect("a frame fits its transmit chunk");
        self.xsk.tx_ring().set(at, d);
    }

    /// Send `frames` (bytes, due time, ask for checksum offload) in order. `sent(due, t)` is called as each frame
    /// leaves (t: the clock when its kick began). A frame the receiving side drops (its
    /// backlog full: sendto says EBUSY) is sent again, ahead of the ones behind it, after
    /// a pause of `nap_ns`, for at most `wait_max_ns` of pauses in all per call. Past
    /// that, frames already on the ring stay there and are accounted when the kernel takes
    /// them (in a later call); frames not yet on it count in `tx_lost`.
    pub fn send(&mut self, frames: &[(&[u8], u64, bool)], nap_ns: u64, wait_max_ns: u64, mut sent: impl FnMut(u64, u64)) {
        let mut pending = std::mem::take(&mut self.pending);
        let (mut next, mut waited) = (0, 0);
        loop {
            self.reclaim();
            let ring = self.xsk.tx_ring();
            let room = (TX_FRAMES - ring.prod().wrapping_sub(ring.cons())) as usize;
            let k = (frames.len() - next).min(KICK_BATCH).min(room).min(self.tx_free.len());
            let start = ring.prod();
            let mut put = 0u32;
            for j in 0..k {
                let (f, due, csum) = frames[next + j];
                if !self.fits(f) {
                    self.tx_lost += 1;
                    continue;
                }
                self.write_desc(start.wrapping_add(put), f, csum);
                pending.push_back((next + j, due));
                put += 1;
            }
            self.xsk.tx_ring().set_prod(start.wrapping_add(put));
            next += k;
            if pending.is_empty() {
                if next == frames.len() {
                    break;
                }
                if k > 0 {
                    continue; // all of them too long for a transmit frame
                }
                // No frame could be written: every transmit frame is still held by the
                // receiving side (its completion comes when that side takes the skb).
                self.tx_waits += 1;
                nap(nap_ns);
                waited += nap_ns;
                if waited >= wait_max_ns {
                    self.tx_lost += (frames.len() - next) as u64;
                    break;
                }
                continue;
            }
            // the frames are handed over when the kick starts (as sendmmsg's are)
            let t = now_ns();
            let rc = self.kick();
            let old = self.kc;
            if rc == -libc::EBUSY {
                self.tx_refused += 1;
            }
            self.kc = kernel_consumer(old, self.xsk.tx_ring().cons(), rc == -libc::EBUSY);
            let taken = self.kc.wrapping_sub(old) as usize;
            for j in 0..taken {
                let (i, due) = pending.pop_front().unwrap_or((FOREIGN, 0));
                let refused = rc == -libc::EBUSY && j + 1 == taken;
                if !refused {
                    sent(due, t);
                } else if i != FOREIGN && waited < wait_max_ns && self.requeue_at_head(frames[i].0, frames[i].2) {
                    // The kernel reads a descriptor only when it sends it, and only
                    // inside our own sendto/poll calls: the entries behind it can be
                    // shifted to put this frame first again.
                    pending.push_front((i, due));
                    self.tx_waits += 1;
                    nap(nap_ns);
                    waited += nap_ns;
                } else {
                    self.tx_lost += 1;
                }
            }
            // ENOMEM/ENOBUFS: no skb this time; like EAGAIN, worth another try
            let transient = [0, -libc::EAGAIN, -libc::EBUSY, -libc::ENOMEM, -libc::ENOBUFS].contains(&rc);
            let mut stuck = false;
            if taken == 0 && transient {
                // Nothing taken: the socket's send buffer is full of skbs still queued on
                // the receiving side (EAGAIN), or the completion ring is. Wait for them
                // like the AF_PACKET path waits on ENOBUFS, within the same budget.
                self.tx_waits += 1;
                nap(nap_ns);
                waited += nap_ns;
                stuck = waited >= wait_max_ns;
            }
            if !transient || stuck {
                // What is on the ring goes when the kernel can send it (a later kick, or
                // the poll in epoll_wait) and is accounted then; the rest is lost.
                for e in pending.iter_mut() {
                    e.0 = FOREIGN;
                }
                self.tx_lost += (frames.len() - next) as u64;
                break;
            }
        }
        self.pending = pending;
    }

    /// Frames left on the TX ring that the kernel never took (counted lost at the end).
    pub fn unsent(&self) -> u64 {
        self.pending.len() as u64
    }

    /// Put `frame` back at the head of the TX ring, where the kernel reads next (false:
    /// no transmit frame or ring slot free).
    fn requeue_at_head(&mut self, frame: &[u8], csum: bool) -> bool {
        if !self.fits(frame) {
            return false;
        }
        self.reclaim();
        let c = self.kc;
        let ring = self.xsk.tx_ring();
        let p = ring.prod();
        if self.tx_free.is_empty() || p.wrapping_sub(ring.cons()) >= TX_FRAMES {
            return false;
        }
        let mut i = p;
        while i != c {
            let d = ring.get(i.wrapping_sub(1));
            ring.set(i, d);
            i = i.wrapping_sub(1);
        }
        self.write_desc(c, frame, csum);
        self.xsk.tx_ring().set_prod(p.wrapping_add(1));
        true
    }

    /// Ask the kernel to send what is on the TX ring (copy mode sends up to 32 per call).
    /// Returns 0 or -errno.
    fn kick(&self) -> i32 {
        match self.xsk.kick() {
            Ok(()) => 0,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// The socket's kernel counters (zero if the kernel will not say).
    pub fn stats(&self) -> libc::xdp_statistics {
        self.xsk.stats().unwrap_or(libc::xdp_statistics {
            rx_dropped: 0,
            rx_invalid_descs: 0,
            tx_invalid_descs: 0,
            rx_ring_full: 0,
            rx_fill_ring_empty_descs: 0,
            tx_ring_empty_descs: 0,
        })
    }
}

impl AsFd for XskPort {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.xsk.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(proto: u8, frag: u16, udp_csum: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12] = 0x08;
        f[14] = 0x45;
        f[20..22].copy_from_slice(&frag.to_be_bytes());
        f[23] = proto;
        f[34 + 6..34 + 8].copy_from_slice(&udp_csum.to_be_bytes());
        f
    }

    #[test]
    fn checksum_request_covers_tcp_and_udp_only() {
        assert_eq!(l4_checksum(&frame(6, 0, 0)), Some((34, 16)));
        assert_eq!(l4_checksum(&frame(17, 0, 0x1234)), Some((34, 6)));
        assert_eq!(l4_checksum(&frame(17, 0, 0)), None, "UDP without checksum");
        assert_eq!(l4_checksum(&frame(1, 0, 0)), None, "ICMP carries its own");
        assert_eq!(l4_checksum(&frame(6, 0x0010, 0)), None, "later fragment");
        assert_eq!(l4_checksum(&frame(6, 0x2000, 0)), None, "first fragment (MF)");
        assert_eq!(l4_checksum(&frame(6, 0x4000, 0)), Some((34, 16)), "DF set");
        let mut v6 = vec![0u8; 80];
        v6[12] = 0x86;
        v6[13] = 0xdd;
        v6[14] = 0x60;
        v6[20] = 6;
        assert_eq!(l4_checksum(&v6), Some((54, 16)), "TCP over IPv6");
        v6[20] = 0; // hop-by-hop options first: not looked into
        assert_eq!(l4_checksum(&v6), None);
        let mut arp = frame(6, 0, 0);
        arp[13] = 0x06;
        assert_eq!(l4_checksum(&arp), None);
    }

    #[test]
    fn kernel_consumer_follows_unpublished_drops() {
        assert_eq!(kernel_consumer(10, 14, false), 14, "published progress");
        assert_eq!(kernel_consumer(10, 14, true), 14, "frames sent, then one dropped");
        assert_eq!(kernel_consumer(10, 10, true), 11, "first frame dropped, unpublished");
        assert_eq!(kernel_consumer(11, 10, false), 11, "published value still behind");
        assert_eq!(kernel_consumer(11, 10, true), 12, "a second unpublished drop");
        assert_eq!(kernel_consumer(u32::MAX, 2, false), 2, "wraps");
        assert_eq!(kernel_consumer(u32::MAX, u32::MAX, true), 0, "wraps on a drop");
    }
}
