//! The random impairments of one direction, in netem's order (sch_netem.c's
//! `netem_enqueue`, read to learn what netem does):
//!
//! ```text
//! arrival:  duplicate? ─▶ lost? (loss model) ─▶ a copy that is made draws the loss model again
//! leaving the transmitter:  copy ─▶ corrupt? (each copy) ─▶ reorder? sent at once : delay + jitter
//! ```
//!
//! Duplication and loss are decided together on arrival, as netem counts them: a packet
//! picked for duplication that the loss model takes leaves once (the copy replaces it); one
//! it spares leaves twice unless the copy's own draw of the loss model takes the copy.
//! Everything after the queue — the copy itself, corruption, reordering and the delay —
//! happens when the packet leaves the transmitter, so copies do not take the bottleneck's
//! rate or buffer: in the kernel backend netem sits behind the bottleneck too. Each
//! impairment has its own random stream (`Rng::stream`) so adding one shifts no other.

use crate::impair::{Chance, Jitter, Loss, Reorder};
use crate::packet::Packet;
use crate::params::DirParams;
use crate::rng::Rng;

const ORDER_BUCKETS: usize = 4096;

/// What the arrival stage decided for a packet.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    Lost,
    Kept { duplicate: bool },
}

pub(crate) struct Impairments {
    loss: Option<Loss>,
    duplicate: Option<Chance>,
    corrupt: Option<(Chance, Rng)>,
    reorder: Option<Reorder>,
    pub(crate) jitter: Option<Jitter>,
    /// Due time of the last packet of each flow bucket (jitter that keeps flows in order).
    last_due: Vec<u64>,
}

impl Impairments {
    /// Streams: 20 + dir loss, 30 + dir jitter (as before these impairments existed),
    /// 50 + dir duplication, 60 + dir corruption (70 + dir its bit positions), 80 + dir
    /// reordering.
    pub(crate) fn new(dir: usize, p: &DirParams, seed: u64) -> Impairments {
        let s = |base: u64| Rng::stream(seed, base + dir as u64);
        Impairments {
            loss: p.loss.map(|m| Loss::new(m, s(20))),
            duplicate: p.duplicate.map(|c| Chance::new(c.p, c.correlation, s(50))),
            corrupt: p.corrupt.map(|c| (Chance::new(c.p, c.correlation, s(60)), s(70))),
            reorder: p.reorder.map(|r| Reorder::new(r, s(80))),
            jitter: p.jitter.map(|j| Jitter::new(j, s(30))),
            last_due: vec![0; ORDER_BUCKETS],
        }
    }

    /// Duplication and the loss model for one arriving packet.
    pub(crate) fn arrival(&mut self) -> Arrival {
        let dup = self.duplicate.as_mut().is_some_and(|d| d.happens());
        let lost = self.lose();
        match (dup, lost) {
            (false, true) => Arrival::Lost,
            (false, false) | (true, true) => Arrival::Kept { duplicate: false },
            (true, false) => Arrival::Kept {
                duplicate: !self.lose(),
            },
        }
    }

    fn lose(&mut self) -> bool {
        self.loss.as_mut().is_some_and(|l| l.lose())
    }

    /// Corrupt `pkt` with the corruption probability; true if it was.
    pub(crate) fn corrupt(&mut self, pkt: &mut Packet) -> bool {
        let Some((c, bits)) = self.corrupt.as_mut() else {
            return false;
        };
        if !c.happens() {
            return false;
        }
        pkt.corrupt(bits.next_u64() as usize);
        true
    }

    /// When a packet that left the transmitter at `t` is due on the far side, with
    /// `base` ns of delay (the direction's and the per-host rules'); `None` if reordering
    /// sends it at once.
    pub(crate) fn due(&mut self, t: u64, base: u64, hash: u32) -> Option<u64> {
        if self.reorder.as_mut().is_some_and(|r| r.send_now()) {
            return None;
        }
        let Some(j) = self.jitter.as_mut() else {
            return Some(t + base);
        };
        let mut due = t + j.apply(base);
        if !j.reorder {
            let b = hash as usize % ORDER_BUCKETS;
            due = due.max(self.last_due[b]);
            self.last_due[b] = due;
        }
        Some(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::impair::{JitterModel, JitterSpec, LossModel, ReorderSpec};
    use crate::params::{ChanceSpec, RateSpec};
    use crate::queue::Limit;

    fn dir(f: impl FnOnce(&mut DirParams)) -> Impairments {
        let mut p = DirParams::simple(RateSpec::Unlimited, 0, Limit::packets(10));
        f(&mut p);
        Impairments::new(0, &p, 42)
    }

    #[test]
    fn duplication_and_loss_combine_as_netem_counts_them() {
        // certain duplication, certain loss: the copy replaces the lost packet, once
        let mut i = dir(|p| {
            p.duplicate = Some(ChanceSpec { p: 1.0, correlation: 0.0 });
            p.loss = Some(LossModel::Bernoulli { p: 1.0 });
        });
        assert_eq!(i.arrival(), Arrival::Kept { duplicate: false });
        // certain duplication, no loss: two copies
        let mut i = dir(|p| p.duplicate = Some(ChanceSpec { p: 1.0, correlation: 0.0 }));
        assert_eq!(i.arrival(), Arrival::Kept { duplicate: true });
        // duplication d, loss q: P(lost) = (1−d)q, P(two) = d(1−q)²
        let (d, q) = (0.3, 0.2);
        let mut i = dir(|p| {
            p.duplicate = Some(ChanceSpec { p: d, correlation: 0.0 });
            p.loss = Some(LossModel::Bernoulli { p: q });
        });
        let n = 400_000;
        let (mut lost, mut two) = (0u32, 0u32);
        for _ in 0..n {
            match i.arrival() {
                Arrival::Lost => lost += 1,
                Arrival::Kept { duplicate: true } => two += 1,
                _ => {}
            }
        }
        for (k, want) in [(lost, (1.0 - d) * q), (two, d * (1.0 - q) * (1.0 - q))] {
            let se = (want * (1.0 - want) / n as f64).sqrt();
            assert!((k as f64 / n as f64 - want).abs() < 4.0 * se, "{k} vs {want}");
        }
    }

    #[test]
    fn a_reordered_packet_has_no_delay_and_others_keep_theirs() {
        let mut i = dir(|p| {
            p.reorder = Some(ReorderSpec { p: 1.0, correlation: 0.0, gap: 3 });
            p.jitter = Some(JitterSpec::new(JitterModel::Uniform { ns: 10.0 }, false));
        });
        let due: Vec<Option<u64>> = (0..6).map(|k| i.due(1000 * k, 500, 7)).collect();
        assert_eq!(due[2], None);
        assert_eq!(due[5], None);
        for k in [0, 1, 3, 4] {
            let d = due[k].unwrap() as i64 - 1000 * k as i64;
            assert!((490..=510).contains(&d), "packet {k}: delay {d}");
        }
    }

    #[test]
    fn corruption_flips_one_bit_of_a_chosen_packet() {
        let mut i = dir(|p| p.corrupt = Some(ChanceSpec { p: 1.0, correlation: 0.0 }));
        let frame = crate::packet::build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 1, 0, 0, 0);
        let mut pkt = Packet::from_frame(&frame);
        assert!(i.corrupt(&mut pkt) && pkt.corrupted);
        let diff: u32 = frame.iter().zip(pkt.frame()).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert_eq!(diff, 1);
        let mut none = dir(|_| {});
        assert!(!none.corrupt(&mut pkt));
    }
}
