//! Contract: SIGTERM, SIGINT and SIGHUP stop the loaders' loops, which poll
//! `stop_requested` every few tens of ms; SIGPIPE is ignored. The signals arrive on a
//! ccarena-sys `SignalFd` (blocked, so none kills the process once the handlers are
//! installed); the first one read is remembered.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use ccarena_sys::signal::{ignore_sigpipe, SignalFd};

static SIGNALS: OnceLock<SignalFd> = OnceLock::new();
static STOP: AtomicBool = AtomicBool::new(false);

/// A stop signal has arrived.
pub fn stop_requested() -> bool {
    if !STOP.load(Ordering::SeqCst) && SIGNALS.get().is_some_and(SignalFd::pending) {
        STOP.store(true, Ordering::SeqCst);
    }
    STOP.load(Ordering::SeqCst)
}

/// Route the stop signals to `stop_requested` (call from the main thread, before any
/// other thread starts).
pub fn install_stop_handlers() -> io::Result<()> {
    ignore_sigpipe();
    if SIGNALS.get().is_none() {
        let fd = SignalFd::with(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP])?;
        let _ = SIGNALS.set(fd);
    }
    Ok(())
}
