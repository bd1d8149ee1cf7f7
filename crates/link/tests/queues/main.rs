//! Queue disciplines tested through their public interface only: `Qdisc::enqueue`,
//! `Qdisc::dequeue`, the occupancy getters and the counters of the `Sink` the queue
//! reports to, driven by a fake clock (the `now` handed in) and a seeded RNG. No test
//! reads or writes a queue's private state.

mod classes;
mod codel;
mod droptail;
mod fq_codel;
mod red;
mod step;

use ccarena_link::packet::{build_ipv4_frame, Packet};
use ccarena_link::queue::{QCtx, Qdisc};
use ccarena_link::rng::Rng;
use ccarena_link::stats::{Sink, Totals};

/// ECN field values (RFC 3168 §5).
pub const NOT_ECT: u8 = 0;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// A UDP packet of `size` frame bytes from source port `sport` (the flow key).
pub fn pkt(size: usize, sport: u16, ecn: u8) -> Packet {
    Packet::from_frame(&build_ipv4_frame(
        size,
        [10, 1, 1, 2],
        [10, 2, 1, 2],
        17,
        sport,
        5000,
        ecn,
    ))
}

pub fn sport(p: &Packet) -> u16 {
    p.ip.unwrap().sport
}

/// What a link direction gives its queue: a seeded RNG and a sink that counts.
pub struct Harness {
    pub rng: Rng,
    pub sink: Sink,
}

impl Harness {
    pub fn new(seed: u64) -> Harness {
        Harness {
            rng: Rng::new(seed),
            sink: Sink::new(0, false),
        }
    }

    /// Enqueue at `now`, stamping the packet as `Link::enqueue` does.
    pub fn enq(&mut self, q: &mut dyn Qdisc, now: u64, mut p: Packet) {
        p.arrival_ns = now;
        p.enq_ns = now;
        let mut cx = QCtx {
            now,
            rng: &mut self.rng,
            sink: &mut self.sink,
        };
        q.enqueue(p, &mut cx);
    }

    pub fn deq(&mut self, q: &mut dyn Qdisc, now: u64) -> Option<Packet> {
        let mut cx = QCtx {
            now,
            rng: &mut self.rng,
            sink: &mut self.sink,
        };
        q.dequeue(&mut cx)
    }

    pub fn totals(&self) -> Totals {
        self.sink.totals
    }

    /// Dequeue everything at `now`, in order.
    pub fn drain(&mut self, q: &mut dyn Qdisc, now: u64) -> Vec<Packet> {
        std::iter::from_fn(|| self.deq(q, now)).collect()
    }
}

/// |a − b| ≤ tol·|b| (floating-point results of closed forms).
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

#[test]
fn every_discipline_logs_its_occupancy_with_each_event() {
    use ccarena_link::queue::classes::Classes;
    use ccarena_link::queue::codel::{Codel, CodelParams};
    use ccarena_link::queue::droptail::DropTail;
    use ccarena_link::queue::fq_codel::{FqCodel, FqCodelParams};
    use ccarena_link::queue::red::{Red, RedParams};
    use ccarena_link::queue::step::{Step, StepK};
    use ccarena_link::queue::Limit;
    use ccarena_link::stats::{EV_DROP_QUEUE, EV_ENQ};
    let limit = Limit::packets(3);
    let red = RedParams {
        min_th: 1e9,
        max_th: 2e9,
        max_p: 0.1,
        weight: 0.002,
        bytes: false,
        ecn: false,
        idle_pkt_ns: 1000,
    };
    let fq = FqCodelParams {
        flows: 16,
        quantum: 1514,
        codel: CodelParams::default(),
        perturb: 1,
    };
    let queues: Vec<(&str, Box<dyn Qdisc>)> = vec![
        ("droptail", Box::new(DropTail::new(limit))),
        ("red", Box::new(Red::new(red, limit))),
        ("codel", Box::new(Codel::new(CodelParams::default(), limit))),
        ("fq_codel", Box::new(FqCodel::new(fq, limit))),
        ("step", Box::new(Step::new(StepK::Packets(100), limit))),
        (
            "classes",
            Box::new(Classes::new(vec![(Default::default(), limit)], None)),
        ),
    ];
    for (name, mut q) in queues {
        let mut h = Harness::new(1);
        h.sink = Sink::new(0, true);
        for i in 0..4 {
            h.enq(q.as_mut(), i, pkt(1000, 1, NOT_ECT));
        }
        let log: Vec<(u8, u32, u64)> = h
            .sink
            .events
            .iter()
            .map(|e| (e.ev, e.qlen_pkts, e.t_ns))
            .collect();
        // FQ-CoDel queues the fourth packet, then drops from the head of the fattest
        // flow until half its bytes are gone (RFC 8290 §4.1, batch drop).
        let last = if name == "fq_codel" {
            vec![(EV_ENQ, 4, 3), (EV_DROP_QUEUE, 3, 3), (EV_DROP_QUEUE, 2, 3)]
        } else {
            vec![(EV_DROP_QUEUE, 3, 3)]
        };
        let mut want = vec![(EV_ENQ, 1, 0), (EV_ENQ, 2, 1), (EV_ENQ, 3, 2)];
        want.extend(last);
        assert_eq!(log, want, "{name}");
        assert!(h.sink.events.iter().all(|e| e.size == 1000), "{name}");
    }
}
