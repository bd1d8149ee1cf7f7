"""User-space link backend: ccarena-link in the link namespace (contract §3)."""
from __future__ import annotations

import json
from pathlib import Path

from ..paths import require_binary
from ..proc import NsProcess
from ..spec.model import LinkSpec, Study
from .topology import Topology


def _queue(link: LinkSpec) -> dict:
    q = {"kind": link.queue}
    q.update(link.aqm)
    return q


def _direction(link: LinkSpec, rate_bps, loss: float, study: Study) -> dict:
    d = {
        "rate_bps": rate_bps, "rate_schedule": link.aqm.get("rate_schedule"),
        "trace_file": link.aqm.get("trace_file"), "delay_ns": int(round(link.delay_s * 1e9)),
        "jitter": ({"kind": "uniform", "max_ns": int(link.jitter_s * 1e9)}
                   if link.jitter_s > 0 else None),
        "loss": {"kind": "bernoulli", "p": loss} if loss > 0 else None,
        "buffer": {link.buffer.kind: link.buffer.size},
        "queue": _queue(link), "ecn": link.ecn,
    }
    return d


def make_config(topo: Topology, study: Study, out_dir: Path, seed: int,
                event_log: bool = False) -> dict:
    b = study.bottleneck
    hosts = []
    for h, hs in study.hosts.items():
        if hs.delay_s > 0 or hs.loss > 0:
            hosts.append({"ip": topo.host_ip[h], "delay_ns": int(round(hs.delay_s * 1e9)),
                          "loss": ({"kind": "bernoulli", "p": hs.loss} if hs.loss > 0 else None)})
    return {
        "ifaces": {"west": "lw", "east": "le"},
        "out_dir": str(out_dir),
        "stats_interval_ns": 10_000_000,
        "event_log": event_log,
        "late_tolerance_ns": 100_000,
        "seed": seed,
        "w2e": _direction(b, b.rate_bps, b.loss, study),
        "e2w": _direction(b, b.reverse_rate_bps or b.rate_bps, 0.0, study),
        "hosts": hosts,
    }


def start(topo: Topology, study: Study, raw_dir: Path, seed: int,
          event_log: bool = False) -> NsProcess:
    out = raw_dir / "link"
    out.mkdir(parents=True, exist_ok=True)
    cfg = make_config(topo, study, out, seed, event_log)
    cfg_path = out / "link.config.json"
    cfg_path.write_text(json.dumps(cfg, indent=1))
    binary = require_binary("ccarena-link", "the user-space link emulator")
    p = NsProcess("ccarena-link", topo.routers["ln"], [binary, "--config", str(cfg_path)],
                  raw_dir / "logs", stdin=False)
    p.wait_line("READY", 10.0)
    return p
