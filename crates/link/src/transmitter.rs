//! The transmitter of one direction: when the packet at the head of the queue may start
//! and finish transmission. Constant rates and schedules serialise whole frames
//! (`tx = len·8/rate`, with the sub-ns remainder carried so long runs do not drift);
//! traces follow mahimahi's semantics (K. Winstein et al., "Stochastic Forecasts Achieve
//! High Throughput and Low Delay over Cellular Networks", NSDI 2013; R. Netravali et al.,
//! "Mahimahi", USENIX ATC 2015): each line of the trace is one delivery opportunity of
//! 1500 bytes at that millisecond; bytes of one opportunity may finish several small
//! packets or part of a large one; unused bytes are lost; the trace loops.

use crate::params::RateSpec;

pub const TRACE_OPPORTUNITY_BYTES: usize = 1500;

/// Parse a mahimahi trace (one integer ms timestamp per line, non-decreasing, last > 0).
pub fn parse_trace(text: &str) -> Result<Vec<u64>, String> {
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let s = line.trim();
        if s.is_empty() {
            continue;
        }
        let ms: u64 = s
            .parse()
            .map_err(|_| format!("line {}: not a non-negative integer: {:?}", i + 1, s))?;
        if let Some(&last) = v.last() {
            if ms < last {
                return Err(format!(
                    "line {}: timestamps must be monotonically nondecreasing",
                    i + 1
                ));
            }
        }
        v.push(ms);
    }
    match v.last() {
        None => Err("empty trace".into()),
        Some(0) => Err("trace must last more than 0 ms".into()),
        Some(_) => Ok(v),
    }
}

/// The transmitter of one direction: the rate in force (constant, schedule) with the
/// serialisation remainder it carries, or the cursor into a delivery-opportunity trace.
#[derive(Debug)]
pub struct Transmitter {
    pub spec: RateSpec,
    pub t0: u64,
    carry: u128,
    // trace cursor
    idx: usize,
    cycle: u64,
}

impl Transmitter {
    pub fn new(spec: RateSpec, t0: u64) -> Transmitter {
        Transmitter {
            spec,
            t0,
            carry: 0,
            idx: 0,
            cycle: 0,
        }
    }

    pub fn is_trace(&self) -> bool {
        matches!(self.spec, RateSpec::Trace { .. })
    }

    /// Rate in force at `t` (None = unlimited). Not meaningful for traces.
    pub fn rate_at(&self, t: u64) -> Option<u64> {
        match &self.spec {
            RateSpec::Unlimited | RateSpec::Trace { .. } => None,
            RateSpec::Constant(r) => Some(*r),
            RateSpec::Schedule { initial, steps } => {
                let rel = t.saturating_sub(self.t0);
                if t < self.t0 {
                    return *initial;
                }
                let n = steps.partition_point(|(ts, _)| *ts <= rel);
                if n == 0 {
                    *initial
                } else {
                    steps[n - 1].1
                }
            }
        }
    }

    /// Transmission time of `bytes` at `rate` bit/s, carrying the remainder.
    pub fn tx_ns(&mut self, bytes: usize, rate: u64) -> u64 {
        let num = bytes as u128 * 8 * 1_000_000_000 + self.carry;
        self.carry = num % rate as u128;
        (num / rate as u128) as u64
    }

    /// Time of the current trace opportunity.
    pub fn opportunity_ns(&self) -> u64 {
        let RateSpec::Trace {
            opportunities_ms: o,
        } = &self.spec
        else {
            return u64::MAX;
        };
        let period = *o.last().unwrap();
        self.t0 + (self.cycle * period + o[self.idx]) * 1_000_000
    }

    pub fn next_opportunity(&mut self) {
        let RateSpec::Trace {
            opportunities_ms: o,
        } = &self.spec
        else {
            return;
        };
        self.idx += 1;
        if self.idx == o.len() {
            self.idx = 0;
            self.cycle += 1;
        }
    }

    /// Skip every opportunity before `t` (the queue was idle: they are wasted).
    pub fn skip_before(&mut self, t: u64) {
        let RateSpec::Trace {
            opportunities_ms: o,
        } = &self.spec
        else {
            return;
        };
        let period_ns = *o.last().unwrap() * 1_000_000;
        if t > self.opportunity_ns() + period_ns {
            let cycles = (t - self.opportunity_ns()) / period_ns - 1;
            self.cycle += cycles;
        }
        while self.opportunity_ns() < t {
            self.next_opportunity();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_parsing_checks_order_and_length() {
        assert_eq!(parse_trace("1\n1\n3\n").unwrap(), vec![1, 1, 3]);
        assert!(parse_trace("3\n1\n").unwrap_err().contains("nondecreasing"));
        assert!(parse_trace("").unwrap_err().contains("empty"));
        assert!(parse_trace("0\n0\n").is_err());
        assert!(parse_trace("1\nx\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn tx_time_carries_remainder() {
        let mut c = Transmitter::new(RateSpec::Constant(3_000_000), 0);
        // 1 byte at 3 Mbit/s = 2666.67 ns; three of them = 8000 ns exactly.
        let total: u64 = (0..3).map(|_| c.tx_ns(1, 3_000_000)).sum();
        assert_eq!(total, 8000);
    }

    #[test]
    fn schedule_switches_rates() {
        let c = Transmitter::new(
            RateSpec::Schedule {
                initial: Some(1),
                steps: vec![(10, Some(2)), (20, None)],
            },
            100,
        );
        assert_eq!(c.rate_at(50), Some(1));
        assert_eq!(c.rate_at(109), Some(1));
        assert_eq!(c.rate_at(110), Some(2));
        assert_eq!(c.rate_at(125), None);
    }

    #[test]
    fn trace_cursor_loops_and_skips() {
        let mut c = Transmitter::new(
            RateSpec::Trace {
                opportunities_ms: vec![1, 2, 4],
            },
            0,
        );
        let mut seen = vec![];
        for _ in 0..5 {
            seen.push(c.opportunity_ns() / 1_000_000);
            c.next_opportunity();
        }
        assert_eq!(seen, vec![1, 2, 4, 5, 6]);
        c.skip_before(1_000_000_000);
        assert_eq!(c.opportunity_ns(), 1_000_000_000);
        c.skip_before(1_000_000_001);
        assert_eq!(c.opportunity_ns(), 1_001_000_000);
    }
}
