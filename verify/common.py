"""Shared parts of the verification matrices (verify/): run a study whose sweep
puts the two things compared side by side (interleaved, shuffled, in one results
directory: this machine is noisy), and print Markdown tables with a statistical test and
the tolerance each comparison is judged by."""
from __future__ import annotations

import math
import os
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ccarena.run.study import run_study  # noqa: E402
from ccarena.study.load import loads_study  # noqa: E402

PAYLOAD_SHARE = 1448 / 1514
# the project's build folder: writable in ccarena's VM (its /tmp is thrown away)
OUT = Path(os.environ.get("CCARENA_VERIFY_OUT",
                          Path(__file__).resolve().parents[1] / "build" / "verify" / "results"))


def study_text(name: str, bottleneck: str, *, flows=(), ping: str | None = None,
               duration="5s", warmup="1s", repetitions=3, sweep: str = "", tcp: str = "",
               pairs: int = 1, sample_interval: str = "50ms") -> str:
    """A dumbbell study. `flows`: (name, cc, from, to) tuples. A run the machine's noise
    makes invalid is left out and counted, not run again (under TCG it mostly would be
    invalid again). TCP_INFO and the kernel's qdiscs are sampled every 50 ms, not 10: a
    guest under TCG on a shared host keeps up with that (at 20 ms its flow engines missed
    2-12 % of their ticks); the figures compared are means over seconds."""
    text = textwrap.dedent(f'''
        [study]
        name = "{name}"
        duration = "{duration}"
        warmup = "{warmup}"
        repetitions = {repetitions}
        seed = 29
        reruns = 0
        sample_interval = "{sample_interval}"
        [topology]
        pairs = {pairs}
        [bottleneck]
        ''') + textwrap.dedent(bottleneck).strip() + "\n"
    if tcp:
        text += "[tcp]\n" + textwrap.dedent(tcp).strip() + "\n"
    for fname, cc, src, dst in flows:
        text += f'[[flow]]\nname = "{fname}"\nfrom = "{src}"\nto = "{dst}"\ncc = "{cc}"\n'
    if ping:
        text += (f'[[probe]]\nkind = "ping"\nfrom = "s1"\nto = "r1"\n'
                 f'interval = "{ping}"\n')
    if sweep:
        text += "[sweep]\n" + textwrap.dedent(sweep).strip() + "\n"
    return text


# where the results read so far were measured (kernel, VM accelerator), from each results
# directory's environment.json: a re-analysis of stored results says where they came from,
# not where it runs
MEASURED_ON: set[str] = set()


def measured_on(res) -> None:
    import json
    try:
        env = json.loads((Path(res.path) / "environment.json").read_text())
    except (OSError, ValueError):
        return
    vm = env.get("vm") or {}
    where = f"kernel {env.get('kernel', '?')}"
    if vm.get("in_vm"):
        where += (f" in ccarena's VM ({vm.get('accel')}, {vm.get('cpus')} vCPUs, host "
                  f"{vm.get('host_kernel')})")
    MEASURED_ON.add(where)


def measured_note() -> str:
    return ("Measured on " + "; ".join(sorted(MEASURED_ON)) + ".\n") if MEASURED_ON else ""


def run(text: str, reuse: bool = True, **kw):
    """Run a study (shuffled cells, as run_study does) -> ResultsDir. With
    CCARENA_VERIFY_REUSE=1 (and `reuse`) the newest stored results of a study of that
    name are read instead (re-analysing without re-running)."""
    OUT.mkdir(parents=True, exist_ok=True)
    study = loads_study(text)
    if reuse and os.environ.get("CCARENA_VERIFY_REUSE") == "1":
        from ccarena.store.results import open_results
        # <name>-<date>-<time>: not a longer name that begins alike (verify-codel-ecn)
        stored = sorted(p for p in OUT.glob(f"{study.name}-*/runs.parquet")
                        if re.fullmatch(re.escape(study.name) + r"-\d{8}-\d{6}", p.parent.name))
        if stored:
            res = open_results(stored[-1].parent)
            print(f"<!-- results (stored): {res.path} -->", flush=True)
            measured_on(res)
            return res
    res = run_study(study, results_base=OUT, progress=False, **kw)
    print(f"<!-- results: {res.path} -->", flush=True)
    measured_on(res)
    return res


def with_params(res, df: pd.DataFrame) -> pd.DataFrame:
    """df (runs or flows) with each cell's sweep parameters as columns."""
    cells = res.cells if hasattr(res, "cells") else None
    params = {}
    for d in res.run_dirs():
        m = res.run_meta(d)
        params[m["cell"]] = m.get("cell_params", {})
    p = pd.DataFrame.from_dict(params, orient="index")
    p.columns = [c.split(".")[-1] for c in p.columns]
    del cells
    # a parameter the table has already (flows' cc) is the same value: keep the table's
    return df.join(p[[c for c in p.columns if c not in df.columns]], on="cell")


def steady(res, table: str):
    """Each run's per-run `table` (ping, link_stats, ...) cut to the steady window (after
    the warm-up, up to the duration): (meta, rows) for every run that has the table."""
    for d in res.run_dirs():
        m = res.run_meta(d)
        p = d / f"{table}.parquet"
        if p.exists():
            t = pd.read_parquet(p)
            yield m, t[(t["t"] > m["warmup_s"]) & (t["t"] <= m["duration_s"])]


def ping_samples(res) -> pd.DataFrame:
    """Every steady-state ping reply: cell, rep, rtt_s, with the cell's parameters."""
    parts = []
    for m, t in steady(res, "ping"):
        t = t.assign(cell=m["cell"], rep=m["rep"], valid=m["valid"])
        parts.append(t[["cell", "rep", "valid", "seq", "rtt_s"]])
    return with_params(res, pd.concat(parts, ignore_index=True)) if parts else pd.DataFrame()


def link_out(res) -> pd.DataFrame:
    """Per run: the bit rate of the frames that left the bottleneck (direction w2e) in the
    steady window, from the link's own count (ccarena-link's link_stats; the kernel
    backend's qdisc sampler) — cell, rep, valid, out_bps, with the cell's parameters."""
    rows = []
    for m, t in steady(res, "link_stats"):
        t = t[t["dir"] == 0]
        rows.append({"cell": m["cell"], "rep": m["rep"], "valid": m["valid"],
                     "out_bps": t["bytes_out"].sum() * 8 / (m["duration_s"] - m["warmup_s"])})
    return with_params(res, pd.DataFrame(rows)) if rows else pd.DataFrame()


def welch(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) < 2 or len(b) < 2 or (a.std() == 0 and b.std() == 0):
        return math.nan
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def mannwhitney(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) < 1 or len(b) < 1:
        return math.nan
    return float(stats.mannwhitneyu(a, b).pvalue)


def two_proportions(k1, n1, k2, n2) -> float:
    """Fisher's exact test of k1/n1 against k2/n2."""
    return float(stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)


CONFIDENCE = 0.90     # two one-sided tests at 5 % each (TOST): a 90 % interval


def diff_ci(native, bpf, *, stat: str = "mean", relative: bool = False,
            seed: int = 1) -> tuple[float, float, float]:
    """(difference, low, high): `bpf` minus `native`, with its CONFIDENCE interval.
    stat "mean": Welch's interval (the samples are runs); "median": a percentile
    bootstrap (the samples are events pooled over runs: reductions, epochs, downloads).
    relative: as a fraction of the native value."""
    a, b = _clean(native), _clean(bpf)
    nan = (math.nan, math.nan, math.nan)
    if len(a) < 2 or len(b) < 2:
        return nan
    if stat == "mean":
        d = b.mean() - a.mean()
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        se = math.sqrt(va + vb)
        if se == 0:
            lo = hi = d
        else:
            df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0)
                                   + (vb ** 2 / (len(b) - 1) if vb else 0))
            t = stats.t.ppf(0.5 + CONFIDENCE / 2, df)
            lo, hi = d - t * se, d + t * se
        ref = abs(a.mean())
    else:
        rng = np.random.default_rng(seed)
        ba = np.median(rng.choice(a, (2000, len(a))), axis=1)
        bb = np.median(rng.choice(b, (2000, len(b))), axis=1)
        boot = bb - ba
        d = float(np.median(b) - np.median(a))
        lo, hi = np.quantile(boot, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        ref = abs(float(np.median(a)))
    if relative:
        if ref == 0:
            return nan
        return d / ref, lo / ref, hi / ref
    return float(d), float(lo), float(hi)


def equivalence(ci: tuple[float, float, float], tol: float) -> str:
    """Judge a difference's interval against the tolerance ±tol: "agree" when the whole
    interval lies inside it (equivalence shown, as two one-sided tests at 5 %),
    "DISAGREE" when the whole interval lies outside it (a difference beyond the tolerance
    shown), "unresolved" otherwise (too few or too noisy samples to say either)."""
    _, lo, hi = ci
    if math.isnan(lo) or math.isnan(hi):
        return "not measured"
    if -tol <= lo and hi <= tol:
        return "agree"
    if lo > tol or hi < -tol:
        return "DISAGREE"
    return "unresolved"


def _clean(x) -> np.ndarray:
    x = np.asarray(x, float)
    return x[~np.isnan(x)]


def verdict(within: bool, p: float, alpha: float = 0.01, samples=()) -> str:
    """Agree when the difference is within the stated tolerance; a significant test
    alone (large samples make tiny differences significant) is reported, not judged.
    A side without valid data is not measured, whatever the arithmetic says."""
    if any(len(x) == 0 or bool(np.all(np.isnan(np.asarray(x, float)))) for x in samples):
        return "not measured"
    sig = "" if math.isnan(p) or p >= alpha else " (differ, p<0.01)"
    return ("agree" if within else "DISAGREE") + sig


def md(rows: list[dict], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def mean_sd(x, scale=1.0) -> str:
    x = np.asarray(x, float) * scale
    x = x[~np.isnan(x)]
    if not len(x):
        return "–"
    return f"{x.mean():.3g} ± {x.std(ddof=1):.2g}" if len(x) > 1 else f"{x.mean():.3g}"


def split_valid(res, df: pd.DataFrame, by: str = "backend",
                tolerate: tuple = ()) -> tuple[pd.DataFrame, str]:
    """-> (the rows of valid runs, a note on the runs flagged invalid, which are left out:
    how many per `by` value and why). A run flagged only for reasons containing one of
    `tolerate` is kept and counted apart (a table that measures that very thing: the
    delay error of a link whose releases ran late)."""
    runs = with_params(res, res.runs)
    reasons_of = {d.name: res.run_meta(d).get("invalid_reasons", []) for d in res.run_dirs()}
    ok = runs["valid"].astype(bool)
    kept = ~ok & runs["label"].map(lambda lb: bool(reasons_of.get(lb)) and all(
        any(t in r for t in tolerate) for r in reasons_of.get(lb, []))).astype(bool)
    keep_keys = set(zip(runs[ok | kept]["cell"], runs[ok | kept]["rep"]))
    rows = df[[k in keep_keys for k in zip(df["cell"], df["rep"])]] if len(df) else df
    notes = []
    for what, sel in (("kept, as the table measures that", kept), ("left out", ~ok & ~kept)):
        bad = runs[sel]
        if bad.empty:
            continue
        counts = ", ".join(f"{k}: {len(g)} of {int((runs[by] == k).sum())}"
                           for k, g in bad.groupby(by)) if by in bad else str(len(bad))
        # the reasons as each run lists them (runs.parquet joins them with "; ", which a
        # failed command's own text contains too)
        reasons = sorted({_short(r) for lb in bad["label"] for r in reasons_of.get(lb, [])})
        notes.append(f"Runs flagged invalid and {what} ({counts}): {'; '.join(reasons)}.")
    return rows, ("\n" + "\n".join(notes) + "\n") if notes else ""


def _short(reason: str) -> str:
    if "tc_red_eval_ewma" in reason or ("red limit" in reason and "burst" in reason):
        return "tc refused the kernel backend's RED qdisc (" + (
            "burst too small for its thresholds" if "too small" in reason else "see its meta")\
            + ")"
    for key, short in (("sampling ticks", "flow engine missed sampling ticks"),
                       ("released late", "user link released packets late"),
                       ("kernel link late on every", "kernel link late on every packet"),
                       ("kernel link late", "kernel link late (pings)"),
                       ("kernel shaper", "kernel shaper behind its rate"),
                       ("CPU steal", "CPU steal"), ("qdisc sampler", "qdisc sampler gaps")):
        if key in reason:
            return short
    return reason[:80]
