"""[[expect]] checks on hand-made results: bounds per cell relative to the cell's rate and
base RTT, ratios to a reference cell, trends over a factor, invalid runs ignored."""
import textwrap
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
    assert not out[0]["ok"] and out[0]["why"] == "no valid values"


def test_a_partial_study_does_not_pass(tmp_path):
    """Runs of one cell removed (as after a crash): the checks covering that cell fail with
    the missing count, the status says missing, and `ccarena check` exits non-zero."""
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
    assert r.returncode == 3, r.stdout + r.stderr
    assert "NO valid run" in r.stdout and "2 missing" in r.stdout
