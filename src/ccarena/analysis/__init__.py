"""ccarena.analysis: statistics per cell over repetitions and comparisons.

Contract: pure functions over pandas DataFrames (runs.parquet rows), no I/O —
`cell_stats(runs, by, metrics)`, `compare(a, b)`, `compare_studies(runs_a, runs_b,
metrics)`, `summarize(x)`. Invalid runs (`valid` False) are excluded and counted in
`n_invalid`, never averaged in. Formulas: docs/metrics.md.
"""
from ccarena.analysis.stats import (SUMMARY_COLS, cell_stats, compare, compare_studies, param_columns, summarize, valid_mask)
from ccarena.analysis.comparison import KEY_METRICS

__all__ = ["cell_stats", "compare", "compare_studies", "summarize", "param_columns",
           "valid_mask", "SUMMARY_COLS", "KEY_METRICS"]
