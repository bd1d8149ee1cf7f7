"""Raw TOML dict -> Study. The keys and their parsers are declared in study.keys; here they
are applied, with the rules that tie keys together (a flow's hosts exist, a probe kind's
keys, ...). An unknown key, a wrong type or a bad unit raises SpecError(file, key, what is
accepted), with a "did you mean" for a near miss."""
from __future__ import annotations

import difflib
import re
from typing import Any, Callable

from ccarena import units
from ccarena.cc import variants
from ccarena.cc.catalog import PREFIX, known_names, shipped_bpf
from ccarena.errors import SpecError
from ccarena.study.keys import (EXPECT_KEYS, FLOW_KEYS, HOST_KEYS, LINK_KEYS, PROBE_KEYS,
                               PROBE_SHAPES, STUDY_KEYS, SYNONYMS, TCP_KEYS, TESTBED_KEYS, TOP_KEYS,
                               TOPOLOGY_KEYS)
from ccarena.study.expect import check_bounds
from ccarena.study.impair import ImpairError, parse_loss_model
from ccarena.study.model import (DEFAULT_CC, Buffer, FlowSpec, HostSpec, LinkSpec, ProbeSpec, Study,
                                 TcpSettings, VmSpec)
from ccarena.study.resolve import AqmError, resolve

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class Ctx:
    """Where we are in the file, for error messages."""

    def __init__(self, path: str, extra_algorithms=(), algorithms=None):
        self.path = path
        # the names a study may use (cc.catalog); whether one runs here is preflight's.
        # `algorithms`: those names already looked up (a sweep's cells share them)
        self.algorithms = set(algorithms) if algorithms is not None else \
            known_names() | set(extra_algorithms)

    def user_algorithms(self) -> set[str]:
        """The names a study may use that are the user's own BPF sources."""
        return {n for n in self.algorithms if not n.startswith(PREFIX) and not shipped_bpf(n)
                and PREFIX + n in self.algorithms}

    def err(self, key: str, reason: str) -> SpecError:
        return SpecError(self.path, key, reason)


def _take(ctx: Ctx, table: dict, prefix: str, spec: dict[str, Callable], required=()):
    """Parse `table` by `spec`; return {key: parsed}. Unknown keys are errors."""
    if not isinstance(table, dict):
        raise ctx.err(prefix, "expected a table")
    out = {}
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else k
        if k not in spec:
            near = [SYNONYMS[k]] if SYNONYMS.get(k) in spec else \
                difflib.get_close_matches(str(k), list(spec), n=1)
            word = f", ccarena's word for {k!r}" if SYNONYMS.get(k) in spec else ""
            raise ctx.err(key, "unknown key" + (f" (did you mean {near[0]!r}{word}?)" if near
                                                else "")
                          + "; accepted here: " + ", ".join(sorted(spec)))
        try:
            out[k] = spec[k](v)
        except ValueError as e:
            raise ctx.err(key, str(e)) from None
    for k in required:
        if k not in out:
            raise ctx.err(f"{prefix}.{k}" if prefix else k, "is required")
    return out


def _check_aqm(ctx: Ctx, study: Study) -> None:
    """Resolve the study's defaults (study.resolve); a queue parameter that cannot be used
    is a spec error naming its key under bottleneck.aqm, not a link failing at run time."""
    try:
        resolve(study)
    except AqmError as e:
        raise ctx.err(f"bottleneck.aqm.{e.key}", e.reason) from None


def build_study(raw: dict, path: str, extra_algorithms=(), algorithms=None) -> Study:
    """Validate a merged raw dict (no sweep applied) into a Study."""
    ctx = Ctx(path, extra_algorithms, algorithms)
    for k in raw:
        if k not in TOP_KEYS:
            near = difflib.get_close_matches(str(k), TOP_KEYS, n=1)
            raise ctx.err(k, "unknown table" + (f" (did you mean [{near[0]}]?)" if near else "")
                          + "; accepted: " + ", ".join(TOP_KEYS))
    st = _take(ctx, raw.get("study", {}), "study", STUDY_KEYS, required=("name", "duration"))
    if not _NAME.match(st["name"]):
        raise ctx.err("study.name", "use letters, digits, '-', '_' and '.' only")
    topo = _take(ctx, raw.get("topology", {}), "topology", TOPOLOGY_KEYS)
    study = Study(name=st["name"], path=path, duration_s=st["duration"],
                  warmup_s=st.get("warmup", 0.0), repetitions=st.get("repetitions", 1),
                  reruns=st.get("reruns", 1), seed=st.get("seed"),
                  shuffle=st.get("shuffle", True),
                  sample_interval_s=st.get("sample_interval", 0.01),
                  description=st.get("description", ""), pairs=topo.get("pairs", 1), raw=raw)
    if study.warmup_s >= study.duration_s:
        raise ctx.err("study.warmup", f"must be shorter than study.duration "
                      f"({study.duration_s:g} s)")

    bn = _take(ctx, raw.get("bottleneck", {}), "bottleneck", LINK_KEYS)
    study.bottleneck = _link(ctx, bn)
    if "trace" in bn:
        import os
        tp = os.path.join(os.path.dirname(os.path.abspath(path)), bn["trace"]) \
            if not os.path.isabs(bn["trace"]) else bn["trace"]
        if not os.path.isfile(tp):
            raise ctx.err("bottleneck.trace", f"no such trace file {tp!r}")
        study.bottleneck.trace = tp

    tcp = _take(ctx, raw.get("tcp", {}), "tcp", TCP_KEYS)
    study.tcp = TcpSettings(**tcp)
    tb = _take(ctx, raw.get("testbed", {}), "testbed", TESTBED_KEYS)
    study.offloads = tb.get("offloads", False)
    study.mtu = tb.get("mtu", 1500)
    every_vm = tb.get("vm")
    if study.bottleneck.queue != "droptail" and study.bottleneck.rate_bps is None:
        raise ctx.err("bottleneck.queue", f"{study.bottleneck.queue!r} needs a bottleneck.rate "
                      "(a queue only builds up behind a rate limit)")

    names = set(study.host_names)
    hosts_raw = raw.get("hosts", {})
    if not isinstance(hosts_raw, dict):
        raise ctx.err("hosts", "expected a table of host tables, e.g. [hosts.s1]")
    for h, hv in hosts_raw.items():
        if h not in names:
            raise ctx.err(f"hosts.{h}", f"no such host; this topology has: {_hosts(study)}")
        hs = _take(ctx, hv, f"hosts.{h}", HOST_KEYS)
        if "cc" in hs:
            _check_alg(ctx, f"hosts.{h}.cc", hs["cc"])
        vm = _vm(ctx, h, hs, every_vm) if "vm" in hs or every_vm is not None else None
        study.hosts[h] = HostSpec(name=h, delay_s=hs.get("delay", 0.0), loss=hs.get("loss", 0.0),
                                  cc=hs.get("cc"), sysctl=hs.get("sysctl", {}),
                                  cpus=None if vm else hs.get("cpus"), cpuset=hs.get("cpuset"),
                                  memory=None if vm else hs.get("memory"), vm=vm)
    if every_vm is not None:
        for h in study.host_names:
            if h not in study.hosts:
                study.hosts[h] = HostSpec(name=h, vm=_vm(ctx, h, {}, every_vm))

    flows_raw = raw.get("flow", [])
    if not isinstance(flows_raw, list):
        raise ctx.err("flow", "write flows as [[flow]] tables")
    flows_raw = _expand_flows(ctx, flows_raw, study.pairs)
    seen = set()
    for i, fv in enumerate(flows_raw):
        label = f"flow[{i}]" if not (isinstance(fv, dict) and "name" in fv) else f"flow.{fv['name']}"
        is_cmd = isinstance(fv, dict) and fv.get("kind") == "command"
        f = _take(ctx, fv, label, FLOW_KEYS,
                  required=("host", "run") if is_cmd else ("from", "to"))
        study.flows.append(_command(ctx, study, label, f, i, seen) if is_cmd
                           else _flow(ctx, study, label, f, i, seen))

    _check_command_ports(ctx, study)
    _check_vm_hosts(ctx, study)
    probes_raw = raw.get("probe", [])
    if not isinstance(probes_raw, list):
        raise ctx.err("probe", "write probes as [[probe]] tables")
    for i, pv in enumerate(probes_raw):
        label = f"probe[{i}]"
        p = _take(ctx, pv, label, PROBE_KEYS, required=("kind",))
        takes, needs = PROBE_SHAPES[p["kind"]]
        for k in p:
            if k not in takes | {"name", "kind"}:
                raise ctx.err(f"{label}.{k}", f"does not apply to a {p['kind']} probe; it "
                              "takes: " + ", ".join(sorted(takes)))
        for k in needs:
            if k not in p:
                raise ctx.err(f"{label}.{k}", f"a {p['kind']} probe needs it")
        for end in ("from", "to"):
            if end in p and p[end] not in names:
                raise ctx.err(f"{label}.{end}", f"no such host {p[end]!r}; this topology has: "
                              f"{_hosts(study)}")
        for h in p.get("hosts", []):
            if h not in names:
                raise ctx.err(f"{label}.hosts", f"no such host {h!r}; this topology has: "
                              f"{_hosts(study)}")
        if p["kind"] == "ping" and p.get("from") in study.vm_hosts:
            raise ctx.err(f"{label}.from", f"{p['from']} is a VM host: ping runs in a "
                          "namespace; ping it from another host instead (from = "
                          f"\"{_peer(study, p['from'])}\", to = \"{p['from']}\")")
        if "from" in p and p["from"] == p["to"]:
            raise ctx.err(f"{label}.to", "a probe needs two different hosts")
        hosts = p.get("hosts") or ([f"s{k}" for k in range(1, study.pairs + 1)]
                                   if p["kind"] == "tcp_probe" else [])
        study.probes.append(ProbeSpec(name=p.get("name", f"{p['kind']}{i}"), kind=p["kind"],
                                      src=p.get("from"), dst=p.get("to"),
                                      interval_s=p.get("interval", 0.1 if p["kind"] == "ping"
                                                       else 0.01),
                                      size=p.get("size", 64), hosts=hosts,
                                      snaplen=p.get("snaplen", 128)))
    if not study.flows and not study.probes:
        raise ctx.err("flow", "a study needs at least one [[flow]] or [[probe]]")
    exp = raw.get("expect", [])
    if isinstance(exp, dict):
        exp = [exp]
    if not isinstance(exp, list):
        raise ctx.err("expect", "write checks as [[expect]] tables")
    for i, e in enumerate(exp):
        e = _take(ctx, e, f"expect[{i}]", EXPECT_KEYS, required=("metric",))
        # disabled flows count: a check may look at cells where its flow is switched off
        fnames = {f.get("name") for f in raw.get("flow", []) if isinstance(f, dict)}
        if "flow" in e and e["flow"] not in fnames:
            raise ctx.err(f"expect[{i}].flow", f"no flow named {e['flow']!r}")
        if "trend" in e and "over" not in e:
            raise ctx.err(f"expect[{i}].over", "a trend needs the swept factor it runs over")
        never = check_bounds(e)
        if never:
            raise ctx.err(f"expect[{i}].min", never)
    study.expect = exp
    _check_aqm(ctx, study)
    return study


def _link(ctx: Ctx, bn: dict) -> LinkSpec:
    """The bottleneck's parsed keys -> LinkSpec, with the rules that tie them together
    (the same for every backend: what one backend cannot do is the backend's to refuse,
    testbed.backend)."""
    if "rtt" in bn:
        for k in ("delay", "reverse_delay"):
            if k in bn:
                raise ctx.err("bottleneck.rtt", f"give either rtt (split over both directions) "
                              f"or {k} (one-way), not both")
        bn["delay"] = bn["rtt"] / 2
    model = None
    if "loss_model" in bn:
        try:
            model = parse_loss_model(bn["loss_model"])
        except ImpairError as e:
            raise ctx.err("bottleneck.loss_model" + (f".{e.key}" if e.key else ""),
                          e.reason) from None
        if bn.get("loss", 0.0) > 0:
            raise ctx.err("bottleneck.loss_model", "give either loss (independent losses) or "
                          "loss_model, not both")
    delay = bn.get("delay", 0.0)
    dist = bn.get("delay_distribution", "uniform")
    if dist != "uniform" and bn.get("jitter", 0.0) > 0:
        for k, v in (("delay", delay), ("reverse_delay", bn.get("reverse_delay", delay))):
            if v <= 0:
                raise ctx.err("bottleneck.delay_distribution", f"{dist} draws each delay "
                              f"around bottleneck.{k}, which is 0 (netem refuses a "
                              "distribution without a delay): give it a delay")
    jitter = bn.get("jitter", 0.0)
    for k, v in (("delay", delay), ("reverse_delay", bn.get("reverse_delay", delay))):
        if jitter > v:
            raise ctx.err("bottleneck.jitter", f"{jitter * 1e3:g} ms is larger than bottleneck."
                          f"{k} ({v * 1e3:g} ms): a delay cannot fall below 0, so netem and "
                          "ccarena-link would send every draw below it at once and the "
                          "delays would not have the spread asked for; give a jitter of at "
                          "most the delay")
    if bn.get("reorder", 0.0) > 0 and delay <= 0:
        raise ctx.err("bottleneck.reorder", "a reordered packet is one sent without the "
                      "delay, ahead of delayed ones: give bottleneck.delay > 0")
    buf = bn.get("buffer", ("packets", 1000))
    return LinkSpec(
        rate_bps=bn.get("rate"), delay_s=delay, jitter_s=bn.get("jitter", 0.0),
        loss=bn.get("loss", 0.0), buffer=Buffer(*buf), queue=bn.get("queue", "droptail"),
        aqm=bn.get("aqm", {}), ecn=bn.get("ecn", False), backend=bn.get("backend", "auto"),
        reverse_rate_bps=bn.get("reverse_rate"), rate_schedule=bn.get("rate_schedule", []),
        reverse_delay_s=bn.get("reverse_delay"),
        delay_distribution=bn.get("delay_distribution", "uniform"),
        delay_correlation=bn.get("delay_correlation", 0.0), loss_model=model,
        reorder=bn.get("reorder", 0.0), reorder_correlation=bn.get("reorder_correlation", 0.0),
        reorder_gap=bn.get("reorder_gap", 1), duplicate=bn.get("duplicate", 0.0),
        duplicate_correlation=bn.get("duplicate_correlation", 0.0),
        corrupt=bn.get("corrupt", 0.0), corrupt_correlation=bn.get("corrupt_correlation", 0.0))


def _vm(ctx: Ctx, h: str, hs: dict, every: dict | None) -> VmSpec:
    """The guest's spec: [testbed] vm, then [hosts.<h>] vm over it. A VM host's `cpus` and
    `memory` size the guest (whole vCPUs; its RAM), as vm.cpus and vm.memory do: a
    study sweeps a guest's size with the keys its namespace realisation limits."""
    own = hs.get("vm") or {}
    v = {**(every or {}), **own}
    if "cpuset" in hs:
        raise ctx.err(f"hosts.{h}.cpuset", "does not apply to a VM host (its vCPUs are QEMU's "
                      "threads; docs/hosts.md)")
    if "cpus" in hs:
        c = hs["cpus"]
        if c != int(c) or c < 1:
            raise ctx.err(f"hosts.{h}.cpus", f"a VM host's cpus are whole vCPUs, got {c:g}")
        hs = {**hs, "cpus": int(c)}
    if "memory" in hs and hs["memory"] < 128 * 2**20:
        raise ctx.err(f"hosts.{h}.memory", "a VM host's memory is its guest's: at least 128MiB")
    for k in ("cpus", "memory"):
        if k in hs:
            if k in own and own[k] != hs[k]:
                raise ctx.err(f"hosts.{h}.{k}", f"says {hs[k]:g} and hosts.{h}.vm.{k} says "
                              f"{own[k]:g}: give one")
            v[k] = hs[k]
    if "kernel" in v:
        import os
        kp = v["kernel"] if os.path.isabs(v["kernel"]) else os.path.join(
            os.path.dirname(os.path.abspath(ctx.path)), v["kernel"])
        if not os.path.isfile(kp):
            raise ctx.err(f"hosts.{h}.vm.kernel", f"no such kernel image {kp!r}")
        v["kernel"] = kp
    return VmSpec(**v)


def _peer(study: Study, h: str) -> str:
    return ("r" if h.startswith("s") else "s") + h[1:]


def _check_vm_hosts(ctx: Ctx, study: Study) -> None:
    """What runs in a VM host is the flow engine (and the per-ACK tracer): a command
    flow cannot run there."""
    for f in study.flows:
        if f.kind == "command" and f.src in study.vm_hosts:
            raise ctx.err(f"flow.{f.name}.host", f"{f.src} is a VM host: command flows run "
                          "in namespace hosts only")


def _expand_flows(ctx: Ctx, flows: list, pairs: int) -> list:
    """Drop flows with enabled = false; replicate each_pair = true flows once per pair
    from first_pair (default 1) up (s<i> -> r<i>, named <name>.<i>; from/to say which side
    sends: "s" or "r"). first_pair leaves the lower pairs to other flows, e.g. one flow
    on pair 1 against N-1 of another algorithm on the rest."""
    out = []
    for i, f in enumerate(flows):
        if not isinstance(f, dict):
            raise ctx.err(f"flow[{i}]", "expected a table")
        label = f"flow.{f.get('name', i)}"
        for k in ("enabled", "each_pair"):
            if k in f and not isinstance(f[k], bool):
                raise ctx.err(f"{label}.{k}", f"expected true or false, got {f[k]!r}")
        if not f.get("enabled", True):
            continue
        g = {k: v for k, v in f.items() if k not in ("enabled", "each_pair", "first_pair")}
        if "first_pair" in f and not f.get("each_pair"):
            raise ctx.err(f"{label}.first_pair", "applies only with each_pair = true")
        if not f.get("each_pair"):
            out.append(g)
            continue
        if "name" not in g:
            raise ctx.err(f"{label}.name", "a flow with each_pair = true needs a name")
        sides = (g.get("from", "s"), g.get("to", "r"))
        if sorted(sides) != ["r", "s"]:
            raise ctx.err(f"{label}.from", "with each_pair = true, write from = \"s\" and "
                          "to = \"r\" (or the reverse): the side, not a host")
        first = f.get("first_pair", 1)
        if isinstance(first, bool) or not isinstance(first, int) or not 1 <= first <= pairs:
            raise ctx.err(f"{label}.first_pair", f"expected a pair number from 1 to "
                          f"topology.pairs = {pairs}, got {first!r}")
        for p in range(first, pairs + 1):
            out.append({**g, "name": f"{g['name']}.{p}", "from": f"{sides[0]}{p}",
                        "to": f"{sides[1]}{p}"})
    return out


def _hosts(study: Study) -> str:
    return ", ".join(study.host_names)


def _check_alg(ctx: Ctx, key: str, name: str):
    if name not in ctx.algorithms:
        # names are lower case in Linux and here: "CUBIC" is cubic
        near = [a for a in sorted(ctx.algorithms) if a.lower() == str(name).lower()] or \
            difflib.get_close_matches(name, sorted(ctx.algorithms), n=1)
        raise ctx.err(key, f"unknown congestion control {name!r}"
                      + (f" (did you mean {near[0]!r}?)" if near else "") + "; known: "
                      + ", ".join(sorted(a for a in ctx.algorithms if not a.startswith("cca_")))
                      + " (and cca_<name>: the BPF version of one)")


def _variant(ctx: Ctx, key: str, cc: str, variant: str) -> str:
    """The flow's algorithm with its variant (cc.variants): "bic" for the default, e.g.
    "bic:paper" otherwise, so results never mix the two."""
    base = cc[len(PREFIX):] if cc.startswith(PREFIX) else cc
    if shipped_bpf(base):
        q = variants.qualified(base, variant)
        return PREFIX + q if cc.startswith(PREFIX) else q
    if variant == "linux" and not cc.startswith(PREFIX) and base not in ctx.user_algorithms():
        return cc       # only the kernel has it: its own module is Linux's behaviour
    ours = sorted(n for n in ctx.algorithms if shipped_bpf(n))
    raise ctx.err(key, f"{cc!r} has one behaviour only (no BPF variants in ccarena); "
                  f"cc_variant applies to ccarena's BPF algorithms: {', '.join(ours)}")


def _name(ctx: Ctx, label: str, f: dict, i: int, seen: set) -> str:
    name = f.get("name", f"flow{i}")
    if not _NAME.match(name):
        raise ctx.err(f"{label}.name", "use letters, digits, '-', '_' and '.' only")
    if name in seen:
        raise ctx.err(f"{label}.name", f"flow name {name!r} is used twice")
    seen.add(name)
    return name


COMMAND_KEYS = {"name", "kind", "host", "run", "check", "start", "stop"}
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9]*)(?:\.([A-Za-z0-9_.-]+))?\}")


def _command(ctx: Ctx, study: Study, label: str, f: dict, i: int, seen: set) -> FlowSpec:
    """kind = "command": any program inside a host. Placeholders in `run`: {s1}/{r2}... the
    host's address, {port.<flow>} the listener port of a flow, {duration} seconds."""
    name = _name(ctx, label, f, i, seen)
    for k in f:
        if k not in COMMAND_KEYS:
            raise ctx.err(f"{label}.{k}", "does not apply to kind 'command'; it takes: "
                          + ", ".join(sorted(COMMAND_KEYS - {"kind", "name"})))
    if f["host"] not in study.host_names:
        raise ctx.err(f"{label}.host", f"no such host {f['host']!r}; this topology has: "
                      f"{_hosts(study)}")
    run = f["run"]
    if not run.strip():
        raise ctx.err(f"{label}.run", "is empty")
    for m in PLACEHOLDER.finditer(run):
        head, arg = m.group(1), m.group(2)
        if head == "port" and arg is not None:
            continue  # checked against the flows once all are parsed (schema.check_commands)
        if arg is None and (head in study.host_names or head == "duration"):
            continue
        raise ctx.err(f"{label}.run", f"unknown placeholder {m.group(0)!r}; use a host name "
                      "like {r1}, {port.<flow name>} or {duration}")
    start, stop = f.get("start", 0.0), f.get("stop")
    if start >= study.duration_s:
        raise ctx.err(f"{label}.start", f"starts at {start:g} s, after the run ends")
    if stop is not None and (stop <= start or stop > study.duration_s):
        raise ctx.err(f"{label}.stop", "must be after start and within the run")
    return FlowSpec(name=name, src=f["host"], dst=f["host"], kind="command", cc="",
                    start_s=start, stop_s=stop, run=run, check=f.get("check", True))


def _check_command_ports(ctx: Ctx, study: Study) -> None:
    names = {f.name for f in study.flows if f.kind != "command"}
    for f in study.flows:
        if f.kind != "command":
            continue
        for m in PLACEHOLDER.finditer(f.run):
            if m.group(1) == "port" and m.group(2) not in names:
                raise ctx.err(f"flow.{f.name}.run", f"{m.group(0)}: no flow named "
                              f"{m.group(2)!r} to take the port of")


def _flow(ctx: Ctx, study: Study, label: str, f: dict[str, Any], i: int, seen: set) -> FlowSpec:
    names = set(study.host_names)
    name = _name(ctx, label, f, i, seen)
    for k in ("host", "run", "check"):
        if k in f:
            raise ctx.err(f"{label}.{k}", "applies only to kind 'command'")
    for end in ("from", "to"):
        if f[end] not in names:
            raise ctx.err(f"{label}.{end}", f"no such host {f[end]!r}; this topology has: "
                          f"{_hosts(study)}")
    if f["from"] == f["to"]:
        raise ctx.err(f"{label}.to", "a flow needs two different hosts")
    kind = f.get("kind", "bulk")
    src_host = study.hosts.get(f["from"])
    cc = f.get("cc") or (src_host.cc if src_host and src_host.cc else DEFAULT_CC)
    _check_alg(ctx, f"{label}.cc", cc)
    if "cc_variant" in f:
        cc = _variant(ctx, f"{label}.cc_variant", cc, f["cc_variant"])
    if "receiver_cc" in f:
        _check_alg(ctx, f"{label}.receiver_cc", f["receiver_cc"])
    allowed = {
        "bulk": {"bytes"}, "parallel": {"bytes", "conns"}, "download": {"size", "count", "every"},
        "paced": {"write", "gap", "gap_dist", "bytes"}, "rr": {"request", "response", "count", "gap"},
    }[kind]
    for k in ("bytes", "conns", "size", "count", "every", "write", "gap", "gap_dist", "request",
              "response"):
        if k in f and k not in allowed:
            raise ctx.err(f"{label}.{k}", f"does not apply to kind {kind!r}; it takes: "
                          + ", ".join(sorted(allowed)))
    if kind == "download" and "size" not in f:
        raise ctx.err(f"{label}.size", "a download needs a size, e.g. size = \"1MB\"")
    start = f.get("start", 0.0)
    stop = f.get("stop")
    if start >= study.duration_s:
        raise ctx.err(f"{label}.start", f"starts at {start:g} s, after the run ends "
                      f"(study.duration = {study.duration_s:g} s)")
    if stop is not None and stop <= start:
        raise ctx.err(f"{label}.stop", "must be after start")
    if stop is not None and stop > study.duration_s:
        raise ctx.err(f"{label}.stop", f"{stop:g} s is after the run ends "
                      f"(study.duration = {study.duration_s:g} s)")
    if kind == "download" and f.get("every") and f.get("count"):
        end = start + f["every"] * (f["count"] - 1)
        if end >= (stop or study.duration_s):
            raise ctx.err(f"{label}.count", f"{f['count']} downloads every {f['every']:g} s "
                          f"from {start:g} s cannot all start before the run ends "
                          f"({(stop or study.duration_s):g} s)")
    return FlowSpec(name=name, src=f["from"], dst=f["to"], kind=kind, cc=cc,
                    receiver_cc=f.get("receiver_cc"), start_s=start, stop_s=stop,
                    bytes=f.get("bytes"), conns=f.get("conns", 1), size=f.get("size"),
                    count=f.get("count"), every_s=f.get("every"), write=f.get("write", 1448),
                    gap_s=f.get("gap", 0.001 if kind == "paced" else 0.0),
                    gap_dist=f.get("gap_dist", "const"), request=f.get("request", 100),
                    response=f.get("response", 1000))
