//! Log-linear histogram of lateness values (ns): 64 sub-buckets per power of two, so
//! quantiles are exact to within 1/64 (≈1.6 %). Constant memory.

const SUB: usize = 64;

pub struct Hist {
    counts: Vec<u64>,
    pub n: u64,
    pub max: u64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            counts: vec![0; 64 * SUB],
            n: 0,
            max: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize; // >= 6
    let shift = e - 6;
    let m = (v >> shift) as usize - SUB; // 0..64
    (shift + 1) * SUB + m
}

fn bucket_high(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let shift = b / SUB - 1;
    let m = (b % SUB + SUB) as u64;
    ((m + 1) << shift) - 1
}

impl Hist {
    pub fn add(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.n += 1;
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, o: &Hist) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.max = self.max.max(o.max);
    }

    /// Upper edge of the bucket holding quantile `q` (0..=1), capped at the max.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let target = ((q * self.n as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (b, c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= target {
                return bucket_high(b).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_two_percent() {
        let mut h = Hist::default();
        for v in 1..=100_000u64 {
            h.add(v * 10);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 / 500_000.0 - 1.0).abs() < 0.02, "{p50}");
        assert!((p99 / 990_000.0 - 1.0).abs() < 0.02, "{p99}");
        assert_eq!(h.quantile(1.0), 1_000_000);
    }
}
