//! `ccarena-cc`, the production loader: one subcommand.
//!
//! ```text
//! ccarena-cc hold --obj <obj.bpf.o> --name <kernel_name> [--watch <dir>] [--poll-ms N]
//!     load, attach every struct_ops map of the object as a BPF link
//!     (SEC(".struct_ops.link")), check that <kernel_name> is now listed in
//!     /proc/sys/net/ipv4/tcp_available_congestion_control, print
//!     "READY <kernel_name>\n" on stdout, then hold the links while any holder file
//!     in <dir> names a live process (ccarena_cc::hold has the whole contract).
//! ```
//!
//! `ccarena-cc --version` prints `ccarena-cc <version> (git <commit>)`.
//!
//! Errors: one line `ccarena-cc: <attempt>: <object>: <cause> (errno N)` on stderr,
//! followed by the tail of libbpf's/verifier's log for load failures; exit 1 (runtime)
//! or 2 (usage). Test aids (`verify`, `mark`) live in `ccarena-cc-testaid`.
//! No unsafe code: system calls go through ccarena-sys (docs/dev/libraries.md).
#![forbid(unsafe_code)]

use std::ffi::CString;
use std::path::PathBuf;
use std::time::Duration;

use ccarena_cc::error::CcError;
use ccarena_cc::hold::hold;
use ccarena_cc::load::capture_log;
use libbpf_rs::{set_print, PrintLevel};

fn run(args: &[String]) -> Result<(), CcError> {
    set_print(Some((PrintLevel::Info, capture_log)));
    let usage = || {
        CcError::Usage(
            "ccarena-cc hold --obj <obj> --name <kernel_name> [--watch <dir>] [--poll-ms N]".into(),
        )
    };
    match args.first().map(String::as_str) {
        Some("--version" | "-V") => {
            println!("{}", env!("CCARENA_VERSION"));
            Ok(())
        }
        Some("hold") => {
            let mut obj = None;
            let mut name = None;
            let mut watch = None;
            let mut poll_ms = 1000u64;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                let mut val = || it.next().cloned().ok_or_else(usage);
                match a.as_str() {
                    "--obj" => obj = Some(PathBuf::from(val()?)),
                    "--name" => name = Some(val()?),
                    "--watch" => watch = Some(PathBuf::from(val()?)),
                    "--poll-ms" => poll_ms = val()?.parse().map_err(|_| usage())?,
                    _ => return Err(usage()),
                }
            }
            let (Some(obj), Some(name)) = (obj, name) else {
                return Err(usage());
            };
            if CString::new(name.clone()).is_err() || name.len() > 15 {
                return Err(CcError::Usage(format!("--name {name:?}: at most 15 bytes")));
            }
            hold(
                &obj,
                &name,
                watch.as_deref(),
                Duration::from_millis(poll_ms.max(10)),
            )
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
