"""Run a study: preflight, then for each planned run build the testbed, start the link,
the flow engines and the probes at a common t0, wait, collect, tear down, store.

    run_study(study) -> ResultsDir

Preflight raises before anything is built (no backend, a missing algorithm or binary).
SIGINT and SIGTERM tear the current run down; completed runs stay stored."""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
from pathlib import Path

import pandas as pd

from ccarena import cc as ccmod
from ccarena.run import environment
from ccarena.testbed import netns
from ccarena.run import validity
from ccarena.run import watchdog
from ccarena.errors import CcarenaError, PreflightError
from ccarena.measure import cpu
from ccarena.measure import records
from ccarena.measure.pcap import Pcap
from ccarena.measure.ping import PingProbe
from ccarena.measure.tracer import Tracer
from ccarena.study.plan import PlannedRun, make_plan
from ccarena.study.model import Study
from ccarena.store.results import ResultsDir, write_json
from ccarena.testbed import backend as backend_mod
from ccarena.testbed import caps as caps_mod
from ccarena.testbed import kernel_link
from ccarena.testbed import user_link
from ccarena.testbed.build import Testbed
from ccarena.testbed.topology import plan_dumbbell
from ccarena.workload.commands import Commands, check_programs
from ccarena.study.resolve import PROBE_FLOW_ID
from ccarena.workload.engine import Engines, algorithms_of, host_configs

START_LEAD_S = 0.3
WAIT_MARGIN_S = 15.0


def preflight(study: Study, force_cc: str | None = None) -> dict:
    """Everything that can be checked without building: -> {cell: {"backend","why"}, ...}."""
    caps = caps_mod.probe()
    if caps.get("error") and not caps.get("veth"):
        raise PreflightError(f"cannot build testbeds here: {caps['error']} "
                             "(run `ccarena doctor`)")
    out = {"cells": {}, "algorithms": {}}
    cells = getattr(study, "cells", [({}, study)])
    names = set()
    for i, (params, cell) in enumerate(cells):
        b, why = backend_mod.choose(cell, caps)
        out["cells"][i] = {"backend": b, "why": why}
        if b == "user":
            from ccarena.testbed.user_link import link_io
            try:
                out["cells"][i]["io"] = link_io(cell.offloads)
            except ValueError as e:
                raise PreflightError(str(e)) from None
        names |= cell.algorithms()
        check_programs(cell)
        check_host_limits(cell)
        check_probes(cell)
        if any(f.kind != "command" for f in cell.flows):
            from ccarena.paths import require_binary
            require_binary("ccarena-flow", "the flow engine")
    missing = []
    for n in sorted(names):
        a = ccmod.resolve(n, force=force_cc)
        out["algorithms"][n] = {"source": a.source, "kernel_name": a.kernel_name, "why": a.why}
        if a.source == "unavailable":
            missing.append(f"{n} ({a.why})")
    if missing:
        raise PreflightError(f"{study.path}: congestion control not available here: "
                             + "; ".join(missing) + " (see `ccarena cc list`)")
    return out


def check_probes(study: Study) -> None:
    import shutil
    for p in study.probes:
        if p.kind == "pcap" and not shutil.which("tcpdump"):
            raise PreflightError(f"{study.path}: probe {p.name}: pcap needs tcpdump, which is "
                                 "not installed (apt-get install tcpdump)")
        if p.kind == "tcp_probe":
            from ccarena.paths import require_binary
            require_binary("ccarena-trace", "the tcp_probe tracer")


def check_host_limits(study: Study) -> None:
    """CPU and memory limits must fit this machine and need cgroups."""
    from ccarena.testbed import cgroups
    ncpu = os.cpu_count() or 1
    allowed = os.sched_getaffinity(0)
    for h, hs in study.hosts.items():
        if hs.cpus is None and hs.cpuset is None and hs.memory is None:
            continue
        if cgroups.version() is None:
            raise PreflightError(f"{study.path}: hosts.{h}: CPU and memory limits need "
                                 "cgroups, and none are mounted at /sys/fs/cgroup")
        if hs.cpus is not None and hs.cpus > ncpu:
            raise PreflightError(f"{study.path}: hosts.{h}.cpus: {hs.cpus:g} CPUs is above "
                                 f"this machine's {ncpu}")
        if hs.cpuset is not None:
            want = set()
            for part in hs.cpuset.split(","):
                a, _, b = part.partition("-")
                want |= set(range(int(a), int(b or a) + 1))
            if not want <= allowed:
                raise PreflightError(f"{study.path}: hosts.{h}.cpuset: CPUs "
                                     f"{sorted(want - allowed)} do not exist here (have "
                                     f"{sorted(allowed)})")
        if hs.memory is not None:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            if hs.memory > total:
                raise PreflightError(f"{study.path}: hosts.{h}.memory: above this machine's "
                                     f"{total / 2**30:.1f} GiB")


class _Terminate(KeyboardInterrupt):
    """SIGTERM, delivered as an exception so every `with` tears its part down."""


@contextlib.contextmanager
def _sigterm_as_exception():
    def handler(signum, frame):
        raise _Terminate()
    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_study(study: Study, *, results_base="results", seed=None, shuffle=None,
              repetitions=None, reruns=None, progress=True, force_cc=None, event_log=False,
              on_run=None, on_testbed=None) -> ResultsDir:
    """on_run(planned_run, meta) after each run; on_testbed(topology) once each run's
    network is built (tests and tools that watch a run from outside use it).

    A run that only the machine's noise made invalid (validity.noise_only) is run again,
    up to `reruns` (default study.reruns) times, with the same seed; each attempt set aside
    is kept under superseded/ and listed in the final attempt's meta["superseded"]. Once
    a cell's re-runs ended invalid all the same, its noise is taken for its own (e.g. a
    workload that saturates the CPU) and its later runs are not re-run."""
    pf = preflight(study, force_cc)
    plan = make_plan(study, seed=seed, shuffle=shuffle, repetitions=repetitions,
                     reruns=reruns)
    results = ResultsDir.create(study.name, results_base)
    results.write_study(study, plan, study.path)
    write_json(results.path / "preflight.json", pf)
    write_json(results.path / "environment.json", environment.machine())
    cell_index = {r.cell: int(r.cell[1:]) for r in plan.runs}
    reruns = plan.reruns        # recorded in plan.json
    unhelped: set[str] = set()      # cells whose re-runs were invalid all the same
    bar = _Progress(len(plan.runs), study.name) if progress else None
    with _sigterm_as_exception(), ccmod.acquire(sorted(pf["algorithms"]), _study_token(),
                                                 force=force_cc) as kernel_names:
        try:
            for r in plan.runs:
                backend = pf["cells"][cell_index[r.cell]]["backend"]
                if bar:
                    bar.update(r)
                meta = _measure(r, results, reruns, unhelped, lambda **kw: execute_run(
                    r, results, backend, kernel_names, pf, event_log=event_log,
                    on_testbed=on_testbed, **kw), bar)
                results.rebuild_aggregates()
                if on_run:
                    on_run(r, meta)
        finally:
            if bar:
                bar.close()
    return results


def _measure(r: PlannedRun, results: ResultsDir, reruns: int, unhelped: set, execute,
             bar) -> dict:
    """Run `r` (execute(**kw) -> meta), and again while only the machine's noise made it
    invalid, up to `reruns` times. The new attempt is staged: until it is complete, the
    one it would replace stays the run's (an interruption loses neither). `unhelped`:
    cells whose last re-runs were invalid for noise all the same, not re-run until one of
    their runs is valid (updated here)."""
    meta = execute()
    if reruns and r.cell in unhelped and validity.noise_only(meta):
        meta["rerun_skipped"] = ("an earlier run of this cell was run again and was "
                                 "invalid all the same")
        results.update_meta(r.label, meta)
        return meta
    set_aside: list[dict] = []
    while not meta["valid"] and len(set_aside) < reruns and validity.noise_only(meta):
        aside = results.aside_record(r.label, len(set_aside) + 1, meta)
        if bar:
            bar.rerun(r, aside["attempt"])
        new = execute(superseded=set_aside + [aside], staged=True)
        results.supersede(r.label, aside["attempt"], meta)
        set_aside.append(aside)
        meta = new
    if set_aside and validity.noise_only(meta):
        unhelped.add(r.cell)
    elif meta["valid"]:
        unhelped.discard(r.cell)    # the noise was passing after all
    return meta


def _study_token() -> str:
    return "s" + secrets.token_hex(3)


def execute_run(r: PlannedRun, results: ResultsDir, backend: str, kernel_names: dict,
                pf: dict, event_log: bool = False, on_testbed=None,
                superseded: list[dict] | None = None, staged: bool = False) -> dict:
    """One run, stored under runs/<label>/, or with `staged` in the results' staging
    directory for it (ResultsDir.supersede moves it in). `superseded`: earlier attempts
    of this planned run, set aside for the machine's noise (recorded in meta)."""
    study = r.study
    r.run_id = secrets.token_hex(3)
    rd = results.staging_dir(r.label) if staged else results.run_dir(r.label)
    raw = rd / "raw"
    topo = plan_dumbbell(r.run_id, study.pairs, backend)
    meta = {
        "version": 1, "run_id": r.run_id, "label": r.label, "study": study.name,
        "cell": r.cell, "cell_params": r.params, "rep": r.rep, "index": r.index,
        "seed": r.seed, "backend": backend, "duration_s": study.duration_s,
        "warmup_s": study.warmup_s, "base_rtt_s": study.base_rtt_s,
        "sample_interval_s": study.sample_interval_s,
        "bottleneck": _bottleneck_meta(study), "flows": _flows_meta(study, kernel_names, pf),
        "namespaces": topo.namespaces, "valid": True, "invalid_reasons": [],
    }
    if superseded:
        meta["superseded"] = list(superseded)
    reasons: list[str] = []
    noise: list[str] = []       # reasons that are the machine's noise (validity.py);
    #                             joined to `reasons` at the end
    tables: dict[str, pd.DataFrame] = {}
    bpf_algs = sorted({k for k in kernel_names.values() if k.startswith("cca_")})
    guard0: dict = {}
    inodes: list[int] = []
    link_proc = sampler = engines = None
    cmds = None
    pings: list[PingProbe] = []
    caps_: list[Pcap] = []
    tracer = None
    started = time.time()
    tb = None
    try:
        with watchdog.bounded(watchdog.limit_s(study.duration_s),
                              raw / "logs" / "watchdog-stacks.txt"), \
                Testbed(topo, study) as tb:
            tb.flush_tcp_metrics()
            # the BPF guard counts per network namespace: this run's are these
            inodes = [netns.inode(ns) for ns in topo.namespaces]
            guard0 = {k: ccmod.run_guard_counts(k, inodes) for k in bpf_algs}
            if on_testbed:
                on_testbed(topo)
            if backend == "kernel":
                kernel_link.apply(topo, study)
                sampler = kernel_link.QdiscSampler(tb).start()
            meta["host_state"] = environment.host_state(topo)
            meta["host_limits"] = {h: cg.applied() for h, cg in tb.cgroups.items()}
            cmds = Commands(study, topo, raw, tb.cgroups)
            cfgs = host_configs(study, topo, raw, kernel_names, r.seed)
            engines = Engines(topo, cfgs, raw, tb.cgroups)
            engines.start()
            # t0 is fixed before the link starts so a rate schedule or trace starts with it
            t0 = time.monotonic_ns() + int(START_LEAD_S * 1e9)
            if backend == "user":
                link_proc = user_link.start(topo, study, raw, r.seed, event_log=event_log,
                                            t0_ns=t0)
                ingress0 = user_link.ingress_counters(topo)
            for p in study.probes:
                if p.kind == "pcap":
                    for h in p.hosts:
                        caps_.append(Pcap(h, topo.ns(h), raw, p.snaplen))
                        caps_[-1].ready()
            traced = sorted({h for p in study.probes if p.kind == "tcp_probe" for h in p.hosts})
            if traced:
                tracer = Tracer([topo.ns(h) for h in traced], raw)
            for p in study.probes:
                if p.kind != "ping":
                    continue
                pings.append(PingProbe(p.name, topo.ns(p.src), topo.host_ip[p.dst],
                                       p.interval_s, study.duration_s + START_LEAD_S,
                                       raw / "logs"))
            c0 = cpu.snapshot()
            if time.monotonic_ns() >= t0:   # setup overran the lead: start now, say so
                meta["t0_late_ns"] = time.monotonic_ns() - t0
                t0 = time.monotonic_ns() + 10_000_000
            engines.go_at(t0)
            meta["t0_ns"] = t0
            cmds.start(t0)
            rcs = engines.wait(study.duration_s + START_LEAD_S + WAIT_MARGIN_S)
            end = t0 + int(study.duration_s * 1e9)
            while time.monotonic_ns() < end:    # no engine (probes only) or an early exit
                time.sleep(min(0.1, (end - time.monotonic_ns()) / 1e9))
            cmds.finish(timeout_s=study.duration_s + START_LEAD_S + WAIT_MARGIN_S)
            meta["cpu"] = cpu.usage(c0, cpu.snapshot())
            reasons += engines.failures(rcs)
            reasons += cmds.failures()
            if cmds:
                tables["commands"] = cmds.table()
            engines.stop()
            if tracer is not None:
                meta["trace"] = tracer.stop()
                tracer = None
                lost = meta["trace"].get("lost", 0) or 0
                if lost:
                    noise.append(f"tcp_probe tracer lost {lost} events")
            for c in caps_:
                c.stop()
            pt = [p.finish(timeout_s=2.0) for p in pings]
            if pt:
                tables["ping"] = pd.concat(pt, ignore_index=True)
            if sampler is not None:
                tables["link_stats"] = pd.DataFrame(sampler.stop())
                failed = sampler.failures()
                if sampler.error or tables["link_stats"].empty or failed:
                    reasons.append(sampler.error or failed or "qdisc sampler recorded nothing")
                meta["qdisc_sampler"] = {"reads": sampler.reads, "failed": sampler.failed_reads}
                b = study.bottleneck
                meta["shaper"] = validity.shaper_delivery(tables["link_stats"], {
                    0: b.rate_bps, 1: b.reverse_rate_bps})
                noise += validity.check_shaper(meta["shaper"])
                sampler = None
            if link_proc is not None:
                rc = link_proc.terminate(timeout_s=10)
                if rc != 0:
                    reasons.append(f"ccarena-link exit {rc}: {link_proc.stderr_tail(3)}")
                meta["link_ingress"] = user_link.counter_delta(
                    ingress0, user_link.ingress_counters(topo))
    except KeyboardInterrupt:
        meta["interrupted"] = True
        raise
    except CcarenaError as e:
        reasons.append(str(e))
        meta["error"] = str(e)
        if isinstance(e, watchdog.RunOverrun) and tb is not None:
            # it may have struck during the teardown: finish it (idempotent)
            with contextlib.suppress(Exception):
                tb.teardown()
    finally:
        for p in pings:
            with contextlib.suppress(Exception):
                p.proc.terminate(1)
        for c in caps_:
            with contextlib.suppress(Exception):
                c.stop()
        if tracer is not None:
            with contextlib.suppress(Exception):
                tracer.stop()
        if sampler is not None:
            with contextlib.suppress(Exception):
                sampler.stop()
        if engines:
            engines.stop()
        if cmds:
            cmds.stop()
    meta["wall_start"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))
    meta["wall_s"] = time.time() - started
    _collect(raw, tables, meta, reasons, noise, study)
    # BPF algorithms on this kernel can meet a corrupted ssthresh that their guard repairs
    # (docs/algorithms.md, "Known issue"): a late repair (the bad value acted for an ACK)
    # makes the run invalid; one redone at entry, before any use, is recorded only
    for k in bpf_algs:
        g0, g1 = guard0.get(k), ccmod.run_guard_counts(k, inodes)
        if g0 is None or g1 is None:
            continue
        if g1.at_entry > g0.at_entry:
            meta.setdefault("cc_guard_at_entry", {})[k] = g1.at_entry - g0.at_entry
        if g1.late > g0.late:
            meta.setdefault("cc_repairs", {})[k] = g1.late - g0.late
            # where the fault entered (docs/algorithms.md, "Known issue"): what the late
            # repairs found corrupted, and the CA states they were made in (the
            # namespaces are this run's own, so every repair in them is this run's)
            meta.setdefault("cc_repairs_found", {})[k] = {
                "ssthresh": g1.late_ssthresh - g0.late_ssthresh,
                "cwnd": g1.late_cwnd - g0.late_cwnd,
                "ca_states": [s for s in range(8) if g1.late_states >> s & 1]}
            reasons.append(f"{k}: {g1.late - g0.late} corrupted ssthresh/cwnd values repaired "
                           "by its guard during the run")
    reasons += noise
    meta["valid"] = not reasons
    meta["invalid_reasons"] = reasons
    meta["noise_reasons"] = noise
    _store_run(rd, tables, meta)
    return meta


def _bottleneck_meta(study: Study) -> dict:
    b = study.bottleneck
    d = {"rate_bps": b.rate_bps, "delay_s": b.delay_s, "jitter_s": b.jitter_s, "loss": b.loss,
         "queue": b.queue, "ecn": b.ecn, "aqm": b.aqm}
    d["buffer_packets" if b.buffer.kind == "packets" else "buffer_bytes"] = b.buffer.size
    return d


def _flows_meta(study: Study, kernel_names: dict, pf: dict) -> list[dict]:
    out = []
    algs = algorithms_of(study)
    for i, f in enumerate(study.flows):
        if f.kind == "command":
            continue
        src = pf["algorithms"].get(f.cc, {}).get("source")
        out.append({"flow": i, "name": f.name, "kind": f.kind, "from": f.src, "to": f.dst,
                    "cc": f.cc, "cc_kernel": kernel_names.get(f.cc, f.cc), "cc_source": src,
                    "receiver_cc": algs[i][1] if f.kind in ("bulk", "parallel", "paced")
                    else algs[i][0], "conns": f.conns, "start_s": f.start_s,
                    "stop_s": f.stop_s if f.stop_s is not None else study.duration_s,
                    "size": f.size, "count": f.count})
    return out


def _collect(raw: Path, tables: dict, meta: dict, reasons: list[str], noise: list[str],
             study: Study) -> None:
    """Read every part's raw output into tables; check what the kernel says it ran. The
    machine-noise checks' findings go to `noise`, the others to `reasons` (execute_run
    joins them)."""
    parts = {k: [] for k in ("tcpinfo", "rx", "rr", "conns", "udp")}
    engines = {}
    for hd in sorted(p for p in raw.glob("*") if p.is_dir() and p.name not in ("logs", "link")):
        for k in ("tcpinfo", "rx", "rr", "udp"):
            df = records.read_bin(hd / f"{k}.bin")
            if df is not None and len(df):
                df.insert(0, "host", hd.name)
                parts[k].append(df)
        c = records.read_jsonl(hd / "conns.jsonl")
        if c is not None and len(c):
            c.insert(0, "host", hd.name)
            parts["conns"].append(c)
        ej = hd / "engine.json"
        if ej.exists():
            engines[hd.name] = json.loads(ej.read_text())
            # a CPU-limited host's gaps are the study's own doing, not noise
            limited = hd.name in (meta.get("host_limits") or {})
            (reasons if limited else noise).extend(
                validity.check_engine(hd.name, engines[hd.name]))
    for k, v in parts.items():
        if v:
            tables[k] = pd.concat(v, ignore_index=True)
    if "udp" in tables:      # -> the ping table's shape: probe, seq, rtt_s (NaN: no echo)
        u = tables["udp"]
        names = {PROBE_FLOW_ID + j: p.name for j, p in enumerate(study.probes)}
        lost = u["rtt_ns"] == 0xFFFFFFFFFFFFFFFF
        tables["udp"] = pd.DataFrame({
            "t_ns": u["t_ns"], "probe": u["flow"].map(names), "seq": u["seq"],
            "rtt_s": u["rtt_ns"].where(~lost).astype(float) / 1e9})
    trace = records.read_bin(raw / "trace" / "tcpprobe.bin")
    if trace is not None and len(trace):
        trace = trace.sort_values("t_ns", kind="stable").reset_index(drop=True)
        tables["tcpprobe"] = trace
    meta["engines"] = engines
    link_dir = raw / "link"
    if link_dir.is_dir():
        for k in ("link_stats", "link_events"):
            df = records.read_bin(link_dir / f"{k}.bin")
            if df is not None and len(df):
                tables[k] = df
        lj = link_dir / "link.json"
        if lj.exists():
            meta["link"] = json.loads(lj.read_text())
            noise += validity.check_link(meta["link"], meta.get("link_ingress"))
    noise += validity.check_cpu(meta.get("cpu", {}))
    reasons += _check_algorithms(tables.get("conns"), meta)
    t0 = meta.get("t0_ns")
    for k, df in tables.items():
        df.insert(0, "run_id", meta["run_id"])
        if t0 and "t_ns" in df.columns:
            df["t"] = (df["t_ns"].astype("int64") - int(t0)) / 1e9


def _check_algorithms(conns: pd.DataFrame | None, meta: dict) -> list[str]:
    """The data sender of each flow must have run the algorithm asked for (kernel's word)."""
    if conns is None or not len(conns) or "cc" not in conns:
        return []
    out = []
    for f in meta["flows"]:
        rows = conns[(conns["flow"] == f["flow"]) & (conns.get("side") == "send")]
        got = set(rows["cc"].dropna())
        if got and got != {f["cc_kernel"]}:
            out.append(f"flow {f['name']}: asked for {f['cc_kernel']}, the kernel ran "
                       f"{', '.join(sorted(got))}")
    return out


def _store_run(rd: Path, tables: dict, meta: dict) -> None:
    from ccarena.metrics import run_metrics
    for k, df in tables.items():
        df.to_parquet(rd / f"{k}.parquet", index=False)
    try:
        flows, run = run_metrics(tables, meta)
        flows.to_parquet(rd / "flow_metrics.parquet", index=False)
        run["valid"] = meta["valid"]
        write_json(rd / "metrics.json", run)
    except Exception as e:  # keep the raw data even when a metric fails
        meta.setdefault("invalid_reasons", []).append(f"metrics failed: {e}")
        meta["valid"] = False
    write_json(rd / "meta.json", meta)   # last: marks the run complete


class _Progress:
    def __init__(self, total: int, name: str):
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)
        self.p = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                          MofNCompleteColumn(), TextColumn("{task.fields[run]}"),
                          TimeRemainingColumn(), transient=False)
        self.p.start()
        self.task = self.p.add_task(name, total=total, run="")
        self.n = 0

    def update(self, r: PlannedRun):
        if self.n:
            self.p.advance(self.task)
        self.n += 1
        params = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in r.params.items())
        self.p.update(self.task, run=f"{r.label} {params}")

    def rerun(self, r: PlannedRun, k: int):
        self.p.update(self.task, run=f"{r.label} again (re-run {k}: the machine's noise "
                      "made it invalid)")

    def close(self):
        if self.n:
            self.p.advance(self.task)
        self.p.stop()
