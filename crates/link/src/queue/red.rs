//! RED — Random Early Detection (S. Floyd, V. Jacobson, "Random Early Detection Gateways
//! for Congestion Avoidance", IEEE/ACM ToN 1(4), 1993), the algorithm of its Figure 2:
//!
//! - on every arrival the average queue size is updated, `avg ← (1−w)·avg + w·q`; after an
//!   idle period of length `t` it decays as `avg ← (1−w)^m·avg`, `m = t / s` with `s` the
//!   transmission time of a typical packet (§4, "the queue is empty");
//! - `min_th ≤ avg < max_th`: `p_b = max_p·(avg−min_th)/(max_th−min_th)`,
//!   `p_a = p_b / (1 − count·p_b)`, mark with probability `p_a` (`count` = packets since
//!   the last mark, which spreads marks uniformly, §7);
//! - `avg ≥ max_th`: mark every arriving packet.
//!
//! "Mark" is CE for ECN-capable packets when ECN is on, a drop otherwise. Thresholds are
//! in packets or bytes (`unit`); the buffer limit is still a hard tail-drop limit.

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

pub struct Red {
    p: RedParams,
    limit: Limit,
    q: Fifo,
    avg: f64,
    count: i64,
    idle_since: Option<u64>,
}

impl Red {
    pub fn new(p: RedParams, limit: Limit) -> Red {
        Red {
            p,
            limit,
            q: Fifo::default(),
            avg: 0.0,
            count: -1,
            idle_since: Some(0),
        }
    }

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

    /// Probability that the next arrival is marked, given the state (Figure 2).
    pub fn mark_probability(&self) -> f64 {
        let p = &self.p;
        if self.avg < p.min_th {
            0.0
        } else if self.avg >= p.max_th {
            1.0
        } else {
            let pb = p.max_p * (self.avg - p.min_th) / (p.max_th - p.min_th);
            let c = (self.count.max(0)) as f64;
            if c * pb >= 1.0 {
                1.0
            } else {
                pb / (1.0 - c * pb)
            }
        }
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        let w = self.p.weight;
        match self.idle_since.take() {
            Some(t0) if self.q.is_empty() => {
                let m = cx.now.saturating_sub(t0) as f64 / self.p.idle_pkt_ns.max(1) as f64;
                self.avg *= (1.0 - w).powf(m);
            }
            _ => self.avg = (1.0 - w) * self.avg + w * self.cur(),
        }
        let mut pkt = Some(pkt);
        if self.avg >= self.p.min_th {
            self.count += 1;
            let pa = self.mark_probability();
            if self.avg >= self.p.max_th || cx.rng.chance(pa) {
                self.count = 0;
                pkt = signal(pkt.take().unwrap(), self.p.ecn, cx, self.q.len());
            }
        } else {
            self.count = -1;
        }
        let Some(pkt) = pkt else { return };
        if self.limit.fits(self.q.len(), self.q.bytes(), pkt.len()) {
            cx.sink
                .enqueued(cx.now, pkt.hash, pkt.len(), self.q.len() + 1);
            self.q.push(pkt);
        } else {
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, pkt.hash, pkt.len(), self.q.len());
        }
    }

    fn dequeue(&mut self, cx: &mut QCtx) -> Option<Packet> {
        let p = self.q.pop();
        if self.q.is_empty() {
            self.idle_since = Some(cx.now);
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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn params(ecn: bool) -> RedParams {
        RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            weight: 1.0,
            bytes: false,
            ecn,
            idle_pkt_ns: 1000,
        }
    }

    /// Hold the queue at `n` packets (weight 1: avg = instantaneous queue) and count the
    /// fraction of arrivals dropped.
    fn drop_fraction(n: usize, ecn: bool, ect: u8) -> (f64, f64) {
        let mut h = Harness::new(3);
        let mut q = Red::new(params(ecn), Limit::packets(1000));
        for _ in 0..n {
            q.q.push(pkt(1000, 1, ect));
        }
        q.avg = n as f64;
        let mut t = 0;
        let (d0, m0) = (h.sink.totals.drops_aqm, h.sink.totals.marks);
        let trials = 200_000;
        for _ in 0..trials {
            t += 1;
            let before = q.len_pkts();
            h.enq(&mut q, t, pkt(1000, 1, ect));
            if q.len_pkts() > before {
                h.deq(&mut q, t);
            }
        }
        (
            (h.sink.totals.drops_aqm - d0) as f64 / trials as f64,
            (h.sink.totals.marks - m0) as f64 / trials as f64,
        )
    }

    #[test]
    fn no_drops_below_min_threshold() {
        let (d, _) = drop_fraction(4, false, 0);
        assert_eq!(d, 0.0);
    }

    #[test]
    fn drop_probability_between_thresholds_follows_floyd_jacobson() {
        // avg = 10 → p_b = 0.1·(10−5)/10 = 0.05. With the count correction the gaps
        // between drops are uniform on 1..1/p_b, so the drop fraction is 2·p_b/(1+p_b).
        let (d, _) = drop_fraction(10, false, 0);
        let pb: f64 = 0.05;
        let expect = 2.0 * pb / (1.0 + pb);
        assert!(
            (d - expect).abs() < 0.006,
            "drop fraction {d}, expected ≈ {expect}"
        );
        assert!(d > pb && d < 2.0 * pb);
    }

    #[test]
    fn everything_marked_above_max_threshold() {
        let mut h = Harness::new(1);
        let mut q = Red::new(params(false), Limit::packets(1000));
        q.avg = 20.0;
        for _ in 0..20 {
            q.q.push(pkt(1000, 1, 0));
        }
        for t in 0..100 {
            h.enq(&mut q, t, pkt(1000, 1, 0));
        }
        assert_eq!(h.sink.totals.drops_aqm, 100);
    }

    #[test]
    fn ecn_marks_ect_packets_instead_of_dropping() {
        let (d, m) = drop_fraction(10, true, 2);
        assert_eq!(d, 0.0);
        assert!(m > 0.05);
        let (d2, m2) = drop_fraction(10, true, 0);
        assert_eq!(m2, 0.0, "Not-ECT packets are never marked");
        assert!(d2 > 0.05);
    }

    #[test]
    fn average_decays_while_idle() {
        let mut h = Harness::new(1);
        let mut q = Red::new(
            RedParams {
                weight: 0.01,
                ..params(false)
            },
            Limit::packets(100),
        );
        q.avg = 10.0;
        h.enq(&mut q, 0, pkt(1000, 1, 0));
        h.deq(&mut q, 1000);
        h.enq(&mut q, 1000 + 100 * 1000, pkt(1000, 1, 0));
        let expect = 10.0 * 0.99f64.powf(100.0);
        assert!(
            (q.avg() - expect).abs() < 0.05,
            "avg {} expect {}",
            q.avg(),
            expect
        );
    }
}
