"""The metric names a study's [[expect]] checks may use, and the checks held against them
before anything is built (`ccarena validate`, and run_study before its first run).

    metric_names() -> (flow, run)    the columns of results.flows and results.runs a check
                                     can judge, from the code that computes them
    check(study)                     SpecError naming the check's key for an unknown metric
                                     (with did-you-mean) or a metric of the other level

The names come from running metrics.run_metrics on a synthetic run (analysis.synthetic)
and adding the columns the store gives every row, so a metric added to the code is known
here at once; docs/metrics.md documents the same names (a unit test compares them)."""
from __future__ import annotations

import difflib
from functools import lru_cache

from ccarena.errors import SpecError

# columns that name a row rather than measure it: no check judges them
IDENTITY = {"run_id", "study", "cell", "rep", "label", "index", "flow", "name", "kind", "cc",
            "from", "to", "conn", "valid", "invalid_reasons", "anomaly_list",
            "rerun_reasons", "limit_evidence"}


@lru_cache(maxsize=1)
def metric_names() -> tuple[frozenset, frozenset]:
    """(flow, run): the metric columns of results.flows and results.runs."""
    from ccarena.analysis.synthetic import synthetic_run
    from ccarena.metrics.run import run_metrics
    from ccarena.store.results import anomaly_columns, rerun_columns, worker_columns
    tables, meta = synthetic_run(n_flows=1, duration_s=1.0, warmup_s=0.2, dt=0.1)
    flows, run = run_metrics(tables, meta)
    store = {**worker_columns({}), "cpu_busy_frac": 0.0, "cpu_steal_frac": 0.0}
    flow = set(flows.columns) | set(worker_columns({}))
    runs = set(run) | set(store) | set(anomaly_columns({})) | set(rerun_columns({}))
    return frozenset(flow - IDENTITY), frozenset(runs - IDENTITY)


def _known(part: str, level: str) -> str:
    """Why `part` is not a metric of `level` ("" when it is)."""
    flow, run = metric_names()
    here, there = (flow, run) if level == "flow" else (run, flow)
    if part in here:
        return ""
    if part in there:
        return (f"{part!r} is a run metric: add level = \"run\" to this check" if level ==
                "flow" else f"{part!r} is a flow metric: leave out level = \"run\" (flow "
                "is the default)")
    near = difflib.get_close_matches(part, sorted(here), n=1) or \
        difflib.get_close_matches(part, sorted(there), n=1)
    return (f"unknown metric {part!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
            + f"; a {level} metric of docs/metrics.md, or a ratio \"a / b\" of two")


def check_expect(expect: list, path: str, prefix: str = "expect") -> None:
    for i, e in enumerate(expect):
        level = e.get("level", "flow")
        metric = str(e.get("metric", ""))
        for part in (x.strip() for x in metric.split("/", 1)):
            why = _known(part, level)
            if why:
                raise SpecError(path, f"{prefix}[{i}].metric", why)


def check(study) -> None:
    """Every check of the study, at its scale and at the others (load.check_scales kept
    theirs), names a metric its level has."""
    if not study.expect and not any((getattr(study, "other_checks", None) or {}).values()):
        return      # nothing to check: the metric names are not even computed
    check_expect(study.expect, study.path)
    for name, expect in (getattr(study, "other_checks", None) or {}).items():
        try:
            check_expect(expect, study.path)
        except SpecError as e:
            raise SpecError(study.path, e.key, f"{e.reason} (at --scale {name})") from None
