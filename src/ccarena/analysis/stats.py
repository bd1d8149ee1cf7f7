"""Statistics over repetitions and comparisons between cells or studies.

Contract:
- `summarize(x)` -> dict n, mean, sd, min, max, median, ci_low, ci_high, ci_half, cov.
- `cell_stats(runs, by, metrics)` -> long DataFrame, one row per group and metric.
- `compare(a, b)` -> dict with Welch's t-test, Mann-Whitney U and effect sizes.
- `compare_studies(runs_a, runs_b, by, metrics)` -> one row per common cell and metric.
Runs whose `valid` column is False are excluded from every statistic and counted in
`n_invalid`; NaN values of a metric are excluded and counted in `n_missing`. Nothing here
reads files. Formulas: docs/metrics.md ("Statistics over repetitions").
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as sps

NAN = float("nan")
SUMMARY_COLS = ["n", "n_invalid", "n_missing", "mean", "sd", "min", "max", "median",
                "ci_low", "ci_high", "ci_half", "cov"]


def _clean(x) -> np.ndarray:
    x = np.asarray(pd.to_numeric(pd.Series(x), errors="coerce"), dtype=float)
    return x[~np.isnan(x)]


def summarize(x, confidence: float = 0.95) -> dict:
    """Descriptive statistics and the Student-t confidence interval of the mean.

    CI = mean +- t_{(1+confidence)/2, n-1} * sd / sqrt(n) with sd the sample standard
    deviation (ddof=1); undefined (NaN) for n < 2. CoV = sd / |mean|."""
    x = _clean(x)
    n = x.size
    r = dict.fromkeys(["mean", "sd", "min", "max", "median", "ci_low", "ci_high", "ci_half",
                       "cov"], NAN)
    r["n"] = n
    if n == 0:
        return r
    mean = float(x.mean())
    r.update(mean=mean, min=float(x.min()), max=float(x.max()), median=float(np.median(x)))
    if n >= 2:
        sd = float(x.std(ddof=1))
        half = float(sps.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
        r.update(sd=sd, ci_low=mean - half, ci_high=mean + half, ci_half=half,
                 cov=sd / abs(mean) if mean != 0 else NAN)
    return r


def valid_mask(runs: pd.DataFrame) -> pd.Series:
    """True for runs that may be averaged: `valid` missing or not False."""
    if "valid" not in runs:
        return pd.Series(True, index=runs.index)
    v = runs["valid"]
    return ~(v.astype(object).map(lambda x: x is False or x == 0 or str(x).lower() == "false"))


def cell_stats(runs: pd.DataFrame, by: list[str], metrics: list[str],
               confidence: float = 0.95) -> pd.DataFrame:
    """Statistics per group of `by` columns over repetitions, for each metric.

    Returns columns by..., metric, n, n_invalid, n_missing, mean, sd, min, max, median,
    ci_low, ci_high, ci_half, cov. A metric absent from `runs` yields n = 0 rows."""
    by = list(by)
    cols = by + ["metric"] + SUMMARY_COLS
    if runs is None or len(runs) == 0:
        return pd.DataFrame(columns=cols)
    ok = valid_mask(runs)
    rows = []
    key_df = runs[by] if by else pd.DataFrame(index=runs.index)
    # NaN keys form their own group; a one-column key is passed bare (pandas' scalar keys)
    groups = (key_df.astype(object).fillna("").groupby(by if len(by) > 1 else by[0],
                                                        sort=True, dropna=False).groups
              if by else {(): runs.index})
    for key, idx in groups.items():
        key = key if isinstance(key, tuple) else (key,)
        sub = runs.loc[idx]
        good = sub[ok.loc[idx].to_numpy()]
        n_invalid = int(len(sub) - len(good))
        # keep the original (not the filled) key values
        keyvals = dict(zip(by, sub.iloc[0][by].tolist())) if by else {}
        for m in metrics:
            vals = good[m] if m in good else pd.Series(dtype=float)
            s = summarize(vals, confidence)
            rows.append({**keyvals, "metric": m, **s, "n_invalid": n_invalid,
                         "n_missing": int(len(good) - s["n"])})
    return pd.DataFrame(rows, columns=cols)


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Welch's t, its degrees of freedom (Welch-Satterthwaite) and two-sided p, from
    scipy.stats.ttest_ind(equal_var=False)."""
    se2 = a.var(ddof=1) / a.size + b.var(ddof=1) / b.size
    diff = a.mean() - b.mean()
    if se2 == 0:  # both samples constant: a difference is certain, equality is certain
        return (math.copysign(math.inf, diff) if diff else 0.0, NAN, 0.0 if diff else 1.0)
    r = sps.ttest_ind(a, b, equal_var=False)
    return float(r.statistic), float(r.df), float(r.pvalue)


def compare(a, b, alpha: float = 0.05) -> dict:
    """Compare two samples (e.g. one metric in two cells).

    Welch's t-test (unequal variances) and the two-sided Mann-Whitney U test; effect
    sizes Cohen's d (pooled sd) and rank-biserial r = 2U/(n_a n_b) - 1 (r > 0: a tends
    to be larger). Needs at least 2 values per side; otherwise tests are NaN."""
    a, b = _clean(a), _clean(b)
    sa, sb = summarize(a), summarize(b)
    r = {"n_a": a.size, "n_b": b.size, "mean_a": sa["mean"], "mean_b": sb["mean"],
         "ci_half_a": sa["ci_half"], "ci_half_b": sb["ci_half"],
         "diff": sa["mean"] - sb["mean"], "rel_diff": NAN, "welch_t": NAN, "welch_df": NAN,
         "welch_p": NAN, "mw_u": NAN, "mw_p": NAN, "cohen_d": NAN, "rank_biserial": NAN,
         "alpha": alpha, "significant": False}
    if sb["mean"] and not math.isnan(sb["mean"]):
        r["rel_diff"] = r["diff"] / abs(sb["mean"])
    if a.size < 2 or b.size < 2:
        return r
    r["welch_t"], r["welch_df"], r["welch_p"] = _welch(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u = sps.mannwhitneyu(a, b, alternative="two-sided")
    r["mw_u"], r["mw_p"] = float(u.statistic), float(u.pvalue)
    r["rank_biserial"] = 2 * r["mw_u"] / (a.size * b.size) - 1
    sp = math.sqrt(((a.size - 1) * sa["sd"] ** 2 + (b.size - 1) * sb["sd"] ** 2)
                   / (a.size + b.size - 2))
    r["cohen_d"] = r["diff"] / sp if sp > 0 else (math.copysign(math.inf, r["diff"])
                                                   if r["diff"] else 0.0)
    r["significant"] = bool(r["welch_p"] < alpha)
    return r


def param_columns(runs: pd.DataFrame) -> list[str]:
    """The swept factors stored in runs.parquet: dotted names such as
    "bottleneck.buffer" or "flow.bulk.cc" (metrics never contain a dot)."""
    return [c for c in runs.columns if "." in str(c)]


def compare_studies(runs_a: pd.DataFrame, runs_b: pd.DataFrame, metrics: list[str],
                    by: list[str] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Per common cell (same values of `by`; default: the common swept factors, else
    `cell`) and metric: both means with CIs and the tests of `compare`. Invalid runs are
    excluded on both sides and counted."""
    if by is None:
        by = [c for c in param_columns(runs_a) if c in runs_b.columns] or ["cell"]
    ka = runs_a[valid_mask(runs_a)]
    kb = runs_b[valid_mask(runs_b)]
    gkey = by if len(by) > 1 else by[0]
    ga = dict(list(ka.groupby(gkey, sort=True, dropna=False)))
    gb = dict(list(kb.groupby(gkey, sort=True, dropna=False)))
    rows = []
    for key in [k for k in ga if k in gb]:
        keyvals = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for m in metrics:
            if m not in runs_a or m not in runs_b:
                continue
            rows.append({**keyvals, "metric": m, **compare(ga[key][m], gb[key][m], alpha)})
    out = pd.DataFrame(rows)
    if len(out):
        out["n_invalid_a"] = int((~valid_mask(runs_a)).sum())
        out["n_invalid_b"] = int((~valid_mask(runs_b)).sum())
    return out
