"""netem's impairments through ccarena-link against netem itself, side by side (the
tables `impair-delay`, `impair-loss`, `impair-events` of link_vs_kernel.py; `make
verify` runs them in the reference kernel). Each study sweeps bottleneck.backend over
both; the flow engine's UDP probe sends a datagram every few milliseconds from s1 to r1
and times its echo (tests/integration/impairhelpers.py, shared with the tests), so a
datagram's round trip, loss, copies and overtaking are measured the same way on both
backends — in a guest under TCG without packet captures, whose start the guest is too
slow for. Each row states its expectation and tolerance:
  per direction   median RTT minus delay + reverse_delay (20 + 5 ms); the backends'
                  medians within 0.5 ms
  distributions   (RTT - 2D)/J, the sum of one draw each way, against that law (its KS
                  distance) and the two backends against each other (two-sample KS
                  distance within 0.1)
  correlation     lag-1 correlation of successive RTTs (each way correlates with C: so
                  does their sum); the backends within 0.1
  loss models     share lost (want the model's mean loss) and mean run (want 1/r, or
                  1.5 for the 4-state case); each within 4 standard errors (batch means)
  reorder         share of round trips without the s->r delay (want P/(1 + (G - 1)P));
                  within the 99.9 % binomial interval
  duplicate       share echoed twice; within the 99.9 % binomial interval
  corrupt         share r1 did not echo (want C·(1 - 49/848): a bit flipped anywhere but
                  the source MAC or the destination's multicast bit); within the interval
The path has no rate limit (the probes' datagrams would queue behind each other at the
rate): these tables measure the impairments, not the shaper; `rate` is not used."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
from common import diff_ci, equivalence, md, run, split_valid, study_text  # noqa: E402
from impairhelpers import (UDP_FRAME, band, batch_se, binom_interval,  # noqa: E402
                           round_trip_law, runs_of, udp)

BACKENDS = '"bottleneck.backend" = ["user", "kernel"]'
LATE_ONLY = ("released late", "kernel link late")


def _udp(interval: str, n: int = 1) -> str:
    return (f'[[probe]]\nkind = "udp"\nfrom = "s1"\nto = "r1"\ninterval = "{interval}"\n'
            * n)


def _runs(res, tolerate=LATE_ONLY):
    """(backend, cell params, run dir) of the runs kept (valid, or flagged for lateness
    alone), and the note on those left out."""
    import pandas as pd
    metas = {d: res.run_meta(d) for d in res.run_dirs()}
    df = pd.DataFrame([{"cell": m["cell"], "rep": m["rep"], "dir": d}
                       for d, m in metas.items()])
    kept, note = split_valid(res, df, tolerate=tolerate) if len(df) else (df, "")
    out = []
    for d in kept["dir"] if len(kept) else []:
        m = metas[d]
        out.append((m["backend"], {k.split(".")[-1]: v for k, v in
                                   m.get("cell_params", {}).items()}, d))
    return out, note


def _study(name, bottleneck, probes, duration, reps, sweep=""):
    text = study_text(name, bottleneck, duration=duration, warmup="0s", repetitions=reps,
                      sweep=BACKENDS + ("\n" + sweep if sweep else ""))
    return run(text + probes)


def _rtts(runs, backend, **params):
    """Every answered datagram's RTT (s) of the kept runs of `backend` whose cell has
    `params`, in sending order per run, as one array per run."""
    out = []
    for b, p, d in runs:
        if b == backend and all(p.get(k) == v for k, v in params.items()):
            u, _, _ = udp(d)
            out.append(u["rtt_s"].to_numpy())
    return out


def per_direction_and_distributions(reps: int, rate: str) -> str:
    out = []
    res = _study("verify-impair-dir", 'delay = "20ms"\nreverse_delay = "5ms"', _udp("10ms"),
                 "10s", reps)
    runs, note = _runs(res)
    rows, ex = [], {}
    for b in ("user", "kernel"):
        x = np.concatenate(_rtts(runs, b) or [np.array([])])
        x = x[~np.isnan(x)]
        ex[b] = x * 1e3 - 25
        rows.append({"backend": b, "datagrams": len(x),
                     "RTT min − 25 ms": float(ex[b].min()) if len(x) else np.nan,
                     "RTT median − 25 ms": float(np.median(ex[b])) if len(x) else np.nan})
    ci = diff_ci(ex["user"], ex["kernel"], stat="median")
    out.append("### Per-direction delay (20 ms s->r, 5 ms r->s: RTT 25 ms; no rate limit, "
               "no load)\n\n" + md(rows, ["backend", "datagrams", "RTT min − 25 ms",
                                           "RTT median − 25 ms"])
               + f"\n\nΔ median (kernel − user) = {_ci(ci)} ms, tolerance ±0.5 ms: "
               f"**{equivalence(ci, 0.5)}**\n" + note)

    j, d0 = 0.010, 0.060
    res = _study("verify-impair-dist", 'delay = "30ms"\njitter = "10ms"', _udp("50ms", 4),
                 "15s", reps,
                 '"bottleneck.delay_distribution" = ["normal", "pareto", "paretonormal"]')
    runs, note = _runs(res)
    rows = []
    for dist in ("normal", "pareto", "paretonormal"):
        law = round_trip_law(dist)
        t = {}
        for b in ("user", "kernel"):
            x = np.concatenate(_rtts(runs, b, delay_distribution=dist) or [np.array([])])
            t[b] = (x[~np.isnan(x)] - d0) / j
        two = stats.ks_2samp(t["user"], t["kernel"]) if len(t["user"]) and len(t["kernel"]) \
            else None
        for b in ("user", "kernel"):
            x = t[b]
            q = np.percentile(x, [5, 50, 95]) if len(x) else [np.nan] * 3
            rows.append({"law": dist, "backend": b, "n": len(x),
                         "IQR": float(np.subtract(*np.percentile(x, [75, 25])))
                         if len(x) else np.nan,
                         "p5 / p50 / p95": " / ".join(f"{v:.2f}" for v in q),
                         "KS to the law": max(band(x, law, 0.0)) if len(x) else np.nan,
                         "two-sample KS": two.statistic if two else np.nan,
                         "verdict (≤ 0.1)": ("agree" if two.statistic <= 0.1 else "DISAGREE")
                         if two else "not measured"})
    want = {}
    for k in ("normal", "pareto", "paretonormal"):
        q = np.percentile(round_trip_law(k), [5, 25, 50, 75, 95])
        want[k] = f"{q[3] - q[1]:.2f}, {q[0]:.2f} / {q[2]:.2f} / {q[4]:.2f}"
    out.append("### Delay distributions: (RTT − 60 ms)/J, J = 10 ms each way (30 ms each "
               "way, four UDP probes every 50 ms)\n\n"
               + md(rows, ["law", "backend", "n", "IQR", "p5 / p50 / p95",
                           "KS to the law", "two-sample KS", "verdict (≤ 0.1)"])
               + "\n\nThe round-trip laws' own IQR, p5 / p50 / p95: "
               + ", ".join(f"{k} {w}" for k, w in want.items())
               + ". KS to the law: the largest gap between the RTTs' CDF and the law's "
               "(the path's own time and late timers shift it).\n" + note)

    c = 0.5
    res = _study("verify-impair-corr", 'delay = "30ms"\njitter = "10ms"\n'
                 'delay_correlation = "50%"', _udp("25ms"), "20s", reps)
    runs, note = _runs(res)
    rows, r1 = [], {}
    for b in ("user", "kernel"):
        vals, sds = [], []
        # each run in four blocks: the correlation's spread from one run up
        for x in (blk for r in _rtts(runs, b) for blk in np.array_split(r, 4)):
            # uniform ±10 ms each way: a round trip outside 60 ± 20 ms (+ 2 ms for the
            # path) was late in an endpoint or a timer; its pairs are left out
            ok = (x >= 0.040) & (x <= 0.082)
            if ok.sum() > 10:
                vals.append(_lag1_ok(x, ok))
                sds.append(x[ok].std() / (np.sqrt(2) * 0.010 / np.sqrt(3)))
        r1[b] = vals
        rows.append({"backend": b, "blocks": len(vals),
                     "lag-1 correlation": _mean_sd(vals), "sd / uncorrelated sd": _mean_sd(sds)})
    ci = diff_ci(r1["user"], r1["kernel"])
    out.append("### Delay correlation 50 % (uniform ±10 ms around 30 ms each way, UDP every "
               "25 ms; each run in four blocks)\n\n"
               + md(rows, ["backend", "blocks", "lag-1 correlation", "sd / uncorrelated sd"])
               + f"\n\nWant lag-1 {c}, sd ratio √((1 − C)/(1 + C)) = "
               f"{np.sqrt((1 - c) / (1 + c)):.3f}. Δ lag-1 (kernel − user) = {_ci(ci)}, "
               f"tolerance ±0.1: **{equivalence(ci, 0.1)}**\n" + note)
    return "\n".join(out)


def loss_models(reps: int, rate: str) -> str:
    models = {"gilbert": ('{ kind = "gilbert", p = "3%", r = "25%" }', 0.03 / 0.28, 4.0),
              "4state": ('{ kind = "4state", p13 = "2%", p31 = "50%", p32 = "0%", '
                         'p14 = "2%" }', 0.03 / 0.53, 1.5)}
    res = _study("verify-impair-loss", 'delay = "10ms"', _udp("5ms"), "15s", reps,
                 '"bottleneck.loss_model" = [' + ", ".join(m for m, _, _ in models.values())
                 + "]")
    runs, note = _runs(res)
    rows = []
    for name, (_, mean, burst) in models.items():
        for b in ("user", "kernel"):
            mine = [r for r in runs if (r[1].get("loss_model") or {}).get("kind") == name]
            lost = [np.isnan(x) for x in _rtts(mine, b)]
            if not lost:
                rows.append({"model": name, "backend": b, "datagrams": 0})
                continue
            flags = np.concatenate(lost)
            ev = np.array([x for f in lost for x in runs_of(f)])
            se, se_b = batch_se(flags), ev.std(ddof=1) / np.sqrt(len(ev))
            rows.append({"model": name, "backend": b, "datagrams": len(flags),
                         "lost": f"{flags.mean():.4f} ± {se:.4f}", "model mean": mean,
                         "mean run": f"{ev.mean():.2f} ± {se_b:.2f}", "model run": burst,
                         "within 4 SE": "yes" if abs(flags.mean() - mean) <= 4 * se and
                         abs(ev.mean() - burst) <= 4 * se_b else "NO"})
    return ("### Loss models (s->r, UDP every 5 ms)\n\n"
            + md(rows, ["model", "backend", "datagrams", "lost", "model mean", "mean run",
                        "model run", "within 4 SE"])
            + "\n\ngilbert: p 3 %, r 25 % (mean loss p/(p + r), bursts of 1/r); 4state: "
            "p13 = p14 = 2 %, p31 = 50 %, p32 = 0 (isolated losses and bursts of 2 in equal "
            "numbers: mean run 1.5).\n" + note)


def events(reps: int, rate: str) -> str:
    q = 1 - 49 / (8 * UDP_FRAME)
    cases = {"reorder 25 %": ('reorder = "25%"', 0.25),
             "reorder 50 %, gap 3": ('reorder = "50%"\nreorder_gap = 3', 0.5 / 2),
             "duplicate 5 %": ('duplicate = "5%"', 0.05),
             "corrupt 5 %": ('corrupt = "5%"', 0.05 * q)}
    rows, notes = [], []
    for case, (line, want) in cases.items():
        res = _study("verify-impair-" + case.split()[0] + ("-gap" if "gap" in case else ""),
                     'delay = "40ms"\n' + line, _udp("10ms"), "15s", reps)
        runs, note = _runs(res)
        if note:
            notes.append(f"{case}: {note.strip()}")
        kn = {}
        for b in ("user", "kernel"):
            k = n = 0
            for bb, _, d in runs:
                if bb != b:
                    continue
                u, prober, echo = udp(d, tail_s=0)
                if case.startswith("reorder"):
                    x = u["rtt_s"].dropna().to_numpy()
                    # 80 ms round trips, 40 ms when the s->r delay was skipped
                    k, n = k + int((x < 0.060).sum()), n + len(x)
                elif case.startswith("duplicate"):
                    k, n = k + prober["duplicates"], n + prober["sent"]
                else:
                    k, n = k + prober["sent"] - echo["echoed"], n + prober["sent"]
            kn[b] = (k, n)
            lo, hi = binom_interval(n, want) if n else (np.nan, np.nan)
            rows.append({"impairment": case, "backend": b, "datagrams": n,
                         "share": k / n if n else np.nan, "want": want,
                         "99.9 % interval": f"[{lo / max(n, 1):.4f}, {hi / max(n, 1):.4f}]",
                         "in interval": ("yes" if lo <= k <= hi else "NO") if n
                         else "not measured"})
        if all(kn[b][1] for b in kn):
            p = stats.fisher_exact([[kn["user"][0], kn["user"][1] - kn["user"][0]],
                                    [kn["kernel"][0], kn["kernel"][1] - kn["kernel"][0]]]
                                   ).pvalue
            rows[-1]["Fisher p (user vs kernel)"] = p
    return ("### Reordering, duplication, corruption (s->r, 40 ms each way, UDP every 10 ms)"
            "\n\n" + md(rows, ["impairment", "backend", "datagrams", "share", "want",
                                "99.9 % interval", "in interval", "Fisher p (user vs kernel)"])
            + "\n\nreorder: round trips under 60 ms (the rest take both 40 ms delays); with "
            "a gap G the share is P/(1 + (G − 1)P), not binomial (its interval is the "
            "binomial one's, a little narrow). duplicate: datagrams echoed twice. corrupt: "
            "datagrams r1 did not echo (dropped by its checksum).\n"
            + "".join(f"\n- {n}" for n in notes) + ("\n" if notes else ""))


def _lag1_ok(x, ok) -> float:
    """Lag-1 correlation of x over the neighbouring pairs that are both `ok`."""
    y = x - x[ok].mean()
    pair = ok[:-1] & ok[1:]
    return float((y[:-1] * y[1:])[pair].mean() / (y[ok] ** 2).mean())


def _ci(ci) -> str:
    return f"{ci[0]:+.3g} [{ci[1]:+.3g}, {ci[2]:+.3g}]" if ci[1] == ci[1] else "–"


def _mean_sd(x) -> str:
    x = np.asarray(x, float)
    if not len(x):
        return "–"
    return f"{x.mean():.3f} ± {x.std(ddof=1):.3f}" if len(x) > 1 else f"{x.mean():.3f}"


TABLES = {"impair-delay": per_direction_and_distributions, "impair-loss": loss_models,
          "impair-events": events}
