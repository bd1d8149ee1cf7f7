//! Contract: the TPACKET_V2 receive ring of an AF_PACKET socket (packet(7),
//! PACKET_RX_RING). `peek` returns the next frame the kernel filled (the bytes from the
//! frame's MAC offset minus `lead`, its length on the wire and its CLOCK_REALTIME
//! arrival stamp) without a system call; `release` hands the slot back. One thread owns
//! a ring.
//!
//! Why it is sound: the kernel fills only slots whose status is TP_STATUS_KERNEL and
//! never touches a slot it has set to TP_STATUS_USER until user space stores
//! TP_STATUS_KERNEL (0) again. `peek` reads the status with Acquire and lends the slot's
//! bytes only while it says USER; `release` (which needs `&mut self`, so no lent slice
//! is alive) stores 0 with Release. Every offset read from a slot header is clamped to
//! the slot.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::mmap::Mapping;
use crate::sock::setsockopt;

/// The step of `RxRing::new` that failed, and why.
#[derive(Debug)]
pub struct RingError {
    pub step: &'static str,
    pub cause: io::Error,
}

/// A TPACKET_V2 receive ring: the kernel copies each frame into a shared slot in the
/// sender's context and flips the slot's status; the reader takes slots without a
/// system call per packet.
pub struct RxRing {
    map: Mapping,
    frame_size: usize,
    block_size: usize,
    per_block: usize,
    frames: usize,
    idx: usize,
}

/// One received frame in the ring.
pub struct RingFrame<'a> {
    /// The frame from `lead` bytes before its MAC header (for PACKET_VNET_HDR: the
    /// virtio-net header) to the end of what the slot holds.
    pub data: &'a [u8],
    /// Length of the frame on the wire (larger than the data when truncated).
    pub wire_len: usize,
    /// The slot holds less than the frame, or less than `lead` before it.
    pub truncated: bool,
    /// Arrival, CLOCK_REALTIME ns.
    pub real_ns: u64,
}

impl RxRing {
    /// Switch socket `fd` to TPACKET_V2 and set up a ring of at least `frames` slots of
    /// `frame_size` bytes (a multiple of 16, at least 64): blocks of 4 MiB, slots never
    /// straddling a block. Mapped locked when RLIMIT_MEMLOCK allows.
    pub fn new(fd: BorrowedFd<'_>, frame_size: usize, frames: usize) -> Result<RxRing, RingError> {
        let err = |step, cause| RingError { step, cause };
        if frame_size < 64 || !frame_size.is_multiple_of(16) || frames == 0 {
            return Err(err("size PACKET_RX_RING", io::Error::from(io::ErrorKind::InvalidInput)));
        }
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V2 as libc::c_int))
            .map_err(|e| err("setsockopt PACKET_VERSION TPACKET_V2", e))?;
        let block_size = (1usize << 22).max(frame_size);
        let per_block = block_size / frame_size;
        let blocks = frames.div_ceil(per_block);
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (blocks * per_block) as u32,
        };
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req).map_err(|e| err("setsockopt PACKET_RX_RING", e))?;
        let len = block_size * blocks;
        let map = Mapping::new(Some(fd), len, 0, libc::MAP_SHARED | libc::MAP_LOCKED)
            // MAP_LOCKED may be refused (RLIMIT_MEMLOCK): without it
            .or_else(|_| Mapping::new(Some(fd), len, 0, libc::MAP_SHARED))
            .map_err(|e| err("mmap rx ring", e))?;
        Ok(RxRing { map, frame_size, block_size, per_block, frames: blocks * per_block, idx: 0 })
    }

    /// Offset of slot `i`: slots never straddle blocks, so a block may end in padding.
    fn offset(&self, i: usize) -> usize {
        (i / self.per_block) * self.block_size + (i % self.per_block) * self.frame_size
    }

    fn status(&self) -> &AtomicU32 {
        // SAFETY: tp_status is the first field of each slot; slots start at multiples of
        // 16 inside the page-aligned mapping, so it is aligned, and offset + 4 <= len.
        // The kernel accesses it atomically too (it is the handshake word).
        unsafe { &*self.map.ptr().add(self.offset(self.idx)).cast::<AtomicU32>() }
    }

    /// The next filled slot, if any: `lead` bytes before the MAC header and the frame.
    /// Call `release` after copying it out.
    pub fn peek(&self, lead: usize) -> Option<RingFrame<'_>> {
        if self.status().load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
            return None;
        }
        // SAFETY: the slot lies inside the mapping; its status is USER, so the kernel
        // does not write it until `release`, which needs `&mut self` and so outlives
        // this borrow (see the module contract).
        let f = unsafe { std::slice::from_raw_parts(self.map.ptr().add(self.offset(self.idx)), self.frame_size) };
        // SAFETY: the slot (>= 64 bytes, 16-aligned) starts with a tpacket2_hdr, whose
        // fields are integers: any bytes are a value.
        let h = unsafe { std::ptr::read(f.as_ptr().cast::<libc::tpacket2_hdr>()) };
        let (len, snap, mac) = (h.tp_len as usize, h.tp_snaplen as usize, h.tp_mac as usize);
        let real_ns = h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64;
        let start = mac.saturating_sub(lead).min(self.frame_size);
        let end = mac.saturating_add(snap).min(self.frame_size).max(start);
        Some(RingFrame { data: &f[start..end], wire_len: len, truncated: snap < len || mac < lead, real_ns })
    }

    /// Give the slot `peek` returned back to the kernel and move to the next.
    pub fn release(&mut self) {
        self.status().store(libc::TP_STATUS_KERNEL, Ordering::Release);
        self.idx = (self.idx + 1) % self.frames;
    }

    /// Slots in the ring.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Bytes mapped.
    pub fn mapped_len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{mono_and_real_offset, now_ns};
    use crate::sock::{bind_packet, if_index, socket};
    use std::os::fd::AsFd;

    /// An AF_PACKET socket on the loopback interface (needs CAP_NET_RAW).
    fn loopback_packet_socket() -> std::os::fd::OwnedFd {
        socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
            .expect("an AF_PACKET socket needs CAP_NET_RAW: run the tests as root, as `make test` does")
    }

    #[test]
    fn a_datagram_on_loopback_shows_in_the_ring_with_its_arrival_time() {
        let s = loopback_packet_socket();
        let mut ring = RxRing::new(s.as_fd(), 2048, 64).unwrap();
        assert!(ring.frames() >= 64 && ring.mapped_len() >= 64 * 2048);
        bind_packet(s.as_fd(), if_index("lo").unwrap(), libc::ETH_P_ALL as u16).unwrap();
        let marker = format!("ccarena-sys ring test {}", std::process::id());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (m0, offset) = mono_and_real_offset();
        udp.send_to(marker.as_bytes(), udp.local_addr().unwrap()).unwrap();
        let deadline = now_ns() + 2_000_000_000;
        let mut seen = 0;
        while now_ns() < deadline {
            let Some(f) = ring.peek(0) else {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            };
            seen += 1;
            if f.data.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                // Ethernet (14) + IPv4 (20) + UDP (8) + the payload
                assert_eq!((f.wire_len, f.data.len(), f.truncated), (42 + marker.len(), 42 + marker.len(), false));
                let arrival = f.real_ns.wrapping_sub(offset);
                assert!(arrival >= m0 && arrival <= now_ns(), "stamp {arrival} outside [{m0}, now]");
                ring.release();
                return;
            }
            ring.release();
        }
        panic!("the datagram did not show in the ring ({seen} other frames did)");
    }
}
