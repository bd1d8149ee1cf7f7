"""Scale-out benchmark (docs/scale-out.md), as root:

    .venv/bin/python benchmarks/scale_out.py [--rounds 2] [--duration 3s] [--rates 20mbit,100mbit]

1. Runs per hour of one short study (2 cells x 2 repetitions, 20 Mbit/s, user link) run
   serially, with --jobs 2, and on a local Dask cluster of two `ccarena worker`s (one CPU
   each, loopback), side by side, alternating for --rounds rounds (the machine's noise
   falls on every mode alike). Per-run overhead = what a run costs a slot beyond its
   duration.
2. The expected wall time of every full published study (studies/*.toml at scale full) on
   1, 8 and 32 workers of one slot: ceil(runs / workers) x (duration + overhead), with the
   serial overhead for 1 worker and the cluster's for more.
3. With --rates: the cores-per-run rule. One bulk flow at each rate, run serially (every
   CPU) and with --jobs N (one share of the CPUs each): invalid runs, the link's late
   packets and goodput over rate, side by side.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ccarena.run.study import run_study
from ccarena.run.scaleout.shares import usable_cpus
from ccarena.store.results import open_results
from ccarena.study.load import load_study
from ccarena.study.plan import make_plan

REPO = Path(__file__).resolve().parents[1]

STUDY = """
[study]
name = "{name}"
duration = "{duration}"
warmup = "0.5s"
repetitions = {reps}
seed = 11
reruns = 0
[bottleneck]
rate = "{rate}"
delay = "5ms"
buffer = "100p"
backend = "user"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "cubic"
{sweep}
"""


def write_study(d: Path, name: str, duration: str, rate="20mbit", reps=2, sweep=True) -> Path:
    p = d / f"{name}.toml"
    p.write_text(STUDY.format(name=name, duration=duration, rate=rate, reps=reps, sweep=(
        '[sweep]\n"bottleneck.buffer" = ["50p", "100p"]' if sweep else "")))
    return p


def wait_for(pred, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise SystemExit(f"scale_out: timed out waiting for {what}")


class LocalCluster:
    """A Dask scheduler and one `ccarena worker` per CPU, as separate processes."""

    def __init__(self, d: Path, cpus: list[int]):
        self.procs = []
        f = d / "scheduler.json"
        self.log = open(d / "cluster.log", "w")
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--scheduler-file", str(f)],
            stdout=self.log, stderr=subprocess.STDOUT))
        wait_for(lambda: f.exists() and f.stat().st_size, 60, "the scheduler")
        time.sleep(0.2)
        self.address = json.loads(f.read_text())["address"]
        for c in cpus:
            log = d / f"worker{c}.log"
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "ccarena.cli", "worker", self.address, "--cpus", str(c)],
                stdout=open(log, "w"), stderr=subprocess.STDOUT))
            wait_for(lambda: "ccarena worker ready" in log.read_text(), 120, f"worker {c}")

    def close(self):
        for p in reversed(self.procs):
            p.send_signal(signal.SIGINT if p is not self.procs[0] else signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


def timed(study_path: Path, base: Path, **kw) -> tuple[float, object]:
    t0 = time.monotonic()
    res = run_study(load_study(study_path), results_base=base, progress=False, **kw)
    return time.monotonic() - t0, open_results(res.path)


def throughput(args, d: Path) -> dict:
    study = write_study(d, "bench", args.duration)
    n = len(make_plan(load_study(study)).runs)
    dur = load_study(study).duration_s
    cpus = usable_cpus()[:2]
    cluster = LocalCluster(d, cpus)
    modes = {"serial": {"slots": 1}, "jobs 2": {"jobs": 2, "slots": 2},
             "cluster 2 workers": {"cluster": cluster.address, "slots": 2}}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    invalid: dict[str, int] = {m: 0 for m in modes}
    try:
        for k in range(args.rounds):
            for m, kw in modes.items():
                kw = {k2: v for k2, v in kw.items() if k2 != "slots"}
                wall, res = timed(study, d / "results", **kw)
                walls[m].append(wall)
                invalid[m] += int((~res.runs["valid"].astype(bool)).sum())
                print(f"  round {k + 1} {m:18s} {wall:6.1f} s for {n} runs", flush=True)
    finally:
        cluster.close()
    out = {}
    print(f"\n{n} runs of {dur:g} s, 20 Mbit/s, user link; {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'mode':18s} {'wall s (mean)':>14s} {'runs/hour':>10s} {'vs serial':>10s} "
          f"{'overhead s/run/slot':>20s} {'invalid':>8s}")
    base = sum(walls["serial"]) / len(walls["serial"])
    for m, kw in modes.items():
        w = sum(walls[m]) / len(walls[m])
        over = w * kw["slots"] / n - dur
        out[m] = {"wall_s": w, "runs_per_hour": n / w * 3600, "overhead_s": over}
        print(f"{m:18s} {w:14.1f} {n / w * 3600:10.0f} {base / w:9.2f}x {over:20.1f} "
              f"{invalid[m]:8d}")
    return out


def full_studies(over_serial: float, over_cluster: float) -> None:
    print(f"\nexpected wall time of the full published studies (per-run overhead "
          f"{over_serial:.1f} s serial, {over_cluster:.1f} s on a cluster worker):")
    print(f"{'study':30s} {'runs':>5s} {'run s':>6s} {'1 worker':>10s} {'8 workers':>10s} "
          f"{'32 workers':>11s}")
    for p in sorted((REPO / "studies").glob("*.toml")):
        try:
            st = load_study(p, scale="full")
        except Exception:       # noqa: BLE001 — a study without a full scale
            continue
        n, dur = len(make_plan(st).runs), st.duration_s
        row = [n * (dur + over_serial)] + [math.ceil(n / w) * (dur + over_cluster)
                                           for w in (8, 32)]
        print(f"{st.name:30s} {n:5d} {dur:6.0f} " + " ".join(
            f"{_hms(s):>10s}" for s in row))


def _hms(s: float) -> str:
    if s < 60:
        return f"{s:.0f}s"
    h, m = divmod(int(round(s / 60)), 60)
    return f"{h}h{m:02d}" if h else f"{m}m"


def cores_rule(args, d: Path) -> None:
    jobs = len(usable_cpus())
    print(f"\ncores per run: one bulk flow, serial (all {jobs} CPUs) against --jobs {jobs} "
          f"(1 CPU each), {args.duration} runs")
    print(f"{'rate':>8s} {'mode':>8s} {'invalid':>8s} {'late pkts %':>12s} "
          f"{'goodput/rate':>13s}")
    for rate in args.rates.split(","):
        study = write_study(d, f"rule-{rate}", args.duration, rate=rate, reps=jobs * 2,
                            sweep=False)
        for mode, kw in (("serial", {}), (f"jobs {jobs}", {"jobs": jobs})):
            _, res = timed(study, d / "results", **kw)
            metas = list(res.metas.values())
            late = sum((m.get("link") or {}).get("late_packets", 0) or 0 for m in metas)
            fwd = sum((m.get("link") or {}).get("forwarded", 0) or 0 for m in metas)
            bad = sum(not m["valid"] for m in metas)
            good = res.runs["goodput_bps"].mean() / load_study(study).bottleneck.rate_bps
            print(f"{rate:>8s} {mode:>8s} {bad:>4d}/{len(metas):<3d} "
                  f"{100 * late / max(fwd, 1):12.3f} {good:13.3f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--rates", default="", help="e.g. 20mbit,100mbit: the cores-per-run rule")
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("scale_out: needs root (network namespaces)", file=sys.stderr)
        return 1
    if len(usable_cpus()) < 2:
        print("scale_out: needs 2 CPUs or more", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="ccarena-scale-") as tmp:
        d = Path(tmp)
        if not args.skip_throughput:
            out = throughput(args, d)
            full_studies(out["serial"]["overhead_s"], out["cluster 2 workers"]["overhead_s"])
        if args.rates:
            cores_rule(args, d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
