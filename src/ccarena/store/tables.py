"""The tables of a results directory: one list, used by everything that reads or writes one.

Per run (runs/<label>/<table>.parquet; each row has run_id, and t in seconds from t0 where
the table has t_ns) — columns: docs/dev/contracts.md §5:"""
from __future__ import annotations

RUN_TABLES = {
    "tcpinfo": "TCP_INFO samples of every connection (flow engine)",
    "rx": "bytes received per flow and interval (flow engine, receiver side)",
    "conns": "one row per connection: ends, algorithm the kernel ran, times, errors",
    "rr": "request/response latencies (rr flows)",
    "ping": "ping probes: one row per echo",
    "udp": "UDP probes: one row per datagram (rtt_s NaN when lost)",
    "tcpprobe": "per-ACK tcp:tcp_probe records (tcp_probe probes)",
    "link_stats": "the bottleneck queue per interval and direction (either link backend)",
    "link_events": "per-packet events of the user-space link (with --event-log)",
    "commands": "command flows: command line, exit status, output tails",
}
RUN_METRICS = "flow_metrics"     # runs/<label>/flow_metrics.parquet: metrics per flow
STUDY_TABLES = {
    "runs": "one row per run: run metrics, validity, swept factors",
    "flows": "per run, one row per flow (conn = -1) and one per connection of a flow "
             "with several (conn >= 0)",
    "cells": "statistics per cell, flow and algorithm over the valid repetitions",
}
