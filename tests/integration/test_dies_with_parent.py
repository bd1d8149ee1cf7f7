"""Nothing outlives its run: when ccarena itself is killed (SIGKILL, no teardown
possible), the kernel kills the link emulator, the flow engines and the probes it started
(parent-death signal, testbed/proc.py); `ccarena cleanup` then removes the network."""
import os
import subprocess
import sys
import time

import pytest

from ccarena.testbed import netns

from conftest import ccarena_cli, ccarena_namespaces, foreign_runs

pytestmark = pytest.mark.root
GONE_WITHIN_S = 5.0


def pids_in(namespaces: set[str]) -> dict[int, str]:
    """pid -> command line of every process whose network namespace is one of these."""
    inodes = set()
    for n in namespaces:
        try:
            inodes.add(netns.inode(n))
        except OSError:
            pass
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat(f"/proc/{d}/ns/net").st_ino in inodes:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    out[int(d)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:       # gone meanwhile, or a zombie (no namespace left)
            pass
    return out


def of_results(base) -> dict[int, str]:
    """pid -> command line of every process whose command line names `base`."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(base) in cmd and "ccarena-" in cmd:
                out[int(d)] = cmd
    return out


def test_a_killed_ccarena_takes_its_link_engines_and_probes_with_it(tmp_path, no_leaks):
    before = ccarena_namespaces()
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "orphans"\nduration = "20s"\nreruns = 0\n'
                     '[bottleneck]\nrate = "20mbit"\ndelay = "5ms"\nbackend = "user"\n'
                     '[[flow]]\nname = "bulk"\nfrom = "s1"\nto = "r1"\n'
                     '[[probe]]\nkind = "ping"\nfrom = "s1"\nto = "r1"\ninterval = "100ms"\n')
    res = tmp_path / "res"
    p = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(study), "--quiet",
                          "--results", str(res)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        # wait until the run's link, both engines and ping are running
        deadline, mine, seen = time.monotonic() + 90, set(), {}
        while time.monotonic() < deadline:
            mine = ccarena_namespaces() - before - foreign_runs()[0]
            seen = {**of_results(res), **pids_in(mine)}
            cmds = list(seen.values())
            if (any("ccarena-link" in c for c in cmds)
                    and sum("ccarena-flow" in c for c in cmds) == 2
                    and any(c.startswith("ping ") for c in cmds)):
                break
            assert p.poll() is None, "ccarena ended before its run was under way"
            time.sleep(0.1)
        else:
            pytest.fail(f"the run's processes did not all start: {seen}")
    finally:
        p.kill()            # SIGKILL: ccarena can tear nothing down
        p.wait()
    t = time.monotonic()
    left = seen
    while time.monotonic() - t < GONE_WITHIN_S:
        left = {**of_results(res), **pids_in(mine)}
        if not left:
            break
        time.sleep(0.05)
    assert left == {}, f"still running {time.monotonic() - t:.1f} s after ccarena died: {left}"
    # the network is left for the backstop
    assert mine and all(netns.exists(n) for n in mine)
    r = ccarena_cli("cleanup")
    assert ccarena_namespaces() - before - foreign_runs()[0] == set(), r.stdout
