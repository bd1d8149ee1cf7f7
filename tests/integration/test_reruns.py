"""A run that only the machine's noise made invalid is run again (study.reruns, same seed);
the attempt set aside is kept under superseded/, counted nowhere else, and named in the
final attempt's meta, the runs table and the summary. A run that failed is not re-run."""
import json
import os

import pytest

from ccarena.measure import validity
from ccarena.run.study import run_study
from ccarena.report.summary import render
from helpers import bulk_study

pytestmark = pytest.mark.root

NOISE = "CPU steal 99% of the run (limit 25%)"


def steal_in_the_first_attempts(monkeypatch, n: int):
    """The CPU check reports steal for the first n runs (this machine's real steal, if
    any, is added after them as usual)."""
    calls = []
    real = validity.judge_cpu

    def judge_cpu(cpu):
        calls.append(1)
        return [NOISE] if len(calls) <= n else real(cpu)
    monkeypatch.setattr(validity, "judge_cpu", judge_cpu)
    return calls


def test_a_run_invalid_for_noise_is_run_again_and_the_attempt_kept(tmp_path, no_leaks,
                                                                    monkeypatch):
    calls = steal_in_the_first_attempts(monkeypatch, 1)
    res = run_study(bulk_study(rate="20mbit", duration="2s", warmup="0.5s", backend="kernel"),
                    results_base=tmp_path, progress=False)
    assert len(calls) == 2
    # one run in the study, the second attempt, with the same seed as the first
    assert [d.name for d in res.run_dirs()] == ["c000-r1"]
    meta = res.run_meta(res.run_dirs()[0])
    [first] = meta["superseded"]
    # (the machine's real noise may add reasons of its own: they are noise too)
    assert first["attempt"] == 1 and NOISE in first["invalid_reasons"]
    old = json.loads((res.path / first["dir"] / "meta.json").read_text())
    assert old["superseded_by_rerun"] and not old["valid"] and validity.noise_only(old)
    assert old["seed"] == meta["seed"] and old["run_id"] == first["run_id"] != meta["run_id"]
    assert (res.path / first["dir"] / "flow_metrics.parquet").exists()    # kept whole
    # the set-aside attempt is in no table; the runs table says the run was re-run
    runs = res.runs
    assert len(runs) == 1 and runs["reruns"].iloc[0] == 1
    assert NOISE in runs["rerun_reasons"].iloc[0]
    assert set(res.flows["run_id"]) == {meta["run_id"]}
    assert NOISE not in meta["invalid_reasons"]


def test_reruns_stop_at_the_limit_and_the_run_stays_invalid(tmp_path, no_leaks, monkeypatch,
                                                            capsys):
    calls = steal_in_the_first_attempts(monkeypatch, 10)
    res = run_study(bulk_study(rate="20mbit", duration="1s", warmup="0.2s", backend="kernel"),
                    results_base=tmp_path, progress=False, reruns=2)
    assert len(calls) == 3
    meta = res.run_meta(res.run_dirs()[0])
    assert not meta["valid"] and [a["attempt"] for a in meta["superseded"]] == [1, 2]
    assert sorted(os.listdir(res.path / "superseded")) == ["c000-r1.1", "c000-r1.2"]
    render(res)
    out = capsys.readouterr().out
    assert "invalid run c000-r1" in out and "was run 3 times" in out


def test_a_failed_run_is_not_run_again(tmp_path, no_leaks, monkeypatch):
    # steal and a process that fails: re-running would hide the failure
    calls = steal_in_the_first_attempts(monkeypatch, 10)
    study = bulk_study(rate="20mbit", duration="1s", warmup="0.2s", backend="kernel",
                       extra='[[flow]]\nname = "fails"\nkind = "command"\nhost = "s1"\n'
                             'run = "sh -c \'exit 3\'"\n')
    res = run_study(study, results_base=tmp_path, progress=False)
    assert len(calls) == 1
    meta = res.run_meta(res.run_dirs()[0])
    assert NOISE in meta["invalid_reasons"] and not validity.noise_only(meta)
    assert "superseded" not in meta and not (res.path / "superseded").exists()


def test_an_interrupted_rerun_leaves_the_earlier_attempt_in_place(tmp_path, no_leaks,
                                                                  monkeypatch):
    steal_in_the_first_attempts(monkeypatch, 1)
    built = []

    def interrupt_the_second(topo):
        built.append(topo.run_id)
        if len(built) == 2:
            raise KeyboardInterrupt     # as Ctrl-C while the re-run's testbed is up
    with pytest.raises(KeyboardInterrupt):
        run_study(bulk_study(rate="20mbit", duration="1s", warmup="0.2s", backend="kernel"),
                  results_base=tmp_path, progress=False, on_testbed=interrupt_the_second)
    [res_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    meta = json.loads((res_dir / "runs" / "c000-r1" / "meta.json").read_text())
    assert meta["run_id"] == built[0] and NOISE in meta["invalid_reasons"]
    assert "superseded_by_rerun" not in meta
    # the unfinished attempt is only in the staging directory, incomplete
    assert not (res_dir / "superseded" / ".c000-r1.next" / "meta.json").exists()


def test_a_cell_whose_rerun_did_not_help_is_not_run_again(tmp_path, no_leaks, monkeypatch):
    # noise the cell brings itself (e.g. a workload that saturates the CPU) stays: after
    # one re-run that was invalid all the same, the cell's other runs are not re-run
    calls = steal_in_the_first_attempts(monkeypatch, 10)
    res = run_study(bulk_study(rate="20mbit", duration="1s", warmup="0.2s", backend="kernel"),
                    results_base=tmp_path, progress=False, repetitions=2)
    assert len(calls) == 3
    metas = {d.name: res.run_meta(d) for d in res.run_dirs()}
    assert sorted(metas) == ["c000-r1", "c000-r2"]
    [first, second] = sorted(metas.values(), key=lambda m: m["index"])
    assert len(first["superseded"]) == 1 and "rerun_skipped" not in first
    assert "superseded" not in second and "invalid all the same" in second["rerun_skipped"]
