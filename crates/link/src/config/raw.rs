//! The JSON shapes of the link's config as serde reads them (contracts §3), before
//! validation. Every object refuses keys it does not know (`deny_unknown_fields`), so a
//! key misspelt between the orchestrator and the link is an error naming the key, not a
//! silently ignored setting.

use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) ifaces: RawIfaces,
    pub(super) out_dir: String,
    #[serde(default)]
    pub(super) stats_interval_ns: Option<f64>,
    #[serde(default)]
    pub(super) event_log: bool,
    #[serde(default)]
    pub(super) late_tolerance_ns: Option<f64>,
    #[serde(default)]
    pub(super) seed: Option<f64>,
    #[serde(default)]
    pub(super) t0_ns: Option<f64>,
    #[serde(default)]
    pub(super) spin_ns: Option<f64>,
    #[serde(default)]
    pub(super) threads: Option<f64>,
    #[serde(default)]
    pub(super) rx_timestamps: Option<bool>,
    #[serde(default)]
    pub(super) rx_ring: Option<bool>,
    #[serde(default)]
    pub(super) rx_poll_ns: Option<f64>,
    #[serde(default)]
    pub(super) io: Option<String>,
    #[serde(default)]
    pub(super) rt_priority: Option<f64>,
    #[serde(default)]
    pub(super) cpus: Option<Vec<f64>>,
    #[serde(default)]
    pub(super) rt_busy_ns: Option<f64>,
    #[serde(default)]
    pub(super) rt_nap_ns: Option<f64>,
    #[serde(default)]
    pub(super) rt_yield: Option<String>,
    pub(super) w2e: RawDir,
    pub(super) e2w: RawDir,
    #[serde(default)]
    pub(super) hosts: Vec<RawHost>,
    /// Provenance written by the orchestrator (ccarena.testbed.user_link.start): the CPUs
    /// it steered the routers' receive processing to, and the hand-off fifo's limit (or
    /// null). Recorded in the config file; the link does not use them.
    #[serde(default, rename = "rps_cpus")]
    pub(super) _rps_cpus: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "handoff_fifo")]
    pub(super) _handoff_fifo: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIfaces {
    pub(super) west: String,
    pub(super) east: String,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDir {
    #[serde(default)]
    pub(super) rate_bps: Option<f64>,
    #[serde(default)]
    pub(super) rate_schedule: Option<Vec<RawStep>>,
    #[serde(default)]
    pub(super) trace_file: Option<String>,
    #[serde(default)]
    pub(super) delay_ns: Option<f64>,
    #[serde(default)]
    pub(super) jitter: Option<RawJitter>,
    #[serde(default)]
    pub(super) loss: Option<RawLoss>,
    #[serde(default)]
    pub(super) duplicate: Option<RawChance>,
    #[serde(default)]
    pub(super) corrupt: Option<RawChance>,
    #[serde(default)]
    pub(super) reorder: Option<RawReorder>,
    pub(super) buffer: Option<RawBuffer>,
    #[serde(default)]
    pub(super) queue: Option<RawQueue>,
    #[serde(default)]
    pub(super) ecn: bool,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    pub(super) t_ns: f64,
    pub(super) rate_bps: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBuffer {
    #[serde(default)]
    pub(super) packets: Option<f64>,
    #[serde(default)]
    pub(super) bytes: Option<f64>,
}

/// A jitter: its kind and size, netem's `correlation` (default 0) and `reorder` (may it
/// reorder a flow's packets; default false).
#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum RawJitter {
    Uniform {
        ns: f64,
        #[serde(default)]
        correlation: Option<f64>,
        #[serde(default)]
        reorder: bool,
    },
    Normal {
        sd_ns: f64,
        #[serde(default)]
        correlation: Option<f64>,
        #[serde(default)]
        reorder: bool,
    },
    Pareto {
        ns: f64,
        #[serde(default)]
        correlation: Option<f64>,
        #[serde(default)]
        reorder: bool,
    },
    Paretonormal {
        ns: f64,
        #[serde(default)]
        correlation: Option<f64>,
        #[serde(default)]
        reorder: bool,
    },
    Exponential {
        mean_ns: f64,
        #[serde(default)]
        correlation: Option<f64>,
        #[serde(default)]
        reorder: bool,
    },
}

#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum RawLoss {
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        #[serde(default)]
        loss_good: Option<f64>,
        #[serde(default)]
        loss_bad: Option<f64>,
    },
    FourState {
        p13: f64,
        #[serde(default)]
        p31: Option<f64>,
        #[serde(default)]
        p32: Option<f64>,
        #[serde(default)]
        p23: Option<f64>,
        #[serde(default)]
        p14: Option<f64>,
    },
}

/// duplicate / corrupt: a probability and netem's correlation.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChance {
    pub(super) p: f64,
    #[serde(default)]
    pub(super) correlation: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReorder {
    pub(super) p: f64,
    #[serde(default)]
    pub(super) correlation: Option<f64>,
    #[serde(default)]
    pub(super) gap: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClass {
    #[serde(default)]
    pub(super) ips: Vec<String>,
    #[serde(default)]
    pub(super) ports: Vec<u16>,
    #[serde(default)]
    pub(super) protocols: Vec<u8>,
    #[serde(default)]
    pub(super) buffer: Option<RawBuffer>,
}

#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum RawQueue {
    Droptail {},
    Red {
        min_th: f64,
        max_th: f64,
        #[serde(default)]
        max_p: Option<f64>,
        #[serde(default)]
        weight: Option<f64>,
        #[serde(default)]
        unit: Option<String>,
        #[serde(default)]
        ecn: Option<bool>,
    },
    Codel {
        #[serde(default)]
        target_ns: Option<f64>,
        #[serde(default)]
        interval_ns: Option<f64>,
        #[serde(default)]
        ecn: Option<bool>,
    },
    FqCodel {
        #[serde(default)]
        target_ns: Option<f64>,
        #[serde(default)]
        interval_ns: Option<f64>,
        #[serde(default)]
        flows: Option<f64>,
        #[serde(default)]
        quantum: Option<f64>,
        #[serde(default)]
        ecn: Option<bool>,
    },
    Step {
        #[serde(default)]
        k_packets: Option<f64>,
        #[serde(default)]
        k_bytes: Option<f64>,
    },
    Classes {
        classes: Vec<RawClass>,
        #[serde(default)]
        default: Option<f64>,
    },
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    pub(super) ip: String,
    #[serde(default)]
    pub(super) delay_ns: Option<f64>,
    #[serde(default)]
    pub(super) loss: Option<RawLoss>,
}
