//! The AF_XDP kernel interface as the shell uses it (Documentation/networking/af_xdp.rst,
//! include/uapi/linux/if_xdp.h): option numbers, the structs passed to setsockopt and
//! getsockopt, and `Ring`, one ring shared with the kernel.
//!
//! Contract: layouts are the kernel's (`#[repr(C)]`); a `Ring` is used by one side as
//! producer or as consumer, never both, and is unmapped on drop.

use std::sync::atomic::{AtomicU32, Ordering};

pub(super) const AF_XDP: i32 = 44;
pub(super) const SOL_XDP: i32 = 283;
pub(super) const XDP_MMAP_OFFSETS: i32 = 1;
pub(super) const XDP_RX_RING: i32 = 2;
pub(super) const XDP_TX_RING: i32 = 3;
pub(super) const XDP_UMEM_REG: i32 = 4;
pub(super) const XDP_UMEM_FILL_RING: i32 = 5;
pub(super) const XDP_UMEM_COMPLETION_RING: i32 = 6;
pub(super) const XDP_STATISTICS: i32 = 7;
pub(super) const XDP_COPY: u16 = 1 << 1;
pub(super) const XDP_UMEM_TX_METADATA_LEN: u32 = 1 << 2;
pub(super) const XDP_TX_METADATA: u32 = 1 << 1;
pub(super) const XDP_TXMD_FLAGS_CHECKSUM: u64 = 1 << 1;
pub(super) const PGOFF_RX: i64 = 0;
pub(super) const PGOFF_TX: i64 = 0x8000_0000;
pub(super) const PGOFF_FILL: i64 = 0x1_0000_0000;
pub(super) const PGOFF_COMP: i64 = 0x1_8000_0000;

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct RingOff {
    pub(super) producer: u64,
    pub(super) consumer: u64,
    pub(super) desc: u64,
    pub(super) flags: u64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct MmapOffsets {
    pub(super) rx: RingOff,
    pub(super) tx: RingOff,
    pub(super) fr: RingOff,
    pub(super) cr: RingOff,
}

#[repr(C)]
pub(super) struct UmemReg {
    pub(super) addr: u64,
    pub(super) len: u64,
    pub(super) chunk_size: u32,
    pub(super) headroom: u32,
    pub(super) flags: u32,
    pub(super) tx_metadata_len: u32,
}

#[repr(C)]
pub(super) struct SockaddrXdp {
    pub(super) family: u16,
    pub(super) flags: u16,
    pub(super) ifindex: u32,
    pub(super) queue_id: u32,
    pub(super) shared_umem_fd: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct XdpDesc {
    pub(super) addr: u64,
    pub(super) len: u32,
    pub(super) options: u32,
}

/// Kernel counters of one AF_XDP socket (struct xdp_statistics).
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct XdpStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// One ring shared with the kernel; we are the producer or the consumer, never both.
pub(super) struct Ring {
    pub(super) map: *mut libc::c_void,
    pub(super) map_len: usize,
    pub(super) prod: *const AtomicU32,
    pub(super) cons: *const AtomicU32,
    pub(super) desc: *mut u8,
    pub(super) mask: u32,
}

impl Ring {
    pub(super) fn prod(&self) -> u32 {
        unsafe { (*self.prod).load(Ordering::Acquire) }
    }
    pub(super) fn cons(&self) -> u32 {
        unsafe { (*self.cons).load(Ordering::Acquire) }
    }
    pub(super) fn set_prod(&self, v: u32) {
        unsafe { (*self.prod).store(v, Ordering::Release) }
    }
    pub(super) fn set_cons(&self, v: u32) {
        unsafe { (*self.cons).store(v, Ordering::Release) }
    }
    pub(super) fn addr_at(&self, i: u32) -> *mut u64 {
        unsafe { (self.desc as *mut u64).add((i & self.mask) as usize) }
    }
    pub(super) fn desc_at(&self, i: u32) -> *mut XdpDesc {
        unsafe { (self.desc as *mut XdpDesc).add((i & self.mask) as usize) }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}
