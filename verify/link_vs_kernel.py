#!/usr/bin/env python3
"""The user-space link (ccarena-link) against the kernel's qdiscs (htb, netem, red,
codel, fq_codel), side by side: each study sweeps bottleneck.backend over both, so their
runs interleave in one results directory.

Needs a kernel with netem and the AQM qdiscs: run it in the reference kernel,
    ccarena vm -- python verify/link_vs_kernel.py [--reps N]
(make verify does). `--rate` is the bottleneck's rate (default 2 Mbit/s: what a guest
under QEMU's TCG carries; docs/vm.md); base RTT 40 ms. Prints Markdown tables; each row
states its test and tolerance. A difference is judged through its 90 % interval
(common.diff_ci: Welch's over runs, a bootstrap of medians over packets): agree when the
whole interval lies inside the tolerance, DISAGREE when wholly outside, unresolved
otherwise.
  delay     per-packet delay error (ping RTT - 2 x delay - the path's own RTT, measured
            with delay 0 on the same backend): p50/p95/p99; Mann-Whitney U on the error
            samples; the p50s within 0.5 ms
  rate      bulk cubic goodput / payload rate (rate x 1448/1514) at rate/2 and rate;
            within 3 % of the rate
  loss      ping loss ratio at loss = 2 %; Fisher's exact test; agree when both lie in the
            99.9 % binomial interval of 2 %
  AQM       drops (and CE marks with ecn) per delivered packet, mean queue, ping p50 with
            one cubic flow; within 25 % of the user-space link's value (AQM rates are
            sensitive to timing: see the table's spread)
  goodput   cubic, bbr, reno alone; within 5 %
  impair-*  netem's impairments (delay per direction, distributions, correlation, loss
            models, reordering, duplication, corruption): impair_tables.py
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (PAYLOAD_SHARE, diff_ci, equivalence, link_out, mannwhitney,  # noqa: E402
                    measured_note, md, mean_sd, ping_samples, run, split_valid, study_text,
                    two_proportions, verdict, with_params)

BACKENDS = '"bottleneck.backend" = ["user", "kernel"]'
RTT = "40ms"


def _ci_cell(ci) -> str:
    return f"{ci[0]:+.3g} [{ci[1]:+.3g}, {ci[2]:+.3g}]" if ci[1] == ci[1] else "–"


def delay_table(reps: int, rate: str) -> str:
    res = run(study_text("verify-delay", f'rate = "{rate}"\nbuffer = "100p"', ping="10ms",
                         duration="5s", warmup="0s", repetitions=reps,
                         sweep=BACKENDS + '\n"bottleneck.delay" = ["0ms", "20ms"]'))
    # a run flagged for its link's lateness alone is what this table measures: kept
    p, note = split_valid(res, ping_samples(res).dropna(subset=["rtt_s"]),
                          tolerate=("released late", "kernel link late"))
    rows, err = [], {}
    for b in ("user", "kernel"):
        own = p[(p.backend == b) & (p.delay == "0ms")]["rtt_s"].median()
        e = p[(p.backend == b) & (p.delay == "20ms")]["rtt_s"] - 0.040 - own
        err[b] = e.to_numpy() * 1e3
    pv = mannwhitney(err["user"], err["kernel"])
    for b in ("user", "kernel"):
        q = np.percentile(err[b], [50, 95, 99]) if len(err[b]) else [np.nan] * 3
        rows.append({"backend": b, "n": len(err[b]), "p50 ms": q[0], "p95 ms": q[1],
                     "p99 ms": q[2]})
    ci = diff_ci(err["user"], err["kernel"], stat="median")
    return (f"### Delay error (40 ms base RTT, {rate}, no load)\n\n"
            + md(rows, ["backend", "n", "p50 ms", "p95 ms", "p99 ms"])
            + f"\n\nMann-Whitney U p = {pv:.3g}; Δp50 (kernel − user) = {_ci_cell(ci)} ms, "
            f"tolerance ±0.5 ms: **{equivalence(ci, 0.5)}**\n" + note)


def rate_table(reps: int, rate: str) -> str:
    """The rate the bottleneck sent at (its own count of the frames leaving it over the
    steady window: ccarena-link's link_stats, the kernel qdisc's bytes), and the goodput
    of the cubic flow through it. The goodput is not the rate's measure at low rates: a
    loss hole open at the window's start holds back what the link had already delivered
    (up to a window of ~20 frames: +4 % of 6 s at 1 Mbit/s), so it is shown, not judged."""
    r_bps = float(rate[:-4]) * 1e6
    rates = [f"{r_bps / 2e6:g}mbit", rate]
    res = run(study_text("verify-rate", f'rtt = "{RTT}"\nbuffer = "20p"',
                         flows=[("bulk", "cubic", "s1", "r1")], duration="8s", warmup="2s",
                         repetitions=reps, sweep=BACKENDS + '\n"bottleneck.rate" = ['
                         + ", ".join(f'"{r}"' for r in rates) + "]"))
    f, note = split_valid(res, with_params(res, res.flows))
    f = f[f["conn"] == -1]
    out, _ = split_valid(res, link_out(res))
    rows = []
    for r in rates:
        bps = float(r[:-4]) * 1e6
        acc = {b: out[(out.backend == b) & (out.rate == r)]["out_bps"] / bps
               for b in ("user", "kernel")}
        gp = {b: f[(f.backend == b) & (f.rate == r)]["goodput_bps"] / (bps * PAYLOAD_SHARE)
              for b in ("user", "kernel")}
        ci = diff_ci(acc["user"], acc["kernel"])
        rows.append({"rate": r, "user": mean_sd(acc["user"]), "kernel": mean_sd(acc["kernel"]),
                     "Δ [90 % CI]": _ci_cell(ci), "verdict (±3 %)": equivalence(ci, 0.03),
                     "goodput/payload, user": mean_sd(gp["user"]),
                     "goodput/payload, kernel": mean_sd(gp["kernel"])})
    return (f"### Rate accuracy: frames sent / rate, one cubic flow ({RTT} RTT, 20-packet "
            "buffer, 2-8 s)\n\n" + md(rows, ["rate", "user", "kernel", "Δ [90 % CI]",
                                              "verdict (±3 %)", "goodput/payload, user",
                                              "goodput/payload, kernel"])
            + "\n" + note)


def loss_table(reps: int, rate: str) -> str:
    p0 = 0.02
    res = run(study_text("verify-loss", f'rate = "{rate}"\nrtt = "{RTT}"\nbuffer = "100p"\n'
                         'loss = "2%"', ping="5ms", duration="6s", warmup="0s",
                         repetitions=reps, sweep=BACKENDS))
    # lateness does not change which pings were lost (a late reply still comes back
    # within ping's 2 s): runs flagged for it alone are kept
    p, note = split_valid(res, ping_samples(res), tolerate=("released late", "kernel link late"))
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
    return ("### Loss ratio (2 % towards the receiver, ping every 5 ms)\n\n"
            + md(rows, ["backend", "pings", "lost", "ratio", "99.9 % interval", "in interval"])
            + f"\n\nFisher's exact p = {pv:.3g}: "
            f"**{verdict(ok, pv, samples=[[1] * kn[b][1] for b in kn])}**\n" + note)


def aqm_table(reps: int, rate: str) -> str:
    rows, notes = [], []
    r_bps = float(rate[:-4]) * 1e6
    frame_ms = 1514 * 8 / r_bps * 1e3
    # AQM drops are rare events: a lower rate runs longer, for as many packets per run as
    # 10 s at 2 Mbit/s. CoDel's target must exceed a frame's time at the rate (RFC 8289
    # §4.4): 6 ms at 2 Mbit/s, past the default 5 ms; 15 ms, or two frames' time below
    # 1.6 Mbit/s.
    secs = max(10, round(10 * 2e6 / r_bps))
    target_ms = max(15, int(np.ceil(2 * frame_ms)))
    for queue, ecn in (("red", False), ("codel", False), ("fq_codel", False),
                       ("codel", True)):
        extra = "\necn = true" if ecn else ""
        if queue != "red":
            extra += f'\naqm = {{ target = "{target_ms}ms" }}'
        res = run(study_text(f"verify-{queue}{'-ecn' if ecn else ''}",
                             f'rate = "{rate}"\nrtt = "{RTT}"\nbuffer = "100p"\n'
                             f'queue = "{queue}"{extra}', flows=[("bulk", "cubic", "s1", "r1")],
                             ping="20ms", duration=f"{secs}s", warmup="3s", repetitions=reps,
                             sweep=BACKENDS, tcp="ecn = 1" if ecn else ""))
        r, note = split_valid(res, with_params(res, res.runs))
        f, _ = split_valid(res, with_params(res, res.flows))
        rl, _ = split_valid(res, with_params(res, res.runs), tolerate=LATE_ONLY)
        fl, _ = split_valid(res, with_params(res, res.flows), tolerate=LATE_ONLY)
        f, fl = f[f["conn"] == -1], fl[fl["conn"] == -1]
        if note:
            notes.append(f"{queue}{' + ECN' if ecn else ''}: {note.strip()}")
        for x in (r, rl):
            # drops per delivered packet (both backends count their drops at the queue)
            x["dropped_per_pkt"] = x["link_drops"] / (x["goodput_bps"] * x["duration_s"]
                                                      / 8 / 1448)
        for metric, frame, late, col in (("drops / pkt", r, rl, "dropped_per_pkt"),
                                         ("CE / delivered", f, fl, "ce_ratio"),
                                         ("mean queue pkts", r, rl, "queue_mean_pkts"),
                                         ("ping p50 ms", r, rl, "ping_rtt_p50_s")):
            if metric == "CE / delivered" and not ecn:
                continue
            if metric == "drops / pkt" and ecn:
                continue
            scale = 1e3 if col == "ping_rtt_p50_s" else 1.0
            u = frame[frame.backend == "user"][col] * scale
            k = frame[frame.backend == "kernel"][col] * scale
            ci = diff_ci(u, k)
            tol = 0.25 * abs(u.mean()) if len(u) else np.nan
            rows.append({"queue": queue + (" + ECN" if ecn else ""), "metric": metric,
                         "user": _shown(u, late, "user", col, scale),
                         "kernel": _shown(k, late, "kernel", col, scale),
                         "Δ [90 % CI]": _ci_cell(ci),
                         "verdict (±25 %)": equivalence(ci, tol) if len(u) else "not measured"})
    return (f"### AQM ({rate}, {RTT} RTT, 100-packet buffer, one cubic flow, ping 20 ms, "
            f"{secs} s runs; CoDel target {target_ms} ms)"
            "\n\n" + md(rows, ["queue", "metric", "user", "kernel", "Δ [90 % CI]",
                               "verdict (±25 %)"]) + "\n" + LATE_NOTE
            + "".join(f"\n- {n}" for n in notes) + ("\n" if notes else ""))


# runs flagged for their link's lateness alone: their figures are shown (in brackets) where
# a backend has no valid run, never judged
LATE_ONLY = ("released late", "kernel link late")
LATE_NOTE = ("\n[x]: from runs flagged invalid only for their link's lateness (shown where "
             "the backend has no valid run; not judged).\n")


def _shown(valid, with_late, backend: str, col: str, scale: float) -> str:
    if len(valid.dropna()):
        return mean_sd(valid)
    late = with_late[with_late.backend == backend][col] * scale
    return f"[{mean_sd(late)}]" if len(late.dropna()) else "–"


def goodput_table(reps: int, rate: str) -> str:
    bdp = max(4, round(float(rate[:-4]) * 1e6 * 0.040 / 8 / 1514))
    res = run(study_text("verify-cc", f'rate = "{rate}"\nrtt = "{RTT}"\nbuffer = "{bdp}p"',
                         flows=[("bulk", "cubic", "s1", "r1")], duration="10s", warmup="3s",
                         repetitions=reps,
                         sweep=BACKENDS + '\n"flow.bulk.cc" = ["cubic", "bbr", "reno"]'))
    f, note = split_valid(res, with_params(res, res.flows))
    fl, _ = split_valid(res, with_params(res, res.flows), tolerate=LATE_ONLY)
    f, fl = f[f["conn"] == -1], fl[fl["conn"] == -1]
    rows = []
    for cc in ("cubic", "bbr", "reno"):
        u = f[(f.backend == "user") & (f["cc"] == cc)]["goodput_bps"] / 1e6
        k = f[(f.backend == "kernel") & (f["cc"] == cc)]["goodput_bps"] / 1e6
        late = fl[fl["cc"] == cc]
        ci = diff_ci(u, k)
        tol = 0.05 * abs(u.mean()) if len(u) else np.nan
        rows.append({"cc": cc, "user Mbit/s": _shown(u, late, "user", "goodput_bps", 1e-6),
                     "kernel Mbit/s": _shown(k, late, "kernel", "goodput_bps", 1e-6),
                     "Δ [90 % CI]": _ci_cell(ci),
                     "verdict (±5 %)": equivalence(ci, tol) if len(u) else "not measured"})
    return (f"### Goodput by algorithm ({rate}, {RTT} RTT, {bdp}-packet buffer ≈ 1 BDP)\n\n"
            + md(rows, ["cc", "user Mbit/s", "kernel Mbit/s", "Δ [90 % CI]",
                        "verdict (±5 %)"]) + "\n" + LATE_NOTE + note)


TABLES = {"delay": delay_table, "rate": rate_table, "loss": loss_table, "aqm": aqm_table,
          "goodput": goodput_table}
from impair_tables import TABLES as IMPAIR_TABLES  # noqa: E402
TABLES.update(IMPAIR_TABLES)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="runs per cell (default 3)")
    ap.add_argument("--rate", default="2mbit", help="bottleneck rate, NNmbit (default 2mbit)")
    ap.add_argument("tables", nargs="*", choices=[*TABLES, []], help="default: all")
    a = ap.parse_args()
    if not re.fullmatch(r"\d+(\.\d+)?mbit", a.rate):
        ap.error(f"--rate {a.rate!r}: expected a rate in mbit, e.g. 2mbit")
    # where the runs were measured is printed last, from the results themselves
    print(f"## User-space link vs kernel qdiscs\n\n{a.reps} runs per cell, "
          "both backends interleaved in one study.\n", flush=True)
    for name in a.tables or TABLES:
        print(TABLES[name](a.reps, a.rate), flush=True)
    print(measured_note())
    return 0


if __name__ == "__main__":
    sys.exit(main())
