#!/usr/bin/env python3
"""18.3: each BPF congestion control (bpf/cc) against the kernel's own module of the same
name, side by side. Needs a kernel that has both: the reference kernel,
    ccarena vm -- python benchmarks/verify/bpf_vs_native.py [--reps N] [ALG...]
(make verify does).

Per algorithm one bulk flow through 5 Mbit/s (`--rate`), 40 ms RTT, a buffer of one BDP
for 8 s (2 s warm-up), run with --cc-source kernel and bpf alternately, `--reps` times
each. Compared: goodput, mean srtt, retransmitted share of bytes, mean cwnd; Welch's t
over the runs. Tolerance: goodput and mean cwnd within 10 %, srtt within 15 %,
retransmission share within 0.5 percentage points or 50 % — past it, DISAGREE. Runs
flagged invalid are left out and counted."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import md, mean_sd, run, study_text, verdict, welch  # noqa: E402

from ccarena.errors import CcarenaError  # noqa: E402

ALGS = ["bic", "cubic", "dctcp", "highspeed", "htcp", "hybla", "illinois", "lp", "reno",
        "scalable", "vegas", "veno", "westwood", "yeah"]
METRICS = [("goodput Mbit/s", "goodput_bps", 1e-6, "rel", 0.10),
           ("srtt ms", "rtt_mean_s", 1e3, "rel", 0.15),
           ("retrans %", "retrans_ratio", 100.0, "retrans", None),
           ("cwnd pkts", "cwnd_mean_pkts", 1.0, "rel", 0.10)]


def one(alg: str, reps: int, rate_mbit: float) -> tuple[list[dict], list[str]]:
    # a guest under TCG carried ~5.5 Mbit/s of a 20 Mbit/s bottleneck (its CPU, not the
    # network, was the limit, and that measures the algorithms' CPU cost): keep it low
    bdp = max(4, round(rate_mbit * 1e6 * 0.040 / 8 / 1514))
    text = study_text(f"verify-bpf-{alg}", f'rate = "{rate_mbit:g}mbit"\nrtt = "40ms"\n'
                      f'buffer = "{bdp}p"',
                      flows=[("bulk", alg, "s1", "r1")], duration="8s", warmup="2s",
                      repetitions=1)
    got = {"kernel": [], "bpf": []}
    notes = []
    for _ in range(reps):
        for src in ("kernel", "bpf"):
            try:
                # one study run per source and repetition: nothing stored to reuse by name
                res = run(text, reuse=False, force_cc=src)
            except CcarenaError as e:
                notes.append(f"{alg} ({src}): {e}")
                continue
            f = res.flows
            f = f[f["conn"] == -1].copy()
            f["valid"] = res.runs["valid"].iloc[0]
            got[src].append(f)
    rows = []
    k = pd.concat(got["kernel"]) if got["kernel"] else pd.DataFrame()
    b = pd.concat(got["bpf"]) if got["bpf"] else pd.DataFrame()
    inv = sum(int((~x["valid"].astype(bool)).sum()) for x in (k, b) if not x.empty)
    if inv:     # left out and counted, never averaged in
        notes.append(f"{alg}: {inv} run(s) flagged invalid, left out")
        k = k[k["valid"].astype(bool)] if not k.empty else k
        b = b[b["valid"].astype(bool)] if not b.empty else b
    for label, col, scale, kind, tol in METRICS:
        if k.empty or b.empty or col not in k or col not in b:
            rows.append({"alg": alg, "metric": label, "native": "–", "bpf": "–",
                         "Welch p": float("nan"), "verdict": "not measured"})
            continue
        x, y = k[col].astype(float) * scale, b[col].astype(float) * scale
        pv = welch(x, y)
        d = abs(x.mean() - y.mean())
        if kind == "rel":
            within = d <= tol * max(abs(x.mean()), abs(y.mean()), 1e-12)
            t = f"±{tol:.0%}"
        else:
            within = d <= max(0.5, 0.5 * max(x.mean(), y.mean()))
            t = "±0.5 pp or 50 %"
        rows.append({"alg": alg, "metric": label, "native": mean_sd(x), "bpf": mean_sd(y),
                     "Welch p": pv, "verdict": f"{verdict(within, pv, samples=(x, y))} ({t})"})
    return rows, notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rate", type=float, default=5.0, help="bottleneck Mbit/s (default 5)")
    ap.add_argument("algs", nargs="*", help=f"default: {' '.join(ALGS)}")
    a = ap.parse_args()
    import platform
    from ccarena.run.environment import machine
    vm = machine().get("vm") or {}
    print(f"## BPF algorithms vs the kernel's modules\n\nKernel {platform.release()}"
          + (f" in ccarena's VM ({vm.get('accel')})" if vm else "")
          + f"; one bulk flow, {a.rate:g} Mbit/s, 40 ms RTT, 1-BDP buffer, 8 s; "
          f"{a.reps} runs per source, alternating.\n", flush=True)
    rows, notes = [], []
    for alg in a.algs or ALGS:
        r, n = one(alg, a.reps, a.rate)
        rows += r
        notes += n
        print(md(r, ["alg", "metric", "native", "bpf", "Welch p", "verdict"]) + "\n",
              flush=True)
    print("### All\n\n" + md(rows, ["alg", "metric", "native", "bpf", "Welch p", "verdict"]))
    bad = sorted({r["alg"] for r in rows if "DISAGREE" in r["verdict"]})
    print(f"\nDisagree: {', '.join(bad) or 'none'}")
    for n in notes:
        print(f"- {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
