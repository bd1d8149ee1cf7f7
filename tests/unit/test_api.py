"""The Python API at parity with the CLI, used only through `import ccarena` on a
synthetic stored study: load, open, read as pandas, plot, report, archive."""
import inspect
import json

import pandas as pd
import pytest
from matplotlib.figure import Figure

import ccarena
from ccarena.analysis.synthetic import write_synthetic_study   # the data only


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    return write_synthetic_study(tmp_path_factory.mktemp("api") / "synthetic-20261122-000000",
                                 reps=2, duration_s=5.0, invalid=("buf20-reno-r1",))


def test_every_public_name_is_there_and_documented():
    for name in ccarena.__all__:
        obj = getattr(ccarena, name)
        if callable(obj) and not isinstance(obj, type):
            assert inspect.getdoc(obj), f"ccarena.{name} has no docstring"
    for name in ("load_study", "loads_study", "parse_study", "run_study", "open_results",
                 "write_report", "archive", "plot", "plot_names", "save", "timeseries",
                 "metric_vs_factor", "box", "box_per_flow", "cdf", "heatmap",
                 "fairness_vs_flows", "throughput_delay", "convergence"):
        assert name in ccarena.__all__


def test_studies_load_by_name_text_and_dict():
    q = ccarena.load_study("quickstart")
    assert q.name == "quickstart" and len(q.cells) == 3
    s = ccarena.loads_study('[study]\nname = "t"\nduration = "3s"\n[bottleneck]\n'
                            'rate = "10mbit"\n[[flow]]\nname = "a"\nfrom = "s1"\nto = "r1"\n')
    assert s.name == "t" and s.duration_s == 3.0
    assert ccarena.parse_study(q.raw).name == "quickstart"
    with pytest.raises(ccarena.SpecError, match="not valid TOML"):
        ccarena.loads_study("[study\n")


def test_end_to_end_on_a_stored_study(stored, tmp_path, monkeypatch):
    monkeypatch.setenv("CCARENA_CACHE", str(tmp_path / "cache"))   # where archives open
    res = ccarena.open_results(stored)
    runs, flows = res.runs, res.flows
    assert len(runs) == 8 and isinstance(runs, pd.DataFrame)
    # swept factors as attributes, beside their dotted names
    assert runs.bottleneck_buffer.equals(runs["bottleneck.buffer"].rename("bottleneck_buffer"))
    assert set(flows.flow_bulk_cc) == {"cubic", "reno"}
    assert len(runs.query("bottleneck_buffer == '20p' and valid")) == 3
    assert runs.groupby("bottleneck_buffer").goodput_bps.mean().notna().all()
    assert res.checks is None and res.passed is None      # never evaluated

    fig = ccarena.plot(res, "throughput_delay")
    assert isinstance(fig, Figure)
    assert ccarena.save(fig, tmp_path / "td.pdf").read_bytes()[:5] == b"%PDF-"
    assert "convergence" in ccarena.plot_names()
    fig = ccarena.box(runs, "bottleneck_buffer", "jain")
    assert isinstance(fig, Figure)

    report = ccarena.write_report(res, out=tmp_path / "r.html", max_timeseries=1)
    assert report.read_text().startswith("<!DOCTYPE html>")

    packed = ccarena.archive(res, tmp_path / "s.ccarena.tar.xz")
    again = ccarena.open_results(packed)
    pd.testing.assert_frame_equal(again.runs, runs)
    assert again.readonly


def test_run_study_evaluates_the_checks_and_writes_the_report(stored, tmp_path, monkeypatch):
    """run_study's own work after the runs (the runs need root: tests/integration)."""
    import shutil

    from ccarena.run import study as run_study_mod
    d = tmp_path / "copy"
    shutil.copytree(stored, d)
    monkeypatch.setattr(run_study_mod, "run_plan", lambda study, **kw: ccarena.open_results(d))
    st = json.loads((d / "study.json").read_text())
    st["expect"] = [{"name": "utilisation is a fraction", "metric": "utilisation",
                     "level": "run", "min": 0.0, "max": 1.0}]
    res = ccarena.run_study(ccarena.parse_study(st), report=True)
    assert res.passed is True and res.checks[0]["ok"]
    assert res.report == d / "report.html" and res.report.exists()
    assert ccarena.open_results(d).passed is True        # stored in checks.json
    st["expect"][0]["max"] = 0.1
    res = ccarena.run_study(ccarena.parse_study(st))
    assert res.passed is False and res.report is None


def test_what_the_other_commands_do_as_functions(stored, tmp_path):
    """plan, check, ls, compare, doctor and cc_list: the CLI's answers as data."""
    p = ccarena.plan("quickstart", seed=7, repetitions=2)
    assert p.seed == 7 and len(p.runs) == 2 * len(p.cells()) == 6
    assert [r.label for r in ccarena.plan("quickstart", seed=7, repetitions=2).runs] == \
        [r.label for r in p.runs]                        # the seed fixes the order
    assert isinstance(p.warnings, list)
    slow = ccarena.loads_study('[study]\nname = "t"\nduration = "3s"\n[bottleneck]\n'
                               'rate = "100kbit"\n[[flow]]\nname = "a"\nfrom = "s1"\n'
                               'to = "r1"\n')
    assert any("below 1 Mbit/s" in w for w in ccarena.plan(slow).warnings)

    import shutil
    d = tmp_path / "results" / stored.name
    shutil.copytree(stored, d)
    assert ccarena.check(d) == [] and ccarena.check(d).passed is None   # declares none
    st = json.loads((d / "study.json").read_text())
    study = ccarena.parse_study({**st, "expect": [{"name": "utilisation is a fraction",
                                                    "metric": "utilisation", "level": "run",
                                                    "min": 0.0, "max": 1.0}]})
    checks = ccarena.check(d, study)
    assert checks.passed is True and not checks.stored and len(checks) == 4
    assert not (d / "checks.json").exists()          # another study's: never stored

    rows = ccarena.ls(tmp_path / "results")
    assert [(r["results"], r["planned"], r["valid"], r["invalid"]) for r in rows] == \
        [(stored.name, 8, 7, 1)]
    assert rows[0]["cells"]["buf20-reno"] == {"planned": 2, "valid": 1, "invalid": 1,
                                              "missing": 0}

    cmp = ccarena.compare(stored, d, metrics=["goodput_bps"])
    assert cmp.attrs["by"] == ["bottleneck.buffer", "flow.bulk.cc"] and len(cmp) == 4
    assert (cmp["diff"] == 0).all() and (cmp["mean_a"] > 1e6).all()   # SI units
    with pytest.raises(ccarena.CcarenaError, match="did you mean 'goodput_bps'"):
        ccarena.compare(stored, d, metrics=["goodput_mbps"])

    algs = ccarena.cc_list()
    assert {"cubic", "reno"} <= set(algs) and algs["cubic"]["source"] in (
        "kernel", "bpf", "unavailable")
    doc = ccarena.doctor()
    assert {"kernel", "root", "netns", "binaries", "algorithms",
            "essential_missing"} <= set(doc) and doc["study"] is None


def test_a_bad_plot_name_is_ccarenas_own_error(stored):
    with pytest.raises(ccarena.CcarenaError, match="did you mean 'box'"):
        ccarena.plot(stored, "boxx")


def test_the_cli_calls_the_api(stored, tmp_path, monkeypatch, capsys):
    """The CLI is a thin layer over these functions: each command gets its data from
    the public function of the same name."""
    from ccarena.cli.main import main
    called = []

    def spy(name):
        real = getattr(ccarena, name)

        def f(*a, **kw):
            called.append(name)
            return real(*a, **kw)
        monkeypatch.setattr(ccarena, name, f)
    for name in ("plan", "check", "ls", "compare", "doctor", "cc_list"):
        spy(name)
    main(["validate", "quickstart"])
    main(["check", str(stored)])
    main(["ls", "--results", str(tmp_path)])
    main(["compare", str(stored), str(stored), "--metric", "jain"])
    main(["doctor", "--json"])
    main(["cc", "list", "--json"])
    capsys.readouterr()
    assert called == ["plan", "check", "ls", "compare", "doctor", "cc_list"]


def test_another_study_s_checks_are_taken_at_the_scale_the_results_ran_at(stored, tmp_path):
    """`ccarena check RESULTS --study FILE`: FILE's checks at the results' scale where FILE
    has that scale (a scale replaces or adds checks), else at its default."""
    import shutil
    d = tmp_path / stored.name
    shutil.copytree(stored, d)
    plan = json.loads((d / "plan.json").read_text())
    st = json.loads((d / "study.json").read_text())
    assert st["sweep"] == {"bottleneck.buffer": ["20p", "100p"], "flow.bulk.cc": ["cubic", "reno"]}
    f = tmp_path / "other.toml"
    text = f"""[study]
name = "synthetic"
duration = "{st['study']['duration']}"
[bottleneck]
rate = "10mbit"
delay = "10ms"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
[sweep]
"bottleneck.buffer" = ["20p", "100p"]
"flow.bulk.cc" = ["cubic", "reno"]
[[expect]]
name = "utilisation"
metric = "utilisation"
level = "run"
min = 0.0
max = 1.0
[scale.tight]
study = {{ duration = "10s" }}
[[scale.tight.expect]]
replaces = "utilisation"
name = "utilisation above one"
metric = "utilisation"
level = "run"
min = 1.5
"""
    f.write_text(text)
    assert ccarena.check(d, f).passed is True              # no scale: the default's
    (d / "plan.json").write_text(json.dumps({**plan, "scale": "tight"}))
    checks = ccarena.check(d, f)
    assert checks.passed is False and {c["what"] for c in checks} == {"utilisation above one"}
    (d / "plan.json").write_text(json.dumps({**plan, "scale": "elsewhere"}))
    assert ccarena.check(d, f).passed is True              # FILE has no such scale
