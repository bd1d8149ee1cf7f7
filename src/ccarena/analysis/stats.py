"""Statistics over repetitions and comparisons between cells or studies.

Contract:
- `summarize(x, center="mean")` -> dict n, mean, sd, min, max, median, ci_low, ci_high,
  ci_half, cov, center, interval. With center "mean" the interval is Student t's; with
  "median" a seeded bootstrap of the median (scipy.stats.bootstrap, BCa).
- `center_of(metric)` -> "median" for percentile metrics (rtt_p95_s, fct_p95_s, ...),
  whose runs' values are summarised by their median and a bootstrap interval; "mean"
  for every other metric.
- `cell_stats(runs, by, metrics)` -> long DataFrame, one row per group and metric.
- `compare(a, b, center=)` -> dict with Welch's t-test, Mann-Whitney U, effect sizes and
  the confidence interval of the difference itself.
- `compare_studies(runs_a, runs_b, by, metrics)` -> one row per common cell and metric,
  with p-values adjusted for the false discovery rate over the whole table
  (Benjamini-Hochberg): a cell is significant when its q < alpha.
Runs whose `valid` column is False are excluded from every statistic and counted in
`n_invalid`; NaN values of a metric are excluded and counted in `n_missing`. Nothing here
reads files. Formulas: docs/metrics.md ("Statistics over repetitions").
"""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
from scipy import stats as sps

NAN = float("nan")
SUMMARY_COLS = ["n", "n_invalid", "n_missing", "mean", "sd", "min", "max", "median",
                "ci_low", "ci_high", "ci_half", "cov", "center", "interval"]
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 20261128       # every bootstrap is seeded: the same data, the same interval
CORRECTION = "Benjamini-Hochberg"
_PERCENTILE = re.compile(r"_p\d\d(_|$)")


def center_of(metric: str) -> str:
    """How a metric's runs are summarised: "median" for a percentile (rtt_p95_s,
    ping_rtt_p99_s, fct_p95_s: one tail value per run, skewed, where the t interval of a
    mean does not apply), "mean" otherwise."""
    return "median" if _PERCENTILE.search(str(metric)) else "mean"


def _clean(x) -> np.ndarray:
    x = np.asarray(pd.to_numeric(pd.Series(x), errors="coerce"), dtype=float)
    return x[~np.isnan(x)]


def summarize(x, confidence: float = 0.95, center: str = "mean") -> dict:
    """Descriptive statistics and the confidence interval of the centre.

    center "mean": CI = mean +- t_{(1+confidence)/2, n-1} * sd / sqrt(n), sd the sample
    standard deviation (ddof=1). center "median": the bootstrap CI of the median
    (_bootstrap). Undefined (NaN) for n < 2; a constant sample has a zero-width interval.
    CoV = sd / |mean|."""
    x = _clean(x)
    n = x.size
    r = dict.fromkeys(["mean", "sd", "min", "max", "median", "ci_low", "ci_high", "ci_half",
                       "cov"], NAN)
    r.update(n=n, center=center, interval="t" if center == "mean" else "bootstrap")
    if n == 0:
        return r
    mean = float(x.mean())
    r.update(mean=mean, min=float(x.min()), max=float(x.max()), median=float(np.median(x)))
    if n >= 2:
        sd = float(x.std(ddof=1))
        r.update(sd=sd, cov=sd / abs(mean) if mean != 0 else NAN)
        if center == "median":
            lo, hi = _bootstrap((x,), _median, confidence)
        else:
            half = float(sps.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
            lo, hi = mean - half, mean + half
        r.update(ci_low=lo, ci_high=hi, ci_half=(hi - lo) / 2)
    return r


def _median(x, axis=-1):
    return np.median(x, axis=axis)


def _median_diff(a, b, axis=-1):
    return np.median(a, axis=axis) - np.median(b, axis=axis)


def _bootstrap(samples: tuple, statistic, confidence: float) -> tuple[float, float]:
    """The bootstrap confidence interval of `statistic` over independent `samples`
    (scipy.stats.bootstrap: BCa, BOOTSTRAP_RESAMPLES resamples, seeded). Samples that are
    all constant give the statistic itself at both ends; where BCa is undefined (its
    acceleration divides by zero on a sample with ties only) the percentile interval is
    used."""
    point = float(statistic(*samples))
    if all(np.ptp(s) == 0 for s in samples):
        return point, point
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = sps.bootstrap(samples, statistic, confidence_level=confidence,
                               n_resamples=BOOTSTRAP_RESAMPLES, method=method,
                               vectorized=True,
                               random_state=np.random.default_rng(BOOTSTRAP_SEED))
        lo, hi = float(ci.confidence_interval.low), float(ci.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi
    return NAN, NAN


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
    ci_low, ci_high, ci_half, cov, center, interval: a percentile metric's interval is the
    bootstrap CI of its median (center_of). A metric absent from `runs` yields n = 0
    rows."""
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
            s = summarize(vals, confidence, center_of(m))
            rows.append({**keyvals, "metric": m, **s, "n_invalid": n_invalid,
                         "n_missing": int(len(good) - s["n"])})
    return pd.DataFrame(rows, columns=cols)


def _welch(a: np.ndarray, b: np.ndarray, confidence: float):
    """Welch's t, its degrees of freedom (Welch-Satterthwaite), two-sided p and the
    confidence interval of mean(a) - mean(b), from scipy.stats.ttest_ind(equal_var=False)."""
    se2 = a.var(ddof=1) / a.size + b.var(ddof=1) / b.size
    diff = a.mean() - b.mean()
    if se2 == 0:  # both samples constant: a difference is certain, equality is certain
        return (math.copysign(math.inf, diff) if diff else 0.0, NAN, 0.0 if diff else 1.0,
                (float(diff), float(diff)))
    r = sps.ttest_ind(a, b, equal_var=False)
    ci = r.confidence_interval(confidence)
    return float(r.statistic), float(r.df), float(r.pvalue), (float(ci.low), float(ci.high))


def compare(a, b, alpha: float = 0.05, center: str = "mean",
            confidence: float = 0.95) -> dict:
    """Compare two samples (e.g. one metric in two cells).

    Welch's t-test (unequal variances) and the two-sided Mann-Whitney U test; effect
    sizes Cohen's d (pooled sd) and rank-biserial r = 2U/(n_a n_b) - 1 (r > 0: a tends
    to be larger). `diff` is centre(a) - centre(b) with its confidence interval
    (`diff_ci_low`, `diff_ci_high`): for center "mean" the difference of the means, Welch's
    interval, tested by Welch's p; for "median" the difference of the medians, a seeded
    bootstrap interval, tested by Mann-Whitney's p. `p` is that test's p-value, `q` the
    same here (one test; compare_studies adjusts it over a table); significant = q < alpha.
    Needs at least 2 values per side; otherwise tests are NaN."""
    a, b = _clean(a), _clean(b)
    sa, sb = summarize(a, confidence), summarize(b, confidence)
    ca, cb = (sa["mean"], sb["mean"]) if center == "mean" else (sa["median"], sb["median"])
    r = {"n_a": a.size, "n_b": b.size, "mean_a": sa["mean"], "mean_b": sb["mean"],
         "median_a": sa["median"], "median_b": sb["median"],
         "ci_half_a": sa["ci_half"], "ci_half_b": sb["ci_half"], "center": center,
         "diff": ca - cb, "diff_ci_low": NAN, "diff_ci_high": NAN, "rel_diff": NAN,
         "test": "welch" if center == "mean" else "mann-whitney", "p": NAN, "q": NAN,
         "welch_t": NAN, "welch_df": NAN, "welch_p": NAN, "mw_u": NAN, "mw_p": NAN,
         "cohen_d": NAN, "rank_biserial": NAN, "alpha": alpha, "significant": False}
    if center == "median":
        sa2, sb2 = summarize(a, confidence, "median"), summarize(b, confidence, "median")
        r["ci_low_a"], r["ci_high_a"] = sa2["ci_low"], sa2["ci_high"]
        r["ci_low_b"], r["ci_high_b"] = sb2["ci_low"], sb2["ci_high"]
    else:
        r["ci_low_a"], r["ci_high_a"] = sa["ci_low"], sa["ci_high"]
        r["ci_low_b"], r["ci_high_b"] = sb["ci_low"], sb["ci_high"]
    if cb and not math.isnan(cb):
        r["rel_diff"] = r["diff"] / abs(cb)
    if a.size < 2 or b.size < 2:
        return r
    r["welch_t"], r["welch_df"], r["welch_p"], welch_ci = _welch(a, b, confidence)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u = sps.mannwhitneyu(a, b, alternative="two-sided")
    r["mw_u"], r["mw_p"] = float(u.statistic), float(u.pvalue)
    r["rank_biserial"] = 2 * r["mw_u"] / (a.size * b.size) - 1
    sp = math.sqrt(((a.size - 1) * sa["sd"] ** 2 + (b.size - 1) * sb["sd"] ** 2)
                   / (a.size + b.size - 2))
    dm = sa["mean"] - sb["mean"]          # Cohen's d is of the means, whatever the centre
    r["cohen_d"] = dm / sp if sp > 0 else (math.copysign(math.inf, dm) if dm else 0.0)
    if center == "mean":
        r["diff_ci_low"], r["diff_ci_high"] = welch_ci
        r["p"] = r["welch_p"]
    else:
        r["diff_ci_low"], r["diff_ci_high"] = _bootstrap((a, b), _median_diff, confidence)
        r["p"] = r["mw_p"]
    r["q"] = r["p"]
    r["significant"] = bool(r["q"] < alpha)
    return r


def fdr(p) -> np.ndarray:
    """Benjamini-Hochberg q-values of the p-values `p` (scipy.stats.
    false_discovery_control); NaN p-values (tests that could not run) stay NaN and do
    not count among the tests."""
    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, NAN)
    ok = ~np.isnan(p)
    if ok.any():
        q[ok] = sps.false_discovery_control(p[ok], method="bh")
    return q


def param_columns(runs: pd.DataFrame) -> list[str]:
    """The swept factors stored in runs.parquet: dotted names such as
    "bottleneck.buffer" or "flow.bulk.cc" (metrics never contain a dot)."""
    return [c for c in runs.columns if "." in str(c)]


def compare_studies(runs_a: pd.DataFrame, runs_b: pd.DataFrame, metrics: list[str],
                    by: list[str] | None = None, alpha: float = 0.05,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Per common cell (same values of `by`; default: the common swept factors, else
    `cell`) and metric: both centres with CIs, the difference with its CI, and the tests
    of `compare` (percentile metrics by their medians, center_of). The p-values of the
    whole table are adjusted together for the false discovery rate (Benjamini-Hochberg,
    column `q`; `n_tests` of them): `significant` = q < alpha, so among the cells marked
    significant at most a fraction alpha is expected to be chance. Invalid runs are
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
            rows.append({**keyvals, "metric": m, **compare(
                ga[key][m], gb[key][m], alpha, center_of(m), confidence)})
    out = pd.DataFrame(rows)
    if len(out):
        out["q"] = fdr(out["p"])
        out["significant"] = out["q"] < alpha
        out["correction"] = CORRECTION
        out["n_tests"] = int(out["p"].notna().sum())
        out["confidence"] = confidence
        out["n_invalid_a"] = int((~valid_mask(runs_a)).sum())
        out["n_invalid_b"] = int((~valid_mask(runs_b)).sum())
    return out
