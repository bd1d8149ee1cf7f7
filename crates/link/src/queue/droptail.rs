//! Drop-tail FIFO: a packet that does not fit the buffer limit is dropped on arrival.

use super::{Fifo, Limit, QCtx, Qdisc};
use crate::packet::Packet;
use crate::stats::EV_DROP_QUEUE;

pub struct DropTail {
    limit: Limit,
    q: Fifo,
}

impl DropTail {
    pub fn new(limit: Limit) -> DropTail {
        DropTail {
            limit,
            q: Fifo::default(),
        }
    }
}

impl Qdisc for DropTail {
    fn enqueue(&mut self, p: Packet, cx: &mut QCtx) {
        if self.limit.fits(self.q.len(), self.q.bytes(), p.len()) {
            cx.sink.enqueued(cx.now, p.hash, p.len(), self.q.len() + 1);
            self.q.push(p);
        } else {
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, p.hash, p.len(), self.q.len());
        }
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
    fn queue_never_exceeds_packet_limit() {
        let mut h = Harness::new(1);
        let mut q = DropTail::new(Limit::packets(10));
        for i in 0..100 {
            h.enq(&mut q, i, pkt(1514, 1, 0));
            assert!(q.len_pkts() <= 10);
        }
        assert_eq!(q.len_pkts(), 10);
        assert_eq!(h.sink.totals.drops_queue, 90);
    }

    #[test]
    fn queue_never_exceeds_byte_limit() {
        let mut h = Harness::new(1);
        let mut q = DropTail::new(Limit::bytes(10_000));
        for i in 0..100u64 {
            h.enq(&mut q, i, pkt(100 + (i as usize * 37) % 1400, 1, 0));
            assert!(q.len_bytes() <= 10_000);
            if i % 3 == 0 {
                h.deq(&mut q, i);
            }
        }
        assert!(h.sink.totals.drops_queue > 0);
    }
}
