"""ccarena-flow's goodput agrees with iperf3's on the same path within 5 %.

Both measure one cubic flow through the same 20 Mbit/s htb bottleneck of one testbed, one
after the other; a rate the CPU carries easily, so both should sit at the link rate."""
import json
import subprocess

import pytest

from ccarena.testbed import netns
from ccarena.measure import records
from ccarena.testbed import kernel_link
from ccarena.testbed.build import Testbed
from ccarena.testbed.topology import plan_dumbbell
from ccarena.workload.engine import Engines, host_configs

from helpers import bulk_study

pytestmark = pytest.mark.root
SECONDS = 6
WARMUP = 1.0


def iperf3_goodput(tb, seconds: int) -> float:
    srv = subprocess.Popen(netns.exec_argv(tb.topo.ns("r1"), ["iperf3", "-s", "-1", "-p",
                                                              "5201"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import time
        time.sleep(0.5)
        out = subprocess.run(netns.exec_argv(tb.topo.ns("s1"), [
            "iperf3", "-c", tb.topo.host_ip["r1"], "-p", "5201", "-t", str(seconds),
            "-O", str(int(WARMUP)), "-C", "cubic", "-J"]), capture_output=True, text=True,
            timeout=seconds + 30)
        rep = json.loads(out.stdout)
        return rep["end"]["sum_received"]["bits_per_second"]
    finally:
        srv.kill()
        srv.wait()


def engine_goodput(tb, study, tmp_path, seconds: int) -> float:
    raw = tmp_path / "raw"
    eng = Engines(tb.topo, host_configs(study, tb.topo, raw, {}, 1), raw)
    try:
        eng.start()
        t0 = eng.go(0.1)
        rcs = eng.wait(seconds + 20)
        assert all(rc == 0 for rc in rcs.values()), eng.failures(rcs)
    finally:
        eng.stop()
    rx = records.read_bin(raw / "r1" / "rx.bin")
    t = (rx["t_ns"].astype("int64") - t0) / 1e9
    a = rx[t <= WARMUP]["bytes"].max()
    last = rx[t <= seconds]
    b, tb_ = last["bytes"].max(), t[last.index].max()
    return (b - a) * 8 / (tb_ - WARMUP)


def test_flow_engine_agrees_with_iperf3(tmp_path, no_leaks):
    study = bulk_study(rate="20mbit", buffer="100p", cc="cubic", duration=f"{SECONDS}s",
                       warmup="1s", backend="kernel")
    topo = plan_dumbbell("c0ffee", 1, "kernel")
    with Testbed(topo, study) as tb:
        kernel_link.apply(topo, study)
        ours = engine_goodput(tb, study, tmp_path, SECONDS)
        theirs = iperf3_goodput(tb, SECONDS)
    assert ours <= 20e6 and theirs <= 20e6 * 1.01
    assert abs(ours - theirs) / theirs <= 0.05, (ours, theirs)
