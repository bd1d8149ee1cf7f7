//! Contract: `ccarena-cc hold` — load the object, attach its struct_ops links, check that
//! the kernel now lists the algorithm, print `READY <kernel_name>`, then keep the links
//! while any holder file in the watched directory names a live process; exit (dropping
//! the links, which unregisters the algorithm) when none does, or on SIGTERM/SIGINT.
//! Because the kernel releases a link when its last fd closes, the algorithm is also
//! unregistered if this process is killed: crash-safe by construction. Every 50 ms it
//! writes <dir>/holder.repairs when it changed: the object's guard counts per network
//! namespace (map `cca_guard`), "<netns inode> <late> <at_entry> <late_ssthresh>
//! <late_cwnd> <late_states>" per line.
//!
//! Holder files (written by the Python side, ccarena.cc.refcount): one file per run,
//! named after the run id, first line `<pid> <starttime>` (starttime = field 22 of
//! /proc/<pid>/stat; 0 = not checked). A holder is live when /proc/<pid>/stat exists,
//! its state is not Z, and its starttime matches. Changes to the directory are made
//! under flock(<dir>/.lock); this process takes the same lock for its decision to exit.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use libbpf_rs::{MapCore, MapFlags};

use crate::available::registered;
use crate::error::CcError;
use crate::load::{attach_all, load};
use crate::stop::{install_stop_handlers, stop_requested};

/// Field 3 (state) and field 22 (starttime) of /proc/<pid>/stat.
fn proc_state(pid: i32) -> Option<(char, u64)> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

fn holder_live(path: &Path) -> bool {
    let Ok(text) = fs::read_to_string(path) else {
        return false;
    };
    let mut it = text.split_whitespace();
    let Some(pid) = it.next().and_then(|p| p.parse::<i32>().ok()) else {
        return false;
    };
    // run files are "<pid> <starttime> <count>": anything else is not a holder
    let Some(start) = it.next().and_then(|s| s.parse::<u64>().ok()) else {
        return false;
    };
    match proc_state(pid) {
        Some((state, st)) => state != 'Z' && state != 'X' && (start == 0 || st == start),
        None => false,
    }
}

/// Any live holder file in `dir`? (files starting with '.' or named holder.* are ours)
fn any_live_holder(dir: &Path) -> bool {
    let Ok(rd) = fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let n = e.file_name();
        let n = n.to_string_lossy();
        !n.starts_with('.') && !n.starts_with("holder.") && holder_live(&e.path())
    })
}

struct DirLock(fs::File);

impl DirLock {
    /// An exclusive lock (flock) on <dir>/.lock, polling without blocking so that a SIGTERM sent
    /// by a releaser who holds the lock (and waits for us to exit) is honoured.
    fn take(dir: &Path) -> io::Result<DirLock> {
        let f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(".lock"))?;
        loop {
            match f.try_lock() {
                Ok(()) => return Ok(DirLock(f)),
                Err(fs::TryLockError::WouldBlock) => {}
                Err(fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(fs::TryLockError::Error(e)) => return Err(e),
            }
            if stop_requested() {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// One namespace's guard counts: inode, then the map value's fields in order.
type GuardLine = (u32, [u64; GUARD_FIELDS]);
/// late, at_entry, late_ssthresh, late_cwnd, late_states (bpf/cc/cca_common.h)
const GUARD_FIELDS: usize = 5;

/// The guard's counts per network namespace (the map `cca_guard` in bpf/cc/cca_common.h:
/// key u32 namespace inode, value `struct cca_guard_count`, u64 fields; an object built
/// before a field existed reads it as 0), sorted; None if the object has no such map.
fn guard_counts(obj: &libbpf_rs::Object) -> Option<Vec<GuardLine>> {
    let u64_at = |v: &[u8], i: usize| {
        v.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()).map(u64::from_ne_bytes)
    };
    let m = obj.maps().find(|m| m.name().to_string_lossy() == "cca_guard")?;
    let mut out = Vec::new();
    for k in m.keys() {
        let Some(ino) = k.get(..4).and_then(|b| b.try_into().ok()).map(u32::from_ne_bytes) else {
            continue;
        };
        // an entry can vanish between keys() and lookup() (LRU eviction): skip it
        if let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) {
            let mut f = [0u64; GUARD_FIELDS];
            for (i, x) in f.iter_mut().enumerate() {
                *x = u64_at(&v, i).unwrap_or(0);
            }
            out.push((ino, f));
        }
    }
    out.sort_unstable();
    Some(out)
}

/// Write `<dir>/holder.repairs` (one line "<netns inode> <late> <at_entry> <late_ssthresh>
/// <late_cwnd> <late_states>" per network namespace the guard acted in) when it changed.
fn report_repairs(
    obj: &libbpf_rs::Object,
    dir: Option<&Path>,
    last: &mut Option<Vec<GuardLine>>,
) {
    let (Some(dir), Some(n)) = (dir, guard_counts(obj)) else {
        return;
    };
    if last.as_ref() == Some(&n) {
        return;
    }
    let text: String = n
        .iter()
        .map(|(i, f)| {
            let fields: Vec<String> = f.iter().map(u64::to_string).collect();
            format!("{i} {}\n", fields.join(" "))
        })
        .collect();
    let tmp = dir.join(".holder.repairs.tmp");
    if fs::write(&tmp, text).is_ok() && fs::rename(&tmp, dir.join("holder.repairs")).is_ok() {
        *last = Some(n);
    }
}

/// Hold the algorithm `name` of object `file` (see the module contract).
pub fn hold(file: &Path, name: &str, watch: Option<&Path>, poll: Duration) -> Result<(), CcError> {
    let mut obj = load(file)?;
    let links = attach_all(file, &mut obj)?;
    if !registered(name) {
        return Err(CcError::NotRegistered {
            file: file.to_path_buf(),
            name: name.to_string(),
        });
    }
    install_stop_handlers().map_err(|e| CcError::Io { attempt: "create".into(), object: "signalfd (SIGTERM/SIGINT/SIGHUP)".into(), err: e })?;
    {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "READY {name}");
        let _ = out.flush();
    }
    // Sleep in short slices so SIGTERM is honoured quickly; look at the holder
    // files every `poll`, the first time after a grace period that lets the
    // caller write its own holder file.
    let slice = Duration::from_millis(50);
    let mut last_repairs = None;
    report_repairs(&obj, watch, &mut last_repairs);
    let mut next_check = std::time::Instant::now() + poll.max(Duration::from_secs(2));
    loop {
        std::thread::sleep(slice);
        if stop_requested() {
            break;
        }
        report_repairs(&obj, watch, &mut last_repairs);
        if std::time::Instant::now() < next_check {
            continue;
        }
        next_check = std::time::Instant::now() + poll;
        let Some(dir) = watch else { continue };
        let lock = match DirLock::take(dir) {
            Ok(l) => l,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => break,
            Err(e) => {
                return Err(CcError::Io {
                    attempt: "lock".into(),
                    object: dir.join(".lock").display().to_string(),
                    err: e,
                })
            }
        };
        if !any_live_holder(dir) {
            report_repairs(&obj, watch, &mut last_repairs);
            // Unregister while still holding the lock, so that an acquirer who takes
            // the lock next sees the algorithm gone and starts a fresh holder.
            drop(links);
            drop(obj);
            let _ = fs::remove_file(dir.join("holder.pid"));
            drop(lock);
            return Ok(());
        }
        drop(lock);
    }
    report_repairs(&obj, watch, &mut last_repairs);
    drop(links);
    drop(obj);
    if let Some(dir) = watch {
        if let Ok(_lock) = DirLock::take(dir) {
            // remove holder.pid only if it is ours
            let me = std::process::id().to_string();
            if let Ok(t) = fs::read_to_string(dir.join("holder.pid")) {
                if t.split_whitespace().next() == Some(me.as_str()) {
                    let _ = fs::remove_file(dir.join("holder.pid"));
                }
            }
        }
    }
    Ok(())
}

