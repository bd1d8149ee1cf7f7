#!/usr/bin/env python3
"""Each BPF congestion control (bpf/cc) against the kernel's own module of the same
name, on the same guest kernel and link. Needs a kernel that has both: the reference
kernel,
    ccarena vm -- python verify/bpf_vs_native.py [--reps N] [ALG...]
(make verify does).

Per algorithm and scenario one study sweeps the algorithm over the kernel's module
(`<alg>`) and the BPF one (`cca_<alg>`), so the two sources' runs interleave, shuffled,
in one results directory. The kernel link backend (htb + netem: the reference kernel's
own emulation), `--rate` Mbit/s (default 2: what a guest under QEMU's TCG carries,
docs/vm.md) and `--rtt` ms (default 80: windows of 13-26 segments, so a halving is
not lost in rounding), a droptail buffer of one BDP, TCP_INFO every 50 ms:

  loss      one bulk flow, random loss `--loss` towards the receiver; the per-ACK trace
            (tcp_probe) of the sender gives the reduction factor at each loss
            (ssthresh / cwnd just before) and the growth per RTT in each
            congestion-avoidance epoch (slope of cwnd x srtt) — the helpers of
            tests/integration/ccsig.py; TCP_INFO gives goodput, mean srtt and the
            retransmitted share of bytes
  download  1 MB (10^6 bytes) downloads back to back, the server on the algorithm:
            the time of each completed download
  pair      two bulk flows of the algorithm: Jain's index of their goodputs, and the
            link's utilisation
  vs-reno   one flow of the algorithm and one of the kernel's reno (the same reno for
            both sources): the algorithm's share of their goodput

A figure is compared through the difference bpf - native and its 90 % interval (Welch's
over runs for per-run figures; a bootstrap of the medians for per-event figures:
reductions, epochs, downloads). Verdict: agree when the whole interval lies inside the
figure's tolerance (equivalence shown: two one-sided tests at 5 %), DISAGREE when it
lies wholly outside, unresolved otherwise. Tolerances (TOLERANCE below): reduction
factor ±0.05 (a cut rounds to whole segments: 1/w at w ~ 20), growth per RTT ±20 %
(and ±0.1 segment), goodput, srtt ±10 %, retransmitted share ±0.3 percentage points or
30 %, download time ±15 %, Jain ±0.05, utilisation ±5 %, share against reno ±0.08.
Runs flagged invalid are left out and counted, with their reasons."""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))
from common import _short, diff_ci, equivalence, md, measured_note, run  # noqa: E402

import ccsig  # noqa: E402  (reductions, CA epochs, growth per RTT from the per-ACK trace)
from ccarena.errors import CcarenaError  # noqa: E402

ALGS = ["bic", "cubic", "dctcp", "highspeed", "htcp", "hybla", "illinois", "lp", "reno",
        "scalable", "vegas", "veno", "westwood", "yeah"]
SCENARIOS = ("loss", "download", "pair", "vs-reno")
# figure -> (scenario, label, unit scale, "runs" (mean over runs) | "events" (median of
# pooled events), absolute tolerance, relative tolerance: the larger one is used)
TOLERANCE = {
    "reduction": ("loss", "reduction factor", 1.0, "events", 0.05, 0.0),
    "growth": ("loss", "growth seg/RTT", 1.0, "events", 0.1, 0.20),
    "goodput": ("loss", "goodput Mbit/s", 1e-6, "runs", 0.0, 0.10),
    "srtt": ("loss", "srtt ms", 1e3, "runs", 0.0, 0.10),
    "retrans": ("loss", "retrans %", 100.0, "runs", 0.3, 0.30),
    "download": ("download", "1 MB download s", 1.0, "events", 0.0, 0.15),
    "jain": ("pair", "Jain (2 flows)", 1.0, "runs", 0.05, 0.0),
    "util": ("pair", "utilisation", 1.0, "runs", 0.0, 0.05),
    "share": ("vs-reno", "share vs reno", 1.0, "runs", 0.08, 0.0),
}
SHORT = {"reduction": "cut", "growth": "growth", "goodput": "goodput", "srtt": "srtt",
         "retrans": "retrans", "download": "download", "jain": "Jain", "util": "util",
         "share": "vs reno"}


def study(alg: str, scenario: str, a) -> str:
    """The scenario's study for `alg`: its kernel module and its BPF version swept."""
    rate = a.rate * 1e6
    bdp = max(4, round(rate * a.rtt / 1e3 / 8 / 1514))
    loss = f'\nloss = "{a.loss:g}%"' if scenario == "loss" else ""
    # the sharing scenarios need less time than the loss one needs for its epochs and
    # the download one for its downloads (~4.5 s each at 2 Mbit/s)
    dur, warm = {"loss": (a.duration, 2), "download": (a.duration, 0),
                 "pair": (0.75 * a.duration, 3), "vs-reno": (0.75 * a.duration, 3)}[scenario]
    text = textwrap.dedent(f'''
        [study]
        name = "verify-bpf-{scenario}-{alg}"
        duration = "{dur:g}s"
        warmup = "{warm}s"
        repetitions = {a.reps}
        seed = 31
        reruns = 0
        sample_interval = "50ms"
        [bottleneck]
        backend = "kernel"
        rate = "{a.rate:g}mbit"
        rtt = "{a.rtt:g}ms"
        buffer = "{bdp}p"{loss}
        ''')
    if alg == "dctcp":
        # the kernel's dctcp needs ECN negotiated, else it falls back to "dctcp-reno";
        # with a droptail buffer nothing is marked, so it reacts to losses only
        text += "[tcp]\necn = 1\n"
    key = "flow.x.cc"
    if scenario == "loss":
        text += _flow("x", "s1", "r1") + '[[probe]]\nkind = "tcp_probe"\nhosts = ["s1"]\n'
    elif scenario == "download":
        text += _flow("x", "r1", "s1", 'kind = "download"\nsize = "1000000"')
    elif scenario == "pair":
        text += _flow("x", "s1", "r1") + _flow("y", "s1", "r1")
        key = "hosts.s1.cc"
    else:
        text += _flow("x", "s1", "r1") + _flow("reno", "s1", "r1", 'cc = "reno"')
    return text + f'[sweep]\n"{key}" = ["{alg}", "cca_{alg}"]\n'


def _flow(name, src, dst, extra="") -> str:
    """A [[flow]]; without a `cc` it runs the swept one (flow.x.cc, or its host's)."""
    return (f'[[flow]]\nname = "{name}"\nfrom = "{src}"\nto = "{dst}"\n'
            + (extra + "\n" if extra else ""))


def samples(res, scenario: str) -> tuple[dict, list[str]]:
    """{(figure, source): values} from the valid runs, and notes on the invalid ones."""
    out: dict = {}
    bad = {"native": [], "bpf": []}
    n_bad = {"native": 0, "bpf": 0}
    for d in res.run_dirs():
        m = res.run_meta(d)
        m["_dir"] = d
        src = "bpf" if any(str(v).startswith("cca_") for v in m["cell_params"].values()) \
            else "native"
        if not m["valid"]:
            n_bad[src] += 1
            bad[src] += [_short(r) for r in m["invalid_reasons"]]
            continue
        f = pd.read_parquet(d / "flow_metrics.parquet")
        top = f[f["conn"] == -1].set_index("name")
        add = lambda k, v: out.setdefault((k, src), []).extend(np.atleast_1d(v).tolist())  # noqa: E731
        if scenario == "loss":
            tr = ccsig.sender_trace(m)
            red = ccsig.reductions(tr)
            add("reduction", red[red["t"] > m["warmup_s"]]["ratio"].to_numpy())
            add("growth", [ccsig.per_rtt_increase(e) for e in
                           ccsig.ca_epochs(tr, t_from=m["warmup_s"], min_s=0.5)])
            x = top.loc["x"]
            add("goodput", x["goodput_bps"])
            add("srtt", x["rtt_mean_s"])
            add("retrans", x["retrans_ratio"])
        elif scenario == "download":
            add("download", f[(f["conn"] >= 0) & (f["name"] == "x")]["fct_s"].dropna()
                .to_numpy())
        elif scenario == "pair":
            r = ccsig.run_metrics(m)
            add("jain", r["jain"])
            add("util", r["utilisation"])
        else:
            g = top["goodput_bps"]
            add("share", g["x"] / (g["x"] + g["reno"]))
    notes = [f"{n_bad[s]} {s} run(s) flagged invalid, left out: "
             f"{'; '.join(sorted(set(bad[s])))}" for s in bad if n_bad[s]]
    return out, notes


def judge(alg: str, got: dict) -> list[dict]:
    rows = []
    for fig, (scen, label, scale, kind, tol_abs, tol_rel) in TOLERANCE.items():
        x = np.asarray(got.get((fig, "native"), []), float) * scale
        y = np.asarray(got.get((fig, "bpf"), []), float) * scale
        x, y = x[~np.isnan(x)], y[~np.isnan(y)]
        stat = "median" if kind == "events" else "mean"
        ci = diff_ci(x, y, stat=stat)
        center = (np.median(x) if stat == "median" else x.mean()) if len(x) else np.nan
        # tolerances are in the table's units (retrans: percentage points)
        tol = max(tol_abs, tol_rel * abs(center)) if len(x) else np.nan
        v = equivalence(ci, tol) if len(x) else "not measured"
        rows.append({"alg": alg, "figure": label, "key": fig,
                     "native": _summ(x, stat), "bpf": _summ(y, stat),
                     "Δ [90 % CI]": (f"{ci[0]:+.3g} [{ci[1]:+.3g}, {ci[2]:+.3g}]"
                                     if not np.isnan(ci[1]) else "–"),
                     "tolerance": f"±{tol:.3g}" if not np.isnan(tol) else "–",
                     "verdict": v})
    return rows


def _summ(x: np.ndarray, stat: str) -> str:
    if not len(x):
        return "–"
    if stat == "median":
        return f"{np.median(x):.3g} (n {len(x)})"
    return f"{x.mean():.3g} ± {x.std(ddof=1):.2g}" if len(x) > 1 else f"{x.mean():.3g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="runs per source and scenario")
    ap.add_argument("--rate", type=float, default=2.0, help="bottleneck Mbit/s (default 2)")
    ap.add_argument("--rtt", type=float, default=80.0, help="base RTT ms (default 80)")
    ap.add_argument("--loss", type=float, default=0.2,
                    help="random loss %% in the loss scenario (default 0.2)")
    ap.add_argument("--duration", type=float, default=20.0,
                    help="seconds per run of the loss and download scenarios; the sharing "
                         "ones run 3/4 of it (default 20)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help=f"comma-separated subset of {','.join(SCENARIOS)}")
    ap.add_argument("algs", nargs="*", help=f"default: {' '.join(ALGS)}")
    a = ap.parse_args()
    scen = [s for s in a.scenarios.split(",") if s]
    for s in scen:
        if s not in SCENARIOS:
            ap.error(f"--scenarios: {s!r} is none of {', '.join(SCENARIOS)}")
    bdp = max(4, round(a.rate * 1e6 * a.rtt / 1e3 / 8 / 1514))
    print(f"## BPF algorithms vs the kernel's modules\n\nKernel link backend, {a.rate:g} "
          f"Mbit/s, {a.rtt:g} ms RTT, droptail buffer {bdp} packets (1 BDP), {a.duration:g} s per "
          f"run ({0.75 * a.duration:g} s for the two sharing scenarios); {a.reps} runs per "
          f"source and scenario, both sources interleaved in one study; random loss {a.loss:g} % in "
          "the loss scenario.\n", flush=True)
    rows, notes, failed = [], [], []
    cols = ["alg", "figure", "native", "bpf", "Δ [90 % CI]", "tolerance", "verdict"]
    for alg in a.algs or ALGS:
        got = {}
        for s in scen:
            try:
                res = run(study(alg, s, a))
            except CcarenaError as e:
                notes.append(f"{alg} {s}: {e}")
                failed.append(f"{alg} {s}")
                continue
            g, n = samples(res, s)
            got.update(g)
            notes += [f"{alg} {s}: {x}" for x in n]
        r = [x for x in judge(alg, got) if TOLERANCE[x["key"]][0] in scen]
        rows += r
        print(md(r, cols) + "\n", flush=True)
    figs = [k for k, v in TOLERANCE.items() if v[0] in scen]
    matrix = []
    for alg in a.algs or ALGS:
        line = {"alg": alg}
        for r in rows:
            if r["alg"] == alg:
                line[SHORT[r["key"]]] = _mark(r["verdict"])
        matrix.append(line)
    print("### Verdicts\n\n" + md(matrix, ["alg"] + [SHORT[k] for k in figs]))
    bad = sorted({f"{r['alg']} ({r['figure']})" for r in rows if "DISAGREE" in r["verdict"]})
    print(f"\nDisagree: {', '.join(bad) or 'none'}")
    for n in notes:
        print(f"- {n}")
    print("\n" + measured_note())
    if failed:
        print(f"bpf_vs_native: {len(failed)} scenario(s) could not run: {', '.join(failed)}",
              file=sys.stderr)
    return 1 if failed else 0


def _mark(v: str) -> str:
    return {"agree": "agree", "DISAGREE": "**DISAGREE**", "unresolved": "unresolved",
            "not measured": "–"}.get(v, v)


if __name__ == "__main__":
    sys.exit(main())
