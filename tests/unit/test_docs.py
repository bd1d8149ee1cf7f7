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


def _tutorial_study():
    import re
    t = (ROOT / "docs" / "tutorial.md").read_text()
    return t, re.search(r"```toml\n(.*?)```", t, re.S).group(1)


def test_the_tutorials_bdp_is_what_validate_computes():
    """The BDP the tutorial's study states in a comment, and the one its validate output
    quotes, are what `ccarena validate` prints for that study."""
    import re

    import ccarena
    from ccarena.run.dryrun import cell_lines
    t, toml = _tutorial_study()
    study = ccarena.loads_study(toml, "tutorial")
    line = next(x for x in cell_lines(study.cells[0]) if x.startswith("BDP"))
    kb, pkts = re.match(r"BDP ([0-9.]+) kB = (\d+) packets", line).groups()
    said = re.search(r"BDP (\d+) kB = (\d+) packets", toml)
    assert said and said.groups() == (str(round(float(kb))), pkts), (said, line)
    assert f"BDP {kb} kB = {pkts} packets" in t


def test_the_tutorial_says_what_a_new_user_asks():
    t, _ = _tutorial_study()
    flat = " ".join(t.split())
    assert "results/<study name>-<date>-<time>/" in flat and "--results DIR" in flat
    # validate draws a seed of its own unless one is given
    assert "--seed" in flat and "draws a new one" in flat
    # a shared machine: the link's real-time priority off, and what that costs
    assert "CCARENA_LINK_RT_PRIORITY=0" in flat and "What it costs" in flat
    from ccarena.testbed import user_link
    src = Path(user_link.__file__).read_text()
    assert 'os.environ.get("CCARENA_LINK_RT_PRIORITY", "10")' in src   # priority 10
    assert "priority 10" in flat
