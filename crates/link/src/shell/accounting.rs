//! Contract: the shell's self-accounting, one `ShellStats` per worker, merged into
//! link.json at exit: packets received, truncated, forwarded, send errors and waits,
//! how late each release left against the core's due time (histogram, count over the
//! tolerance, when the worst one happened), and how the timing loop spent its passes.

use super::hist::Hist;

/// Self-accounting of the shell (goes to link.json).
#[derive(Default)]
pub struct ShellStats {
    pub rx_packets: u64,
    pub rx_truncated: u64,
    pub rx_ring_drops: u64,
    pub kernel_rx_packets: u64,
    pub forwarded: u64,
    pub tx_errors: u64,
    /// Pauses because the receiving side's backlog was full (ENOBUFS).
    pub tx_waits: u64,
    pub late: Hist,
    pub late_packets: u64,
    pub loops: u64,
    pub sleeps: u64,
    pub spins: u64,
    pub naps: u64,
    /// times the thread ran as an ordinary task (`fair_ns`) instead of napping
    pub fair_phases: u64,
    /// Due time of the latest packet (when the worst lateness happened).
    pub max_late_at_ns: u64,
    /// How late the timerfd woke the thread (ns).
    pub wake_late: Hist,
}

impl ShellStats {
    /// Account one release: due at `due_ns`, sent at `t`.
    pub fn count_release(&mut self, due_ns: u64, t: u64, tol: u64) {
        let late = t.saturating_sub(due_ns);
        if late > self.late.max {
            self.max_late_at_ns = due_ns;
        }
        self.late.add(late);
        if late > tol {
            self.late_packets += 1;
        }
    }

    pub fn merge(&mut self, o: &ShellStats) {
        self.rx_packets += o.rx_packets;
        self.rx_truncated += o.rx_truncated;
        self.forwarded += o.forwarded;
        self.tx_errors += o.tx_errors;
        self.tx_waits += o.tx_waits;
        if o.late.max >= self.late.max {
            self.max_late_at_ns = o.max_late_at_ns;
        }
        self.late.merge(&o.late);
        self.late_packets += o.late_packets;
        self.loops += o.loops;
        self.sleeps += o.sleeps;
        self.spins += o.spins;
        self.naps += o.naps;
        self.fair_phases += o.fair_phases;
        self.wake_late.merge(&o.wake_late);
    }
}
