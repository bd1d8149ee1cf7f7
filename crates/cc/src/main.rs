//! ccarena-cc — loader and holder for ccarena's BPF congestion controls.
//!
//! Contract (docs/dev/contracts.md §4, docs/algorithms.md):
//!
//! ```text
//! ccarena-cc check <obj.bpf.o>...
//!     open + load every object (verifier included), attach nothing; exit 0 if all load.
//! ccarena-cc hold --obj <obj.bpf.o> --name <kernel_name> --watch <dir> [--poll-ms N]
//!     load, attach every struct_ops map of the object as a BPF link
//!     (SEC(".struct_ops.link")), check that <kernel_name> is now listed in
//!     /proc/sys/net/ipv4/tcp_available_congestion_control, print
//!     "READY <kernel_name>\n" on stdout, then hold the links while any holder file
//!     in <dir> names a live process. Exits 0 (dropping the links, which
//!     unregisters the algorithm) when none does, or on SIGTERM/SIGINT.
//!     Because the kernel releases a link when its last fd closes, the algorithm
//!     is also unregistered if this process is killed: crash-safe by construction.
//!     Every 50 ms it writes <dir>/holder.repairs when it changed: the object's guard
//!     counts per network namespace (map `cca_guard`), "<netns inode> <late> <at_entry>
//!     <late_ssthresh> <late_cwnd> <late_states>"
//!     per line.
//! ccarena-cc mark --obj <ce_mark.bpf.o> --netns <name> --dev <ifname> --per-mille N
//!     test aid: attach bpf/test/ce_mark.bpf.c at tcx egress of <ifname> inside network
//!     namespace <name>, marking CE on N/1000 of the ECN-capable packets; prints
//!     "READY\n", detaches on SIGTERM/SIGINT (or when killed: the link dies with us).
//! ```
//!
//! Holder files (written by the Python side, ccarena.cc.refcount): one file per run,
//! named after the run id, first line `<pid> <starttime>` (starttime = field 22 of
//! /proc/<pid>/stat; 0 = not checked). A holder is live when /proc/<pid>/stat exists,
//! its state is not Z, and its starttime matches. Changes to the directory are made
//! under flock(<dir>/.lock); this process takes the same lock for its decision to exit.
//!
//! Errors: one line `ccarena-cc: <attempt>: <object>: <cause> (errno N)` on stderr,
//! followed by the tail of libbpf's/verifier's log for load failures; exit 1
//! (runtime) or 2 (usage).

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use libbpf_rs::{set_print, Link, MapCore, MapFlags, MapType, ObjectBuilder, PrintLevel};

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const LOG_TAIL_LINES: usize = 40;

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
static STOP: AtomicBool = AtomicBool::new(false);

fn capture_log(level: PrintLevel, msg: String) {
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

fn log_tail() -> Vec<String> {
    let log = LOG.lock().unwrap();
    let start = log.len().saturating_sub(LOG_TAIL_LINES);
    log[start..].to_vec()
}

/// The errno buried in a libbpf-rs error chain, if any.
fn errno_of(err: &libbpf_rs::Error) -> Option<i32> {
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

#[derive(Debug)]
enum CcError {
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
    fn report(&self) -> i32 {
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

/// Open and load an object; returns the loaded object.
fn load(file: &Path) -> Result<libbpf_rs::Object, CcError> {
    LOG.lock().unwrap().clear();
    let mk = |e: libbpf_rs::Error| CcError::Load {
        file: file.to_path_buf(),
        errno: errno_of(&e),
        cause: format!("{e:#}"),
        log: log_tail(),
    };
    let open = ObjectBuilder::default().open_file(file).map_err(mk)?;
    open.load().map_err(mk)
}

fn attach_all(file: &Path, obj: &mut libbpf_rs::Object) -> Result<Vec<(String, Link)>, CcError> {
    let mut links = Vec::new();
    for mut map in obj.maps_mut() {
        if map.map_type() != MapType::StructOps {
            continue;
        }
        let name = map.name().to_string_lossy().into_owned();
        LOG.lock().unwrap().clear();
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

fn registered(name: &str) -> bool {
    fs::read_to_string(AVAILABLE)
        .map(|s| s.split_whitespace().any(|n| n == name))
        .unwrap_or(false)
}

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
    /// flock(LOCK_EX) on <dir>/.lock, polling with LOCK_NB so that a SIGTERM sent
    /// by a releaser who holds the lock (and waits for us to exit) is honoured.
    fn take(dir: &Path) -> io::Result<DirLock> {
        let f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(".lock"))?;
        loop {
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(DirLock(f));
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.raw_os_error() != Some(libc::EINTR)
            {
                return Err(e);
            }
            if STOP.load(Ordering::SeqCst) {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
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

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn hold(file: &Path, name: &str, watch: Option<&Path>, poll: Duration) -> Result<(), CcError> {
    let mut obj = load(file)?;
    let links = attach_all(file, &mut obj)?;
    if !registered(name) {
        return Err(CcError::NotRegistered {
            file: file.to_path_buf(),
            name: name.to_string(),
        });
    }
    install_stop_handlers();
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
        if STOP.load(Ordering::SeqCst) {
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

fn install_stop_handlers() {
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGHUP,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Test aid: CE-mark a fraction of the packets leaving <dev> in namespace <netns>.
fn mark(file: &Path, netns: &str, dev: &str, per_mille: u32) -> Result<(), CcError> {
    use libbpf_rs::AsRawLibbpf;
    let io_err = |attempt: &str, object: &str, err: io::Error| CcError::Io {
        attempt: attempt.into(),
        object: object.into(),
        err,
    };
    LOG.lock().unwrap().clear();
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
    while !STOP.load(Ordering::SeqCst) {
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
            "ccarena-cc check <obj>... | ccarena-cc hold --obj <obj> --name <kernel_name> \
             [--watch <dir>] [--poll-ms N] | ccarena-cc mark --obj <obj> --netns <name> \
             --dev <ifname> [--per-mille N]"
                .into(),
        )
    };
    match args.first().map(String::as_str) {
        Some("check") => {
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
