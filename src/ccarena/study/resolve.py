"""The one place where a study's defaults become values.

A study file leaves much unsaid: the reverse rate, RED's thresholds, CoDel's target, the
algorithm of a flow's receiver, the port a flow listens on. Every backend and every
record needs the same answer, so it is decided here, once per cell, into typed fields:

- `LinkSpec.reverse_rate_bps`: the rate of the e2w direction (the forward rate unless
  `reverse_rate` is given); `LinkSpec.reverse_delay_s` its one-way delay (the forward
  delay unless `reverse_delay` is given);
- `LinkSpec.queue_params`: the queue's parameters in SI units (RedParams, CodelParams,
  FqCodelParams, StepParams, ClassesParams; None for droptail), thresholds in the unit
  the user wrote them in (packets or bytes);
- `FlowSpec.receiver_cc`: the other end's algorithm (the receiving host's `cc`, else
  DEFAULT_CC, declared in study.model); `FlowSpec.cc` is resolved by the schema the same way;
- `FlowSpec.port`: the flow's listener port (BASE_PORT + the flow's index; the port plan
  of docs/dev/contracts.md).

The defaults (docs/study-format.md, "Queue parameters"):
    red       min = buffer/10 (at least 5 packets), max = min(3·min, buffer − 1),
              max_p = 0.1, weight = 0.002
    codel     target = 5 ms, interval = 100 ms (RFC 8289 §4.2, §4.3)
    fq_codel  the same, flows = 1024, quantum = one MTU frame (RFC 8290 §4.1, §5.3)
    step      k = 20 packets
Errors are ValueError(key, reason) for the schema to turn into SpecError."""
from __future__ import annotations

from dataclasses import dataclass

from ccarena import units
from ccarena.study.model import DEFAULT_CC

BASE_PORT = 5000          # flow i listens on BASE_PORT + i (port plan, contracts §2)
PROBE_FLOW_ID = 10000     # + probe index: flow ids of UDP probes (not study flows)
UDP_PROBE_PORT = 7000     # + probe index: UDP echo listeners
MAX_FLOW_PORTS = 1000     # ports BASE_PORT .. BASE_PORT + 999 belong to flows

RED_DEFAULT_MAX_P = 0.1
RED_DEFAULT_WEIGHT = 0.002
CODEL_DEFAULT_TARGET_S = 0.005
CODEL_DEFAULT_INTERVAL_S = 0.100
FQ_CODEL_DEFAULT_FLOWS = 1024
STEP_DEFAULT_K = "20p"


class AqmError(ValueError):
    """A queue parameter that cannot be used: `key` under bottleneck.aqm, and why."""

    def __init__(self, key: str, reason: str):
        self.key, self.reason = key, reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True)
class RedParams:
    unit: str            # "packets" | "bytes": what min_th and max_th count
    min_th: int
    max_th: int
    max_p: float
    weight: float


@dataclass(frozen=True)
class CodelParams:
    target_s: float
    interval_s: float


@dataclass(frozen=True)
class FqCodelParams:
    target_s: float
    interval_s: float
    flows: int
    quantum: int         # bytes


@dataclass(frozen=True)
class StepParams:
    unit: str            # "packets" | "bytes"
    k: int


@dataclass(frozen=True)
class ClassSpec:
    hosts: tuple[str, ...]
    flows: tuple[str, ...]
    ports: tuple[int, ...]
    protocols: tuple[str, ...]
    buffer: tuple[str, int] | None     # (kind, size) as Buffer takes it


@dataclass(frozen=True)
class ClassesParams:
    classes: tuple[ClassSpec, ...]
    default: int


QueueParams = RedParams | CodelParams | FqCodelParams | StepParams | ClassesParams | None


def threshold(v, what: str) -> tuple[str, int]:
    """A queue threshold as written -> (unit, count): "30p" or 30 are packets, "45KB" bytes."""
    if isinstance(v, bool):
        raise AqmError(what, f"expected packets like \"30p\" or a size, got {v!r}")
    if isinstance(v, int):
        unit, n = "packets", v
    else:
        try:
            unit, n = units.parse_buffer(v)
        except ValueError as e:
            raise AqmError(what, str(e)) from None
    if n <= 0:
        raise AqmError(what, f"must be positive, got {v!r}")
    return unit, n


def _fraction(a: dict, k: str, default: float) -> float:
    v = a.get(k, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise AqmError(k, f"must be in (0, 1], got {v!r}")
    return float(v)


def _time(a: dict, k: str, default: float) -> float:
    if k not in a:
        return default
    try:
        t = units.parse_time(a[k])
    except ValueError as e:
        raise AqmError(k, str(e)) from None
    if t <= 0:
        raise AqmError(k, f"must be a positive time, got {a[k]!r}")
    return t


def red_params(aqm: dict, buffer, mtu: int) -> RedParams:
    frame = mtu + 14
    limit_pk = buffer.packets(mtu)
    lo_unit, lo = threshold(aqm["min"], "min") if "min" in aqm else \
        ("packets", max(5, limit_pk // 10))
    if "max" in aqm:
        hi_unit, hi = threshold(aqm["max"], "max")
    elif lo_unit == "packets":
        hi_unit, hi = "packets", min(3 * lo, limit_pk - 1)
    else:
        hi_unit, hi = "bytes", min(3 * lo, buffer.bytes(mtu) - frame)
    if lo_unit != hi_unit:     # one unit for both: the finer one
        lo, hi = (lo * frame if lo_unit == "packets" else lo,
                  hi * frame if hi_unit == "packets" else hi)
        lo_unit = hi_unit = "bytes"
    limit = limit_pk if lo_unit == "packets" else buffer.bytes(mtu)
    if not lo < hi:
        if "min" not in aqm and "max" not in aqm:
            raise AqmError("min", f"the buffer ({limit_pk} packets) is too small for RED's "
                           "default thresholds (min = buffer/10 but at least 5 packets, "
                           "max = 3*min below the buffer): give a buffer of 7 packets or "
                           "more, or min and max")
        raise AqmError("max", f"RED thresholds out of order: min {lo} must be below max "
                       f"{hi} ({lo_unit})")
    if hi > limit:
        raise AqmError("max", f"RED max threshold {hi} is above the buffer ({limit} "
                       f"{lo_unit})")
    return RedParams(unit=lo_unit, min_th=lo, max_th=hi,
                     max_p=_fraction(aqm, "max_p", RED_DEFAULT_MAX_P),
                     weight=_fraction(aqm, "weight", RED_DEFAULT_WEIGHT))


def classes_params(aqm: dict) -> ClassesParams:
    cls = aqm.get("classes")
    if not isinstance(cls, list) or not cls:
        raise AqmError("classes", "a list of class tables is needed, e.g. "
                       "[ { flows = [\"web\"] }, { } ]")
    out = []
    for i, c in enumerate(cls):
        if not isinstance(c, dict):
            raise AqmError(f"classes[{i}]", "expected a table")
        for k in c:
            if k not in CLASS_KEYS:
                raise AqmError(f"classes[{i}].{k}", "unknown key; accepted: "
                               + ", ".join(sorted(CLASS_KEYS)))
        protos = tuple(c.get("protocols", []))
        for p in protos:
            if p not in ("icmp", "tcp", "udp"):
                raise AqmError(f"classes[{i}].protocols", f"{p!r} is not one of: icmp, "
                               "tcp, udp")
        buf = None
        if "buffer" in c:
            try:
                buf = units.parse_buffer(c["buffer"])
            except ValueError as e:
                raise AqmError(f"classes[{i}].buffer", str(e)) from None
        out.append(ClassSpec(hosts=tuple(c.get("hosts", [])), flows=tuple(c.get("flows", [])),
                             ports=tuple(c.get("ports", [])), protocols=protos, buffer=buf))
    d = aqm.get("default", len(cls) - 1)
    if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < len(cls):
        raise AqmError("default", f"must be a class index 0..{len(cls) - 1}")
    return ClassesParams(classes=tuple(out), default=d)


CLASS_KEYS = {"hosts", "flows", "ports", "protocols", "buffer"}
AQM_KEYS = {
    "droptail": set(), "red": {"min", "max", "max_p", "weight"},
    "codel": {"target", "interval"}, "fq_codel": {"target", "interval", "flows", "quantum"},
    "step": {"k"}, "classes": {"classes", "default"},
}


def queue_params(queue: str, aqm: dict, buffer, mtu: int) -> QueueParams:
    """The queue's parameters with every default applied (AqmError on a bad value)."""
    known = set().union(*AQM_KEYS.values())
    for k in aqm:     # a swept queue keeps every queue's keys in one table
        if k not in known:
            raise AqmError(k, f"not a parameter of any queue; queue {queue!r} takes: "
                           + (", ".join(sorted(AQM_KEYS[queue])) or "none"))
    if queue == "red":
        return red_params(aqm, buffer, mtu)
    if queue in ("codel", "fq_codel"):
        target = _time(aqm, "target", CODEL_DEFAULT_TARGET_S)
        interval = _time(aqm, "interval", CODEL_DEFAULT_INTERVAL_S)
        if queue == "codel":
            return CodelParams(target, interval)
        flows = aqm.get("flows", FQ_CODEL_DEFAULT_FLOWS)
        if isinstance(flows, bool) or not isinstance(flows, int) or flows < 1:
            raise AqmError("flows", "must be a positive integer")
        try:
            quantum = units.parse_size(aqm["quantum"]) if "quantum" in aqm else mtu + 14
        except ValueError as e:
            raise AqmError("quantum", str(e)) from None
        if quantum < 64:
            raise AqmError("quantum", "must be at least 64 bytes")
        return FqCodelParams(target, interval, flows, quantum)
    if queue == "step":
        unit, k = threshold(aqm.get("k", STEP_DEFAULT_K), "k")
        return StepParams(unit, k)
    if queue == "classes":
        return classes_params(aqm)
    return None


def resolve(study) -> None:
    """Fill the resolved fields of one cell's Study in place (see the module doc).
    Raises AqmError for a queue parameter that cannot be used."""
    b = study.bottleneck
    if b.reverse_rate_bps is None:
        b.reverse_rate_bps = b.rate_bps
    if b.reverse_delay_s is None:
        b.reverse_delay_s = b.delay_s
    b.queue_params = queue_params(b.queue, b.aqm, b.buffer, study.mtu)
    for i, f in enumerate(study.flows):
        f.port = BASE_PORT + i
        if f.kind == "command":
            continue
        if f.receiver_cc is None:
            hs = study.hosts.get(f.dst)
            f.receiver_cc = hs.cc if hs and hs.cc else DEFAULT_CC


def port_of(study, flow_name: str) -> int:
    """The listener port of a study flow (resolved)."""
    for f in study.flows:
        if f.name == flow_name:
            return f.port
    raise KeyError(flow_name)
