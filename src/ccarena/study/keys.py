"""Every key of a study file, declared once: its parser, type, unit, range, default and
meaning.

The same declarations give the parsing (study.schema), the JSON Schema editors use to
complete and check study files (`ccarena schema`), and the reference table of
docs/study-keys.md (a test keeps that page in step with this module).

A Key is called like a parser: Key(value) -> the value in SI units, or ValueError saying
what is accepted."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ccarena import units
from ccarena.cc.variants import VARIANT_NAMES
from ccarena.study.expect import parse_bound
from ccarena.study.impair import DELAY_DISTRIBUTIONS
from ccarena.study.model import DEFAULT_CC, FLOW_KINDS

QUEUES = ("droptail", "red", "codel", "fq_codel", "step", "classes")
BACKENDS = ("auto", "kernel", "user")
PROBE_KINDS = ("ping", "udp", "tcp_probe", "pcap")
MAX_RERUNS = 10    # study.reruns and `ccarena run --reruns`
MAX_PAIRS = 250    # topology.pairs: the address plan (testbed/topology.py) gives each pair a
                   # /24 of its own, 10.1.<i>.0 and 10.2.<i>.0


@dataclass(frozen=True)
class Key:
    type: str                     # what the reference table and the JSON Schema call it
    doc: str
    parse: Callable[[Any], Any]
    default: str = ""             # as the reference shows it ("" = none / required)
    json: tuple = ()              # extra JSON Schema items, as (name, value) pairs
    unit: str = ""                # what the parsed value counts ("" = a plain number or text)
    range: str = ""               # the values the parser accepts, as the reference shows them

    def __call__(self, v):
        return self.parse(v)


# -- parsers --------------------------------------------------------------------------------
def _str(v, what="a string"):
    if not isinstance(v, str):
        raise ValueError(f"expected {what}, got {v!r}")
    return v


def _int(lo=None, hi=None):
    def p(v):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {v!r}")
        if lo is not None and v < lo:
            raise ValueError(f"must be at least {lo}, got {v}")
        if hi is not None and v > hi:
            raise ValueError(f"must be at most {hi}, got {v}")
        return v
    return p


def _bool(v):
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {v!r}")
    return v


def _choice(options):
    def p(v):
        if v not in options:
            import difflib
            near = difflib.get_close_matches(str(v), options, n=1)
            raise ValueError(f"{v!r} is not one of: {', '.join(options)}"
                             + (f" (did you mean {near[0]!r}?)" if near else ""))
        return v
    return p


def _time_nonneg(v):
    t = units.parse_time(v)
    if t < 0:
        raise ValueError(f"must not be negative, got {v!r}")
    return t


def _time_pos(v):
    t = units.parse_time(v)
    if t <= 0:
        raise ValueError(f"must be positive, got {v!r}")
    return t


def _time_at_least(lo_s: float, shown: str):
    def p(v):
        t = units.parse_time(v)
        if t < lo_s:
            raise ValueError(f"must be at least {shown}, got {v!r}")
        return t
    return p


def _rate(v):
    r = units.parse_rate(v)
    if r <= 0:
        raise ValueError(f"must be positive, got {v!r}")
    return r


def _size_pos(v):
    s = units.parse_size(v)
    if s <= 0:
        raise ValueError(f"must be positive, got {v!r}")
    return s


def _table(v):
    if not isinstance(v, dict):
        raise ValueError(f"expected a table, got {v!r}")
    return v


def _sysctl_table(v):
    _table(v)
    out = {}
    for k, val in v.items():
        if not re.match(r"^net\.[a-z0-9_.]+$", k):
            raise ValueError(f"only net.* sysctls can be set per host, got {k!r}")
        out[k] = " ".join(str(x) for x in val) if isinstance(val, list) else str(val)
    return out


def _mem_triple(v):
    if isinstance(v, list) and len(v) == 3:
        return " ".join(str(units.parse_size(x)) for x in v)
    if isinstance(v, str) and len(v.split()) == 3:
        return " ".join(str(units.parse_size(x)) for x in v.split())
    raise ValueError("expected three sizes: [min, default, max], e.g. ['4KiB', '128KiB', '6MiB']")


def _schedule(v):
    if not isinstance(v, list) or not v:
        raise ValueError("expected a list of [time, rate] steps, e.g. [[\"0s\", \"10mbit\"], "
                         "[\"10s\", \"2mbit\"]]")
    out = []
    for step in v:
        if not isinstance(step, list) or len(step) != 2:
            raise ValueError(f"each step is [time, rate], got {step!r}")
        t = units.parse_time(step[0])
        r = None if step[1] in ("unlimited", None) else units.parse_rate(step[1])
        if r is not None and r < 0:
            raise ValueError(f"a step's rate is 0 (an outage), a rate or \"unlimited\", "
                             f"got {step[1]!r}")
        if out and t <= out[-1][0]:
            raise ValueError("step times must increase")
        out.append((t, r))
    return out


def _cpus(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise ValueError(f"expected a positive number of CPUs (e.g. 1, 2 or 0.5), got {v!r}")
    if v < 0.01:
        raise ValueError("the smallest CPU quota is 0.01 (1 % of a core)")
    return float(v)


def _cpuset(v):
    v = str(v) if isinstance(v, int) and not isinstance(v, bool) else v
    if not isinstance(v, str) or not re.match(r"^\d+(-\d+)?(,\d+(-\d+)?)*$", v):
        raise ValueError(f"expected a CPU list like \"0\", \"0-1\" or \"0,2\", got {v!r}")
    return v


def _memory(v):
    m = units.parse_size(v)
    if m < 16 * 2**20:
        raise ValueError(f"{v!r} is below 16MiB; a host needs more to run its processes")
    return m


def _vm_memory(v):
    m = units.parse_size(v)
    if m < 128 * 2**20:
        raise ValueError(f"{v!r} is below 128MiB; a guest needs more to boot")
    return m


def _vhost(v):
    if v in (True, False, "auto"):
        return {True: "on", False: "off"}.get(v, v)
    raise ValueError(f"expected true, false or \"auto\", got {v!r}")


def _vm_table(v):
    """`vm = true` or `vm = { cpus = 2, ... }` -> {key: parsed} (VM_KEYS)."""
    if v is True:
        return {}
    if not isinstance(v, dict):
        raise ValueError(f"expected a table such as {{ cpus = 2, memory = \"4GiB\" }} or "
                         f"true, got {v!r}")
    out = {}
    for k, x in v.items():
        if k not in VM_KEYS:
            import difflib
            near = difflib.get_close_matches(str(k), list(VM_KEYS), n=1)
            raise ValueError(f"unknown key {k!r}" + (f" (did you mean {near[0]!r}?)" if near
                             else "") + "; accepted: " + ", ".join(VM_KEYS))
        try:
            out[k] = VM_KEYS[k](x)
        except ValueError as e:
            raise ValueError(f"{k}: {e}") from None
    return out


def _str_list(v):
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"expected a host name or a list of them, got {v!r}")
    return v


def _float(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)


# -- key constructors, one per type ------------------------------------------------------------
def text(doc, default=""):
    return Key("string", doc, lambda v: _str(v), default)


def integer(doc, lo=None, hi=None, default="", unit=""):
    rng = tuple(x for x in (("minimum", lo) if lo is not None else None,
                            ("maximum", hi) if hi is not None else None) if x)
    return Key("integer", doc, _int(lo, hi), default, rng, unit, bounds(lo, hi))


def bounds(lo=None, hi=None) -> str:
    """The reference's range of an integer key: "1..256", "≥ 0", "≤ 9"."""
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    return f"≥ {lo}" if lo is not None else f"≤ {hi}" if hi is not None else ""


def boolean(doc, default=""):
    return Key("true/false", doc, _bool, default)


def choice(options, doc, default=""):
    return Key("one of: " + ", ".join(options), doc, _choice(options), default,
               (("enum", list(options)),))


def rate(doc, default=""):
    return Key("rate", doc, _rate, default, unit="bit/s", range="> 0")


def time(doc, default="", positive=False):
    return Key("time", doc, _time_pos if positive else _time_nonneg, default, unit="s",
               range="> 0" if positive else "≥ 0")


def size(doc, default=""):
    return Key("size", doc, _size_pos, default, unit="bytes", range="> 0")


def percent(doc, default="0%"):
    return Key("probability", doc, units.parse_fraction, default, unit="%", range="0..100")


def table(doc, parse=_table, default=""):
    return Key("table", doc, parse, default)


# -- the tables ---------------------------------------------------------------------------------
STUDY_KEYS = {
    "name": text("names the study and its results directory (letters, digits, - _ .)"),
    "description": text("one line shown by `ccarena studies` and in the report"),
    "extends": text("a study file whose keys this one starts from (path relative to this "
                    "file); tables merge key by key"),
    "duration": time("length of every run", positive=True),
    "warmup": time("excluded from steady-state metrics at the start of each flow", "0s"),
    "repetitions": integer("runs per cell", 1, 100000, "1"),
    "reruns": integer("how often a run invalid only for the machine's noise is run again",
                      0, MAX_RERUNS, "1"),
    "seed": integer("seed of the run order and the per-run seeds (random if absent)", 0),
    "shuffle": boolean("run the cells in a shuffled order", "true"),
    "sample_interval": Key("time", "TCP_INFO and queue sampling period",
                           _time_at_least(0.001, "1ms"), "10ms", unit="s", range="≥ 1ms"),
    "default_scale": text("the [scale.<name>] applied when `--scale` is not given"),
}
TOPOLOGY_KEYS = {
    "kind": choice(("dumbbell",), "the topology", "dumbbell"),
    "pairs": integer("sender/receiver pairs s1..sN, r1..rN", 1, MAX_PAIRS, "1"),
}
LINK_KEYS = {
    "rate": rate("bottleneck rate (none: unlimited)"),
    "reverse_rate": rate("rate of the r->s direction", "rate"),
    "delay": time("one-way delay, each direction", "0s"),
    "reverse_delay": time("one-way delay of the r->s direction", "delay"),
    "rtt": time("base RTT instead of delay (split over both directions)"),
    "jitter": time("each direction's delay varies around delay: within ±jitter (uniform), "
                   "or jitter is the scale of delay_distribution (packets keep their "
                   "order)", "0s"),
    "delay_distribution": choice(DELAY_DISTRIBUTIONS, "shape of the jitter (netem's "
                                 "tables; normal: jitter is the standard deviation)",
                                 "uniform"),
    "delay_correlation": percent("netem's correlation of each delay with the one before "
                                 "(it also narrows the spread)"),
    "loss": percent("random loss of the s->r direction"),
    "loss_model": table("bursty loss of the s->r direction instead of `loss`: { kind = "
                        "\"gilbert\", p, r, loss_bad, loss_good } or { kind = \"4state\", "
                        "p13, p31, p32, p23, p14 } (see 'bottleneck.loss_model')"),
    "reorder": percent("share of s->r packets sent at once, overtaking delayed ones "
                       "(netem's reorder; needs a delay)"),
    "reorder_correlation": percent("netem's correlation of reorder"),
    "reorder_gap": integer("after each reordered packet the next reorder_gap - 1 are "
                           "delayed (netem's gap)", 1, None, "1"),
    "duplicate": percent("share of s->r packets delivered twice"),
    "duplicate_correlation": percent("netem's correlation of duplicate"),
    "corrupt": percent("share of s->r packets with one bit flipped (the receiver's "
                       "checksum drops them)"),
    "corrupt_correlation": percent("netem's correlation of corrupt"),
    "buffer": Key("buffer", "bottleneck buffer, packets ('100p') or bytes ('150KB')",
                  units.parse_buffer, "1000p", unit="packets or bytes", range="≥ 1"),
    "queue": choice(QUEUES, "queue discipline at the bottleneck", "droptail"),
    "aqm": table("the queue's parameters (see 'Queue parameters')", default="{}"),
    "ecn": boolean("AQMs mark ECN-capable packets instead of dropping", "false"),
    "backend": choice(BACKENDS, "link emulation: tc qdiscs (kernel) or ccarena-link (user)",
                      "auto"),
    "trace": text("mahimahi delivery trace (user backend), path relative to the study"),
    "rate_schedule": Key("list", "[[time, rate], ...]: the rate changes at these times "
                         "(user backend); a rate of 0 is an outage: nothing is sent, packets "
                         "wait in the buffer (what does not fit is dropped) until the next "
                         "step", _schedule, unit="s, bit/s",
                         range="times increasing; rate ≥ 0 or \"unlimited\""),
}
TCP_KEYS = {
    "ecn": Key("integer", "net.ipv4.tcp_ecn of every host (0, 1, 2; true = 1)",
               lambda v: int(v) if isinstance(v, bool) else _int(0, 2)(v), "0",
               range=bounds(0, 2)),
    "sack": boolean("SACK (net.ipv4.tcp_sack)", "true"),
    "metrics_save": boolean("keep the kernel's TCP metrics cache between runs", "false"),
    "rmem": Key("sizes", "net.ipv4.tcp_rmem [min, default, max]", _mem_triple, unit="bytes"),
    "wmem": Key("sizes", "net.ipv4.tcp_wmem [min, default, max]", _mem_triple, unit="bytes"),
    "sysctl": table("any other net.* sysctls of every host", _sysctl_table),
    "initcwnd": integer("initial congestion window of every host's routes (ip route "
                        "initcwnd)", 1, 1000, "the kernel's (10)", unit="segments"),
}
TESTBED_KEYS = {
    "offloads": boolean("TSO/GSO/GRO on the emulated path", "false"),
    "mtu": integer("MTU of every interface", 576, 9000, "1500", unit="bytes"),
    "vm": Key("table", "make every host a QEMU guest with these [hosts.<host>.vm] keys (a "
              "host's own vm table overrides them)", lambda v: _vm_table(v)),
}
HOST_KEYS = {
    "delay": time("extra one-way delay on this host's access link", "0s"),
    "loss": percent("extra random loss on this host's access link"),
    "cc": text("default algorithm of the flows this host sends", DEFAULT_CC),
    "sysctl": table("net.* sysctls of this host", _sysctl_table),
    "cpus": Key("number", "CPU quota in cores (cgroup), e.g. 0.5; of a VM host: its vCPUs",
                _cpus, unit="cores", range="≥ 0.01"),
    "cpuset": Key("string", "CPUs this host may run on, e.g. \"0\" or \"0-1\"", _cpuset),
    "memory": Key("size", "memory limit (cgroup), at least 16MiB; of a VM host: its memory",
                  _memory, unit="bytes", range="≥ 16MiB"),
    "vm": Key("table", "make this host a QEMU guest (see [hosts.<host>.vm]); true: the "
              "defaults", lambda v: _vm_table(v)),
}
VM_KEYS = {
    "cpus": integer("vCPUs of the guest", 1, 64, "2"),
    "memory": Key("size", "memory of the guest, at least 128MiB", _vm_memory, "2GiB",
                  unit="bytes", range="≥ 128MiB"),
    "kernel": text("kernel image to boot (path relative to the study; its modules beside "
                   "it as virtme-ng finds them)", "the reference kernel"),
    "accel": choice(("auto", "kvm", "tcg"), "QEMU's accelerator: KVM where it works, else "
                    "TCG (docs/vm.md)", "auto"),
    "queues": integer("queue pairs of the guest's virtio-net NIC (multiqueue)", 1, 16, "1"),
    "offloads": boolean("TSO/GSO/GRO and checksum offload of the guest's NIC",
                        "testbed.offloads"),
    "vhost": Key("true/false/auto", "vhost-net for the NIC (the host kernel moves its "
                 "packets); auto: where /dev/vhost-net and KVM are", _vhost, "auto"),
}
FLOW_KEYS = {
    "name": text("names the flow in tables and sweeps", "flow<i>"),
    "from": text("the host that sends the data (with each_pair: \"s\" or \"r\")"),
    "to": text("the host that receives it"),
    "kind": choice(FLOW_KINDS, "what the flow does (docs/workloads.md)", "bulk"),
    "cc": text("algorithm of the data sender", f"its host's cc, else {DEFAULT_CC}"),
    "cc_variant": choice(VARIANT_NAMES, "which behaviour of cc's BPF algorithm: Linux's "
                         "module's, or the paper's (docs/algorithms.md, Variants)",
                         "linux where ccarena has it, else paper"),
    "receiver_cc": text("algorithm of the other end", f"its host's cc, else {DEFAULT_CC}"),
    "start": time("start, from the run's t0", "0s"),
    "stop": time("stop (none: the end of the run)", positive=True),
    "bytes": size("bulk/parallel/paced: stop after this many bytes"),
    "conns": integer("parallel: connections striping one transfer", 1, 1024, "1"),
    "size": size("download: object size"),
    "count": integer("download/rr: how many (none: until stop)", 1),
    "every": time("download: start one every this long (none: back to back)", positive=True),
    "write": size("paced: bytes per write", "1448"),
    "gap": time("paced/rr: gap between writes or requests", "1ms", positive=True),
    "gap_dist": choice(("const", "uniform", "exp"), "paced: distribution of the gaps",
                       "const"),
    "request": size("rr: request bytes", "100"),
    "response": size("rr: response bytes", "1000"),
    "host": text("command: the host it runs in"),
    "run": text("command: the command line ({r1}, {port.<flow>}, {duration})"),
    "check": boolean("command: a non-zero exit makes the run invalid", "true"),
    "enabled": boolean("false leaves the flow out (sweepable)", "true"),
    "each_pair": boolean("one copy per pair: s<i> -> r<i>, named <name>.<i>", "false"),
    "first_pair": integer("with each_pair: the first pair to get a copy", 1, None, "1"),
}
PROBE_KEYS = {
    "name": text("names the probe in tables", "<kind><i>"),
    "kind": choice(PROBE_KINDS, "what it measures (docs/probes.md)"),
    "from": text("ping, udp: the sending host"),
    "to": text("ping, udp: the echoing host"),
    "interval": time("ping, udp: time between probes", "100ms (udp: 10ms)", positive=True),
    "size": integer("udp: datagram bytes", 16, 1472, "64", unit="bytes"),
    "hosts": Key("list", "tcp_probe, pcap: the hosts to trace", _str_list, "s1..sN"),
    "snaplen": integer("pcap: bytes kept per packet", 64, 65535, "128", unit="bytes"),
}
# which keys each probe kind takes, and which it needs
PROBE_SHAPES = {"ping": ({"from", "to", "interval"}, {"from", "to"}),
                "udp": ({"from", "to", "interval", "size"}, {"from", "to"}),
                "tcp_probe": ({"hosts"}, set()),
                "pcap": ({"hosts", "snaplen"}, {"hosts"})}
EXPECT_KEYS = {
    "name": text("what the check says, in the output"),
    "metric": text("a column of flows or runs, or a ratio \"a / b\""),
    "flow": text("flow level: only this flow (and its copies name.1, name.2, ...)"),
    "where": table("only the cells with these swept values"),
    "min": Key("bound", "lower bound: a number, \"90%rate\", \"0.5*rate\" or "
               "\"3*base_rtt\"", parse_bound),
    "max": Key("bound", "upper bound, as min", parse_bound),
    "stat": choice(("mean", "min", "max", "median", "each"), "statistic over the valid "
                   "runs of a cell", "mean"),
    "level": choice(("flow", "run"), "judge flow rows or run rows", "flow"),
    "relative_to": table("divide by the same statistic in the cell with these values"),
    "trend": choice(("increasing", "nondecreasing", "decreasing", "nonincreasing"),
                    "the statistic's direction over `over`"),
    "over": text("the swept factor of a trend"),
    "tolerance": Key("number", "relative slack of a trend", _float, "0"),
}
# the words of tc(8), netem(8) and other emulators for ccarena's keys: an unknown key that
# is one of them is answered with ccarena's word ("did you mean 'buffer'?")
SYNONYMS = {"limit": "buffer", "queue_size": "buffer", "qlen": "buffer", "txqueuelen":
            "buffer", "bandwidth": "rate", "bw": "rate", "latency": "delay", "distribution":
            "delay_distribution", "qdisc": "queue", "aqm_params": "aqm", "algorithm": "cc",
            "congestion_control": "cc", "cca": "cc", "tcp_congestion_control": "cc",
            "reps": "repetitions", "runs": "repetitions", "length": "duration"}
TABLES = {"study": STUDY_KEYS, "topology": TOPOLOGY_KEYS, "bottleneck": LINK_KEYS,
          "tcp": TCP_KEYS, "testbed": TESTBED_KEYS, "hosts.<host>": HOST_KEYS,
          "hosts.<host>.vm": VM_KEYS,
          "[flow]": FLOW_KEYS, "[probe]": PROBE_KEYS, "[expect]": EXPECT_KEYS}
TOP_KEYS = ("study", "topology", "bottleneck", "tcp", "testbed", "hosts", "flow", "probe",
            "sweep", "expect", "scale")


def key_for(dotted: str) -> Key | None:
    """The Key a sweep path sets: "bottleneck.rate", "flow.<name>.conns",
    "hosts.<host>.delay", "hosts.<host>.vm.cpus", "study.duration" ...; None for anything
    else."""
    parts = dotted.split(".")
    tables = {"study": STUDY_KEYS, "topology": TOPOLOGY_KEYS, "bottleneck": LINK_KEYS,
              "tcp": TCP_KEYS, "testbed": TESTBED_KEYS}
    if len(parts) == 2 and parts[0] in tables:
        return tables[parts[0]].get(parts[1])
    if len(parts) == 4 and parts[0] == "hosts" and parts[2] == "vm":
        return VM_KEYS.get(parts[3])
    if len(parts) >= 3 and parts[0] in ("flow", "hosts", "probe"):
        t = {"flow": FLOW_KEYS, "hosts": HOST_KEYS, "probe": PROBE_KEYS}[parts[0]]
        return t.get(parts[-1])
    return None
