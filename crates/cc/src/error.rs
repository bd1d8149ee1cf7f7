//! Contract: every failure of the loader is one `CcError` variant per operation (usage,
//! load, attach, register, an OS call), printed by `report` as one line
//! `ccarena-cc: <attempt>: <object>: <cause> (errno N)` on stderr, followed by the tail
//! of libbpf's and the verifier's log where there is one; `report` returns the exit code
//! (2 usage, 1 otherwise). ccarena.cc.loader parses these lines.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::available::AVAILABLE;

#[derive(Debug)]
pub enum CcError {
    Usage(String),
    Load {
        file: PathBuf,
        errno: Option<i32>,
        cause: String,
        log: Vec<String>,
    },
    Attach {
        file: PathBuf,
        map: String,
        errno: Option<i32>,
        cause: String,
        log: Vec<String>,
    },
    NotRegistered {
        file: PathBuf,
        name: String,
    },
    Io {
        attempt: String,
        object: String,
        err: io::Error,
    },
}

impl CcError {
    /// Print the error on stderr; returns the exit code.
    pub fn report(&self) -> i32 {
        let mut err = io::stderr().lock();
        let errno_s = |e: &Option<i32>| e.map(|n| format!(" (errno {n})")).unwrap_or_default();
        match self {
            CcError::Usage(msg) => {
                let _ = writeln!(err, "ccarena-cc: usage: {msg}");
                return 2;
            }
            CcError::Load {
                file,
                errno,
                cause,
                log,
            } => {
                let _ = writeln!(
                    err,
                    "ccarena-cc: load: {}: {cause}{}",
                    file.display(),
                    errno_s(errno)
                );
                if !log.is_empty() {
                    let _ = writeln!(
                        err,
                        "--- libbpf/verifier log (last {} lines) ---",
                        log.len()
                    );
                    for l in log {
                        let _ = writeln!(err, "{l}");
                    }
                }
            }
            CcError::Attach {
                file,
                map,
                errno,
                cause,
                log,
            } => {
                let _ = writeln!(
                    err,
                    "ccarena-cc: attach struct_ops {map}: {}: {cause}{}",
                    file.display(),
                    errno_s(errno)
                );
                for l in log {
                    let _ = writeln!(err, "{l}");
                }
            }
            CcError::NotRegistered { file, name } => {
                let _ = writeln!(
                    err,
                    "ccarena-cc: register: {}: attached, but {name:?} is not in {AVAILABLE} \
                     (the object's .name must be \"{name}\")",
                    file.display()
                );
            }
            CcError::Io {
                attempt,
                object,
                err: e,
            } => {
                let _ = writeln!(
                    err,
                    "ccarena-cc: {attempt}: {object}: {e}{}",
                    errno_s(&e.raw_os_error())
                );
            }
        }
        1
    }
}

