"""Jain's index among the connections of one parallel transfer (flows.jain_conns)."""
import pandas as pd
import pytest

from ccarena.metrics import run_metrics


def _run(rates):
    t0 = 1_000_000_000
    rows = []
    for c, r in enumerate(rates):      # bytes/s per connection, constant
        for k in range(0, 101):
            t = k * 0.1
            rows.append({"t_ns": t0 + int(t * 1e9), "flow": 0, "conn": c, "bytes": int(r * t)})
    meta = {"run_id": "x", "t0_ns": t0, "duration_s": 10.0, "warmup_s": 1.0,
            "base_rtt_s": 0.02, "bottleneck": {"rate_bps": 1e8},
            "flows": [{"flow": 0, "name": "p", "kind": "parallel", "from": "s1", "to": "r1",
                       "cc": "reno", "conns": len(rates), "start_s": 0.0, "stop_s": 10.0}]}
    flows, _ = run_metrics({"rx": pd.DataFrame(rows)}, meta)
    return flows[flows["conn"] == -1]["jain_conns"].iloc[0]


def test_equal_connections_give_one():
    assert _run([1e6] * 4) == pytest.approx(1.0)


def test_one_connection_hogging_gives_one_over_n():
    assert _run([1e6, 0, 0, 0]) == pytest.approx(0.25, rel=0.02)
