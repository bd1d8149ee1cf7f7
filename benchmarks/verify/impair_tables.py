"""netem's impairments through ccarena-link against netem itself, side by side (the
tables `impair-delay`, `impair-loss`, `impair-events` of link_vs_kernel.py; `make
verify` runs them in the reference kernel). Each study sweeps bottleneck.backend over
both; a UDP probe sends a datagram every few milliseconds from s1 to r1 and both hosts
capture them, so every datagram's one-way delay, loss, copies and order are measured
the same way on both backends (tests/integration/impairhelpers.py, shared with the
tests). Each row states its expectation and tolerance:
  per direction   median one-way delay s->r and r->s minus the configured delay; the
                  backends' medians within 0.5 ms
  distributions   (delay - D)/J against the law (its KS distance) and the two backends
                  against each other (two-sample KS distance within 0.1)
  correlation     lag-1 correlation of successive delays (want C); within 0.1
  loss models     share lost (want the model's mean loss) and mean burst (want 1/r, or
                  1/(p31 + p32)); each within 4 standard errors of the model (batch means)
  reorder         share sent without the delay (want P/(1 + (G - 1)P)); within the 99.9 %
                  binomial interval
  duplicate       share arriving twice; within the 99.9 % binomial interval
  corrupt         share dropped by r1 (want C·(1 - 49/848): a bit flipped anywhere but
                  the source MAC or the destination's multicast bit); within the interval
The path has no rate limit (the probes' datagrams would queue behind each other at the
rate): these tables measure the impairments, not the shaper; `rate` is not used."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "integration"))
from common import diff_ci, equivalence, md, run, split_valid, study_text  # noqa: E402
from impairhelpers import (SHAPES, UDP_FRAME, band, batch_se, binom_interval,  # noqa: E402
                           lag1, one_way, runs_of, udp)

BACKENDS = '"bottleneck.backend" = ["user", "kernel"]'
S1, R1 = "10.1.1.2", "10.2.1.2"
LATE_ONLY = ("released late", "kernel link late")
PCAP = '[[probe]]\nkind = "pcap"\nhosts = ["s1", "r1"]\n'


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
    kept, note = split_valid(res, df, tolerate=tolerate)
    out = []
    for d in kept["dir"]:
        m = metas[d]
        out.append((m["backend"], {k.split(".")[-1]: v for k, v in
                                   m.get("cell_params", {}).items()}, d))
    return out, note


def _study(name, bottleneck, probes, duration, reps, sweep=""):
    text = study_text(name, bottleneck, duration=duration, warmup="0s", repetitions=reps,
                      sweep=BACKENDS + ("\n" + sweep if sweep else ""))
    return run(text + probes)


def per_direction_and_distributions(reps: int, rate: str) -> str:
    out = []
    res = _study("verify-impair-dir", 'delay = "20ms"\nreverse_delay = "5ms"',
                 _udp("10ms") + PCAP, "6s", reps)
    runs, note = _runs(res)
    rows, med = [], {}
    for b in ("user", "kernel"):
        f, r = [], []
        for bb, _, d in runs:
            if bb == b:
                fw, rv, _, _ = one_way(d, S1, R1)
                f += [v[0] for v in fw.values()]
                r += [v[0] for v in rv.values()]
        med[b] = (np.array(f) * 1e3 - 20, np.array(r) * 1e3 - 5)
        rows.append({"backend": b, "datagrams": len(f),
                     "s->r median − 20 ms": float(np.median(med[b][0])) if f else np.nan,
                     "r->s median − 5 ms": float(np.median(med[b][1])) if r else np.nan})
    cis = [diff_ci(med["user"][i], med["kernel"][i], stat="median") for i in (0, 1)]
    out.append(f"### Per-direction delay (20 ms s->r, 5 ms r->s, no rate limit, no load)\n\n"
               + md(rows, ["backend", "datagrams", "s->r median − 20 ms",
                           "r->s median − 5 ms"])
               + "\n\nΔ median (kernel − user), s->r: " + _ci(cis[0]) + " ms, r->s: "
               + _ci(cis[1]) + " ms; tolerance ±0.5 ms: **"
               + " / ".join(equivalence(c, 0.5) for c in cis) + "**\n" + note)

    j, d0 = 0.020, 0.100
    res = _study("verify-impair-dist", 'delay = "100ms"\njitter = "20ms"',
                 _udp("100ms", 4) + PCAP, "10s", reps,
                 '"bottleneck.delay_distribution" = ["normal", "pareto", "paretonormal"]')
    runs, note = _runs(res)
    rng = np.random.default_rng(2)
    laws = {k: np.sort(f(rng.random(200_000))) for k, f in SHAPES.items()}
    rows = []
    for dist in ("normal", "pareto", "paretonormal"):
        t = {}
        for b in ("user", "kernel"):
            x = []
            for bb, p, d in runs:
                if bb == b and p.get("delay_distribution") == dist:
                    fw, _, _, _ = one_way(d, S1, R1)
                    x += [v[0] for v in fw.values()]
            t[b] = (np.array(x) - d0) / j
        two = stats.ks_2samp(t["user"], t["kernel"]) if len(t["user"]) and len(t["kernel"]) \
            else None
        for b in ("user", "kernel"):
            x = t[b]
            q = np.percentile(x, [5, 50, 95]) if len(x) else [np.nan] * 3
            e, lt = band(x, laws[dist], 0.0) if len(x) else (np.nan, np.nan)
            rows.append({"law": dist, "backend": b, "n": len(x),
                         "mean": float(x.mean()) if len(x) else np.nan,
                         "sd": float(x.std()) if len(x) else np.nan,
                         "p5 / p50 / p95": " / ".join(f"{v:.2f}" for v in q),
                         "KS to the law": max(e, lt),
                         "two-sample KS": two.statistic if two else np.nan,
                         "verdict (≤ 0.1)": ("agree" if two.statistic <= 0.1 else "DISAGREE")
                         if two else "not measured"})
    want = {k: (float(v.mean()), float(v.std())) for k, v in laws.items()}
    out.append(f"### Delay distributions: (delay − 100 ms)/J, J = 20 ms, s->r\n\n"
               + md(rows, ["law", "backend", "n", "mean", "sd", "p5 / p50 / p95",
                           "KS to the law", "two-sample KS", "verdict (≤ 0.1)"])
               + "\n\nThe laws' own mean / sd: "
               + ", ".join(f"{k} {m:.3f} / {s:.3f}" for k, (m, s) in want.items()
                           if k != "uniform") + ".\n" + note)

    c = 0.5
    res = _study("verify-impair-corr", 'delay = "60ms"\njitter = "20ms"\ndelay_correlation = "50%"', _udp("50ms", 4) + PCAP, "10s", reps)
    runs, note = _runs(res)
    rows, r1 = [], {}
    for b in ("user", "kernel"):
        vals, sds = [], []
        for bb, _, d in runs:
            if bb == b:
                fw, _, _, sent = one_way(d, S1, R1)
                keys = sorted(fw, key=lambda k: sent[k])
                x = np.array([fw[k][0] for k in keys])
                if len(x) > 10:
                    vals.append(lag1(x))
                    sds.append(x.std() / (0.020 / np.sqrt(3)))
        r1[b] = vals
        rows.append({"backend": b, "runs": len(vals),
                     "lag-1 correlation": _mean_sd(vals), "sd / uniform's sd": _mean_sd(sds)})
    ci = diff_ci(r1["user"], r1["kernel"])
    out.append(f"### Delay correlation 50 % (uniform ±20 ms, 60 ms s->r)\n\n"
               + md(rows, ["backend", "runs", "lag-1 correlation", "sd / uniform's sd"])
               + f"\n\nWant lag-1 {c}, sd ratio √((1 − C)/(1 + C)) = "
               f"{np.sqrt((1 - c) / (1 + c)):.3f}. Δ lag-1 (kernel − user) = {_ci(ci)}, "
               f"tolerance ±0.1: **{equivalence(ci, 0.1)}**\n" + note)
    return "\n".join(out)


def loss_models(reps: int, rate: str) -> str:
    models = {"gilbert": ('{ kind = "gilbert", p = "3%", r = "25%" }', 0.03 / 0.28, 4.0),
              "4state": ('{ kind = "4state", p13 = "2%", p31 = "50%", p32 = "0%", '
                         'p14 = "2%" }', 0.03 / 0.53, 1.5)}
    res = _study("verify-impair-loss", 'delay = "10ms"', _udp("5ms"), "10s",
                 reps, '"bottleneck.loss_model" = [' + ", ".join(m for m, _, _ in
                                                                  models.values()) + "]")
    runs, note = _runs(res)
    rows = []
    for name, (_, mean, burst) in models.items():
        for b in ("user", "kernel"):
            lost = []
            for bb, p, d in runs:
                lm = p.get("loss_model") or {}
                if bb == b and lm.get("kind") == name:
                    u, _, _ = udp(d)
                    lost.append(u["rtt_s"].isna().to_numpy())
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
    return (f"### Loss models (s->r, UDP every 5 ms)\n\n"
            + md(rows, ["model", "backend", "datagrams", "lost", "model mean", "mean run",
                        "model run", "within 4 SE"])
            + "\n\ngilbert: p 3 %, r 25 % (mean loss p/(p + r), bursts of 1/r); 4state: "
            "p13 = p14 = 2 %, p31 = 50 %, p32 = 0 (isolated losses and bursts of 2 in equal "
            "numbers: mean run 1.5).\n" + note)


def events(reps: int, rate: str) -> str:
    cases = {"reorder 25 %": ('delay = "20ms"\nreorder = "25%"', 0.25),
             "reorder 50 %, gap 3": ('delay = "20ms"\nreorder = "50%"\nreorder_gap = 3',
                                     0.5 / 2),
             "duplicate 5 %": ('delay = "10ms"\nduplicate = "5%"', 0.05),
             "corrupt 5 %": ('delay = "10ms"\ncorrupt = "5%"', 0.05 * (1 - 49 / (8 * UDP_FRAME)))}
    rows = []
    notes = []
    for case, (line, want) in cases.items():
        res = _study("verify-impair-" + case.split()[0] + ("-gap" if "gap" in case else ""),
                     line, _udp("10ms") + PCAP, "8s", reps)
        runs, note = _runs(res)
        if note:
            notes.append(f"{case}: {note.strip()}")
        kn = {}
        for b in ("user", "kernel"):
            k = n = 0
            for bb, _, d in runs:
                if bb != b:
                    continue
                fw, _, _, _ = one_way(d, S1, R1)
                if case.startswith("reorder"):
                    x = np.array([v[0] for v in fw.values()])
                    k, n = k + int((x < 0.010).sum()), n + len(x)
                elif case.startswith("duplicate"):
                    k += sum(1 for v in fw.values() if len(v) == 2)
                    n += len(fw)
                else:
                    _, prober, echo = udp(d, tail_s=0)
                    k += prober["sent"] - echo["echoed"]
                    n += prober["sent"]
            kn[b] = (k, n)
            lo, hi = binom_interval(n, want) if n else (np.nan, np.nan)
            rows.append({"impairment": case, "backend": b, "datagrams": n, "share": k / n
                         if n else np.nan, "want": want,
                         "99.9 % interval": f"[{lo / max(n, 1):.4f}, {hi / max(n, 1):.4f}]",
                         "in interval": ("yes" if lo <= k <= hi else "NO") if n
                         else "not measured"})
        if all(kn[b][1] for b in kn):
            p = stats.fisher_exact([[kn["user"][0], kn["user"][1] - kn["user"][0]],
                                    [kn["kernel"][0], kn["kernel"][1] - kn["kernel"][0]]]).pvalue
            rows[-1]["Fisher p (user vs kernel)"] = p
    return (f"### Reordering, duplication, corruption (s->r, UDP every 10 ms)\n\n"
            + md(rows, ["impairment", "backend", "datagrams", "share", "want",
                        "99.9 % interval", "in interval", "Fisher p (user vs kernel)"])
            + "\n\nreorder: datagrams arriving in under 10 ms (the rest take the 20 ms "
            "delay); with a gap G the share is P/(1 + (G − 1)P), not binomial (its interval "
            "is the binomial one's, a little narrow). duplicate: datagrams r1 received "
            "twice. corrupt: datagrams r1 did not echo (dropped by its checksum).\n"
            + "".join(f"\n- {n}" for n in notes) + ("\n" if notes else ""))


def _ci(ci) -> str:
    return f"{ci[0]:+.3g} [{ci[1]:+.3g}, {ci[2]:+.3g}]" if ci[1] == ci[1] else "–"


def _mean_sd(x) -> str:
    x = np.asarray(x, float)
    if not len(x):
        return "–"
    return f"{x.mean():.3f} ± {x.std(ddof=1):.3f}" if len(x) > 1 else f"{x.mean():.3f}"


TABLES = {"impair-delay": per_direction_and_distributions, "impair-loss": loss_models,
          "impair-events": events}
