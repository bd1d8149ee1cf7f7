"""[[expect]] checks on hand-made results: bounds per cell relative to the cell's rate and
base RTT, ratios to a reference cell, trends over a factor, invalid runs ignored."""
import textwrap

import pytest
from types import SimpleNamespace

import pandas as pd

from ccarena.analysis.checks import evaluate
from ccarena.study.load import loads_study

STUDY = '''
[study]
name = "c"
duration = "10s"
[bottleneck]
rate = "10mbit"
delay = "10ms"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
[sweep]
"bottleneck.buffer" = ["20p", "100p"]
'''


def results(tmp_path, flows_rows, runs_rows):
    return SimpleNamespace(flows=pd.DataFrame(flows_rows), runs=pd.DataFrame(runs_rows),
                           path=tmp_path)


def make(tmp_path, goodputs):
    flows, runs = [], []
    for i, (cell, buf, g, valid) in enumerate(goodputs):
        rid = f"r{i}"
        flows.append({"run_id": rid, "cell": cell, "conn": -1, "name": "bulk",
                      "goodput_bps": g, "bottleneck.buffer": buf, "valid": valid})
        runs.append({"run_id": rid, "cell": cell, "rate_bps": 10e6, "base_rtt_s": 0.02,
                     "bottleneck.buffer": buf, "valid": valid,
                     "ping_rtt_p50_s": 0.02 * (2 if buf == "20p" else 10)})
    return results(tmp_path, flows, runs)


def study_with(expect: str):
    return loads_study(STUDY + textwrap.dedent(expect))


def test_bounds_relative_to_rate_per_cell(tmp_path):
    res = make(tmp_path, [("c0", "20p", 9.5e6, True), ("c1", "100p", 7e6, True),
                          ("c1", "100p", 1e6, False)])   # the invalid run is ignored
    out = evaluate(res, study_with('''
        [[expect]]
        metric = "goodput_bps"
        flow = "bulk"
        min = "90%rate"
        max = "100%rate"
        '''))
    by_cell = {r["cell"]: r["ok"] for r in out}
    assert by_cell == {"buffer=20p": True, "buffer=100p": False}


def test_ratio_to_a_reference_cell(tmp_path):
    res = make(tmp_path, [("c0", "20p", 9e6, True), ("c1", "100p", 9e6, True)])
    out = evaluate(res, study_with('''
        [[expect]]
        metric = "ping_rtt_p50_s"
        level = "run"
        where = { "bottleneck.buffer" = "100p" }
        relative_to = { "bottleneck.buffer" = "20p" }
        min = 4
        '''))
    assert len(out) == 1 and out[0]["ok"] and out[0]["measured"] == 5.0


def test_trend_over_a_factor(tmp_path):
    res = make(tmp_path, [("c0", "20p", 5e6, True), ("c1", "100p", 9e6, True)])
    up = evaluate(res, study_with('''
        [[expect]]
        metric = "goodput_bps"
        trend = "increasing"
        over = "bottleneck.buffer"
        '''))
    down = evaluate(res, study_with('''
        [[expect]]
        metric = "goodput_bps"
        trend = "decreasing"
        over = "bottleneck.buffer"
        '''))
    assert up[0]["ok"] and not down[0]["ok"]


def test_missing_metric_fails_with_a_reason(tmp_path):
    res = make(tmp_path, [("c0", "20p", 5e6, True)])
    out = evaluate(res, study_with('''
        [[expect]]
        metric = "no_such_metric"
        '''))
    # the cause is the name (validate refuses it before the runs; results checked by
    # hand, or with another study, still say so)
    assert not out[0]["ok"] and out[0]["why"] == \
        "the flow rows have no metric 'no_such_metric' (docs/metrics.md)"


def test_a_partial_study_does_not_pass(tmp_path):
    """Runs of one cell removed (as after a crash): the checks covering that cell fail with
    the missing count, the status says missing, and `ccarena check` exits 4: the study
    is incomplete (what its runs lack comes before its checks)."""
    import json
    import shutil

    from conftest import ccarena_cli

    from ccarena.analysis.synthetic import write_synthetic_study
    from ccarena.store.results import open_results
    d = write_synthetic_study(tmp_path / "s", reps=2, duration_s=4.0)
    st = json.loads((d / "study.json").read_text())
    st["expect"] = [{"name": "goodput within the rate", "metric": "goodput_bps",
                     "level": "run", "max": "100%rate"}]
    (d / "study.json").write_text(json.dumps(st))
    complete = ccarena_cli("check", d, check=False)
    assert complete.returncode == 0, complete.stdout + complete.stderr
    gone = [p for p in (d / "runs").iterdir() if "buf100-reno" in p.name]
    assert len(gone) == 2
    for p in gone:
        shutil.rmtree(p)
    (d / "runs" / "999-buf20-cubic-r9").mkdir()     # an attempt that never completed
    res = open_results(d)
    st = res.status()
    assert (st["state"] == "missing").sum() == 2 and len(st) == 8
    from ccarena.study.load import parse_study
    out = evaluate(res, parse_study(res.study))
    by_cell = {r["cell"]: r for r in out}
    assert len(out) == 4
    assert not by_cell["buffer=100p, cc=reno"]["ok"]
    failed = [r for r in out if not r["ok"]]
    assert failed and "0 of 2 planned runs valid" in failed[0]["why"]
    r = ccarena_cli("check", d, check=False)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "NO valid run" in r.stdout and "2 missing" in r.stdout
    assert "incomplete: 2 of 8 planned runs are missing" in r.stderr


def _res(rows, plan_cells=None):
    flows = pd.DataFrame([{**r, "conn": -1, "name": "bulk", "valid": True} for r in rows])
    runs = pd.DataFrame([{k: v for k, v in r.items() if k not in ("name",)} | {"valid": True}
                         for r in rows])
    ns = SimpleNamespace(flows=flows, runs=runs, path=None)
    if plan_cells:
        ns.plan = {"cells": plan_cells}
    return ns


def test_a_trend_orders_levels_by_their_unit_and_keeps_to_where():
    study = loads_study('''
[study]
name = "t"
duration = "10s"
[bottleneck]
rate = "10mbit"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
[sweep]
"bottleneck.rate" = ["500kbit", "1mbit", "2mbit"]
"flow.bulk.cc" = ["reno", "cubic"]
[[expect]]
metric = "goodput_bps"
trend = "increasing"
over = "bottleneck.rate"
where = { "flow.bulk.cc" = "reno" }
''')
    rows, cells = [], {}
    for i, (rate, g) in enumerate([("500kbit", 4e5), ("1mbit", 9e5), ("2mbit", 1.9e6)]):
        for j, (cc, k) in enumerate([("reno", 1.0), ("cubic", -1.0)]):
            c = f"c{2 * i + j:03d}"
            cells[c] = {"bottleneck.rate": rate, "flow.bulk.cc": cc}
            # cubic's numbers fall with the rate: averaged in, they would spoil reno's trend
            rows.append({"run_id": c, "cell": c, "bottleneck.rate": rate, "flow.bulk.cc": cc,
                         "goodput_bps": g if k > 0 else 5e6 - g, "rate_bps": 1e7,
                         "base_rtt_s": 0.02})
    out = evaluate(_res(rows, cells), study)
    assert out[0]["ok"], out[0]
    assert [x for x, _ in out[0]["measured"]] == [500_000, 1_000_000, 2_000_000]


def test_missing_values_and_bounds_never_pass():
    study = study_with('''
        [[expect]]
        metric = "goodput_bps"
        flow = "bulk"
        min = "90%rate"
        stat = "each"
        ''')
    rows = [{"run_id": "a", "cell": "c0", "bottleneck.buffer": "20p", "goodput_bps": 9.5e6,
             "rate_bps": 1e7, "base_rtt_s": 0.02},
            {"run_id": "b", "cell": "c0", "bottleneck.buffer": "20p", "goodput_bps": float("nan"),
             "rate_bps": 1e7, "base_rtt_s": 0.02}]
    out = evaluate(_res(rows), study)
    assert not out[0]["ok"] and "1 of 2 valid flows have no goodput_bps" in out[0]["why"]
    rows = [{"run_id": "a", "cell": "c0", "bottleneck.buffer": "20p", "goodput_bps": 1.0}]
    out = evaluate(_res(rows), study)          # no rate known: the bound is not computable
    assert not out[0]["ok"] and "bound cannot be computed" in out[0]["why"]


def test_a_ratio_relative_to_a_reference_cell():
    study = study_with('''
        [[expect]]
        metric = "goodput_bps / rate_bps"
        level = "run"
        where = { "bottleneck.buffer" = "100p" }
        relative_to = { "bottleneck.buffer" = "20p" }
        min = 1.5
        ''')
    rows = [{"run_id": "a", "cell": "c0", "bottleneck.buffer": "20p", "goodput_bps": 4e6,
             "rate_bps": 1e7, "base_rtt_s": 0.02},
            {"run_id": "b", "cell": "c1", "bottleneck.buffer": "100p", "goodput_bps": 8e6,
             "rate_bps": 1e7, "base_rtt_s": 0.02}]
    out = evaluate(_res(rows), study)
    assert len(out) == 1 and out[0]["ok"] and out[0]["measured"] == pytest.approx(2.0)
