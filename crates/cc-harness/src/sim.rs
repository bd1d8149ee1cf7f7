//! A packet-level simulation of flows through one bottleneck, deterministic under the
//! fake clock, for mechanisms that live in time rather than in rounds (pacing, queues,
//! delivery rates: BBR's). Each flow is a [`Conn`] driven the way the kernel drives the
//! algorithm (the flow's TCP is in [`crate::sim::flow`]); the network is
//!
//! ```text
//!   senders ──> bottleneck: FIFO of `buffer` packets, `rate` bit/s, 1514-byte frames,
//!               random loss `loss` on arrival, CE mark above `ecn_k` packets queued
//!           ──> one-way delay rtt/2 ──> receiver: one ACK per packet, exact ECN echo,
//!               the packet's SACK ──> rtt/2 ──> sender
//! ```
//!
//! Time is simulated in ns from event to event (a binary heap); the algorithms' clock
//! (bpf_ktime_get_ns) is set to each event's time before its ops run. Randomness comes
//! from the path's seed. The model of TCP is small and stated in flow.rs: what the
//! algorithm sees (the ops, their order, the rate sample, the fields it reads) is the
//! kernel's; loss detection and retransmission are simplified.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::{set_now_ns, Conn};

mod flow;
pub use flow::Flow;

/// Payload of a full segment, and the frame the bottleneck's rate counts.
pub const MSS: u32 = 1448;
pub const FRAME_BYTES: u64 = 1514;

/// The bottleneck and the path around it.
#[derive(Clone, Copy, Debug)]
pub struct Net {
    pub rate_bps: f64,
    /// packets the bottleneck queue holds (drop-tail beyond)
    pub buffer: usize,
    /// probability that a packet is lost on arrival at the bottleneck
    pub loss: f64,
    /// CE-mark a packet that arrives to find at least this many queued (None: no ECN)
    pub ecn_k: Option<usize>,
    pub seed: u64,
}

impl Net {
    pub fn new(rate_bps: f64, buffer: usize) -> Net {
        Net { rate_bps, buffer, loss: 0.0, ecn_k: None, seed: 1 }
    }
    /// serialization time of one frame, ns
    pub fn frame_ns(&self) -> u64 {
        (FRAME_BYTES as f64 * 8.0 * 1e9 / self.rate_bps).round() as u64
    }
    /// packets per second
    pub fn pps(&self) -> f64 {
        self.rate_bps / (FRAME_BYTES as f64 * 8.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// the bottleneck finished sending its head packet
    Dequeue,
    /// flow i's packet `seq` reaches the receiver (ce: marked)
    Arrive { flow: usize, seq: u64, ce: bool },
    /// flow i's ACK reaches the sender
    Ack { flow: usize, cum: u64, sack: u64, ce: bool },
    /// flow i may send (pacing) or its retransmission timer fires
    Wake { flow: usize },
}

/// A packet in the bottleneck queue.
#[derive(Clone, Copy, Debug)]
struct QPkt {
    flow: usize,
    seq: u64,
    ce: bool,
}

pub struct Sim {
    pub net: Net,
    pub flows: Vec<Flow>,
    now: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    tick: u64,
    queue: VecDeque<QPkt>,
    busy: bool,
    rng: u64,
    /// packets the bottleneck dropped (buffer full) and lost at random
    pub drops: u64,
    pub random_losses: u64,
    /// the largest queue seen, packets
    pub max_queue: usize,
}

impl Sim {
    pub fn new(net: Net) -> Sim {
        Sim {
            net,
            flows: vec![],
            now: crate::now_ns(),
            heap: BinaryHeap::new(),
            tick: 0,
            queue: VecDeque::new(),
            busy: false,
            rng: net.seed | 1,
            drops: 0,
            random_losses: 0,
            max_queue: 0,
        }
    }

    /// A flow of `algo` with base RTT `rtt_us` that starts sending at once: its init op
    /// runs now, with the handshake's RTT (the base RTT) as srtt, as tcp_init_transfer
    /// leaves it. Returns its index.
    pub fn add_flow(&mut self, algo: &str, rtt_us: u64) -> usize {
        set_now_ns(self.now);
        let i = self.flows.len();
        let c = Conn::bare(algo);
        c.set(crate::Field::SrttUs, rtt_us);
        c.init();
        self.flows.push(Flow::new(c, rtt_us * 1000));
        self.at(self.now, Ev::Wake { flow: i });
        i
    }

    pub fn now_ns(&self) -> u64 {
        self.now
    }
    pub fn now_us(&self) -> u64 {
        self.now / 1000
    }
    /// packets queued at the bottleneck now
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }
    pub fn conn(&self, i: usize) -> &Conn {
        &self.flows[i].conn
    }

    fn at(&mut self, t: u64, e: Ev) {
        self.tick += 1;
        self.heap.push(Reverse((t, self.tick, e)));
    }

    fn rand01(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A packet of flow i enters the bottleneck.
    fn enqueue(&mut self, flow: usize, seq: u64) {
        if self.net.loss > 0.0 && self.rand01() < self.net.loss {
            self.random_losses += 1;
            return;
        }
        if self.queue.len() >= self.net.buffer {
            self.drops += 1;
            return;
        }
        let ce = self.net.ecn_k.is_some_and(|k| self.queue.len() >= k) && self.flows[flow].ect;
        self.queue.push_back(QPkt { flow, seq, ce });
        self.max_queue = self.max_queue.max(self.queue.len());
        if !self.busy {
            self.busy = true;
            let t = self.now + self.net.frame_ns();
            self.at(t, Ev::Dequeue);
        }
    }

    /// Process the next event (its time becomes now); false when there is none.
    pub fn step(&mut self) -> bool {
        let Some(Reverse((t, _, ev))) = self.heap.pop() else { return false };
        self.now = t;
        set_now_ns(t);
        self.handle(ev);
        true
    }

    /// The time of the next event.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Process events until `t_ns`; `sample` is called every `every_ns` of simulated
    /// time (before the first event at or after each multiple).
    pub fn run_until(&mut self, t_ns: u64, every_ns: u64, mut sample: impl FnMut(&Sim)) {
        let mut next_sample = self.now;
        while self.next_event_ns().is_some_and(|t| t <= t_ns) {
            let t = self.next_event_ns().unwrap();
            if every_ns > 0 && t >= next_sample {
                sample(self);
                while next_sample <= t {
                    next_sample += every_ns;
                }
            }
            self.step();
        }
        self.now = t_ns.max(self.now);
        set_now_ns(self.now);
    }

    /// Process events, calling `check` after each, until `t_ns` or until `check`
    /// returns false; returns whether it ran to `t_ns`.
    pub fn run_checked(&mut self, t_ns: u64, mut check: impl FnMut(&Sim) -> bool) -> bool {
        while self.next_event_ns().is_some_and(|t| t <= t_ns) {
            self.step();
            if !check(self) {
                return false;
            }
        }
        self.now = t_ns.max(self.now);
        set_now_ns(self.now);
        true
    }

    /// Run for `dur_us` more microseconds without sampling.
    pub fn run_for_us(&mut self, dur_us: u64) {
        let t = self.now + dur_us * 1000;
        self.run_until(t, 0, |_| ());
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Dequeue => {
                let p = self.queue.pop_front().expect("dequeue from an empty bottleneck");
                let half = self.flows[p.flow].rtt_ns / 2;
                self.at(self.now + half, Ev::Arrive { flow: p.flow, seq: p.seq, ce: p.ce });
                if self.queue.is_empty() {
                    self.busy = false;
                } else {
                    let t = self.now + self.net.frame_ns();
                    self.at(t, Ev::Dequeue);
                }
            }
            Ev::Arrive { flow, seq, ce } => {
                let f = &mut self.flows[flow];
                let (cum, sack) = f.receive(seq);
                let half = f.rtt_ns / 2;
                self.at(self.now + half, Ev::Ack { flow, cum, sack, ce });
            }
            Ev::Ack { flow, cum, sack, ce } => {
                let now = self.now;
                self.flows[flow].on_ack(now, cum, sack, ce);
                self.send(flow);
            }
            Ev::Wake { flow } => {
                let now = self.now;
                if self.flows[flow].wake_at == Some(now) {
                    self.flows[flow].wake_at = None;
                }
                if self.flows[flow].rto_due(now) {
                    self.flows[flow].on_rto(now);
                }
                self.send(flow);
            }
        }
    }

    /// Flow i transmits what its window, its pacing and its data allow; a wake-up is set
    /// for the next paced departure and for the retransmission timer.
    fn send(&mut self, i: usize) {
        let now = self.now;
        let mut out = vec![];
        let next = self.flows[i].transmit(now, &mut out);
        for seq in out {
            self.enqueue(i, seq);
        }
        if let Some(t) = next {
            if self.flows[i].wake_at != Some(t) {
                self.flows[i].wake_at = Some(t);
                self.at(t, Ev::Wake { flow: i });
            }
        }
    }
}
