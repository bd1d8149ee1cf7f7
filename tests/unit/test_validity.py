"""Run validity from the tools' self-accounting (ccarena.validity)."""
from ccarena import validity


def test_link_losses_in_its_own_paths_flag_the_run():
    ok = {"forwarded": 100_000, "rx_ring_drops": 0, "tx_errors": 0, "late_packets": 10}
    assert validity.check_link(ok) == []
    rx = dict(ok, rx_ring_drops=1000)
    assert any("receive path" in r for r in validity.check_link(rx))
    tx = dict(ok, tx_errors=1000)
    assert any("send path" in r for r in validity.check_link(tx))
    # below the threshold (0.1 % of forwarded packets): not flagged
    assert validity.check_link(dict(ok, tx_errors=50, rx_ring_drops=50)) == []


def test_losses_on_the_way_into_the_link_flag_the_run():
    """Frames the routers' ports could not hand to the emulator (counted by the
    orchestrator from their veth TX drops) are the emulator's losses too."""
    ok = {"forwarded": 100_000, "rx_ring_drops": 0, "tx_errors": 0}
    assert validity.check_link(ok, {"w2e": 0, "e2w": 0}) == []
    assert validity.check_link(ok, {"w2e": 50, "e2w": 40}) == []       # below 0.1 %
    r = validity.check_link(ok, {"w2e": 216, "e2w": 0})
    assert len(r) == 1 and "on the way into it" in r[0] and "w2e 216" in r[0], r


def test_late_releases_above_the_limit_flag_the_run():
    fwd = 100_000
    under = {"forwarded": fwd, "late_packets": int(fwd * validity.LATE_MAX) - 1}
    over = {"forwarded": fwd, "late_packets": int(fwd * validity.LATE_MAX) + 1}
    assert validity.check_link(under) == []
    assert any("late" in r for r in validity.check_link(over))


def test_cpu_steal_above_the_limit_flags_the_run():
    assert validity.check_cpu({"steal_frac": validity.STEAL_MAX / 2}) == []
    assert validity.check_cpu({"steal_frac": validity.STEAL_MAX * 2})


def _qdisc_stats(send_frac, backlog_bytes, rate=100e6, n=300, dt=0.01):
    """A sampler table: every dt the queue holds backlog_bytes and sent send_frac of rate."""
    import pandas as pd
    t = [int(i * dt * 1e9) for i in range(n)]
    return pd.DataFrame({"t_ns": t, "dir": [0] * n, "qlen_bytes": [backlog_bytes] * n,
                         "bytes_out": [0] + [int(send_frac * rate * dt / 8)] * (n - 1)})


def _judge(stats, rates):
    return validity.check_shaper(validity.shaper_delivery(stats, rates))


def test_a_shaper_at_its_rate_passes_and_one_behind_it_is_flagged():
    short = 50 * 1514          # 6 ms at 100 Mbit/s: less than one 10 ms interval
    deep = 1000 * 1514         # 121 ms: the link cannot idle within an interval
    assert _judge(_qdisc_stats(1.0, deep), {0: 100e6}) == []
    d = validity.shaper_delivery(_qdisc_stats(0.83, deep), {0: 100e6})["w2e"]
    assert abs(d["frac"] - 0.83) < 0.005 and abs(d["busy_s"] - 2.99) < 0.01
    msg = _judge(_qdisc_stats(0.83, deep), {0: 100e6})
    assert len(msg) == 1 and "w2e: sent 83% of its rate" in msg[0]
    # a queue that could have run dry within an interval is not judged (the sender, not
    # the shaper, may have left the link idle)
    assert _judge(_qdisc_stats(0.5, short), {0: 100e6}) == []
    # an unlimited direction and too short a backlogged time are not judged
    assert _judge(_qdisc_stats(0.5, deep), {0: None}) == []
    assert _judge(_qdisc_stats(0.5, deep, n=50), {0: 100e6}) == []
