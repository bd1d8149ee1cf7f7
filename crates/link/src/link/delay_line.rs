//! The delay line of one direction: packets after transmission, each with the time it is
//! due on the far side. Packets whose due time is not earlier than the last one's go to a
//! FIFO (the common case: O(1)); others (jitter with reordering, per-host delays) to a
//! heap; release takes the earlier head of the two, so packets leave in due order. Its
//! memory is bounded by `limit` bytes: a push beyond it is refused.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::packet::Packet;

struct HeapEntry {
    due: u64,
    seq: u64,
    pkt: Packet,
}
impl PartialEq for HeapEntry {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for HeapEntry {}
impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HeapEntry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

#[derive(Default)]
pub(crate) struct DelayLine {
    fifo: VecDeque<(u64, Packet)>,
    heap: BinaryHeap<Reverse<HeapEntry>>,
    seq: u64,
    bytes: u64,
    limit: u64,
}

impl DelayLine {
    pub(crate) fn new(limit: u64) -> DelayLine {
        DelayLine {
            limit,
            ..Default::default()
        }
    }
    pub(crate) fn push(&mut self, due: u64, pkt: Packet) -> Result<(), Packet> {
        if self.bytes + pkt.len() as u64 > self.limit {
            return Err(pkt);
        }
        self.bytes += pkt.len() as u64;
        if self.fifo.back().is_none_or(|(d, _)| *d <= due) {
            self.fifo.push_back((due, pkt));
        } else {
            self.seq += 1;
            self.heap.push(Reverse(HeapEntry {
                due,
                seq: self.seq,
                pkt,
            }));
        }
        Ok(())
    }
    pub(crate) fn next_due(&self) -> Option<u64> {
        let a = self.fifo.front().map(|(d, _)| *d);
        let b = self.heap.peek().map(|e| e.0.due);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (x, None) | (None, x) => x,
        }
    }
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<(u64, Packet)> {
        let a = self.fifo.front().map(|(d, _)| *d).filter(|d| *d <= now);
        let b = self.heap.peek().map(|e| e.0.due).filter(|d| *d <= now);
        let r = match (a, b) {
            (Some(a), Some(b)) if b < a => self.heap.pop().map(|e| (e.0.due, e.0.pkt)),
            (Some(_), _) => self.fifo.pop_front(),
            (None, Some(_)) => self.heap.pop().map(|e| (e.0.due, e.0.pkt)),
            (None, None) => None,
        };
        if let Some((_, p)) = &r {
            self.bytes -= p.len() as u64;
        }
        r
    }
    pub(crate) fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }
}
