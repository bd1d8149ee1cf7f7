"""Faults where ccarena itself is the weak point: how the user names a results directory,
a run that ccarena failed before it was measured, a signal that arrives while the testbed
is built (made deterministic: sent from inside the fork hook of a build step, where a
raised exception would be lost), a closed terminal (SIGHUP), a study whose cells have no
valid run, and a full disk before the study's first file. Each must end with the exit
status docs/running.md gives, leave nothing behind, and never store as done what was not
measured."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ccarena
from ccarena.measure import validity
from ccarena.run import one_run
from conftest import ccarena_cli

pytestmark = pytest.mark.root

STUDY = """
[study]
name = "rel"
duration = "{duration}"
warmup = "0.2s"
repetitions = {reps}
seed = 11
reruns = 0
[bottleneck]
rate = "10mbit"
delay = "5ms"
buffer = "50p"
backend = "user"
{bottleneck}
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "cubic"
"""


def write_study(where: Path, reps: int = 1, extra: str = "", duration: str = "1s",
                bottleneck: str = "") -> Path:
    p = where / "rel.toml"
    p.write_text(STUDY.format(reps=reps, duration=duration, bottleneck=bottleneck)
                 + textwrap.dedent(extra))
    return p


def metas(d: Path) -> dict[str, dict]:
    return {m.parent.name: json.loads(m.read_text()) for m in (d / "runs").glob("*/meta.json")}


def measured(m: dict) -> bool:
    """Valid, or invalid for the machine's noise alone (reruns = 0 here), which is the
    machine's doing, not the fault's."""
    return m["valid"] or validity.noise_only(m)


def make_in_flight(d: Path, label: str) -> None:
    """Leave run `label` as an interruption leaves it: its raw files, no manifest."""
    run = d / "runs" / label
    for f in run.iterdir():
        if f.name != "raw":
            f.unlink()


def test_resume_with_a_relative_path_runs_what_was_in_flight_validly(tmp_path, no_leaks):
    """`--resume results/<dir>` as the README writes it, from the study's directory: the
    resumed run's programs get absolute paths and the run is measured."""
    study = write_study(tmp_path, reps=2)
    r = ccarena_cli("run", study.name, "--results", "res", "--quiet", "--no-report",
                    cwd=tmp_path, check=False)
    assert r.returncode in (0, 5), r.stdout + r.stderr
    d = next((tmp_path / "res").glob("rel-*"))
    first = metas(d)
    assert all(measured(m) for m in first.values()), first
    make_in_flight(d, "c000-r2")
    rel = d.relative_to(tmp_path)
    r = ccarena_cli("run", study.name, "--resume", rel, "--quiet", "--no-report",
                    cwd=tmp_path, check=False)
    assert r.returncode in (0, 5), r.stdout + r.stderr
    again = metas(d)
    assert sorted(again) == ["c000-r1", "c000-r2"]
    assert again["c000-r1"]["run_id"] == first["c000-r1"]["run_id"]
    assert measured(again["c000-r2"]), again["c000-r2"]["invalid_reasons"]
    assert "unmeasured" not in again["c000-r2"]


FAILED_ENGINE = """#!/bin/sh
echo "ccarena-flow: read config: out_dir: must be an absolute path" >&2
exit 2
"""


@pytest.mark.filterwarnings("ignore:.*unmeasured was run again")
@pytest.mark.parametrize("stage", ["setup", "metrics"])
def test_a_run_ccarena_failed_is_not_a_result_and_resume_runs_it_again(
        tmp_path, monkeypatch, stage, no_leaks):
    """A run that ccarena failed -- its flow engine refused the configuration and exited
    before READY (setup), or a metric's formula raised (metrics) -- is stored invalid and
    marked unmeasured with its stage and error; `--resume` sets it aside under
    superseded/<label>.unmeasured and runs it again, now measured."""
    study = ccarena.load_study(write_study(tmp_path))
    if stage == "setup":
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "ccarena-flow").write_text(FAILED_ENGINE)
        (bindir / "ccarena-flow").chmod(0o755)
        monkeypatch.setenv("CCARENA_BIN_DIR", str(bindir))
    else:
        def broken(tables, meta):
            raise ZeroDivisionError("division by zero")
        monkeypatch.setattr(one_run, "run_metrics", broken)
    res = ccarena.run_study(study, results_base=tmp_path / "res", progress=False)
    m = metas(res.path)["c000-r1"]
    assert not m["valid"]
    assert m["unmeasured"]["stage"] == stage, m.get("unmeasured")
    why = "exited before READY" if stage == "setup" else "metrics failed: division by zero"
    assert why in m["unmeasured"]["error"] and any(why in x for x in m["invalid_reasons"])
    monkeypatch.undo()
    again = ccarena.run_study(study, resume=res.path, progress=False)
    new = metas(again.path)["c000-r1"]
    assert new["run_id"] != m["run_id"] and measured(new), new["invalid_reasons"]
    assert "unmeasured" not in new
    aside = again.path / "superseded" / "c000-r1.unmeasured" / "meta.json"
    assert json.loads(aside.read_text())["run_id"] == m["run_id"]
    rec = json.loads((again.path / "resumes.json").read_text())[-1]
    assert any("c000-r1" in x and "not measured" in x for x in rec["discarded"]), rec


# a flow engine that fails while the flows run (after READY and GO) when its host's flows
# use reno, and is the real one otherwise: the reno cell's runs are measured and invalid
REAL_ENGINE_OR_FAIL = """#!/bin/sh
if grep -q '"cc": "reno"' "$2"; then
  echo READY
  read go
  echo "ccarena-flow: failed on purpose" >&2
  exit 1
fi
exec {real} "$@"
"""


@pytest.mark.parametrize("ccs,outcome,code", [(["reno", "cubic"], "partial", 5),
                                              (["reno"], "failed", 6)])
def test_cells_without_a_valid_run_are_a_partial_or_failed_study(tmp_path, ccs, outcome,
                                                                 code, no_leaks):
    """No checks: a study whose cells all have no valid run exits 6 (`run` and `check`),
    one where some have none exits 5, and the API's results say it."""
    from ccarena.paths import require_binary
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ccarena-flow").write_text(REAL_ENGINE_OR_FAIL.format(
        real=require_binary("ccarena-flow", "the test")))
    (bindir / "ccarena-flow").chmod(0o755)
    cc_list = ", ".join(f'"{c}"' for c in ccs)
    study = write_study(tmp_path, extra=f'[sweep]\n"flow.bulk.cc" = [{cc_list}]\n')
    env = {"CCARENA_BIN_DIR": str(bindir)}
    r = ccarena_cli("run", study, "--results", tmp_path / "res", "--quiet", "--no-report",
                    "--no-shuffle", env=env, check=False)
    d = next((tmp_path / "res").glob("rel-*"))
    m = metas(d)
    if outcome == "partial" and not m["c001-r1"]["valid"]:
        # the cubic run spoiled by the machine's noise alone (reruns = 0): no cell answers
        assert validity.noise_only(m["c001-r1"]), m["c001-r1"]["invalid_reasons"]
        outcome, code = "failed", 6
    assert r.returncode == code, r.stdout + r.stderr
    assert f"the study {'is partial' if code == 5 else 'failed'}" in r.stderr
    assert "failed on purpose" in m["c000-r1"]["invalid_reasons"][0]
    assert "unmeasured" not in m["c000-r1"]      # measured: the failure is the run's
    r = ccarena_cli("check", d, check=False)
    assert r.returncode == code, r.stdout + r.stderr
    assert ccarena.open_results(d).outcome == outcome


# `ccarena run` with a signal sent at one step of the testbed's build, from inside the
# at-fork hook of a fork made there: where a handler's exception is dropped by Python, so
# the race of a signal that lands in a fork (each run starts its processes with one) is
# hit every time, not one time in three
SIGNAL_AT_STEP = """
import os, signal, subprocess, sys
from ccarena.testbed import build
step, sig = sys.argv[1], getattr(signal, sys.argv[2])
fire = []
os.register_at_fork(after_in_parent=lambda: fire and os.kill(os.getpid(), fire.pop()))
owner = build.netns if step == "netns.create" else build.Testbed
name = step.split(".")[-1]
real = getattr(owner, name)
def at_step(*a, **kw):
    if not sent:
        sent.append(1)
        fire.append(sig)
        subprocess.run(["true"], preexec_fn=lambda: None)
        print(f"signalled at {step}", file=sys.stderr, flush=True)
    return real(*a, **kw)
sent = []
setattr(owner, name, at_step)
from ccarena.cli.main import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("step,sig", [("netns.create", "SIGINT"), ("_links", "SIGTERM"),
                                      ("_addresses_routes", "SIGHUP"),
                                      ("_sysctls", "SIGINT"), ("_cgroups", "SIGTERM")])
def test_a_signal_during_the_testbed_build_stops_the_study(tmp_path, step, sig, no_leaks):
    """The study stops with status 130 at the first safe point after the build, its
    testbed torn down; no run completed, so no results directory is left either."""
    study = write_study(tmp_path, reps=2)
    base = tmp_path / "res"
    r = subprocess.run([sys.executable, "-c", SIGNAL_AT_STEP, step, sig, "run", str(study),
                        "--quiet", "--no-report", "--results", str(base)],
                       capture_output=True, text=True, timeout=300)
    assert f"signalled at {step}" in r.stderr, r.stderr
    assert r.returncode == 130, r.stdout + r.stderr
    assert f"interrupted ({sig})" in r.stderr
    assert "Traceback" not in r.stderr
    assert not base.exists() or not any(base.iterdir()), list(base.rglob("*"))


def test_an_outage_in_the_rate_schedule_holds_the_link_then_it_delivers_again(tmp_path,
                                                                              no_leaks):
    """`rate_schedule` with 0 Mbit/s from 1 s to 2 s (a link flap): the run is measured,
    the link sends nothing while the outage lasts, and delivers again, within its rate,
    once the rate returns. Times are the link's own (its t0, where its schedule starts)."""
    import pandas as pd
    study = write_study(tmp_path, duration="3s",
                        bottleneck='rate_schedule = [["1s", "0mbit"], ["2s", "10mbit"]]')
    ccarena_cli("validate", study)
    res = ccarena.run_study(ccarena.load_study(study), results_base=tmp_path / "res",
                            progress=False)
    m = metas(res.path)["c000-r1"]
    assert measured(m) and "unmeasured" not in m, m["invalid_reasons"]
    run = res.path / "runs" / "c000-r1"
    t0 = json.loads((run / "raw" / "link" / "link.config.json").read_text())["t0_ns"]
    # a machine too slow to start the link within its lead: the flows began later than
    # the link's schedule (the run says so, as noise); judge from when they began
    flows_from = (m["t0_ns"] - t0) / 1e9
    assert flows_from >= 0 and (flows_from < 0.01 or "overran its lead" in
                                " ".join(m["invalid_reasons"])), (flows_from, m)
    st = pd.read_parquet(run / "link_stats.parquet")
    w = st[st["dir"] == 0]
    t = (w["t_ns"] - t0) / 1e9
    interval = float(t.diff().median())
    before = w[(t > flows_from + 0.2) & (t <= 1.0)]
    during = w[(t > max(1.0, flows_from) + interval) & (t <= 2.0)]
    after = w[(t > 2.0) & (t <= 3.0)]
    assert len(during) > 10, "the flows began after the outage"
    assert flows_from > 0.8 or before["bytes_out"].sum() > 0
    assert during["bytes_out"].sum() == 0 and during["departures"].sum() == 0
    assert (during["qlen_pkts"] > 0).all()      # what was sent waits for the rate
    bits = after["bytes_out"].sum() * 8
    assert 0 < bits <= 10e6 * 1.0 * 1.02, bits
