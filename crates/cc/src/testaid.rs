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
//! No unsafe code: system calls go through ccarena-sys (docs/dev/libraries.md).
#![forbid(unsafe_code)]

use std::fs;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ccarena_cc::error::CcError;
use ccarena_cc::load::{capture_log, clear_log, errno_of, load, log_tail};
use ccarena_cc::stop::{install_stop_handlers, stop_requested};
use ccarena_sys::{bpf, ns, sock};
use libbpf_rs::{set_print, ObjectBuilder, PrintLevel};

/// CE-mark a fraction of the packets leaving <dev> in namespace <netns>.
fn mark(file: &Path, netns: &str, dev: &str, per_mille: u32) -> Result<(), CcError> {
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
    let ns_file = fs::File::open(&ns_path).map_err(|e| io_err("open", &ns_path, e))?;
    ns::enter_net(ns_file.as_fd()).map_err(|e| io_err("setns", &ns_path, e))?;
    let ifindex = sock::if_index(dev).map_err(|e| io_err("if_nametoindex", dev, e))?;
    let prog = obj
        .progs()
        .next()
        .ok_or_else(|| CcError::Usage("no program in the object".into()))?;
    let link = bpf::attach_tcx(prog.as_fd(), ifindex, bpf::Tcx::Egress)
        .map_err(|e| io_err(&format!("attach tcx egress {dev}"), &file.display().to_string(), e))?;
    install_stop_handlers().map_err(|e| io_err("create", "signalfd (SIGTERM/SIGINT/SIGHUP)", e))?;
    println!("READY");
    let _ = io::stdout().flush();
    while !stop_requested() {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(link);
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
