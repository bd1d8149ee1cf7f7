//! ccarena-cc — loads ccarena's BPF congestion controls (struct_ops) and holds their links
//! while runs use them (docs/dev/contracts.md §4, docs/algorithms.md).
//!
//! The library is the loader's machinery, shared by the production binary `ccarena-cc`
//! (subcommand `hold`) and the test aid `ccarena-cc-testaid` (built only with the
//! `testing` feature: `verify`, `mark`):
//! - `load`: open and load a BPF object, attach its struct_ops maps, with libbpf's log
//!   captured for errors;
//! - `hold`: the holder process: keep the links while a live holder file names the
//!   algorithm, report the guard's repairs;
//! - `available`: the kernel's list of registered algorithms (`registered(name)`);
//! - `stop`: SIGTERM/SIGINT/SIGHUP (a ccarena-sys signalfd) stop the loops, which poll;
//! - `error`: `CcError`, one variant per failing operation, printed as one line.
//!
//! No unsafe code: system calls go through ccarena-sys (docs/dev/libraries.md).
#![forbid(unsafe_code)]

pub mod available;
pub mod error;
pub mod hold;
pub mod load;
pub mod stop;
