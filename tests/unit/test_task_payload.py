"""A planned run as a task (run/scaleout/task.py), its run directory as an archive and its commit
(store/archive.py), and the submitter's bookkeeping (run/cluster.Dispatcher): the same
run on every machine, a run stored as a serial one, never half of one, re-runs as in a
serial study. No root, no Dask cluster."""
import io
import os
import subprocess
import json
import tarfile
import textwrap

import pytest

from ccarena.analysis.synthetic import write_synthetic_study
from ccarena.run.scaleout import cluster, task
from ccarena.store import archive
from ccarena.store.results import open_results
from ccarena.store.writer import Writer
from ccarena.study.load import loads_study
from ccarena.study.plan import make_plan

STUDY = textwrap.dedent('''
    [study]
    name = "pay"
    duration = "3s"
    repetitions = 3
    reruns = 1
    [bottleneck]
    rate = "10mbit"
    delay = "5ms"
    [[flow]]
    name = "bulk"
    from = "s1"
    to = "r1"
    cc = "cubic"
    [sweep]
    "bottleneck.buffer" = ["20p", "40p"]
    "flow.bulk.cc" = ["reno", "cubic"]
    ''')


@pytest.fixture
def study(tmp_path):
    p = tmp_path / "pay.toml"
    p.write_text(STUDY)
    s = loads_study(STUDY, path=str(p))
    s.scale = "quick"
    return s


def test_the_payload_round_trip_gives_the_same_run(study):
    plan = make_plan(study, seed=1234, shuffle=True)
    for r in plan.runs:
        payload = json.loads(json.dumps(task.make_payload(study, plan, r, force_cc="bpf",
                                                          event_log=True)))
        back = task.planned_run(payload)
        assert (back.label, back.cell, back.seed, back.index, back.params) == \
            (r.label, r.cell, r.seed, r.index, r.params)
        assert back.study.raw == r.study.raw
        assert back.study.bottleneck.buffer == r.study.bottleneck.buffer
        assert back.study.flows[0].cc == r.study.flows[0].cc
        assert payload["force_cc"] == "bpf" and payload["event_log"] is True


def test_a_worker_refuses_a_run_its_plan_does_not_give(study):
    plan = make_plan(study, seed=5)
    r = plan.runs[0]
    p = task.make_payload(study, plan, r)
    with pytest.raises(task.TaskError, match=rf"run {r.label}: this worker's plan gives seed"):
        task.planned_run({**p, "seed": r.seed + 1})
    with pytest.raises(task.TaskError, match="not in the plan"):
        task.planned_run({**p, "label": "c999-r1"})
    with pytest.raises(task.TaskError, match="task format 99"):
        task.planned_run({**p, "version": 99})
    other = dict(p["plan"], seed=6)      # another seed: another plan
    with pytest.raises(task.TaskError):
        task.planned_run({**p, "plan": other})


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    return open_results(write_synthetic_study(tmp_path_factory.mktemp("arc") / "s", reps=1,
                                              duration_s=3.0))


def _files(d):
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_a_run_archive_commits_as_the_same_run(stored, tmp_path):
    src = stored.run_dirs()[0]
    label = src.name
    dest = Writer.create("copy", tmp_path).results
    d, meta = archive.unpack(dest, label, archive.pack(src), origin="w1")
    assert meta["label"] == label
    assert not (dest.path / "runs" / label).exists()      # staged: not a run yet
    assert dest.run_dirs() == []
    run = archive.adopt(dest, label)
    assert run == dest.path / "runs" / label and not d.exists()
    assert _files(run) == _files(src)
    assert [p.name for p in dest.run_dirs()] == [label]
    with pytest.raises(archive.ArchiveError, match="complete already"):
        archive.unpack(dest, label, archive.pack(src))
        archive.adopt(dest, label)


def _tar(entries: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("entries, why", [
    ({"meta.json": b'{"label": "c000-r1", "files": {"a.parquet": 10}}',
      "a.parquet": b"12345"}, "lacks or truncates a.parquet"),
    ({"meta.json": b'{"label": "c001-r1", "files": {}}'}, "holds run 'c001-r1'"),
    ({"meta.json": b'{"label": "c000-r1"}', "../escape": b"x"}, "unreadable"),
    ({"a.parquet": b"x"}, "unreadable"),
])
def test_a_bad_archive_is_refused_and_leaves_nothing(tmp_path, entries, why):
    dest = Writer.create("bad", tmp_path).results
    with pytest.raises(archive.ArchiveError, match=why):
        archive.unpack(dest, "c000-r1", _tar(entries), origin="w1")
    assert not (dest.path / "superseded" / ".c000-r1.next").exists()
    assert not (tmp_path / "escape").exists() and not (dest.path / "escape").exists()
    assert dest.run_dirs() == []


# -- the submitter's bookkeeping, with a fake cluster ----------------------------------------

class FakeFuture:
    def __init__(self, out):
        self.out = out

    def result(self):
        if isinstance(self.out, Exception):
            raise self.out
        return self.out

    def release(self):
        pass


class Completed:
    """as_completed: futures in the order they were added, more added while iterating."""

    def __init__(self):
        self.items = []

    def add(self, f):
        self.items.append(f)

    def __iter__(self):
        while self.items:
            yield self.items.pop(0)


class FakeClient:
    """Runs each task at once: `outcome(payload) -> (valid, noise)` decides the run."""

    def __init__(self, tmp, outcome):
        self.tmp, self.outcome, self.payloads = tmp, outcome, []

    def submit(self, fn, payload, **kw):
        assert fn is cluster.remote.run_task and kw["resources"] == {"testbed": 1}
        self.payloads.append(payload)
        r = task.planned_run(payload)
        valid, noise = self.outcome(payload)
        meta = {"run_id": f"{r.label}-a{len(payload['superseded']) + 1}", "label": r.label,
                "cell": r.cell, "rep": r.rep, "seed": r.seed, "cell_params": r.params,
                "valid": valid, "invalid_reasons": [] if valid else [noise],
                "noise_reasons": [noise] if noise else [], "worker": {"host": "w1"}}
        if payload["superseded"]:
            meta["superseded"] = payload["superseded"]
        work = Writer.create("w", self.tmp / f"w{len(self.payloads)}")
        rd = work.new_run(r.label)
        work.write_run(rd, {}, None, {"run_id": meta["run_id"]}, meta)
        return FakeFuture({"meta": meta, "archive": archive.pack(rd),
                           "preflight": {"cells": {"0": {"backend": "user"}},
                                         "algorithms": {"cubic": {"source": "kernel"}}}})

    def cancel(self, futures, force=False):
        pass


class Dispatcher(cluster.Dispatcher):
    def _as_completed(self):
        return Completed()


def _dispatch(study, tmp_path, outcome, reruns=1, bar=None):
    plan = make_plan(study, seed=3, repetitions=1, reruns=reruns)
    w = Writer.create(study.name, tmp_path / "res")
    w.write_study(study, plan, None)
    results = w.results
    client = FakeClient(tmp_path, outcome)
    seen = []
    d = Dispatcher(client, study, plan, results, on_run=lambda r, m: seen.append(r.label),
                   merge_preflight=True, bar=bar)
    d.run(plan.runs)
    return plan, open_results(results.path), client, seen


def test_runs_are_committed_as_a_serial_studys(study, tmp_path):
    plan, res, client, seen = _dispatch(study, tmp_path, lambda p: (True, None))
    labels = sorted(r.label for r in plan.runs)
    assert sorted(seen) == labels == sorted(p.name for p in (res.path / "runs").iterdir())
    assert sorted(res.runs["label"]) == labels
    assert (res.status()["state"] == "valid").all()
    assert set(res.runs["worker_host"]) == {"w1"}
    pf = json.loads((res.path / "preflight.json").read_text())
    assert sorted(pf["cells"]) == ["0", "1", "2", "3"]
    assert [p["label"] for p in client.payloads] == [r.label for r in plan.runs]


def test_a_run_spoiled_by_noise_is_run_again_and_the_attempt_set_aside(study, tmp_path):
    noisy = "CPU steal 40% of the run (limit 25%)"
    victim = "c000-r1"
    # the first attempt of one run is invalid for the machine's noise, the second valid
    plan, res, client, seen = _dispatch(study, tmp_path, lambda p: (
        not (p["label"] == victim and not p["superseded"]),
        noisy if p["label"] == victim and not p["superseded"] else None))
    again = [p for p in client.payloads if p["label"] == victim]
    assert len(again) == 2 and [a["attempt"] for a in again[1]["superseded"]] == [1]
    assert again[0]["seed"] == again[1]["seed"]
    meta = json.loads((res.path / "runs" / victim / "meta.json").read_text())
    assert meta["valid"] and meta["run_id"] == f"{victim}-a2"
    assert meta["superseded"][0]["invalid_reasons"] == [noisy]
    aside = json.loads((res.path / "superseded" / f"{victim}.1" / "meta.json").read_text())
    assert aside["run_id"] == f"{victim}-a1" and aside["superseded_by_rerun"]
    assert seen.count(victim) == 1 and len(seen) == len(plan.runs)
    assert int(res.runs.set_index("label").loc[victim, "reruns"]) == 1


def test_the_progress_of_runs_that_run_at_once(study, tmp_path, capsys):
    """--jobs and --cluster with the progress bar on: each completed run advances the
    study's bar and prints its outcome; a re-run is announced (there is no bar of one
    current run to reset)."""
    from ccarena.run.progress import Progress
    noisy = "CPU steal 40% of the run (limit 25%)"
    victim = "c000-r1"
    bar = Progress(len(study.cells), study.name)
    try:
        plan, _, _, seen = _dispatch(study, tmp_path, lambda p: (
            not (p["label"] == victim and not p["superseded"]),
            noisy if p["label"] == victim and not p["superseded"] else None), bar=bar)
        task_ = bar.p.tasks[bar.study]
        assert task_.completed == task_.total == len(plan.runs) == len(seen)
    finally:
        bar.close()
    out = capsys.readouterr().out
    for r in plan.runs:
        assert f"{r.label} " in out
    assert out.count(": valid") == len(plan.runs)
    assert f"{victim} buffer=20p, cc=reno: again (re-run 1" in out


def test_the_progress_of_a_serial_study(study, capsys):
    """One run at a time: the current run's bar with its duration, a re-run resets it,
    and each finished run's outcome is printed."""
    from ccarena.run.progress import Progress
    plan = make_plan(study, seed=3, repetitions=1, shuffle=False)
    bar = Progress(len(plan.runs), study.name)
    try:
        for i, r in enumerate(plan.runs):
            bar.update(r)
            assert bar.p.tasks[bar.run].total == r.study.duration_s
            if i == 0:
                bar.rerun(r, 1)
            bar.finished(r, {"valid": i != 1, "invalid_reasons": ["CPU steal 40%"]})
        assert bar.p.tasks[bar.study].completed == len(plan.runs)
    finally:
        bar.close()
    out = capsys.readouterr().out
    assert f"{plan.runs[1].label} buffer=20p, cc=cubic: INVALID: CPU steal 40%" in out
    assert out.count(": valid") == len(plan.runs) - 1


def test_noise_that_stays_ends_the_re_runs(study, tmp_path):
    noisy = "flow engine on s1 missed 30 of 100 sampling ticks"
    plan, res, client, seen = _dispatch(study, tmp_path, lambda p: (False, noisy), reruns=2)
    per = {}
    for p in client.payloads:
        per[p["label"]] = per.get(p["label"], 0) + 1
    # at most 1 + reruns attempts each; once a cell's re-runs failed alike, none more
    assert max(per.values()) == 3 and min(per.values()) >= 1
    assert (res.status()["state"] == "invalid").all()
    assert len(list((res.path / "runs").iterdir())) == len(plan.runs)


def test_a_task_that_fails_stops_the_study_with_its_reason(study, tmp_path):
    plan = make_plan(study, seed=3, repetitions=1)
    results = Writer.create(study.name, tmp_path / "res").results
    client = FakeClient(tmp_path, lambda p: (True, None))
    boom = cluster.remote.RemoteRunError("run c000-r1 on w2: preflight: no ccarena-link")
    real = client.submit
    client.submit = lambda fn, payload, **kw: FakeFuture(boom) if payload["label"] == \
        "c000-r1" else real(fn, payload, **kw)
    with pytest.raises(cluster.remote.RemoteRunError, match="on w2: preflight"):
        Dispatcher(client, study, plan, results).run(plan.runs)


def test_the_report_says_when_runs_came_from_machines_that_differ():
    from ccarena.report.page import machines_line
    w = {"host": "a", "kernel": "6.18.1", "cpu_model": "EPYC", "ccarena": "0.1.0",
         "commit": "abc"}
    assert machines_line([{"worker": w}, {"worker": w}]) is None       # one machine
    assert machines_line([{}, {}]) is None                             # older results
    alike = machines_line([{"worker": w}, {"worker": {**w, "host": "b"}}])
    assert "2 machines (a, b), alike" in alike and "WARNING" not in alike
    differ = machines_line([{"worker": w}, {"worker": {**w, "host": "b", "kernel": "6.1"}},
                            {"worker": {**w, "host": "c", "commit": "def"}}])
    assert differ.startswith("WARNING: the runs came from 3 machines (a, b, c)")
    assert "differ in kernel, ccarena commit" in differ


def test_cpu_time_is_read_over_the_cpus_the_run_may_use():
    import subprocess
    import sys
    code = ("import os; from ccarena.measure import cpu; os.sched_setaffinity(0, {0}); "
            "a = cpu.snapshot(); u = cpu.usage(a, cpu.snapshot()); "
            "line = open('/proc/stat').read().splitlines()[1].split(); "
            "print(u['cores'], line[0], sum(a) <= sum(map(int, line[1:9])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    import os
    if (os.cpu_count() or 1) > 1:
        assert out == ["1", "cpu0", "True"]


def test_a_parent_that_ended_is_not_alive():
    """A task's process removes its directory when its submitter has gone: an ended
    process, a zombie not yet reaped included, is not alive."""
    import os
    import subprocess

    from ccarena.run.scaleout.task import _alive
    assert _alive(os.getpid())
    p = subprocess.Popen(["sleep", "60"])
    try:
        assert _alive(p.pid)
        p.kill()
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        assert not _alive(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not _alive(p.pid)


def test_stale_task_directories_are_those_of_dead_workers(tmp_path):
    """A worker killed between making a task's directory and starting its run process
    leaves the directory: `ccarena worker` and `ccarena cleanup` remove it once the
    worker (the pid in its name) is gone, and never a live worker's."""
    from ccarena.run.scaleout.remote import TASK_PREFIX, cleanup_stale_tasks
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"{TASK_PREFIX}{dead.pid}-c000-r1-abc"
    live = tmp_path / f"{TASK_PREFIX}{os.getpid()}-c000-r2-def"
    other = tmp_path / "ccarena-taskless"
    for d in (gone, live, other):
        d.mkdir()
        (d / "payload.json").write_text("{}")
    assert cleanup_stale_tasks(str(tmp_path)) == [str(gone)]
    assert not gone.exists() and live.exists() and other.exists()
