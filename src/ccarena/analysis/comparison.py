"""Two stored studies compared cell by cell (`ccarena compare`, `ccarena.compare`).

Contract: `compare_results(a, b, metrics=None, by=None, alpha=0.05)` takes two opened
results (store.results.ResultsDir) and returns stats.compare_studies' table, SI units,
without the metrics neither study measured; `table.attrs` holds `by` (the columns the
cells were matched on), `alpha`, and `host_differences` (the TCP settings the two
studies' hosts had differently, one line each: a difference in the table may be theirs).
"""
from __future__ import annotations

import pandas as pd

from ccarena.analysis.host_settings import differences, recorded
from ccarena.analysis.stats import compare_studies
from ccarena.errors import CcarenaError

# The run metrics worth a table in a report, in reading order.
KEY_METRICS = ["goodput_bps", "utilisation", "jain", "jain_cc", "convergence_s",
               "rtt_mean_s", "rtt_p99_s", "rtt_inflation", "ping_rtt_p99_s", "retrans_ratio",
               "loss_ratio", "queue_mean_pkts", "power_norm", "fct_mean_s"]


def compare_results(a, b, metrics: list[str] | None = None, by: list[str] | None = None,
                    alpha: float = 0.05) -> pd.DataFrame:
    """Per cell both studies have (matched on `by`: default the swept factors both share,
    else `cell`) and per metric (default: the key run metrics both measured): both
    centres with their intervals, the difference B−A's interval, p, the
    Benjamini-Hochberg q and Cohen's d. Raises CcarenaError when a `by` column or a named
    metric is in neither study."""
    metrics = list(metrics) if metrics else [m for m in KEY_METRICS
                                             if m in a.runs and m in b.runs]
    unknown = [m for m in metrics if m not in a.runs and m not in b.runs]
    if unknown:
        from difflib import get_close_matches
        near = get_close_matches(unknown[0], [str(c) for c in a.runs.columns], n=1)
        raise CcarenaError(f"compare {a.path} {b.path}: no metric {', '.join(unknown)} in "
                           "either study's runs" + (f" (did you mean {near[0]!r}?)"
                                                    if near else ""))
    if not by:
        by = [f for f in a.factors if f in b.factors and f in a.runs and f in b.runs] \
            or ["cell"]
    by = list(by)
    missing = [c for c in by if c not in a.runs or c not in b.runs]
    if missing:
        raise CcarenaError(f"compare {a.path} {b.path}: column(s) {', '.join(missing)} not "
                           "in both studies' runs")
    res = compare_studies(a.runs, b.runs, metrics, by=by, alpha=alpha)
    if len(res):
        res = res[(res["n_a"] > 0) | (res["n_b"] > 0)].reset_index(drop=True)
    res.attrs.update(by=by, alpha=alpha,
                     host_differences=differences(recorded(a.metas), recorded(b.metas)))
    return res
