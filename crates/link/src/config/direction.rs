//! Contract: one direction's block of the link config (`w2e`, `e2w`, contracts §3) →
//! `DirParams`: rate (constant, schedule or mahimahi trace), delay, jitter, loss,
//! duplication, corruption, reordering, buffer and queue discipline. Every error names its key under the direction, e.g.
//! `w2e.queue.max_p`; trace files are read relative to the config's directory.

use std::path::Path;

use super::raw::{RawBuffer, RawChance, RawDir, RawJitter, RawLoss, RawQueue, RawReorder};
use super::values::{ipv4, nonneg_int, positive_int, prob, rate, schedule_rate};
use super::ConfigError;
use crate::impair::{JitterModel, JitterSpec, LossModel, ReorderSpec};
use crate::params::{ChanceSpec, DirParams, QueueKind, RateSpec};
use crate::queue::classes::ClassMatch;
use crate::queue::codel::CodelParams;
use crate::queue::step::StepK;
use crate::queue::Limit;
use crate::transmitter::parse_trace;

/// The direction `name` ("w2e" or "e2w").
pub(super) fn direction(name: &str, d: &RawDir, base_dir: &Path) -> Result<DirParams, ConfigError> {
    let k = |s: &str| format!("{name}.{s}");
    let rate = rate_spec(name, d, base_dir)?;
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
    let reorder = d.reorder.as_ref().map(|r| reorder(&k("reorder"), r)).transpose()?;
    if reorder.is_some() && delay_ns == 0 {
        return Err(ConfigError::new(
            k("reorder"),
            "reordering sends packets at once, ahead of delayed ones: it needs delay_ns > 0",
        ));
    }
    Ok(DirParams {
        rate,
        delay_ns,
        jitter: jitter(&k("jitter"), d.jitter.as_ref())?,
        loss: d.loss.as_ref().map(|l| loss(&k("loss"), l)).transpose()?,
        duplicate: d.duplicate.as_ref().map(|c| chance(&k("duplicate"), c)).transpose()?,
        corrupt: d.corrupt.as_ref().map(|c| chance(&k("corrupt"), c)).transpose()?,
        reorder,
        limit: buffer(&k("buffer"), &d.buffer)?,
        queue: queue(&k("queue"), d.queue.as_ref(), d.ecn)?,
        ecn: d.ecn,
    })
}

/// `rate_bps` alone, or with `rate_schedule` (steps from `rate_bps`), or `trace_file`.
fn rate_spec(name: &str, d: &RawDir, base_dir: &Path) -> Result<RateSpec, ConfigError> {
    let k = |s: &str| format!("{name}.{s}");
    let initial = d.rate_bps.map(|v| rate(&k("rate_bps"), v)).transpose()?;
    if d.rate_schedule.is_some() && d.trace_file.is_some() {
        return Err(ConfigError::new(
            name,
            "give at most one of rate_schedule and trace_file",
        ));
    }
    if let Some(steps) = &d.rate_schedule {
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
                .map(|x| schedule_rate(&k(&format!("rate_schedule[{i}].rate_bps")), x))
                .transpose()?;
            v.push((t, r));
        }
        if v.is_empty() {
            return Err(ConfigError::new(k("rate_schedule"), "empty schedule"));
        }
        return Ok(RateSpec::Schedule { initial, steps: v });
    }
    if let Some(f) = &d.trace_file {
        let path = base_dir.join(f);
        let object = format!("{} {}", k("trace_file"), path.display());
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ConfigError::new(object.clone(), e.to_string()))?;
        let opps = parse_trace(&text).map_err(|e| ConfigError::new(object, e))?;
        return Ok(RateSpec::Trace {
            opportunities_ms: opps,
        });
    }
    Ok(match initial {
        Some(r) => RateSpec::Constant(r),
        None => RateSpec::Unlimited,
    })
}

/// `key` is the jitter's key ("w2e.jitter").
fn jitter(key: &str, j: Option<&RawJitter>) -> Result<Option<JitterSpec>, ConfigError> {
    let k = |s: &str| format!("{key}.{s}");
    let size = |name: &str, v: f64| nonneg_int(&k(name), v).map(|x| x as f64);
    let Some(j) = j else { return Ok(None) };
    let (model, correlation, reorder) = match *j {
        RawJitter::Uniform { ns, correlation, reorder } => {
            (JitterModel::Uniform { ns: size("ns", ns)? }, correlation, reorder)
        }
        RawJitter::Normal { sd_ns, correlation, reorder } => {
            (JitterModel::Normal { sd_ns: size("sd_ns", sd_ns)? }, correlation, reorder)
        }
        RawJitter::Pareto { ns, correlation, reorder } => {
            (JitterModel::Pareto { ns: size("ns", ns)? }, correlation, reorder)
        }
        RawJitter::Paretonormal { ns, correlation, reorder } => {
            (JitterModel::ParetoNormal { ns: size("ns", ns)? }, correlation, reorder)
        }
        RawJitter::Exponential { mean_ns, correlation, reorder } => {
            (JitterModel::Exponential { mean_ns: size("mean_ns", mean_ns)? }, correlation, reorder)
        }
    };
    Ok(Some(JitterSpec {
        model,
        correlation: prob(&k("correlation"), correlation.unwrap_or(0.0))?,
        reorder,
    }))
}

/// duplicate / corrupt at `key`.
fn chance(key: &str, c: &RawChance) -> Result<ChanceSpec, ConfigError> {
    Ok(ChanceSpec {
        p: prob(&format!("{key}.p"), c.p)?,
        correlation: prob(&format!("{key}.correlation"), c.correlation.unwrap_or(0.0))?,
    })
}

/// netem's reordering at `key`: probability, correlation, gap (default 1).
fn reorder(key: &str, r: &RawReorder) -> Result<ReorderSpec, ConfigError> {
    let gap = r.gap.map(|g| positive_int(&format!("{key}.gap"), g)).transpose()?.unwrap_or(1);
    if gap > u32::MAX as u64 {
        return Err(ConfigError::new(format!("{key}.gap"), format!("too large: {gap}")));
    }
    Ok(ReorderSpec {
        p: prob(&format!("{key}.p"), r.p)?,
        correlation: prob(&format!("{key}.correlation"), r.correlation.unwrap_or(0.0))?,
        gap: gap as u32,
    })
}

/// `key` is the queue's key ("w2e.queue"); an AQM marks (ECN) by its own `ecn`, else by
/// the direction's.
fn queue(key: &str, q: Option<&RawQueue>, dir_ecn: bool) -> Result<QueueKind, ConfigError> {
    let k = |s: &str| format!("{key}.{s}");
    Ok(match q {
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
                        k("unit"),
                        format!("expected \"packets\" or \"bytes\", got {u:?}"),
                    ))
                }
            };
            if !(*min_th >= 0.0 && min_th < max_th) {
                return Err(ConfigError::new(key, format!("RED thresholds out of order: need 0 <= min_th < max_th, got min_th={min_th} max_th={max_th}")));
            }
            let max_p = prob(&k("max_p"), max_p.unwrap_or(0.1))?;
            let weight = weight.unwrap_or(0.002);
            if !(weight > 0.0 && weight <= 1.0) {
                return Err(ConfigError::new(
                    k("weight"),
                    format!("must be in (0, 1], got {weight}"),
                ));
            }
            QueueKind::Red {
                min_th: *min_th,
                max_th: *max_th,
                max_p,
                weight,
                bytes,
                ecn: ecn.unwrap_or(dir_ecn),
            }
        }
        Some(RawQueue::Codel {
            target_ns,
            interval_ns,
            ecn,
        }) => QueueKind::Codel(codel(key, *target_ns, *interval_ns, ecn.unwrap_or(dir_ecn))?),
        Some(RawQueue::FqCodel {
            target_ns,
            interval_ns,
            flows,
            quantum,
            ecn,
        }) => QueueKind::FqCodel {
            flows: flows
                .map(|v| positive_int(&k("flows"), v))
                .transpose()?
                .unwrap_or(1024)
                .min(65536) as u32,
            quantum: quantum
                .map(|v| positive_int(&k("quantum"), v))
                .transpose()?
                .unwrap_or(1514) as u32,
            codel: codel(key, *target_ns, *interval_ns, ecn.unwrap_or(dir_ecn))?,
        },
        Some(RawQueue::Step { k_packets, k_bytes }) => match (k_packets, k_bytes) {
            (Some(p), None) => QueueKind::Step(StepK::Packets(nonneg_int(&k("k_packets"), *p)?)),
            (None, Some(b)) => QueueKind::Step(StepK::Bytes(nonneg_int(&k("k_bytes"), *b)?)),
            _ => {
                return Err(ConfigError::new(
                    key,
                    "step needs exactly one of k_packets and k_bytes",
                ))
            }
        },
        Some(RawQueue::Classes { classes, default }) => classes_queue(key, classes, *default)?,
    })
}

fn classes_queue(
    key: &str,
    classes: &[super::raw::RawClass],
    default: Option<f64>,
) -> Result<QueueKind, ConfigError> {
    let k = |s: &str| format!("{key}.{s}");
    if classes.is_empty() {
        return Err(ConfigError::new(k("classes"), "need at least one class"));
    }
    let mut v = Vec::new();
    for (i, c) in classes.iter().enumerate() {
        let ck = k(&format!("classes[{i}]"));
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
        Some(d) if d >= 0.0 && (d as usize) < v.len() && d.fract() == 0.0 => Some(d as usize),
        Some(d) => {
            return Err(ConfigError::new(
                k("default"),
                format!("must be a class index 0..{}, got {d}", v.len() - 1),
            ))
        }
    };
    Ok(QueueKind::Classes {
        classes: v,
        default,
    })
}

/// A loss model at `key` (a direction's `loss` or a host's). The 4-state model's
/// omitted probabilities take tc's defaults (p31 = 1 − p13, p32 = 0, p23 = 1, p14 = 0);
/// the probabilities leaving one state may not add up to more than 1.
pub(super) fn loss(key: &str, l: &RawLoss) -> Result<LossModel, ConfigError> {
    let pk = |s: &str, v: f64| prob(&format!("{key}.{s}"), v);
    Ok(match *l {
        RawLoss::Bernoulli { p } => LossModel::Bernoulli { p: pk("p", p)? },
        RawLoss::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => LossModel::GilbertElliott {
            p: pk("p", p)?,
            r: pk("r", r)?,
            loss_good: pk("loss_good", loss_good.unwrap_or(0.0))?,
            loss_bad: pk("loss_bad", loss_bad.unwrap_or(1.0))?,
        },
        RawLoss::FourState {
            p13,
            p31,
            p32,
            p23,
            p14,
        } => {
            let p13 = pk("p13", p13)?;
            let m = LossModel::FourState {
                p13,
                p31: pk("p31", p31.unwrap_or(1.0 - p13))?,
                p32: pk("p32", p32.unwrap_or(0.0))?,
                p23: pk("p23", p23.unwrap_or(1.0))?,
                p14: pk("p14", p14.unwrap_or(0.0))?,
            };
            let LossModel::FourState { p31, p32, p14, .. } = m else { unreachable!() };
            for (what, sum) in [("p13 + p14", p13 + p14), ("p31 + p32", p31 + p32)] {
                if sum > 1.0 + 1e-12 {
                    return Err(ConfigError::new(
                        key,
                        format!("{what} = {sum} leaves a state with more than probability 1"),
                    ));
                }
            }
            m
        }
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
