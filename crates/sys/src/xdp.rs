//! Contract: one AF_XDP socket with its UMEM and its four rings
//! (Documentation/networking/af_xdp.rst; the structs and constants are libc's, from
//! linux/if_xdp.h). `Xsk::open` creates the socket, maps and registers the UMEM, sizes
//! and maps the rings, puts every receive frame on the fill ring and binds to one queue
//! of one interface. The UMEM is split in two: receive frames (written by the kernel)
//! and transmit frames (written by us). Receiving is whole here (`recv`: frames from
//! the RX ring, each lent to a callback, then given back on the fill ring); for
//! transmitting the caller keeps its own ring logic over `tx_ring` and `comp_ring` and
//! copies frames in with `write_frame`.
//!
//! Why it is sound:
//! - the kernel writes a receive frame only while its address is on the fill ring or
//!   the RX ring, between our Release store of the fill producer and its Release store
//!   of the RX producer (which `recv` loads with Acquire); `recv` lends a frame only
//!   after taking it off the RX ring and returns it to the fill ring only after the
//!   callback, and nothing else writes the fill ring or the receive frames;
//! - transmit frames are only read by the kernel; `write_frame` copies into them with
//!   raw copies (no reference into the UMEM outlives a call) and refuses addresses
//!   outside the transmit part, so a caller that writes a frame still in flight makes
//!   the kernel send wrong bytes, never touches memory outside its own frames;
//! - ring slots are read and written volatile at masked indices inside their mapping,
//!   and every offset the kernel gives is checked against the mapping first;
//! - the kernel pins the UMEM's pages when it is registered and keeps them until the
//!   socket is gone: it never writes through our addresses, so unmapping in any order
//!   at drop cannot make it write into memory reused for something else.

use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::fd::owned;
use crate::mmap::Mapping;
use crate::sock::{getsockopt, setsockopt};

/// What `Xsk::open` sets up.
#[derive(Debug, Clone, Copy)]
pub struct XskConfig {
    pub ifindex: u32,
    pub queue_id: u32,
    /// Bytes per UMEM frame: a power of two from 2048 to the page size.
    pub chunk_size: u32,
    /// Receive frames (= fill and RX ring size) and transmit frames (= TX and
    /// completion ring size): powers of two.
    pub rx_frames: u32,
    pub tx_frames: u32,
    /// Bytes of TX metadata in front of each transmitted frame (0: none; else the size
    /// of xsk_tx_metadata, kernel >= 6.8).
    pub tx_metadata_len: u32,
    /// sockaddr_xdp flags (XDP_COPY, ...).
    pub bind_flags: u16,
}

/// The step of `Xsk::open` that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XskStep {
    Config,
    Socket,
    MapUmem,
    RegisterUmem,
    RingSize,
    MmapOffsets,
    MapRing,
    Bind,
}

#[derive(Debug)]
pub struct XskError {
    pub step: XskStep,
    pub cause: io::Error,
}

/// Kinds of ring entries: frame addresses (fill, completion) and descriptors (RX, TX).
pub trait RingEntry: Copy + private::Sealed {}
impl RingEntry for u64 {}
impl RingEntry for libc::xdp_desc {}
mod private {
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for libc::xdp_desc {}
}

/// One ring shared with the kernel: its producer and consumer indices and its entries.
pub struct Ring<T: RingEntry> {
    prod: *const AtomicU32,
    cons: *const AtomicU32,
    desc: *mut T,
    mask: u32,
    _map: Mapping,
    _t: PhantomData<T>,
}

// SAFETY: the pointers point into the ring's own mapping, which moves with it.
unsafe impl<T: RingEntry> Send for Ring<T> {}

impl<T: RingEntry> Ring<T> {
    fn map(fd: BorrowedFd<'_>, off: &libc::xdp_ring_offset, pgoff: u64, n: u32) -> io::Result<Ring<T>> {
        let bad = || io::Error::from(io::ErrorKind::InvalidData);
        let len = (off.desc as usize).checked_add(n as usize * std::mem::size_of::<T>()).ok_or_else(bad)?;
        let word_ok = |o: u64| o.is_multiple_of(4) && o as usize + 4 <= len;
        if !word_ok(off.producer) || !word_ok(off.consumer) || !(off.desc as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(bad());
        }
        let map = Mapping::new(Some(fd), len, pgoff as i64, libc::MAP_SHARED | libc::MAP_POPULATE)?;
        let b = map.ptr();
        // SAFETY: the offsets were checked to lie inside the mapping, aligned.
        let (prod, cons, desc) = unsafe { (b.add(off.producer as usize), b.add(off.consumer as usize), b.add(off.desc as usize)) };
        Ok(Ring { prod: prod.cast(), cons: cons.cast(), desc: desc.cast(), mask: n - 1, _map: map, _t: PhantomData })
    }

    /// The producer index (Acquire: entries before it are visible).
    pub fn prod(&self) -> u32 {
        // SAFETY: an aligned u32 inside the mapping that the kernel updates atomically.
        unsafe { (*self.prod).load(Ordering::Acquire) }
    }
    pub fn cons(&self) -> u32 {
        // SAFETY: as for `prod`.
        unsafe { (*self.cons).load(Ordering::Acquire) }
    }
    /// Publish entries up to `v` (Release: the entries written before are visible).
    pub fn set_prod(&mut self, v: u32) {
        // SAFETY: as for `prod`.
        unsafe { (*self.prod).store(v, Ordering::Release) }
    }
    pub fn set_cons(&mut self, v: u32) {
        // SAFETY: as for `prod`.
        unsafe { (*self.cons).store(v, Ordering::Release) }
    }
    /// Entry `i` (taken modulo the ring size).
    pub fn get(&self, i: u32) -> T {
        // SAFETY: the masked index is below the ring size, inside the mapping; T is
        // integers only, so any bytes are a value.
        unsafe { self.desc.add((i & self.mask) as usize).read_volatile() }
    }
    pub fn set(&mut self, i: u32, v: T) {
        // SAFETY: as for `get`.
        unsafe { self.desc.add((i & self.mask) as usize).write_volatile(v) }
    }
    /// Entries the ring holds.
    pub fn size(&self) -> u32 {
        self.mask + 1
    }
}

/// An AF_XDP socket, its UMEM and its rings.
pub struct Xsk {
    // dropped in this order: the socket, then the rings, then the UMEM
    fd: OwnedFd,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    umem: Mapping,
    chunk: u64,
    /// Where the transmit frames start.
    tx_base: u64,
    txmd_len: u32,
}

impl Xsk {
    pub fn open(cfg: &XskConfig) -> Result<Xsk, XskError> {
        let fail = |step| move |cause| XskError { step, cause };
        let pow2 = |n: u32| n.is_power_of_two();
        if !pow2(cfg.chunk_size) || cfg.chunk_size < 2048 || !pow2(cfg.rx_frames) || !pow2(cfg.tx_frames)
            || cfg.tx_metadata_len as u64 + 8 > cfg.chunk_size as u64 / 2
        {
            return Err(fail(XskStep::Config)(io::Error::from(io::ErrorKind::InvalidInput)));
        }
        let chunk = cfg.chunk_size as u64;
        let frames = cfg.rx_frames as u64 + cfg.tx_frames as u64;
        let umem_len = usize::try_from(frames * chunk).map_err(|_| fail(XskStep::Config)(io::ErrorKind::InvalidInput.into()))?;
        // SAFETY: socket takes no pointers and returns a new fd.
        let fd = unsafe { owned(libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0)) }
            .map_err(fail(XskStep::Socket))?;
        let umem = Mapping::new(None, umem_len, 0, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE)
            .map_err(fail(XskStep::MapUmem))?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr() as u64,
            len: umem_len as u64,
            chunk_size: cfg.chunk_size,
            headroom: 0,
            flags: if cfg.tx_metadata_len > 0 { libc::XDP_UMEM_TX_METADATA_LEN } else { 0 },
            tx_metadata_len: cfg.tx_metadata_len,
        };
        let reg_len = std::mem::size_of::<libc::xdp_umem_reg>() as libc::socklen_t;
        // SAFETY: the kernel reads `reg`; the region it names is the UMEM mapping, which
        // the returned Xsk owns for as long as the socket lives (see the module
        // contract for what the kernel does with it).
        let rc = unsafe { libc::setsockopt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_UMEM_REG, (&reg as *const libc::xdp_umem_reg).cast(), reg_len) };
        crate::cvt(rc).map_err(fail(XskStep::RegisterUmem))?;
        for (opt, n) in [
            (libc::XDP_UMEM_FILL_RING, cfg.rx_frames),
            (libc::XDP_UMEM_COMPLETION_RING, cfg.tx_frames),
            (libc::XDP_RX_RING, cfg.rx_frames),
            (libc::XDP_TX_RING, cfg.tx_frames),
        ] {
            setsockopt(fd.as_fd(), libc::SOL_XDP, opt, &(n as libc::c_int)).map_err(fail(XskStep::RingSize))?;
        }
        let (off, len) = getsockopt::<libc::xdp_mmap_offsets>(fd.as_fd(), libc::SOL_XDP, libc::XDP_MMAP_OFFSETS)
            .map_err(fail(XskStep::MmapOffsets))?;
        if len != std::mem::size_of::<libc::xdp_mmap_offsets>() {
            return Err(fail(XskStep::MmapOffsets)(io::Error::from(io::ErrorKind::InvalidData)));
        }
        let map_err = fail(XskStep::MapRing);
        let rx = Ring::map(fd.as_fd(), &off.rx, libc::XDP_PGOFF_RX_RING as u64, cfg.rx_frames).map_err(map_err)?;
        let tx = Ring::map(fd.as_fd(), &off.tx, libc::XDP_PGOFF_TX_RING as u64, cfg.tx_frames).map_err(map_err)?;
        let mut fill = Ring::map(fd.as_fd(), &off.fr, libc::XDP_UMEM_PGOFF_FILL_RING, cfg.rx_frames).map_err(map_err)?;
        let comp = Ring::map(fd.as_fd(), &off.cr, libc::XDP_UMEM_PGOFF_COMPLETION_RING, cfg.tx_frames)
            .map_err(map_err)?;
        // Every receive frame starts on the fill ring.
        for i in 0..cfg.rx_frames {
            fill.set(i, i as u64 * chunk);
        }
        fill.set_prod(cfg.rx_frames);
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: cfg.bind_flags,
            sxdp_ifindex: cfg.ifindex,
            sxdp_queue_id: cfg.queue_id,
            sxdp_shared_umem_fd: 0,
        };
        let sa_len = std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t;
        // SAFETY: the kernel reads `sa_len` bytes of `sa`.
        let rc = unsafe { libc::bind(fd.as_raw_fd(), (&sa as *const libc::sockaddr_xdp).cast(), sa_len) };
        crate::cvt(rc).map_err(fail(XskStep::Bind))?;
        Ok(Xsk { fd, rx, tx, fill, comp, umem, chunk, tx_base: cfg.rx_frames as u64 * chunk, txmd_len: cfg.tx_metadata_len })
    }

    /// Bytes per UMEM frame.
    pub fn chunk(&self) -> u64 {
        self.chunk
    }

    /// The addresses of the transmit frames (the caller keeps track of which are free).
    pub fn tx_frames(&self) -> impl DoubleEndedIterator<Item = u64> {
        let (base, chunk, n) = (self.tx_base, self.chunk, self.tx.size() as u64);
        (0..n).map(move |i| base + i * chunk)
    }

    /// Hand up to `max` received frames to `f(frame, meta)`, in arrival order, then give
    /// them back to the kernel. `meta` is the 8 bytes in front of the frame inside its
    /// chunk (what an XDP program put there with bpf_xdp_adjust_meta), 0 if there is no
    /// room; they are cleared after reading, so a later frame in the same chunk without
    /// metadata reads 0. `f` runs only after the RX producer was read.
    pub fn recv(&mut self, max: usize, mut f: impl FnMut(&[u8], u64)) -> usize {
        let cons = self.rx.cons();
        let n = self.rx.prod().wrapping_sub(cons).min(max.min(u32::MAX as usize) as u32);
        if n == 0 {
            return 0;
        }
        let fprod = self.fill.prod();
        let mut refilled = 0u32;
        for i in 0..n {
            let d = self.rx.get(cons.wrapping_add(i));
            let base = d.addr & !(self.chunk - 1);
            let (addr, len) = (d.addr as usize, d.len as usize);
            // the kernel gives back only frames of the fill ring; anything else is
            // skipped (and never put on the fill ring)
            if base < self.tx_base && addr.saturating_add(len) <= (base + self.chunk) as usize {
                let p = self.umem.ptr();
                let meta = if d.addr >= base + 8 {
                    // SAFETY: 8 bytes inside this frame's chunk, which is ours until it
                    // goes back on the fill ring below; no reference into it is alive.
                    unsafe {
                        let m = p.add(addr - 8).cast::<u64>();
                        let v = m.read_unaligned();
                        m.write_unaligned(0);
                        v
                    }
                } else {
                    0
                };
                // SAFETY: the frame lies inside its chunk (checked above), inside the
                // UMEM; the kernel does not write it before it is back on the fill
                // ring, after `f` returns (module contract).
                let data = unsafe { std::slice::from_raw_parts(p.add(addr), len) };
                f(data, meta);
                self.fill.set(fprod.wrapping_add(refilled), base);
                refilled += 1;
            }
        }
        self.rx.set_cons(cons.wrapping_add(n));
        self.fill.set_prod(fprod.wrapping_add(refilled));
        n as usize
    }

    /// The TX ring: the caller produces descriptors and reads the kernel's consumer.
    pub fn tx_ring(&mut self) -> &mut Ring<libc::xdp_desc> {
        &mut self.tx
    }

    /// Take every completed transmit frame off the completion ring: `f(chunk address)`.
    pub fn reclaim(&mut self, mut f: impl FnMut(u64)) {
        let (p, c) = (self.comp.prod(), self.comp.cons());
        for i in 0..p.wrapping_sub(c) {
            f(self.comp.get(c.wrapping_add(i)) & !(self.chunk - 1));
        }
        self.comp.set_cons(p);
    }

    /// Copy `frame` into the transmit frame at `addr` (which leaves room for the TX
    /// metadata before it) and, with `csum` = (start, offset), ask the kernel to fill in
    /// the L4 checksum (XDP_TXMD_FLAGS_CHECKSUM). Returns the descriptor to put on the
    /// TX ring, or None if `addr` is no transmit frame or the frame does not fit.
    pub fn write_frame(&mut self, addr: u64, frame: &[u8], csum: Option<(u16, u16)>) -> Option<libc::xdp_desc> {
        let base = addr & !(self.chunk - 1);
        let md = self.txmd_len as u64;
        if base < self.tx_base || addr < base + md || addr + frame.len() as u64 > base + self.chunk
            || base + self.chunk > self.umem.len() as u64
        {
            return None;
        }
        let p = self.umem.ptr();
        // SAFETY: [addr, addr + len) lies in one transmit frame of the UMEM (checked);
        // the kernel only reads transmit frames, and no reference into it is alive.
        unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), p.add(addr as usize), frame.len()) };
        let mut options = 0;
        if let (Some((start, off)), true) = (csum, md >= std::mem::size_of::<libc::xsk_tx_metadata>() as u64) {
            let m = libc::xsk_tx_metadata {
                flags: libc::XDP_TXMD_FLAGS_CHECKSUM as u64,
                xsk_tx_metadata_union: libc::__c_anonymous_xsk_tx_metadata_union {
                    request: libc::xsk_tx_metadata_request { csum_start: start, csum_offset: off },
                },
            };
            // SAFETY: the metadata area [addr - md, addr) is inside the same transmit
            // frame (checked) and at least one xsk_tx_metadata long.
            unsafe { p.add((addr - md) as usize).cast::<libc::xsk_tx_metadata>().write_unaligned(m) };
            options = libc::XDP_TX_METADATA;
        }
        Some(libc::xdp_desc { addr, len: frame.len() as u32, options })
    }

    /// Ask the kernel to send what is on the TX ring (sendto with no data).
    pub fn kick(&self) -> io::Result<()> {
        // SAFETY: no data, no address: the kernel reads nothing from us.
        let r = unsafe { libc::sendto(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// The socket's kernel counters (XDP_STATISTICS).
    pub fn stats(&self) -> io::Result<libc::xdp_statistics> {
        getsockopt(self.fd.as_fd(), libc::SOL_XDP, libc::XDP_STATISTICS).map(|(s, _)| s)
    }
}

impl AsFd for Xsk {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now_ns;
    use crate::fd::Outcome;
    use crate::sock::{bind_packet, if_index, recv, socket};

    #[test]
    fn a_frame_sent_through_the_tx_ring_on_loopback_arrives_and_completes() {
        let lo = if_index("lo").unwrap();
        let rx = socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
            .expect("an AF_PACKET socket needs CAP_NET_RAW: run the tests as root, as `make test` does");
        bind_packet(rx.as_fd(), lo, libc::ETH_P_ALL as u16).unwrap();
        let md = std::mem::size_of::<libc::xsk_tx_metadata>() as u32;
        let cfg = XskConfig { ifindex: lo, queue_id: 0, chunk_size: 2048, rx_frames: 64, tx_frames: 32, tx_metadata_len: md, bind_flags: libc::XDP_COPY };
        let mut x = Xsk::open(&cfg).unwrap();
        assert_eq!(Xsk::open(&XskConfig { rx_frames: 48, ..cfg }).err().map(|e| e.step), Some(XskStep::Config));
        let tx: Vec<u64> = x.tx_frames().collect();
        assert_eq!((tx.len(), tx[0], tx[31]), (32, 64 * 2048, 95 * 2048));
        // an experimental EtherType (IEEE 802 local use), zero MACs as lo has
        let marker = format!("ccarena-sys xdp test {}", std::process::id());
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x88, 0xb5]);
        frame.extend_from_slice(marker.as_bytes());
        assert!(x.write_frame(64, &frame, None).is_none(), "a receive frame is not ours to write");
        assert!(x.write_frame(tx[0], &frame, None).is_none(), "no room for the metadata");
        assert!(x.write_frame(tx[0] + 64, &[0u8; 2048], None).is_none(), "past the chunk");
        let d = x.write_frame(tx[0] + 64, &frame, None).unwrap();
        assert_eq!((d.addr, d.len as usize, d.options), (tx[0] + 64, frame.len(), 0));
        let ring = x.tx_ring();
        let p = ring.prod();
        ring.set(p, d);
        ring.set_prod(p.wrapping_add(1));
        x.kick().unwrap();
        let deadline = now_ns() + 2_000_000_000;
        let (mut arrived, mut completed) = (false, Vec::new());
        let mut buf = [0u8; 2048];
        while now_ns() < deadline && (!arrived || completed.is_empty()) {
            if let Ok(Outcome::Done(n)) = recv(rx.as_fd(), &mut buf, 0) {
                arrived |= buf[..n] == frame[..];
            }
            x.reclaim(|a| completed.push(a));
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(arrived, "the frame did not come back on loopback");
        assert_eq!(completed, vec![tx[0]], "its chunk completes");
        assert_eq!(x.recv(16, |_, _| panic!("no XDP program redirects to this socket")), 0);
        let st = x.stats().unwrap();
        assert_eq!(st.tx_invalid_descs, 0);
    }
}
