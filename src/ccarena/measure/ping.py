"""ICMP RTT probe: the system `ping` inside a host namespace, parsed by a pure function.

`ping -D` stamps replies with wall-clock time; the probe records the CLOCK_MONOTONIC -
CLOCK_REALTIME offset at start so samples line up with the other records."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd

from ccarena.testbed.proc import NsProcess

_REPLY = re.compile(r"^\[(\d+\.\d+)\].*icmp_seq=(\d+).*time=([\d.]+) ms")
_NOANSWER = re.compile(r"^\[(\d+\.\d+)\].*no answer yet for icmp_seq=(\d+)")


def parse(text: str, mono_minus_real_ns: int) -> pd.DataFrame:
    """ping -D -O output -> DataFrame(t_ns, seq, rtt_s); unanswered seqs get rtt_s NaN."""
    rows = {}
    for line in text.splitlines():
        m = _REPLY.match(line)
        if m:
            t = int(float(m.group(1)) * 1e9) + mono_minus_real_ns
            rtt = float(m.group(3)) / 1e3
            # reply time stamps the arrival; the probe was sent rtt earlier
            rows[int(m.group(2))] = (t - int(rtt * 1e9), rtt)
            continue
        m = _NOANSWER.match(line)
        if m and int(m.group(2)) not in rows:
            rows[int(m.group(2))] = (int(float(m.group(1)) * 1e9) + mono_minus_real_ns,
                                     float("nan"))
    df = pd.DataFrame([(t, s, r) for s, (t, r) in sorted(rows.items())],
                      columns=["t_ns", "seq", "rtt_s"])
    return df


class PingProbe:
    def __init__(self, name: str, ns: str, dst_ip: str, interval_s: float, duration_s: float,
                 log_dir: Path):
        self.name = name
        self.offset = time.monotonic_ns() - time.time_ns()
        count = max(1, int(duration_s / interval_s))
        self.out_path = log_dir / f"ping-{name}.txt"
        self.proc = NsProcess(f"ping-{name}", ns, ["ping", "-D", "-O", "-n", "-i",
                              f"{interval_s:.3f}", "-c", str(count), "-W", "2", dst_ip],
                              log_dir, stdin=False)

    def finish(self, timeout_s: float) -> pd.DataFrame:
        try:
            out, _ = self.proc.p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            out, _ = self.proc.p.communicate(timeout=5)
        text = (out or b"").decode(errors="replace")
        self.out_path.write_text(text)
        self.proc.close()
        df = parse(text, self.offset)
        df.insert(0, "probe", self.name)
        return df
