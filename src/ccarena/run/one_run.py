"""One run: build the testbed, run its parts (run/parts.py) around a common t0, collect,
compute the run's metrics, store.

    execute_run(planned_run, results, backend, kernel_names, preflight) -> meta

The testbed and every part are torn down on success, on error, on a signal (acted on at
the checkpoints here and in the parts' waits: run/interrupt.py) and when the watchdog
stops a run that overran. A run that fails is still stored, with its reasons, and marked
invalid.

Who failed decides what `--resume` does with it. A failure before the workload was
released at t0 (the testbed, a part that did not come up: a program that refused the
configuration ccarena wrote or exited before READY) or in computing its metrics is
ccarena's, not the experiment's: the run was not measured, meta["unmeasured"] says at
which stage, and `--resume` sets it aside and runs it again (store/writer.py
discard_in_flight). A failure after t0 (a process that exits non-zero while the flows
run, a wrong congestion control, a sampler that failed) is what the run measured and
stays, as does a run the machine's noise spoiled (re-run at once: executor.py)."""
from __future__ import annotations

import contextlib
import secrets
import time

from ccarena.errors import CcarenaError
from ccarena.metrics import run_metrics
from ccarena.metrics.anomalies import anomalies
from ccarena.run import interrupt, watchdog
from ccarena.run.collect import collect, guard_counts, judge_guards
from ccarena.run.parts import (START_LEAD_S, TIMED_LINK_LEAD_S, RunContext, UserLink,
                               note_killed, parts_for)
from ccarena.store.layout import RUN_RAW
from ccarena.store.manifest import MANIFEST_VERSION
from ccarena.store.writer import Writer
from ccarena.study.impair import record as impairments_record
from ccarena.study.plan import PlannedRun
from ccarena.study.model import Study
from ccarena.testbed import netns
from ccarena.testbed.build import Testbed
from ccarena.testbed.topology import plan_dumbbell
from ccarena.workload.engine import algorithms_of

LATE_T0_LEAD_S = 0.01   # setup overran the lead: t0 is moved this far ahead of now


def execute_run(r: PlannedRun, results, backend: str, kernel_names: dict, pf: dict,
                event_log: bool = False, on_testbed=None,
                superseded: list[dict] | None = None, staged: bool = False,
                cpuset: str | None = None, worker: dict | None = None) -> dict:
    """One run, stored under runs/<label>/, or with `staged` in the results' staging
    directory for it (Writer.supersede moves it in). `superseded`: earlier attempts
    of this planned run, set aside for the machine's noise (recorded in meta).
    on_testbed(topology): called once the network is built (for tools watching a run).
    cpuset: the CPUs the run may use when runs share the machine (its hosts are held to
    them; the caller has set this process's affinity to them). worker: where it runs
    (environment.worker(), recorded in meta)."""
    study = r.study
    run_id = _fresh_run_id(results)
    w = Writer(results)
    rd = w.staging_dir(r.label) if staged else w.new_run(r.label)
    topo = plan_dumbbell(run_id, study.pairs, backend)
    meta = _initial_meta(r, run_id, backend, topo, kernel_names, pf)
    if worker:
        meta["worker"] = dict(worker)
    if cpuset is not None:
        meta["cpuset"] = cpuset
    if superseded:
        meta["superseded"] = list(superseded)
    ctx = None
    started = time.time()
    guards0: dict = {}
    inodes: list[int] = []
    tb = None
    order, finish_order = parts_for(study, backend)
    raw = rd / RUN_RAW
    stage = ["setup"]       # until the workload is released at t0: nothing is measured yet
    try:
        with watchdog.bounded(watchdog.limit_s(study.duration_s),
                              raw / "logs" / "watchdog-stacks.txt"), \
                Testbed(topo, study, cpuset=cpuset) as tb:
            interrupt.checkpoint()      # a signal during the build: torn down now
            ctx = RunContext(study=study, topo=topo, testbed=tb, raw=raw, seed=r.seed,
                             kernel_names=kernel_names, event_log=event_log, meta=meta)
            tb.flush_tcp_metrics()
            # the BPF guard counts per network namespace: this run's are these
            inodes = [netns.inode(ns) for ns in topo.namespaces]
            guards0 = guard_counts(kernel_names, inodes)
            if on_testbed:
                on_testbed(topo)
            try:
                _run_parts(ctx, order, finish_order, stage)
            finally:
                for p in reversed(order):
                    p.stop()
    except KeyboardInterrupt:
        meta["interrupted"] = True
        raise
    except CcarenaError as e:
        if ctx is None:
            ctx = RunContext(study=study, topo=topo, testbed=None, raw=raw, seed=r.seed,
                             kernel_names=kernel_names, event_log=event_log, meta=meta)
        ctx.reasons.append(str(e))
        meta["error"] = str(e)
        note_killed(meta, getattr(e, "killed", None))
        if stage[0] == "setup":
            meta["unmeasured"] = {"stage": "setup", "error": str(e)}
        if isinstance(e, watchdog.RunOverrun) and tb is not None:
            # it may have struck during the teardown: finish it (idempotent)
            with contextlib.suppress(Exception):
                tb.teardown()
    meta["wall_start"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))
    meta["wall_s"] = time.time() - started
    collect(ctx)
    judge_guards(ctx, guards0, inodes)
    try:
        meta["anomalies"] = anomalies(ctx.tables, meta)
    except Exception as e:  # noqa: BLE001 — a detector that fails must not lose the run
        meta["anomalies"] = [{"kind": "unchecked", "flow": None, "value": str(e),
                              "what": f"anomalies could not be checked: {e}"}]
    reasons = ctx.reasons + ctx.noise
    meta["valid"] = not reasons
    meta["invalid_reasons"] = reasons
    meta["noise_reasons"] = list(ctx.noise)
    flows, run = _metrics(ctx.tables, meta)
    w.write_run(rd, ctx.tables, flows, run, meta)
    return meta


def _fresh_run_id(results) -> str:
    """6 hex digits (they name the run's namespaces), none a stored run of this study
    has, nor a live run's namespaces."""
    taken = set(results.metas)
    while True:
        rid = secrets.token_hex(3)
        if rid not in taken and not netns.list_names(f"cca{rid}-"):
            return rid


def _run_parts(ctx: RunContext, order, finish_order, stage: list[str]) -> None:
    """prepare, start and go every part, then finish them; stage[0] becomes "measurement"
    once the workload was released at t0."""
    for p in order:
        p.prepare(ctx)
        interrupt.checkpoint()
    # t0 is fixed before the link starts so a rate schedule or trace starts with it
    b = ctx.study.bottleneck
    timed_link = bool(b.rate_schedule or b.trace) and any(isinstance(p, UserLink)
                                                          for p in order)
    lead = TIMED_LINK_LEAD_S if timed_link else START_LEAD_S
    ctx.t0_ns = time.monotonic_ns() + int(lead * 1e9)
    for p in order:
        p.start(ctx)
        interrupt.checkpoint()
    if time.monotonic_ns() >= ctx.t0_ns:      # setup overran the lead: start now, say so
        late = ctx.meta["t0_late_ns"] = time.monotonic_ns() - ctx.t0_ns
        ctx.t0_ns = time.monotonic_ns() + int(LATE_T0_LEAD_S * 1e9)
        if timed_link:
            # the link already counts its schedule from the planned t0: the flows would
            # meet every rate change this much early (the machine was too slow to start)
            ctx.noise.append(f"the setup overran its lead by {late / 1e6:.0f} ms: the "
                             "link's rate schedule or trace would run that far ahead of "
                             "the flows")
    ctx.meta["t0_ns"] = ctx.t0_ns
    for p in order:
        p.go(ctx)
    stage[0] = "measurement"
    for p in finish_order:
        interrupt.checkpoint()
        p.finish(ctx)


def _metrics(tables: dict, meta: dict):
    """The run's flow and run metrics; a metric that fails keeps the raw data and makes
    the run invalid (the failure is a bug to see, not a result)."""
    try:
        flows, run = run_metrics(tables, meta)
        run["valid"] = meta["valid"]
        return flows, run
    except Exception as e:  # noqa: BLE001 — any failure of a formula is reported alike
        meta.setdefault("invalid_reasons", []).append(f"metrics failed: {e}")
        meta["valid"] = False
        meta.setdefault("unmeasured", {"stage": "metrics", "error": f"metrics failed: {e}"})
        return None, None


def _initial_meta(r: PlannedRun, run_id: str, backend: str, topo, kernel_names: dict,
                  pf: dict) -> dict:
    study = r.study
    return {
        "version": MANIFEST_VERSION, "run_id": run_id, "label": r.label, "study": study.name,
        "cell": r.cell, "cell_params": r.params, "rep": r.rep, "index": r.index,
        "seed": r.seed, "backend": backend, "duration_s": study.duration_s,
        "warmup_s": study.warmup_s, "base_rtt_s": study.base_rtt_s,
        "sample_interval_s": study.sample_interval_s,
        "bottleneck": _bottleneck_meta(study), "flows": _flows_meta(study, kernel_names, pf),
        "namespaces": topo.namespaces, "valid": True, "invalid_reasons": [],
    }


def _bottleneck_meta(study: Study) -> dict:
    b = study.bottleneck
    d = {"rate_bps": b.rate_bps, "delay_s": b.delay_s, "jitter_s": b.jitter_s, "loss": b.loss,
         "queue": b.queue, "ecn": b.ecn, "aqm": b.aqm, **impairments_record(b)}
    d["buffer_packets" if b.buffer.kind == "packets" else "buffer_bytes"] = b.buffer.size
    return d


def _flows_meta(study: Study, kernel_names: dict, pf: dict) -> list[dict]:
    out = []
    algs = algorithms_of(study)
    for i, f in enumerate(study.flows):
        if f.kind == "command":
            continue
        alg = pf["algorithms"].get(f.cc, {})
        out.append({"flow": i, "name": f.name, "kind": f.kind, "from": f.src, "to": f.dst,
                    "cc": f.cc, "cc_kernel": kernel_names.get(f.cc, f.cc),
                    "cc_source": alg.get("source"), "cc_variant": alg.get("variant"),
                    "cc_follows": alg.get("follows"),
                    "receiver_cc": algs[i][1] if f.kind in ("bulk", "parallel", "paced")
                    else algs[i][0], "conns": f.conns, "start_s": f.start_s,
                    "stop_s": f.stop_s if f.stop_s is not None else study.duration_s,
                    "size": f.size, "count": f.count})
    return out
