"""The analysis subcommands (report, export, query, compare, check) on synthetic studies."""
import argparse
import re

import pandas as pd
import pytest

from ccarena.cli import analysis as cli_analysis
from ccarena.errors import CcarenaError
from ccarena.analysis.synthetic import write_synthetic_study


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    a = write_synthetic_study(base / "synthetic-20261122-000000", reps=3, duration_s=4.0,
                              invalid=("buf20-reno-r1",))
    b = write_synthetic_study(base / "synthetic-20261122-010000", reps=3, duration_s=4.0,
                              buffers=(20, 200))
    return base, a, b


def run(argv):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    cli_analysis.register(sub)
    args = ap.parse_args(argv)
    return args.func(args)


def test_register_adds_the_analysis_commands():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    cli_analysis.register(sub)
    assert {"report", "export", "query", "compare", "check"} <= set(sub.choices)
    for name in ("report", "export", "query", "compare", "check"):
        assert sub.choices[name].get_default("func") is getattr(cli_analysis, f"cmd_{name}")


def test_query_runs_and_per_run_tables(studies, capsys):
    _, a, _ = studies
    assert run(["query", str(a), "SELECT count(*) AS n FROM runs"]) == 0
    assert capsys.readouterr().out.split() == ["n", "12"]
    assert run(["query", str(a), "--csv", "SELECT count(DISTINCT run_id) AS r, "
                "count(*) AS n FROM tcpinfo"]) == 0
    assert capsys.readouterr().out.splitlines() == ["r,n", "12,9600"]
    for view in ("flows", "cells", "rx", "conns", "ping", "link_stats"):
        assert run(["query", str(a), f"SELECT count(*) FROM {view}"]) == 0


def test_query_error_is_one_line_naming_the_views(studies):
    _, a, _ = studies
    with pytest.raises(CcarenaError, match="views: .*tcpinfo"):
        run(["query", str(a), "SELECT nope FROM runs"])


def test_results_by_name_prefix(studies, capsys):
    base, _, b = studies
    assert run(["query", "synthetic-", "--results", str(base), "SELECT 1 AS one"]) == 0
    with pytest.raises(CcarenaError, match="no such directory"):
        run(["query", "nothing-", "--results", str(base), "SELECT 1"])


def test_export_csv(studies, tmp_path, capsys):
    _, a, _ = studies
    assert run(["export", str(a), "--csv", "--out", str(tmp_path)]) == 0
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert len(runs) == 12 and "goodput_bps" in runs
    assert len(pd.read_csv(tmp_path / "tcpinfo.csv")) == 9600
    assert run(["export", str(a), "--csv", "--out", str(tmp_path / "x"),
                "--tables", "runs"]) == 0
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["runs.csv"]
    # CSV is the default format
    assert run(["export", str(a), "--out", str(tmp_path / "y"), "--tables", "flows"]) == 0
    assert [p.name for p in (tmp_path / "y").iterdir()] == ["flows.csv"]


def test_compare_two_studies(studies, tmp_path, capsys):
    _, a, b = studies
    out = tmp_path / "cmp.csv"
    assert run(["compare", str(a), str(b), "--metric", "rtt_mean_s", "--metric", "jain",
                "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    assert "invalid runs excluded: A 1, B 0" in text
    cmp = pd.read_csv(out)
    # only the 20p cells are common (100p vs 200p)
    assert set(cmp["bottleneck.buffer"]) == {"20p"}
    assert set(cmp.metric) == {"rtt_mean_s", "jain"}
    assert {"mean_a", "mean_b", "ci_half_a", "welch_p", "mw_p", "cohen_d",
            "rank_biserial"} <= set(cmp.columns)


def test_report_command(studies, tmp_path, capsys):
    _, _, b = studies
    out = tmp_path / "r.html"
    assert run(["report", str(b), "--out", str(out), "--max-timeseries", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_main_cli_knows_the_commands():
    from ccarena.cli import main as cli
    ap = cli.build_parser()
    args = ap.parse_args(["query", "x", "SELECT 1"])
    assert args.func is cli_analysis.cmd_query


def test_check_reevaluates_stored_results_against_a_study_file(studies, tmp_path, capsys):
    _, a, _ = studies
    study = tmp_path / "s.toml"
    body = """
[study]
name = "synthetic"
duration = "4s"
[bottleneck]
rate = "10mbit"
buffer = "100p"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
kind = "bulk"
[sweep]
"bottleneck.buffer" = ["20p", "100p"]
"flow.bulk.cc" = ["cubic", "reno"]
[[expect]]
name = "utilisation is a fraction"
metric = "utilisation"
level = "run"
min = 0.0
max = 1.0
"""
    study.write_text(body)
    before = (a / "checks.json").read_bytes() if (a / "checks.json").exists() else None
    assert run(["check", str(a), "--study", str(study)]) == 0
    out = capsys.readouterr().out
    assert "pass  utilisation is a fraction" in out and "not stored" in out
    # another study's checks never replace the results' own
    assert ((a / "checks.json").read_bytes() if (a / "checks.json").exists() else None) == before
    # a bound the synthetic utilisation (~0.9) cannot meet fails, with exit status 3
    study.write_text(body.replace("max = 1.0", "max = 0.5"))
    assert run(["check", str(a), "--study", str(study)]) == 3
    assert "FAIL  utilisation is a fraction" in capsys.readouterr().out


def test_query_prints_plain_cells_and_says_what_it_left_out(studies, capsys):
    _, a, _ = studies
    assert run(["query", str(a), "SELECT '[red]x' AS s, 1.23456789::DOUBLE AS f, NULL AS e"]) == 0
    head, row = capsys.readouterr().out.splitlines()
    assert head.split() == ["s", "f", "e"] and row.split() == ["[red]x", "1.23457"]
    assert run(["query", str(a), "--max-rows", "2", "SELECT range AS i FROM range(5)"]) == 0
    assert capsys.readouterr().out.split() == ["i", "0", "1", "(3", "more", "rows:", "--max-rows",
                                               "N,", "or", "--csv", "for", "all)"]


def test_compare_names_units_the_difference_and_the_correction(studies, tmp_path, capsys):
    """compare labels each metric with the unit its values are shown in, gives B-A with
    its own interval, p and the Benjamini-Hochberg q, and says which interval and
    correction the table uses; --units raw keeps metric names and SI units."""
    _, a, b = studies
    out = tmp_path / "cmp.csv"
    assert run(["compare", str(a), str(b), "--metric", "goodput_bps", "--metric",
                "rtt_p95_s", "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    assert "goodput (Mbit/s)" in text and "RTT p95 (ms)" in text
    assert "goodput_bps" not in text
    assert "Benjamini-Hochberg" in text and "bootstrap" in text and "Student t" in text
    assert "over the 4 tests of this table" in " ".join(text.split())
    assert not re.search(r"\d[eE][+-]?\d", text), text
    cmp = pd.read_csv(out)
    assert {"diff_ci_low", "diff_ci_high", "p", "q", "correction", "n_tests",
            "center"} <= set(cmp.columns)
    assert set(cmp.loc[cmp.metric == "rtt_p95_s", "center"]) == {"median"}
    assert run(["compare", str(a), str(b), "--metric", "goodput_bps", "--units", "raw"]) == 0
    raw = capsys.readouterr().out
    assert "goodput_bps" in raw and "Mbit/s" not in raw.split("d = Cohen")[1]


def test_query_shows_metric_columns_in_their_units(studies, capsys):
    _, a, _ = studies
    sql = ("SELECT cell, avg(goodput_bps), avg(loss_ratio) AS loss_ratio, "
           "max(rtt_p95_s), count(*) AS n FROM runs GROUP BY cell ORDER BY cell")
    assert run(["query", str(a), sql]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "avg(goodput_bps) [Mbit/s]" in lines[0] and "loss_ratio [%]" in lines[0]
    assert "max(rtt_p95_s) [ms]" in lines[0]
    assert not any(re.search(r"\d[eE][+-]?\d", ln) for ln in lines), lines
    cols = lines[1].split()
    assert 1 < float(cols[1]) <= 10          # Mbit/s of a 10 Mbit/s link
    assert run(["query", str(a), "--units", "raw", sql]) == 0
    raw = capsys.readouterr().out.splitlines()
    assert raw[0].split()[:2] == ["cell", "avg(goodput_bps)"]
    assert 1e6 < float(raw[1].split()[1]) <= 10e6     # bit/s, written out
    assert not any(re.search(r"\d[eE][+-]?\d", ln) for ln in raw), raw
    # CSV is for tools: SI units unless asked otherwise
    assert run(["query", str(a), "--csv", sql]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("cell,avg(goodput_bps),")
    assert run(["query", str(a), "--csv", "--units", "human", sql]) == 0
    assert "avg(goodput_bps) [Mbit/s]" in capsys.readouterr().out.splitlines()[0]


def test_export_formats_and_standard_output(studies, tmp_path, capsys):
    """-f csv|json|parquet into a directory, and -o - for standard output (one table;
    JSON may hold several as one object)."""
    import io
    import json
    _, a, _ = studies
    assert run(["export", str(a), "-f", "json", "-o", str(tmp_path / "j"),
                "--tables", "runs,flows"]) == 0
    rows = json.loads((tmp_path / "j" / "runs.json").read_text())
    assert len(rows) == 12 and rows[0]["goodput_bps"] > 1e6
    assert run(["export", str(a), "-f", "parquet", "-o", str(tmp_path / "p"),
                "--tables", "flows"]) == 0
    assert len(pd.read_parquet(tmp_path / "p" / "flows.parquet")) == len(pd.read_json(
        tmp_path / "j" / "flows.json"))
    capsys.readouterr()
    assert run(["export", str(a), "-o", "-", "--tables", "runs"]) == 0
    assert len(pd.read_csv(io.StringIO(capsys.readouterr().out))) == 12
    assert run(["export", str(a), "-o", "-", "-f", "json", "--tables", "runs,cells"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert set(both) == {"runs", "cells"} and len(both["runs"]) == 12
    with pytest.raises(CcarenaError, match="holds one table; name it with --tables"):
        run(["export", str(a), "-o", "-"])


def test_export_to_stdout_writes_parquet_bytes(studies, capfdbinary):
    import io
    _, a, _ = studies
    assert run(["export", str(a), "-o", "-", "-f", "parquet", "--tables", "runs"]) == 0
    out = capfdbinary.readouterr().out
    assert out[:4] == b"PAR1" and len(pd.read_parquet(io.BytesIO(out))) == 12


def test_a_failing_export_leaves_no_empty_directory(studies, tmp_path, monkeypatch):
    _, a, _ = studies
    with pytest.raises(CcarenaError, match="unknown table"):
        run(["export", str(a), "-o", str(tmp_path / "e1"), "--tables", "runz"])
    assert not (tmp_path / "e1").exists()
    # a table the views claim but DuckDB cannot copy: the directory made for it goes too
    absent = sorted(set(cli_analysis.PER_RUN) - set(cli_analysis.views(
        cli_analysis.connect(a))))[0]
    monkeypatch.setattr(cli_analysis, "views", lambda con: [absent])
    with pytest.raises(Exception, match=absent):
        run(["export", str(a), "-o", str(tmp_path / "e2"), "--tables", absent])
    assert not (tmp_path / "e2").exists()


def test_tables_as_json_for_scripts(studies, tmp_path, capsys):
    """query, compare and check print JSON with --json: SI units, missing values null."""
    import json
    _, a, b = studies
    assert run(["query", str(a), "--json", "SELECT cell, avg(goodput_bps) AS g, NULL AS e "
                "FROM runs GROUP BY cell ORDER BY cell"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4 and all(1e6 < r["g"] <= 10e6 and r["e"] is None for r in rows)
    assert run(["compare", str(a), str(b), "--json", "--metric", "goodput_bps"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["by"] == ["bottleneck.buffer", "flow.bulk.cc"]
    assert {r["bottleneck.buffer"] for r in cmp["rows"]} == {"20p"}
    assert all(r["metric"] == "goodput_bps" and r["mean_a"] > 1e6 for r in cmp["rows"])
    study = tmp_path / "s.toml"
    study.write_text(_CHECKED)
    assert run(["check", str(a), "--json", "--study", str(study)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True and out["stored"] is False and len(out["checks"]) == 4
    assert out["incomplete_cells"] and out["outcome"] == "complete"


_CHECKED = """
[study]
name = "synthetic"
duration = "4s"
[bottleneck]
rate = "10mbit"
buffer = "100p"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
[sweep]
"bottleneck.buffer" = ["20p", "100p"]
"flow.bulk.cc" = ["cubic", "reno"]
[[expect]]
name = "utilisation is a fraction"
metric = "utilisation"
level = "run"
min = 0.0
max = 1.0
"""


def test_compare_raw_clips_intervals_at_physical_bounds():
    """--units raw shows SI numbers, but an interval still stops where the metric does:
    no loss below 0, no negative goodput."""
    nan = float("nan")
    row = {"bottleneck.buffer": "20p", "metric": "loss_ratio", "center": "mean",
           "mean_a": 2e-5, "median_a": 2e-5, "ci_low_a": nan, "ci_high_a": nan,
           "ci_half_a": 5e-5, "n_a": 3, "mean_b": 1e-5, "median_b": 1e-5,
           "ci_low_b": -3e-5, "ci_high_b": 5e-5, "ci_half_b": 4e-5, "n_b": 3,
           "diff": 1e-5, "diff_ci_low": -5e-5, "diff_ci_high": 7e-5, "p": 0.5, "q": 0.5,
           "cohen_d": 0.2, "significant": False}
    res = pd.DataFrame([row, {**row, "metric": "goodput_bps", "mean_a": 1e5,
                              "median_a": 1e5, "ci_half_a": 3e5, "mean_b": 2e5,
                              "median_b": 2e5, "ci_low_b": -1e5, "ci_high_b": 5e5}])
    for mode in ("raw", "human"):
        _, rows = cli_analysis.compare_rows(res, ["bottleneck.buffer"], mode)
        for r in rows:
            a, b = r[2], r[3]
            assert "[0, " in a and "[0, " in b, (mode, a, b)
            assert "-" not in a + b, (mode, a, b)
