//! FQ-CoDel (RFC 8290, T. Høiland-Jørgensen et al.).
//!
//! - Classification (§4.1.1): packets are hashed by 5-tuple into `flows` queues (the
//!   hash is perturbed by a per-instance seed so it cannot be predicted).
//! - Enqueue (§4.1): the packet joins its queue; a queue that is in neither list joins
//!   the tail of *new flows* with a deficit of one `quantum`. When the total exceeds the
//!   buffer limit, packets are dropped from the head of the queue with the largest byte
//!   count (§4.1: "fattest" queue), in a batch up to half of that queue (as Linux does,
//!   to make overload cheap).
//! - Dequeue (§4.2): deficit round robin over *new flows* first, then *old flows*; a
//!   queue whose deficit is exhausted (≤ 0: it has sent at least a quantum) gets another
//!   quantum and moves to the tail of old flows; each queue runs its own CoDel instance
//!   (RFC 8289) on dequeue, whose backlog test counts the bytes of all queues (see
//!   `CodelState::dequeue`); an empty new queue moves to the tail of old flows, an empty
//!   old queue leaves the lists (§4.2: the detour through the old list prevents
//!   starvation). This gives sparse flows (e.g. ping, DNS, TCP ACKs) priority over bulk
//!   flows, and byte-fair shares (DRR: each round a queue may send `quantum` bytes,
//!   whatever its packet sizes) to backlogged ones.

use std::collections::VecDeque;

use super::codel::{CodelParams, CodelState};
use super::{Fifo, Limit, QCtx, Qdisc};
use crate::packet::Packet;
use crate::stats::EV_DROP_QUEUE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelParams {
    pub flows: u32,
    pub quantum: u32,
    pub codel: CodelParams,
    pub perturb: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListId {
    None,
    New,
    Old,
}

struct Flow {
    q: Fifo,
    deficit: i64,
    codel: CodelState,
    list: ListId,
}

pub struct FqCodel {
    p: FqCodelParams,
    limit: Limit,
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    pkts: usize,
    bytes: u64,
}

impl FqCodel {
    pub fn new(p: FqCodelParams, limit: Limit) -> FqCodel {
        let flows = (0..p.flows.max(1))
            .map(|_| Flow {
                q: Fifo::default(),
                deficit: 0,
                codel: CodelState::default(),
                list: ListId::None,
            })
            .collect();
        FqCodel {
            p,
            limit,
            flows,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            pkts: 0,
            bytes: 0,
        }
    }

    fn bucket(&self, hash: u32) -> usize {
        let mut s = (hash ^ self.p.perturb) as u64;
        (crate::rng::splitmix64(&mut s) % self.flows.len() as u64) as usize
    }

    /// Drop from the head of the fattest queue until the limit holds (batch: up to half
    /// of that queue's bytes or 64 packets).
    fn drop_fattest(&mut self, cx: &mut QCtx) {
        let (idx, _) = self
            .flows
            .iter()
            .enumerate()
            .max_by_key(|(_, f)| f.q.bytes())
            .unwrap();
        let f = &mut self.flows[idx];
        let goal = f.q.bytes() / 2;
        let mut dropped = 0;
        while let Some(p) = f.q.pop() {
            self.pkts -= 1;
            self.bytes -= p.len() as u64;
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, p.hash, p.len(), self.pkts);
            dropped += 1;
            if (f.q.bytes() <= goal || dropped >= 64) && !self.limit.exceeded(self.pkts, self.bytes)
            {
                break;
            }
        }
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        if pkt.len() as u64 > self.limit.bytes.unwrap_or(u64::MAX) {
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, pkt.hash, pkt.len(), self.pkts);
            return;
        }
        let idx = self.bucket(pkt.hash);
        self.pkts += 1;
        self.bytes += pkt.len() as u64;
        cx.sink.enqueued(cx.now, pkt.hash, pkt.len(), self.pkts);
        let f = &mut self.flows[idx];
        f.q.push(pkt);
        if f.list == ListId::None {
            f.list = ListId::New;
            f.deficit = self.p.quantum as i64;
            self.new_flows.push_back(idx as u32);
        }
        while self.limit.exceeded(self.pkts, self.bytes) {
            self.drop_fattest(cx);
        }
    }

    fn dequeue(&mut self, cx: &mut QCtx) -> Option<Packet> {
        loop {
            let (idx, from_new) = if let Some(&i) = self.new_flows.front() {
                (i as usize, true)
            } else if let Some(&i) = self.old_flows.front() {
                (i as usize, false)
            } else {
                return None;
            };
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += self.p.quantum as i64;
                f.list = ListId::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let before = (f.q.len(), f.q.bytes());
            let others = self.bytes - before.1;
            let got = f.codel.dequeue(&mut f.q, &self.p.codel, cx, others);
            let (after_p, after_b) = (f.q.len(), f.q.bytes());
            // Account for everything that left this flow queue (delivered or dropped).
            self.pkts -= before.0 - after_p;
            self.bytes -= before.1 - after_b;
            match got {
                None => {
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    // §4.2: an empty new queue goes to the end of the old list before it
                    // may leave, so a flow that sends just often enough to be new again
                    // at every visit cannot starve the old queues.
                    if from_new {
                        f.list = ListId::Old;
                        self.old_flows.push_back(idx as u32);
                    } else {
                        f.list = ListId::None;
                    }
                }
                Some(p) => {
                    f.deficit -= p.len() as i64;
                    return Some(p);
                }
            }
        }
    }

    fn len_pkts(&self) -> usize {
        self.pkts
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}
