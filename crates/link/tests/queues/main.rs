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
