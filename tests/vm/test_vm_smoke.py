"""The reference kernel boots and carries a kernel-backend run (netem delay, htb rate) whose
results land on the host like any run's; and a VM stopped mid-run leaves nothing running
and no half-written run. Needs `make vm` (make test installs it)."""
import json
import subprocess
import sys
from pathlib import Path

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


@pytest.fixture
def no_vm_left():
    before = vm_processes()
    yield
    assert vm_processes() - before == set(), "VM processes left behind"
    sessions = build_dir() / "vm" / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir()), list(sessions.iterdir())


def test_a_kernel_backend_run_in_the_vm_obeys_the_physics(tmp_path, no_leaks, no_vm_left):
    rate, base = 20e6, 0.020
    study = loads_study(dumbbell('rate = "20mbit"\nrtt = "20ms"\nbuffer = "50p"', flows=1,
                                 ping="50ms", duration="5s", warmup="1s", backend="kernel",
                                 name="vm-smoke"))
    res = vm.run_study(study, results_base=tmp_path, progress=False, reruns=0)
    # laid out as any run's, on the host
    assert res.path.parent == tmp_path
    env = json.loads((res.path / "environment.json").read_text())
    rec = env["vm"]
    assert rec["in_vm"] is True and rec["accel"] in ("kvm", "tcg")
    assert env["kernel"] == rec["guest_kernel"] == vm.locate().release
    assert rec["boot_s"] > 0
    (meta, d), = runs(res)
    assert meta["backend"] == "kernel"
    assert not failed_parts(meta), failed_parts(meta)
    # netem's delay is a floor for every round trip (ping prints 0.1 ms steps: 50 us)
    rtt = run_table(d, "ping")["rtt_s"].dropna()
    assert len(rtt) >= 20, len(rtt)
    assert rtt.min() >= base - 50e-6, f"ping {rtt.min() * 1e3:.3f} ms < base RTT 20 ms"
    srtt = run_table(d, "tcpinfo")
    srtt = srtt[srtt["srtt_us"] > 0]["srtt_us"]
    assert srtt.min() >= base * 1e6 * 0.99, f"TCP's srtt {srtt.min()} us < base RTT"
    # the htb shaper's rate is a ceiling: payload below the frame rate (1448 of each
    # 1514 bytes), with one frame of slack at each edge of the goodput's window
    f = res.flows
    row = f[(f["conn"] == -1) & (f["name"] == "bulk0")].iloc[0]
    assert 0 < row["goodput_bps"] <= rate * (1 + 2 * FRAME * 8 / (rate * row["window_s"])), \
        row["goodput_bps"]


def test_a_vm_stopped_mid_run_leaves_no_process_and_no_half_run(tmp_path, no_leaks,
                                                                no_vm_left):
    """The VM is stopped (timeout) while a 60 s study runs, or still boots: either way no
    process is left, and the results hold completed runs only, or nothing."""
    study = loads_study(dumbbell('rate = "10mbit"\nrtt = "20ms"\nbuffer = "50p"', flows=1,
                                 duration="60s", warmup="1s", backend="kernel",
                                 name="vm-stopped"))
    with pytest.raises(vm.VmError, match="did not end within"):
        vm.run_study(study, results_base=tmp_path, progress=False, reruns=0,
                     config=vm.config_from_env(timeout_s=60))
    for p in tmp_path.iterdir():
        runs_dir = p / "runs"
        assert runs_dir.is_dir(), f"{p}: a results directory without runs/"
        for r in runs_dir.iterdir():
            assert (r / "meta.json").exists(), f"{r}: a half-written run was left"
