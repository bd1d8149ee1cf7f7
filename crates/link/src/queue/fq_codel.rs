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
//!   queue whose deficit is exhausted gets another quantum and moves to the tail of old
//!   flows; each queue runs its own CoDel instance (RFC 8289) on dequeue; an empty new
//!   queue moves to old flows (if any are waiting), an empty old queue leaves the lists.
//!   This gives sparse flows (e.g. ping, DNS, TCP ACKs) priority over bulk flows.

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
            let got = f.codel.dequeue(&mut f.q, &self.p.codel, cx);
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
                    if from_new && !self.old_flows.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn fq(limit: Limit) -> FqCodel {
        FqCodel::new(
            FqCodelParams {
                flows: 1024,
                quantum: 1514,
                codel: CodelParams::default(),
                perturb: 7,
            },
            limit,
        )
    }

    #[test]
    fn sparse_flow_stays_fast_next_to_bulk_flow() {
        // Bulk flow at 2x the service rate (1 pkt / 1.2 ms), sparse flow 1 pkt / 50 ms.
        let mut h = Harness::new(1);
        let mut q = fq(Limit::packets(1000));
        let (mut ta, mut ts, mut tsv) = (0u64, 1_000_000u64, 0u64);
        let mut sparse_max = 0;
        let mut bulk_max = 0;
        let end = 5_000_000_000;
        while tsv < end {
            let next = ta.min(ts).min(tsv);
            if next == ta {
                h.enq(&mut q, ta, pkt(1514, 1, 0));
                ta += 600_000;
            } else if next == ts {
                h.enq(&mut q, ts, pkt(100, 2, 0));
                ts += 50_000_000;
            } else {
                if let Some(p) = h.deq(&mut q, tsv) {
                    let soj = tsv - p.enq_ns;
                    if p.len() == 100 {
                        sparse_max = sparse_max.max(soj);
                    } else if tsv > 1_000_000_000 {
                        bulk_max = bulk_max.max(soj);
                    }
                }
                tsv += 1_200_000;
            }
            assert!(q.len_pkts() <= 1000);
        }
        assert!(
            sparse_max <= 2_400_000,
            "sparse flow sojourn {sparse_max} ns"
        );
        assert!(bulk_max > 5_000_000, "bulk flow does queue ({bulk_max} ns)");
        assert!(h.sink.totals.drops_aqm > 0, "CoDel acts on the bulk flow");
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow() {
        let mut h = Harness::new(1);
        let mut q = fq(Limit::packets(100));
        for i in 0..10 {
            h.enq(&mut q, i, pkt(1514, 9, 0));
        }
        for i in 0..200 {
            h.enq(&mut q, 100 + i, pkt(1514, 1, 0));
            assert!(q.len_pkts() <= 100);
        }
        // The small flow kept all its 10 packets.
        let mut small = 0;
        while let Some(p) = h.deq(&mut q, 1000) {
            if p.ip.unwrap().sport == 9 {
                small += 1;
            }
        }
        assert_eq!(small, 10);
        assert_eq!(q.len_pkts(), 0);
        assert_eq!(q.len_bytes(), 0);
    }
}
