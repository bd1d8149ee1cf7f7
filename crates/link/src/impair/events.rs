//! Per-packet events of netem: duplication and corruption (each with a probability and
//! netem's correlation) and reordering.
//!
//! Reordering as tc-netem(8) defines it (`reorder P [CORR] gap G`): a packet is either
//! delayed as usual or sent at once, without the delay, overtaking the packets still in
//! the delay line. After a packet sent at once the next G − 1 packets are always delayed;
//! each packet after those is sent at once with probability P. So with G = 1 a fraction P
//! of the packets skips the delay, in general P/(1 + (G − 1)·P) of them, and P = 1 sends
//! exactly every G-th packet at once. A reordering needs a delay to overtake.

use super::correlated::Correlated;
use crate::rng::Rng;

/// An event with probability `p` per packet, correlated as netem correlates it.
#[derive(Clone, Debug)]
pub struct Chance {
    p: f64,
    u: Correlated,
}

impl Chance {
    pub fn new(p: f64, correlation: f64, rng: Rng) -> Chance {
        Chance {
            p,
            u: Correlated::new(correlation, rng),
        }
    }

    pub fn happens(&mut self) -> bool {
        self.u.chance(self.p)
    }
}

/// netem's reordering: probability, correlation, gap (≥ 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReorderSpec {
    pub p: f64,
    pub correlation: f64,
    pub gap: u32,
}

#[derive(Clone, Debug)]
pub struct Reorder {
    p: f64,
    gap: u32,
    /// packets delayed since the last one sent at once (netem's `counter`)
    counter: u32,
    u: Correlated,
}

impl Reorder {
    pub fn new(spec: ReorderSpec, rng: Rng) -> Reorder {
        Reorder {
            p: spec.p,
            gap: spec.gap.max(1),
            counter: 0,
            u: Correlated::new(spec.correlation, rng),
        }
    }

    /// Is this packet sent at once (true) or delayed (false)? The draw is made only once
    /// the gap has passed, as netem makes it.
    pub fn send_now(&mut self) -> bool {
        if self.counter + 1 >= self.gap && self.u.chance(self.p) {
            self.counter = 0;
            true
        } else {
            self.counter += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_happens_with_its_probability() {
        let mut c = Chance::new(0.03, 0.0, Rng::new(1));
        let n = 1_000_000;
        let k = (0..n).filter(|_| c.happens()).count() as f64;
        let se = (0.03 * 0.97 / n as f64).sqrt();
        assert!((k / n as f64 - 0.03).abs() < 4.0 * se, "{k}");
        let mut never = Chance::new(0.0, 0.5, Rng::new(2));
        assert!((0..10_000).all(|_| !never.happens()));
    }

    #[test]
    fn reorder_with_gap_one_sends_a_fraction_p_at_once() {
        let mut r = Reorder::new(ReorderSpec { p: 0.25, correlation: 0.0, gap: 1 }, Rng::new(3));
        let n = 400_000;
        let k = (0..n).filter(|_| r.send_now()).count() as f64;
        let se = (0.25 * 0.75 / n as f64).sqrt();
        assert!((k / n as f64 - 0.25).abs() < 4.0 * se, "{}", k / n as f64);
    }

    #[test]
    fn reorder_with_a_gap_keeps_g_minus_one_delayed_after_each() {
        let (p, g) = (0.3, 5u32);
        let mut r = Reorder::new(ReorderSpec { p, correlation: 0.0, gap: g }, Rng::new(4));
        let fate: Vec<bool> = (0..400_000).map(|_| r.send_now()).collect();
        // the first G − 1 packets are delayed, and G − 1 after every packet sent at once
        assert!(fate[..(g - 1) as usize].iter().all(|&x| !x));
        let at: Vec<usize> = (0..fate.len()).filter(|&i| fate[i]).collect();
        assert!(at.windows(2).all(|w| w[1] - w[0] >= g as usize), "a gap was shorter");
        // cycles of G − 1 + Geometric(p) packets, one sent at once in each
        let want = p / (1.0 + (g - 1) as f64 * p);
        let frac = at.len() as f64 / fate.len() as f64;
        let cycles = at.len() as f64;
        // the cycle length has sd √(1−p)/p: the fraction's standard error through it
        let se = want * want * (1.0 - p).sqrt() / p / cycles.sqrt();
        assert!((frac - want).abs() < 4.0 * se, "fraction {frac} vs {want} ± {se}");
    }

    #[test]
    fn reorder_certain_with_a_gap_is_every_gth_packet() {
        let mut r = Reorder::new(ReorderSpec { p: 1.0, correlation: 0.0, gap: 4 }, Rng::new(5));
        let idx: Vec<usize> = (0..40usize).filter(|_| r.send_now()).collect();
        assert_eq!(idx, vec![3, 7, 11, 15, 19, 23, 27, 31, 35, 39]);
    }
}
