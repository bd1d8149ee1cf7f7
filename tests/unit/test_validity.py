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


def test_late_releases_above_the_limit_flag_the_run():
    fwd = 100_000
    under = {"forwarded": fwd, "late_packets": int(fwd * validity.LATE_MAX) - 1}
    over = {"forwarded": fwd, "late_packets": int(fwd * validity.LATE_MAX) + 1}
    assert validity.check_link(under) == []
    assert any("late" in r for r in validity.check_link(over))


def test_cpu_steal_above_the_limit_flags_the_run():
    assert validity.check_cpu({"steal_frac": validity.STEAL_MAX / 2}) == []
    assert validity.check_cpu({"steal_frac": validity.STEAL_MAX * 2})
