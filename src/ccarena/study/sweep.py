"""Sweeps: `[sweep]` maps a setting's dotted path to a list of values, or to a generated
sequence; the cells are the cartesian product.

Paths: `<table>.<key>` (e.g. `bottleneck.buffer`, `study.duration`, `topology.pairs`,
`tcp.ecn`), `flow.<flow name>.<key>`, `hosts.<host>.<key>`, `hosts.<host>.vm.<key>`,
`probe.<index>.<key>`.

Generated sequences (the throughput-versus-delay coursework adds 5x, x^2 and 2^x ms):
    "bottleneck.delay" = { generate = "linear", unit = "5ms", until = "64ms" }        # 0,5,..,60
    "bottleneck.delay" = { generate = "quadratic", unit = "1ms", from = 1, until = "64ms" }
    "bottleneck.delay" = { generate = "exponential", unit = "1ms", until = "64ms" }   # 1,2,..,64
value(x) = unit * f(x) for x = from, from+1, ...; f = x, x^2 or 2^x; values up to and
including `until` (or `count` values)."""
from __future__ import annotations

import itertools
from typing import Any

from ccarena import units
from ccarena.errors import SpecError

GENERATORS = {
    "linear": lambda x: x,
    "quadratic": lambda x: x * x,
    "exponential": lambda x: 2 ** x,
}
MAX_GENERATED = 10000


def expand_values(path: str, key: str, spec: Any) -> list:
    """A sweep entry -> its list of values (as strings/numbers a study file would hold)."""
    if isinstance(spec, list):
        if not spec:
            raise SpecError(path, f"sweep.{key}", "an empty list sweeps nothing; give values")
        return spec
    if not isinstance(spec, dict) or "generate" not in spec:
        raise SpecError(path, f"sweep.{key}", "expected a list of values or a table "
                        "{ generate = \"linear\"|\"quadratic\"|\"exponential\", unit = \"5ms\", "
                        "until = \"64ms\" }")
    extra = set(spec) - {"generate", "unit", "until", "from", "count"}
    if extra:
        raise SpecError(path, f"sweep.{key}.{sorted(extra)[0]}",
                        "unknown key; accepted: generate, unit, until, from, count")
    gen = spec["generate"]
    if gen not in GENERATORS:
        raise SpecError(path, f"sweep.{key}.generate",
                        f"{gen!r} is not one of: {', '.join(GENERATORS)}")
    unit = spec.get("unit", 1)
    try:
        step, suffix = units.split_quantity(unit)
    except ValueError as e:
        raise SpecError(path, f"sweep.{key}.unit", str(e)) from None
    start = spec.get("from", 0)
    if not isinstance(start, int) or start < 0:
        raise SpecError(path, f"sweep.{key}.from", "expected a non-negative integer")
    count = spec.get("count")
    until = spec.get("until")
    if (count is None) == (until is None):
        raise SpecError(path, f"sweep.{key}", "give exactly one of `until` or `count`")
    if until is not None:
        try:
            lim, lsuffix = units.split_quantity(until)
        except ValueError as e:
            raise SpecError(path, f"sweep.{key}.until", str(e)) from None
        if lsuffix != suffix:
            raise SpecError(path, f"sweep.{key}.until",
                            f"write it in the unit's own unit ({suffix or 'no unit'})")
    out = []
    f = GENERATORS[gen]
    for x in itertools.count(start):
        v = step * f(x)
        if until is not None and v > lim + 1e-12:
            break
        out.append(f"{v:g}{suffix}" if suffix else v)
        if count is not None and len(out) >= count:
            break
        if len(out) > MAX_GENERATED:
            raise SpecError(path, f"sweep.{key}", f"generates more than {MAX_GENERATED} values")
    if not out:
        raise SpecError(path, f"sweep.{key}", "generates no values")
    return out


def set_path(raw: dict, dotted: str, value, path: str) -> None:
    """Write `value` at a sweep path inside a raw study dict (in place)."""
    from ccarena.study.keys import (FLOW_KEYS, HOST_KEYS, LINK_KEYS, PROBE_KEYS,
                                      STUDY_KEYS, TCP_KEYS, TESTBED_KEYS, TOPOLOGY_KEYS,
                                      VM_KEYS)
    tables = {"study": STUDY_KEYS, "bottleneck": LINK_KEYS, "tcp": TCP_KEYS,
              "testbed": TESTBED_KEYS, "topology": TOPOLOGY_KEYS}
    parts = dotted.split(".")
    err = lambda reason: SpecError(path, f"sweep.\"{dotted}\"", reason)  # noqa: E731
    head = parts[0]
    if head in tables and len(parts) == 2:
        if parts[1] not in tables[head] or parts[1] == "extends":
            raise err(f"no setting {parts[1]!r} in [{head}]; sweepable there: "
                      + ", ".join(sorted(k for k in tables[head] if k != "extends")))
        raw.setdefault(head, {})[parts[1]] = value
        return
    if head == "flow" and len(parts) == 3:
        flows = raw.get("flow", [])
        match = [f for f in flows if isinstance(f, dict) and f.get("name") == parts[1]]
        if not match:
            names = [f.get("name") for f in flows if isinstance(f, dict) and f.get("name")]
            raise err(f"no flow named {parts[1]!r}; flows: {', '.join(names) or '(none named)'}")
        if parts[2] not in FLOW_KEYS or parts[2] == "name":
            raise err(f"flows have no sweepable setting {parts[2]!r}; accepted: "
                      + ", ".join(sorted(k for k in FLOW_KEYS if k != "name")))
        match[0][parts[2]] = value
        return
    if head == "hosts" and len(parts) == 3:
        if parts[2] not in HOST_KEYS:
            raise err(f"hosts have no setting {parts[2]!r}; accepted: " + ", ".join(HOST_KEYS))
        raw.setdefault("hosts", {}).setdefault(parts[1], {})[parts[2]] = value
        return
    if head == "hosts" and len(parts) == 4 and parts[2] == "vm":
        if parts[3] not in VM_KEYS:
            raise err(f"a host's vm has no setting {parts[3]!r}; accepted: "
                      + ", ".join(VM_KEYS))
        host = raw.setdefault("hosts", {}).setdefault(parts[1], {})
        if not isinstance(host.get("vm"), dict):
            host["vm"] = {}         # absent, or `vm = true`: the defaults
        host["vm"][parts[3]] = value
        return
    if head == "probe" and len(parts) == 3:
        probes = raw.get("probe", [])
        try:
            p = probes[int(parts[1])]
        except (ValueError, IndexError):
            raise err(f"no probe number {parts[1]!r} (there are {len(probes)})") from None
        if parts[2] not in PROBE_KEYS:
            raise err(f"probes have no setting {parts[2]!r}; accepted: " + ", ".join(PROBE_KEYS))
        p[parts[2]] = value
        return
    raise err("no such setting; write <table>.<key> (bottleneck, study, tcp, testbed, "
              "topology), flow.<name>.<key>, hosts.<host>.<key>, hosts.<host>.vm.<key> or "
              "probe.<index>.<key>")


def _copy(v):
    """A copy of TOML data (tables, arrays, scalars), as copy.deepcopy makes it but several
    times faster: a study's every cell, at every scale, starts from one."""
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_copy(x) for x in v)
    return v


def cells(raw: dict, path: str) -> list[tuple[dict, dict]]:
    """-> [(params, raw_for_cell)], params = {sweep path: value}; one empty cell if no sweep."""
    sw = raw.get("sweep", {})
    if not isinstance(sw, dict):
        raise SpecError(path, "sweep", "expected a table of \"path\" = [values]")
    keys = list(sw)
    lists = [expand_values(path, k, sw[k]) for k in keys]
    out = []
    for combo in itertools.product(*lists) if keys else [()]:
        r = _copy({k: v for k, v in raw.items() if k != "sweep"})
        for k, v in zip(keys, combo):
            set_path(r, k, v, path)
        out.append((dict(zip(keys, combo)), r))
    return out
