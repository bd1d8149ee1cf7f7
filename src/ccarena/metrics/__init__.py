"""ccarena.metrics: from one run's samples to the numbers researchers report.

Contract:
- `run_metrics(tables, meta) -> (flows DataFrame, run dict)`: per-flow (conn == -1) and
  per-connection rows, and flat per-run scalars; missing tables give NaN metrics.
- `goodput_series(rx, meta, interval_s)` and `jain_series(rx, meta, interval_s)`: the
  per-interval series behind goodput-over-time, Jain-over-time and convergence.
- `formulas`: pure functions (jain, jain_groups, percentiles, convergence_time,
  bdp_bytes, window_limit_bps, mathis_bps).
Every metric, its formula and unit: docs/metrics.md.
"""
from ccarena.metrics.formulas import (MATHIS_C, bdp_bytes, convergence_time, jain, jain_groups, mathis_bps, percentiles, window_limit_bps)
from ccarena.metrics.run import run_metrics  # noqa: F401
from ccarena.metrics.series import DEFAULT_INTERVAL_S, goodput_series, jain_series  # noqa: F401

__all__ = ["run_metrics", "goodput_series", "jain_series", "jain", "jain_groups",
           "percentiles", "convergence_time", "bdp_bytes", "window_limit_bps", "mathis_bps",
           "MATHIS_C", "DEFAULT_INTERVAL_S"]
