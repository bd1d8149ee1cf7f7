//! End to end over 127.0.0.1 (no root, no namespaces): two engine processes, the
//! READY / GO / DONE lifecycle, every flow kind, the output files, SIGTERM, exit codes.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ccarena-flow");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ccaflow-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct Engine {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

fn start(dir: &Path, cfg: serde_json::Value) -> Engine {
    let path = dir.join(format!("{}.json", cfg["host"].as_str().unwrap()));
    std::fs::write(&path, cfg.to_string()).unwrap();
    let mut child = Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "READY\n");
    Engine { child, out }
}

impl Engine {
    fn go(&mut self, t0: u64) {
        writeln!(self.child.stdin.as_mut().unwrap(), "GO {t0}").unwrap();
    }
    fn wait(mut self, limit: Duration) -> (i32, String) {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let mut rest = String::new();
                let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
                return (st.code().unwrap_or(-1), rest);
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                panic!("engine did not finish in {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn conns(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_kind_runs_over_loopback_and_leaves_consistent_files() {
    let dir = tmpdir("kinds");
    let port = free_port();
    let server = serde_json::json!({"host": "srv", "out_dir": dir.join("srv"), "end_ns": 20_000_000_000u64,
        "listen": [{"port": port, "cc": "reno"}]});
    let client = serde_json::json!({"host": "cli", "out_dir": dir.join("cli"), "end_ns": 15_000_000_000u64,
        "sample_interval_ns": 5_000_000,
        "flows": [
            {"flow": 0, "kind": "bulk", "dst": "127.0.0.1", "port": port, "cc": "cubic", "bytes": 3_000_000},
            {"flow": 1, "kind": "parallel", "conns": 3, "dst": "127.0.0.1", "port": port, "bytes": 1_000_000},
            {"flow": 2, "kind": "download", "dst": "127.0.0.1", "port": port, "size": 178176, "count": 3,
             "every_ns": 100_000_000u64, "start_ns": 50_000_000u64},
            {"flow": 3, "kind": "paced", "dst": "127.0.0.1", "port": port, "write_bytes": 1000,
             "gap_ns": 2_000_000u64, "gap_dist": "uniform", "seed": 3, "bytes": 50_000},
            {"flow": 4, "kind": "rr", "dst": "127.0.0.1", "port": port, "request_bytes": 64,
             "response_bytes": 4096, "count": 20, "gap_ns": 1_000_000u64}
        ]});
    let mut s = start(&dir, server);
    let mut c = start(&dir, client);
    let t0 = now_ns() + 100_000_000;
    s.go(t0);
    c.go(t0);
    let (rc, out) = c.wait(Duration::from_secs(30));
    assert_eq!((rc, out.as_str()), (0, "DONE\n"), "client");
    // The server has listeners: it runs until SIGTERM (or its end).
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    let (rc, out) = s.wait(Duration::from_secs(10));
    assert_eq!((rc, out.as_str()), (0, "DONE\n"), "server");

    let cl = conns(&dir.join("cli/conns.jsonl"));
    let sv = conns(&dir.join("srv/conns.jsonl"));
    assert!(cl.iter().all(|c| c["error"].is_null()), "{cl:?}");
    assert!(sv.iter().all(|c| c["error"].is_null()), "{sv:?}");
    let bytes = |v: &[serde_json::Value], flow: u64| -> u64 {
        v.iter().filter(|c| c["flow"] == flow).map(|c| c["bytes"].as_u64().unwrap()).sum()
    };
    assert_eq!(bytes(&cl, 0), 3_000_000);
    assert_eq!(bytes(&sv, 0), 3_000_000);
    assert_eq!(cl.iter().filter(|c| c["flow"] == 1).count(), 3);
    assert_eq!(bytes(&sv, 1), 1_000_000);
    assert_eq!(bytes(&cl, 2), 3 * 178176);
    assert_eq!(bytes(&sv, 2), 3 * 178176);
    assert_eq!(bytes(&sv, 3), 50_000);
    assert_eq!(bytes(&cl, 4), 20 * 4096);
    let c0 = cl.iter().find(|c| c["flow"] == 0).unwrap();
    assert_eq!(c0["cc"], "cubic");
    let s0 = sv.iter().find(|c| c["flow"] == 0).unwrap();
    assert_eq!(s0["cc"], "reno", "listener's algorithm on accepted sockets");
    // Downloads start on their schedule.
    let mut starts: Vec<u64> =
        cl.iter().filter(|c| c["flow"] == 2).map(|c| c["connect_start_ns"].as_u64().unwrap() - t0).collect();
    starts.sort();
    for (k, s) in starts.iter().enumerate() {
        let want = 50_000_000 + k as u64 * 100_000_000;
        assert!(*s >= want && *s < want + 20_000_000, "download {k} started at {s} ns, wanted {want}");
    }

    // Binary files: whole records, sizes as their schemas say.
    for (host, file, size) in [("cli", "tcpinfo.bin", 148), ("srv", "rx.bin", 24), ("cli", "rr.bin", 24)] {
        let p = dir.join(host).join(file);
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{}.schema.json", p.display())).unwrap()).unwrap();
        assert_eq!(schema["record_size"], size);
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len > 0 && len.is_multiple_of(size), "{file}: {len} bytes");
    }
    assert_eq!(std::fs::metadata(dir.join("cli/rr.bin")).unwrap().len(), 20 * 24);
    let eng: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cli/engine.json")).unwrap()).unwrap();
    assert_eq!(eng["stopped_by"], "flows done");
    assert!(eng["samples"].as_u64().unwrap() > 0);
    let eng: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("srv/engine.json")).unwrap()).unwrap();
    assert_eq!(eng["stopped_by"], "signal");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_config_exits_2_with_one_line() {
    let dir = tmpdir("bad");
    let p = dir.join("c.json");
    std::fs::write(&p, r#"{"host":"x","out_dir":"/tmp/x","flows":[{"flow":0,"kind":"rr","dst":"127.0.0.1","port":1}]}"#)
        .unwrap();
    let o = Command::new(BIN).arg("--config").arg(&p).stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.starts_with("ccarena-flow: read config: ") && err.ends_with("flows[0].request_bytes: required for kind rr\n"), "{err}");
    let o = Command::new(BIN).stdin(Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn port_in_use_is_a_runtime_error_before_ready() {
    let dir = tmpdir("busy");
    let l = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let p = dir.join("c.json");
    std::fs::write(&p, serde_json::json!({"host":"x","out_dir":dir.join("o"),"listen":[{"port":port}]}).to_string()).unwrap();
    let o = Command::new(BIN).arg("--config").arg(&p).stdin(Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("ccarena-flow: listen: 0.0.0.0:"));
    assert!(o.stdout.is_empty(), "no READY");
    let _ = std::fs::remove_dir_all(&dir);
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// udp.bin as (t_ns, flow, seq, rtt_ns).
fn udp_records(p: &Path) -> Vec<(u64, u32, u32, u64)> {
    let b = std::fs::read(p).unwrap();
    assert_eq!(b.len() % 24, 0);
    b.chunks(24)
        .map(|r| {
            (
                u64::from_le_bytes(r[0..8].try_into().unwrap()),
                u32::from_le_bytes(r[8..12].try_into().unwrap()),
                u32::from_le_bytes(r[12..16].try_into().unwrap()),
                u64::from_le_bytes(r[16..24].try_into().unwrap()),
            )
        })
        .collect()
}

#[test]
fn udp_probe_is_echoed_on_its_grid_and_unanswered_probes_are_lost() {
    let dir = tmpdir("udp");
    let port = free_udp_port();
    let dead = free_udp_port();
    let server = serde_json::json!({"host": "srv", "out_dir": dir.join("srv"), "end_ns": 10_000_000_000u64,
        "listen": [{"port": port, "proto": "udp_echo"}]});
    let client = serde_json::json!({"host": "cli", "out_dir": dir.join("cli"), "end_ns": 5_000_000_000u64,
        "flows": [
            {"flow": 7, "kind": "udp_probe", "dst": "127.0.0.1", "port": port, "interval_ns": 2_000_000u64,
             "size": 100, "start_ns": 10_000_000u64, "stop_ns": 510_000_000u64},
            {"flow": 8, "kind": "udp_probe", "dst": "127.0.0.1", "port": dead, "interval_ns": 50_000_000u64,
             "start_ns": 0, "stop_ns": 200_000_000u64}
        ]});
    let mut s = start(&dir, server);
    let mut c = start(&dir, client);
    let t0 = now_ns() + 100_000_000;
    s.go(t0);
    c.go(t0);
    let (rc, out) = c.wait(Duration::from_secs(20));
    assert_eq!((rc, out.as_str()), (0, "DONE\n"), "client");
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    let (rc, _) = s.wait(Duration::from_secs(10));
    assert_eq!(rc, 0);

    let recs = udp_records(&dir.join("cli/udp.bin"));
    let f7: Vec<_> = recs.iter().filter(|r| r.1 == 7).collect();
    let f8: Vec<_> = recs.iter().filter(|r| r.1 == 8).collect();
    let eng: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cli/engine.json")).unwrap()).unwrap();
    assert_eq!(eng["stopped_by"], "flows done");
    let probe = |flow: u64| eng["udp_probes"].as_array().unwrap().iter().find(|p| p["flow"] == flow).unwrap().clone();
    let (p7, p8) = (probe(7), probe(8));
    let n = |p: &serde_json::Value, k: &str| p[k].as_u64().unwrap();
    // 500 ms at 2 ms = 250 grid points; a send more than one interval late (a busy
    // machine) skips the grid points it missed, and says so.
    assert_eq!(n(&p7, "sent") + n(&p7, "skipped_sends"), 250, "{p7}");
    assert!(n(&p7, "skipped_sends") <= 25, "{p7}");
    assert_eq!(f7.len() as u64, n(&p7, "sent"));
    assert_eq!((n(&p7, "echoed"), n(&p7, "lost")), (n(&p7, "sent"), 0), "{p7}");
    let start = t0 + 10_000_000;
    let mut on_time = 0;
    for (k, r) in f7.iter().enumerate() {
        assert!(k == 0 || r.2 == f7[k - 1].2 + 1, "in send order, seq consecutive");
        assert!(r.0 >= start && r.0 < start + 500_000_000);
        if (r.0 - start) % 2_000_000 < 500_000 {
            on_time += 1;
        }
        assert!(r.3 > 0 && r.3 < 50_000_000, "rtt {} ns", r.3);
    }
    assert!(on_time * 10 >= f7.len() * 8, "{on_time} of {} sends within 0.5 ms of their grid point", f7.len());
    assert_eq!(f8.len(), 4, "0, 50, 100, 150 ms");
    assert!(f8.iter().all(|r| r.3 == u64::MAX), "nobody echoes: {f8:?}");
    assert_eq!((n(&p8, "sent"), n(&p8, "lost")), (4, 4));
    assert_eq!(eng["records"]["udp"].as_u64().unwrap(), f7.len() as u64 + 4);
    let echoed = n(&p7, "sent");
    let eng: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("srv/engine.json")).unwrap()).unwrap();
    assert_eq!(eng["udp_echo"]["echoed"].as_u64(), Some(echoed));
    let schema = std::fs::read_to_string(dir.join("cli/udp.bin.schema.json")).unwrap();
    assert!(schema.contains(r#"["rtt_ns","u64"]"#), "{schema}");
    let _ = std::fs::remove_dir_all(&dir);
}
