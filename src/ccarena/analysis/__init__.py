"""ccarena.analysis: statistics per cell over repetitions and comparisons.

Contract: pure functions over pandas DataFrames (runs.parquet rows), no I/O —
`cell_stats(runs, by, metrics)`, `compare(a, b)`, `compare_studies(runs_a, runs_b,
metrics)`, `summarize(x)`. Invalid runs (`valid` False) are excluded and counted in
`n_invalid`, never averaged in. Formulas: docs/metrics.md.
"""
from ccarena.analysis.stats import (SUMMARY_COLS, cell_stats, compare, compare_studies, param_columns, summarize, valid_mask)

# The run metrics worth a table in a report, in reading order.
KEY_METRICS = ["goodput_bps", "utilisation", "jain", "jain_cc", "convergence_s",
               "rtt_mean_s", "rtt_p99_s", "rtt_inflation", "ping_rtt_p99_s", "retrans_ratio",
               "loss_ratio", "queue_mean_pkts", "power_norm", "fct_mean_s"]

__all__ = ["cell_stats", "compare", "compare_studies", "summarize", "param_columns",
           "valid_mask", "SUMMARY_COLS", "KEY_METRICS"]
