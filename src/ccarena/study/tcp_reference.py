"""The reference kernel's TCP defaults, and which of them a study leaves to the host.

Contract:
- `REFERENCE_TCP`: the settings that decide how a TCP connection behaves (buffers and
  their autotuning, initial window, loss recovery, segmentation, pacing ratios, metrics
  caching ...), as the reference kernel (Debian's 6.12, docs/vm.md) sets them in a fresh
  network namespace. The one place these values live.
- `pinned(study)`: per host, the settings the study itself sets (`[tcp]`, `[tcp.sysctl]`,
  `[hosts.*].sysctl`, `tcp.initcwnd`), so the host's own default cannot decide them.
- `left_to_host(study, values)`: the settings a study leaves to the host whose value here
  (`values`, read on this machine) differs from the reference kernel's, one row each.
Pure: no file, process or network access.

Source of the values: read in ccarena's reference VM (`ccarena vm -- sh` printing
/proc/sys/net/ipv4/tcp_* and net.core.*, kernel 6.12.95+deb12-amd64, 2 vCPUs, 2 GiB), in
the initial namespace and in a fresh one (as every run's hosts are): the same values.
tcp_rmem[2] and tcp_wmem[2] shrink on machines with little memory (the kernel's
documentation: "between 131072 and 6MB, depending on RAM size"); with 2 GiB they are at
their ceiling. The initial congestion window is no
sysctl: it is TCP_INIT_CWND (10 segments, include/net/tcp.h) unless a route says
otherwise (`ip route ... initcwnd N`, what `tcp.initcwnd` sets).
"""
from __future__ import annotations

REFERENCE_KERNEL = "6.12.95+deb12-amd64"
# the route attribute, named as `ip route` shows it; not a sysctl
INITCWND = "route initcwnd"

REFERENCE_TCP: dict[str, str] = {
    # buffers: what a socket may hold, and the window it can advertise
    "net.ipv4.tcp_rmem": "4096 131072 6291456",
    "net.ipv4.tcp_wmem": "4096 16384 4194304",
    "net.ipv4.tcp_moderate_rcvbuf": "1",
    "net.ipv4.tcp_adv_win_scale": "1",         # ignored since Linux 6.6 (scaling_ratio)
    "net.ipv4.tcp_app_win": "31",
    "net.ipv4.tcp_window_scaling": "1",
    "net.ipv4.tcp_shrink_window": "0",
    "net.ipv4.tcp_workaround_signed_windows": "0",
    "net.ipv4.tcp_notsent_lowat": "4294967295",
    "net.core.rmem_max": "212992",             # caps SO_RCVBUF / SO_SNDBUF requests
    "net.core.wmem_max": "212992",
    "net.core.rmem_default": "212992",
    "net.core.wmem_default": "212992",
    # the start of a connection and after idle
    INITCWND: "10",
    "net.ipv4.tcp_slow_start_after_idle": "1",
    "net.ipv4.tcp_no_ssthresh_metrics_save": "1",
    "net.ipv4.tcp_timestamps": "1",
    "net.ipv4.tcp_syn_retries": "6",
    "net.ipv4.tcp_synack_retries": "5",
    # loss detection and recovery
    "net.ipv4.tcp_recovery": "1",              # RACK
    "net.ipv4.tcp_early_retrans": "3",         # tail loss probe
    "net.ipv4.tcp_frto": "2",
    "net.ipv4.tcp_dsack": "1",
    "net.ipv4.tcp_reordering": "3",
    "net.ipv4.tcp_max_reordering": "300",
    "net.ipv4.tcp_retrans_collapse": "1",
    "net.ipv4.tcp_rto_min_us": "200000",
    "net.ipv4.tcp_retries1": "3",
    "net.ipv4.tcp_retries2": "15",
    "net.ipv4.tcp_thin_linear_timeouts": "0",
    "net.ipv4.tcp_min_rtt_wlen": "300",
    "net.ipv4.tcp_ecn_fallback": "1",
    # segmentation, pacing, small queues, ACKs
    "net.ipv4.tcp_limit_output_bytes": "1048576",
    "net.ipv4.tcp_autocorking": "1",
    "net.ipv4.tcp_min_tso_segs": "2",
    "net.ipv4.tcp_tso_win_divisor": "3",
    "net.ipv4.tcp_tso_rtt_log": "9",
    "net.ipv4.tcp_pacing_ss_ratio": "200",
    "net.ipv4.tcp_pacing_ca_ratio": "120",
    "net.ipv4.tcp_comp_sack_delay_ns": "1000000",
    "net.ipv4.tcp_comp_sack_slack_ns": "100000",
    "net.ipv4.tcp_comp_sack_nr": "44",
    "net.ipv4.tcp_backlog_ack_defer": "1",
    # path MTU
    "net.ipv4.tcp_mtu_probing": "0",
    "net.ipv4.tcp_base_mss": "1024",
    "net.ipv4.tcp_mtu_probe_floor": "48",
    "net.ipv4.tcp_min_snd_mss": "48",
    "net.ipv4.tcp_probe_interval": "600",
    "net.ipv4.tcp_probe_threshold": "8",
}


def pinned(study) -> dict[str, set[str]]:
    """host -> the settings the study sets for it (whatever the host's defaults)."""
    common = set(study.tcp.sysctls())
    if getattr(study.tcp, "initcwnd", None):
        common.add(INITCWND)
    return {h: common | set((study.hosts.get(h).sysctl if study.hosts.get(h) else {}))
            for h in study.host_names}


def _host_order(h: str):
    """s1, s2, ..., r1, r2, ...: senders first, by number."""
    return (h[:1] != "s", int(h[1:]) if h[1:].isdigit() else 0, h)


def _norm(v) -> str | None:
    return None if v is None else " ".join(str(v).split())


def left_to_host(study, values: dict[str, str | None]) -> list[tuple[str, str, str, str]]:
    """(setting, hosts that leave it, value here, reference value) for every setting of
    REFERENCE_TCP that some host of the study leaves to the machine and whose value here
    differs from the reference kernel's ("absent" where this kernel has no such setting).
    Over every cell of a sweep: a setting a cell sweeps is pinned in that cell."""
    cells = [c.study for c in study.cells] if getattr(study, "cells", None) else [study]
    out: dict[str, set[str]] = {}
    for s in cells:
        for host, keys in pinned(s).items():
            for k in REFERENCE_TCP:
                if k not in keys:
                    out.setdefault(k, set()).add(host)
    rows = []
    for k, hosts in out.items():
        here, ref = _norm(values.get(k)), REFERENCE_TCP[k]
        if here != ref:
            rows.append((k, ", ".join(sorted(hosts, key=_host_order)),
                         here if here is not None else "absent", ref))
    return rows


def format_rows(rows, where: str = "here") -> list[str]:
    """One line per setting: 'net.ipv4.tcp_rmem = 4096 131072 33554432 here, reference
    4096 131072 6291456 (s1, r1)'."""
    return [f"{k} = {v} {where}, reference {ref} ({hosts})" for k, hosts, v, ref in rows]
