//! Contract: a ccarena process dies with the process that started it.
//! `die_with_parent()` asks the kernel (prctl PR_SET_PDEATHSIG) to SIGKILL the calling
//! process when its parent ends — exactly: when the parent *thread* that forked it
//! ends — and exits at once (status 1, one line on stderr) if the parent is already
//! gone (its parent changed across the prctl). The time between fork and `main` is
//! the starter's to cover: ccarena sets the same signal between fork and exec (it
//! survives the exec, also through `ip netns exec`, which execs) and checks its own pid
//! there. SIGKILL, not SIGTERM: nobody is left to wait for an orderly exit or to read
//! what it would write, and the kernel releases every socket, BPF link and XDP program
//! with the process. Call it first thing in `main`.

use std::io;

/// Ask for SIGKILL when the parent ends; exit(1) if it already has. `name` prefixes the
/// line printed then (`<name>: parent <pid> gone before start: exiting`).
pub fn die_with_parent(name: &str) {
    // SAFETY: getppid takes nothing and cannot fail.
    let parent = unsafe { libc::getppid() };
    if let Err(e) = set_pdeathsig(libc::SIGKILL) {
        // Not fatal: the orchestrator still stops its children; say why it cannot be sure.
        eprintln!("{name}: prctl(PR_SET_PDEATHSIG): {e} (this process may outlive its parent)");
        return;
    }
    // SAFETY: as above.
    let now = unsafe { libc::getppid() };
    if now != parent {
        eprintln!("{name}: parent {parent} gone before start (parent is now {now}): exiting");
        std::process::exit(1);
    }
}

/// prctl(PR_SET_PDEATHSIG, sig) for the calling process.
pub fn set_pdeathsig(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a number, no pointer.
    crate::cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) }).map(|_| ())
}

/// The signal the kernel sends this process when its parent ends (0 = none).
pub fn pdeathsig() -> io::Result<libc::c_int> {
    let mut sig: libc::c_int = 0;
    // SAFETY: PR_GET_PDEATHSIG writes one int to the address passed, `sig`'s.
    crate::cvt(unsafe { libc::prctl(libc::PR_GET_PDEATHSIG, &mut sig as *mut libc::c_int as libc::c_ulong, 0, 0, 0) })?;
    Ok(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_death_signal_is_set_and_read_back() {
        let before = pdeathsig().unwrap();
        set_pdeathsig(libc::SIGKILL).unwrap();
        assert_eq!(pdeathsig().unwrap(), libc::SIGKILL);
        set_pdeathsig(before).unwrap();
        assert_eq!(pdeathsig().unwrap(), before);
    }
}
