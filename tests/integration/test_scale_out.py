"""Scale-out (docs/scale-out.md): a study run through a Dask scheduler and two workers on
this machine (loopback only), a worker killed mid-study, and `--jobs 2`. Whatever runs
the runs, the study must be the serial one: the same plan, labels, seeds and cells, the
same files per run, every planned run exactly once, nothing left behind."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from ccarena.run.study import run_study
from ccarena.store.results import open_results
from ccarena.study.load import load_study
from conftest import _ancestors

pytestmark = pytest.mark.root

STUDY = """
[study]
name = "scale"
duration = "2s"
warmup = "0.5s"
repetitions = 2
seed = 11
reruns = 0
[bottleneck]
rate = "20mbit"
delay = "5ms"
buffer = "50p"
backend = "user"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "cubic"
[sweep]
"bottleneck.buffer" = ["30p", "60p"]
"""
RATE = 20e6


def wait_for(pred, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "scale.toml"
    p.write_text(text)
    return p


@pytest.fixture
def study_file(tmp_path) -> Path:
    p = tmp_path / "scale.toml"
    p.write_text(STUDY)
    return p


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    f = d / "scheduler.json"
    log = open(d / "scheduler.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                          "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                          str(f)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: f.exists() and f.stat().st_size, 60, "the Dask scheduler")
        time.sleep(0.2)     # written whole
        yield json.loads(f.read_text())["address"]
    finally:
        p.terminate()
        p.wait(timeout=30)
        log.close()


class Worker:
    def __init__(self, address: str, cpus: str, log: Path):
        self.log = log
        self.out = open(log, "w")
        self.p = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "worker", address,
                                   "--cpus", cpus], stdout=self.out, stderr=subprocess.STDOUT)
        wait_for(lambda: "ccarena worker ready" in log.read_text() or self.p.poll() is not None,
                 90, f"worker on CPU {cpus}")
        assert self.p.poll() is None, log.read_text()

    def run_processes(self) -> list[int]:
        """Its live run processes (python -m ccarena.run.scaleout.task)."""
        out = subprocess.run(["pgrep", "-f", "ccarena.run.scaleout.task"], capture_output=True,
                             text=True).stdout.split()
        return [int(x) for x in out if self.p.pid in _ancestors(int(x))]

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.out.close()


@pytest.fixture
def workers(scheduler, tmp_path):
    ws = [Worker(scheduler, str(i), tmp_path / f"worker{i}.log") for i in (0, 1)]
    try:
        yield ws
    finally:
        for w in ws:
            w.stop()


def by_label(res) -> dict:
    return {m["label"]: m for m in res.metas.values()}


def files_of(res, label) -> set[str]:
    d = res.path / "runs" / label
    return {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}


def stored_files(res, label) -> set[str]:
    """The files a complete run must have: meta.json and every file its manifest lists
    (the tables it stored; a run that went wrong may store fewer and other raw files)."""
    m = by_label(res)[label]
    return {"meta.json", *m["files"]}


def assert_complete_study(res, plan_runs):
    """Every planned run exactly once, complete, nothing staged or half-written."""
    st = res.status()
    assert sorted(st["label"]) == sorted(r["label"] for r in plan_runs)
    assert (st["state"] != "missing").all(), st
    assert sorted(p.name for p in (res.path / "runs").iterdir()) == \
        sorted(r["label"] for r in plan_runs)
    assert not res.incomplete_runs()
    staged = res.path / "superseded"
    assert not staged.exists() or not any(staged.iterdir())
    runs = res.runs
    assert sorted(runs["label"]) == sorted(r["label"] for r in plan_runs)
    assert (runs["goodput_bps"] <= RATE * 1.01).all(), runs["goodput_bps"]


def test_cluster_study_is_the_serial_study(study_file, scheduler, workers, tmp_path,
                                           no_leaks):
    study = load_study(study_file)
    serial = run_study(study, results_base=tmp_path / "serial", progress=False)
    dist = run_study(load_study(study_file), results_base=tmp_path / "cluster",
                     progress=False, cluster=scheduler)
    a, b = open_results(serial.path), open_results(dist.path)
    assert a.plan["runs"] == b.plan["runs"] and a.plan["cells"] == b.plan["cells"]
    assert_complete_study(b, b.plan["runs"])
    ma, mb = by_label(a), by_label(b)
    assert ma.keys() == mb.keys()
    for label in ma:
        for k in ("cell", "rep", "seed", "index", "cell_params", "backend", "duration_s"):
            assert ma[label][k] == mb[label][k], (label, k)
        # the same files where both runs are valid; a complete run has its manifest's
        # files either way (assert_complete_study: none missing)
        assert stored_files(b, label) <= files_of(b, label), label
        if ma[label]["valid"] and mb[label]["valid"]:
            assert stored_files(a, label) == stored_files(b, label), label
        assert mb[label]["worker"]["host"] == os.uname().nodename
        assert mb[label]["worker"]["dask_worker"].startswith("tcp://127.0.0.1:")
    assert set(a.runs.columns) == set(b.runs.columns)
    assert set(a.flows.columns) == set(b.flows.columns)
    assert len(b.cells) and set(a.cells.columns) == set(b.cells.columns)
    assert set(b.runs["worker_host"]) == {os.uname().nodename}
    pf = json.loads((b.path / "preflight.json").read_text())
    assert sorted(pf["cells"]) == ["0", "1"] and "cubic" in pf["algorithms"]
    # each worker held its run to its CPU (ccarena worker --cpus): hosts in cpusets
    for m in mb.values():
        assert m["cpuset"] in ("0", "1")
        assert {v.get("cpuset.cpus") for v in m["host_limits"].values()} == {m["cpuset"]}


def test_a_worker_killed_mid_study(study_file, scheduler, workers, tmp_path, no_leaks):
    """SIGKILL one of two workers while it runs a run: its run tears itself down (nothing
    of it is kept, here or there), the run is run again on the other worker, and the
    study completes with every planned run exactly once."""
    base = tmp_path / "results"
    sub = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(study_file),
                            "--quiet", "--no-report", "--results", str(base), "--cluster",
                            scheduler], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    victim = workers[0]
    try:
        # its run is under way: the run process has built its namespaces
        def building():
            from ccarena.testbed import leftovers
            pids = set(victim.run_processes())
            for f in Path(leftovers.RUNS_DIR).glob("*.json"):
                try:
                    rec = json.loads(f.read_text())
                except (OSError, ValueError):
                    continue
                if rec.get("pid") in pids:
                    return rec
            return None
        rec = wait_for(building, 120, "a run on the first worker")
        victim.p.send_signal(signal.SIGKILL)
        victim.p.wait()
        # its run tears itself down (SIGTERM on its parent's death): its processes,
        # namespaces and task directories go. The run processes are found by their task
        # directory (named after the worker's pid), not by ancestry, which ends with the
        # worker: that also covers a run the worker started just before it was killed,
        # after the run found above had ended.
        tasks = f"ccarena-task-{victim.p.pid}-"

        def torn_down():
            procs = subprocess.run(["pgrep", "-f", tasks], capture_output=True,
                                   text=True).stdout.split()
            dirs = list(Path(tempfile.gettempdir()).glob(tasks + "*"))
            return not procs and not dirs

        try:
            wait_for(torn_down, 90, "the killed worker's runs to tear themselves down")
        except AssertionError:
            ps = subprocess.run(["pgrep", "-af", tasks], capture_output=True,
                                text=True).stdout
            logs = {str(d): (d / "stderr").read_text(errors="replace")[-2000:]
                    for d in Path(tempfile.gettempdir()).glob(tasks + "*")
                    if (d / "stderr").exists()}
            raise AssertionError(f"the killed worker's runs were not torn down: "
                                 f"processes {ps!r}, task directories' stderr {logs!r}")
        from ccarena.testbed import netns
        left = set(netns.list_names("cca")) & set(rec["namespaces"])
        assert left == set(), "the killed worker's run left its namespaces"
        out, err = sub.communicate(timeout=300)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    res = open_results(next(base.glob("scale-*")))
    # 0, or a cell whose runs the machine's noise alone made invalid (reruns = 0)
    from ccarena.measure import validity
    noisy = [m for m in res.metas.values() if not m["valid"]]
    assert sub.returncode == 0 or (sub.returncode in (5, 6) and all(
        validity.noise_only(m) for m in noisy)), err
    assert_complete_study(res, res.plan["runs"])
    # the survivor (CPU 1) ran at least what the victim could not finish
    assert "1" in {m["cpuset"] for m in res.metas.values()}


def test_jobs_two_runs_at_once_each_on_its_cpu(study_file, tmp_path, no_leaks):
    res = run_study(load_study(study_file), results_base=tmp_path, progress=False, jobs=2)
    res = open_results(res.path)
    assert_complete_study(res, res.plan["runs"])
    metas = list(res.metas.values())
    assert {m["cpuset"] for m in metas} == {"0", "1"}
    for m in metas:
        assert {v.get("cpuset.cpus") for v in m["host_limits"].values()} == {m["cpuset"]}
        cfg = json.loads((res.path / "runs" / m["label"] / "raw" / "link" /
                          "link.config.json").read_text())
        assert set(cfg["cpus"]) <= {int(m["cpuset"])}
        assert set(cfg.get("rps_cpus") or []) <= {int(m["cpuset"])}
    # two runs at once, never more: the executor's own count of the run processes it had
    # alive together (not the measurement windows, which setup jitter can shift apart)
    at_once = [m["runs_at_once"] for m in metas]
    assert max(at_once) == 2 and min(at_once) >= 1, at_once
    env = json.loads((res.path / "environment.json").read_text())
    assert env["executor"] == {"kind": "local", "jobs": 2, "cpu_shares": ["0", "1"]}
    runs = pd.read_parquet(res.path / "runs.parquet")
    assert runs["worker_host"].notna().all()


def test_a_share_too_small_for_its_rate_never_gives_a_valid_run_below_that_rate(tmp_path,
                                                                                 no_leaks):
    """--jobs 2 at 200 Mbit/s: one CPU per run, which on this 2-vCPU machine carries about
    half that rate (docs/scale-out.md). Whatever the machine, a run whose bulk flow should
    have saturated the bottleneck is either valid and delivered at least 80 % of the rate,
    or invalid for the machine's noise with its reasons (validity.judge_cpu_limited,
    judge_cpu_bursts) -- never a valid run far below its rate."""
    from ccarena.measure import validity
    study = load_study(_write(tmp_path, STUDY.replace('rate = "20mbit"', 'rate = "200mbit"')
                              .replace('buffer = "50p"', 'buffer = "100p"')
                              .replace('duration = "2s"', 'duration = "3s"')
                              .split("[sweep]")[0]))
    res = open_results(run_study(study, results_base=tmp_path, progress=False, jobs=2).path)
    metas = list(res.metas.values())
    assert len(metas) == 2 and {m["cpuset"] for m in metas} == {"0", "1"}
    for m in metas:
        d = m["link_delivery"]["w2e"]
        print(m["label"], m["valid"], f"{d['frac']:.2f} of the rate", m["invalid_reasons"])
        if m["valid"]:
            assert d["frac"] >= validity.CPU_LIMIT_UTIL_MAX, d
        else:
            assert validity.noise_only(m), m["invalid_reasons"]


def _flow_engines_of(workers) -> list[int]:
    """The flow engines of runs that these workers run (their config is in the task
    directory, named after the worker's pid)."""
    out = []
    for w in workers:
        out += subprocess.run(["pgrep", "-f", f"ccarena-flow --config {tempfile.gettempdir()}"
                               f"/ccarena-task-{w.p.pid}-"], capture_output=True,
                              text=True).stdout.split()
    return [int(x) for x in out]


def test_interrupting_the_submitter_stops_the_runs_on_the_workers(study_file, scheduler,
                                                                  workers, tmp_path,
                                                                  no_leaks):
    """Ctrl-C of `ccarena run --cluster` while runs measure: the submitter exits 130 with
    its one line, and every run process on the workers is gone within the time
    docs/scale-out.md gives (the worker notices the cancellation within 0.1 s; the run
    process stops at once where it waits and tears itself down)."""
    sub = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(study_file),
                            "--quiet", "--no-report", "--results", str(tmp_path / "res"),
                            "--cluster", scheduler], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: _flow_engines_of(workers), 180, "a run measuring on a worker")
        running = {p for w in workers for p in w.run_processes()}
        assert running
        sub.send_signal(signal.SIGINT)
        t = time.monotonic()
        wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in running), 30,
                 "the workers' run processes to end")
        took = time.monotonic() - t
        out, err = sub.communicate(timeout=120)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    print(f"the workers' runs ended {took:.2f} s after the Ctrl-C")
    assert took < 5.0, took
    assert sub.returncode == 130, err
    assert err.strip().splitlines() == ["ccarena: interrupted (SIGINT); the current run was "
                                        "torn down, completed runs are kept"], err


def test_a_killed_scheduler_is_one_line(study_file, tmp_path, no_leaks):
    """SIGKILL of the Dask scheduler while a run measures: the submitter stops with one
    line saying the connection was lost (none of Dask's own log or tracebacks), and the
    worker's run is torn down."""
    d = tmp_path / "dask"
    d.mkdir()
    f = d / "scheduler.json"
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                              "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                              "--scheduler-file", str(f)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    worker = sub = None
    try:
        wait_for(lambda: f.exists() and f.stat().st_size, 60, "the Dask scheduler")
        time.sleep(0.2)
        address = json.loads(f.read_text())["address"]
        worker = Worker(address, "0", tmp_path / "worker.log")
        sub = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(study_file),
                                "--quiet", "--no-report", "--results", str(tmp_path / "res"),
                                "--cluster", address], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        wait_for(lambda: _flow_engines_of([worker]), 180, "a run measuring on the worker")
        running = worker.run_processes()
        sched.send_signal(signal.SIGKILL)
        sched.wait()
        out, err = sub.communicate(timeout=180)
        wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in running), 60,
                 "the worker's run process to end")
    finally:
        for p in (sub, sched):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if worker is not None:
            worker.stop()
    assert sub.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ccarena: run ") and "connection to the Dask scheduler" \
        in lines[0] and address in lines[0] and "--resume" in lines[0], lines[0]
