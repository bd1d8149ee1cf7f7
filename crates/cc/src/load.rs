//! Contract: open and load a BPF object (the verifier runs here), attach every
//! struct_ops map of it as a BPF link (whether a name is then registered: `available`).
//! libbpf's messages are captured (`capture_log`, installed by the binaries with
//! `libbpf_rs::set_print`) so a failure carries the tail of the log and the errno.

use std::io;
use std::path::Path;
use std::sync::Mutex;

use libbpf_rs::{Link, MapCore, MapType, ObjectBuilder, PrintLevel};

use crate::error::CcError;

const LOG_TAIL_LINES: usize = 40;

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// libbpf's print callback: keep the last lines of its log (debug level left out).
pub fn capture_log(level: PrintLevel, msg: String) {
    if matches!(level, PrintLevel::Debug) {
        return;
    }
    let mut log = LOG.lock().unwrap();
    for line in msg.lines() {
        log.push(line.to_string());
    }
    let n = log.len();
    if n > 4 * LOG_TAIL_LINES {
        log.drain(0..n - LOG_TAIL_LINES);
    }
}

pub fn log_tail() -> Vec<String> {
    let log = LOG.lock().unwrap();
    let start = log.len().saturating_sub(LOG_TAIL_LINES);
    log[start..].to_vec()
}

/// The errno buried in a libbpf-rs error chain, if any.
pub fn errno_of(err: &libbpf_rs::Error) -> Option<i32> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if let Some(n) = io.raw_os_error() {
                return Some(n);
            }
        }
        cur = e.source();
    }
    // libbpf-rs sometimes keeps only the message: "... (os error N)"
    let msg = format!("{err:#}");
    let i = msg.rfind("os error ")?;
    msg[i + 9..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()
}

/// Forget the log so far (before the operation whose failure should show its tail).
pub fn clear_log() {
    LOG.lock().unwrap().clear();
}

/// Open and load an object; returns the loaded object.
pub fn load(file: &Path) -> Result<libbpf_rs::Object, CcError> {
    clear_log();
    let mk = |e: libbpf_rs::Error| CcError::Load {
        file: file.to_path_buf(),
        errno: errno_of(&e),
        cause: format!("{e:#}"),
        log: log_tail(),
    };
    let open = ObjectBuilder::default().open_file(file).map_err(mk)?;
    open.load().map_err(mk)
}

pub fn attach_all(file: &Path, obj: &mut libbpf_rs::Object) -> Result<Vec<(String, Link)>, CcError> {
    let mut links = Vec::new();
    for mut map in obj.maps_mut() {
        if map.map_type() != MapType::StructOps {
            continue;
        }
        let name = map.name().to_string_lossy().into_owned();
        clear_log();
        match map.attach_struct_ops() {
            Ok(link) => links.push((name, link)),
            Err(e) => {
                return Err(CcError::Attach {
                    file: file.to_path_buf(),
                    map: name,
                    errno: errno_of(&e),
                    cause: format!("{e:#}"),
                    log: log_tail(),
                })
            }
        }
    }
    if links.is_empty() {
        return Err(CcError::Load {
            file: file.to_path_buf(),
            errno: None,
            cause: "no struct_ops map in the object (declare it with CCA_OPS(name))".into(),
            log: vec![],
        });
    }
    Ok(links)
}

