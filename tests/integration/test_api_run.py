"""ccarena.run_study as a script calls it: the runs, the checks and the report."""
import pytest

import ccarena

pytestmark = pytest.mark.root

STUDY = """
[study]
name = "api"
duration = "2s"
warmup = "0.5s"
[bottleneck]
rate = "20mbit"
backend = "kernel"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "reno"
[[expect]]
name = "goodput within the rate"
metric = "goodput_bps"
level = "run"
max = "100%rate"
"""


def test_run_study_gives_results_with_checks_and_a_report(tmp_path, no_leaks):
    study = ccarena.loads_study(STUDY, "api.toml")
    res = ccarena.run_study(study, results_base=tmp_path, progress=False, report=True)
    assert len(res.runs) == 1 and res.runs.valid.all()
    assert [c["ok"] for c in res.checks] == [True] and res.passed is True
    assert res.report.exists() and (res.path / "checks.json").exists()
    assert ccarena.open_results(res.path).passed is True
