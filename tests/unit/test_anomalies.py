"""metrics.anomalies on hand-made tables: each kind is found when its mechanism is there and
not when it is not (a normal bulk flow, a download cut by the run's end)."""
import numpy as np
import pandas as pd

from ccarena.metrics.anomalies import anomalies, longest_gap, longest_stretch

T0 = 10**12


def meta(flows, **kw):
    return {"t0_ns": T0, "duration_s": 30.0, "base_rtt_s": 0.1, "flows": flows,
            "engines": {"s1": {}, "r1": {}}, **kw}


def bulk(name="bulk", fid=0, **kw):
    return {"flow": fid, "name": name, "kind": "bulk", "from": "s1", "to": "r1",
            "start_s": 0.0, "stop_s": 30.0, **kw}


def rx(times, fid=0, until=30.0):
    """Cumulative bytes sampled every 10 ms up to `until`, growing at the given times
    (the receiver's records: a sample each interval, delivered or not)."""
    got = np.sort(np.asarray(times, float))
    t = np.round(np.arange(0.01, until + 1e-9, 0.01), 6)
    cum = np.searchsorted(got, t, side="right") * 1448
    return pd.DataFrame({"t_ns": (T0 + t * 1e9).astype("int64"), "t": t, "flow": fid,
                         "conn": 0, "bytes": cum})


def kinds(found):
    return sorted(a["kind"] for a in found)


def test_gaps_and_stretches():
    assert longest_gap(np.array([1.0, 2.0, 7.0]), 0.0, 10.0) == (5.0, 2.0)
    assert longest_gap(np.array([]), 0.0, 3.0) == (3.0, 0.0)
    t = np.arange(10.0)
    assert longest_stretch(t, np.array([0, 1, 1, 1, 0, 1, 1, 0, 0, 0], bool)) == (3.0, 1.0)


def test_a_normal_bulk_flow_has_none():
    assert anomalies({"rx": rx(np.arange(0.05, 30, 0.01))}, meta([bulk()])) == []


def test_a_flow_locked_out_is_stalled():
    """The RED lock-out: data until 4 s, then one retransmission per RTO, all dropped."""
    found = anomalies({"rx": rx(np.arange(0.05, 4.0, 0.01))}, meta([bulk()]))
    assert kinds(found) == ["stalled"]
    assert found[0]["value"] >= 25.9 and "from 4.0 s" in found[0]["what"]


def test_the_stall_threshold_follows_the_rtt():
    gap = np.concatenate([np.arange(0.05, 10, 0.01), np.arange(13.0, 30, 0.01)])
    assert kinds(anomalies({"rx": rx(gap)}, meta([bulk()]))) == ["stalled"]       # 3 s > 2 s
    long_rtt = meta([bulk()], base_rtt_s=0.2)                                     # 20 RTT = 4 s
    assert anomalies({"rx": rx(gap)}, long_rtt) == []


def test_no_delivery_and_connect_failure():
    conns = pd.DataFrame([{"flow": 0, "conn": 0, "side": "send", "role": "client",
                           "connected_ns": np.nan, "end_ns": T0 + 21_000_000_000,
                           "error": "timed out", "bytes": 0, "last_byte_ns": np.nan}])
    found = anomalies({"rx": rx([]), "conns": conns}, meta([bulk()]))
    assert kinds(found) == ["connect_failed", "no_delivery"]
    assert "timed out at 21.00 s" in found[0]["what"]


def test_stuck_in_loss_recovery():
    t = np.arange(0.0, 30.0, 0.01)
    state = np.where((t > 5) & (t < 9), 4, 0)
    tcp = pd.DataFrame({"t_ns": (T0 + t * 1e9).astype("int64"), "t": t, "flow": 0,
                        "conn": 0, "host": "s1", "ca_state": state})
    found = anomalies({"rx": rx(np.arange(0.05, 30, 0.01)), "tcpinfo": tcp}, meta([bulk()]))
    assert kinds(found) == ["stuck_in_recovery"] and found[0]["value"] >= 3.9
    short = np.where((t > 5) & (t < 6), 3, 0)       # one second of recovery: ordinary
    assert anomalies({"rx": rx(np.arange(0.05, 30, 0.01)),
                      "tcpinfo": tcp.assign(ca_state=short)}, meta([bulk()])) == []


def test_downloads_that_never_complete_but_not_one_cut_by_the_end():
    dl = {"flow": 0, "name": "web", "kind": "download", "from": "r1", "to": "s1",
          "start_s": 0.0, "stop_s": 30.0, "size": 1000}
    conns = pd.DataFrame([
        {"flow": 0, "conn": 0, "side": "recv", "connect_start_ns": T0 + 1e9, "bytes": 1000},
        {"flow": 0, "conn": 1, "side": "recv", "connect_start_ns": T0 + 5e9, "bytes": 10},
        {"flow": 0, "conn": 2, "side": "recv", "connect_start_ns": T0 + 29.5e9, "bytes": 10}])
    found = anomalies({"rx": rx([1.0, 5.0]), "conns": conns}, meta([dl]))
    assert kinds(found) == ["download_incomplete"] and found[0]["value"] == 1


def test_the_emulator_losing_packets_is_flagged():
    m = meta([bulk()], link={"rx_ring_drops": 3, "tx_errors": 0},
             link_ingress={"w2e": {"dropped": 2}})
    found = anomalies({"rx": rx(np.arange(0.05, 30, 0.01))}, m)
    assert kinds(found) == ["emulator_drops"] and found[0]["value"] == 5


def test_a_flow_that_never_connected_has_goodput_zero_not_nan():
    from ccarena.analysis.synthetic import synthetic_run
    from ccarena.metrics.run import run_metrics
    tables, m = synthetic_run(n_flows=1, duration_s=5.0)
    m["engines"] = {"s1": {}, "r1": {}}
    tables["rx"] = tables["rx"].iloc[0:0]
    flows, run = run_metrics(tables, m)
    top = flows[flows["conn"] == -1]
    assert (top["goodput_bps"] == 0).all()
    del m["engines"]                        # no engine record at all: unknown, not zero
    flows, _ = run_metrics(tables, m)
    assert flows[flows["conn"] == -1]["goodput_bps"].isna().all()


def test_a_download_still_receiving_at_the_end_is_not_incomplete():
    dl = {"flow": 0, "name": "web", "kind": "download", "from": "r1", "to": "s1",
          "start_s": 0.0, "stop_s": 30.0, "size": 10 * 2**20}
    conns = pd.DataFrame([{"flow": 0, "conn": 0, "side": "recv", "connect_start_ns": T0 + 1e9,
                           "last_byte_ns": T0 + 29.9e9, "end_ns": T0 + 30e9,
                           "bytes": 9 * 2**20}])
    assert anomalies({"rx": rx(np.arange(1, 30, 0.01)), "conns": conns}, meta([dl])) == []


def test_one_locked_out_connection_of_a_parallel_flow_is_found():
    par = bulk(kind="parallel")
    par["kind"] = "parallel"
    busy = rx(np.arange(0.05, 30, 0.01))
    locked = rx(np.arange(0.05, 4.0, 0.01)).assign(conn=1)
    found = anomalies({"rx": pd.concat([busy, locked])}, meta([par]))
    assert kinds(found) == ["stalled"] and "connection 1" in found[0]["what"]


def test_recovery_that_keeps_delivering_is_not_stuck():
    t = np.arange(0.0, 30.0, 0.01)
    tcp = pd.DataFrame({"t_ns": (T0 + t * 1e9).astype("int64"), "t": t, "flow": 0,
                        "conn": 0, "host": "s1", "ca_state": 3,
                        "delivered": np.arange(t.size) * 10})
    assert anomalies({"rx": rx(np.arange(0.05, 30, 0.01)), "tcpinfo": tcp},
                     meta([bulk()])) == []


def _recovery_crawl(rate_segs_per_s, mss=1000):
    """A bulk sender in Recovery from 8 s to the end, delivering `rate_segs_per_s`."""
    t = np.arange(0.0, 30.0, 0.01)
    delivered = np.where(t < 8, t * 1000, 8000 + (t - 8) * rate_segs_per_s).astype(int)
    return pd.DataFrame({"t_ns": (T0 + t * 1e9).astype("int64"), "t": t, "flow": 0,
                         "conn": 0, "host": "s1", "ca_state": np.where(t >= 8, 3, 0),
                         "delivered": delivered, "mss": mss})


def test_a_recovery_that_crawls_below_the_fair_share_is_stuck():
    """Without SACK, a burst of losses is repaired one hole per round trip and the partial
    ACKs keep the RTO from firing: a flow can stay in Recovery for tens of seconds
    delivering a trickle. 20 segments/s of 1000 bytes = 0.16 Mbit/s, under a tenth of the
    10 Mbit/s a lone flow's fair share is."""
    m = meta([bulk()], bottleneck={"rate_bps": 10e6})
    found = anomalies({"rx": rx(np.arange(0.05, 30, 0.01)), "tcpinfo": _recovery_crawl(20)},
                      m)
    assert kinds(found) == ["stuck_in_recovery"]
    assert 21.5 < found[0]["value"] <= 22.0
    assert "0.16 Mbit/s" in found[0]["what"] and "from 8.0 s" in found[0]["what"]
    # at a fair share's worth (1250 segments/s = 10 Mbit/s) it is recovering, not stuck
    assert anomalies({"rx": rx(np.arange(0.05, 30, 0.01)),
                      "tcpinfo": _recovery_crawl(1250)}, m) == []
    # the limit is a tenth of the share: 10 connections share 10 Mbit/s, so 0.16 Mbit/s
    # is 16 % of one's share and no crawl
    ten = meta([bulk(conns=10, kind="parallel")], bottleneck={"rate_bps": 10e6})
    assert anomalies({"rx": rx(np.arange(0.05, 30, 0.01)),
                      "tcpinfo": _recovery_crawl(20)}, ten) == []
    # a paced flow's rate is its application's: only "nothing delivered" counts for it
    paced = meta([bulk(kind="paced")], bottleneck={"rate_bps": 10e6})
    assert anomalies({"rx": rx(np.arange(0.05, 30, 0.01)),
                      "tcpinfo": _recovery_crawl(20)}, paced) == []
