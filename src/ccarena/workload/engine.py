"""Study flows -> one ccarena-flow config per host (contract §2), and the processes.

Roles: for bulk, parallel and paced flows the data sender connects (client) to a listener on
the receiver; for download and rr the receiver connects and the data sender serves. Each
flow has its own listener port (FlowSpec.port, study.resolve) so a server-side algorithm
can be chosen per flow."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ccarena.paths import require_binary
from ccarena.testbed.proc import NsProcess
from ccarena.study.model import FlowSpec, Study
from ccarena.study.resolve import PROBE_FLOW_ID, UDP_PROBE_PORT
from ccarena.testbed.topology import Topology

END_GRACE_S = 0.5
CLIENT_SENDS = {"bulk", "parallel", "paced"}


def roles(f: FlowSpec) -> tuple[str, str]:
    """-> (client host, server host)."""
    return (f.src, f.dst) if f.kind in CLIENT_SENDS else (f.dst, f.src)


def algorithms_of(study: Study) -> dict[int, tuple[str, str]]:
    """flow index -> (client algorithm, server algorithm), as study names."""
    out = {}
    for i, f in enumerate(study.flows):
        if f.kind == "command":
            continue
        other = f.receiver_cc
        out[i] = (f.cc, other) if f.kind in CLIENT_SENDS else (other, f.cc)
    return out


def _ns(x: float | None) -> int | None:
    return None if x is None else int(round(x * 1e9))


def host_configs(study: Study, topo: Topology, raw_dir: Path, kernel_names: dict[str, str],
                 seed: int) -> dict[str, dict]:
    """-> {host: config}; hosts without flows get no engine."""
    dur = study.duration_s
    cfgs: dict[str, dict] = {}

    def cfg(host):
        if host not in cfgs:
            cfgs[host] = {"host": host, "out_dir": str(raw_dir / host),
                          "sample_interval_ns": _ns(study.sample_interval_s),
                          "end_ns": _ns(dur + END_GRACE_S), "listen": [], "flows": []}
        return cfgs[host]

    algs = algorithms_of(study)
    for i, f in enumerate(study.flows):
        if f.kind == "command":
            continue
        client, server = roles(f)
        ccl, ccs = algs[i]
        port = f.port
        cfg(server)["listen"].append({"port": port, "cc": kernel_names.get(ccs, ccs)})
        fl = {"flow": i, "kind": f.kind, "dst": topo.host_ip[server], "port": port,
              "cc": kernel_names.get(ccl, ccl), "start_ns": _ns(f.start_s),
              "stop_ns": _ns(f.stop_s if f.stop_s is not None else dur), "conns": f.conns,
              "bytes": f.bytes, "seed": (seed * 1000003 + i) % 2**31}
        if f.kind == "download":
            fl.update(size=f.size, count=f.count, every_ns=_ns(f.every_s))
        elif f.kind == "paced":
            fl.update(write_bytes=f.write, gap_ns=_ns(f.gap_s), gap_dist=f.gap_dist)
        elif f.kind == "rr":
            fl.update(request_bytes=f.request, response_bytes=f.response, count=f.count,
                      gap_ns=_ns(f.gap_s))
        cfg(client)["flows"].append(fl)
    for j, p in enumerate(study.probes):
        if p.kind != "udp":
            continue
        port = UDP_PROBE_PORT + j
        cfg(p.dst)["listen"].append({"port": port, "proto": "udp_echo"})
        cfg(p.src)["flows"].append({"flow": PROBE_FLOW_ID + j, "kind": "udp_probe",
                                    "dst": topo.host_ip[p.dst], "port": port,
                                    "interval_ns": _ns(p.interval_s), "size": p.size,
                                    "start_ns": 0, "stop_ns": _ns(dur)})
    return cfgs


class Engines:
    """All ccarena-flow processes of a run."""

    def __init__(self, topo: Topology, cfgs: dict[str, dict], raw_dir: Path,
                 cgroups: dict | None = None):
        self.cgroups = cgroups or {}
        self.binary = require_binary("ccarena-flow", "the flow engine")
        self.procs: dict[str, NsProcess] = {}
        self.topo, self.cfgs, self.raw_dir = topo, cfgs, raw_dir

    def start(self, ready_timeout_s: float = 10.0) -> None:
        for host, c in self.cfgs.items():
            Path(c["out_dir"]).mkdir(parents=True, exist_ok=True)
            p = self.raw_dir / host / "engine.config.json"
            p.write_text(json.dumps(c, indent=1))
            self.procs[host] = NsProcess(f"ccarena-flow@{host}", self.topo.ns(host),
                                         [self.binary, "--config", str(p)],
                                         self.raw_dir / "logs",
                                         cgroup=self.cgroups.get(host))
        for p in self.procs.values():
            p.wait_line("READY", ready_timeout_s)

    def go(self, lead_s: float = 0.1) -> int:
        t0 = time.monotonic_ns() + int(lead_s * 1e9)
        self.go_at(t0)
        return t0

    def go_at(self, t0_ns: int) -> None:
        for p in self.procs.values():
            p.send(f"GO {t0_ns}\n")

    def wait(self, timeout_s: float) -> dict[str, int | None]:
        deadline = time.monotonic() + timeout_s
        rcs = {}
        for host, p in self.procs.items():
            rcs[host] = p.wait(max(0.0, deadline - time.monotonic()))
        return rcs

    def stop(self) -> None:
        for p in self.procs.values():
            p.terminate()

    def failures(self, rcs: dict) -> list[str]:
        out = []
        for host, rc in rcs.items():
            if rc != 0:
                p = self.procs[host]
                why = "did not finish in time" if rc is None else f"exit {rc}"
                tail = p.stderr_tail(3)
                out.append(f"ccarena-flow@{host} {why}" + (f": {tail}" if tail else ""))
        return out
