"""Pure formulas behind ccarena's metrics: numbers in, numbers out, no tables, no I/O.

Contract: every function here takes numpy-compatible inputs and returns floats or arrays;
empty or all-NaN input gives NaN (never an exception), so a run with a missing table
still yields a full row of metrics. The formulas are written out in docs/metrics.md.
"""
from __future__ import annotations

import math

import numpy as np

MATHIS_C = math.sqrt(1.5)  # C = sqrt(3/2): periodic-loss model of Mathis et al. 1997
PERCENTILES = (50, 95, 99)


def jain(x) -> float:
    """Jain's fairness index J = (sum x)^2 / (n * sum x^2); 1 = equal, 1/n = one hog.

    NaN entries are dropped; all-zero or empty input is undefined and gives NaN."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    sq = float(np.sum(x * x))
    if x.size == 0 or sq == 0.0:
        return float("nan")
    return float(np.sum(x)) ** 2 / (x.size * sq)


def jain_rows(m, active=None) -> np.ndarray:
    """Jain's index of every row of matrix m (intervals x flows), over the active cells.

    active: boolean matrix of the same shape (None = all). Rows with no active flow or
    zero total give NaN."""
    m = np.asarray(m, dtype=float)
    if m.ndim != 2 or m.shape[0] == 0:
        return np.full(m.shape[0] if m.ndim == 2 else 0, np.nan)
    act = np.ones_like(m, dtype=bool) if active is None else np.asarray(active, dtype=bool)
    act = act & ~np.isnan(m)
    x = np.where(act, m, 0.0)
    n = act.sum(axis=1)
    s = x.sum(axis=1)
    sq = (x * x).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        j = s * s / (n * sq)
    j[(n == 0) | (sq == 0)] = np.nan
    return j


def jain_groups(values, groups) -> float:
    """Jain's index between groups (e.g. congestion-control algorithms).

    Each group contributes the mean of its members, so 1 cubic flow against 4 reno flows
    is judged per flow, not per group total. Fewer than two groups gives NaN."""
    v = np.asarray(values, dtype=float)
    g = np.asarray(groups, dtype=object)
    keys = [k for k in dict.fromkeys(g.tolist())]
    if len(keys) < 2:
        return float("nan")
    means = [np.nanmean(v[g == k]) if np.any(~np.isnan(v[g == k])) else np.nan for k in keys]
    return jain(means)


def percentiles(x, qs=PERCENTILES) -> dict[int, float]:
    """Percentiles by linear interpolation between order statistics (numpy's default,
    Hyndman-Fan type 7). NaNs are dropped."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {q: float("nan") for q in qs}
    vals = np.percentile(x, qs)
    return {q: float(v) for q, v in zip(qs, vals)}


def convergence_time(t, j, threshold: float = 0.9) -> float:
    """First time after which the series j stays >= threshold until its end.

    t: start time of each interval (sorted); j: Jain index per interval. NaN counts as
    below threshold (a stalled interval is not fair). Returns NaN if the last interval is
    below the threshold (never converged) or the series is empty."""
    t = np.asarray(t, dtype=float)
    j = np.asarray(j, dtype=float)
    if t.size == 0:
        return float("nan")
    ok = np.nan_to_num(j, nan=-1.0) >= threshold
    if not ok[-1]:
        return float("nan")
    bad = np.flatnonzero(~ok)
    first = 0 if bad.size == 0 else bad[-1] + 1
    return float(t[first])


def bdp_bytes(rate_bps, rtt_s) -> float:
    """Bandwidth-delay product in bytes: rate (bit/s) x RTT (s) / 8."""
    if rate_bps is None or rtt_s is None:
        return float("nan")
    return float(rate_bps) * float(rtt_s) / 8.0


def window_limit_bps(window_bytes, rtt_s) -> float:
    """Throughput ceiling of a window-limited sender: W (bytes) x 8 / RTT (s), in bit/s."""
    if not rtt_s or rtt_s <= 0 or window_bytes is None or np.isnan(window_bytes):
        return float("nan")
    return float(window_bytes) * 8.0 / float(rtt_s)


def mathis_bps(mss_bytes, rtt_s, p) -> float:
    """Mathis et al. model: throughput = MSS/RTT x C/sqrt(p), C = sqrt(3/2), in bit/s.

    Undefined (NaN) for p <= 0 (no loss: the model has no prediction) or missing RTT."""
    try:
        mss, rtt, p = float(mss_bytes), float(rtt_s), float(p)
    except (TypeError, ValueError):
        return float("nan")
    if not (p > 0) or not (rtt > 0) or not (mss > 0):
        return float("nan")
    return mss * 8.0 / rtt * MATHIS_C / math.sqrt(p)


def safe_ratio(num, den) -> float:
    """num / den, NaN when the denominator is zero or missing."""
    try:
        num, den = float(num), float(den)
    except (TypeError, ValueError):
        return float("nan")
    if den == 0 or math.isnan(den):
        return float("nan")
    return num / den
