#![recursion_limit = "256"]
//! ccarena-link: a user-space link emulator for TCP congestion-control experiments.
//!
//! `link::Link` is the sans-IO core (queues, AQMs, the transmitter, delays, loss; time is
//! passed in; the crate is named after the program, its module `link` after what it
//! emulates); `shell` is the packet-I/O loop around it (AF_PACKET or AF_XDP ports,
//! forwarding threads); `config` turns the JSON config of contracts §3 into validated
//! parameters. See docs/link.md, docs/dev/link-design.md and the crate's module map in
//! docs/dev/architecture.md.
//!
//! No unsafe code: system calls, packet rings and AF_XDP go through ccarena-sys
//! (docs/dev/libraries.md).
#![forbid(unsafe_code)]

pub mod config;
pub mod impair;
pub mod link;
pub mod packet;
pub mod params;
pub mod queue;
pub mod rng;
pub mod shell;
pub mod stats;
pub mod transmitter;
