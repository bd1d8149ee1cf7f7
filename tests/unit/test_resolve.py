"""study.resolve: every default decided once, and both link backends given the same queue."""
import math

import pytest

from ccarena.errors import SpecError
from ccarena.study.load import loads_study
from ccarena.study.resolve import (BASE_PORT, DEFAULT_CC, CodelParams, FqCodelParams,
                                   RedParams, StepParams)
from ccarena.testbed import kernel_link
from ccarena.testbed.topology import plan_dumbbell
from ccarena.testbed.user_link import _queue


def study(bottleneck: str, flows: str = "", hosts: str = ""):
    return loads_study(f"""
[study]
name = "r"
duration = "5s"
[bottleneck]
{bottleneck}
{hosts}
[[flow]]
name = "a"
from = "s1"
to = "r1"
{flows}
""")


def test_red_defaults_are_the_documented_ones():
    s = study('rate = "10mbit"\nbuffer = "300p"\nqueue = "red"')
    q = s.bottleneck.queue_params
    assert q == RedParams(unit="packets", min_th=30, max_th=90, max_p=0.1, weight=0.002)


def test_red_minimum_and_buffer_cap():
    q = study('rate = "10mbit"\nbuffer = "20p"\nqueue = "red"').bottleneck.queue_params
    assert (q.min_th, q.max_th) == (5, 15)
    q = study('rate = "10mbit"\nbuffer = "40p"\nqueue = "red"\naqm = { min = "15p" }'
              ).bottleneck.queue_params
    assert (q.min_th, q.max_th) == (15, 39)    # 3*min is above the buffer: buffer - 1


def test_red_thresholds_in_bytes_stay_bytes():
    q = study('rate = "10mbit"\nbuffer = "300p"\nqueue = "red"\naqm = { min = "30KB" }'
              ).bottleneck.queue_params
    assert q.unit == "bytes" and (q.min_th, q.max_th) == (30 * 1024, 90 * 1024)


def test_red_thresholds_out_of_order_name_the_key():
    with pytest.raises(SpecError, match=r"bottleneck\.aqm\.max: RED thresholds out of order"):
        study('rate = "10mbit"\nbuffer = "300p"\nqueue = "red"\n'
              'aqm = { min = "50p", max = "40p" }')


@pytest.mark.parametrize("buffer,aqm", [("300p", ""), ("100p", 'aqm = { min = "12p" }'),
                                        ("300p", 'aqm = { min = "30KB", max = "120KB" }')])
def test_both_backends_get_the_same_red_thresholds(buffer, aqm):
    """The kernel's red takes bytes; the user link counts in the unit written. Both must
    describe the same thresholds, and the kernel's Wlog the same weight (to a power of 2)."""
    s = study(f'rate = "10mbit"\nbuffer = "{buffer}"\nqueue = "red"\n{aqm}')
    topo = plan_dumbbell("abcdef", 1, "user")
    u = _queue(s.bottleneck, s, topo)
    frame = s.mtu + 14
    per = frame if u["unit"] == "packets" else 1
    line = kernel_link._aqm_leaf(s.bottleneck, s.mtu)
    tok = line.split()
    k = {tok[i]: tok[i + 1] for i in range(len(tok) - 1)}
    assert int(k["min"]) == u["min_th"] * per
    assert int(k["max"]) == u["max_th"] * per
    assert float(k["probability"]) == u["max_p"]
    assert int(k["limit"]) == s.bottleneck.buffer.bytes(s.mtu)
    assert "burst" in k
    assert 2.0 ** -kernel_link.red_wlog(u["weight"]) == pytest.approx(u["weight"], rel=0.5)


@pytest.mark.parametrize("wlog", [6, 9, 12])
def test_red_burst_gives_tcs_wlog(wlog):
    """tc picks the smallest w with burst + 1 - min/avpkt <= (1 - (1 - 2^-w)^burst) / 2^-w;
    the burst we pass must make that w the one we want."""
    avpkt, mn = 1514, 30 * 1514
    b = kernel_link.red_burst(mn, avpkt, wlog)
    a = b + 1 - mn / avpkt
    f = lambda w: (1 - (1 - 2.0 ** -w) ** b) / 2.0 ** -w  # noqa: E731
    assert a <= f(wlog) and a > f(wlog - 1)


def test_codel_and_fq_codel_defaults_and_kernel_line():
    s = study('rate = "10mbit"\nqueue = "codel"')
    assert s.bottleneck.queue_params == CodelParams(0.005, 0.1)
    s = study('rate = "10mbit"\nqueue = "fq_codel"\naqm = { target = "2ms", flows = 64 }')
    q = s.bottleneck.queue_params
    assert q == FqCodelParams(0.002, 0.1, 64, s.mtu + 14)
    line = kernel_link._aqm_leaf(s.bottleneck, s.mtu)
    assert "flows 64" in line and f"quantum {s.mtu + 14}" in line
    assert "target 2000us" in line and "interval 100000us" in line


def test_step_threshold_units():
    assert study('rate = "10mbit"\nqueue = "step"').bottleneck.queue_params == \
        StepParams("packets", 20)
    assert study('rate = "10mbit"\nqueue = "step"\naqm = { k = "30KB" }'
                 ).bottleneck.queue_params == StepParams("bytes", 30 * 1024)


def test_reverse_rate_and_receiver_cc_and_ports_are_resolved():
    s = study('rate = "10mbit"', flows='cc = "reno"',
              hosts='[hosts.r1]\ncc = "bbr"')
    assert s.bottleneck.reverse_rate_bps == 10_000_000
    f = s.flows[0]
    assert (f.cc, f.receiver_cc, f.port) == ("reno", "bbr", BASE_PORT)
    s = study('rate = "10mbit"\nreverse_rate = "1mbit"')
    assert s.bottleneck.reverse_rate_bps == 1_000_000
    assert s.flows[0].cc == DEFAULT_CC and s.flows[0].receiver_cc == DEFAULT_CC


def test_every_cell_is_resolved():
    s = loads_study("""
[study]
name = "r"
duration = "5s"
[bottleneck]
rate = "10mbit"
buffer = "100p"
queue = "red"
[[flow]]
name = "a"
from = "s1"
to = "r1"
[sweep]
"bottleneck.buffer" = ["50p", "200p"]
""")
    got = sorted(c.study.bottleneck.queue_params.min_th for c in s.cells)
    assert got == [5, 20]
    assert all(math.isclose(c.study.bottleneck.queue_params.weight, 0.002) for c in s.cells)
