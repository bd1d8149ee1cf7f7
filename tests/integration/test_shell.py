"""`ccarena shell`: one cell's testbed with a command in a host, torn down afterwards."""
import signal
import subprocess
import sys
import time

import pytest

from conftest import ccarena_cli, ccarena_namespaces

pytestmark = pytest.mark.root

STUDY = """
[study]
name = "shell"
duration = "5s"
[bottleneck]
rate = "20mbit"
{delay}
buffer = "50p"
{backend}
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "reno"
[sweep]
"bottleneck.buffer" = ["20p", "50p"]
"""


def study(tmp_path, backend="", delay=True):
    """The user-space link emulates the delay; the kernel backend needs netem for it,
    which not every kernel has, so its study has none."""
    p = tmp_path / "s.toml"
    p.write_text(STUDY.format(backend=backend, delay='delay = "5ms"' if delay else ""))
    return p


@pytest.mark.parametrize("backend", ['backend = "user"', 'backend = "kernel"'])
def test_a_command_in_a_host_reaches_the_other_side_and_leaves_nothing(tmp_path, no_leaks,
                                                                       backend):
    delay = "user" in backend
    r = ccarena_cli("shell", study(tmp_path, backend, delay), "--cell", "1", "--host", "s1",
                    "--", "ping", "-c", "2", "-i", "0.2", "10.2.1.2", timeout=120)
    assert r.returncode == 0
    assert "2 received" in r.stdout
    if delay:   # the path is the study's: 5 ms one-way, so an RTT of 10 ms at least
        rtts = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines()
                if "time=" in x]
        assert rtts and min(rtts) >= 10.0
    # the hosts and their addresses were printed, with the cell's setup
    assert "10.1.1.2" in r.stderr and "10.2.1.2" in r.stderr
    assert "cell c001 (bottleneck.buffer=50p)" in r.stderr


def test_the_command_runs_with_the_flows_algorithm_and_its_status_is_returned(tmp_path,
                                                                               no_leaks):
    s = study(tmp_path, 'backend = "kernel"', delay=False)
    r = ccarena_cli("shell", s, "--host", "s1", "--", "sh", "-c",
                    "cat /proc/sys/net/ipv4/tcp_congestion_control; exit 3",
                    check=False, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stdout.strip() == "reno"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_a_closed_terminal_tears_the_testbed_down(tmp_path, sig, no_leaks):
    before = ccarena_namespaces()
    s = study(tmp_path, 'backend = "kernel"', delay=False)
    p = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "shell", str(s), "--host",
                          "r1", "--", "sleep", "60"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(ccarena_namespaces() - before) < 4:
        time.sleep(0.2)
    assert len(ccarena_namespaces() - before) >= 4, "the testbed was never built"
    time.sleep(0.5)
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode == 130, p.stderr.read()


def test_unknown_host_and_cell_are_one_clear_line(tmp_path):
    r = ccarena_cli("shell", study(tmp_path), "--host", "x9", "--", "true", check=False)
    assert r.returncode == 1 and "no host 'x9'" in r.stderr and "s1, r1" in r.stderr
    r = ccarena_cli("shell", study(tmp_path), "--cell", "7", "--", "true", check=False)
    assert r.returncode == 1 and "no cell '7'" in r.stderr and "0 to 1" in r.stderr
