//! Contract: network namespaces as files: whether a path is a namespace file (nsfs,
//! /run/netns/<name> or /proc/<pid>/ns/net), and entering the namespace an open one
//! names (setns) for the calling thread.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

/// Whether `path` lies on nsfs (the namespace file system).
pub fn is_namespace_file(path: &Path) -> io::Result<bool> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: statfs is integers only, valid all-zero.
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and read during the call; the kernel writes one
    // statfs into `sfs`.
    crate::cvt(unsafe { libc::statfs(c.as_ptr(), &mut sfs) })?;
    Ok(sfs.f_type == libc::NSFS_MAGIC)
}

/// Move the calling thread into the network namespace `ns` (an open namespace file).
pub fn enter_net(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns takes an fd and a flag, no pointer.
    crate::cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_file_is_told_from_a_plain_one() {
        assert!(is_namespace_file(Path::new("/proc/self/ns/net")).unwrap());
        assert!(!is_namespace_file(Path::new("/proc/self/status")).unwrap());
        assert!(is_namespace_file(Path::new("/no/such/file")).is_err());
    }
}
