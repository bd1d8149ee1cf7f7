//! End to end over 127.0.0.1 (no root, no namespaces): two engine processes, the
//! READY / GO / DONE lifecycle, every flow kind, connection failures, the output files,
//! SIGTERM, exit codes.
//!
//! Robust by construction on a loaded machine: servers listen on port 0 and the test
//! reads the port the engine reports (`LISTEN i addr`), so no port can be taken between
//! picking and binding; assertions are invariants that hold under any scheduling delay
//! (never early, sent + skipped = the grid, nothing counted twice), not timing limits.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ccarena-flow");

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ccaflow-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

use ccarena_sys::clock::now_ns;
use ccarena_sys::sock;

fn sigterm(c: &Child) {
    ccarena_sys::signal::send(c.id(), libc::SIGTERM).unwrap();
}

struct Engine {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    /// The port of each listener, as the engine reported it before READY.
    ports: Vec<u16>,
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
    let mut ports = Vec::new();
    loop {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        if line == "READY\n" {
            break;
        }
        if line.is_empty() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("engine exited before READY: {err}");
        }
        // LISTEN <i> <ip:port>, in listener order
        let w: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((w.len(), w[0], w[1].parse::<usize>().unwrap()), (3, "LISTEN", ports.len()), "{line:?}");
        ports.push(w[2].rsplit_once(':').unwrap().1.parse().unwrap());
    }
    Engine { child, out, ports }
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
    let server = serde_json::json!({"host": "srv", "out_dir": dir.join("srv"), "end_ns": 20_000_000_000u64,
        "listen": [{"port": 0, "cc": "reno"}]});
    let mut s = start(&dir, server);
    let port = s.ports[0];
    assert_ne!(port, 0, "the kernel's port, not the one asked for");
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
    let mut c = start(&dir, client);
    let t0 = now_ns() + 100_000_000;
    s.go(t0);
    c.go(t0);
    let (rc, out) = c.wait(Duration::from_secs(30));
    assert_eq!((rc, out.as_str()), (0, "DONE\n"), "client");
    // The server has listeners: it runs until SIGTERM (or its end).
    sigterm(&s.child);
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
    // Downloads start on their schedule: each at or after its time (how late depends on
    // the machine, and the engine reports it as max_start_late_ns), in order.
    let mut starts: Vec<(u64, u64)> = cl
        .iter()
        .filter(|c| c["flow"] == 2)
        .map(|c| (c["conn"].as_u64().unwrap(), c["connect_start_ns"].as_u64().unwrap() - t0))
        .collect();
    starts.sort();
    assert_eq!(starts.len(), 3);
    for (k, &(conn, s)) in starts.iter().enumerate() {
        let want = 50_000_000 + k as u64 * 100_000_000;
        assert_eq!(conn, k as u64);
        assert!(s >= want, "download {k} started at {s} ns, before its time {want}");
        assert!(k == 0 || s > starts[k - 1].1, "download {k} started before download {}", k - 1);
    }

    // Binary files: whole records, sizes as their schemas say.
    for (host, file, size) in [("cli", "tcpinfo.bin", 156), ("srv", "rx.bin", 24), ("cli", "rr.bin", 24)] {
        let p = dir.join(host).join(file);
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{}.schema.json", p.display())).unwrap()).unwrap();
        assert_eq!(schema["record_size"], size);
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len > 0 && len.is_multiple_of(size), "{file}: {len} bytes");
    }
    assert_eq!(std::fs::metadata(dir.join("cli/rr.bin")).unwrap().len(), 20 * 24);
    // Every sample knows its socket's send buffer (SO_MEMINFO): positive, and the memory
    // queued in it never far past it (the kernel lets one buffer overshoot).
    let ti = std::fs::read(dir.join("cli/tcpinfo.bin")).unwrap();
    for r in ti.chunks_exact(156) {
        let (sndbuf, queued) = (u32::from_le_bytes(r[148..152].try_into().unwrap()), u32::from_le_bytes(r[152..156].try_into().unwrap()));
        assert!(sndbuf > 0 && queued <= 2 * sndbuf, "sndbuf {sndbuf}, queued {queued}");
    }
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
    let server = serde_json::json!({"host": "srv", "out_dir": dir.join("srv"), "end_ns": 10_000_000_000u64,
        "listen": [{"port": 0, "addr": "127.0.0.1", "proto": "udp_echo"}]});
    let mut s = start(&dir, server);
    let port = s.ports[0];
    // A socket that is bound (no ICMP port unreachable comes back) and never answers;
    // held for the whole test so no one else can take its port.
    let dead = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (interval, first, stop) = (2_000_000u64, 10_000_000u64, 510_000_000u64);
    let client = serde_json::json!({"host": "cli", "out_dir": dir.join("cli"), "end_ns": 5_000_000_000u64,
        "flows": [
            {"flow": 7, "kind": "udp_probe", "dst": "127.0.0.1", "port": port, "interval_ns": interval,
             "size": 100, "start_ns": first, "stop_ns": stop},
            {"flow": 8, "kind": "udp_probe", "dst": "127.0.0.1", "port": dead.local_addr().unwrap().port(),
             "interval_ns": 50_000_000u64, "start_ns": 0, "stop_ns": 200_000_000u64}
        ]});
    let mut c = start(&dir, client);
    let t0 = now_ns() + 100_000_000;
    s.go(t0);
    c.go(t0);
    let (rc, out) = c.wait(Duration::from_secs(20));
    assert_eq!((rc, out.as_str()), (0, "DONE\n"), "client");
    sigterm(&s.child);
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
    // 500 ms at 2 ms = 250 grid points. However late the engine was scheduled, every one
    // is either sent (once, in its own slot) or skipped (its slot passed without a send).
    let grid = (stop - first) / interval;
    assert_eq!(grid, 250);
    assert_eq!(n(&p7, "sent") + n(&p7, "skipped_sends"), grid, "{p7}");
    assert_eq!(f7.len() as u64, n(&p7, "sent"));
    let start = t0 + first;
    let mut last_slot = None;
    for (k, r) in f7.iter().enumerate() {
        assert!(k == 0 || r.2 == f7[k - 1].2 + 1, "in send order, seq consecutive");
        assert!(r.0 >= start && r.0 < t0 + stop, "sent at {} ns, outside the probe's time", r.0 - t0);
        let slot = (r.0 - start) / interval;
        assert!(last_slot.is_none_or(|l| slot > l), "two sends in grid slot {slot}");
        last_slot = Some(slot);
        // answered (after it was sent, before the client ended) or lost
        assert!(r.3 == u64::MAX || (r.3 > 0 && r.0 + r.3 < t0 + 5_000_000_000), "rtt {} ns", r.3);
    }
    assert!(n(&p7, "max_send_late_ns") < interval, "lateness counts from the grid point served: {p7}");
    let lost7 = f7.iter().filter(|r| r.3 == u64::MAX).count() as u64;
    assert_eq!((n(&p7, "echoed"), n(&p7, "lost")), (n(&p7, "sent") - lost7, lost7), "{p7}");
    assert!(n(&p7, "echoed") > 0, "{p7}");
    // Nobody answers flow 8: every send is a lost record.
    assert_eq!(n(&p8, "sent") + n(&p8, "skipped_sends"), 4, "0, 50, 100, 150 ms: {p8}");
    assert_eq!((f8.len() as u64, n(&p8, "lost")), (n(&p8, "sent"), n(&p8, "sent")));
    assert!(f8.iter().all(|r| r.3 == u64::MAX), "nobody echoes: {f8:?}");
    assert_eq!(eng["records"]["udp"].as_u64().unwrap(), (f7.len() + f8.len()) as u64);
    let echoed = n(&p7, "echoed");
    let eng: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("srv/engine.json")).unwrap()).unwrap();
    assert!(eng["udp_echo"]["echoed"].as_u64().unwrap() >= echoed, "{}", eng["udp_echo"]);
    let schema = std::fs::read_to_string(dir.join("cli/udp.bin.schema.json")).unwrap();
    assert!(schema.contains(r#"["rtt_ns","u64"]"#), "{schema}");
    drop(dead);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TCP socket bound to 127.0.0.1:<any>, listening with `backlog` if given -> (socket, port).
fn raw_tcp(backlog: Option<i32>) -> (OwnedFd, u16) {
    let fd = sock::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0).unwrap();
    sock::bind(fd.as_fd(), &"127.0.0.1:0".parse().unwrap()).unwrap();
    if let Some(b) = backlog {
        sock::listen(fd.as_fd(), b).unwrap();
    }
    let port = sock::local_addr(fd.as_fd()).unwrap().port();
    (fd, port)
}

#[test]
fn connections_that_time_out_are_refused_or_are_reset_say_so_with_their_end() {
    let dir = tmpdir("fail");
    // timed out: a listener with backlog 0 whose accept queue the test fills with one
    // connection it never accepts; the kernel drops every further SYN unanswered.
    let (_full, full_port) = raw_tcp(Some(0));
    let _queued = std::net::TcpStream::connect(("127.0.0.1", full_port)).unwrap();
    // refused: a bound socket that does not listen answers a SYN with RST.
    let (_closed, closed_port) = raw_tcp(None);
    // reset: a server that accepts and aborts the connection (RST, SO_LINGER 0).
    let aborter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let reset_port = aborter.local_addr().unwrap().port();
    let th = std::thread::spawn(move || {
        let (conn, _) = aborter.accept().unwrap();
        let lg = libc::linger { l_onoff: 1, l_linger: 0 };
        sock::setsockopt(conn.as_fd(), libc::SOL_SOCKET, libc::SO_LINGER, &lg).unwrap();
        drop(conn);
    });
    let stop = 300_000_000u64;
    let client = serde_json::json!({"host": "cli", "out_dir": dir.join("cli"), "end_ns": 20_000_000_000u64,
        "flows": [
            {"flow": 0, "kind": "bulk", "dst": "127.0.0.1", "port": full_port, "stop_ns": stop},
            {"flow": 1, "kind": "bulk", "dst": "127.0.0.1", "port": closed_port, "stop_ns": stop},
            {"flow": 2, "kind": "bulk", "dst": "127.0.0.1", "port": reset_port, "stop_ns": 10_000_000_000u64}
        ]});
    let mut c = start(&dir, client);
    let t0 = now_ns() + 50_000_000;
    c.go(t0);
    let (rc, out) = c.wait(Duration::from_secs(30));
    assert_eq!((rc, out.as_str()), (0, "DONE\n"));
    th.join().unwrap();
    let cl = conns(&dir.join("cli/conns.jsonl"));
    assert_eq!(cl.len(), 3, "{cl:?}");
    let rec = |flow: u64| cl.iter().find(|c| c["flow"] == flow).unwrap();
    let err = |flow: u64| rec(flow)["error"].as_str().unwrap_or_default().to_string();
    let end = |flow: u64| rec(flow)["end_ns"].as_u64().unwrap();

    assert!(err(0).starts_with("timed out: "), "{:?}", rec(0));
    assert!(rec(0)["connected_ns"].is_null(), "{:?}", rec(0));
    assert!(end(0) >= t0 + stop, "gave up at its flow's stop, not before: {:?}", rec(0));
    assert_eq!(rec(0)["bytes"], 0);

    assert!(err(1).starts_with("refused: connect: "), "{:?}", rec(1));
    assert!(rec(1)["connected_ns"].is_null());
    assert!(end(1) >= rec(1)["connect_start_ns"].as_u64().unwrap());

    // The RST can reach the client before or after it saw its connect complete.
    assert!(err(2).starts_with("reset: "), "{:?}", rec(2));
    assert!(end(2) >= rec(2)["connect_start_ns"].as_u64().unwrap());

    let eng: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cli/engine.json")).unwrap()).unwrap();
    assert_eq!(eng["errors"].as_array().unwrap().len(), 3, "{}", eng["errors"]);
    let _ = std::fs::remove_dir_all(&dir);
}
