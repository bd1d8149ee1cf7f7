//! Tests of the JSON configuration: the contract's example, the orchestrator's shape,
//! and one-line errors naming the key.

use ccarena_link::config::{parse, ConfigError};
use ccarena_link::params::{QueueKind, RateSpec};
use ccarena_link::queue::Limit;

fn base(dir: &str) -> String {
    format!(
        r#"{{"ifaces": {{"west": "lw", "east": "le"}}, "out_dir": "/tmp/x",
           "w2e": {dir}, "e2w": {{"rate_bps": null, "delay_ns": 0, "buffer": {{"packets": 10}}}}}}"#
    )
}

/// A config with extra top-level keys `top` (each followed by a comma).
fn with_top(top: &str) -> Result<ccarena_link::config::Config, ConfigError> {
    let dir = r#"{"rate_bps": null, "delay_ns": 0, "buffer": {"packets": 10}}"#;
    let text = format!(
        r#"{{"ifaces": {{"west": "lw", "east": "le"}}, "out_dir": "/tmp/x", {top}
           "w2e": {dir}, "e2w": {dir}}}"#
    );
    parse(&text, std::path::Path::new("/"))
}

fn err(dir: &str) -> ConfigError {
    parse(&base(dir), std::path::Path::new("/")).unwrap_err()
}

#[test]
fn contract_example_parses() {
    let c = parse(
        &base(r#"{"rate_bps": 10000000, "rate_schedule": null, "trace_file": null, "delay_ns": 10000000,
             "jitter": null, "loss": {"kind": "bernoulli", "p": 0.01}, "buffer": {"packets": 100},
             "queue": {"kind": "droptail"}, "ecn": false}"#),
        std::path::Path::new("/"),
    )
    .unwrap();
    assert_eq!(c.link.dirs[0].rate, RateSpec::Constant(10_000_000));
    assert_eq!(c.link.dirs[0].delay_ns, 10_000_000);
    assert_eq!(c.link.dirs[1].rate, RateSpec::Unlimited);
}

#[test]
fn bad_configs_name_key_and_cause() {
    let e = err(r#"{"delay_ns": -5, "buffer": {"packets": 10}}"#);
    assert_eq!(e.object, "w2e.delay_ns");
    assert!(e.cause.contains("negative"));
    assert_eq!(
        err(r#"{"rate_bps": 0, "buffer": {"packets": 10}}"#).object,
        "w2e.rate_bps"
    );
    assert!(err(r#"{"buffer": {}}"#).cause.contains("empty buffer"));
    assert_eq!(
        err(r#"{"buffer": {"packets": 0}}"#).object,
        "w2e.buffer.packets"
    );
    let e =
        err(r#"{"buffer": {"packets": 10}, "queue": {"kind": "red", "min_th": 20, "max_th": 5}}"#);
    assert!(e.cause.contains("out of order"));
    let e = err(r#"{"buffer": {"packets": 10}, "trace_file": "/nonexistent/x.trace"}"#);
    assert!(e.object.starts_with("w2e.trace_file"));
    assert_eq!(
        err(r#"{"buffer": {"packets": 10}, "queue": {"kind": "redd"}}"#).object,
        "json"
    );
    assert_eq!(
        err(r#"{"buffer": {"packets": 10}, "delay": 5}"#).object,
        "json"
    );
}

#[test]
fn orchestrator_style_config_parses() {
    // The shape ccarena.testbed.user_link.make_config writes (nulls included).
    let text = r#"{"ifaces": {"west": "lw", "east": "le"}, "out_dir": "/tmp/o",
        "stats_interval_ns": 10000000, "event_log": true, "seed": 7, "t0_ns": null,
        "rt_priority": 0, "late_tolerance_ns": 400000, "cpus": [1], "rt_busy_ns": 400000, "rt_nap_ns": 20000,
        "w2e": {"rate_bps": 10000000, "rate_schedule": null, "trace_file": null,
                "delay_ns": 10000000, "jitter": null, "loss": null,
                "buffer": {"packets": 100}, "ecn": false,
                "queue": {"kind": "classes", "default": 1, "classes": [
                    {"ips": ["10.1.1.2"], "ports": [5001], "protocols": [6, 1],
                     "buffer": {"packets": 20}},
                    {"ips": [], "ports": []}]}},
        "e2w": {"rate_bps": 10000000, "rate_schedule": null, "trace_file": null,
                "delay_ns": 10000000, "jitter": {"kind": "uniform", "ns": 1000},
                "loss": {"kind": "bernoulli", "p": 0.01}, "buffer": {"bytes": 150000},
                "queue": {"kind": "red", "unit": "packets", "min_th": 10, "max_th": 30,
                          "max_p": 0.1, "weight": 0.002}, "ecn": true},
        "hosts": [{"ip": "10.1.2.2", "delay_ns": 200000000, "loss": null}]}"#;
    let c = parse(text, std::path::Path::new("/")).unwrap();
    assert_eq!(c.rt_priority, 0);
    assert_eq!(c.cpus, vec![1]);
    assert_eq!((c.rt_busy_ns, c.rt_nap_ns), (400_000, 20_000));
    assert_eq!(c.link.t0_ns, None);
    let bad = text.replace(r#""cpus": [1]"#, r#""cpus": [-1]"#);
    assert_eq!(
        parse(&bad, std::path::Path::new("/")).unwrap_err().object,
        "cpus[0]"
    );
    match &c.link.dirs[0].queue {
        QueueKind::Classes { classes, default } => {
            assert_eq!(*default, Some(1));
            assert_eq!(classes[0].0.protocols, vec![6, 1]);
            assert_eq!(classes[0].1, Some(Limit::packets(20)));
        }
        q => panic!("{q:?}"),
    }
    assert!(matches!(
        c.link.dirs[1].queue,
        QueueKind::Red { ecn: true, .. }
    ));
    let bad = text.replace(r#""default": 1"#, r#""default": 2"#);
    assert_eq!(
        parse(&bad, std::path::Path::new("/")).unwrap_err().object,
        "w2e.queue.default"
    );
}

#[test]
fn io_is_packet_unless_asked_and_xdp_needs_one_thread() {
    use ccarena_link::config::Io;
    assert_eq!(with_top("").unwrap().io, Io::Packet);
    assert_eq!(with_top(r#""io": "xdp","#).unwrap().io, Io::Xdp);
    assert_eq!(with_top(r#""io": "auto", "threads": 2,"#).unwrap().io, Io::Auto);
    let e = with_top(r#""io": "dpdk","#).unwrap_err();
    assert_eq!(e.object, "io");
    assert!(e.cause.contains("\"packet\", \"xdp\", \"auto\""), "{}", e.cause);
    let e = with_top(r#""io": "xdp", "threads": 2,"#).unwrap_err();
    assert_eq!(e.object, "io");
    assert!(e.cause.contains("threads = 1"), "{}", e.cause);
}

#[test]
fn rt_yield_is_fair_unless_asked_and_unknown_ways_are_rejected() {
    use ccarena_link::config::RtYield;
    assert_eq!(with_top("").unwrap().rt_yield, RtYield::Fair);
    assert_eq!(with_top(r#""rt_yield": "sleep","#).unwrap().rt_yield, RtYield::Sleep);
    let e = with_top(r#""rt_yield": "spin","#).unwrap_err();
    assert_eq!(e.object, "rt_yield");
    assert!(e.cause.contains("\"fair\", \"sleep\""), "{}", e.cause);
}

#[test]
fn a_schedule_step_of_rate_0_is_an_outage_and_a_negative_one_is_refused() {
    let c = parse(
        &base(r#"{"rate_bps": 10000000, "buffer": {"packets": 10}, "rate_schedule":
                 [{"t_ns": 1000000000, "rate_bps": 0}, {"t_ns": 2000000000, "rate_bps": 10000000}]}"#),
        std::path::Path::new("/"),
    )
    .unwrap();
    assert_eq!(
        c.link.dirs[0].rate,
        RateSpec::Schedule {
            initial: Some(10_000_000),
            steps: vec![(1_000_000_000, Some(0)), (2_000_000_000, Some(10_000_000))]
        }
    );
    let e = err(r#"{"rate_bps": 10000000, "buffer": {"packets": 10}, "rate_schedule":
                   [{"t_ns": 0, "rate_bps": -1}]}"#);
    assert_eq!(e.object, "w2e.rate_schedule[0].rate_bps");
    assert!(e.cause.contains("0 (an outage)"), "{}", e.cause);
    // the rate itself stays at least 1 bit/s: an outage is a step of the schedule
    assert_eq!(
        err(r#"{"rate_bps": 0, "buffer": {"packets": 10}}"#).object,
        "w2e.rate_bps"
    );
}

#[test]
fn netems_impairments_parse_with_tcs_defaults() {
    use ccarena_link::impair::{JitterModel, LossModel, ReorderSpec};
    use ccarena_link::params::ChanceSpec;
    let c = parse(
        &base(r#"{"delay_ns": 20000000, "buffer": {"packets": 10},
             "jitter": {"kind": "paretonormal", "ns": 2000000, "correlation": 0.25},
             "loss": {"kind": "four_state", "p13": 0.05},
             "duplicate": {"p": 0.01}, "corrupt": {"p": 0.001, "correlation": 0.5},
             "reorder": {"p": 0.1, "gap": 5}}"#),
        std::path::Path::new("/"),
    )
    .unwrap();
    let d = &c.link.dirs[0];
    let j = d.jitter.unwrap();
    assert_eq!((j.model, j.correlation, j.reorder), (JitterModel::ParetoNormal { ns: 2e6 }, 0.25, false));
    // `loss state P` alone: p31 = 1 − P, p32 = 0, p23 = 1, p14 = 0 (tc's defaults)
    assert_eq!(
        d.loss,
        Some(LossModel::FourState { p13: 0.05, p31: 0.95, p32: 0.0, p23: 1.0, p14: 0.0 })
    );
    assert_eq!(d.duplicate, Some(ChanceSpec { p: 0.01, correlation: 0.0 }));
    assert_eq!(d.corrupt, Some(ChanceSpec { p: 0.001, correlation: 0.5 }));
    assert_eq!(d.reorder, Some(ReorderSpec { p: 0.1, correlation: 0.0, gap: 5 }));
    // the receive rings are read every quarter of the smallest delay, but a reordered
    // packet is due as it arrives: then on every arrival
    let both = |extra: &str| {
        let d = format!(r#"{{"delay_ns": 20000000, "buffer": {{"packets": 10}}{extra}}}"#);
        let text = format!(
            r#"{{"ifaces": {{"west": "lw", "east": "le"}}, "out_dir": "/x", "w2e": {d}, "e2w": {d}}}"#
        );
        parse(&text, std::path::Path::new("/")).unwrap().rx_poll_ns
    };
    assert_eq!(both(""), 1_000_000);
    assert_eq!(both(r#", "jitter": {"kind": "pareto", "ns": 3000000}"#), 1_000_000);
    assert_eq!(both(r#", "jitter": {"kind": "normal", "sd_ns": 4000000}"#), 1_000_000);
    assert_eq!(both(r#", "jitter": {"kind": "normal", "sd_ns": 4900000}"#), 0);
    assert_eq!(both(r#", "reorder": {"p": 0.1}"#), 0);
}

#[test]
fn bad_impairments_name_key_and_cause() {
    let e = err(r#"{"delay_ns": 1000, "buffer": {"packets": 10}, "reorder": {"p": 1.5}}"#);
    assert_eq!(e.object, "w2e.reorder.p");
    let e = err(r#"{"buffer": {"packets": 10}, "reorder": {"p": 0.5}}"#);
    assert_eq!(e.object, "w2e.reorder");
    assert!(e.cause.contains("needs delay_ns > 0"), "{}", e.cause);
    let e = err(r#"{"delay_ns": 1000, "buffer": {"packets": 10}, "reorder": {"p": 0.5, "gap": 0}}"#);
    assert_eq!(e.object, "w2e.reorder.gap");
    let e = err(r#"{"buffer": {"packets": 10}, "loss": {"kind": "four_state", "p13": 0.6, "p14": 0.6}}"#);
    assert_eq!(e.object, "w2e.loss");
    assert!(e.cause.contains("p13 + p14"), "{}", e.cause);
    let e = err(r#"{"buffer": {"packets": 10}, "jitter": {"kind": "normal", "sd_ns": 5, "correlation": -0.1}}"#);
    assert_eq!(e.object, "w2e.jitter.correlation");
    let e = err(r#"{"buffer": {"packets": 10}, "jitter": {"kind": "pareto", "sd_ns": 5}}"#);
    assert!(e.cause.contains("unknown field `sd_ns`"), "{}", e.cause);
    let e = err(r#"{"buffer": {"packets": 10}, "duplicate": {"p": 0.1, "gap": 2}}"#);
    assert!(e.cause.contains("unknown field `gap`"), "{}", e.cause);
}
