//! `ccarena-cc-testaid`: test aids around the loader, never part of the shipped
//! `ccarena-cc` (built only with `cargo build -p ccarena-cc --features testing`; `make
//! test` builds it).
//!
//! ```text
//! ccarena-cc-testaid verify <obj.bpf.o>...
//!     open + load every object (verifier included), attach nothing; prints
//!     "ok <obj>" per object that loads; exit 0 if all load.
//! ccarena-cc-testaid mark --obj <ce_mark.bpf.o> --netns <name> --dev <ifname> --per-mille N
//!     attach bpf/test/ce_mark.bpf.c at tcx egress of <ifname> inside network namespace
//!     <name>, marking CE on N/1000 of the ECN-capable packets; prints "READY\n",
//!     detaches on SIGTERM/SIGINT (or when killed: the link dies with the process).
//!     Used by tests/integration/test_cc_bpf.py (DCTCP, this kernel has no ECN-marking
//!     qdisc).
//! ```
//!
//! Errors as `ccarena-cc` (ccarena_cc::error): one line on stderr, exit 1 or 2 (usage).

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ccarena_cc::error::CcError;
use ccarena_cc::load::{capture_log, clear_log, errno_of, load, log_tail};
use ccarena_cc::stop::{install_stop_handlers, stop_requested};
use libbpf_rs::{set_print, ObjectBuilder, PrintLevel};

/// CE-mark a fraction of the packets leaving <dev> in namespace <netns>.
fn mark(file: &Path, netns: &str, dev: &str, per_mille: u32) -> Result<(), CcError> {
    use libbpf_rs::AsRawLibbpf;
    let io_err = |attempt: &str, object: &str, err: io::Error| CcError::Io {
        attempt: attempt.into(),
        object: object.into(),
        err,
    };
    clear_log();
    let mk = |e: libbpf_rs::Error| CcError::Load {
        file: file.to_path_buf(),
        errno: errno_of(&e),
        cause: format!("{e:#}"),
        log: log_tail(),
    };
    let mut open = ObjectBuilder::default().open_file(file).map_err(mk)?;
    for mut m in open.maps_mut() {
        if m.name().to_string_lossy().ends_with(".rodata") {
            if let Some(v) = m.initial_value_mut() {
                if v.len() >= 4 {
                    v[..4].copy_from_slice(&per_mille.to_le_bytes());
                }
            }
        }
    }
    let obj = open.load().map_err(mk)?;
    let ns_path = format!("/run/netns/{netns}");
    let ns = fs::File::open(&ns_path).map_err(|e| io_err("open", &ns_path, e))?;
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io_err("setns", &ns_path, io::Error::last_os_error()));
    }
    let cdev = CString::new(dev).map_err(|_| CcError::Usage(format!("--dev {dev:?}")))?;
    let ifindex = unsafe { libc::if_nametoindex(cdev.as_ptr()) };
    if ifindex == 0 {
        return Err(io_err("if_nametoindex", dev, io::Error::last_os_error()));
    }
    let prog = obj
        .progs()
        .next()
        .ok_or_else(|| CcError::Usage("no program in the object".into()))?;
    let link = unsafe {
        libbpf_rs::libbpf_sys::bpf_program__attach_tcx(
            prog.as_libbpf_object().as_ptr(),
            ifindex as i32,
            std::ptr::null(),
        )
    };
    if link.is_null() {
        return Err(io_err(
            &format!("attach tcx egress {dev}"),
            &file.display().to_string(),
            io::Error::last_os_error(),
        ));
    }
    install_stop_handlers();
    println!("READY");
    let _ = io::stdout().flush();
    while !stop_requested() {
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libbpf_rs::libbpf_sys::bpf_link__destroy(link) };
    drop(obj);
    Ok(())
}

fn run(args: &[String]) -> Result<(), CcError> {
    set_print(Some((PrintLevel::Info, capture_log)));
    let usage = || {
        CcError::Usage(
            "ccarena-cc-testaid verify <obj>... | ccarena-cc-testaid mark --obj <obj> --netns <name> \
             --dev <ifname> [--per-mille N]"
                .into(),
        )
    };
    match args.first().map(String::as_str) {
        Some("verify") => {
            if args.len() < 2 {
                return Err(usage());
            }
            let mut failed = None;
            for f in &args[1..] {
                match load(Path::new(f)) {
                    Ok(_) => println!("ok {f}"),
                    Err(e) => {
                        e.report();
                        failed = Some(());
                    }
                }
            }
            if failed.is_some() {
                std::process::exit(1);
            }
            Ok(())
        }
        Some("mark") => {
            let (mut obj, mut netns, mut dev, mut pm) = (None, None, None, 100u32);
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                let mut val = || it.next().cloned().ok_or_else(usage);
                match a.as_str() {
                    "--obj" => obj = Some(PathBuf::from(val()?)),
                    "--netns" => netns = Some(val()?),
                    "--dev" => dev = Some(val()?),
                    "--per-mille" => pm = val()?.parse().map_err(|_| usage())?,
                    _ => return Err(usage()),
                }
            }
            let (Some(obj), Some(netns), Some(dev)) = (obj, netns, dev) else {
                return Err(usage());
            };
            mark(&obj, &netns, &dev, pm.min(1000))
        }
        _ => Err(usage()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        std::process::exit(e.report());
    }
}
