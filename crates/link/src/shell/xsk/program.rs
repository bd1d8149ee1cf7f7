//! The XDP program that feeds an AF_XDP port: bpf/link/xsk_redirect.bpf.c (compiled by
//! build.rs and embedded), loaded and attached with libbpf-rs, as ccarena-trace loads
//! its probe. It writes `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) into 8 bytes of metadata
//! in front of each arriving frame and redirects the frame to the port's socket through
//! its XSKMAP.
//!
//! Contract: `attach` loads one copy of the object per port, puts the socket into the
//! map at key 0 (queue 0) and attaches the program to the interface in native mode with
//! a bpf_link (ccarena-sys: libbpf-rs attaches without a mode, which would fall back to
//! generic XDP where a device has no native XDP). The link holds the program and the
//! program its map, so the object is closed once attached: an `XdpAttachment` is the
//! link's fd, and closing it (at drop, or when the process ends however it ends)
//! detaches the program and frees both. A failure half-way drops what was created. Load
//! failures carry the tail of libbpf's log (the verifier's words).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use ccarena_sys::bpf;
use libbpf_rs::{set_print, MapCore, MapFlags, ObjectBuilder, PrintLevel};

use crate::shell::error::ShellError;

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o"));
/// Name of the XDP program as `bpftool prog` shows it (the leak checks look for it).
pub const PROG_NAME: &str = "cca_xsk";
const MAP_NAME: &str = "cca_xsk_map";
/// Lines of libbpf's log kept for an error message.
const LOG_TAIL: usize = 20;

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture_log(level: PrintLevel, msg: String) {
    if matches!(level, PrintLevel::Debug) {
        return;
    }
    let mut log = LOG.lock().unwrap_or_else(|p| p.into_inner());
    log.extend(msg.lines().map(String::from));
    let n = log.len();
    if n > 4 * LOG_TAIL {
        log.drain(0..n - LOG_TAIL);
    }
}

/// A libbpf-rs failure as the shell's error: the attempt, with libbpf's last words when
/// `with_log`, and the errno when libbpf kept one.
fn bpf_error(attempt: &str, ifname: &str, e: libbpf_rs::Error, with_log: bool) -> ShellError {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut errno = None;
    while let Some(x) = cur {
        if let Some(n) = x.downcast_ref::<io::Error>().and_then(io::Error::raw_os_error) {
            errno = Some(n);
            break;
        }
        cur = x.source();
    }
    let mut attempt = attempt.to_string();
    if with_log {
        let log = LOG.lock().unwrap_or_else(|p| p.into_inner());
        let tail = log[log.len().saturating_sub(LOG_TAIL)..].join("\n  ");
        if !tail.is_empty() {
            attempt = format!("{attempt} (libbpf: {tail})");
        }
    }
    let cause = match errno {
        Some(n) => io::Error::from_raw_os_error(n),
        None => io::Error::other(format!("{e:#}")),
    };
    ShellError::new(attempt, ifname, cause)
}

/// The bpf_link of one port's XDP program.
pub(super) struct XdpAttachment {
    _link: OwnedFd,
}

/// Redirect every frame arriving on `ifindex` (queue 0) to the AF_XDP socket `sock`,
/// stamped with its arrival time.
pub(super) fn attach(ifindex: u32, sock: BorrowedFd<'_>, ifname: &str) -> Result<XdpAttachment, ShellError> {
    set_print(Some((PrintLevel::Info, capture_log)));
    LOG.lock().unwrap_or_else(|p| p.into_inner()).clear();
    let open = ObjectBuilder::default()
        .open_memory(OBJECT)
        .map_err(|e| bpf_error("open the XDP program", ifname, e, true))?;
    let obj = open.load().map_err(|e| bpf_error("load the XDP program", ifname, e, true))?;
    let map = obj
        .maps()
        .find(|m| m.name() == MAP_NAME)
        .ok_or_else(|| ShellError::new("find the XSKMAP", ifname, io::Error::from(io::ErrorKind::NotFound)))?;
    let val = (sock.as_raw_fd() as u32).to_ne_bytes();
    map.update(&0u32.to_ne_bytes(), &val, MapFlags::ANY)
        .map_err(|e| bpf_error("insert socket into XSKMAP", ifname, e, false))?;
    let prog = obj
        .progs()
        .find(|p| p.name() == PROG_NAME)
        .ok_or_else(|| ShellError::new("find the XDP program", ifname, io::Error::from(io::ErrorKind::NotFound)))?;
    let link = bpf::attach_xdp_native(prog.as_fd(), ifindex).map_err(|e| ShellError::new("attach the XDP program (native mode)", ifname, e))?;
    Ok(XdpAttachment { _link: link })
}
