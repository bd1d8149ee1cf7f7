//! Contract: turn the host config JSON of docs/dev/contracts.md §2 into a validated
//! `Config`, or say precisely which key is wrong (`ConfigError { key, reason }`).
//! Pure: no I/O besides the caller handing in the text. Unknown keys are refused (a key
//! misspelt between the orchestrator and the engine is an error naming it, not a
//! silently ignored setting); missing or ill-typed required keys are errors. A flow
//! accepts every flow key whatever its kind (the orchestrator writes `seed`, `bytes` and
//! `conns` for all kinds); keys that do not apply to a kind are ignored.
//! Every flow kind gets its own typed variant, so the engine never sees a half-filled
//! flow.

use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

pub const DEFAULT_SAMPLE_INTERVAL_NS: u64 = 10_000_000;
/// udp_probe: datagram payload bounds (the 24-byte probe header; 1500-byte MTU less
/// IPv4 and UDP headers) and the shortest interval.
pub const MIN_UDP_SIZE: u32 = 24;
pub const MAX_UDP_SIZE: u32 = 1472;
pub const DEFAULT_UDP_SIZE: u32 = 64;
pub const MIN_UDP_INTERVAL_NS: u64 = 10_000;

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub key: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

fn err(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError { key: key.into(), reason: reason.into() }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub host: String,
    pub out_dir: PathBuf,
    pub sample_interval_ns: u64,
    pub end_ns: Option<u64>,
    pub listen: Vec<Listen>,
    pub flows: Vec<Flow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenProto {
    /// TCP: serves every TCP flow kind (the client's first bytes say which).
    Tcp,
    /// UDP: sends every datagram back to its sender (the peer of `udp_probe`).
    UdpEcho,
}

#[derive(Debug, Clone)]
pub struct Listen {
    pub addr: SocketAddr,
    pub cc: Option<String>,
    pub proto: ListenProto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapDist {
    Const,
    Uniform,
    Exp,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FlowKind {
    /// Each of `conns` connections sends `bytes` (or until stop when None).
    Bulk { bytes: Option<u64> },
    /// `bytes` striped over `conns` connections (or each until stop when None).
    Parallel { bytes: Option<u64> },
    /// `count` HTTP GETs of `size` bytes, one new connection each, `every_ns` apart
    /// (0 = the next starts when the previous ends). count None = until stop.
    Download { size: u64, count: Option<u64>, every_ns: u64 },
    /// Writes of `write_bytes` at gaps drawn from `dist` with mean `gap_ns`.
    Paced { write_bytes: u64, gap_ns: u64, dist: GapDist, seed: u64, bytes: Option<u64> },
    /// Request/response: `request_bytes` up, `response_bytes` down, `gap_ns` think time.
    Rr { request_bytes: u32, response_bytes: u32, count: Option<u64>, gap_ns: u64 },
    /// UDP RTT probe: a `size`-byte datagram every `interval_ns` to a `udp_echo` listener.
    UdpProbe { interval_ns: u64, size: u32 },
}

impl FlowKind {
    pub fn name(&self) -> &'static str {
        match self {
            FlowKind::Bulk { .. } => "bulk",
            FlowKind::Parallel { .. } => "parallel",
            FlowKind::Download { .. } => "download",
            FlowKind::Paced { .. } => "paced",
            FlowKind::Rr { .. } => "rr",
            FlowKind::UdpProbe { .. } => "udp_probe",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Flow {
    pub flow: u32,
    pub conns: u32,
    pub dst: SocketAddr,
    pub cc: Option<String>,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub nodelay: bool,
    pub kind: FlowKind,
}

// ---- raw serde shapes -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    host: String,
    out_dir: String,
    #[serde(default)]
    sample_interval_ns: Option<u64>,
    #[serde(default)]
    end_ns: Option<u64>,
    #[serde(default)]
    listen: Vec<serde_json::Value>,
    #[serde(default)]
    flows: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawListen {
    port: u16,
    #[serde(default)]
    cc: Option<String>,
    #[serde(default)]
    addr: Option<String>,
    #[serde(default)]
    proto: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    flow: u32,
    kind: String,
    #[serde(default)]
    conns: Option<u32>,
    dst: String,
    port: u16,
    #[serde(default)]
    cc: Option<String>,
    #[serde(default)]
    start_ns: Option<u64>,
    #[serde(default)]
    stop_ns: Option<u64>,
    #[serde(default)]
    nodelay: Option<bool>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    every_ns: Option<u64>,
    #[serde(default)]
    write_bytes: Option<u64>,
    #[serde(default)]
    gap_ns: Option<u64>,
    #[serde(default)]
    gap_dist: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    request_bytes: Option<u32>,
    #[serde(default)]
    response_bytes: Option<u32>,
    #[serde(default)]
    interval_ns: Option<u64>,
}

pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let raw: RawConfig = serde_json::from_str(text).map_err(|e| err("(document)", e.to_string()))?;
    if raw.host.is_empty() {
        return Err(err("host", "must not be empty"));
    }
    if !raw.out_dir.starts_with('/') {
        return Err(err("out_dir", format!("must be an absolute path, got {:?}", raw.out_dir)));
    }
    let sample_interval_ns = raw.sample_interval_ns.unwrap_or(DEFAULT_SAMPLE_INTERVAL_NS);
    if sample_interval_ns < 100_000 {
        return Err(err("sample_interval_ns", format!("must be >= 100000 (0.1 ms), got {sample_interval_ns}")));
    }
    let mut listen = Vec::new();
    for (i, v) in raw.listen.into_iter().enumerate() {
        let l: RawListen = serde_json::from_value(v).map_err(|e| err(format!("listen[{i}]"), e.to_string()))?;
        let ip: IpAddr = match &l.addr {
            None => IpAddr::from([0, 0, 0, 0]),
            Some(a) => a.parse().map_err(|_| err(format!("listen[{i}].addr"), format!("not an IP address: {a:?}")))?,
        };
        // port 0: the kernel picks a free one; the engine reports it (`LISTEN` line)
        validate_cc_name(&l.cc, &format!("listen[{i}].cc"))?;
        let proto = match l.proto.as_deref().unwrap_or("tcp") {
            "tcp" => ListenProto::Tcp,
            "udp_echo" => ListenProto::UdpEcho,
            other => return Err(err(format!("listen[{i}].proto"), format!("{other:?} is not one of tcp, udp_echo"))),
        };
        if proto == ListenProto::UdpEcho && l.cc.is_some() {
            return Err(err(format!("listen[{i}].cc"), "a udp_echo listener has no congestion control"));
        }
        listen.push(Listen { addr: SocketAddr::new(ip, l.port), cc: l.cc, proto });
    }
    let mut flows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, v) in raw.flows.into_iter().enumerate() {
        let f = parse_flow(i, v)?;
        if !seen.insert(f.flow) {
            return Err(err(format!("flows[{i}].flow"), format!("flow id {} used twice", f.flow)));
        }
        flows.push(f);
    }
    Ok(Config { host: raw.host, out_dir: PathBuf::from(raw.out_dir), sample_interval_ns, end_ns: raw.end_ns, listen, flows })
}

fn validate_cc_name(cc: &Option<String>, key: &str) -> Result<(), ConfigError> {
    if let Some(c) = cc {
        // TCP_CA_NAME_MAX is 16 including the NUL.
        if c.is_empty() || c.len() > 15 || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(err(key, format!("not a congestion control name: {c:?}")));
        }
    }
    Ok(())
}

fn parse_flow(i: usize, v: serde_json::Value) -> Result<Flow, ConfigError> {
    let key = |k: &str| format!("flows[{i}].{k}");
    let r: RawFlow = serde_json::from_value(v).map_err(|e| err(format!("flows[{i}]"), e.to_string()))?;
    let ip: IpAddr = r.dst.parse().map_err(|_| err(key("dst"), format!("not an IP address: {:?}", r.dst)))?;
    if r.port == 0 {
        return Err(err(key("port"), "must be 1..65535"));
    }
    validate_cc_name(&r.cc, &key("cc"))?;
    let conns = r.conns.unwrap_or(1);
    if conns == 0 {
        return Err(err(key("conns"), "must be >= 1"));
    }
    let start_ns = r.start_ns.unwrap_or(0);
    if let Some(stop) = r.stop_ns {
        if stop < start_ns {
            return Err(err(key("stop_ns"), format!("{stop} is before start_ns {start_ns}")));
        }
    }
    let need = |v: Option<u64>, k: &str| v.ok_or_else(|| err(key(k), format!("required for kind {}", r.kind)));
    let kind = match r.kind.as_str() {
        "bulk" => FlowKind::Bulk { bytes: r.bytes },
        "parallel" => FlowKind::Parallel { bytes: r.bytes },
        "download" => {
            let size = need(r.size, "size")?;
            FlowKind::Download { size, count: r.count, every_ns: r.every_ns.unwrap_or(0) }
        }
        "paced" => {
            let write_bytes = need(r.write_bytes, "write_bytes")?;
            if write_bytes == 0 {
                return Err(err(key("write_bytes"), "must be >= 1"));
            }
            let gap_ns = need(r.gap_ns, "gap_ns")?;
            if gap_ns == 0 {
                return Err(err(key("gap_ns"), "must be >= 1 for kind paced"));
            }
            let dist = match r.gap_dist.as_deref().unwrap_or("const") {
                "const" => GapDist::Const,
                "uniform" => GapDist::Uniform,
                "exp" => GapDist::Exp,
                other => return Err(err(key("gap_dist"), format!("{other:?} is not one of const, uniform, exp"))),
            };
            FlowKind::Paced { write_bytes, gap_ns, dist, seed: r.seed.unwrap_or(1), bytes: r.bytes }
        }
        "rr" => {
            let request_bytes = r.request_bytes.ok_or_else(|| err(key("request_bytes"), "required for kind rr"))?;
            let response_bytes = r.response_bytes.ok_or_else(|| err(key("response_bytes"), "required for kind rr"))?;
            if request_bytes == 0 || response_bytes == 0 {
                return Err(err(key("request_bytes"), "request_bytes and response_bytes must be >= 1"));
            }
            FlowKind::Rr { request_bytes, response_bytes, count: r.count, gap_ns: r.gap_ns.unwrap_or(0) }
        }
        "udp_probe" => {
            let interval_ns = need(r.interval_ns, "interval_ns")?;
            if interval_ns < MIN_UDP_INTERVAL_NS {
                return Err(err(key("interval_ns"), format!("must be >= {MIN_UDP_INTERVAL_NS} (10 µs), got {interval_ns}")));
            }
            let size = r.size.unwrap_or(DEFAULT_UDP_SIZE as u64);
            if !(MIN_UDP_SIZE as u64..=MAX_UDP_SIZE as u64).contains(&size) {
                return Err(err(key("size"), format!("must be {MIN_UDP_SIZE}..{MAX_UDP_SIZE} bytes (one datagram, no fragments), got {size}")));
            }
            FlowKind::UdpProbe { interval_ns, size: size as u32 }
        }
        other => {
            return Err(err(key("kind"), format!("{other:?} is not one of bulk, parallel, download, paced, rr, udp_probe")));
        }
    };
    Ok(Flow {
        flow: r.flow,
        conns,
        dst: SocketAddr::new(ip, r.port),
        cc: r.cc,
        start_ns,
        stop_ns: r.stop_ns,
        nodelay: r.nodelay.unwrap_or(false),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"{
      "host": "s1", "out_dir": "/tmp/raw/s1", "sample_interval_ns": 10000000,
      "end_ns": 32000000000,
      "listen": [ {"port": 5000, "cc": "cubic"} ],
      "flows": [
        {"flow": 0, "conns": 1, "kind": "bulk", "dst": "10.2.1.2", "port": 5000,
         "cc": "cubic", "start_ns": 0, "stop_ns": 30000000000, "bytes": null},
        {"flow": 1, "conns": 4, "kind": "parallel", "dst": "10.2.1.2", "port": 5000,
         "cc": "reno", "start_ns": 0, "stop_ns": 30000000000, "bytes": 1000000},
        {"flow": 2, "kind": "download", "dst": "10.1.1.2", "port": 5000, "cc": "reno",
         "size": 178176, "count": 5, "every_ns": 5000000000, "start_ns": 0, "stop_ns": 30000000000},
        {"flow": 3, "kind": "paced", "dst": "10.2.1.2", "port": 5000, "write_bytes": 1448,
         "gap_ns": 1000000, "gap_dist": "exp", "seed": 7},
        {"flow": 4, "kind": "rr", "dst": "10.2.1.2", "port": 5000, "request_bytes": 100,
         "response_bytes": 1000, "count": null, "gap_ns": 0}
      ]
    }"#;

    #[test]
    fn contract_example_parses_into_typed_flows() {
        let c = parse(EXAMPLE).unwrap();
        assert_eq!(c.host, "s1");
        assert_eq!(c.end_ns, Some(32_000_000_000));
        assert_eq!(c.listen[0].addr.port(), 5000);
        assert_eq!(c.listen[0].cc.as_deref(), Some("cubic"));
        assert_eq!(c.flows.len(), 5);
        assert_eq!(c.flows[0].kind, FlowKind::Bulk { bytes: None });
        assert_eq!(c.flows[1].conns, 4);
        assert_eq!(c.flows[1].kind, FlowKind::Parallel { bytes: Some(1_000_000) });
        assert_eq!(c.flows[2].kind, FlowKind::Download { size: 178176, count: Some(5), every_ns: 5_000_000_000 });
        assert_eq!(
            c.flows[3].kind,
            FlowKind::Paced { write_bytes: 1448, gap_ns: 1_000_000, dist: GapDist::Exp, seed: 7, bytes: None }
        );
        assert_eq!(c.flows[4].kind, FlowKind::Rr { request_bytes: 100, response_bytes: 1000, count: None, gap_ns: 0 });
        assert_eq!(c.flows[3].cc, None);
        assert_eq!(c.flows[3].stop_ns, None);
    }

    #[test]
    fn udp_echo_listener_and_udp_probe_flow() {
        let c = parse(
            r#"{"host":"s1","out_dir":"/tmp/x",
                "listen":[{"port":5000},{"port":7000,"proto":"udp_echo"}],
                "flows":[{"flow":9,"kind":"udp_probe","dst":"10.2.1.2","port":7000,"interval_ns":10000000,
                          "size":64,"start_ns":0,"stop_ns":5000000000},
                         {"flow":10,"kind":"udp_probe","dst":"10.2.1.2","port":7000,"interval_ns":1000000}]}"#,
        )
        .unwrap();
        assert_eq!(c.listen[0].proto, ListenProto::Tcp);
        assert_eq!(c.listen[1].proto, ListenProto::UdpEcho);
        assert_eq!(c.flows[0].kind, FlowKind::UdpProbe { interval_ns: 10_000_000, size: 64 });
        assert_eq!(c.flows[1].kind, FlowKind::UdpProbe { interval_ns: 1_000_000, size: DEFAULT_UDP_SIZE });
        assert_eq!(c.flows[0].kind.name(), "udp_probe");
    }

    #[test]
    fn udp_errors_name_the_key() {
        let f = |flow: &str| format!(r#"{{"host":"s","out_dir":"/x","flows":[{flow}]}}"#);
        let e = parse(&f(r#"{"flow":0,"kind":"udp_probe","dst":"10.0.0.1","port":7}"#)).unwrap_err();
        assert_eq!(e.key, "flows[0].interval_ns");
        let e = parse(&f(r#"{"flow":0,"kind":"udp_probe","dst":"10.0.0.1","port":7,"interval_ns":10}"#)).unwrap_err();
        assert_eq!(e.key, "flows[0].interval_ns");
        let e = parse(&f(r#"{"flow":0,"kind":"udp_probe","dst":"10.0.0.1","port":7,"interval_ns":1000000,"size":8}"#)).unwrap_err();
        assert_eq!(e.key, "flows[0].size");
        let e = parse(&f(r#"{"flow":0,"kind":"udp_probe","dst":"10.0.0.1","port":7,"interval_ns":1000000,"size":9000}"#)).unwrap_err();
        assert_eq!(e.key, "flows[0].size");
        let e = parse(r#"{"host":"s","out_dir":"/x","listen":[{"port":7,"proto":"sctp"}]}"#).unwrap_err();
        assert_eq!(e.key, "listen[0].proto");
        let e = parse(r#"{"host":"s","out_dir":"/x","listen":[{"port":7,"proto":"udp_echo","cc":"reno"}]}"#).unwrap_err();
        assert_eq!(e.key, "listen[0].cc");
    }

    #[test]
    fn unknown_keys_are_refused_naming_the_key() {
        let e = parse(r#"{"host":"s","out_dir":"/x","sample_interval":5}"#).unwrap_err();
        assert_eq!(e.key, "(document)");
        assert!(e.reason.contains("unknown field `sample_interval`"), "{}", e.reason);
        assert!(e.reason.contains("`sample_interval_ns`"), "names what is accepted: {}", e.reason);
        let e = parse(r#"{"host":"s","out_dir":"/x","listen":[{"port":5000,"ccx":"reno"}]}"#).unwrap_err();
        assert_eq!(e.key, "listen[0]");
        assert!(e.reason.contains("unknown field `ccx`"), "{}", e.reason);
        let e = parse(
            r#"{"host":"s","out_dir":"/x","flows":[{"flow":0,"kind":"bulk","dst":"10.0.0.1","port":80},
                {"flow":1,"kind":"download","dst":"10.0.0.1","port":80,"sise":10,"size":10}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.key, "flows[1]");
        assert!(e.reason.contains("unknown field `sise`"), "{}", e.reason);
    }

    #[test]
    fn the_orchestrators_shape_is_accepted() {
        // Every key ccarena.workload.engine.host_configs writes, for every kind: `seed`,
        // `bytes` and `conns` go with every TCP kind, nulls included.
        let c = parse(
            r#"{"host":"s1","out_dir":"/tmp/raw/s1","sample_interval_ns":10000000,"end_ns":32000000000,
                "listen":[{"port":5000,"cc":"cubic"},{"port":7000,"proto":"udp_echo"}],
                "flows":[
                  {"flow":0,"kind":"bulk","dst":"10.2.1.2","port":5000,"cc":"cubic","start_ns":0,
                   "stop_ns":30000000000,"conns":1,"bytes":null,"seed":7},
                  {"flow":1,"kind":"download","dst":"10.2.1.2","port":5000,"cc":"reno","start_ns":0,
                   "stop_ns":30000000000,"conns":1,"bytes":null,"seed":8,"size":178176,"count":5,
                   "every_ns":5000000000},
                  {"flow":2,"kind":"paced","dst":"10.2.1.2","port":5000,"cc":"reno","start_ns":0,
                   "stop_ns":null,"conns":2,"bytes":1000000,"seed":9,"write_bytes":1448,
                   "gap_ns":1000000,"gap_dist":"exp"},
                  {"flow":3,"kind":"rr","dst":"10.2.1.2","port":5000,"cc":"reno","start_ns":0,
                   "stop_ns":30000000000,"conns":1,"bytes":null,"seed":10,"request_bytes":100,
                   "response_bytes":1000,"count":null,"gap_ns":null},
                  {"flow":1000000,"kind":"udp_probe","dst":"10.2.1.2","port":7000,
                   "interval_ns":10000000,"size":64,"start_ns":0,"stop_ns":30000000000}]}"#,
        )
        .unwrap();
        assert_eq!(c.flows.len(), 5);
        assert_eq!(c.flows[2].kind, FlowKind::Paced { write_bytes: 1448, gap_ns: 1_000_000, dist: GapDist::Exp, seed: 9, bytes: Some(1_000_000) });
        assert_eq!(c.flows[3].kind, FlowKind::Rr { request_bytes: 100, response_bytes: 1000, count: None, gap_ns: 0 });
    }

    #[test]
    fn sample_interval_defaults_to_10ms() {
        let c = parse(r#"{"host":"r1","out_dir":"/tmp/x"}"#).unwrap();
        assert_eq!(c.sample_interval_ns, 10_000_000);
        assert!(c.flows.is_empty() && c.listen.is_empty());
    }

    #[test]
    fn errors_name_the_key() {
        let bad = r#"{"host":"s1","out_dir":"/tmp/x","flows":[{"flow":0,"kind":"download","dst":"10.0.0.1","port":80}]}"#;
        assert_eq!(parse(bad).unwrap_err().key, "flows[0].size");
        let bad = r#"{"host":"s1","out_dir":"/tmp/x","flows":[{"flow":0,"kind":"torrent","dst":"10.0.0.1","port":80}]}"#;
        assert_eq!(parse(bad).unwrap_err().key, "flows[0].kind");
        let bad = r#"{"host":"s1","out_dir":"/tmp/x","flows":[{"flow":0,"kind":"bulk","dst":"nohost","port":80}]}"#;
        assert_eq!(parse(bad).unwrap_err().key, "flows[0].dst");
        let bad = r#"{"host":"s1","out_dir":"rel/x"}"#;
        assert_eq!(parse(bad).unwrap_err().key, "out_dir");
        let bad = r#"{"host":"s1","out_dir":"/x","listen":[{"port":1,"cc":"cu bic"}]}"#;
        assert_eq!(parse(bad).unwrap_err().key, "listen[0].cc");
        let bad = r#"{"host":"s1","out_dir":"/x","flows":[
            {"flow":0,"kind":"bulk","dst":"10.0.0.1","port":80},
            {"flow":0,"kind":"bulk","dst":"10.0.0.1","port":80}]}"#;
        assert_eq!(parse(bad).unwrap_err().key, "flows[1].flow");
        let bad = r#"{"host":"s1","out_dir":"/x","flows":[{"flow":0,"kind":"paced","dst":"10.0.0.1","port":80,"write_bytes":10,"gap_ns":5,"gap_dist":"pareto"}]}"#;
        assert_eq!(parse(bad).unwrap_err().key, "flows[0].gap_dist");
        assert_eq!(parse("{not json").unwrap_err().key, "(document)");
    }
}
