//! Contract: `ccarena-flow --config host.json` — read and validate the config (exit 2
//! with one line on stderr when it is wrong), set the host up, run the event loop
//! (docs/dev/contracts.md §2), exit 0 after `DONE`, 1 on a runtime failure.
//!
//! No unsafe code: system calls go through ccarena-sys (docs/dev/libraries.md).
#![forbid(unsafe_code)]

mod config;
mod conn;
mod error;
mod event_loop;
mod flows;
mod net;
mod outputs;
mod records;
mod rng;
mod sampler;
mod timers;
mod udp;
mod wire;

use error::Failure;

const USAGE: &str = "usage: ccarena-flow --config HOST.json\n\
  Drives the TCP flows of one host (see docs/flow-engine.md).\n\
  Prints READY when listening, waits for `GO <t0_ns>` on stdin, prints DONE at the end.";

fn parse_args(args: &[String]) -> Result<String, Failure> {
    let mut config = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--config" | "-c" => {
                i += 1;
                config = Some(args.get(i).cloned().ok_or_else(|| Failure::config("parse arguments", "--config", "needs a path"))?);
            }
            s if s.starts_with("--config=") => config = Some(s["--config=".len()..].to_string()),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--version" | "-V" => {
                println!("{}", env!("CCARENA_VERSION"));
                std::process::exit(0);
            }
            other => return Err(Failure::config("parse arguments", other, "unknown argument (see --help)")),
        }
        i += 1;
    }
    config.ok_or_else(|| Failure::config("parse arguments", "--config", "missing (see --help)"))
}

fn run() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = parse_args(&args)?;
    let text = std::fs::read_to_string(&path).map_err(|e| Failure::config("read config", path.as_str(), e.to_string()))?;
    let cfg = config::parse(&text).map_err(|e| Failure::config("read config", path.as_str(), e.to_string()))?;
    let engine = event_loop::Engine::setup(cfg)?;
    engine.run()
}

fn main() {
    // Die with the orchestrator: no flow outlives its run (contracts §2).
    ccarena_sys::parent::die_with_parent("ccarena-flow");
    if let Err(f) = run() {
        eprintln!("{f}");
        std::process::exit(f.exit_code());
    }
}
