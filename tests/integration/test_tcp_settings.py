"""A run records every effective TCP setting of every host, and a pinned initial window
reaches the hosts' routes and the connections (docs/hosts.md, study/tcp_reference.py)."""
import pytest

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

pytestmark = pytest.mark.root


def study(tcp_extra: str) -> str:
    return f'''
[study]
name = "tcpset"
duration = "3s"
warmup = "1s"
seed = 5
[bottleneck]
rate = "20mbit"
rtt = "200ms"
buffer = "500p"
[tcp]
rmem = ["4KiB", "87380", "6MiB"]
{tcp_extra}
[[flow]]
name = "f"
from = "s1"
to = "r1"
'''


def run(tmp_path, tcp_extra: str):
    res = run_study(loads_study(study(tcp_extra)), results_base=tmp_path, progress=False)
    meta = res.run_meta(res.run_dirs()[0])
    tcp = res.run_tables(meta["run_id"])["tcpinfo"].sort_values("t_ns")
    return tcp, meta


def test_the_initial_window_is_the_kernels_or_the_pinned_one(tmp_path, no_leaks):
    # the sender's first samples fall in its first round trip (200 ms; samples every 10 ms)
    tcp, meta = run(tmp_path / "kernel", "")
    assert int(tcp["cwnd"].iloc[0]) == 10                 # TCP_INIT_CWND
    assert meta["host_state"]["sysctls"]["s1"]["route initcwnd"] == "10"
    tcp, meta = run(tmp_path / "pinned", "initcwnd = 4")
    assert int(tcp["cwnd"].iloc[0]) == 4
    assert any("initcwnd 4" in r for r in meta["host_state"]["routes"]["s1"])
    assert meta["host_state"]["sysctls"]["r1"]["route initcwnd"] == "4"


def test_every_tcp_setting_of_every_host_is_recorded(tmp_path, no_leaks):
    _, meta = run(tmp_path, "")
    for host in ("s1", "r1"):
        rec = meta["host_state"]["sysctls"][host]
        tcp_keys = [k for k in rec if k.startswith("net.ipv4.tcp_")]
        # every tcp_* this kernel has (the reference kernel has 86), as the host saw it
        assert len(tcp_keys) > 60, sorted(rec)
        assert rec["net.ipv4.tcp_rmem"] == "4096 87380 6291456"      # pinned
        assert rec["net.ipv4.tcp_no_metrics_save"] == "1"            # ccarena's default
        assert "net.core.rmem_max" in rec and "net.ipv4.tcp_fastopen_key" not in rec
