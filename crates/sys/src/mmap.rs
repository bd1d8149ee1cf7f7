//! Contract: a memory mapping owned by one value and unmapped when it is dropped: an
//! anonymous region, or a region the kernel shares through an fd (a packet ring, an
//! AF_XDP ring). Private to the crate: the modules that map memory hand out only safe
//! views of it (`packet_ring`, `xdp`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;

pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is a region of memory owned like a Box<[u8]>; nothing ties it to
// the thread that created it.
unsafe impl Send for Mapping {}

impl Mapping {
    /// mmap(2) `len` bytes readable and writable with `flags` (MAP_SHARED/MAP_PRIVATE,
    /// MAP_ANONYMOUS without `fd`, MAP_POPULATE, MAP_LOCKED, ...) at `offset` of `fd`.
    pub(crate) fn new(fd: Option<BorrowedFd<'_>>, len: usize, offset: i64, flags: libc::c_int) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let raw = fd.map_or(-1, |f| f.as_raw_fd());
        // SAFETY: a null hint lets the kernel choose fresh addresses: the new mapping
        // overlaps nothing of ours; no pointer is passed in.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, raw, offset) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr: NonNull::new(p.cast()).expect("mmap returned a non-null address"), len })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the region was mapped by `new` with this length and is unmapped once;
        // every view of it borrows the value that owns this Mapping.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
