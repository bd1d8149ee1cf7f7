"""Statistics a results directory keeps beside its runs: cells.parquet, one row per cell,
swept factor values, flow and algorithm and metric, over the valid repetitions.

`refresh(results)` rewrites the summaries after runs were added (the store's runs and
flows tables, then the cell statistics); `flow_cells(results)` computes them without
writing (for a read-only directory)."""
from __future__ import annotations

import pandas as pd

from ccarena.analysis.stats import cell_stats

CELL_METRICS = ("goodput_bps", "rtt_mean_s", "rtt_p95_s", "retrans_ratio", "fct_s")


def flow_cells(results) -> pd.DataFrame:
    fdf = results.flows
    if not len(fdf):
        return pd.DataFrame()
    params = [p for p in results.factors if p in fdf.columns]
    top = fdf[fdf["conn"] == -1] if "conn" in fdf else fdf
    metrics = [c for c in CELL_METRICS if c in top.columns]
    by = [c for c in ("cell", *params, "name", "cc") if c in top.columns]
    return cell_stats(top, by=by, metrics=metrics)


def refresh(results) -> None:
    """runs.parquet, flows.parquet and cells.parquet anew from the complete runs."""
    from ccarena.store.writer import Writer
    w = Writer(results)
    w.rebuild_summaries()
    w.write_table("cells", flow_cells(results))
