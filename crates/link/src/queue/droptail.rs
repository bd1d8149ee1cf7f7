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
