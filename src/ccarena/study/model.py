"""The validated shapes of a study. Plain dataclasses in SI units; built by schema.py from
the TOML, consumed by the planner and the runner. Nothing here reads files or the system."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Buffer:
    kind: str  # "packets" | "bytes"
    size: int

    def packets(self, mtu: int = 1500) -> int:
        return self.size if self.kind == "packets" else max(1, self.size // (mtu + 14))

    def bytes(self, mtu: int = 1500) -> int:
        return self.size if self.kind == "bytes" else self.size * (mtu + 14)


@dataclass
class LinkSpec:
    rate_bps: int | None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0
    buffer: Buffer = field(default_factory=lambda: Buffer("packets", 1000))
    queue: str = "droptail"
    aqm: dict[str, Any] = field(default_factory=dict)
    ecn: bool = False
    backend: str = "auto"  # auto | kernel | user
    reverse_rate_bps: int | None = None  # resolved: the forward rate unless given
    trace: str | None = None             # mahimahi trace (absolute path), senders->receivers
    rate_schedule: list[tuple[float, int | None]] = field(default_factory=list)  # (t_s, bps)
    # resolved (study.resolve): the queue's parameters with every default applied
    queue_params: Any = None
    # netem's impairments (study.impair; docs/link.md): the r->s one-way delay (resolved:
    # `delay` unless reverse_delay is given); the jitter's shape and netem's correlation
    # (both directions); a loss model and per-packet events of the s->r direction
    reverse_delay_s: float | None = None
    delay_distribution: str = "uniform"
    delay_correlation: float = 0.0
    loss_model: Any = None               # study.impair.LossModel, or None
    reorder: float = 0.0                 # share sent at once, without the delay
    reorder_correlation: float = 0.0
    reorder_gap: int = 1
    duplicate: float = 0.0
    duplicate_correlation: float = 0.0
    corrupt: float = 0.0
    corrupt_correlation: float = 0.0

    @property
    def reverse_delay(self) -> float:
        """The r->s one-way delay (before or after resolution)."""
        return self.delay_s if self.reverse_delay_s is None else self.reverse_delay_s


@dataclass(frozen=True)
class VmSpec:
    """A host that is a QEMU guest (docs/hosts.md): what it boots with."""
    cpus: int = 2                  # vCPUs
    memory: int = 2 * 2**30        # bytes
    kernel: str | None = None      # a kernel image (absolute path); None: the reference kernel
    accel: str = "auto"            # auto | kvm | tcg
    queues: int = 1                # virtio-net queue pairs
    offloads: bool | None = None   # the NIC's offloads; None: the study's testbed.offloads
    vhost: str = "auto"            # auto | on | off


@dataclass
class HostSpec:
    name: str
    delay_s: float = 0.0       # extra one-way delay on this host's access segment
    loss: float = 0.0          # extra random loss on this host's access segment
    cc: str | None = None      # default algorithm of flows this host sends
    sysctl: dict[str, str] = field(default_factory=dict)
    cpus: float | None = None  # CPU quota in cores ("vCPUs"), through a cgroup
    cpuset: str | None = None  # CPUs the host may run on, e.g. "0" or "0-1"
    memory: int | None = None  # memory limit in bytes, through a cgroup
    vm: VmSpec | None = None   # a QEMU guest instead of a namespace


@dataclass
class TcpSettings:
    ecn: int = 0            # net.ipv4.tcp_ecn
    sack: bool = True
    metrics_save: bool = False  # False -> tcp_no_metrics_save=1 and the cache is flushed per run
    rmem: str | None = None  # "min default max"
    wmem: str | None = None
    sysctl: dict[str, str] = field(default_factory=dict)
    initcwnd: int | None = None  # segments: the hosts' routes carry it (None: the kernel's)

    def sysctls(self) -> dict[str, str]:
        s = {
            "net.ipv4.tcp_ecn": str(self.ecn),
            "net.ipv4.tcp_sack": "1" if self.sack else "0",
            "net.ipv4.tcp_no_metrics_save": "0" if self.metrics_save else "1",
        }
        if self.rmem:
            s["net.ipv4.tcp_rmem"] = self.rmem
        if self.wmem:
            s["net.ipv4.tcp_wmem"] = self.wmem
        s.update(self.sysctl)
        return s


FLOW_KINDS = ("bulk", "parallel", "download", "paced", "rr", "command")
# The algorithm of a flow whose study names none, here or on its host: Linux's default
# (net.ipv4.tcp_congestion_control), so an unconfigured flow behaves as the kernel would.
DEFAULT_CC = "cubic"


@dataclass
class FlowSpec:
    name: str
    src: str            # the host that sends the data ("from")
    dst: str            # the host that receives it ("to")
    kind: str = "bulk"
    cc: str = DEFAULT_CC  # algorithm of the data sender
    receiver_cc: str | None = None  # algorithm of the other end (resolved: its host's cc)
    start_s: float = 0.0
    stop_s: float | None = None     # None: the study's duration
    bytes: int | None = None        # bulk/parallel: stop after this many bytes
    conns: int = 1                  # parallel: connections striping one transfer
    size: int | None = None         # download: object size
    count: int | None = None        # download/rr: how many (None: until stop)
    every_s: float | None = None    # download: start one every T (None: back to back)
    write: int = 1448               # paced: bytes per write
    gap_s: float = 0.001            # paced/rr: gap between writes/requests
    gap_dist: str = "const"         # paced: const | uniform | exp
    request: int = 100              # rr
    response: int = 1000            # rr
    run: str | None = None          # command: shell command line (placeholders: see schema)
    check: bool = True              # command: a non-zero exit makes the run invalid
    port: int = 0                   # resolved: the flow's listener port


@dataclass
class ProbeSpec:
    name: str
    kind: str                 # ping | udp | tcp_probe | pcap
    src: str | None = None    # ping, udp: from
    dst: str | None = None    # ping, udp: to
    interval_s: float = 0.1   # ping, udp
    size: int = 64            # udp datagram bytes
    hosts: list[str] = field(default_factory=list)   # tcp_probe, pcap: where
    snaplen: int = 128        # pcap bytes per packet


@dataclass(frozen=True)
class Cell:
    """One point of the sweep: its index, the swept values, and the study it gives."""
    index: int
    params: dict
    study: "Study"


@dataclass
class Study:
    name: str
    path: str
    duration_s: float
    warmup_s: float = 0.0
    repetitions: int = 1
    # a run that only the machine's noise made invalid is run again, up to this many times
    # (validity.noise_only; the set-aside attempts stay in the results' superseded/)
    reruns: int = 1
    seed: int | None = None
    shuffle: bool = True
    sample_interval_s: float = 0.01
    description: str = ""
    pairs: int = 1
    bottleneck: LinkSpec = field(default_factory=lambda: LinkSpec(rate_bps=None))
    tcp: TcpSettings = field(default_factory=TcpSettings)
    offloads: bool = False
    mtu: int = 1500
    hosts: dict[str, HostSpec] = field(default_factory=dict)
    flows: list[FlowSpec] = field(default_factory=list)
    probes: list[ProbeSpec] = field(default_factory=list)
    sweep: dict[str, list] = field(default_factory=dict)
    expect: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict)   # the merged TOML, for sweeps and the record
    scale: str | None = None                  # the [scale.<name>] applied, if any
    cells: list["Cell"] = field(default_factory=list)   # the sweep's cells (study.load)
    # the checks of the study at its other scales (study.load.check_scales), so that
    # validating it checks the metrics those name too
    other_checks: dict[str, list] = field(default_factory=dict)

    @property
    def host_names(self) -> list[str]:
        return [f"s{i}" for i in range(1, self.pairs + 1)] + \
               [f"r{i}" for i in range(1, self.pairs + 1)]

    @property
    def base_rtt_s(self) -> float:
        return self.bottleneck.delay_s + self.bottleneck.reverse_delay

    @property
    def vm_hosts(self) -> dict[str, VmSpec]:
        """The hosts that are QEMU guests, with their specs."""
        return {h: hs.vm for h, hs in self.hosts.items() if hs.vm is not None}

    def algorithms(self) -> set[str]:
        algs = {f.cc for f in self.flows if f.kind != "command"}
        algs |= {f.receiver_cc for f in self.flows if f.receiver_cc}
        algs |= {h.cc for h in self.hosts.values() if h.cc}
        return algs
