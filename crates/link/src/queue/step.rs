//! DCTCP-style step marker (RFC 8257 §3.1; M. Alizadeh et al., "Data Center TCP",
//! SIGCOMM 2010): an arriving packet is marked CE when the instantaneous queue occupancy
//! is greater than K (packets or bytes). ECN-capable packets are marked; Not-ECT packets
//! that would be marked are dropped instead (there is no other way to signal them). The
//! buffer limit is a hard tail-drop limit as for drop-tail.

use super::{signal, Fifo, Limit, QCtx, Qdisc};
use crate::packet::Packet;
use crate::stats::EV_DROP_QUEUE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepK {
    Packets(u64),
    Bytes(u64),
}

pub struct Step {
    k: StepK,
    limit: Limit,
    q: Fifo,
}

impl Step {
    pub fn new(k: StepK, limit: Limit) -> Step {
        Step {
            k,
            limit,
            q: Fifo::default(),
        }
    }
}

impl Qdisc for Step {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        if !self.limit.fits(self.q.len(), self.q.bytes(), pkt.len()) {
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, pkt.hash, pkt.len(), self.q.len());
            return;
        }
        let above = match self.k {
            StepK::Packets(k) => self.q.len() as u64 > k,
            StepK::Bytes(k) => self.q.bytes() > k,
        };
        let pkt = if above {
            match signal(pkt, true, cx, self.q.len()) {
                Some(p) => p,
                None => return,
            }
        } else {
            pkt
        };
        cx.sink
            .enqueued(cx.now, pkt.hash, pkt.len(), self.q.len() + 1);
        self.q.push(pkt);
    }
    fn dequeue(&mut self, _cx: &mut QCtx) -> Option<Packet> {
        self.q.pop()
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn marks_above_k_and_not_below() {
        let mut h = Harness::new(1);
        let mut q = Step::new(StepK::Packets(20), Limit::packets(100));
        for i in 0..21 {
            h.enq(&mut q, i, pkt(1514, 1, 2));
        }
        assert_eq!(h.sink.totals.marks, 0, "queue ≤ K: no marks");
        for i in 0..10 {
            h.enq(&mut q, 100 + i, pkt(1514, 1, 2));
        }
        assert_eq!(h.sink.totals.marks, 10);
        let mut ce = 0;
        while let Some(p) = h.deq(&mut q, 1000) {
            if p.ecn() == Some(3) {
                ce += 1;
            }
        }
        assert_eq!(ce, 10);
        assert_eq!(h.sink.totals.drops_aqm, 0);
    }

    #[test]
    fn not_ect_packets_above_k_are_dropped() {
        let mut h = Harness::new(1);
        let mut q = Step::new(StepK::Packets(5), Limit::packets(100));
        for i in 0..10 {
            h.enq(&mut q, i, pkt(1514, 1, 0));
        }
        assert_eq!(q.len_pkts(), 6);
        assert_eq!(h.sink.totals.drops_aqm, 4);
        assert_eq!(h.sink.totals.marks, 0);
    }
}
