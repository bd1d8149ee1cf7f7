"""Every command has its entry in the user guide, and the tutorial covers a study's whole
way: write, validate, run, read, report, pandas, plot, archive."""
from pathlib import Path

import pytest

from ccarena.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
GUIDE = "".join((ROOT / "docs" / f).read_text() for f in (
    "running.md", "report.md", "algorithms.md", "tutorial.md", "study-format.md"))


def commands():
    ap = build_parser()
    sub = next(a for a in ap._actions if a.dest == "cmd")
    return sorted(sub.choices)


@pytest.mark.parametrize("cmd", commands())
def test_every_command_is_in_the_guide(cmd):
    assert f"ccarena {cmd}" in GUIDE, f"`ccarena {cmd}` is not described in docs/"


def test_the_tutorial_walks_the_whole_way():
    t = (ROOT / "docs" / "tutorial.md").read_text()
    for step in ("ccarena validate", "ccarena run", "report.html", "ccarena.open_results",
                 "ccarena plot", "ccarena archive", "ccarena shell"):
        assert step in t, step
    assert "tutorial.md" in (ROOT / "README.md").read_text()


def test_new_metrics_and_figures_are_documented():
    m = (ROOT / "docs" / "metrics.md").read_text()
    for name in ("jain_min_1s", "jain_min_1s_from_s", "throughput_delay", "box_per_flow",
                 "convergence(", "save(fig"):
        assert name in m, name
