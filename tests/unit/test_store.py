"""store.results: damaged and missing files are named and skipped, never fatal, never
silently counted; summaries are rebuilt when they do not match the runs; writes are
atomic."""
import json
import shutil

import pandas as pd
import pytest

from conftest import ccarena_cli

from ccarena.analysis.synthetic import write_synthetic_study
from ccarena.store import atomic
from ccarena.store.results import open_results
from ccarena.store.writer import Writer


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    return write_synthetic_study(tmp_path_factory.mktemp("st") / "s", reps=2, duration_s=4.0)


def copy(stored, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(stored, d)
    return d


def test_a_truncated_run_table_is_named_and_the_run_left_out(stored, tmp_path):
    d = copy(stored, tmp_path)
    victim = sorted((d / "runs").iterdir())[0]
    p = victim / "tcpinfo.parquet"
    p.write_bytes(p.read_bytes()[:100])
    res = open_results(d)
    assert victim not in res.run_dirs()           # its manifest no longer matches
    assert len(res.runs) == 7
    assert any(str(victim) in x and "tcpinfo.parquet" in x for x in res.problems)
    # a query of another table still works, and of this one leaves the damaged run out
    r = ccarena_cli("query", d, "select count(distinct run_id) as n from tcpinfo", "--csv")
    assert r.stdout.strip().splitlines()[-1] == "7"
    r = ccarena_cli("show", d, "--rebuild")
    assert "damaged" in r.stdout and "missing" in r.stdout


def test_a_damaged_summary_is_rebuilt_from_the_runs(stored, tmp_path):
    d = copy(stored, tmp_path)
    (d / "runs.parquet").write_bytes(b"PAR1 not really")
    (d / "flows.parquet").unlink()
    res = open_results(d)
    assert len(res.runs) == 8 and len(res.flows) > 0
    assert any("runs.parquet" in x for x in res.problems)


def test_a_summary_older_than_its_runs_is_not_trusted(stored, tmp_path):
    d = copy(stored, tmp_path)
    gone = sorted((d / "runs").iterdir())[-1]
    shutil.rmtree(gone)
    res = open_results(d)
    assert len(res.runs) == 7 and gone.name not in set(res.runs["label"])
    assert res.cells.empty          # made from 8 runs: not shown as if it were current


def test_a_meta_without_its_files_is_incomplete(stored, tmp_path):
    d = copy(stored, tmp_path)
    victim = sorted((d / "runs").iterdir())[1]
    (victim / "flow_metrics.parquet").unlink()
    res = open_results(d)
    assert victim in res.incomplete_runs()
    assert res.status().set_index("label").loc[victim.name, "state"] == "missing"


def test_an_unreadable_meta_is_named_and_skipped(stored, tmp_path):
    d = copy(stored, tmp_path)
    victim = sorted((d / "runs").iterdir())[2]
    (victim / "meta.json").write_text('{"run_id": ')
    res = open_results(d)
    assert len(res.run_dirs()) == 7
    assert any("meta.json" in x for x in res.problems)


def test_atomic_writes_leave_the_old_file_on_failure(tmp_path):
    p = tmp_path / "x.json"
    atomic.write_json(p, {"a": 1})

    class Boom:
        pass
    with pytest.raises(TypeError, match="Boom object at 0x"):
        atomic.write_json(p, {"a": Boom()})
    assert json.loads(p.read_text()) == {"a": 1}
    assert not list(tmp_path.glob(".*.tmp"))


def test_storage_errors_name_the_path_and_the_remedy(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(atomic.StoreError, match="not a directory"):
        Writer.create("s", f)
    with pytest.raises(atomic.StoreError, match=r"x/y.*give another --results"):
        atomic.mkdir(f / "x" / "y")


def test_a_newer_format_is_refused(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    (d / "ccarena-results.json").write_text(json.dumps({"format_version": 99}))
    with pytest.raises(Exception, match="newer than this ccarena reads"):
        open_results(d)


def test_a_run_table_listed_once(stored):
    from ccarena.store.tables import RUN_TABLES
    res = open_results(stored)
    assert set(res.run_tables(next(iter(res.metas)))) == set(RUN_TABLES)
    with pytest.raises(Exception, match="no per-run table"):
        res.table("nonsense")
    assert isinstance(res.table("tcpinfo"), pd.DataFrame) and len(res.table("tcpinfo"))


def test_a_results_directory_offers_reading_and_its_writer_the_writing(tmp_path):
    """What a user gets from open_results reads; what stores runs is a Writer (run/,
    analysis), so no write is one tab-completion away in a notebook."""
    from ccarena.store.results import ResultsDir
    public = {n for n in dir(ResultsDir) if not n.startswith("_")}
    writes = {"create", "create_at", "write_study", "write_study_raw", "write_preflight",
              "write_environment", "write_resumes", "write_checks", "write_table", "new_run",
              "staging_dir", "aside_record", "update_meta", "supersede", "write_run",
              "rebuild_summaries", "discard_in_flight", "remove_if_no_run"}
    assert not public & writes
    assert {"open", "runs", "flows", "cells", "table", "run_tables", "metas", "factors",
            "study", "plan", "environment", "checks", "passed", "status"} <= public
    assert writes <= {n for n in dir(Writer) if not n.startswith("_")}
    w = Writer.create("s", tmp_path)
    assert isinstance(w.results, ResultsDir) and w.results.path.parent == tmp_path
    w.write_checks([{"check": 0, "ok": True}])
    assert open_results(w.results.path).passed is True


def test_runs_and_flows_say_which_machine_ran_them(tmp_path):
    """runs and flows carry each run's host, kernel and CPU model (meta.json worker), so a
    study whose runs came from several machines can be grouped by machine."""
    w = Writer.create("m", tmp_path)
    res = w.results
    machines = {"a": ("6.1.0", "CPU A"), "b": ("6.18.0", "CPU B")}
    for i, host in enumerate(["a", "b", "a", None]):
        label = f"c000-r{i + 1}"
        meta = {"run_id": f"r{i}", "label": label, "cell": "c000", "rep": i + 1,
                "valid": True, "invalid_reasons": []}
        if host:
            meta["worker"] = {"host": host, "kernel": machines[host][0],
                              "cpu_model": machines[host][1]}
        flows = pd.DataFrame({"run_id": [f"r{i}"] * 2, "flow": [0, 1],
                              "goodput_bps": [1e6, 2e6]})
        w.write_run(w.new_run(label), {}, flows, {"goodput_bps": 3e6 + i}, meta)
    res = open_results(res.path)
    runs, fl = res.runs, res.flows
    for df in (runs, fl):
        assert {"worker_host", "worker_kernel", "worker_cpu_model"} <= set(df.columns)
    by = runs.set_index("label")
    assert by.loc["c000-r2", ["worker_host", "worker_kernel", "worker_cpu_model"]].tolist() \
        == ["b", "6.18.0", "CPU B"]
    # a run that recorded no machine (older results) has no values, not a wrong one
    assert by.loc["c000-r4", ["worker_host", "worker_kernel", "worker_cpu_model"]].isna().all()
    # grouping by machine: each group holds exactly its machine's runs and flows
    g = runs.dropna(subset=["worker_host"]).groupby(["worker_host", "worker_kernel",
                                                    "worker_cpu_model"]).size()
    assert g.to_dict() == {("a", "6.1.0", "CPU A"): 2, ("b", "6.18.0", "CPU B"): 1}
    assert fl.groupby("worker_kernel").size().to_dict() == {"6.1.0": 4, "6.18.0": 2}
    # the same after the summaries are written to disk and read back
    Writer(res).rebuild_summaries()
    back = pd.read_parquet(res.path / "flows.parquet")
    assert back.groupby("worker_cpu_model").size().to_dict() == {"CPU A": 4, "CPU B": 2}


def test_ls_counts_each_cells_missing_and_invalid_runs_as_show_does(tmp_path):
    """`ls` says per cell how many planned runs are valid, invalid and missing, and its
    counts are the ones `show` gives (both count the plan, not the stored runs)."""
    base = tmp_path / "results"
    d = write_synthetic_study(base / "synthetic-20260101-000000", reps=2, duration_s=4.0,
                              invalid=("buf20-reno-r1",))
    runs = sorted((d / "runs").iterdir())
    gone = next(p for p in runs if p.name.endswith("buf100-cubic-r0"))
    shutil.rmtree(gone)
    plan = json.loads((d / "plan.json").read_text())["runs"]
    cells = {r["cell"] for r in plan}
    row = json.loads(ccarena_cli("ls", "--results", base, "--json").stdout)[0]
    assert set(row["cells"]) == cells
    assert row["cells"]["buf20-reno"] == {"planned": 2, "valid": 1, "invalid": 1, "missing": 0}
    assert row["cells"]["buf100-cubic"] == {"planned": 2, "valid": 1, "invalid": 0,
                                            "missing": 1}
    for k in ("planned", "valid", "invalid", "missing"):
        assert row[k] == sum(c[k] for c in row["cells"].values())
    show = json.loads(ccarena_cli("show", d, "--json").stdout)
    assert show["runs"] == {k: row[k] for k in ("planned", "valid", "invalid", "missing")}
    # show names exactly the cells ls counts something missing or invalid in
    lacking = {c for c, n in row["cells"].items() if n["invalid"] or n["missing"]}
    assert {line.split()[1] for line in show["incomplete_cells"]} == lacking
    # the table names the cells too
    out = ccarena_cli("ls", "--results", base).stdout
    assert "1 (buf20-reno)" in out and "1 (buf100-cubic)" in out


def test_each_anomaly_is_one_line_whatever_its_text(tmp_path):
    """`show`, `check` and the report list a run's anomalies one per line; a description
    that itself contains "; " (the stall's "from 48.6 s; limit 4.0 s") stays whole."""
    from ccarena.report.summary import anomaly_lines
    w = Writer.create("a", tmp_path)
    what = ["flow bulk: received nothing for 4.3 s (from 48.6 s; limit 4.0 s)",
            "flow web: download incomplete"]
    meta = {"run_id": "r0", "label": "c000-r1", "cell": "c000", "rep": 1, "valid": True,
            "invalid_reasons": [], "anomalies": [{"kind": "stalled", "what": what[0]},
                                                 {"kind": "download_incomplete",
                                                  "what": what[1]}]}
    flows = pd.DataFrame({"run_id": ["r0"], "flow": [0], "goodput_bps": [1e6]})
    w.write_run(w.new_run("c000-r1"), {}, flows, {"goodput_bps": 1e6}, meta)
    w.rebuild_summaries()
    res = open_results(w.results.path)
    assert anomaly_lines(res) == [f"run c000-r1: {x}" for x in what]
