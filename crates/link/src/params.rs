//! Validated parameters of the link core (built from the JSON config by `config`, or
//! directly by tests and simulators). All times are ns, rates bit/s, sizes bytes.

use crate::impair::{JitterSpec, LossModel, ReorderSpec};
use crate::queue::classes::ClassMatch;
use crate::queue::codel::CodelParams;
use crate::queue::step::StepK;
use crate::queue::Limit;

/// How fast the transmitter of one direction serves its queue.
#[derive(Clone, Debug, PartialEq)]
pub enum RateSpec {
    Unlimited,
    /// Constant rate, bit/s, counted over whole Ethernet frames (header included).
    Constant(u64),
    /// Piecewise-constant rate: `initial` until the first entry, then each
    /// `(t_ns since t0, rate)` holds until the next (`None` = unlimited).
    Schedule {
        initial: Option<u64>,
        steps: Vec<(u64, Option<u64>)>,
    },
    /// mahimahi trace: delivery opportunities at these ms offsets, each for 1500 bytes
    /// above the Ethernet header; the list loops with period = last entry.
    Trace {
        opportunities_ms: Vec<u64>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum QueueKind {
    DropTail,
    Red {
        min_th: f64,
        max_th: f64,
        max_p: f64,
        weight: f64,
        bytes: bool,
        ecn: bool,
    },
    Codel(CodelParams),
    FqCodel {
        flows: u32,
        quantum: u32,
        codel: CodelParams,
    },
    Step(StepK),
    /// Strict priority; a class without its own limit uses the direction's buffer;
    /// unmatched packets go to class `default` (None = the last).
    Classes {
        classes: Vec<(ClassMatch, Option<Limit>)>,
        default: Option<usize>,
    },
}

/// A per-packet probability with netem's correlation (duplication, corruption).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChanceSpec {
    pub p: f64,
    pub correlation: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DirParams {
    pub rate: RateSpec,
    pub delay_ns: u64,
    pub jitter: Option<JitterSpec>,
    pub loss: Option<LossModel>,
    /// netem's `duplicate`, `corrupt` and `reorder`, applied as a packet leaves the
    /// transmitter (docs/link.md, "Impairments").
    pub duplicate: Option<ChanceSpec>,
    pub corrupt: Option<ChanceSpec>,
    pub reorder: Option<ReorderSpec>,
    pub limit: Limit,
    pub queue: QueueKind,
    pub ecn: bool,
}

impl DirParams {
    /// A plain drop-tail link (handy in tests).
    pub fn simple(rate: RateSpec, delay_ns: u64, limit: Limit) -> DirParams {
        DirParams {
            rate,
            delay_ns,
            jitter: None,
            loss: None,
            duplicate: None,
            corrupt: None,
            reorder: None,
            limit,
            queue: QueueKind::DropTail,
            ecn: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostRule {
    pub ip: u32,
    pub delay_ns: u64,
    pub loss: Option<LossModel>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkParams {
    pub stats_interval_ns: u64,
    pub event_log: bool,
    pub seed: u64,
    /// Origin of rate schedules and traces (CLOCK_MONOTONIC ns); `None` = link start.
    pub t0_ns: Option<u64>,
    /// [w2e, e2w]
    pub dirs: [DirParams; 2],
    pub hosts: Vec<HostRule>,
    /// Memory bound of each delay line in bytes (`None`: derived from rate × delay).
    pub delay_line_bytes: Option<u64>,
}
