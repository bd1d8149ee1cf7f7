//! Queue disciplines of one link direction.
//!
//! Contract (five things, as in mahimahi's queue interface): `enqueue` stores or drops a
//! packet, `dequeue` hands the transmitter its next packet (AQMs may drop or mark on the
//! way), `len_pkts` / `len_bytes` give the occupancy, and every drop or mark is reported
//! to the `Sink` in the context. Time comes in through `QCtx::now`; queues never read a
//! clock. The buffer limit (`Limit`) is hard: no discipline ever holds more.

pub mod classes;
pub mod codel;
pub mod droptail;
pub mod fq_codel;
pub mod red;
pub mod step;

use std::collections::VecDeque;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::stats::{Sink, EV_DROP_AQM};

/// Buffer limit: packets, bytes, or both (whichever is hit first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub packets: Option<u64>,
    pub bytes: Option<u64>,
}

impl Limit {
    pub fn packets(n: u64) -> Limit {
        Limit {
            packets: Some(n),
            bytes: None,
        }
    }
    pub fn bytes(n: u64) -> Limit {
        Limit {
            packets: None,
            bytes: Some(n),
        }
    }
    /// Would a packet of `size` bytes fit next to `pkts` / `bytes` already queued?
    pub fn fits(&self, pkts: usize, bytes: u64, size: usize) -> bool {
        self.packets.is_none_or(|n| (pkts as u64) < n)
            && self.bytes.is_none_or(|b| bytes + size as u64 <= b)
    }
    pub fn exceeded(&self, pkts: usize, bytes: u64) -> bool {
        self.packets.is_some_and(|n| pkts as u64 > n) || self.bytes.is_some_and(|b| bytes > b)
    }
}

/// What a queue needs from its direction while it works.
pub struct QCtx<'a> {
    pub now: u64,
    pub rng: &'a mut Rng,
    pub sink: &'a mut Sink,
}

pub trait Qdisc: Send {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx);
    fn dequeue(&mut self, cx: &mut QCtx) -> Option<Packet>;
    fn len_pkts(&self) -> usize;
    fn len_bytes(&self) -> u64;
}

/// A FIFO of packets that tracks its byte count.
#[derive(Debug, Default)]
pub struct Fifo {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl Fifo {
    pub fn push(&mut self, p: Packet) {
        self.bytes += p.len() as u64;
        self.q.push_back(p);
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len() as u64;
        Some(p)
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Apply a congestion signal to `p`: with `ecn` on and an ECN-capable IPv4 packet, set
/// CE and give the packet back; otherwise drop it (count as an AQM drop) and return None.
/// `qlen` is the occupancy to log with the event.
pub fn signal(mut p: Packet, ecn: bool, cx: &mut QCtx, qlen: usize) -> Option<Packet> {
    if ecn && p.mark_ce() {
        cx.sink.marked(cx.now, p.hash, p.len(), qlen);
        Some(p)
    } else {
        cx.sink.dropped(cx.now, EV_DROP_AQM, p.hash, p.len(), qlen);
        None
    }
}
