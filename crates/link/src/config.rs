//! The JSON configuration of `ccarena-link` (contracts §3) and its validation.
//!
//! Contract: `load(path)` either returns a fully validated `Config` or a `ConfigError`
//! naming the key and the cause; nothing starts before that. Numbers may be written as
//! JSON integers or floats. Nested objects reject unknown keys (typos fail loudly); the
//! top level ignores unknown keys so an orchestrator can add metadata.

use std::net::Ipv4Addr;

use serde::Deserialize;

use crate::impair::{JitterModel, LossModel};
use crate::params::{DirParams, HostRule, LinkParams, QueueKind, RateSpec};
use crate::queue::classes::ClassMatch;
use crate::queue::codel::CodelParams;
use crate::queue::step::StepK;
use crate::queue::Limit;
use crate::transmitter::parse_trace;

#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub object: String,
    pub cause: String,
}

impl ConfigError {
    fn new(object: impl Into<String>, cause: impl Into<String>) -> ConfigError {
        ConfigError {
            object: object.into(),
            cause: cause.into(),
        }
    }
}

#[derive(Deserialize, Debug)]
struct RawConfig {
    ifaces: RawIfaces,
    out_dir: String,
    #[serde(default)]
    stats_interval_ns: Option<f64>,
    #[serde(default)]
    event_log: bool,
    #[serde(default)]
    late_tolerance_ns: Option<f64>,
    #[serde(default)]
    seed: Option<f64>,
    #[serde(default)]
    t0_ns: Option<f64>,
    #[serde(default)]
    spin_ns: Option<f64>,
    #[serde(default)]
    threads: Option<f64>,
    #[serde(default)]
    rx_timestamps: Option<bool>,
    #[serde(default)]
    rx_ring: Option<bool>,
    #[serde(default)]
    rx_poll_ns: Option<f64>,
    #[serde(default)]
    io: Option<String>,
    #[serde(default)]
    rt_priority: Option<f64>,
    #[serde(default)]
    cpus: Option<Vec<f64>>,
    #[serde(default)]
    rt_busy_ns: Option<f64>,
    #[serde(default)]
    rt_nap_ns: Option<f64>,
    #[serde(default)]
    rt_yield: Option<String>,
    w2e: RawDir,
    e2w: RawDir,
    #[serde(default)]
    hosts: Vec<RawHost>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawIfaces {
    west: String,
    east: String,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawDir {
    #[serde(default)]
    rate_bps: Option<f64>,
    #[serde(default)]
    rate_schedule: Option<Vec<RawStep>>,
    #[serde(default)]
    trace_file: Option<String>,
    #[serde(default)]
    delay_ns: Option<f64>,
    #[serde(default)]
    jitter: Option<RawJitter>,
    #[serde(default)]
    loss: Option<RawLoss>,
    buffer: Option<RawBuffer>,
    #[serde(default)]
    queue: Option<RawQueue>,
    #[serde(default)]
    ecn: bool,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawStep {
    t_ns: f64,
    rate_bps: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawBuffer {
    #[serde(default)]
    packets: Option<f64>,
    #[serde(default)]
    bytes: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum RawJitter {
    Uniform {
        ns: f64,
        #[serde(default)]
        reorder: bool,
    },
    Normal {
        sd_ns: f64,
        #[serde(default)]
        reorder: bool,
    },
    Exponential {
        mean_ns: f64,
        #[serde(default)]
        reorder: bool,
    },
}

#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum RawLoss {
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
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawClass {
    #[serde(default)]
    ips: Vec<String>,
    #[serde(default)]
    ports: Vec<u16>,
    #[serde(default)]
    protocols: Vec<u8>,
    #[serde(default)]
    buffer: Option<RawBuffer>,
}

#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum RawQueue {
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
struct RawHost {
    ip: String,
    #[serde(default)]
    delay_ns: Option<f64>,
    #[serde(default)]
    loss: Option<RawLoss>,
}

/// Which kernel interface carries the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    Packet,
    Xdp,
    /// AF_XDP, falling back to AF_PACKET (and saying so) where it cannot be set up.
    Auto,
}

/// Everything the shell needs besides the core's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub west: String,
    pub east: String,
    pub out_dir: String,
    pub late_tolerance_ns: u64,
    /// Busy-wait window before a deadline (ns).
    pub spin_ns: u64,
    /// Forwarding threads: 1 = both directions in one (default), 2 = one per direction.
    pub threads: usize,
    /// Take arrival times from the kernel's receive timestamps (default) instead of the
    /// time the shell read the packet.
    pub rx_timestamps: bool,
    /// Receive through a TPACKET_V2 mmap ring (default) instead of recvmmsg.
    pub rx_ring: bool,
    /// Read the receive rings at least this often instead of waking on every arrival
    /// (0 = wake on every arrival). Default: a quarter of the smallest one-way delay
    /// (delay minus the largest negative jitter), at most 1 ms, 0 below 200 µs.
    pub rx_poll_ns: u64,
    /// Packet I/O: AF_PACKET, AF_XDP, or AF_XDP where the kernel supports it (see
    /// docs/link.md "I/O design").
    pub io: Io,
    /// SCHED_FIFO priority of the forwarding threads (0 = normal scheduling).
    pub rt_priority: i32,
    /// CPUs the forwarding threads are pinned to (thread i on cpus[i % len]); empty =
    /// wherever the scheduler puts them. Pinning lets the orchestrator steer the
    /// endpoints' receive processing (RPS) to the other CPUs, see docs/link.md.
    pub cpus: Vec<usize>,
    /// A SCHED_FIFO thread that has not blocked for `rt_busy_ns` sleeps `rt_nap_ns`, so
    /// ordinary tasks on its CPU run in small gaps instead of one throttling block.
    pub rt_busy_ns: u64,
    pub rt_nap_ns: u64,
    /// How the `rt_nap_ns` are given back, see RtYield.
    pub rt_yield: RtYield,
    pub link: LinkParams,
}

/// How a SCHED_FIFO forwarding thread that has not blocked for `rt_busy_ns` leaves the
/// kernel its reserve for ordinary tasks (sched_rt_runtime_us: 950 ms of RT time per
/// second; past it the kernel stops RT tasks for the rest of the second).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtYield {
    /// Run at least `rt_nap_ns` (more if the kernel's budget needs it, see
    /// shell::fair_phase_ns) as an ordinary task (SCHED_OTHER, nice -20), still forwarding:
    /// the time does not count as RT time, and when no other task wants the CPU the
    /// thread keeps it. Falls back to Sleep where the switch is refused.
    Fair,
    /// Sleep `rt_nap_ns`: packets due meanwhile leave up to a nap plus a wake-up late.
    Sleep,
}

fn nonneg_int(key: &str, v: f64) -> Result<u64, ConfigError> {
    if !v.is_finite() || v < 0.0 {
        return Err(ConfigError::new(
            key,
            format!("must be a non-negative number, got {v}"),
        ));
    }
    Ok(v.round() as u64)
}

/// An optional integer key: checked by `check` when present, else `default`.
fn opt_int(
    key: &str,
    v: Option<f64>,
    check: fn(&str, f64) -> Result<u64, ConfigError>,
    default: u64,
) -> Result<u64, ConfigError> {
    Ok(v.map(|v| check(key, v)).transpose()?.unwrap_or(default))
}

fn positive_int(key: &str, v: f64) -> Result<u64, ConfigError> {
    let x = nonneg_int(key, v)?;
    if x == 0 {
        return Err(ConfigError::new(key, format!("must be positive, got {v}")));
    }
    Ok(x)
}

fn prob(key: &str, v: f64) -> Result<f64, ConfigError> {
    if !(0.0..=1.0).contains(&v) {
        return Err(ConfigError::new(
            key,
            format!("must be a probability in [0, 1], got {v}"),
        ));
    }
    Ok(v)
}

fn ipv4(key: &str, s: &str) -> Result<u32, ConfigError> {
    s.parse::<Ipv4Addr>()
        .map(u32::from)
        .map_err(|_| ConfigError::new(key, format!("not an IPv4 address: {s:?}")))
}

fn loss(key: &str, l: &RawLoss) -> Result<LossModel, ConfigError> {
    Ok(match *l {
        RawLoss::Bernoulli { p } => LossModel::Bernoulli {
            p: prob(&format!("{key}.p"), p)?,
        },
        RawLoss::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => LossModel::GilbertElliott {
            p: prob(&format!("{key}.p"), p)?,
            r: prob(&format!("{key}.r"), r)?,
            loss_good: prob(&format!("{key}.loss_good"), loss_good.unwrap_or(0.0))?,
            loss_bad: prob(&format!("{key}.loss_bad"), loss_bad.unwrap_or(1.0))?,
        },
    })
}

fn buffer(key: &str, b: &Option<RawBuffer>) -> Result<Limit, ConfigError> {
    let Some(b) = b else {
        return Err(ConfigError::new(
            key,
            "missing: give {\"packets\": N} or {\"bytes\": N}",
        ));
    };
    let packets = b
        .packets
        .map(|v| positive_int(&format!("{key}.packets"), v))
        .transpose()?;
    let bytes = b
        .bytes
        .map(|v| positive_int(&format!("{key}.bytes"), v))
        .transpose()?;
    if packets.is_none() && bytes.is_none() {
        return Err(ConfigError::new(
            key,
            "empty buffer: give {\"packets\": N} or {\"bytes\": N}",
        ));
    }
    if let Some(b) = bytes {
        if b < 1514 {
            return Err(ConfigError::new(
                format!("{key}.bytes"),
                format!("{b} bytes cannot hold one full-size frame (1514 bytes)"),
            ));
        }
    }
    Ok(Limit { packets, bytes })
}

fn rate(key: &str, v: f64) -> Result<u64, ConfigError> {
    if !v.is_finite() || v < 1.0 {
        return Err(ConfigError::new(
            key,
            format!("rate must be at least 1 bit/s (null = unlimited), got {v}"),
        ));
    }
    Ok(v.round() as u64)
}

fn codel(
    prefix: &str,
    target: Option<f64>,
    interval: Option<f64>,
    ecn: bool,
) -> Result<CodelParams, ConfigError> {
    let d = CodelParams::default();
    Ok(CodelParams {
        target_ns: target
            .map(|v| positive_int(&format!("{prefix}.target_ns"), v))
            .transpose()?
            .unwrap_or(d.target_ns),
        interval_ns: interval
            .map(|v| positive_int(&format!("{prefix}.interval_ns"), v))
            .transpose()?
            .unwrap_or(d.interval_ns),
        mtu_bytes: d.mtu_bytes,
        ecn,
    })
}

fn direction(name: &str, d: &RawDir, base_dir: &std::path::Path) -> Result<DirParams, ConfigError> {
    let k = |s: &str| format!("{name}.{s}");
    let initial = d.rate_bps.map(|v| rate(&k("rate_bps"), v)).transpose()?;
    let sources = [d.rate_schedule.is_some(), d.trace_file.is_some()]
        .iter()
        .filter(|x| **x)
        .count();
    if sources > 1 {
        return Err(ConfigError::new(
            name,
            "give at most one of rate_schedule and trace_file",
        ));
    }
    let rate_spec = if let Some(steps) = &d.rate_schedule {
        let mut v = Vec::new();
        for (i, s) in steps.iter().enumerate() {
            let t = nonneg_int(&k(&format!("rate_schedule[{i}].t_ns")), s.t_ns)?;
            if v.last().is_some_and(|(lt, _)| *lt > t) {
                return Err(ConfigError::new(
                    k(&format!("rate_schedule[{i}].t_ns")),
                    "times must be nondecreasing",
                ));
            }
            let r = s
                .rate_bps
                .map(|x| rate(&k(&format!("rate_schedule[{i}].rate_bps")), x))
                .transpose()?;
            v.push((t, r));
        }
        if v.is_empty() {
            return Err(ConfigError::new(k("rate_schedule"), "empty schedule"));
        }
        RateSpec::Schedule { initial, steps: v }
    } else if let Some(f) = &d.trace_file {
        let path = base_dir.join(f);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ConfigError::new(
                format!("{} {}", k("trace_file"), path.display()),
                e.to_string(),
            )
        })?;
        let opps = parse_trace(&text)
            .map_err(|e| ConfigError::new(format!("{} {}", k("trace_file"), path.display()), e))?;
        RateSpec::Trace {
            opportunities_ms: opps,
        }
    } else {
        match initial {
            Some(r) => RateSpec::Constant(r),
            None => RateSpec::Unlimited,
        }
    };
    let delay_ns = match d.delay_ns {
        Some(v) if v < 0.0 || !v.is_finite() => {
            return Err(ConfigError::new(
                k("delay_ns"),
                format!("negative delay: {v} ns"),
            ))
        }
        Some(v) => v.round() as u64,
        None => 0,
    };
    let jitter = match &d.jitter {
        None => None,
        Some(RawJitter::Uniform { ns, reorder }) => Some((
            JitterModel::Uniform {
                ns: nonneg_int(&k("jitter.ns"), *ns)? as f64,
            },
            *reorder,
        )),
        Some(RawJitter::Normal { sd_ns, reorder }) => Some((
            JitterModel::Normal {
                sd_ns: nonneg_int(&k("jitter.sd_ns"), *sd_ns)? as f64,
            },
            *reorder,
        )),
        Some(RawJitter::Exponential { mean_ns, reorder }) => Some((
            JitterModel::Exponential {
                mean_ns: nonneg_int(&k("jitter.mean_ns"), *mean_ns)? as f64,
            },
            *reorder,
        )),
    };
    let loss_m = d.loss.as_ref().map(|l| loss(&k("loss"), l)).transpose()?;
    let limit = buffer(&k("buffer"), &d.buffer)?;
    let queue = match &d.queue {
        None | Some(RawQueue::Droptail {}) => QueueKind::DropTail,
        Some(RawQueue::Red {
            min_th,
            max_th,
            max_p,
            weight,
            unit,
            ecn,
        }) => {
            let bytes = match unit.as_deref() {
                None | Some("packets") => false,
                Some("bytes") => true,
                Some(u) => {
                    return Err(ConfigError::new(
                        k("queue.unit"),
                        format!("expected \"packets\" or \"bytes\", got {u:?}"),
                    ))
                }
            };
            if !(*min_th >= 0.0 && min_th < max_th) {
                return Err(ConfigError::new(k("queue"), format!("RED thresholds out of order: need 0 <= min_th < max_th, got min_th={min_th} max_th={max_th}")));
            }
            let max_p = prob(&k("queue.max_p"), max_p.unwrap_or(0.1))?;
            let weight = weight.unwrap_or(0.002);
            if !(weight > 0.0 && weight <= 1.0) {
                return Err(ConfigError::new(
                    k("queue.weight"),
                    format!("must be in (0, 1], got {weight}"),
                ));
            }
            QueueKind::Red {
                min_th: *min_th,
                max_th: *max_th,
                max_p,
                weight,
                bytes,
                ecn: ecn.unwrap_or(d.ecn),
            }
        }
        Some(RawQueue::Codel {
            target_ns,
            interval_ns,
            ecn,
        }) => QueueKind::Codel(codel(
            &k("queue"),
            *target_ns,
            *interval_ns,
            ecn.unwrap_or(d.ecn),
        )?),
        Some(RawQueue::FqCodel {
            target_ns,
            interval_ns,
            flows,
            quantum,
            ecn,
        }) => QueueKind::FqCodel {
            flows: flows
                .map(|v| positive_int(&k("queue.flows"), v))
                .transpose()?
                .unwrap_or(1024)
                .min(65536) as u32,
            quantum: quantum
                .map(|v| positive_int(&k("queue.quantum"), v))
                .transpose()?
                .unwrap_or(1514) as u32,
            codel: codel(&k("queue"), *target_ns, *interval_ns, ecn.unwrap_or(d.ecn))?,
        },
        Some(RawQueue::Step { k_packets, k_bytes }) => match (k_packets, k_bytes) {
            (Some(p), None) => {
                QueueKind::Step(StepK::Packets(nonneg_int(&k("queue.k_packets"), *p)?))
            }
            (None, Some(b)) => QueueKind::Step(StepK::Bytes(nonneg_int(&k("queue.k_bytes"), *b)?)),
            _ => {
                return Err(ConfigError::new(
                    k("queue"),
                    "step needs exactly one of k_packets and k_bytes",
                ))
            }
        },
        Some(RawQueue::Classes { classes, default }) => {
            if classes.is_empty() {
                return Err(ConfigError::new(
                    k("queue.classes"),
                    "need at least one class",
                ));
            }
            let mut v = Vec::new();
            for (i, c) in classes.iter().enumerate() {
                let ck = k(&format!("queue.classes[{i}]"));
                let ips = c
                    .ips
                    .iter()
                    .map(|s| ipv4(&format!("{ck}.ips"), s))
                    .collect::<Result<Vec<_>, _>>()?;
                let lim = if c.buffer.is_some() {
                    Some(buffer(&format!("{ck}.buffer"), &c.buffer)?)
                } else {
                    None
                };
                v.push((
                    ClassMatch {
                        ips,
                        ports: c.ports.clone(),
                        protocols: c.protocols.clone(),
                    },
                    lim,
                ));
            }
            let default = match default {
                None => None,
                Some(d) if *d >= 0.0 && (*d as usize) < v.len() && d.fract() == 0.0 => {
                    Some(*d as usize)
                }
                Some(d) => {
                    return Err(ConfigError::new(
                        k("queue.default"),
                        format!("must be a class index 0..{}, got {d}", v.len() - 1),
                    ))
                }
            };
            QueueKind::Classes {
                classes: v,
                default,
            }
        }
    };
    Ok(DirParams {
        rate: rate_spec,
        delay_ns,
        jitter,
        loss: loss_m,
        limit,
        queue,
        ecn: d.ecn,
    })
}

/// Parse and validate a config given as text (`base_dir` resolves relative trace paths).
pub fn parse(text: &str, base_dir: &std::path::Path) -> Result<Config, ConfigError> {
    let raw: RawConfig =
        serde_json::from_str(text).map_err(|e| ConfigError::new("json", e.to_string()))?;
    if raw.ifaces.west.is_empty()
        || raw.ifaces.east.is_empty()
        || raw.ifaces.west == raw.ifaces.east
    {
        return Err(ConfigError::new(
            "ifaces",
            "need two different interface names",
        ));
    }
    if raw.out_dir.is_empty() {
        return Err(ConfigError::new("out_dir", "empty path"));
    }
    let stats_interval_ns = opt_int(
        "stats_interval_ns",
        raw.stats_interval_ns,
        positive_int,
        10_000_000,
    )?;
    let late_tolerance_ns = opt_int(
        "late_tolerance_ns",
        raw.late_tolerance_ns,
        nonneg_int,
        100_000,
    )?;
    let spin_ns = opt_int("spin_ns", raw.spin_ns, nonneg_int, 60_000)?;
    let threads = opt_int("threads", raw.threads, positive_int, 1)?.min(2) as usize;
    let io = match raw.io.as_deref() {
        None | Some("packet") => Io::Packet,
        Some("xdp") => Io::Xdp,
        Some("auto") => Io::Auto,
        Some(o) => {
            return Err(ConfigError::new(
                "io",
                format!("unknown I/O {o:?}; accepted: \"packet\", \"xdp\", \"auto\""),
            ))
        }
    };
    if io == Io::Xdp && threads != 1 {
        return Err(ConfigError::new(
            "io",
            "\"xdp\" runs both directions in one thread: it needs threads = 1",
        ));
    }
    let rt_priority = opt_int("rt_priority", raw.rt_priority, nonneg_int, 10)?;
    if rt_priority > 99 {
        return Err(ConfigError::new(
            "rt_priority",
            format!("must be 0..99, got {rt_priority}"),
        ));
    }
    let mut cpus = Vec::new();
    for (i, &c) in raw.cpus.iter().flatten().enumerate() {
        let c = nonneg_int(&format!("cpus[{i}]"), c)?;
        if c >= libc::CPU_SETSIZE as u64 {
            return Err(ConfigError::new(
                format!("cpus[{i}]"),
                format!("CPU {c} is beyond the largest CPU number this build supports"),
            ));
        }
        cpus.push(c as usize);
    }
    let rt_busy_ns = opt_int("rt_busy_ns", raw.rt_busy_ns, positive_int, 1_000_000)?;
    let rt_nap_ns = opt_int("rt_nap_ns", raw.rt_nap_ns, nonneg_int, 50_000)?;
    let rt_yield = match raw.rt_yield.as_deref() {
        None | Some("fair") => RtYield::Fair,
        Some("sleep") => RtYield::Sleep,
        Some(o) => {
            return Err(ConfigError::new(
                "rt_yield",
                format!("unknown way to yield {o:?}; accepted: \"fair\", \"sleep\""),
            ))
        }
    };
    let seed = opt_int("seed", raw.seed, nonneg_int, 1)?;
    let t0_ns = raw.t0_ns.map(|v| nonneg_int("t0_ns", v)).transpose()?;
    let w2e = direction("w2e", &raw.w2e, base_dir)?;
    let e2w = direction("e2w", &raw.e2w, base_dir)?;
    let mut hosts = Vec::new();
    for (i, h) in raw.hosts.iter().enumerate() {
        let hk = format!("hosts[{i}]");
        let delay_ns = match h.delay_ns {
            Some(v) if v < 0.0 || !v.is_finite() => {
                return Err(ConfigError::new(
                    format!("{hk}.delay_ns"),
                    format!("negative delay: {v} ns"),
                ))
            }
            Some(v) => v.round() as u64,
            None => 0,
        };
        hosts.push(HostRule {
            ip: ipv4(&format!("{hk}.ip"), &h.ip)?,
            delay_ns,
            loss: h
                .loss
                .as_ref()
                .map(|l| loss(&format!("{hk}.loss"), l))
                .transpose()?,
        });
    }
    let min_latency = [&w2e, &e2w]
        .iter()
        .map(|d| {
            let j = match d.jitter {
                Some((JitterModel::Uniform { ns }, _)) => ns as u64,
                Some((JitterModel::Normal { sd_ns }, _)) => (4.0 * sd_ns) as u64,
                _ => 0,
            };
            d.delay_ns.saturating_sub(j)
        })
        .min()
        .unwrap_or(0);
    let rx_poll_ns = match raw.rx_poll_ns {
        Some(v) => nonneg_int("rx_poll_ns", v)?,
        None => {
            let p = (min_latency / 4).min(1_000_000);
            if p < 200_000 {
                0
            } else {
                p
            }
        }
    };
    if rx_poll_ns > 0 && rx_poll_ns * 2 > min_latency {
        return Err(ConfigError::new("rx_poll_ns", format!("{rx_poll_ns} ns is more than half the smallest one-way delay ({min_latency} ns): packets could be read after they are due")));
    }
    Ok(Config {
        west: raw.ifaces.west,
        east: raw.ifaces.east,
        out_dir: raw.out_dir,
        late_tolerance_ns,
        spin_ns,
        threads,
        rx_timestamps: raw.rx_timestamps.unwrap_or(true),
        rx_ring: raw.rx_ring.unwrap_or(true),
        rx_poll_ns,
        io,
        rt_priority: rt_priority as i32,
        cpus,
        rt_busy_ns,
        rt_nap_ns,
        rt_yield,
        link: LinkParams {
            stats_interval_ns,
            event_log: raw.event_log,
            seed,
            t0_ns,
            dirs: [w2e, e2w],
            hosts,
            delay_line_bytes: None,
        },
    })
}

/// Read and validate the config file at `path`.
pub fn load(path: &std::path::Path) -> Result<Config, ConfigError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| ConfigError::new("file", e.to_string()))?;
    parse(&text, path.parent().unwrap_or(std::path::Path::new(".")))
}
