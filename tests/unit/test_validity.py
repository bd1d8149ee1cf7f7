"""Run validity from the tools' self-accounting (ccarena.validity)."""
from ccarena.measure import validity


def test_link_losses_in_its_own_paths_flag_the_run():
    ok = {"forwarded": 100_000, "rx_ring_drops": 0, "tx_errors": 0, "late_packets": 10}
    assert validity.judge_link(ok) == []
    rx = dict(ok, rx_ring_drops=1000)
    assert any("receive path" in r for r in validity.judge_link(rx))
    tx = dict(ok, tx_errors=1000)
    assert any("send path" in r for r in validity.judge_link(tx))
    # below the threshold (0.1 % of forwarded packets): not flagged
    assert validity.judge_link(dict(ok, tx_errors=50, rx_ring_drops=50)) == []


def test_losses_on_the_way_into_the_link_flag_the_run():
    """Frames the routers' ports could not hand to the emulator (counted by the
    orchestrator from their veth and fifo drops) are the emulator's losses too, judged
    per direction against what reached it (ACKs in the other direction do not dilute)."""
    link = {"forwarded": 150_000, "rx_ring_drops": 0, "tx_errors": 0,
            "w2e": {"arrivals": 100_000}, "e2w": {"arrivals": 50_000}}
    zero = {"w2e": {"dropped": 0, "requeues": 9}, "e2w": {"dropped": 0, "requeues": 0}}
    assert validity.judge_link(link, zero) == []
    small = {"w2e": {"dropped": 90, "requeues": 0}, "e2w": {"dropped": 40, "requeues": 0}}
    assert validity.judge_link(link, small) == []                    # below 0.1 % each
    r = validity.judge_link(link, {"w2e": {"dropped": 0}, "e2w": {"dropped": 60}})
    assert len(r) == 1 and "e2w: 60 of 50060" in r[0] and "on the way into it" in r[0], r
    # nothing reached the link at all, yet frames were dropped on the way: flagged
    r = validity.judge_link({"forwarded": 0, "w2e": {"arrivals": 0}}, {"w2e": {"dropped": 5}})
    assert len(r) == 1 and "5 of 5" in r[0], r


def test_ingress_counters_read_both_bottleneck_ports(monkeypatch):
    """Each direction's counters come from its router's bottleneck port (rl:bn is w2e,
    rr:bn e2w), and a run's share is the difference of two readings. How one port is read
    (netlink, against iproute2's view) is tests/integration/test_link_counters.py."""
    from ccarena.testbed import user_link
    from ccarena.testbed.topology import plan_dumbbell
    topo = plan_dumbbell("t", 1, "user")
    seen = {}

    def fake(ns, dev):
        seen[ns] = dev
        return {"dropped": 10 if ns == topo.routers["rl"] else 4, "requeues": 11}
    monkeypatch.setattr(user_link, "port_counters", fake)
    c = user_link.ingress_counters(topo)
    assert seen == {topo.routers["rl"]: "bn", topo.routers["rr"]: "bn"}
    assert c == {"w2e": {"dropped": 10, "requeues": 11}, "e2w": {"dropped": 4, "requeues": 11}}
    assert user_link.counter_delta(c, {d: {"dropped": 12, "requeues": 20} for d in c}) == \
        {"w2e": {"dropped": 2, "requeues": 9}, "e2w": {"dropped": 8, "requeues": 9}}


def test_a_port_without_statistics_is_a_one_line_error(monkeypatch):
    import contextlib

    import pytest

    from ccarena.testbed import user_link

    class NoStats:
        def link_lookup(self, ifname):
            return [7]

        def get_links(self, idx):
            class Msg:
                def get_attr(self, name):
                    return None
            return [Msg()]

    monkeypatch.setattr(user_link, "_netlink", lambda ns: contextlib.nullcontext(NoStats()))
    with pytest.raises(user_link.TestbedError, match="read the counters of bn in ccax-rl"):
        user_link.port_counters("ccax-rl", "bn")


def test_the_handoff_fifo_needs_a_kernel_with_the_veth_fix():
    from ccarena.testbed import user_link
    assert user_link.kernel_version("6.18.44-fc-v669") == (6, 18)
    assert user_link.kernel_version("6.17.9") < user_link.HANDOFF_MIN_KERNEL
    assert user_link.kernel_version("7.0.1") >= user_link.HANDOFF_MIN_KERNEL
    assert user_link.kernel_version("weird") == (0, 0)


def test_late_releases_above_the_limit_flag_the_run():
    fwd = 100_000
    under = {"forwarded": fwd, "late_packets": int(fwd * validity.LATE_MAX) - 1}
    over = {"forwarded": fwd, "late_packets": int(fwd * validity.LATE_MAX) + 1}
    assert validity.judge_link(under) == []
    assert any("late" in r for r in validity.judge_link(over))


def test_cpu_steal_above_the_limit_flags_the_run():
    assert validity.judge_cpu({"steal_frac": validity.STEAL_MAX / 2}) == []
    assert validity.judge_cpu({"steal_frac": validity.STEAL_MAX * 2})


def _qdisc_stats(send_frac, backlog_bytes, rate=100e6, n=300, dt=0.01):
    """A sampler table: every dt the queue holds backlog_bytes and sent send_frac of rate."""
    import pandas as pd
    t = [int(i * dt * 1e9) for i in range(n)]
    return pd.DataFrame({"t_ns": t, "dir": [0] * n, "qlen_bytes": [backlog_bytes] * n,
                         "bytes_out": [0] + [int(send_frac * rate * dt / 8)] * (n - 1)})


def _judge(stats, rates):
    return validity.judge_shaper(validity.shaper_delivery(stats, rates))


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


def test_only_a_run_invalid_for_the_machines_noise_alone_is_run_again():
    steal = "CPU steal 40% of the run (limit 25%)"
    noisy = {"valid": False, "invalid_reasons": [steal], "noise_reasons": [steal]}
    assert validity.noise_only(noisy)
    # a failed part beside the noise: re-running would hide it
    assert not validity.noise_only({**noisy, "invalid_reasons": [steal, "ccarena-flow@s1 exit 1"]})
    assert not validity.noise_only({"valid": False, "invalid_reasons": ["metrics failed: x"],
                                    "noise_reasons": []})
    assert not validity.noise_only({"valid": True, "invalid_reasons": [], "noise_reasons": []})
    # a run stored before noise was told apart: never re-run
    assert not validity.noise_only({"valid": False, "invalid_reasons": [steal]})


def _link_stats(delivered_bps, queue_pkts, rate, n=500, dt=0.01, t0=10**9, pkt=1514,
                drops=0):
    """link_stats of one direction (w2e): every dt, bytes_out for delivered_bps, and a
    queue cycling through 0..queue_pkts packets; `drops` in the whole run."""
    import pandas as pd
    q = [int(queue_pkts * (i % 10) / 9) for i in range(n)]
    return pd.DataFrame({"t_ns": [t0 + int((i + 1) * dt * 1e9) for i in range(n)],
                         "dir": [0] * n, "qlen_pkts": q, "qlen_bytes": [x * pkt for x in q],
                         "drops": [drops] + [0] * (n - 1),
                         "bytes_out": [int(delivered_bps * dt / 8)] * n})


def _cpu_limited(stats, rate, buffer_pkts, busy, retrans, segments=400_000, t0=10**9):
    d = validity.link_delivery(stats, {0: rate, 1: rate}, {0: (0.0, 5.0)}, t0)
    losses = {"w2e": {"retrans": retrans, "segments": segments}}
    return validity.judge_cpu_limited(d, losses, "packets", buffer_pkts,
                                      {"busy_frac": busy, "steal_frac": 0.0})


def test_a_link_that_limits_its_flows_passes_the_cpu_limit_rule():
    """Properly loaded: the queue builds, the link delivers its rate, and every packet
    the senders retransmitted is one the link dropped. A busy CPU beside it does not
    matter: the link, not the CPU, set the pace."""
    rate = 100e6
    stats = _link_stats(0.98 * rate, 60, rate, drops=427)
    d = validity.link_delivery(stats, {0: rate}, {0: (0.0, 5.0)}, 10**9)["w2e"]
    assert abs(d["frac"] - 0.98) < 0.001 and (d["queue_max_pkts"], d["drops"]) == (60, 427)
    assert _cpu_limited(stats, rate, 100, busy=0.97, retrans=427) == []
    # even below its rate, a link whose queue filled half its buffer was the bottleneck
    assert _cpu_limited(_link_stats(0.6 * rate, 50, rate), rate, 100, busy=0.97,
                        retrans=5000) == []


def test_a_run_the_cpu_limited_is_invalid_with_its_figures():
    """10 Gbit/s, 64 connections on two cores: 1.19 Gbit/s delivered, the queue never
    above 15 packets, 6684 retransmissions where the link dropped nothing, the CPU 97 %
    busy."""
    rate = 10e9
    stats = _link_stats(1.19e9, 15, rate)
    r = _cpu_limited(stats, rate, 1000, busy=0.97, retrans=6684)
    assert len(r) == 1, r
    assert r[0].startswith("the CPU, not the link, limited the run: w2e delivered "
                           "1.19 of 10 Gbit/s"), r[0]
    assert "never held more than 15 of its 1000 packets" in r[0], r[0]
    assert "retransmitted 6684 packets where the link dropped 0" in r[0], r[0]
    assert "97% busy" in r[0], r[0]
    # the same link, but the senders lost nothing the link did not drop: their own
    # windows held them back (a receive buffer, a delay-based algorithm), which is the
    # experiment's result, not the machine's failure
    assert _cpu_limited(stats, rate, 1000, busy=0.97, retrans=0) == []
    assert _cpu_limited(stats, rate, 1000, busy=0.97, retrans=300) == []   # < 0.1 %
    # nor with an idle CPU
    assert _cpu_limited(stats, rate, 1000, busy=0.5, retrans=6684) == []
    # byte buffers are compared in bytes
    d = validity.link_delivery(stats, {0: rate}, {0: (0.0, 5.0)}, 10**9)
    lost = {"w2e": {"retrans": 6684, "segments": 400_000}}
    assert validity.judge_cpu_limited(d, lost, "bytes", 1000 * 1514, {"busy_frac": 0.95})
    assert validity.judge_cpu_limited(d, lost, "bytes", 20 * 1514, {"busy_frac": 0.95}) == []


def test_the_senders_losses_come_from_each_connections_last_sample():
    import pandas as pd
    flows = [{"flow": 0, "kind": "parallel", "from": "s1", "to": "r1", "bytes": None},
             {"flow": 1, "kind": "paced", "from": "s1", "to": "r1", "bytes": None}]
    t = pd.DataFrame({"host": ["s1"] * 5 + ["r1"], "flow": [0, 0, 0, 0, 1, 0],
                      "conn": [0, 0, 1, 1, 0, 0], "t_ns": [1, 2, 1, 2, 2, 3],
                      "total_retrans": [5, 7, 1, 2, 100, 100],
                      "bytes_sent": [0, 14480, 0, 28960, 10**6, 10**6],
                      "mss": [1448] * 6})
    assert validity.sender_losses(t, flows, 0) == {"retrans": 9, "segments": 30}
    assert validity.sender_losses(t, flows, 1) is None        # no backlogged flow r* -> s*


def test_only_backlogged_flows_crossing_the_bottleneck_are_judged_while_all_run():
    def flow(kind="bulk", src="s1", dst="r1", start=0.0, stop=None, nbytes=None):
        return {"flow": 0, "kind": kind, "from": src, "to": dst, "start_s": start,
                "stop_s": stop, "bytes": nbytes}
    rates = {0: 10e6, 1: 10e6}
    w = validity.saturating_windows([flow(), flow(src="s2", dst="r2", start=5, stop=15)],
                                    rates, 20.0, 2.0, 0.02)
    assert w == {0: (5.0, 15.0)}
    assert validity.saturating_windows([flow(src="r1", dst="s1")], rates, 20, 2, 0.02) == \
        {1: (2.0, 20.0)}
    # a byte-limited transfer, a download, a paced sender: not backlogged
    for f in (flow(nbytes=10**6), flow(kind="download"), flow(kind="paced")):
        assert validity.saturating_windows([f], rates, 20, 2, 0.02) == {}
    # an unlimited direction, and too short a window (< 10 base RTTs)
    assert validity.saturating_windows([flow()], {0: None, 1: None}, 20, 2, 0.02) == {}
    assert validity.saturating_windows([flow()], rates, 3.0, 0.0, 0.5) == {}


def test_a_sampler_that_missed_its_ticks_is_noise():
    from ccarena.measure.validity import judge_sampler
    assert judge_sampler("kernel qdisc sampler", 900, 50) == []
    assert judge_sampler("kernel qdisc sampler", 800, 200) == [
        "kernel qdisc sampler missed 200 of 1000 sampling ticks"]


# -- judge_cpu_bursts: a drop-tail queue that overflows while the windows cannot fill it --

BURST_STUDY = """
[study]
name = "bursts"
duration = "4s"
warmup = "1s"
[bottleneck]
rate = "200mbit"
delay = "5ms"
buffer = "{buffer}"
queue = "{queue}"
backend = "user"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "cubic"
{more}
"""
T0 = 10**9


def _burst_study(buffer="100p", queue="droptail", more=""):
    from ccarena.study.load import loads_study
    return loads_study(BURST_STUDY.format(buffer=buffer, queue=queue, more=more), "b.toml")


def _burst_tables(study, inflight_bdp, frac=0.62, slow_start=False, drops_every=10,
                  mss=1448, rwnd_bdp=None, ca_state=None, limited=None):
    """4 s at 10 ms of a 200 Mbit/s, 10 ms RTT path: the link delivers `frac` of its rate
    and drops 5 packets every `drops_every` intervals from a queue that overflows in
    bursts; the sender keeps `inflight_bdp` BDPs in flight (a +-10 % ripple), in
    congestion avoidance (cwnd >= ssthresh) or, with `slow_start`, below ssthresh.
    With `ca_state` (0 Open, 3 Recovery), the kernel's accounting too: the state, and
    the rwnd- and sndbuf-limited times, which grow by 1 ms per sample in the one named
    by `limited` ("rwnd_limited_us", "sndbuf_limited_us") and stay 0 otherwise."""
    import pandas as pd
    rate, dt, n = study.bottleneck.rate_bps, 0.01, 400
    bdp = rate * study.base_rtt_s / 8
    t = [T0 + int((i + 1) * dt * 1e9) for i in range(n)]
    q = [100 if i % drops_every == 0 else (i * 7) % 40 for i in range(n)]
    stats = pd.DataFrame({"t_ns": t, "dir": [0] * n, "qlen_pkts": q,
                          "qlen_bytes": [x * 1514 for x in q],
                          "drops": [5 if i % drops_every == 0 else 0 for i in range(n)],
                          "bytes_out": [int(frac * rate * dt / 8)] * n})
    cwnd = [int(inflight_bdp * bdp / mss * (1 + 0.1 * ((i % 5) - 2) / 2)) for i in range(n)]
    info = pd.DataFrame({"host": ["s1"] * n, "flow": [0] * n, "conn": [0] * n,
                         "t_ns": [x - 3_000_000 for x in t], "cwnd": cwnd, "unacked": cwnd,
                         "ssthresh": [c + 50 if slow_start else c - 20 for c in cwnd],
                         "mss": [mss] * n, "total_retrans": [0] * n,
                         "bytes_sent": [0] * n})
    if rwnd_bdp is not None:
        info["snd_wnd"] = int(rwnd_bdp * bdp)
    if ca_state is not None:
        info["ca_state"] = ca_state
        for k in ("rwnd_limited_us", "sndbuf_limited_us"):
            info[k] = [1000 * i if k == limited else 0 for i in range(n)]
    return {"link_stats": stats, "tcpinfo": info}


def _judge_saturation(study, tables, busy=0.88):
    from ccarena.run.collect import judge_saturation
    meta = {"cpu": {"busy_frac": busy, "steal_frac": 0.0}, "t0_ns": T0}
    return judge_saturation(study, tables, meta), meta


def test_a_queue_that_overflows_in_bursts_below_the_bdp_makes_the_run_invalid():
    """--jobs 2 at 200 Mbit/s, one CPU per run: the link delivers 62 % of its rate, its
    queue overflows now and then, the sender's window stays near 0.8 BDP. No loss beyond
    the link's drops, so judge_cpu_limited sees nothing; a drop-tail queue that drops
    needs the BDP plus the buffer in flight, so these packets came in bursts."""
    study = _burst_study()
    r, meta = _judge_saturation(study, _burst_tables(study, inflight_bdp=0.8))
    assert len(r) == 1, r
    assert r[0].startswith("the machine, not the link, limited the run: w2e delivered "
                           "124 of 200 Mbit/s (62%; limit 80%) and dropped 150 packets"), r[0]
    assert "0.8" in r[0].split("BDP")[0].rsplit("(", 1)[1], r[0]       # the window, in BDPs
    assert "the 151 KB buffer fills only with 401 KB" in r[0], r[0]
    assert "the CPU was 88% busy, 0% stolen" in r[0], r[0]
    d = meta["link_delivery"]["w2e"]
    assert d["avoidance_drops"] == 150 and 0.7 * 250e3 < d["inflight_p95_bytes"] < 0.95 * 250e3


def test_what_the_network_itself_does_is_not_taken_for_bursts():
    study = _burst_study()
    # a sawtooth that reaches the BDP plus half the buffer: the link's own drops
    assert _judge_saturation(study, _burst_tables(study, inflight_bdp=1.35))[0] == []
    # drops in slow start: two packets per ACK overflow a queue below the BDP by design
    assert _judge_saturation(study, _burst_tables(study, 0.8, slow_start=True))[0] == []
    # a link that delivers its rate
    assert _judge_saturation(study, _burst_tables(study, 0.8, frac=0.9))[0] == []
    # too few drops to speak of (one interval of 5 in the judged 3 s; 10 needed)
    assert _judge_saturation(study, _burst_tables(study, 0.8, drops_every=200))[0] == []
    # a receive window below the BDP held the sender there: its updates release bursts
    # (delay-throughput's quick runs at 60 ms: a 393 KB window on a 750 KB BDP)
    assert _judge_saturation(study, _burst_tables(study, 0.8, rwnd_bdp=0.85))[0] == []
    # a receive window that would let it fill the queue does not excuse the bursts, nor
    # does a kernel that reports no window (tcpi_snd_wnd 0)
    assert len(_judge_saturation(study, _burst_tables(study, 0.8, rwnd_bdp=4))[0]) == 1
    assert len(_judge_saturation(study, _burst_tables(study, 0.8, rwnd_bdp=0))[0]) == 1
    # a buffer one offload burst (64 KiB) can fill, or under a tenth of the BDP
    small = _burst_study(buffer="40p")
    assert _judge_saturation(small, _burst_tables(small, 0.8))[0] == []
    # an AQM drops before its buffer is full
    codel = _burst_study(queue="codel")
    assert _judge_saturation(codel, _burst_tables(codel, 0.8))[0] == []
    # data the other way: ACKs queued behind it arrive compressed and release bursts
    # (Zhang, Shenker & Clark 1991)
    two_way = _burst_study(more='[[flow]]\nname = "back"\nfrom = "r1"\nto = "s1"\n'
                                'cc = "cubic"\nkind = "paced"\nwrite = "1KiB"\ngap = "10ms"')
    assert _judge_saturation(two_way, _burst_tables(two_way, 0.8))[0] == []


def test_a_drop_below_the_window_that_fills_the_queue_is_a_burst_at_its_own_time():
    """--jobs 2 at 200 Mbit/s: one run delivered 78 % of the rate and lost 6 packets
    from a full queue in congestion avoidance with cwnd 166 (BDP 173 segments, the
    queue fills with 273): too few drops for the count over the window, but a sender
    that the ACKs clock cannot fill a queue with less than the BDP in flight. One
    interval of 5 drops in the judged 3 s, the window 0.8 BDP, in the Open state."""
    study = _burst_study()
    r, meta = _judge_saturation(study, _burst_tables(study, 0.8, drops_every=200,
                                                     ca_state=0))
    assert len(r) == 1, r
    assert r[0].startswith("the machine, not the link, limited the run: w2e delivered "
                           "124 of 200 Mbit/s (62%; limit 80%) and dropped 5 packets from a "
                           "full queue in congestion avoidance while the senders' windows "
                           "summed to at most "), r[0]
    assert "the 151 KB buffer fills only with 401 KB" in r[0], r[0]
    d = meta["link_delivery"]["w2e"]
    assert d["below_drops"] == 5 and d["avoidance_drops"] == 5
    assert 0.7 * 250e3 < d["below_window_bytes"] < 0.9 * 250e3


def test_a_drop_the_senders_state_explains_is_not_a_burst():
    study = _burst_study()
    one = dict(drops_every=200)
    # the same drop with the window at the BDP plus most of the buffer: ACK-clocked
    # windows fill the queue themselves
    assert _judge_saturation(study, _burst_tables(study, 1.45, ca_state=0, **one))[0] == []
    # in loss recovery: the window shrinks under a queue the old window filled
    assert _judge_saturation(study, _burst_tables(study, 0.8, ca_state=3, **one))[0] == []
    # held by the receive window or the send buffer, not cwnd: their updates release
    # many segments at once
    for k in ("rwnd_limited_us", "sndbuf_limited_us"):
        assert _judge_saturation(study, _burst_tables(study, 0.8, ca_state=0, limited=k,
                                                      **one))[0] == [], k
    # slow start
    assert _judge_saturation(study, _burst_tables(study, 0.8, slow_start=True, ca_state=0,
                                                  **one))[0] == []
    # a link that delivers its rate
    assert _judge_saturation(study, _burst_tables(study, 0.8, frac=0.9, ca_state=0,
                                                  **one))[0] == []
    # a buffer one offload burst fills
    small = _burst_study(buffer="40p")
    assert _judge_saturation(small, _burst_tables(small, 0.8, ca_state=0, **one))[0] == []


def test_drops_count_only_when_every_sender_was_in_congestion_avoidance():
    import pandas as pd
    flows = [{"flow": 0, "kind": "bulk", "from": "s1", "to": "r1", "bytes": None},
             {"flow": 1, "kind": "bulk", "from": "s2", "to": "r2", "bytes": None}]
    ms = 10**6
    stats = pd.DataFrame({"t_ns": [T0 + k * 10 * ms for k in range(1, 5)], "dir": [0] * 4,
                          "drops": [0, 3, 4, 6]})
    # flow 1 is in slow start until 25 ms after t0, then both avoid congestion
    info = pd.DataFrame({"host": ["s1", "s2", "s1", "s2"], "flow": [0, 1, 0, 1],
                         "conn": [0] * 4, "t_ns": [T0, T0, T0 + 25 * ms, T0 + 25 * ms],
                         "cwnd": [50, 10, 50, 40], "ssthresh": [40, 2**31 - 1, 40, 30]})
    # intervals (10, 20] and (20, 30] began in flow 1's slow start; (30, 40] did not
    assert validity.drops_in_avoidance(stats, info, flows, 0, (0.0, 1.0), T0) == \
        {"drops": 6, "below": None}
    assert validity.drops_in_avoidance(stats, info, flows, 0, (0.0, 0.035), T0)["drops"] == 0


def test_drops_below_a_window_need_every_sender_open_and_held_by_cwnd_through_the_span():
    import pandas as pd
    flows = [{"flow": 0, "kind": "bulk", "from": "s1", "to": "r1", "bytes": None},
             {"flow": 1, "kind": "bulk", "from": "s2", "to": "r2", "bytes": None}]
    ms = 10**6
    stats = pd.DataFrame({"t_ns": [T0 + k * 20 * ms for k in range(1, 5)], "dir": [0] * 4,
                          "drops": [2, 3, 4, 6]})
    # samples 5 ms into each 10 ms; both in avoidance with windows of 50 x 1000 bytes,
    # but flow 0's is 80 at 55 ms, flow 1 is in recovery at 75 ms, and its
    # receive-window limited time grew between 5 and 15 ms
    t = [T0 + (5 + 10 * k) * ms for k in range(10)]
    info = pd.DataFrame({
        "host": ["s1"] * 10 + ["s2"] * 10, "flow": [0] * 10 + [1] * 10, "conn": [0] * 20,
        "t_ns": t + t, "cwnd": [50] * 5 + [80] + [50] * 14, "ssthresh": [40] * 20,
        "mss": [1000] * 20, "ca_state": [0] * 17 + [3] + [0] * 2,
        "rwnd_limited_us": [0] * 10 + [0] + [900] * 9, "sndbuf_limited_us": [0] * 20})
    # each interval is judged from the last sample at or before its start to the first
    # at or after its end: (10, 20] the receive window held flow 1; (30, 40] 100 kB,
    # below; (50, 60] 130 kB, over; (70, 80] flow 1 recovering
    got = validity.drops_in_avoidance(stats, info, flows, 0, (0.0, 1.0), T0,
                                      below_bytes=120e3)
    assert got == {"drops": 15, "below": 3, "below_window_bytes": 100e3}, got
    # looking 20 ms further back, (30, 40] reaches the growth of the receive-window time
    assert validity.drops_in_avoidance(stats, info, flows, 0, (0.0, 1.0), T0,
                                       below_bytes=120e3, lookback_s=0.02)["below"] == 0
    # without the kernel's accounting the drops are counted, none judged at its time;
    # nor where another flow crosses the bottleneck the same way
    assert validity.drops_in_avoidance(stats, info.drop(columns="ca_state"), flows, 0,
                                       (0.0, 1.0), T0, below_bytes=120e3)["below"] is None
    web = flows + [{"flow": 2, "kind": "download", "from": "s1", "to": "r1", "bytes": 10**5}]
    assert validity.drops_in_avoidance(stats, info, web, 0, (0.0, 1.0), T0,
                                       below_bytes=120e3)["below"] is None


def _delay_paths(ping, tcp=(), base=0.040, jitter=0.0):
    paths = [{"path": "ping s1->r1", "base_s": base, "jitter_s": jitter, "rtt_s": ping}]
    if len(tcp):
        paths.append({"path": "flow bulk", "base_s": base, "jitter_s": jitter, "rtt_s": tcp})
    return paths


def test_a_kernel_link_late_on_every_packet_is_flagged_from_the_rtt_floor():
    """netem counts nothing; its lateness shows in the round trips' floor: with a queue
    (flows) only the floor is judged, since queueing lengthens the others."""
    import numpy as np
    tol = 0.003
    queued = np.linspace(0.041, 0.200, 500)            # one ping found the path empty
    rec = validity.kernel_delay(_delay_paths(queued, [0.0405]), tol, unloaded=False)
    assert validity.judge_kernel_delay(rec) == []
    assert rec["paths"]["ping s1->r1"]["floor_s"] == 0.041
    # every round trip at least 5 ms long, the handshakes' too: late on every packet
    late = validity.kernel_delay(_delay_paths(queued + 0.005, [0.046]), tol, unloaded=False)
    r = validity.judge_kernel_delay(late)
    assert len(r) == 1 and "late on every packet" in r[0] and "base RTT of 40 ms" in r[0], r
    # the closest path decides: one TCP handshake within the tolerance clears the run
    assert validity.judge_kernel_delay(validity.kernel_delay(
        _delay_paths(queued + 0.005, [0.0412]), tol, unloaded=False)) == []
    # jitter lets a few samples' floor sit up to 2 x jitter above the base RTT
    assert validity.judge_kernel_delay(validity.kernel_delay(
        _delay_paths(queued + 0.005, [], jitter=0.002), tol, unloaded=False)) == []
    # nothing answered: nothing judged
    assert validity.judge_kernel_delay(validity.kernel_delay(
        _delay_paths([np.nan, np.nan]), tol, unloaded=False)) == []


def test_late_pings_on_an_unloaded_kernel_link_are_flagged_past_the_late_limit():
    import numpy as np
    tol = 0.003
    ok = np.full(1000, 0.041)
    ok[:20] = 0.060                                    # 2 %: at the limit, not past it
    rec = validity.kernel_delay(_delay_paths(ok), tol, unloaded=True)
    assert rec["paths"]["ping s1->r1"]["late"] == 20
    assert validity.judge_kernel_delay(rec) == []
    ok[:30] = 0.060                                    # 3 %
    r = validity.judge_kernel_delay(validity.kernel_delay(_delay_paths(ok), tol,
                                                          unloaded=True))
    assert len(r) == 1 and "30 of 1000 replies on ping s1->r1" in r[0], r
    # with flows the same replies may have queued: not judged one by one
    assert validity.judge_kernel_delay(validity.kernel_delay(_delay_paths(ok), tol,
                                                             unloaded=False)) == []


def test_a_kernel_backend_run_judges_each_path_against_its_own_base_rtt():
    """collect.kernel_delay: pings and each TCP connection's min_rtt, per path across the
    bottleneck; a host's extra delay is on its segment both ways (2 x in the RTT)."""
    import pandas as pd
    from ccarena.run.collect import kernel_delay
    from ccarena.study.load import loads_study
    study = loads_study('''
        [study]
        name = "kd"
        duration = "5s"
        [topology]
        pairs = 2
        [bottleneck]
        backend = "kernel"
        rate = "2mbit"
        delay = "20ms"
        buffer = "20p"
        [hosts.r2]
        delay = "5ms"
        [[flow]]
        name = "a"
        from = "s1"
        to = "r1"
        [[flow]]
        name = "b"
        from = "r2"
        to = "s2"
        [[probe]]
        kind = "ping"
        from = "s1"
        to = "r1"
        interval = "100ms"
        ''')
    ping = pd.DataFrame({"probe": [study.probes[0].name] * 3, "rtt_s": [0.0405, 0.09, None]})
    ti = pd.DataFrame({"host": ["s1", "s1", "r2"], "flow": [0, 0, 1], "conn": [0, 0, 0],
                       "min_rtt_us": [41_000, 40_600, 50_300]})
    rec = kernel_delay(study, {"ping": ping, "tcpinfo": ti})
    p = rec["paths"]
    assert p["ping s1->r1"]["base_s"] == 0.040 and p["ping s1->r1"]["n"] == 2
    assert p["flow a"]["floor_s"] == 0.0406
    assert p["flow b"]["base_s"] == 0.050 and abs(p["flow b"]["excess_s"] - 0.0003) < 1e-9
    assert rec["unloaded"] is False
    assert validity.judge_kernel_delay(rec) == []
