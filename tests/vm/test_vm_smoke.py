"""The reference kernel boots and carries a kernel-backend run (netem delay and loss, htb
rate) whose results land on the host like any run's; the BPF pack's reno loads there and
halves and grows its window as RFC 5681 says (that it does so as Linux's own reno does,
call by call, is crates/cc-harness/tests/replay.rs's proof); and a VM stopped mid-run
leaves nothing running and no half-written run. Needs `make vm` (make test installs it)."""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ccarena import vm
from ccarena.paths import build_dir
from ccarena.study.load import loads_study

# the user-space link tests' helpers (tests/integration)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from linkhelpers import FRAME, dumbbell, failed_parts, run_table, runs  # noqa: E402

pytestmark = pytest.mark.root


def vm_processes() -> set[int]:
    """Our VMs' processes: vng and QEMU carry the name ccarena-vm-<session>."""
    r = subprocess.run(["pgrep", "-f", "ccarena-vm-[0-9a-f]{8}"], capture_output=True,
                       text=True)
    return {int(p) for p in r.stdout.split()}


def vm_sessions() -> set[Path]:
    sessions = build_dir() / "vm" / "sessions"
    return set(sessions.iterdir()) if sessions.exists() else set()


@pytest.fixture
def no_vm_left():
    """Nothing of the test's own VM is left: no process, no session folder. Another VM
    of this checkout running meanwhile (make verify, a user's `ccarena vm`) is not the
    test's: only what appeared during the test counts."""
    before, sessions_before = vm_processes(), vm_sessions()
    yield
    assert vm_processes() - before == set(), "VM processes left behind"
    alive = subprocess.run(["pgrep", "-af", "ccarena-vm-[0-9a-f]{8}"], capture_output=True,
                           text=True).stdout
    left = {p for p in vm_sessions() - sessions_before
            if p.exists() and f"ccarena-vm-{p.name}" not in alive}   # another VM's: alive
    assert not left, sorted(left)


RATE, BASE = 2e6, 0.060      # a TCG guest carries this (docs/vm.md)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One VM, one kernel-backend run (htb rate, netem delay and 0.5 % loss): the BPF
    pack's cca_reno alone, traced per ACK; -> (ResultsDir, the VM's wall time)."""
    before = vm_processes()
    study = loads_study(dumbbell(
        'rate = "2mbit"\nrtt = "60ms"\nbuffer = "10p"\nloss = "0.5%"', flows=1, cc="reno",
        ping="50ms", duration="10s", warmup="1s", backend="kernel", name="vm-smoke",
        sweep='"flow.bulk0.cc" = ["cca_reno"]')
        .replace("seed = 11\n", 'seed = 11\nsample_interval = "50ms"\n')   # as tests/vm
        + '[[probe]]\nkind = "tcp_probe"\nhosts = ["s1"]\n')
    t = time.monotonic()
    res = vm.run_plan(study, results_base=tmp_path_factory.mktemp("vm-smoke"),
                       progress=False, reruns=0)
    wall = time.monotonic() - t
    assert vm_processes() - before == set(), "VM processes left behind"
    return res, wall


def test_a_kernel_backend_run_in_the_vm_obeys_the_physics(smoke):
    res, wall = smoke
    print(f"VM wall time {wall:.0f} s")
    env = json.loads((res.path / "environment.json").read_text())
    rec = env["vm"]
    assert rec["in_vm"] is True and rec["accel"] in ("kvm", "tcg")
    assert env["kernel"] == rec["guest_kernel"] == vm.locate().release
    assert rec["boot_s"] > 0
    got = runs(res)
    assert len(got) == 1, [m["label"] for m, _ in got]
    for meta, d in got:
        assert meta["backend"] == "kernel"
        assert not failed_parts(meta), failed_parts(meta)
        # netem's delay is a floor for every round trip (ping prints 0.1 ms steps: 50 us)
        rtt = run_table(d, "ping")["rtt_s"].dropna()
        assert len(rtt) >= 20, len(rtt)
        assert rtt.min() >= BASE - 50e-6, f"ping {rtt.min() * 1e3:.3f} ms < base RTT 60 ms"
        srtt = run_table(d, "tcpinfo")
        srtt = srtt[srtt["srtt_us"] > 0]["srtt_us"]
        assert srtt.min() >= BASE * 1e6 * 0.99, f"TCP's srtt {srtt.min()} us < base RTT"
        # the htb shaper's rate is a ceiling: payload below the frame rate (1448 of each
        # 1514 bytes), with one frame of slack at each edge of the goodput's window
        f = res.flows
        row = f[(f["conn"] == -1) & (f["run_id"] == meta["run_id"])].iloc[0]
        assert 0 < row["goodput_bps"] <= RATE * (1 + 2 * FRAME * 8 / (RATE * row["window_s"])), \
            row["goodput_bps"]


def test_bpf_reno_halves_and_grows_its_window_in_the_reference_kernel(smoke):
    """The BPF pack in the reference kernel's struct_ops: cca_reno sets ssthresh =
    max(cwnd/2, 2) at every loss (RFC 5681 eq. 4; random loss guarantees losses whatever
    the guest's speed): every reduction's ssthresh / cwnd-before lies within 0.4-0.6
    (halving, rounded down to whole segments from windows of 8 and more), the median
    near 0.5; and it grows its window by one segment per RTT in congestion avoidance
    (RFC 5681 §3.1; the median over its epochs of 0.5 s and more within 0.7-1.3, per
    *measured* RTT, so a slow guest does not move it — a BPF pack that read the wrong
    bit for is_cwnd_limited on this kernel grew by 0); and it delivered. Linux's own reno
    beside it is the replay's comparison, call by call (crates/cc-harness/tests/
    replay.rs); whole runs against the kernel's modules are make verify's
    (verify/bpf_vs_native.py)."""
    from ccsig import ca_epochs, per_rtt_increase, reductions, sender_trace
    res, _ = smoke
    got = {}
    for meta, d in runs(res):
        meta["_dir"] = d
        want = meta["cell_params"]["flow.bulk0.cc"]
        assert meta["flows"][0]["cc_kernel"] == want, meta["flows"][0]
        tr = sender_trace(meta)
        red = reductions(tr)
        assert len(red) >= 1, f"{want}: no reduction seen {meta['invalid_reasons']}"
        assert red["ratio"].between(0.4, 0.6).all(), (want, red[["w", "ssthresh"]].to_dict())
        growth = [per_rtt_increase(e) for e in ca_epochs(tr, t_from=1.0, min_s=0.5)]
        assert growth, f"{want}: no congestion-avoidance epoch of 0.5 s"
        assert 0.7 <= np.median(growth) <= 1.3, f"{want}: growth per RTT {np.round(growth, 2)}"
        got[want] = red["ratio"].median()
        f = res.flows
        assert f[(f["conn"] == -1) & (f["run_id"] == meta["run_id"])].iloc[0]["bytes_rx"] > 0
    assert set(got) == {"cca_reno"}, got
    assert all(abs(v - 0.5) <= 0.05 for v in got.values()), got


def test_a_vm_stopped_mid_run_leaves_no_process_and_no_half_run(tmp_path, no_leaks,
                                                                no_vm_left):
    """The VM is stopped (timeout) while a 60 s study runs, or still boots: either way no
    process is left, and the results hold completed runs only, or nothing."""
    study = loads_study(dumbbell('rate = "10mbit"\nrtt = "20ms"\nbuffer = "50p"', flows=1,
                                 duration="60s", warmup="1s", backend="kernel",
                                 name="vm-stopped"))
    with pytest.raises(vm.VmError, match="did not end within"):
        vm.run_plan(study, results_base=tmp_path, progress=False, reruns=0,
                     config=vm.config_from_env(timeout_s=30))
    for p in tmp_path.iterdir():
        runs_dir = p / "runs"
        assert runs_dir.is_dir(), f"{p}: a results directory without runs/"
        for r in runs_dir.iterdir():
            assert (r / "meta.json").exists(), f"{r}: a half-written run was left"
