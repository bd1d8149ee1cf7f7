"""Benchmark: all metrics of a 32-flow, 60 s run sampled every 10 ms (target < 2 s).

Usage: PYTHONPATH=src python benchmarks/metrics_speed.py [--flows 32] [--duration 60]
Prints the table sizes and the best of a few timings (this machine is noisy, so the
minimum is the honest figure for the code itself)."""
import argparse
import time

from ccarena.metrics import goodput_series, jain_series, run_metrics
from ccarena.analysis.synthetic import synthetic_run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=32)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=2.0)
    a = ap.parse_args()
    tables, meta = synthetic_run(n_flows=a.flows, duration_s=a.duration, dt=0.01)
    print("rows:", {k: len(v) for k, v in tables.items()})
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        flows, run = run_metrics(tables, meta)
        goodput_series(tables["rx"], meta)
        jain_series(tables["rx"], meta)
        times.append(time.perf_counter() - t0)
    best = min(times)
    # a yardstick measured side by side, since these machines are noisy: one plain pandas
    # pass over the same rows (sort + per-connection mean of every column)
    yard = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        for name in ("tcpinfo", "rx"):
            d = tables[name].sort_values(["flow", "conn", "t"])
            d.groupby(["flow", "conn"]).mean(numeric_only=True)
        yard.append(time.perf_counter() - t0)
    print(f"run_metrics + series: best {best:.3f} s, all {[round(x, 3) for x in times]}"
          f" ({len(flows)} flow rows, {len(run)} run metrics); budget {a.budget} s: "
          f"{'OK' if best < a.budget else 'OVER'}")
    print(f"yardstick (sort + groupby mean of the same rows): best {min(yard):.3f} s; "
          f"metrics cost {best / min(yard):.1f}x the yardstick")
    return 0 if best < a.budget else 1


if __name__ == "__main__":
    raise SystemExit(main())
