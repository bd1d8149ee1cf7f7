"""Leave no trace: after a normal run, a failing run and a SIGINT/SIGTERM in mid-run, no
namespace, veth, process or BPF object of ccarena's is left, and completed runs are kept."""
import os
import signal
import subprocess
import sys
import time

import pytest

from ccarena.run.study import run_study

from conftest import ccarena_cli, ccarena_namespaces, foreign_runs
from helpers import bulk_study

pytestmark = pytest.mark.root


def start_cli_study(tmp_path, name: str, study_keys: str, capture: bool):
    """`ccarena run` of a one-flow kernel-backend study as a separate process."""
    study = tmp_path / "s.toml"
    study.write_text(f"[study]\nname = \"{name}\"\n{study_keys}\n[bottleneck]\n"
                     "rate = \"20mbit\"\nbackend = \"kernel\"\n"
                     "[[flow]]\nname = \"bulk\"\nfrom = \"s1\"\nto = \"r1\"\n")
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(study), "--quiet",
                             "--results", str(tmp_path / "res")], stdout=out, stderr=out,
                            text=True)


def root_links() -> str:
    return subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout


def test_normal_run_leaves_nothing_and_touches_no_root_interface(tmp_path, no_leaks):
    before = root_links()
    res = run_study(bulk_study(rate="20mbit", duration="2s", warmup="0.5s", backend="kernel"),
                    results_base=tmp_path, progress=False)
    assert len(res.run_dirs()) == 1
    assert root_links() == before


def test_run_whose_engine_fails_is_recorded_invalid_and_cleaned(tmp_path, no_leaks):
    # A flow engine that says READY and then dies: the run fails in mid-run.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "ccarena-flow"
    fake.write_text("#!/bin/sh\necho READY\nread go\necho 'ccarena-flow: boom' >&2\nexit 1\n")
    fake.chmod(0o755)
    os.environ["CCARENA_BIN_DIR"] = str(bindir)
    try:
        res = run_study(bulk_study(rate="20mbit", duration="2s", warmup="0.5s",
                                   backend="kernel"), results_base=tmp_path / "r",
                        progress=False)
    finally:
        del os.environ["CCARENA_BIN_DIR"]
    runs = res.runs
    assert len(runs) == 1 and not bool(runs["valid"].iloc[0])
    assert "boom" in runs["invalid_reasons"].iloc[0]


def test_run_whose_build_fails_is_cleaned(tmp_path, no_leaks):
    study = bulk_study(rate="20mbit", duration="2s", warmup="0.5s", backend="kernel",
                       extra='[tcp]\nsysctl = { "net.ipv4.tcp_no_such_knob" = "1" }\n')
    res = run_study(study, results_base=tmp_path, progress=False)
    reasons = res.runs["invalid_reasons"].iloc[0]
    assert "tcp_no_such_knob" in reasons and "no such sysctl" in reasons


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_in_mid_run_tears_down_and_keeps_completed_runs(tmp_path, no_leaks, sig):
    before = ccarena_namespaces()
    p = start_cli_study(tmp_path, "sig", "duration = \"3s\"\nrepetitions = 3\nshuffle = false",
                        capture=True)
    # wait until the second run's namespaces exist (the first run is then complete)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = list((tmp_path / "res").glob("*/runs/*/meta.json"))
        if done and ccarena_namespaces() - before - foreign_runs()[0]:
            break
        time.sleep(0.1)
    else:
        p.kill()
        pytest.fail("the study did not reach its second run")
    time.sleep(0.5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "interrupted" in err
    assert ccarena_namespaces() - before - foreign_runs()[0] == set()
    res_dir = next((tmp_path / "res").glob("sig-*"))
    kept = list(res_dir.glob("runs/*/meta.json"))
    assert len(kept) >= 1
    # the stored runs are readable and complete
    r = ccarena_cli("show", res_dir)
    assert "bulk" in r.stdout


def test_a_run_stuck_in_a_step_is_stopped_recorded_and_cleaned(tmp_path, no_leaks,
                                                             monkeypatch):
    """A step that blocks forever (here the qdisc sampler's stop, standing for a hung
    netlink call) must not hang the study: the watchdog stops the run at its bound, the
    run is stored invalid with where it was stuck, its network is gone, and the next run
    goes on."""
    from ccarena.run import watchdog
    from ccarena.testbed import kernel_link
    monkeypatch.setattr(watchdog, "SLACK_S", 20.0)
    real_stop, calls = kernel_link.QdiscSampler.stop, []

    def stuck_once(self):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(3600)
        return real_stop(self)
    monkeypatch.setattr(kernel_link.QdiscSampler, "stop", stuck_once)
    study = bulk_study(rate="20mbit", duration="2s", warmup="0.5s", backend="kernel")
    t = time.monotonic()
    res = run_study(study, results_base=tmp_path, progress=False, shuffle=False,
                    repetitions=2)
    assert time.monotonic() - t < 120
    runs = res.runs.sort_values("index")
    assert len(runs) == 2
    first, second = runs.iloc[0], runs.iloc[1]
    assert not bool(first["valid"]) and "did not finish within 22 s" in first["invalid_reasons"]
    stacks = next(res.path.glob("runs/*/raw/logs/watchdog-stacks.txt")).read_text()
    assert "stuck_once" in stacks, stacks
    assert "did not finish" not in second["invalid_reasons"]


def test_cleanup_removes_what_a_killed_run_left(tmp_path, no_leaks):
    before = ccarena_namespaces()
    p = start_cli_study(tmp_path, "crash", "duration = \"20s\"", capture=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (ccarena_namespaces() - before
                                               - foreign_runs()[0]):
        time.sleep(0.1)
    time.sleep(1.0)
    p.kill()            # SIGKILL: no teardown possible
    p.wait()
    left = ccarena_namespaces() - before - foreign_runs()[0]
    assert left, "expected the killed run to leave namespaces for cleanup to find"
    r = ccarena_cli("cleanup")
    assert ccarena_namespaces() - before - foreign_runs()[0] == set(), r.stdout
    for n in left:
        assert n in r.stdout
