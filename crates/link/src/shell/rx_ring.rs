//! The TPACKET_V2 receive ring of an AF_PACKET socket (packet(7), PACKET_RX_RING).
//!
//! Contract: `peek` returns the next frame the kernel filled (vnet header + Ethernet
//! frame, its length on the wire and its CLOCK_REALTIME arrival stamp) without a system
//! call; `release` hands the slot back. One thread owns a ring.

use std::io;

use super::af_packet::{setopt, PacketSocket, SOL_PACKET, VNET_HDR_LEN};
use super::error::ShellError;

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_USER: u32 = 1;

/// A TPACKET_V2 receive ring (packet(7) "PACKET_RX_RING"): the kernel copies each frame
/// into a shared slot in the sender's context and flips the slot's status; the shell
/// reads slots without a system call per packet. V2 rather than V3 because V3 hands
/// blocks to user space only when they are full or a timer (≥ 1 ms) expires, which would
/// add milliseconds of delay at low packet rates.
pub struct RxRing {
    base: *mut u8,
    len: usize,
    frame_size: usize,
    block_size: usize,
    per_block: usize,
    frames: usize,
    idx: usize,
}

// SAFETY: the mapping is owned by one worker thread at a time.
unsafe impl Send for RxRing {}

/// One received frame in the ring: (vnet header + Ethernet frame, realtime stamp ns).
pub struct RingFrame<'a> {
    pub data: &'a [u8],
    /// Length of the frame on the wire (larger than `data` when truncated).
    pub wire_len: usize,
    pub truncated: bool,
    pub real_ns: u64,
}

impl RxRing {
    /// Set up a ring of `frames` slots of `frame_size` bytes on `sock` (before bind use
    /// is fine; the socket must have PACKET_VNET_HDR set already).
    pub fn new(sock: &PacketSocket, frame_size: usize, frames: usize) -> Result<RxRing, ShellError> {
        let fd = sock.fd;
        let v: libc::c_int = TPACKET_V2;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_VERSION,
            &v,
            "setsockopt PACKET_VERSION TPACKET_V2",
            &sock.ifname,
        )?;
        let block_size = (1usize << 22).max(frame_size);
        let per_block = block_size / frame_size;
        let blocks = frames.div_ceil(per_block);
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (blocks * per_block) as u32,
        };
        setopt(
            fd,
            SOL_PACKET,
            PACKET_RX_RING,
            &req,
            "setsockopt PACKET_RX_RING",
            &sock.ifname,
        )?;
        let len = block_size * blocks;
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd,
                0,
            )
        };
        let base = if base == libc::MAP_FAILED {
            // MAP_LOCKED may be refused (RLIMIT_MEMLOCK): retry without it.
            let b = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if b == libc::MAP_FAILED {
                return Err(ShellError {
                    attempt: "mmap rx ring".into(),
                    object: sock.ifname.clone(),
                    cause: io::Error::last_os_error(),
                });
            }
            b
        } else {
            base
        };
        Ok(RxRing {
            base: base as *mut u8,
            len,
            frame_size,
            block_size,
            per_block,
            frames: blocks * per_block,
            idx: 0,
        })
    }

    /// Offset of slot `i`: slots never straddle blocks, so a block may end in padding.
    fn offset(&self, i: usize) -> usize {
        (i / self.per_block) * self.block_size + (i % self.per_block) * self.frame_size
    }

    fn status(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned field of each frame slot.
        unsafe { &*(self.base.add(self.offset(i)) as *const std::sync::atomic::AtomicU32) }
    }

    /// The next filled slot, if any. Call `release` after copying it out.
    pub fn peek(&self) -> Option<RingFrame<'_>> {
        let st = self
            .status(self.idx)
            .load(std::sync::atomic::Ordering::Acquire);
        if st & TP_STATUS_USER == 0 {
            return None;
        }
        let f = unsafe {
            std::slice::from_raw_parts(self.base.add(self.offset(self.idx)), self.frame_size)
        };
        let rd32 = |o: usize| u32::from_ne_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
        let len = rd32(4) as usize;
        let snap = rd32(8) as usize;
        let mac = u16::from_ne_bytes([f[12], f[13]]) as usize;
        let real_ns = rd32(16) as u64 * 1_000_000_000 + rd32(20) as u64;
        let start = mac.saturating_sub(VNET_HDR_LEN);
        let end = (mac + snap).min(self.frame_size);
        Some(RingFrame {
            data: &f[start..end],
            wire_len: len,
            truncated: snap < len || mac < VNET_HDR_LEN,
            real_ns,
        })
    }

    pub fn release(&mut self) {
        self.status(self.idx)
            .store(0, std::sync::atomic::Ordering::Release);
        self.idx = (self.idx + 1) % self.frames;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}
