//! RED — Random Early Detection (S. Floyd, V. Jacobson, "Random Early Detection Gateways
//! for Congestion Avoidance", IEEE/ACM ToN 1(4), 1993), the algorithm of its Figure 2:
//!
//! - on every arrival at a non-empty queue the average queue size is updated,
//!   `avg ← (1−w)·avg + w·q` (q: the queue the packet finds, §4);
//! - on an arrival at an empty queue the average has decayed over the idle time,
//!   `avg ← (1−w)^m·avg`, `m = (time − q_time)/s`, `s` the transmission time of a
//!   typical packet and `q_time` the time the queue became empty (§4, Figure 2). `q_time`
//!   is set when the queue becomes empty and stays until a packet is queued: an arrival
//!   that is dropped leaves the queue empty and the idle period running;
//! - `min_th ≤ avg < max_th`: `p_b = max_p·(avg−min_th)/(max_th−min_th)`,
//!   `p_a = p_b / (1 − count·p_b)` (1 once `count·p_b ≥ 1`), mark with probability `p_a`,
//!   `count` being the unmarked arrivals since the last mark (or since the average reached
//!   `min_th`) before this one. The gap between marks is then uniform on `1..1/p_b`
//!   (§7, "Method 2"). Figure 2 increments `count` before computing `p_a` and resets it to
//!   0 on a mark, which would shift the gaps after a mark to `1..1/p_b − 1`; the
//!   distribution the paper analyses in §7 is the one implemented;
//! - `avg ≥ max_th`: mark every arriving packet.
//!
//! "Mark" is CE for ECN-capable packets when ECN is on, a drop otherwise. Thresholds are
//! in packets or bytes (`bytes`: the average is then of the queue in bytes). The marking
//! probability does not depend on the packet's size in either unit: RFC 7141 §2.3 says
//! it SHOULD NOT, so the byte-mode variant of the paper's §4 (`p_b·size/max_size`) is not
//! offered. There is no "gentle" mode: at `avg ≥ max_th` every arrival is marked. The
//! buffer limit is still a hard tail-drop limit.

use super::{signal, Fifo, Limit, QCtx, Qdisc};
use crate::packet::Packet;
use crate::stats::EV_DROP_QUEUE;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    pub weight: f64,
    /// Thresholds count bytes instead of packets.
    pub bytes: bool,
    pub ecn: bool,
    /// Transmission time of a typical packet, for the idle-time decay (ns).
    pub idle_pkt_ns: u64,
}

/// The idle period in progress: `q_time` of Figure 2 and the average it started with.
#[derive(Clone, Copy, Debug)]
struct Idle {
    since: u64,
    avg: f64,
}

pub struct Red {
    p: RedParams,
    limit: Limit,
    q: Fifo,
    avg: f64,
    /// Unmarked arrivals since the last mark or since the average reached `min_th`.
    count: u64,
    /// Some exactly while the queue is empty. Arrivals during the idle period compute the
    /// decay from its start and the average it started with, so several arrivals that are
    /// all dropped decay the average once over the whole idle time, not once each.
    idle: Option<Idle>,
}

impl Red {
    pub fn new(p: RedParams, limit: Limit) -> Red {
        Red {
            p,
            limit,
            q: Fifo::default(),
            avg: 0.0,
            count: 0,
            idle: Some(Idle { since: 0, avg: 0.0 }),
        }
    }

    /// The average queue size (packets or bytes) as of the last arrival.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn cur(&self) -> f64 {
        if self.p.bytes {
            self.q.bytes() as f64
        } else {
            self.q.len() as f64
        }
    }

    /// `p_a` of Figure 2 for the current average and count.
    fn mark_probability(&self) -> f64 {
        let p = &self.p;
        if self.avg >= p.max_th {
            return 1.0;
        }
        let pb = p.max_p * (self.avg - p.min_th) / (p.max_th - p.min_th);
        let c = self.count as f64;
        if c * pb >= 1.0 {
            1.0
        } else {
            pb / (1.0 - c * pb)
        }
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        let w = self.p.weight;
        self.avg = match self.idle {
            Some(i) => {
                let m = cx.now.saturating_sub(i.since) as f64 / self.p.idle_pkt_ns.max(1) as f64;
                i.avg * (1.0 - w).powf(m)
            }
            None => (1.0 - w) * self.avg + w * self.cur(),
        };
        let mut pkt = Some(pkt);
        if self.avg < self.p.min_th {
            self.count = 0;
        } else if cx.rng.chance(self.mark_probability()) {
            self.count = 0;
            pkt = signal(pkt.take().unwrap(), self.p.ecn, cx, self.q.len());
        } else {
            self.count += 1;
        }
        let Some(pkt) = pkt else { return };
        if self.limit.fits(self.q.len(), self.q.bytes(), pkt.len()) {
            cx.sink
                .enqueued(cx.now, pkt.hash, pkt.len(), self.q.len() + 1);
            self.q.push(pkt);
            self.idle = None;
        } else {
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, pkt.hash, pkt.len(), self.q.len());
        }
    }

    fn dequeue(&mut self, cx: &mut QCtx) -> Option<Packet> {
        let p = self.q.pop();
        if self.q.is_empty() && self.idle.is_none() {
            self.idle = Some(Idle {
                since: cx.now,
                avg: self.avg,
            });
        }
        p
    }

    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
}
