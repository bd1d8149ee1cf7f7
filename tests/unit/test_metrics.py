"""ccarena.metrics on synthetic inputs whose answers are worked out by hand."""
import math

import numpy as np
import pandas as pd
import pytest

from ccarena.metrics import (bdp_bytes, convergence_time, goodput_series, jain, jain_groups, jain_series, mathis_bps, percentiles, run_metrics, window_limit_bps)

DT = 0.01


def meta(flows=2, duration=10.0, warmup=2.0, rate=10e6, starts=None, kinds=None, ccs=None):
    starts = starts or [0.0] * flows
    kinds = kinds or ["bulk"] * flows
    ccs = ccs or ["cubic"] * flows
    return {"run_id": "r1", "cell": "c", "rep": 0, "t0_ns": 5_000_000_000,
            "duration_s": duration, "warmup_s": warmup, "base_rtt_s": 0.02,
            "bottleneck": {"rate_bps": rate, "delay_s": 0.01, "buffer_packets": 100},
            "flows": [{"flow": i, "name": f"f{i}", "kind": kinds[i], "cc": ccs[i],
                       "from": f"s{i + 1}", "to": f"r{i + 1}", "conns": 1,
                       "start_s": starts[i], "stop_s": duration} for i in range(flows)],
            "valid": True}


def ramp_rx(rates_Bps, duration=10.0, conn=0):
    """rx table: flow i receives rates_Bps[i](t) bytes/s (a number or a function of t)."""
    t = np.round(np.arange(0, int(round(duration / DT)) + 1) * DT, 9)
    parts = []
    for f, r in enumerate(rates_Bps):
        rate = np.asarray(r(t) if callable(r) else np.full_like(t, r), float)
        cum = np.concatenate([[0.0], np.cumsum(rate[1:] * DT)])
        parts.append(pd.DataFrame({"run_id": "r1", "t": t, "flow": f, "conn": conn,
                                   "bytes": cum}))
    return pd.concat(parts, ignore_index=True)


# -- formulas -------------------------------------------------------------------------

def test_jain_equal_flows_is_one():
    assert jain([5.0, 5.0, 5.0, 5.0]) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [2, 4, 10, 32])
def test_jain_one_hog_among_n_is_one_over_n(n):
    assert jain([7.0] + [0.0] * (n - 1)) == pytest.approx(1.0 / n)


def test_jain_by_hand_and_undefined():
    # (1+3)^2 / (2 * (1+9)) = 16/20
    assert jain([1, 3]) == pytest.approx(0.8)
    assert math.isnan(jain([])) and math.isnan(jain([0, 0]))


def test_jain_between_groups_uses_per_flow_means():
    # one cubic flow with 4, four reno flows with 1 each: means 4 and 1 -> 25/(2*17)
    v = [4, 1, 1, 1, 1]
    g = ["cubic", "reno", "reno", "reno", "reno"]
    assert jain_groups(v, g) == pytest.approx(25 / 34)
    assert math.isnan(jain_groups([1, 2], ["a", "a"]))


def test_percentiles_linear_interpolation():
    p = percentiles(np.arange(1, 102))  # 1..101: order statistic k is at percentile k-1
    assert (p[50], p[95], p[99]) == (51, 96, 100)
    assert percentiles([1.0, 2.0], (50,))[50] == 1.5
    assert math.isnan(percentiles([], (50,))[50])


def test_convergence_time_of_constructed_series():
    t = np.arange(8.0)
    j = [0.5, 0.95, 0.6, 0.92, 0.95, 0.99, 0.91, 0.97]
    assert convergence_time(t, j, 0.9) == 3.0
    assert convergence_time(t, j, 0.94) == 7.0
    assert math.isnan(convergence_time(t, j[:-1] + [0.5], 0.9))
    assert convergence_time(t, [0.95] * 8) == 0.0
    assert math.isnan(convergence_time(t, [0.95, np.nan, 0.95, 0.95, 0.95, 0.95, 0.95,
                                           np.nan]))


def test_models_by_hand():
    assert bdp_bytes(10e6, 0.02) == 25000.0
    assert window_limit_bps(65535, 0.1) == pytest.approx(65535 * 8 / 0.1)
    # MSS/RTT * sqrt(3/2)/sqrt(p): 1448*8/0.1 * 1.2247449 / 0.1
    assert mathis_bps(1448, 0.1, 0.01) == pytest.approx(115840 * math.sqrt(1.5) / 0.1)
    assert math.isnan(mathis_bps(1448, 0.1, 0.0))


# -- run_metrics ----------------------------------------------------------------------

def test_goodput_from_linear_byte_ramp():
    rx = ramp_rx([125_000.0, 250_000.0])  # 1 and 2 Mbit/s
    flows, run = run_metrics({"rx": rx}, meta())
    top = flows[flows.conn == -1].set_index("flow")
    assert top.loc[0, "goodput_bps"] == pytest.approx(1e6)
    assert top.loc[1, "goodput_bps"] == pytest.approx(2e6)
    assert run["goodput_bps"] == pytest.approx(3e6)
    assert run["utilisation"] == pytest.approx(0.3)
    assert run["jain"] == pytest.approx(9 / 10)  # (1+2)^2 / (2*(1+4))


def test_warmup_is_excluded():
    # 10 Mbit/s during the 2 s warm-up, 1 Mbit/s after: steady goodput is 1 Mbit/s
    rx = ramp_rx([lambda t: np.where(t <= 2.0, 1.25e6, 125_000.0)])
    flows, run = run_metrics({"rx": rx}, meta(flows=1))
    assert flows.loc[0, "goodput_bps"] == pytest.approx(1e6)
    assert flows.loc[0, "window_s"] == pytest.approx(8.0)


def test_goodput_over_time_and_jain_per_interval():
    # flow 1 hogs everything for 5 s, then both are equal
    rx = ramp_rx([lambda t: np.where(t <= 5.0, 0.0, 1e5), 1e5])
    gs = goodput_series(rx, meta(), interval_s=1.0)
    assert len(gs) == 20 and set(gs.flow) == {0, 1}
    assert gs[(gs.flow == 1)].goodput_bps.to_numpy() == pytest.approx(np.full(10, 8e5))
    js = jain_series(rx, meta(), interval_s=1.0)
    assert js.jain.to_numpy()[:5] == pytest.approx([0.5] * 5)
    assert js.jain.to_numpy()[5:] == pytest.approx([1.0] * 5)


def test_convergence_after_late_join():
    # flow 1 joins at 4 s and takes until 7 s to reach its share
    share = lambda t: np.clip((t - 4.0) / 3.0, 0, 1) * 1e5  # noqa: E731
    rx = ramp_rx([1e5, share])
    _, run = run_metrics({"rx": rx}, meta(starts=[0.0, 4.0]), interval_s=0.5)
    # Jain(1, x) >= 0.9  <=>  x^2 - 2.5x + 1 <= 0  <=>  x >= 0.5, reached at t = 5.5;
    # interval [5.0, 5.5) has mean x = 0.42 (J = 0.87), [5.5, 6.0) mean x = 0.58 (0.94)
    assert run["converged_at_s"] == pytest.approx(5.5)
    assert run["convergence_s"] == pytest.approx(1.5)


def test_convergence_fairness_is_the_worst_second_after_the_allowance():
    # flow 1 joins at 2 s: t_c = 2 + 4 = 6 s. Before t_c it gets 1/10 of flow 0 (not
    # scored); in [8, 9) half of it: Jain(1, 0.5) = 1.5^2 / (2 * 1.25) = 0.9
    # (ramp_rx's sample at t carries the bytes of (t - dt, t])
    def second(t):
        r = np.where((t > 8.0) & (t <= 9.0), 0.5e5, 1e5)
        return np.where(t <= 6.0, 1e4, r)
    _, run = run_metrics({"rx": ramp_rx([1e5, second])}, meta(starts=[0.0, 2.0]))
    assert run["jain_min_1s_from_s"] == pytest.approx(6.0)
    assert run["jain_min_1s"] == pytest.approx(0.9)
    # the warm-up bounds it from below; the same rates everywhere score 1
    _, run = run_metrics({"rx": ramp_rx([1e5, 1e5])}, meta(warmup=5.0),
                         convergence_allowance_s=1.0)
    assert run["jain_min_1s_from_s"] == pytest.approx(5.0)
    assert run["jain_min_1s"] == pytest.approx(1.0)


def test_convergence_fairness_needs_two_flows():
    _, run = run_metrics({"rx": ramp_rx([1e5])}, meta(flows=1))
    assert math.isnan(run["jain_min_1s"])


def test_jain_counts_only_active_backlogged_flows():
    rx = ramp_rx([1e5, 1e5, 1e4])
    _, run = run_metrics({"rx": rx}, meta(flows=3, kinds=["bulk", "bulk", "download"]))
    assert run["jain"] == pytest.approx(1.0)


def test_jain_between_algorithms():
    rx = ramp_rx([4e5, 1e5, 1e5])
    _, run = run_metrics({"rx": rx}, meta(flows=3, ccs=["bbr", "cubic", "cubic"]))
    assert run["jain_cc"] == pytest.approx(25 / 34)


def tcpinfo(srtt_us, flows=1, sent_Bps=1e5, retrans_frac=0.02, duration=10.0):
    t = np.round(np.arange(1, int(round(duration / DT)) + 1) * DT, 9)
    parts = []
    for f in range(flows):
        sent = t * sent_Bps
        parts.append(pd.DataFrame({
            "t": t, "flow": f, "conn": 0, "srtt_us": np.resize(srtt_us, t.size), "cwnd": 10,
            "mss": 1000, "min_rtt_us": 20000, "snd_wnd": 100_000, "rcv_wnd": 60_000,
            "bytes_sent": sent, "bytes_retrans": sent * retrans_frac,
            "total_retrans": sent * retrans_frac / 1000, "delivered": sent / 1000,
            "delivered_ce": sent / 1000 / 4}))
    return pd.concat(parts, ignore_index=True)


def test_rtt_percentiles_and_inflation_from_srtt():
    # in the 8 s window (801 samples at 2.00..10.00) srtt cycles through 20..120 ms
    vals = np.arange(20_000, 121_000, 1_000)  # 101 values
    tcp = tcpinfo(np.roll(vals, -(200 % vals.size)))
    win = tcp[(tcp.t >= 2.0) & (tcp.t <= 10.0)].srtt_us / 1e6
    flows, run = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    row = flows.iloc[0]
    assert row.rtt_mean_s == pytest.approx(win.mean())
    assert row.rtt_p50_s == pytest.approx(np.percentile(win, 50))
    assert row.rtt_p99_s == pytest.approx(np.percentile(win, 99))
    assert run["rtt_inflation"] == pytest.approx(win.mean() / 0.02)
    assert run["queue_delay_s"] == pytest.approx(win.mean() - 0.02)


def test_retransmissions_ratio_ce_and_models():
    tcp = tcpinfo([50_000], sent_Bps=1e5, retrans_frac=0.02)
    flows, run = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    row = flows.iloc[0]
    # 8 s window: 800 kB sent, 16 kB retransmitted, 16 segments of 1000 B
    assert row.sent_bytes == pytest.approx(8e5)
    assert row.retrans_bytes == pytest.approx(16e3)
    assert row.retrans_ratio == pytest.approx(0.02)
    assert row.loss_p == pytest.approx(0.02)
    assert row.ce_ratio == pytest.approx(0.25)
    assert row.mathis_bps == pytest.approx(1000 * 8 / 0.05 * math.sqrt(1.5 / 0.02))
    assert row.rwnd_bound_bps == pytest.approx(100_000 * 8 / 0.02)
    assert run["retrans_ratio"] == pytest.approx(0.02)
    assert run["bdp_bytes"] == pytest.approx(25000)


def test_the_kernels_accounting_is_a_second_opinion():
    """busy_us includes the rwnd- and sndbuf-limited time (Linux's tcp_chrono): over an 8 s
    window, 6 s busy of which 1 s rwnd- and 0.5 s sndbuf-limited -> cwnd 4.5/8,
    app 2/8; the congestion window at the measured RTT bounds the rate. The samples (cwnd
    10, nothing in flight, no unacked column) cannot say what limited the flow: the
    kernel's opinion stands alone, and nothing is flagged as a disagreement."""
    tcp = tcpinfo([50_000])
    t = tcp["t"].to_numpy()
    tcp["busy_us"] = t * 0.75e6
    tcp["rwnd_limited_us"] = t * 0.125e6
    tcp["sndbuf_limited_us"] = t * 0.0625e6
    flows, _ = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    row = flows.iloc[0]
    assert row.kernel_rwnd_limited_frac == pytest.approx(1 / 8)
    assert row.kernel_sndbuf_limited_frac == pytest.approx(0.5 / 8)
    assert row.kernel_cwnd_limited_frac == pytest.approx(4.5 / 8)
    assert row.kernel_app_limited_frac == pytest.approx(2 / 8)
    assert row.kernel_limited_by == "cwnd"
    assert row.limited_by is None and math.isnan(row.limit_disagrees)
    assert row.cwnd_bound_bps == pytest.approx(10 * 1000 * 8 / 0.05)
    tcp["rwnd_limited_us"] = t * 0.7e6            # the receiver's window dominates
    flows, _ = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    assert flows.iloc[0].kernel_limited_by == "rwnd"


def test_a_send_buffer_limit_is_judged_from_the_samples_and_the_kernel_flagged():
    """The kernel's counters call a flow that keeps its send buffer full "busy" (cwnd);
    the samples show in flight far below cwnd, nothing unsent, the buffer full: sndbuf,
    with the kernel's other opinion flagged and named in the evidence."""
    tcp = tcpinfo([50_000])
    t = tcp["t"].to_numpy()
    tcp = tcp.assign(cwnd=6024, mss=1448, unacked=2898, sacked=0, lost=0, retrans=0,
                     snd_wnd=6_000_000, notsent_bytes=0, sndbuf=4 * 2**20,
                     wmem_queued=4_100_000, ca_state=0, busy_us=t * 1e6,
                     rwnd_limited_us=0, sndbuf_limited_us=0)
    flows, _ = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    row = flows.iloc[0]
    assert row.limited_by == "sndbuf" and row.sndbuf_limited_frac == pytest.approx(1.0)
    assert row.kernel_limited_by == "cwnd" and row.limit_disagrees == 1.0
    assert row.limit_inflight_max_pkts == 2898 and row.limit_sndbuf_bytes == 4 * 2**20
    assert row.limit_evidence.startswith("sndbuf: nothing unsent, 3.9 MiB queued in a 4.0 "
                                         "MiB send buffer; 2,898 segments in flight (up to "
                                         "2,898, 4.0 MiB)")
    assert "the kernel's counters say cwnd 100%" in row.limit_evidence


def test_link_loss_marks_queue_and_utilisation():
    t = np.round(np.arange(1, 1001) * DT, 9)
    link = pd.DataFrame({"t": np.concatenate([t, t]), "dir": np.repeat([0, 1], t.size),
                         "qlen_pkts": 10, "qlen_bytes": 15000, "arrivals": 100,
                         "departures": 98, "drops": np.repeat([2, 50], t.size), "marks": 5,
                         "bytes_out": 6250})  # 6250 B / 10 ms = 5 Mbit/s
    _, run = run_metrics({"link_stats": link}, meta())
    assert run["loss_ratio"] == pytest.approx(0.02)  # dir 1 is ignored
    assert run["mark_ratio"] == pytest.approx(0.05)
    assert run["queue_mean_pkts"] == 10
    assert run["queue_delay_mean_s"] == pytest.approx(15000 * 8 / 10e6)
    assert run["link_utilisation"] == pytest.approx(0.5)


def test_ping_rtt_and_loss():
    t = np.arange(0.0, 10.0, 0.1) + 0.05
    rtt = np.full(t.size, 0.03)
    rtt[t > 2][::10] = np.nan
    rtt[50:60] = 0.05
    ping = pd.DataFrame({"t": t, "probe": "p", "seq": np.arange(t.size), "rtt_s": rtt})
    _, run = run_metrics({"ping": ping}, meta())
    w = rtt[t >= 2]
    assert run["ping_loss"] == pytest.approx(np.isnan(w).mean())
    assert run["ping_rtt_mean_s"] == pytest.approx(np.nanmean(w))
    assert run["ping_rtt_p50_s"] == pytest.approx(0.03)
    assert run["ping_rtt_inflation"] == pytest.approx(np.nanmean(w) / 0.02)


def test_download_completion_time_and_per_connection_rows():
    m = meta(flows=1, kinds=["download"])
    t0 = m["t0_ns"]
    recs = []
    for c, (start, end) in enumerate([(0.5, 1.5), (3.0, 3.25), (6.0, 8.0)]):
        common = {"flow": 0, "conn": c, "connect_start_ns": t0 + int(start * 1e9),
                  "bytes": 178176, "error": None}
        recs.append({**common, "role": "client", "side": "recv",
                     "last_byte_ns": t0 + int(end * 1e9)})
        recs.append({**common, "role": "server", "side": "send",
                     "last_byte_ns": t0 + int(end * 1e9) - 10**7})
    flows, run = run_metrics({"conns": pd.DataFrame(recs)}, m)
    top = flows[flows.conn == -1].iloc[0]
    assert top.n_conns == 3 and top.completed == 3
    assert top.fct_s == pytest.approx((1.0 + 0.25 + 2.0) / 3)
    per = flows[flows.conn >= 0].set_index("conn")
    assert per.loc[1, "fct_s"] == pytest.approx(0.25)
    assert per.loc[1, "fct_goodput_bps"] == pytest.approx(178176 * 8 / 0.25)
    assert run["fct_mean_s"] == pytest.approx(3.25 / 3)


def test_parallel_flow_has_a_row_per_connection_that_sum_up():
    rx = pd.concat([ramp_rx([1e5], conn=0), ramp_rx([3e5], conn=1)], ignore_index=True)
    m = meta(flows=1, kinds=["parallel"])
    m["flows"][0]["conns"] = 2
    flows, run = run_metrics({"rx": rx}, m)
    assert list(flows.conn) == [-1, 0, 1]
    assert flows.goodput_bps.tolist() == pytest.approx([3.2e6, 0.8e6, 2.4e6])
    assert run["goodput_bps"] == pytest.approx(3.2e6)


def test_t_derived_from_t_ns():
    rx = ramp_rx([125_000.0])
    m = meta(flows=1)
    rx["t_ns"] = m["t0_ns"] + (rx.pop("t") * 1e9).round().astype("int64")
    flows, _ = run_metrics({"rx": rx}, m)
    assert flows.loc[0, "goodput_bps"] == pytest.approx(1e6)


@pytest.mark.parametrize("tables", [{}, {"rx": None, "tcpinfo": None},
                                    {k: pd.DataFrame() for k in
                                     ("tcpinfo", "rx", "conns", "rr", "ping", "link_stats")}])
def test_empty_or_missing_tables_give_nan_not_errors(tables):
    flows, run = run_metrics(tables, meta())
    assert len(flows) == 2 and flows.goodput_bps.isna().all()
    for k in ("goodput_bps", "jain", "rtt_mean_s", "loss_ratio", "ping_rtt_mean_s",
              "converged_at_s", "retrans_ratio"):
        assert math.isnan(run[k]), k
    assert run["bdp_bytes"] == pytest.approx(25000) and run["valid"] is True


def test_meta_without_flows_uses_flows_seen_in_data():
    rx = ramp_rx([1e5, 1e5])
    m = meta()
    del m["flows"]
    flows, run = run_metrics({"rx": rx}, m)
    assert flows.flow.tolist() == [0, 1] and run["jain"] == pytest.approx(1.0)


def test_inputs_not_modified():
    rx = ramp_rx([1e5])
    before = rx.copy()
    run_metrics({"rx": rx}, meta(flows=1))
    pd.testing.assert_frame_equal(rx, before)


def test_two_hosts_on_one_connection_keep_the_main_direction():
    # a request/response connection: the server sends 10x what the client sends
    big = ramp_rx([1e5]).assign(host="r1")
    small = ramp_rx([1e4]).assign(host="s1")
    flows, _ = run_metrics({"rx": pd.concat([small, big], ignore_index=True)},
                           meta(flows=1, kinds=["rr"]))
    assert flows.loc[0, "goodput_bps"] == pytest.approx(8e5)


def test_real_pipeline_column_types():
    # as the runner builds them: uint64 t_ns, a host column, conns from JSON with nulls
    rx = ramp_rx([125_000.0]).assign(host="r1")
    m = meta(flows=1)
    rx["t_ns"] = (m["t0_ns"] + (rx["t"] * 1e9).round()).astype("uint64")
    conns = pd.DataFrame([{"flow": 0, "conn": 0, "role": "client", "side": "send",
                           "cc": "cubic", "connect_start_ns": m["t0_ns"], "connected_ns": None,
                           "first_byte_ns": None, "last_byte_ns": None, "end_ns": None,
                           "bytes": 10, "error": None, "host": "s1"}])
    flows, run = run_metrics({"rx": rx, "conns": conns}, m)
    assert flows.loc[0, "goodput_bps"] == pytest.approx(1e6) and run["errors"] == 0


def test_damaged_samples_are_counted_not_turned_into_flows():
    rx = ramp_rx([1e5, 1e5, 1e5])  # flow 2 is not in meta: a misread record
    rx.loc[rx.index[-5:], "bytes"] = 0  # and a counter that goes backwards
    flows, run = run_metrics({"rx": rx}, meta(flows=2))
    assert flows.flow.tolist() == [0, 1] and run["n_flows"] == 2
    assert run["unknown_flow_rows"] == 1001
    assert run["counter_resets"] == 1


def test_zero_base_rtt_falls_back_to_the_measured_minimum():
    m = meta(flows=1)
    m["base_rtt_s"] = 0.0  # no emulated delay
    flows, run = run_metrics({"tcpinfo": tcpinfo([50_000])}, m)  # min_rtt_us = 20000
    assert run["base_rtt_s"] == pytest.approx(0.02) and run["base_rtt_measured"]
    assert flows.loc[0, "rtt_inflation"] == pytest.approx(2.5)
    # and with nothing to measure it from, ratios are NaN, not infinite
    flows, run = run_metrics({"rx": ramp_rx([1e5])}, m)
    assert math.isnan(run["rtt_inflation"]) and not run["base_rtt_measured"]
    assert math.isnan(run["bdp_bytes"]) or run["bdp_bytes"] == 0


def test_uint64_counters_as_the_reader_gives_them():
    tcp = tcpinfo([50_000], sent_Bps=1e5, retrans_frac=0.02)
    for c in ("bytes_sent", "bytes_retrans", "delivered", "delivered_ce"):
        tcp[c] = tcp[c].round().astype("uint64")
    flows, _ = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    assert flows.loc[0, "sent_bytes"] == pytest.approx(8e5)
    tcp.loc[tcp.t > 9.0, "bytes_sent"] = 0  # a counter reset must not wrap around
    flows, run = run_metrics({"tcpinfo": tcp}, meta(flows=1))
    assert flows.loc[0, "sent_bytes"] < 0 and run["counter_resets"] == 1


def test_external_clients_are_counted_apart_from_damage():
    rx = ramp_rx([1e5])
    ext = ramp_rx([1e5]).assign(flow=0xFFFFFFFF)  # curl on /bytes/<size>
    conns = pd.DataFrame([{"flow": 0xFFFFFFFF, "conn": c, "role": "server", "side": "send",
                           "bytes": 1000, "error": None} for c in (1, 2)])
    flows, run = run_metrics({"rx": pd.concat([rx, ext]), "conns": conns}, meta(flows=1))
    assert run["unknown_flow_rows"] == 0 and run["external_conns"] == 2
    assert flows.loc[0, "goodput_bps"] == pytest.approx(8e5)


def test_utilisation_counts_the_link_window_not_the_sum_of_flow_averages():
    # flow 0 from 0 s, flow 1 joins at 5 s, 0.8 Mbit/s each: per flow 0.8 Mbit/s, but the
    # link carried (8 s + 5 s) x 0.8 Mbit/s in the 8 s window [2, 10] = 1.3 Mbit/s
    rx = ramp_rx([1e5, lambda t: np.where(t <= 5.0, 0.0, 1e5)])
    flows, run = run_metrics({"rx": rx}, meta(starts=[0.0, 5.0], rate=2e6))
    assert flows.goodput_bps.tolist() == pytest.approx([8e5, 8e5])
    assert run["goodput_bps"] == pytest.approx(1.3e6)
    assert run["utilisation"] == pytest.approx(0.65)


def test_a_run_without_flows_or_tables():
    flows, run = run_metrics({}, {"run_id": "x", "duration_s": 10.0})
    assert flows.empty and "goodput_bps" in flows and run["n_flows"] == 0
    assert math.isnan(run["jain"]) and math.isnan(run["utilisation"])


def test_missing_columns_give_nan_not_errors():
    # tables as an older or partial writer might leave them: every metric that can still be
    # computed is, the others are NaN
    from ccarena.analysis.synthetic import synthetic_run
    tables, m = synthetic_run(n_flows=2, duration_s=4.0, warmup_s=1.0)
    cut = {"tcpinfo": tables["tcpinfo"].drop(columns=["srtt_us", "bytes_sent", "snd_wnd"]),
           "rx": tables["rx"].drop(columns=["conn"]),  # unusable: no connection id
           "conns": tables["conns"].drop(columns=["connect_start_ns", "last_byte_ns"]),
           "link_stats": tables["link_stats"].drop(columns=["qlen_pkts", "drops"]),
           "ping": tables["ping"]}
    flows, run = run_metrics(cut, m)
    assert len(flows) == 2 and flows.goodput_bps.isna().all()
    assert math.isnan(run["rtt_mean_s"]) and math.isnan(run["loss_ratio"])
    assert run["link_arrivals"] > 0 and flows.cwnd_mean_pkts.notna().all()
    assert run["ping_rtt_mean_s"] > 0
