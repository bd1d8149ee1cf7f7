//! Contract: a min-heap of absolute deadlines (CLOCK_MONOTONIC ns) with what to do at
//! each. Pure data: the event loop asks `next_deadline()`, arms its timerfd for it, and
//! pops everything due with `pop_due(now)`. Ties fire in insertion order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timer {
    /// Open the connections of flow `0` (index into the engine's flows).
    FlowStart(usize),
    /// Stop flow `0`: no new writes or connections.
    FlowStop(usize),
    /// Open the next download of flow `0`.
    DownloadNext(usize),
    /// A per-connection deadline (paced write, rr think time): slot and unique id.
    Conn(usize, u64),
    /// Send the next datagram of UDP probe `0` (index into the engine's probes).
    UdpSend(usize),
    /// Give up waiting for the echoes of stopped UDP probe `0`.
    UdpDrain(usize),
    /// The host's end time.
    End,
}

#[derive(Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(u64, u64, Timer)>>,
    seq: u64,
}

impl Timers {
    pub fn at(&mut self, deadline_ns: u64, t: Timer) {
        self.seq += 1;
        self.heap.push(Reverse((deadline_ns, self.seq, t)));
    }

    pub fn next_deadline(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((d, _, _))| *d)
    }

    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, Timer)> {
        match self.heap.peek() {
            Some(Reverse((d, _, _))) if *d <= now_ns => self.heap.pop().map(|Reverse((d, _, t))| (d, t)),
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_timers_pop_in_deadline_then_insertion_order() {
        let mut t = Timers::default();
        t.at(30, Timer::End);
        t.at(10, Timer::FlowStart(1));
        t.at(10, Timer::FlowStart(0));
        t.at(20, Timer::Conn(3, 9));
        assert_eq!(t.next_deadline(), Some(10));
        assert_eq!(t.pop_due(25), Some((10, Timer::FlowStart(1))));
        assert_eq!(t.pop_due(25), Some((10, Timer::FlowStart(0))));
        assert_eq!(t.pop_due(25), Some((20, Timer::Conn(3, 9))));
        assert_eq!(t.pop_due(25), None);
        assert_eq!(t.len(), 1);
    }
}
