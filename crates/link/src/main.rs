//! `ccarena-link --config link.json`: lifecycle of contracts §3. Configuration errors
//! exit 2 before anything starts; setup/runtime errors exit 1; both print one line
//! `ccarena-link: <attempt>: <object>: <cause>` on stderr. `--version` prints
//! `ccarena-link <version> (git <commit>)`, `--help` the usage; both exit 0.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::exit;

use ccarena_link::config;
use ccarena_sys::signal::SignalFd;
use ccarena_sys::stdio::say;

const USAGE: &str = "usage: ccarena-link --config LINK.json\n\
  Emulates the link between two interfaces (docs/link.md, docs/dev/contracts.md §3).\n\
  Prints READY when forwarding, DONE after SIGTERM/SIGINT once link.json is written.";
use ccarena_link::shell::Shell;

fn die(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("ccarena-link: {msg}");
    exit(code)
}

fn main() {
    // Die with the orchestrator: the link never outlives its run (contracts §3).
    ccarena_sys::parent::die_with_parent("ccarena-link");
    let args: Vec<String> = std::env::args().collect();
    if args.iter().skip(1).any(|a| a == "--version" || a == "-V") {
        println!("{}", env!("CCARENA_VERSION"));
        return;
    }
    if args.iter().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    let path = match args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))
    {
        Some(p) => PathBuf::from(p),
        None => die(
            2,
            "parse arguments: argv: usage: ccarena-link --config link.json",
        ),
    };
    let cfg = match config::load(&path) {
        Ok(c) => c,
        Err(e) => die(
            2,
            format!("load config {}: {}: {}", path.display(), e.object, e.cause),
        ),
    };
    // Block SIGTERM/SIGINT before anything else so a signal during setup is not lost.
    let sig = SignalFd::new().unwrap_or_else(|e| die(1, format!("create signalfd: SIGTERM/SIGINT: {e}")));
    let mut shell = Shell::open(&cfg).unwrap_or_else(|e| die(1, e));
    say("READY");
    if let Err(e) = shell.run(&sig) {
        die(1, e);
    }
    let report = shell.finish();
    let p = std::path::Path::new(&cfg.out_dir).join("link.json");
    if let Err(e) = std::fs::write(&p, serde_json::to_vec_pretty(&report).unwrap()) {
        die(1, format!("write: {}: {}", p.display(), e));
    }
    say("DONE");
}
