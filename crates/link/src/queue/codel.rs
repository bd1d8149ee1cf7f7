//! CoDel — Controlled Delay (RFC 8289, K. Nichols, V. Jacobson, A. McGregor, J. Iyengar).
//!
//! The state machine is the pseudocode of RFC 8289 §5.4–5.7: a packet's sojourn time
//! (dequeue time − enqueue time) is compared with `target`; once it has stayed above
//! `target` for `interval` (and more than one MTU is queued, §5.4), CoDel enters the
//! dropping state, drops one packet and schedules the next drop at
//! `drop_next = t + interval/√count` (control law, §5.5); it leaves the dropping state as
//! soon as a sojourn time falls below `target`. Re-entering soon after leaving resumes
//! the previous drop rate (`count = count − lastcount`, §5.6). With ECN on, ECN-capable
//! packets are marked instead of dropped (§5.6 note: a marked packet is delivered).
//!
//! `CodelState` works on any `Fifo`, so FQ-CoDel (RFC 8290) reuses it per flow queue.

use super::{signal, Fifo, Limit, QCtx, Qdisc};
use crate::packet::Packet;
use crate::stats::EV_DROP_QUEUE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    /// Largest packet: no drop while at most this many bytes are queued (RFC 8289 §5.4).
    pub mtu_bytes: u64,
    pub ecn: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            mtu_bytes: 1514,
            ecn: false,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct CodelState {
    first_above_time: Option<u64>,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

fn control_law(t: u64, interval: u64, count: u32) -> u64 {
    t + (interval as f64 / (count.max(1) as f64).sqrt()) as u64
}

impl CodelState {
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// RFC 8289 §5.4 `dodequeue`: pop the head and decide whether it may be dropped.
    fn dodequeue(&mut self, q: &mut Fifo, p: &CodelParams, now: u64) -> (Option<Packet>, bool) {
        let Some(pkt) = q.pop() else {
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_sub(pkt.enq_ns);
        let mut ok_to_drop = false;
        if sojourn < p.target_ns || q.bytes() + pkt.len() as u64 <= p.mtu_bytes {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + p.interval_ns),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(pkt), ok_to_drop)
    }

    /// RFC 8289 §5.5 `dequeue`. `qlen_total` reports the occupancy for event logs.
    pub fn dequeue(&mut self, q: &mut Fifo, p: &CodelParams, cx: &mut QCtx) -> Option<Packet> {
        let now = cx.now;
        let (mut pkt, mut ok) = self.dodequeue(q, p, now);
        if pkt.is_none() {
            self.dropping = false;
            return None;
        }
        if self.dropping {
            if !ok {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                self.count += 1;
                let cur = pkt.take().unwrap();
                if let Some(marked) = signal(cur, p.ecn, cx, q.len()) {
                    self.drop_next = control_law(self.drop_next, p.interval_ns, self.count);
                    return Some(marked);
                }
                let (np, nok) = self.dodequeue(q, p, now);
                pkt = np;
                ok = nok;
                if pkt.is_none() || !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, p.interval_ns, self.count);
                }
            }
        } else if ok {
            let cur = pkt.take().unwrap();
            let kept = signal(cur, p.ecn, cx, q.len());
            if kept.is_some() {
                pkt = kept;
            } else {
                pkt = self.dodequeue(q, p, now).0;
            }
            self.dropping = true;
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            if delta > 1 && now.saturating_sub(self.drop_next) < 16 * p.interval_ns {
                self.count = delta;
            }
            self.drop_next = control_law(now, p.interval_ns, self.count);
            self.lastcount = self.count;
        }
        pkt
    }
}

/// CoDel on a single FIFO with a hard buffer limit (tail drop when full).
pub struct Codel {
    p: CodelParams,
    limit: Limit,
    q: Fifo,
    st: CodelState,
}

impl Codel {
    pub fn new(p: CodelParams, limit: Limit) -> Codel {
        Codel {
            p,
            limit,
            q: Fifo::default(),
            st: CodelState::default(),
        }
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
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
        self.st.dequeue(&mut self.q, &self.p, cx)
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

    /// Feed packets at `arrive_every` ns and serve one every `serve_every` ns for `dur` ns;
    /// return (AQM drops, max sojourn of delivered packets after `settle` ns).
    fn run(arrive_every: u64, serve_every: u64, dur: u64, settle: u64) -> (u64, u64) {
        let mut h = Harness::new(1);
        let mut q = Codel::new(CodelParams::default(), Limit::packets(10_000));
        let mut next_a = 0;
        let mut next_s = 0;
        let mut max_soj = 0;
        while next_a.min(next_s) < dur {
            if next_a <= next_s {
                h.enq(&mut q, next_a, pkt(1514, 1, 0));
                next_a += arrive_every;
            } else {
                if let Some(p) = h.deq(&mut q, next_s) {
                    if next_s > settle {
                        max_soj = max_soj.max(next_s - p.enq_ns);
                    }
                }
                next_s += serve_every;
            }
        }
        (h.sink.totals.drops_aqm, max_soj)
    }

    #[test]
    fn no_drops_when_sojourn_stays_below_target() {
        // Arrivals slower than service: the queue never builds.
        let (drops, _) = run(1_300_000, 1_200_000, 5_000_000_000, 0);
        assert_eq!(drops, 0);
    }

    #[test]
    fn no_drops_when_above_target_for_less_than_interval() {
        // A burst of 60 packets served at 1.2 ms each: sojourn > 5 ms for ~66 ms < 100 ms.
        let mut h = Harness::new(1);
        let mut q = Codel::new(CodelParams::default(), Limit::packets(10_000));
        for _ in 0..60 {
            h.enq(&mut q, 0, pkt(1514, 1, 0));
        }
        let mut t = 0;
        while q.len_pkts() > 0 {
            t += 1_200_000;
            h.deq(&mut q, t);
        }
        assert_eq!(h.sink.totals.drops_aqm, 0);
    }

    #[test]
    fn drops_when_sojourn_above_target_for_longer_than_interval() {
        // Persistent overload: 1.25x the service rate.
        let (drops, max_soj) = run(960_000, 1_200_000, 10_000_000_000, 5_000_000_000);
        assert!(drops > 0);
        // Without CoDel this unresponsive load would queue for 2.5 s by the end; CoDel's
        // rising drop rate (interval/sqrt(count)) caps the sojourn well below that.
        assert!(max_soj < 1_000_000_000, "max sojourn {max_soj}");
    }

    #[test]
    fn first_drop_not_before_interval_above_target() {
        let mut h = Harness::new(1);
        let mut q = Codel::new(CodelParams::default(), Limit::packets(10_000));
        for _ in 0..1000 {
            h.enq(&mut q, 0, pkt(1514, 1, 0));
        }
        // Every dequeue sees a sojourn > target from t = 10 ms on.
        let mut t = 10_000_000;
        let mut first_drop = None;
        while t < 400_000_000 {
            h.deq(&mut q, t);
            if first_drop.is_none() && h.sink.totals.drops_aqm > 0 {
                first_drop = Some(t);
            }
            t += 1_000_000;
        }
        let fd = first_drop.expect("drops");
        assert!(
            (110_000_000..=111_000_000).contains(&fd),
            "first drop at {fd}"
        );
    }
}
