//! ccarena-cc-record — record what Linux's own congestion-control module sees and does,
//! call by call, on one TCP connection (docs/dev/cc-replay.md).
//!
//! ```text
//! ccarena-cc-record --algo NAME --port PORT --out FILE.csv.gz --scenario NAME
//!                   [--describe TEXT] [--op OP=FUNCTION ...] -- COMMAND [ARGS...]
//! ```
//! Loads bpf/record/ccrecord.bpf.o (embedded at build time) with the module's op
//! functions as attach targets of its generic op programs (src/algos.rs, or --op),
//! attaches everything, runs COMMAND (the scenario, which opens the connection to
//! PORT), and when COMMAND has exited writes every record of the sockets whose remote
//! port is PORT to FILE (gzip-compressed text: a `#` header, a column line, one line per
//! record). Fails (exit 1, nothing written) when COMMAND fails, when records were lost
//! (ring buffer full) or when nothing was recorded: a trace with holes replays nothing
//! reliably. Errors: one line `ccarena-cc-record: <attempt>: <object>: <cause>`.
//! Needs root (BPF), a kernel with BTF for the module (/sys/kernel/btf/tcp_<name>).
#![forbid(unsafe_code)]

mod algos;
mod record;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;
use std::cell::RefCell;
use std::time::Duration;

use flate2::write::GzEncoder;
use flate2::Compression;
use libbpf_rs::{set_print, MapCore, MapFlags, ObjectBuilder, PrintLevel, RingBufferBuilder};

static BPF_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ccrecord.bpf.o"));
const FORMAT: &str = "ccarena-cc-trace 1";

const USAGE: &str = "usage: ccarena-cc-record --algo NAME --port PORT --out FILE.csv.gz --scenario NAME \
[--describe TEXT] [--op OP=FUNCTION ...] -- COMMAND [ARGS...]";

struct Args {
    algo: String,
    port: u16,
    out: PathBuf,
    scenario: String,
    describe: String,
    ops: Vec<(String, String)>,
    cmd: Vec<String>,
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut a = Args { algo: String::new(), port: 0, out: PathBuf::new(), scenario: String::new(), describe: String::new(), ops: vec![], cmd: vec![] };
    let mut it = argv.iter();
    while let Some(x) = it.next() {
        let mut val = || it.next().cloned().ok_or_else(|| format!("{x}: needs a value"));
        match x.as_str() {
            "--algo" => a.algo = val()?,
            "--port" => {
                let v = val()?;
                a.port = v.parse().map_err(|_| format!("--port {v}: expected 1..65535"))?
            }
            "--out" => a.out = PathBuf::from(val()?),
            "--scenario" => a.scenario = val()?,
            "--describe" => a.describe = val()?,
            "--op" => {
                let v = val()?;
                let (o, f) = v.split_once('=').ok_or_else(|| format!("--op {v}: expected OP=FUNCTION"))?;
                a.ops.push((o.to_string(), f.to_string()));
            }
            "--" => {
                a.cmd = it.by_ref().cloned().collect();
            }
            other => return Err(format!("{other}: unknown argument")),
        }
    }
    if a.algo.is_empty() || a.port == 0 || a.out.as_os_str().is_empty() || a.scenario.is_empty() || a.cmd.is_empty() {
        return Err("--algo, --port, --out, --scenario and a command after -- are required".into());
    }
    Ok(a)
}

fn fail(attempt: &str, object: impl std::fmt::Display, cause: impl std::fmt::Display) -> String {
    format!("ccarena-cc-record: {attempt}: {object}: {cause}")
}

thread_local! {
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn capture_log(level: PrintLevel, msg: String) {
    if !matches!(level, PrintLevel::Debug) {
        LOG.with(|l| l.borrow_mut().extend(msg.lines().map(String::from)));
    }
}

fn bpf_fail(attempt: &str, object: &str, e: libbpf_rs::Error) -> String {
    let mut s = fail(attempt, object, format!("{e:#}"));
    LOG.with(|l| {
        let l = l.borrow();
        for line in &l[l.len().saturating_sub(20)..] {
            s.push_str("\n  ");
            s.push_str(line);
        }
    });
    s
}

fn read_trim(p: &str) -> String {
    std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

fn run(a: Args) -> Result<(), String> {
    let ops = algos::ops_for(&a.algo, &a.ops).map_err(|e| fail("choose op functions", &a.algo, e))?;
    set_print(Some((PrintLevel::Info, capture_log)));
    let mut open = ObjectBuilder::default().open_memory(BPF_OBJ).map_err(|e| bpf_fail("open BPF object", "ccrecord.bpf.o", e))?;
    let mut unused = Vec::new();
    for mut p in open.progs_mut() {
        let name = p.name().to_string_lossy().into_owned();
        let Some(op) = name.strip_prefix("op_").and_then(|n| n.strip_suffix("_in").or_else(|| n.strip_suffix("_out"))) else {
            continue;
        };
        match ops.iter().find(|(o, _)| o == op) {
            Some((_, f)) => p.set_attach_target(0, Some(f.clone())).map_err(|e| bpf_fail("set attach target", f, e))?,
            None => {
                p.set_autoload(false);
                unused.push(name);
            }
        }
    }
    let obj = open.load().map_err(|e| bpf_fail("load BPF object (needs root, and BTF for the module)", "ccrecord.bpf.o", e))?;
    let map = |n: &str| obj.maps().find(|m| m.name() == n).ok_or_else(|| fail("find map", n, "not in ccrecord.bpf.o"));
    let mut cfg = [0u8; 8];
    cfg[0..2].copy_from_slice(&a.port.to_ne_bytes());
    map("cfg")?.update(&0u32.to_ne_bytes(), &cfg, MapFlags::ANY).map_err(|e| bpf_fail("set port", "cfg", e))?;

    let recs: Rc<RefCell<Vec<record::Rec>>> = Rc::new(RefCell::new(Vec::new()));
    let short = Rc::new(RefCell::new(0u64));
    let events = map("events")?;
    let mut rbb = RingBufferBuilder::new();
    let (r2, s2) = (Rc::clone(&recs), Rc::clone(&short));
    rbb.add(&events, move |d: &[u8]| {
        match record::decode(d) {
            Some(r) => r2.borrow_mut().push(r),
            None => *s2.borrow_mut() += 1,
        }
        0
    })
    .map_err(|e| bpf_fail("set up ring buffer", "events", e))?;
    let rb = rbb.build().map_err(|e| bpf_fail("set up ring buffer", "events", e))?;

    let mut links = Vec::new();
    for p in obj.progs_mut() {
        let name = p.name().to_string_lossy().into_owned();
        if unused.contains(&name) {
            continue;
        }
        links.push(p.attach().map_err(|e| bpf_fail("attach", &name, e))?);
    }
    let mut child = Command::new(&a.cmd[0]).args(&a.cmd[1..]).spawn().map_err(|e| fail("run", &a.cmd[0], e))?;
    let status = loop {
        let _ = rb.poll(Duration::from_millis(50));
        if let Some(st) = child.try_wait().map_err(|e| fail("wait for", &a.cmd[0], e))? {
            break st;
        }
    };
    drop(links);
    let _ = rb.consume();
    if !status.success() {
        return Err(fail("run scenario", a.cmd.join(" "), status));
    }
    let counters = map("counters")?;
    let count = |i: u32| -> u64 {
        counters
            .lookup(&i.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap()))
            .unwrap_or(0)
    };
    let (written, lost) = (count(0), count(1));
    let recs = recs.borrow();
    if lost > 0 || *short.borrow() > 0 {
        return Err(fail("record", &a.scenario, format!("{lost} records lost, {} short: the trace has holes", short.borrow())));
    }
    if recs.is_empty() {
        return Err(fail("record", &a.scenario, format!("nothing recorded: no connection to port {}", a.port)));
    }
    write_trace(&a, &ops, &recs, written)
}

fn write_trace(a: &Args, ops: &[(String, String)], recs: &[record::Rec], written: u64) -> Result<(), String> {
    let hz_i = record::SNAP_FIELDS.iter().position(|(n, _)| *n == "delack_max").unwrap();
    let module = format!("tcp_{}", a.algo);
    let loadable = std::path::Path::new(&format!("/sys/module/{module}/initstate")).exists();
    let mut text = String::new();
    text.push_str(&format!("# {FORMAT}\n"));
    text.push_str(&format!("# kernel {}\n", read_trim("/proc/sys/kernel/osrelease")));
    text.push_str(&format!("# algorithm {}\n", a.algo));
    if loadable {
        text.push_str(&format!("# module {module}\n"));
    } else {
        text.push_str(&format!("# module {} (built into the kernel)\n", a.algo));
    }
    // TCP_DELACK_MAX is HZ/5 (include/net/tcp.h): the socket carries the tick rate
    text.push_str(&format!("# hz {}\n", recs[0].snap[hz_i] * 5));
    text.push_str(&format!("# scenario {}: {}\n", a.scenario, a.describe));
    text.push_str(&format!("# ops {}\n", ops.iter().map(|(o, f)| format!("{o}={f}")).collect::<Vec<_>>().join(" ")));
    text.push_str(&format!("# recorder {}\n", env!("CCARENA_VERSION")));
    text.push_str(&format!("# records {written}\n"));
    text.push_str(&record::columns());
    text.push('\n');
    let mut conns: HashMap<u64, usize> = HashMap::new();
    for r in recs {
        let n = conns.len();
        let c = *conns.entry(r.sk).or_insert(n);
        text.push_str(&record::line(r, c));
        text.push('\n');
    }
    let tmp = a.out.with_extension("tmp");
    let f = std::fs::File::create(&tmp).map_err(|e| fail("create", tmp.display(), e))?;
    let mut gz = GzEncoder::new(f, Compression::best());
    gz.write_all(text.as_bytes()).map_err(|e| fail("write", tmp.display(), e))?;
    gz.finish().map_err(|e| fail("write", tmp.display(), e))?;
    std::fs::rename(&tmp, &a.out).map_err(|e| fail("rename", a.out.display(), e))?;
    println!("{}: {} records, {} connection(s)", a.out.display(), recs.len(), conns.len());
    Ok(())
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.iter().any(|a| a == "--version") {
        println!("{}", env!("CCARENA_VERSION"));
        return;
    }
    if argv.is_empty() || argv.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    let code = match parse(&argv) {
        Err(e) => {
            eprintln!("{}\n{USAGE}", fail("parse arguments", "command line", e));
            2
        }
        Ok(a) => match run(a) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("{e}");
                1
            }
        },
    };
    std::process::exit(code);
}
