//! The JSON configuration of `ccarena-link` (contracts §3) and its validation.
//!
//! Contract: `load(path)` either returns a fully validated `Config` or a `ConfigError`
//! naming the key and the cause; nothing starts before that. Numbers may be written as
//! JSON integers or floats. Unknown keys are refused at every level (typos fail loudly);
//! the orchestrator's provenance keys (`rps_cpus`, `handoff_fifo`) are known and unused.
//!
//! Here: the top level (`Config`, I/O and scheduling choices, per-host rules); `raw` the
//! serde shapes, `direction` one direction's block, `values` the checks of single values.

mod direction;
mod raw;
mod values;

use crate::params::{HostRule, LinkParams};
use direction::{direction, loss};
use raw::RawConfig;
use values::{ipv4, nonneg_int, opt_int, positive_int};

#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub object: String,
    pub cause: String,
}

impl ConfigError {
    pub(crate) fn new(object: impl Into<String>, cause: impl Into<String>) -> ConfigError {
        ConfigError {
            object: object.into(),
            cause: cause.into(),
        }
    }
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
            // a reordered packet is sent without its delay: no delay bounds the reading
            let j = d.jitter.map_or(0, |j| j.model.min_ns());
            if d.reorder.is_some() { 0 } else { d.delay_ns.saturating_sub(j) }
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

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = r#"{"rate_bps": null, "delay_ns": 0, "buffer": {"packets": 10}}"#;

    fn with(top: &str, dir: &str) -> Result<Config, ConfigError> {
        let text = format!(
            r#"{{"ifaces": {{"west": "lw", "east": "le"}}, "out_dir": "/tmp/x", {top}
                "w2e": {dir}, "e2w": {DIR}}}"#
        );
        parse(&text, std::path::Path::new("/"))
    }

    #[test]
    fn unknown_keys_are_refused_naming_the_key() {
        // a top-level key misspelt between the orchestrator and the link
        let e = with(r#""stats_interval": 5000000,"#, DIR).unwrap_err();
        assert_eq!(e.object, "json");
        assert!(e.cause.contains("unknown field `stats_interval`"), "{}", e.cause);
        assert!(e.cause.contains("`stats_interval_ns`"), "names what is accepted: {}", e.cause);
        // inside a direction, a queue, a loss model, a host rule
        for (top, dir, key) in [
            ("", r#"{"delay_ns": 0, "buffer": {"packets": 10}, "delay": 5}"#, "delay"),
            ("", r#"{"buffer": {"packets": 10}, "queue": {"kind": "codel", "target": 5}}"#, "target"),
            ("", r#"{"buffer": {"packets": 10}, "loss": {"kind": "bernoulli", "p": 0.1, "q": 1}}"#, "q"),
            (r#""hosts": [{"ip": "10.1.1.2", "delay": 5}],"#, DIR, "delay"),
        ] {
            let e = with(top, dir).unwrap_err();
            assert!(e.cause.contains(&format!("unknown field `{key}`")), "{}", e.cause);
        }
    }

    #[test]
    fn the_orchestrators_provenance_keys_are_accepted_and_unused() {
        let c = with(r#""rps_cpus": [1, 2], "handoff_fifo": 10000,"#, DIR).unwrap();
        assert_eq!(c, with(r#""rps_cpus": [], "handoff_fifo": null,"#, DIR).unwrap());
    }
}
