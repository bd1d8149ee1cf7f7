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
