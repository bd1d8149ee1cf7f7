"""Per-ACK tracing (`[[probe]] kind = "tcp_probe"`): ccarena-trace, a BPF program on the
kernel's tcp:tcp_probe tracepoint, filtered in the kernel to the run's own namespaces and
ports (docs/probes.md, contracts §6). It runs in the root namespace; its attachment ends
with the process, so a crash leaves nothing attached."""
from __future__ import annotations

import json
from pathlib import Path

from ccarena.testbed import netns
from ccarena.paths import require_binary
from ccarena.testbed.proc import NsProcess
from ccarena.study.resolve import BASE_PORT, MAX_FLOW_PORTS

PORTS = f"{BASE_PORT}-{BASE_PORT + MAX_FLOW_PORTS - 1}"


class Tracer:
    def __init__(self, namespaces: list[str], raw_dir: Path):
        self.out = raw_dir / "trace"
        self.out.mkdir(parents=True, exist_ok=True)
        argv = [require_binary("ccarena-trace", "the tcp_probe tracer"), "--out", str(self.out),
                "--ports", PORTS]
        for ns in namespaces:
            argv += ["--netns", netns.path(ns)]
        self.proc = NsProcess("ccarena-trace", None, argv, raw_dir / "logs", stdin=False)
        self.proc.wait_line("READY", 15.0)

    def stop(self) -> dict:
        self.proc.terminate(timeout_s=10.0)
        p = self.out / "trace.json"
        return json.loads(p.read_text()) if p.exists() else {}
