#!/usr/bin/env python3
"""18.4: the user-space link (ccarena-link) against the kernel's qdiscs (htb, netem, red,
codel, fq_codel), side by side: each study sweeps bottleneck.backend over both, so their
runs interleave in one results directory.

Needs a kernel with netem and the AQM qdiscs: run it in the reference kernel,
    ccarena vm -- python benchmarks/verify/link_vs_kernel.py [--reps N]
(make verify does). Prints Markdown tables; each row states its test and tolerance:
  delay     per-packet delay error (ping RTT - 2 x delay - the path's own RTT, measured
            with delay 0 on the same backend): p50/p95/p99; Mann-Whitney U on the error
            samples; agree when the p50s are within 0.5 ms
  rate      bulk cubic goodput / payload rate (rate x 1448/1514); Welch t over the runs;
            agree within 3 % of the rate
  loss      ping loss ratio at loss = 2 %; Fisher's exact test; agree when both lie in the
            99.9 % binomial interval of 2 %
  AQM       drops (and CE marks with ecn) per delivered packet, mean queue, ping p50 with
            one cubic flow; Welch t; agree within 25 % of their mean (AQM rates are
            sensitive to timing: see the table's spread)
  goodput   cubic, bbr, reno alone; Welch t; agree within 5 %
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (PAYLOAD_SHARE, mannwhitney, md, mean_sd, ping_samples, run,  # noqa: E402
                    split_valid, study_text, two_proportions, verdict, welch, with_params)

BACKENDS = '"bottleneck.backend" = ["user", "kernel"]'


def delay_table(reps: int) -> str:
    res = run(study_text("verify-delay", 'rate = "20mbit"\nbuffer = "100p"', ping="10ms",
                         duration="4s", warmup="0s", repetitions=reps,
                         sweep=BACKENDS + '\n"bottleneck.delay" = ["0ms", "10ms"]'))
    p, note = split_valid(res, ping_samples(res).dropna(subset=["rtt_s"]))
    rows, err = [], {}
    for b in ("user", "kernel"):
        own = p[(p.backend == b) & (p.delay == "0ms")]["rtt_s"].median()
        e = p[(p.backend == b) & (p.delay == "10ms")]["rtt_s"] - 0.020 - own
        err[b] = e.to_numpy() * 1e3
    pv = mannwhitney(err["user"], err["kernel"])
    for b in ("user", "kernel"):
        q = np.percentile(err[b], [50, 95, 99]) if len(err[b]) else [np.nan] * 3
        rows.append({"backend": b, "n": len(err[b]), "p50 ms": q[0], "p95 ms": q[1],
                     "p99 ms": q[2]})
    d50 = abs(np.median(err["user"]) - np.median(err["kernel"]))
    return ("### Delay error (20 ms base RTT, 20 Mbit/s, no load)\n\n"
            + md(rows, ["backend", "n", "p50 ms", "p95 ms", "p99 ms"])
            + f"\n\nMann-Whitney U p = {pv:.3g}; |Δp50| = {d50:.3f} ms, tolerance 0.5 ms: "
            f"**{verdict(d50 <= 0.5, pv, samples=(err['user'], err['kernel']))}**\n" + note)


def rate_table(reps: int) -> str:
    res = run(study_text("verify-rate", 'rtt = "20ms"\nbuffer = "100p"',
                         flows=[("bulk", "cubic", "s1", "r1")], duration="6s", warmup="2s",
                         repetitions=reps,
                         sweep=BACKENDS + '\n"bottleneck.rate" = ["10mbit", "20mbit"]'))
    f, note = split_valid(res, with_params(res, res.flows))
    f = f[f["conn"] == -1]
    rows = []
    for rate in ("10mbit", "20mbit"):
        bps = float(rate[:-4]) * 1e6
        acc = {b: f[(f.backend == b) & (f.rate == rate)]["goodput_bps"] / (bps * PAYLOAD_SHARE)
               for b in ("user", "kernel")}
        pv = welch(acc["user"], acc["kernel"])
        diff = abs(acc["user"].mean() - acc["kernel"].mean())
        rows.append({"rate": rate, "user": mean_sd(acc["user"]),
                     "kernel": mean_sd(acc["kernel"]), "Welch p": pv,
                     "verdict (±3 %)": verdict(diff <= 0.03, pv,
                                               samples=(acc["user"], acc["kernel"]))})
    return ("### Rate accuracy: cubic goodput / payload rate (20 ms RTT, 100-packet buffer)"
            "\n\n" + md(rows, ["rate", "user", "kernel", "Welch p", "verdict (±3 %)"]) + "\n"
            + note)


def loss_table(reps: int) -> str:
    p0 = 0.02
    res = run(study_text("verify-loss", 'rate = "20mbit"\nrtt = "4ms"\nbuffer = "100p"\n'
                         'loss = "2%"', ping="2ms", duration="4s", warmup="0s",
                         repetitions=reps, sweep=BACKENDS))
    p, note = split_valid(res, ping_samples(res))
    rows, kn = [], {}
    for b in ("user", "kernel"):
        s = p[p.backend == b]
        s = s[s["seq"] < s.groupby("rep")["seq"].transform("max") - 25]   # not in flight
        n, k = len(s), int(s["rtt_s"].isna().sum())
        lo, hi = binom.ppf(0.0005, n, p0), binom.ppf(0.9995, n, p0)
        kn[b] = (k, n)
        rows.append({"backend": b, "pings": n, "lost": k, "ratio": k / n if n else np.nan,
                     "99.9 % interval": f"[{lo:.0f}, {hi:.0f}]",
                     "in interval": "yes" if lo <= k <= hi else "NO"})
    pv = two_proportions(*kn["user"], *kn["kernel"])
    ok = all(r["in interval"] == "yes" for r in rows)
    return ("### Loss ratio (2 % towards the receiver, ping every 2 ms)\n\n"
            + md(rows, ["backend", "pings", "lost", "ratio", "99.9 % interval", "in interval"])
            + f"\n\nFisher's exact p = {pv:.3g}: "
            f"**{verdict(ok, pv, samples=[[1] * kn[b][1] for b in kn])}**\n" + note)


def aqm_table(reps: int) -> str:
    rows, notes = [], []
    for queue, ecn in (("red", False), ("codel", False), ("fq_codel", False),
                       ("codel", True)):
        extra = "\necn = true" if ecn else ""
        res = run(study_text(f"verify-{queue}{'-ecn' if ecn else ''}",
                             f'rate = "10mbit"\nrtt = "20ms"\nbuffer = "200p"\n'
                             f'queue = "{queue}"{extra}', flows=[("bulk", "cubic", "s1", "r1")],
                             ping="20ms", duration="6s", warmup="2s", repetitions=reps,
                             sweep=BACKENDS, tcp="ecn = 1" if ecn else ""))
        r, note = split_valid(res, with_params(res, res.runs))
        f, _ = split_valid(res, with_params(res, res.flows))
        f = f[f["conn"] == -1]
        if note:
            notes.append(f"{queue}{' + ECN' if ecn else ''}: {note.strip()}")
        # drops per delivered packet: the kernel's sampler counts departures, not arrivals
        r["dropped_per_pkt"] = r["link_drops"] / (r["goodput_bps"] * r["duration_s"] / 8 / 1448)
        for metric, frame, col in (("drops / pkt", r, "dropped_per_pkt"),
                                   ("CE / delivered", f, "ce_ratio"),
                                   ("mean queue pkts", r, "queue_mean_pkts"),
                                   ("ping p50 ms", r, "ping_rtt_p50_s")):
            if metric == "CE / delivered" and not ecn:
                continue
            if metric == "drops / pkt" and ecn:
                continue
            scale = 1e3 if col == "ping_rtt_p50_s" else 1.0
            u = frame[frame.backend == "user"][col] * scale
            k = frame[frame.backend == "kernel"][col] * scale
            pv = welch(u, k)
            m = (u.mean() + k.mean()) / 2
            within = abs(u.mean() - k.mean()) <= 0.25 * abs(m) if m else True
            rows.append({"queue": queue + (" + ECN" if ecn else ""), "metric": metric,
                         "user": mean_sd(u), "kernel": mean_sd(k), "Welch p": pv,
                         "verdict (±25 %)": verdict(within, pv, samples=(u, k))})
    return ("### AQM (10 Mbit/s, 20 ms RTT, 200-packet buffer, one cubic flow, ping 20 ms)"
            "\n\n" + md(rows, ["queue", "metric", "user", "kernel", "Welch p",
                               "verdict (±25 %)"]) + "\n"
            + "".join(f"\n- {n}" for n in notes) + ("\n" if notes else ""))


def goodput_table(reps: int) -> str:
    res = run(study_text("verify-cc", 'rate = "20mbit"\nrtt = "40ms"\nbuffer = "70p"',
                         flows=[("bulk", "cubic", "s1", "r1")], duration="8s", warmup="3s",
                         repetitions=reps,
                         sweep=BACKENDS + '\n"flow.bulk.cc" = ["cubic", "bbr", "reno"]'))
    f, note = split_valid(res, with_params(res, res.flows))
    f = f[f["conn"] == -1]
    rows = []
    for cc in ("cubic", "bbr", "reno"):
        u = f[(f.backend == "user") & (f["cc"] == cc)]["goodput_bps"] / 1e6
        k = f[(f.backend == "kernel") & (f["cc"] == cc)]["goodput_bps"] / 1e6
        pv = welch(u, k)
        within = abs(u.mean() - k.mean()) <= 0.05 * max(u.mean(), k.mean())
        rows.append({"cc": cc, "user Mbit/s": mean_sd(u), "kernel Mbit/s": mean_sd(k),
                     "Welch p": pv, "verdict (±5 %)": verdict(within, pv, samples=(u, k))})
    return ("### Goodput by algorithm (20 Mbit/s, 40 ms RTT, 70-packet buffer ≈ 1 BDP)\n\n"
            + md(rows, ["cc", "user Mbit/s", "kernel Mbit/s", "Welch p", "verdict (±5 %)"])
            + "\n" + note)


TABLES = {"delay": delay_table, "rate": rate_table, "loss": loss_table, "aqm": aqm_table,
          "goodput": goodput_table}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="runs per cell (default 3)")
    ap.add_argument("tables", nargs="*", choices=[*TABLES, []], help="default: all")
    a = ap.parse_args()
    import platform
    from ccarena.run.environment import machine
    vm = machine().get("vm") or {}
    print(f"## User-space link vs kernel qdiscs\n\nKernel {platform.release()}"
          + (f" in ccarena's VM ({vm.get('accel')}, {vm.get('cpus')} vCPUs, host "
             f"{vm.get('host_kernel')})" if vm else "") + f"; {a.reps} runs per cell, "
          "both backends interleaved in one study.\n", flush=True)
    for name in a.tables or TABLES:
        print(TABLES[name](a.reps), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
