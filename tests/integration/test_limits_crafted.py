"""What limited a flow, on crafted paths where one limit is built in (docs/metrics.md, "What
limited a flow"): a small send buffer on a long path, a small receive buffer at the
receiver, an application that writes slowly, and a shallow bottleneck buffer that drops.
Each run is short and at rates the machine carries easily; each asserts the label and
the physics the built-in limit implies."""
import pytest

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

pytestmark = pytest.mark.root

RATE_BPS = 20e6
RTT_S = 0.1
SMALL = 64 * 1024          # a receive buffer far below the path's 250 kB BDP
TINY = 32 * 1024           # a send buffer far below it


def study(name: str, extra: str, *, rtt="100ms", buffer="5000p", kind="bulk") -> str:
    # a bottleneck buffer far above the BDP: no loss, unless the case asks for it
    return f'''
[study]
name = "{name}"
duration = "6s"
warmup = "2s"
seed = 3
[bottleneck]
rate = "20mbit"
rtt = "{rtt}"
buffer = "{buffer}"
[tcp]
rmem = ["4KiB", "128KiB", "6MiB"]
wmem = ["4KiB", "16KiB", "4MiB"]
[[flow]]
name = "f"
from = "s1"
to = "r1"
kind = "{kind}"
cc = "cubic"
''' + extra


def flow_row(tmp_path, text: str):
    res = run_study(loads_study(text), results_base=tmp_path, progress=False)
    runs = res.runs
    assert bool(runs["valid"].iloc[0]), runs["invalid_reasons"].iloc[0]
    f = res.flows.query("conn == -1").iloc[0]
    why = (f"{f.limited_by}: {f.limit_evidence}; shares cwnd {f.cwnd_limited_frac:.2f} "
           f"rwnd {f.rwnd_limited_frac:.2f} sndbuf {f.sndbuf_limited_frac:.2f} pacing "
           f"{f.pacing_limited_frac:.2f} app {f.app_limited_frac:.2f}; kernel "
           f"{f.kernel_limited_by}")
    print(f"{text.split(chr(10))[2]}: {f.goodput_bps / 1e6:.2f} Mbit/s; {why}")
    return f, runs.iloc[0], why


def test_a_small_send_buffer_on_a_long_path_is_sndbuf(tmp_path, no_leaks):
    f, _, why = flow_row(tmp_path, study("sndbuf", f'''
[hosts.s1]
sysctl = {{ "net.ipv4.tcp_wmem" = "4096 16384 {TINY}" }}
'''))
    assert f.limited_by == "sndbuf", why
    # autotuning stops at tcp_wmem[2]
    assert 16384 < f.limit_sndbuf_bytes <= TINY, why
    # the buffer, not the link, holds the rate: far below it, with no loss to blame.
    # (Not below sndbuf / RTT: Linux checks the buffer only when a write needs a new
    # packet buffer, so what is in flight can exceed it; docs/metrics.md.)
    assert f.goodput_bps < 0.8 * RATE_BPS, why


def test_a_small_receive_buffer_at_the_receiver_is_rwnd(tmp_path, no_leaks):
    f, _, why = flow_row(tmp_path, study("rwnd", f'''
[hosts.r1]
sysctl = {{ "net.ipv4.tcp_rmem" = "4096 16384 {SMALL}" }}
'''))
    assert f.limited_by == "rwnd", why
    # the window the receiver advertised never exceeds its buffer
    assert 0 < f.limit_snd_wnd_bytes <= SMALL, why
    assert f.goodput_bps <= 8 * SMALL / RTT_S * 1.05, why


def test_a_paced_application_is_app(tmp_path, no_leaks):
    # 1448 B every 5 ms: 2.3 Mbit/s offered to a 20 Mbit/s path
    f, _, why = flow_row(tmp_path, study("app", '''
write = "1448B"
gap = "5ms"
''', rtt="40ms", kind="paced"))
    assert f.limited_by == "app", why
    assert f.goodput_bps <= 1448 * 8 / 0.005 * 1.05, why


def test_a_shallow_buffer_with_losses_is_cwnd(tmp_path, no_leaks):
    # 20 Mbit/s x 40 ms = 67 packets in flight fill the path; a 10-packet buffer drops
    f, run, why = flow_row(tmp_path, study("cwnd", "", rtt="40ms", buffer="10p"))
    assert f.limited_by == "cwnd", why
    assert run["link_drops"] > 0 and f.retrans_segs > 0, why
    assert f.goodput_bps <= RATE_BPS, why
