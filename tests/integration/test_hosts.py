"""Host attributes: CPU and memory limits through cgroups change what a host can do and are
recorded; limits the machine cannot give are refused before anything is built."""
import os
import secrets
import signal
import subprocess
import time

import pytest
from conftest import ccarena_cgroups

from ccarena.errors import PreflightError
from ccarena.run.study import run_study
from ccarena.study.load import loads_study

pytestmark = pytest.mark.root

STUDY = '''
[study]
name = "cpu"
duration = "5s"
warmup = "1s"
[bottleneck]
backend = "kernel"
[testbed]
offloads = false
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
'''


def goodput(tmp_path, extra: str) -> tuple[float, dict]:
    res = run_study(loads_study(STUDY + extra), results_base=tmp_path, progress=False)
    meta = res.run_meta(res.run_dirs()[0])
    return res.flows.query("conn == -1")["goodput_bps"].iloc[0], meta


def test_cpu_limit_makes_a_sender_too_slow_for_a_fast_link(tmp_path, no_leaks):
    free, _ = goodput(tmp_path / "a", "")
    limited, meta = goodput(tmp_path / "b", '[hosts.s1]\ncpus = 0.02\nmemory = "256MiB"\n')
    # 2 % of a core cannot copy data as fast as an unlimited sender on an unlimited path
    assert limited < 0.5 * free, (limited, free)
    # its engine misses sampling ticks at 2 % of a core: the study's doing, not the
    # machine's noise (nothing to re-run for)
    assert not [r for r in meta["noise_reasons"] if "engine on s1" in r], meta["noise_reasons"]
    applied = meta["host_limits"]["s1"]
    assert applied.get("cpu.cfs_quota_us", applied.get("cpu.max", "")).split()[0] == "2000"
    mem = applied.get("memory.limit_in_bytes") or applied.get("memory.max")
    assert int(mem) == 256 * 2**20
    # nothing of the run's cgroups is left (no_leaks checks every hierarchy)
    assert not [d for d in ccarena_cgroups() if meta["run_id"] in d]


def test_cpu_limit_above_the_machine_is_refused(tmp_path, no_leaks):
    n = os.cpu_count()
    with pytest.raises(PreflightError, match=rf"hosts.s1.cpus: {n + 1} CPUs is above this "
                                             rf"machine's {n}"):
        run_study(loads_study(STUDY + f"[hosts.s1]\ncpus = {n + 1}\n"),
                  results_base=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())


def test_teardown_kills_what_is_left_in_a_throttled_group_and_removes_it(no_leaks):
    """A process killed at 1 % of a core can take seconds to exit; teardown lifts the quota,
    kills what is still in the group (only the run's processes join it) and removes it."""
    from ccarena.testbed import cgroups
    from ccarena.testbed import leftovers as registry
    rid = secrets.token_hex(3)
    registry.register(rid, [])       # a live run's: other sessions' leak checks skip it
    cg = cgroups.create(rid, "s1", cgroups.HostLimits(cpus=0.01, memory=64 * 2**20))
    p = None
    try:
        # busy, deaf to SIGTERM, throttled
        p = subprocess.Popen(["sh", "-c", "trap '' TERM; while :; do :; done"],
                             preexec_fn=cg.add_self)
        deadline = time.monotonic() + 10
        while p.pid not in cg.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p.pid in cg.pids()
        left = cg.remove(timeout_s=10)
        assert left == []
        assert p.wait(timeout=10) == -signal.SIGKILL      # killed by remove()
        assert [d for d in cg.dirs if os.path.isdir(d)] == []
        assert len(cg.dirs) == (2 if cgroups.version() == "v1" else 1)
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        cg.remove(timeout_s=5)
        registry.unregister(rid)
