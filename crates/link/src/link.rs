//! The sans-IO link core: two independent directions, each
//!
//! ```text
//! arrival ─▶ per-host loss ─▶ duplication + link loss ─▶ queue (buffer + discipline)
//!         ─▶ transmitter (rate / schedule / trace) ─▶ copy, corruption
//!         ─▶ delay line (delay + host delay + jitter, or none when reordered) ─▶ release
//! ```
//!
//! (`impairments`: the random ones, in netem's order.)
//!
//! Contract: `enqueue(now, dir, pkt)` and `poll(now, out)` are the only inputs;
//! `next_deadline()` says when `poll` has work next (packet releases and transmitter
//! events; `next_stats_ns()` for the statistics interval). The core never reads a clock,
//! a socket or the OS's randomness, so every run is reproducible from its seed. Times
//! passed in must not go backwards. Memory is bounded: queues by their buffer limit, the
//! delay line by `delay_line_bytes` (derived from rate × maximum delay).

mod delay_line;
mod impairments;

use crate::impair::Loss;
use crate::packet::Packet;
use crate::params::{DirParams, LinkParams, QueueKind, RateSpec};
use crate::queue::classes::Classes;
use crate::queue::codel::Codel;
use crate::queue::droptail::DropTail;
use crate::queue::fq_codel::{FqCodel, FqCodelParams};
use crate::queue::red::{Red, RedParams};
use crate::queue::step::Step;
use crate::queue::{QCtx, Qdisc};
use crate::rng::Rng;
use crate::stats::{EventRecord, Sink, StatsRecord, Totals, EV_DROP_LOSS};
use crate::transmitter::{Transmitter, TRACE_OPPORTUNITY_BYTES};
use delay_line::DelayLine;
use impairments::{Arrival, Impairments};

pub const W2E: usize = 0;
pub const E2W: usize = 1;

/// A packet handed back by `poll`, due at `due_ns` on the far side of direction `dir`.
#[derive(Debug)]
pub struct Released {
    pub dir: usize,
    pub due_ns: u64,
    pub pkt: Packet,
}

struct HostState {
    ip: u32,
    delay_ns: u64,
    loss: Option<Loss>,
}

/// One direction of the link.
pub struct Direction {
    qdisc: Box<dyn Qdisc>,
    transmitter: Transmitter,
    qrng: Rng,
    sink: Sink,
    imp: Impairments,
    delay_ns: u64,
    hosts: Vec<HostState>,
    delay_line: DelayLine,
    // rate transmitter
    free_at: u64,
    in_service: Option<(Packet, u64)>,
    /// Work (bit·10⁹) left over from rounding the last finish time down to a ns.
    carry: u128,
    // trace transmitter
    partial: Option<(Packet, usize)>,
}

fn typical_pkt_ns(rate: &RateSpec) -> u64 {
    let r = match rate {
        RateSpec::Constant(r) => *r,
        RateSpec::Schedule {
            initial: Some(r), ..
        } => *r,
        RateSpec::Trace { opportunities_ms } => {
            (opportunities_ms.len() as u64 * 1500 * 8 * 1000) / opportunities_ms.last().unwrap()
        }
        _ => 10_000_000_000,
    };
    (1500u64 * 8 * 1_000_000_000 / r.max(1)).max(1)
}

/// Highest rate the transmitter can ever reach (bit/s), None if unlimited.
fn peak_rate(rate: &RateSpec) -> Option<u64> {
    match rate {
        RateSpec::Unlimited => None,
        RateSpec::Constant(r) => Some(*r),
        RateSpec::Schedule { initial, steps } => {
            let mut m = *initial;
            for (_, r) in steps {
                m = match (m, r) {
                    (Some(a), Some(b)) => Some(a.max(*b)),
                    _ => None,
                };
            }
            m
        }
        RateSpec::Trace { opportunities_ms } => {
            // The densest millisecond bounds the rate.
            let mut best = 0u64;
            let mut i = 0;
            while i < opportunities_ms.len() {
                let j = opportunities_ms[i..]
                    .iter()
                    .take_while(|&&x| x == opportunities_ms[i])
                    .count();
                best = best.max(j as u64);
                i += j;
            }
            Some(best * 1500 * 8 * 1000)
        }
    }
}

/// The rate segment of `transmitter` in force at `t`: its rate (None = unlimited) and the time
/// it ends (None = never).
fn segment_at(transmitter: &Transmitter, t: u64) -> (Option<u64>, Option<u64>) {
    match &transmitter.spec {
        RateSpec::Constant(r) => (Some(*r), None),
        RateSpec::Schedule { initial, steps } => {
            let n = steps.partition_point(|(ts, _)| transmitter.t0 + *ts <= t);
            let rate = if n == 0 { *initial } else { steps[n - 1].1 };
            (rate, steps.get(n).map(|(ts, _)| transmitter.t0 + ts))
        }
        RateSpec::Unlimited | RateSpec::Trace { .. } => (None, None),
    }
}

/// A frame that a rate schedule's last segment, an outage (rate 0) to the end, holds.
const NEVER: u64 = u64::MAX;

/// The first time at or after `t` at which the transmitter sends (its rate is not 0);
/// None when an outage lasts to the end of the schedule.
fn sending_from(transmitter: &Transmitter, t: u64) -> Option<u64> {
    let mut t = t;
    loop {
        match segment_at(transmitter, t) {
            (Some(0), Some(end)) => t = end,
            (Some(0), None) => return None,
            _ => return Some(t),
        }
    }
}

/// When a frame of `bytes` whose transmission starts at `start` has been sent. Each
/// segment of a rate schedule sends at its own rate: a rate change during the frame
/// re-times the bits still to send, as a real link's rate change would (a frame started
/// at 1 kbit/s finishes at the new rate once the link is fast again; an unlimited
/// segment finishes it at once; an outage, rate 0, sends nothing until it ends, or
/// NEVER). The work is counted in bit·10⁹ so that at r bit/s one ns sends r units
/// exactly; `carry` keeps what rounding down to a whole ns left over, so long runs at a
/// rate do not drift.
fn tx_finish(transmitter: &Transmitter, start: u64, bytes: usize, carry: &mut u128) -> u64 {
    let mut need = bytes as u128 * 8 * 1_000_000_000 + *carry;
    let mut t = start;
    loop {
        let (rate, end) = segment_at(transmitter, t);
        let Some(r) = rate else {
            *carry = 0;
            return t;
        };
        if r == 0 {
            match end {
                Some(e) => {
                    t = e;
                    continue;
                }
                None => return NEVER,
            }
        }
        let r = r as u128;
        match end {
            Some(e) if need > (e - t) as u128 * r => {
                need -= (e - t) as u128 * r;
                t = e;
            }
            _ => {
                *carry = need % r;
                return t + (need / r) as u64;
            }
        }
    }
}

impl Direction {
    fn new(dir: usize, p: &DirParams, lp: &LinkParams, t0: u64) -> Direction {
        let seed = lp.seed;
        let qdisc: Box<dyn Qdisc> = match &p.queue {
            QueueKind::DropTail => Box::new(DropTail::new(p.limit)),
            QueueKind::Red {
                min_th,
                max_th,
                max_p,
                weight,
                bytes,
                ecn,
            } => Box::new(Red::new(
                RedParams {
                    min_th: *min_th,
                    max_th: *max_th,
                    max_p: *max_p,
                    weight: *weight,
                    bytes: *bytes,
                    ecn: *ecn,
                    idle_pkt_ns: typical_pkt_ns(&p.rate),
                },
                p.limit,
            )),
            QueueKind::Codel(c) => Box::new(Codel::new(*c, p.limit)),
            QueueKind::FqCodel {
                flows,
                quantum,
                codel,
            } => Box::new(FqCodel::new(
                FqCodelParams {
                    flows: *flows,
                    quantum: *quantum,
                    codel: *codel,
                    perturb: Rng::stream(seed, 40 + dir as u64).next_u64() as u32,
                },
                p.limit,
            )),
            QueueKind::Step(k) => Box::new(Step::new(*k, p.limit)),
            QueueKind::Classes { classes, default } => Box::new(Classes::new(
                classes
                    .iter()
                    .map(|(m, l)| (m.clone(), l.unwrap_or(p.limit)))
                    .collect(),
                *default,
            )),
        };
        let hosts: Vec<HostState> = lp
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| HostState {
                ip: h.ip,
                delay_ns: h.delay_ns,
                loss: h
                    .loss
                    .map(|m| Loss::new(m, Rng::stream(seed, 100 + 2 * i as u64 + dir as u64))),
            })
            .collect();
        let imp = Impairments::new(dir, p, seed);
        let max_delay = p.delay_ns
            + hosts.iter().map(|h| h.delay_ns).sum::<u64>()
            + imp.jitter.as_ref().map_or(0, |j| j.max_ns());
        let limit = lp
            .delay_line_bytes
            .unwrap_or_else(|| match peak_rate(&p.rate) {
                // rate × longest delay, plus slack for one buffer of burst and rounding.
                Some(r) => {
                    (r as u128 * max_delay as u128 / 8_000_000_000) as u64 * 2 + 4 * 1024 * 1024
                }
                None => 512 * 1024 * 1024,
            });
        Direction {
            qdisc,
            transmitter: Transmitter::new(p.rate.clone(), lp.t0_ns.unwrap_or(t0)),
            qrng: Rng::stream(seed, 10 + dir as u64),
            sink: Sink::new(dir as u8, lp.event_log),
            imp,
            delay_ns: p.delay_ns,
            hosts,
            delay_line: DelayLine::new(limit),
            free_at: t0,
            in_service: None,
            carry: 0,
            partial: None,
        }
    }

    fn enqueue(&mut self, now: u64, mut pkt: Packet) {
        self.advance(now);
        pkt.arrival_ns = now;
        pkt.enq_ns = now;
        self.sink.arrival(pkt.len());
        let lost = self.host_rules(&mut pkt)
            || match self.imp.arrival() {
                Arrival::Lost => true,
                Arrival::Kept { duplicate } => {
                    pkt.duplicate = duplicate;
                    false
                }
            };
        if lost {
            let qlen = self.qdisc.len_pkts();
            self.sink.dropped(now, EV_DROP_LOSS, pkt.hash, pkt.len(), qlen);
            return;
        }
        if self.qdisc.len_pkts() == 0 {
            if self.transmitter.is_trace() {
                // Opportunities that passed while the queue was empty are wasted; the
                // first one this packet may use is the first at or after its arrival
                // (which can precede the last poll: arrivals carry kernel timestamps).
                if self.partial.is_none() {
                    self.transmitter.skip_before(now);
                }
            } else if self.in_service.is_none() {
                self.free_at = self.free_at.max(now);
            }
        }
        let mut cx = QCtx {
            now,
            rng: &mut self.qrng,
            sink: &mut self.sink,
        };
        self.qdisc.enqueue(pkt, &mut cx);
        self.advance(now);
    }

    /// The per-host rules matching the packet's source or destination: their extra delay
    /// is added; true if one's loss model takes it.
    fn host_rules(&mut self, pkt: &mut Packet) -> bool {
        let Some(ip) = pkt.ip else { return false };
        for h in self.hosts.iter_mut() {
            if h.ip == ip.src || h.ip == ip.dst {
                pkt.extra_delay_ns += h.delay_ns;
                if h.loss.as_mut().is_some_and(|l| l.lose()) {
                    return true;
                }
            }
        }
        false
    }

    /// Transmission finished at `t`: the packet (and its copy, if duplicated — made
    /// before the original is corrupted, as netem clones it) enters the delay line.
    fn transmitted(&mut self, t: u64, mut pkt: Packet) {
        let copy = pkt.duplicate.then(|| pkt.copy());
        self.corrupt(&mut pkt);
        if let Some(mut c) = copy {
            self.sink.totals.duplicated += 1;
            self.corrupt(&mut c);
            self.enter_delay_line(t, c);
        }
        self.enter_delay_line(t, pkt);
    }

    fn corrupt(&mut self, pkt: &mut Packet) {
        if self.imp.corrupt(pkt) {
            self.sink.totals.corrupted += 1;
        }
    }

    fn enter_delay_line(&mut self, t: u64, pkt: Packet) {
        let base = self.delay_ns + pkt.extra_delay_ns;
        let due = self.imp.due(t, base, pkt.hash).unwrap_or_else(|| {
            self.sink.totals.reordered += 1;
            t
        });
        if let Err(p) = self.delay_line.push(due, pkt) {
            self.sink.delay_line_drop(t, p.hash, p.len());
        }
    }

    fn dequeue_at(&mut self, t: u64) -> Option<Packet> {
        let mut cx = QCtx {
            now: t,
            rng: &mut self.qrng,
            sink: &mut self.sink,
        };
        let p = self.qdisc.dequeue(&mut cx)?;
        let qlen = self.qdisc.len_pkts();
        self.sink.dequeued(t, p.hash, p.len(), qlen);
        Some(p)
    }

    /// Run the transmitter up to `now`.
    fn advance(&mut self, now: u64) {
        if self.transmitter.is_trace() {
            return self.advance_trace(now);
        }
        loop {
            if let Some((_, f)) = self.in_service {
                if f > now {
                    break;
                }
                let (p, f) = self.in_service.take().unwrap();
                self.free_at = f;
                self.transmitted(f, p);
            }
            if self.qdisc.len_pkts() == 0 {
                break;
            }
            // during an outage the packets wait in the queue (its limit and AQM apply)
            // and the next leaves when the rate returns
            let t = match sending_from(&self.transmitter, self.free_at) {
                Some(t) if t <= now => t,
                _ => break,
            };
            let Some(p) = self.dequeue_at(t) else { break };
            let f = tx_finish(&self.transmitter, t, p.len(), &mut self.carry);
            self.in_service = Some((p, f));
        }
    }

    fn advance_trace(&mut self, now: u64) {
        loop {
            let t = self.transmitter.opportunity_ns();
            if t > now {
                break;
            }
            if self.partial.is_none() && self.qdisc.len_pkts() == 0 {
                break; // idle: the next arrival skips the opportunities it missed
            }
            let mut budget = TRACE_OPPORTUNITY_BYTES;
            while budget > 0 {
                if self.partial.is_none() {
                    match self.dequeue_at(t) {
                        Some(p) => {
                            let n = p.l3_len().max(1);
                            self.partial = Some((p, n));
                        }
                        None => break,
                    }
                }
                let (_, rem) = self.partial.as_mut().unwrap();
                let take = budget.min(*rem);
                *rem -= take;
                budget -= take;
                if *rem == 0 {
                    let (p, _) = self.partial.take().unwrap();
                    self.transmitted(t, p);
                }
            }
            self.transmitter.next_opportunity();
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        let tx = if self.transmitter.is_trace() {
            (self.partial.is_some() || self.qdisc.len_pkts() > 0)
                .then(|| self.transmitter.opportunity_ns())
        } else {
            match &self.in_service {
                Some((_, f)) => (*f != NEVER).then_some(*f),
                // idle, or waiting for an outage to end
                None if self.qdisc.len_pkts() > 0 => {
                    sending_from(&self.transmitter, self.free_at).filter(|&t| t > self.free_at)
                }
                None => None,
            }
        };
        match (tx, self.delay_line.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (x, None) | (None, x) => x,
        }
    }
}

pub struct Link {
    dirs: [Direction; 2],
    stats_interval: u64,
    next_stats: u64,
    stats: Vec<StatsRecord>,
}

impl Link {
    /// A link whose time starts at `start_ns` (first stats interval ends at
    /// `start_ns + stats_interval_ns`).
    pub fn new(p: &LinkParams, start_ns: u64) -> Link {
        Link {
            dirs: [
                Direction::new(W2E, &p.dirs[0], p, start_ns),
                Direction::new(E2W, &p.dirs[1], p, start_ns),
            ],
            stats_interval: p.stats_interval_ns.max(1),
            next_stats: start_ns + p.stats_interval_ns.max(1),
            stats: Vec::new(),
        }
    }

    /// A frame arrived at the link in direction `dir` at `now`.
    pub fn enqueue(&mut self, now: u64, dir: usize, pkt: Packet) {
        self.close_intervals(now);
        self.dirs[dir].enqueue(now, pkt);
    }

    /// Advance to `now`; append every packet due by `now` to `out` (in due order per
    /// direction).
    pub fn poll(&mut self, now: u64, out: &mut Vec<Released>) {
        self.close_intervals(now);
        for (i, d) in self.dirs.iter_mut().enumerate() {
            d.advance(now);
            while let Some((due, pkt)) = d.delay_line.pop_due(now) {
                d.sink.totals.released += 1;
                out.push(Released {
                    dir: i,
                    due_ns: due,
                    pkt,
                });
            }
        }
    }

    /// Earliest time at which `poll` will have something to do (None: nothing pending).
    pub fn next_deadline(&self) -> Option<u64> {
        match (self.dirs[0].next_deadline(), self.dirs[1].next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (x, None) | (None, x) => x,
        }
    }

    /// End of the current statistics interval.
    pub fn next_stats_ns(&self) -> u64 {
        self.next_stats
    }

    fn close_intervals(&mut self, now: u64) {
        while now >= self.next_stats {
            for d in self.dirs.iter_mut() {
                // Account transmitter events up to the boundary in the interval they belong to.
                d.advance(self.next_stats);
                let r =
                    d.sink
                        .close_interval(self.next_stats, d.qdisc.len_pkts(), d.qdisc.len_bytes());
                self.stats.push(r);
            }
            self.next_stats += self.stats_interval;
        }
    }

    /// Close the last (partial) interval at `now` (call once, at exit), with the
    /// transmitter's events up to `now` in it, as every other interval has.
    pub fn finish(&mut self, now: u64) {
        self.close_intervals(now);
        for d in self.dirs.iter_mut() {
            d.advance(now);
            let r = d
                .sink
                .close_interval(now, d.qdisc.len_pkts(), d.qdisc.len_bytes());
            self.stats.push(r);
        }
    }

    pub fn drain_stats(&mut self) -> std::vec::Drain<'_, StatsRecord> {
        self.stats.drain(..)
    }

    pub fn drain_events(&mut self, out: &mut Vec<EventRecord>) {
        for d in self.dirs.iter_mut() {
            out.append(&mut d.sink.events);
        }
        out.sort_by_key(|e| e.t_ns);
    }

    pub fn totals(&self, dir: usize) -> Totals {
        self.dirs[dir].sink.totals
    }

    pub fn queue_len(&self, dir: usize) -> (usize, u64) {
        (
            self.dirs[dir].qdisc.len_pkts(),
            self.dirs[dir].qdisc.len_bytes(),
        )
    }

    pub fn in_flight(&self, dir: usize) -> usize {
        self.dirs[dir].delay_line.len()
    }
}
