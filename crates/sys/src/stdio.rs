//! Contract: the lifecycle lines (`READY`, `DONE`, …) a part prints on stdout for its
//! orchestrator: one line, flushed at once (stdout may be a pipe). A closed stdout is
//! not an error: the part goes on and writes its files.

use std::io::Write;

pub fn say(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}
