"""Draw the example figures of docs/metrics.md from synthetic data and time them.
Update the docs with: PYTHONPATH=src python benchmarks/metrics_figures.py docs/img
(default OUT_DIR: bench-out/metrics-figures, so `make bench` leaves the tree alone).

The data are synthetic (ccarena.metrics.synthetic): the figures show what each plot
looks like, not results. PNGs are quantised to a small palette to keep the repo light."""
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ccarena.report import figures as plots
from ccarena.analysis import cell_stats
from ccarena.metrics import run_metrics
from ccarena.metrics.series import convergence_series
from ccarena.analysis.synthetic import synthetic_run


def shrink(p: Path) -> None:
    try:
        from PIL import Image
    except ImportError:
        return
    im = Image.open(p).convert("RGB").quantize(colors=48)
    im.save(p, optimize=True)


def main() -> int:
    # default outside the tree: `make bench` runs every benchmark; docs/img only on request
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out/metrics-figures")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(7)
    tables, meta = synthetic_run(n_flows=3, duration_s=20, stagger_s=4, shares=[1, .8, .6],
                                 ccs=("cubic", "reno", "bbr"))
    save = plots.save
    made = [save(plots.timeseries(tables, meta), out / "metrics-timeseries.png")]
    runs = []
    for buf in (10, 20, 50, 100, 200):
        for cc in ("reno", "cubic"):
            for rep in range(4):
                t, m = synthetic_run(n_flows=2, duration_s=6, buffer_pkts=buf, ccs=(cc,),
                                     seed=int(rng.integers(1e6)), run_id=f"{buf}{cc}{rep}",
                                     cell=f"{buf}p-{cc}", rep=rep,
                                     shares=[1, 0.5 if cc == "reno" else 0.8])
                _, r = run_metrics(t, m)
                runs.append({"bottleneck.buffer": f"{buf}p", "flow.bulk.cc": cc, **r})
    runs = pd.DataFrame(runs)
    st = cell_stats(runs, ["bottleneck.buffer", "flow.bulk.cc"], ["goodput_bps", "rtt_mean_s"])
    made.append(save(plots.metric_vs_factor(st, "bottleneck.buffer", "rtt_mean_s",
                                            hue="flow.bulk.cc"), out / "metrics-vs-factor.png"))
    made.append(save(plots.box(runs, "cell", "jain"), out / "metrics-box.png"))
    made.append(save(plots.cdf(runs, "rtt_mean_s", hue="flow.bulk.cc"),
                     out / "metrics-cdf.png"))
    algs = ["reno", "cubic", "bbr", "vegas"]
    pair = pd.DataFrame([{"flow 0 cc": a, "flow 1 cc": b,
                          "share": 0.5 if a == b else float(rng.uniform(0.2, 0.8))}
                         for a in algs for b in algs])
    made.append(save(plots.heatmap(pair, "flow 0 cc", "flow 1 cc", "share", vmin=0, vmax=1,
                                   cmap="coolwarm", title="share of flow 0 (mean over runs)"),
                     out / "metrics-heatmap.png"))
    fair = pd.DataFrame([{"n_flows": n, "cc": cc,
                          "jain": min(1.0, 1 - (0.02 if cc == "cubic" else 0.05) * np.log2(n)
                                      + rng.normal(0, 0.02))}
                         for n in (2, 4, 8, 16, 32) for cc in ("reno", "cubic")
                         for _ in range(4)])
    made.append(save(plots.fairness_vs_flows(fair, "n_flows", hue="cc"),
                     out / "metrics-fairness.png"))
    made.append(save(plots.throughput_delay(runs, "flow.bulk.cc", delay="rtt_p95_s"),
                     out / "metrics-throughput-delay.png"))
    flows = pd.DataFrame([{"cell": f"{b}p", "name": f"bulk{i}", "conn": -1, "valid": True,
                           "goodput_bps": float(rng.normal((6 - 2 * i) * 1e6, 2e5))}
                          for b in (20, 100) for i in range(2) for _ in range(5)])
    made.append(save(plots.box_per_flow(flows, "goodput_bps", by="cell"),
                     out / "metrics-box-per-flow.png"))
    w, t_c = convergence_series(tables["rx"], meta)
    made.append(save(plots.convergence(w.assign(t_c=t_c, label="run r0")),
                     out / "metrics-convergence.png"))
    for p in made:
        shrink(p)
        print(f"{p}  {p.stat().st_size} bytes")
    print(f"{len(made)} figures in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
