//! The XDP program that feeds an AF_XDP port, assembled here (17 instructions, no BPF
//! object file): it writes `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) into 8 bytes of
//! metadata in front of the frame and redirects the frame to the port's socket through
//! an XSKMAP.
//!
//! Contract: `attach` creates the map, inserts the socket, loads the program and attaches
//! it to the interface in native mode with a bpf_link; an `XdpAttachment` owns the three
//! fds and closes them (link first) on drop, so nothing stays attached after the process
//! ends, however it ends. A failure half-way closes what was created.

use std::os::fd::RawFd;

use crate::shell::error::ShellError;

const BPF_MAP_CREATE: i32 = 0;
const BPF_MAP_UPDATE_ELEM: i32 = 2;
const BPF_PROG_LOAD: i32 = 5;
const BPF_LINK_CREATE: i32 = 28;
const BPF_MAP_TYPE_XSKMAP: u64 = 17;
const BPF_PROG_TYPE_XDP: u64 = 6;
const BPF_XDP: u64 = 37;
const XDP_FLAGS_DRV_MODE: u64 = 1 << 2;
/// Name of the XDP program as `bpftool prog` shows it (the leak checks look for it).
pub const PROG_NAME: &[u8; 8] = b"cca_xsk\0";

fn bpf(cmd: i32, attr: &mut [u64; 16]) -> i64 {
    unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), std::mem::size_of::<[u64; 16]>()) }
}

/// One eBPF instruction (struct bpf_insn: code, dst:4|src:4, off, imm), little-endian.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    code as u64 | (((dst | (src << 4)) as u64) << 8) | ((off as u16 as u64) << 16) | ((imm as u32 as u64) << 32)
}

/// The XDP program: stamp the arrival time, redirect to the port's AF_XDP socket.
pub(super) fn xdp_program(map_fd: RawFd) -> Vec<u64> {
    vec![
        insn(0xbf, 6, 1, 0, 0),  // r6 = ctx
        insn(0xb7, 2, 0, 0, -8), // r2 = -8
        insn(0x85, 0, 0, 0, 54), // r0 = bpf_xdp_adjust_meta(ctx, -8)
        insn(0x55, 0, 0, 7, 0),  // if r0 != 0 goto redirect (no room: no stamp)
        insn(0x85, 0, 0, 0, 5),  // r0 = bpf_ktime_get_ns()
        insn(0x61, 2, 6, 8, 0),  // r2 = ctx->data_meta
        insn(0x61, 3, 6, 0, 0),  // r3 = ctx->data
        insn(0xbf, 4, 2, 0, 0),  // r4 = r2
        insn(0x07, 4, 0, 0, 8),  // r4 += 8
        insn(0x2d, 4, 3, 1, 0),  // if r4 > r3 goto redirect (the verifier's bound)
        insn(0x7b, 2, 0, 0, 0),  // *(u64 *)r2 = r0
        insn(0x61, 2, 6, 16, 0), // redirect: r2 = ctx->rx_queue_index
        insn(0x18, 1, 1, 0, map_fd), // r1 = the XSKMAP (BPF_PSEUDO_MAP_FD)
        0,
        insn(0xb7, 3, 0, 0, 2),  // r3 = XDP_PASS if the queue has no socket
        insn(0x85, 0, 0, 0, 51), // r0 = bpf_redirect_map(r1, r2, r3)
        insn(0x95, 0, 0, 0, 0),  // exit
    ]
}

/// The map, program and link of one port's XDP program.
pub(super) struct XdpAttachment {
    map_fd: RawFd,
    prog_fd: RawFd,
    link_fd: RawFd,
}

/// Redirect every frame arriving on `ifindex` (queue 0) to the AF_XDP socket `sock_fd`,
/// stamped with its arrival time.
pub(super) fn attach(ifindex: u32, sock_fd: RawFd, ifname: &str) -> Result<XdpAttachment, ShellError> {
    let err = |attempt: &str| ShellError::last_os(attempt, ifname);
    let mut a = [0u64; 16];
    a[0] = BPF_MAP_TYPE_XSKMAP | (4 << 32);
    a[1] = 4 | (1 << 32);
    // map_name "cca_xsk" (bytes 28..36 of the attribute), so tools can tell it is ours
    a[3] = (u32::from_le_bytes(*b"cca_") as u64) << 32;
    a[4] = u32::from_le_bytes(*b"xsk\0") as u64;
    let map_fd = bpf(BPF_MAP_CREATE, &mut a);
    if map_fd < 0 {
        return Err(err("create XSKMAP"));
    }
    let mut att = XdpAttachment { map_fd: map_fd as RawFd, prog_fd: -1, link_fd: -1 };
    let (key, val) = (0u32, sock_fd as u32);
    let mut a = [0u64; 16];
    a[0] = map_fd as u64;
    a[1] = &key as *const u32 as u64;
    a[2] = &val as *const u32 as u64;
    if bpf(BPF_MAP_UPDATE_ELEM, &mut a) < 0 {
        return Err(err("insert socket into XSKMAP"));
    }
    let prog = xdp_program(att.map_fd);
    let lic = b"GPL\0";
    let mut log = vec![0u8; 1 << 16];
    let mut a = [0u64; 16];
    a[0] = BPF_PROG_TYPE_XDP | ((prog.len() as u64) << 32);
    a[1] = prog.as_ptr() as u64;
    a[2] = lic.as_ptr() as u64;
    a[3] = 1 | ((log.len() as u64) << 32);
    a[4] = log.as_mut_ptr() as u64;
    a[6] = u64::from_le_bytes(*PROG_NAME); // prog_name (bytes 48..64)
    let prog_fd = bpf(BPF_PROG_LOAD, &mut a);
    if prog_fd < 0 {
        let mut e = err("load the XDP program");
        let v = String::from_utf8_lossy(&log).trim_end_matches('\0').trim().to_string();
        e.attempt = format!("load the XDP program (verifier: {v})");
        return Err(e);
    }
    att.prog_fd = prog_fd as RawFd;
    let mut a = [0u64; 16];
    a[0] = prog_fd as u64 | ((ifindex as u64) << 32);
    a[1] = BPF_XDP | (XDP_FLAGS_DRV_MODE << 32);
    let link_fd = bpf(BPF_LINK_CREATE, &mut a);
    if link_fd < 0 {
        return Err(err("attach the XDP program (native mode)"));
    }
    att.link_fd = link_fd as RawFd;
    Ok(att)
}

impl Drop for XdpAttachment {
    fn drop(&mut self) {
        // the link first: the program stops redirecting before the map and program go
        for fd in [self.link_fd, self.prog_fd, self.map_fd] {
            if fd >= 0 {
                unsafe { libc::close(fd) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_encodes_the_map_as_a_pseudo_fd() {
        let p = xdp_program(7);
        assert_eq!(p.len(), 17);
        assert_eq!(p[12] & 0xff, 0x18);
        assert_eq!((p[12] >> 12) & 0xf, 1, "src_reg = BPF_PSEUDO_MAP_FD");
        assert_eq!(p[12] >> 32, 7);
        assert_eq!(p[16] & 0xff, 0x95, "ends with exit");
    }
}
