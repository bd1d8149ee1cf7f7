"""Faults injected into small studies: ccarena, the link or an engine killed mid-sweep, a
full disk, a read-only results directory, damaged files. Each must leave nothing behind
(after `ccarena cleanup` where ccarena itself was killed), never a partial study that
looks complete, one clear line of error, and `--resume` must complete the study with every
planned run exactly once.

The kills strike at a point drawn from a seeded RNG (the seed is the test's parameter;
the point is printed, so a failure is reproduced by running that parameter again)."""
import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import ccarena
from ccarena.cli import exits
from ccarena.measure import validity
from conftest import ccarena_cli, ccarena_namespaces, foreign_runs

pytestmark = pytest.mark.root

STUDY = """
[study]
name = "faults"
duration = "{duration}"
warmup = "0.5s"
repetitions = {reps}
seed = 7
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
[[expect]]
name = "goodput within the rate"
metric = "goodput_bps"
flow = "bulk"
max = "100%rate"
"""
DURATION_S = 1.5


def write_study(tmp_path, duration="2s", reps=2) -> Path:
    p = tmp_path / "faults.toml"
    p.write_text(STUDY.format(duration=duration, reps=reps))
    return p


def start(study: Path, results: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(study), "--quiet",
                             "--no-report", "--results", str(results), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results_dir(base: Path, timeout_s: float = 60) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sorted(base.glob("faults-*/plan.json")) if base.is_dir() else []
        if found:
            return found[0].parent
        time.sleep(0.1)
    raise AssertionError(f"no results directory appeared under {base}")


def wait_for(pred, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def complete_runs(d: Path) -> list[str]:
    return sorted(p.parent.name for p in (d / "runs").glob("*/meta.json"))


def planned(d: Path) -> list[dict]:
    return json.loads((d / "plan.json").read_text())["runs"]


def pids_of(pattern: str) -> list[int]:
    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


def assert_exactly_once(d: Path, before: dict[str, str] | None = None):
    """Every planned run is stored once, with its planned seed; runs stored before a
    resume are kept as they were (same run id); nothing half-written is left."""
    plan = {r["label"]: r for r in planned(d)}
    metas = {p.parent.name: json.loads(p.read_text()) for p in (d / "runs").glob("*/meta.json")}
    assert sorted(metas) == sorted(plan), (sorted(metas), sorted(plan))
    for label, m in metas.items():
        assert m["seed"] == plan[label]["seed"] and m["label"] == label
    assert len({m["run_id"] for m in metas.values()}) == len(metas)
    for label, rid in (before or {}).items():
        assert metas[label]["run_id"] == rid, f"{label} was run again"
    assert not [p for p in (d / "runs").iterdir() if not (p / "meta.json").exists()]
    assert not list(d.rglob(".*.tmp")), list(d.rglob(".*.tmp"))
    res = ccarena.open_results(d)
    assert not res.incomplete_runs() and sorted(res.runs["label"]) == sorted(plan)


def assert_passes_unless_noise(d: Path, rc: int | None = None, out: str = ""):
    """The completed study passes its checks (`rc`: the run's exit status, else `check`
    is asked) -- unless a run is invalid for the machine's noise alone (reruns = 0 here),
    which is this machine's doing, not the fault's: then a check fails (3) or the run's
    cell has no valid run (5: partial, 6: no cell has one)."""
    if rc is None:
        r = ccarena_cli("check", d, check=False)
        rc, out = r.returncode, r.stdout + r.stderr
    if rc == 0:
        return
    metas = [json.loads(p.read_text()) for p in (d / "runs").glob("*/meta.json")]
    bad = [m for m in metas if not m["valid"]]
    assert rc in (3, 5, 6) and bad and all(validity.noise_only(m) for m in bad), (rc, out)


# The parameters' seeds spread the points over setups, measurements and the time between
# runs; CCARENA_FAULT_SEED=N shifts every seed by N to explore other points (the printed
# seed reproduces a failure: CCARENA_FAULT_SEED=<printed - parameter>).
SEED_SHIFT = int(os.environ.get("CCARENA_FAULT_SEED", "0"))


def fault_rng(seed: int) -> random.Random:
    return random.Random(seed + SEED_SHIFT)


def kill_point(seed: int, what: str, **point) -> None:
    print(f"fault injection, seed {seed + SEED_SHIFT} (parameter {seed}, CCARENA_FAULT_SEED "
          f"{SEED_SHIFT}): {what} " + ", ".join(
              f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
              for k, v in point.items()))


RESUME_WITH = {1: "cli", 5: "api", 2: "cli --jobs 2"}


# the API's resume is the CLI's (the CLI is a thin layer over it): a second proof, in
# make verify
@pytest.mark.parametrize("seed", [1, pytest.param(5, marks=pytest.mark.verify), 2])
def test_ccarena_killed_at_a_random_point_then_cleanup_and_resume(tmp_path, seed, no_leaks):
    """SIGKILL of ccarena at a point uniform over the sweep's first n x duration seconds
    after its plan is written (each run lasts at least its duration, so the point falls
    inside the sweep: in a setup, a measurement, a teardown, the storing of a run or of
    the summaries). Resumed by the CLI, the Python API or the CLI with --jobs 2."""
    study = write_study(tmp_path, duration=f"{DURATION_S}s", reps=2)
    base = tmp_path / "res"
    p = start(study, base)
    d = results_dir(base)
    t = fault_rng(seed).uniform(0, len(planned(d)) * DURATION_S)
    kill_point(seed, "SIGKILL ccarena", after_plan_s=t, resume_with=RESUME_WITH[seed])
    time.sleep(t)
    assert p.poll() is None, "the sweep ended before its shortest possible length"
    p.send_signal(signal.SIGKILL)
    p.wait()
    done = {x: json.loads((d / "runs" / x / "meta.json").read_text())["run_id"]
            for x in complete_runs(d)}
    print(f"complete when killed: {sorted(done)}")
    assert len(done) < len(planned(d))
    # the partial study does not pass its checks
    r = ccarena_cli("check", d, check=False)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "missing" in r.stdout and "incomplete" in r.stderr
    # children die with ccarena; cleanup removes the namespaces the dead run left
    wait_for(lambda: not pids_of(f"ccarena-(flow|link) --config {d}"), 10,
             "the killed run's link and engines to exit")
    ccarena_cli("cleanup")
    mine = ccarena_namespaces() - foreign_runs()[0]
    assert not mine, mine
    # a changed study is refused, naming what changed
    changed = tmp_path / "changed.toml"
    changed.write_text(study.read_text().replace('rate = "20mbit"', 'rate = "30mbit"'))
    r = ccarena_cli("run", changed, "--resume", d, "--quiet", "--no-report", check=False)
    assert r.returncode == 1 and "bottleneck.rate" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    # resume runs only what is missing or was in flight
    how = RESUME_WITH[seed]
    if how == "api":
        res = ccarena.run_study(ccarena.load_study(study), resume=d, progress=False)
        assert res.path == d
        rc = exits.of_study(res, res.passed)
    else:
        r = ccarena_cli("run", study, "--resume", d, "--quiet", "--no-report",
                        *how.split()[1:], check=False)
        assert r.returncode in (0, 3, 5, 6), r.stdout + r.stderr
        rc = r.returncode
    assert_exactly_once(d, before=done)
    rec = json.loads((d / "resumes.json").read_text())[-1]
    assert rec["complete_runs"] == len(done)
    assert (rec["executor"] or {}).get("jobs", 1) == (2 if "--jobs" in how else 1)
    assert_passes_unless_noise(d, rc)
    assert_passes_unless_noise(d)


# one point per part in the suite; a second point each in make verify
@pytest.mark.parametrize("victim,seed", [
    ("ccarena-link", 2), pytest.param("ccarena-link", 5, marks=pytest.mark.verify),
    ("ccarena-flow", 4), pytest.param("ccarena-flow", 7, marks=pytest.mark.verify)])
def test_a_part_killed_at_a_random_point_and_resume_runs_that_run_again(tmp_path, victim,
                                                                         seed, no_leaks):
    """SIGKILL of the link emulator or of a flow engine (the sender's or the receiver's)
    of a run drawn from the plan, at a time uniform over the run's duration after the
    process started (it lives at least that long: from before t0 to the end): its setup
    or its measurement. The run is invalid and says what was killed, its cell (one run)
    fails the checks; `--resume` moves it aside and runs it again."""
    study = write_study(tmp_path, duration=f"{DURATION_S}s", reps=1)
    base = tmp_path / "res"
    p = start(study, base)
    d = results_dir(base)
    rng = fault_rng(seed)
    label = rng.choice([r["label"] for r in planned(d)])
    where = "link" if victim == "ccarena-link" else rng.choice(["s1", "r1"])
    delay = rng.uniform(0, DURATION_S)
    name = victim if victim == "ccarena-link" else f"ccarena-flow@{where}"
    kill_point(seed, f"SIGKILL {name}", run=label, after_start_s=delay)
    try:
        pid = wait_for(lambda: pids_of(f"{victim} --config {d}/runs/{label}/raw/{where}/"),
                       120, f"{name} of run {label}")[0]
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # the killed run's cell has no valid run: the study is partial (or failed, when the
    # machine's noise spoiled the other cell's run: judged below)
    assert p.returncode in (5, 6), out + err
    assert "NO valid run" in out
    metas = {x.parent.name: json.loads(x.read_text()) for x in (d / "runs").glob("*/meta.json")}
    assert sorted(metas) == sorted(r["label"] for r in planned(d))
    # judge the killed run; another may be spoiled by the machine's noise alone (reruns = 0)
    hit = metas[label]
    assert not hit["valid"] and any(victim in r for r in hit["invalid_reasons"]), hit
    assert {"process": name, "signal": "SIGKILL"} in hit["killed"], hit.get("killed")
    for other, m in metas.items():
        if other != label:
            assert m["valid"] or validity.noise_only(m), (other, m["invalid_reasons"])
            assert not m.get("killed")
    r = ccarena_cli("check", d, check=False)
    assert r.returncode == p.returncode, r.stdout + r.stderr
    before = {x: m["run_id"] for x, m in metas.items() if x != label}
    r = ccarena_cli("run", study, "--resume", d, "--quiet", "--no-report", check=False)
    assert r.returncode in (0, 3, 5, 6), r.stdout + r.stderr
    aside = d / "superseded" / f"{label}.interrupted"
    assert json.loads((aside / "meta.json").read_text())["run_id"] == hit["run_id"]
    assert_exactly_once(d, before=before)
    again = json.loads((d / "runs" / label / "meta.json").read_text())
    assert again["run_id"] != hit["run_id"] and not again.get("killed")
    assert any(label in x and "interrupted" in x
               for x in json.loads((d / "resumes.json").read_text())[-1]["discarded"])
    assert_passes_unless_noise(d, r.returncode, r.stdout + r.stderr)


def test_damaged_files_are_set_aside_and_run_again_by_the_api_with_two_jobs(tmp_path,
                                                                            no_leaks):
    """A stored study damaged afterwards -- a truncated meta.json, a deleted meta.json, a
    deleted run table, a truncated runs.parquet, a deleted cells.parquet -- is completed by
    ccarena.run_study(..., resume=, jobs=2): each damaged run moved whole to
    superseded/<label>.damaged and run again, the intact one kept, the summaries
    rebuilt."""
    study = write_study(tmp_path, duration=f"{DURATION_S}s", reps=2)
    r = ccarena_cli("run", study, "--results", tmp_path / "res", "--quiet", "--no-report",
                    check=False)
    assert r.returncode in (0, 3, 5, 6), r.stdout + r.stderr
    d = next((tmp_path / "res").glob("faults-*"))
    labels = [x["label"] for x in planned(d)]
    runs = d / "runs"
    meta = runs / labels[0] / "meta.json"
    meta.write_bytes(meta.read_bytes()[: meta.stat().st_size // 2])
    (runs / labels[1] / "meta.json").unlink()
    (runs / labels[2] / "tcpinfo.parquet").unlink()
    summary = d / "runs.parquet"
    summary.write_bytes(summary.read_bytes()[:64])
    (d / "cells.parquet").unlink()
    kept = {labels[3]: json.loads((runs / labels[3] / "meta.json").read_text())["run_id"]}
    res = ccarena.run_study(ccarena.load_study(study), resume=d, jobs=2, progress=False)
    assert res.path == d
    assert_exactly_once(d, before=kept)
    for label in labels[:3]:
        assert (d / "superseded" / f"{label}.damaged").is_dir(), label
    assert len(list((d / "superseded").iterdir())) == 3
    rec = json.loads((d / "resumes.json").read_text())[-1]
    assert rec["complete_runs"] == 1        # the intact run
    assert sum("damaged" in x for x in rec["discarded"]) == 3, rec["discarded"]
    assert rec["executor"]["jobs"] == 2
    assert sorted(pd.read_parquet(d / "runs.parquet")["label"]) == sorted(labels)
    assert (d / "cells.parquet").exists()
    assert_passes_unless_noise(d)


def _mount_tmpfs(where: Path, size: str, ro: bool = False):
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}" + (",ro" if ro else ""),
                    "tmpfs", str(where)], check=True)


def _umount(where: Path):
    subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(where: Path, leave: int) -> None:
    """Fill the file system at `where` up to `leave` bytes of free space."""
    st = os.statvfs(where)
    with open(where / f"filler-{time.monotonic_ns()}", "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))


@pytest.mark.parametrize("room_kib", [0, 96])
def test_a_disk_full_before_the_first_run_completed_leaves_nothing(tmp_path, room_kib,
                                                                  no_leaks):
    """No room even for the plan (0 KiB), or for the plan but not the first run's
    records (96 KiB): no run completed, so nothing is kept -- no stub directory that
    `--resume` would refuse -- and the one line says to run the study again."""
    study = write_study(tmp_path, duration="2s", reps=2)
    small = tmp_path / "small"
    _mount_tmpfs(small, "4m")
    _fill(small, room_kib * 1024)
    try:
        r = ccarena_cli("run", study, "--results", small, "--quiet", "--no-report",
                        check=False)
        left = sorted(p.name for p in small.iterdir() if not p.name.startswith("filler-"))
    finally:
        _umount(small)
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0], r.stderr
    assert "run the study again" in err[0] and "--resume" not in err[0], err[0]
    assert "Traceback" not in r.stderr
    assert left == [], left


def test_a_disk_full_after_a_run_completed_keeps_it_and_resume_completes(tmp_path,
                                                                        no_leaks):
    """The disk fills up once the first run is stored: that run is kept, the study stops
    with the remedy `--resume`, and the resume (with room again) completes it."""
    study = write_study(tmp_path, duration="2s", reps=2)
    small = tmp_path / "small"
    _mount_tmpfs(small, "16m")
    try:
        with pytest.raises((ccarena.CcarenaError, OSError)) as e:
            ccarena.run_study(ccarena.load_study(study), results_base=small,
                              progress=False, shuffle=False,
                              on_run=lambda r, meta: _fill(small, 0))
        if isinstance(e.value, ccarena.CcarenaError):
            assert "No space left on device" in str(e.value) and "--resume" in str(e.value)
        else:
            assert e.value.errno == errno.ENOSPC, e.value
        d = next(small.glob("faults-*"))
        done = {x: json.loads((d / "runs" / x / "meta.json").read_text())["run_id"]
                for x in complete_runs(d)}
        assert 1 <= len(done) < len(planned(d)), done
        big = tmp_path / "big"
        subprocess.run(["cp", "-a", str(d), str(big)], check=True)
    finally:
        _umount(small)
    r = ccarena_cli("run", study, "--resume", big, "--quiet", "--no-report", check=False)
    assert r.returncode in (0, 3, 5, 6), r.stdout + r.stderr
    assert_exactly_once(big, before=done)
    assert_passes_unless_noise(big, r.returncode, r.stdout + r.stderr)


def test_a_read_only_results_directory_is_one_line(tmp_path):
    study = write_study(tmp_path, duration="1s", reps=1)
    ro = tmp_path / "ro"
    _mount_tmpfs(ro, "1m", ro=True)
    try:
        r = ccarena_cli("run", study, "--results", ro, "--quiet", check=False)
    finally:
        _umount(ro)
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "read-only" in err[0] and str(ro) in err[0], r.stderr


def test_a_results_path_that_is_a_file_is_one_line(tmp_path):
    study = write_study(tmp_path, duration="1s", reps=1)
    f = tmp_path / "afile"
    f.write_text("x")
    r = ccarena_cli("run", study, "--results", f, "--quiet", check=False)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "not a directory" in r.stderr
