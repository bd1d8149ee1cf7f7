"""Measuring netem's impairments end to end, for both link backends' tests
(test_link_impairments.py through ccarena-link, tests/vm through netem): the UDP probe
sends a datagram every few milliseconds from s1 to r1 and times its echo, so each
datagram's fate (lost, late, overtaken, delivered twice) shows in the `udp` table and in
the flow engines' own counts (engine.json)."""
from __future__ import annotations

import json

import numpy as np
from scipy.stats import binom, norm

from linkhelpers import run_table

# A datagram's frame: 64 bytes of payload + UDP 8 + IPv4 20 + Ethernet 14.
UDP_FRAME = 64 + 8 + 20 + 14


def udp(run_dir, tail_s: float = 0.5):
    """(seq-ordered udp table without the last `tail_s` of sends — those may still have
    been in flight when the probe stopped —, the prober's and the echoer's counts)."""
    u = run_table(run_dir, "udp").sort_values("seq")
    u = u[u["t"] < u["t"].max() - tail_s]
    eng = {h: json.loads((run_dir / "raw" / h / "engine.json").read_text())
           for h in ("s1", "r1")}
    return u, eng["s1"]["udp_probes"][0], eng["r1"]["udp_echo"]


def runs_of(flags) -> list[int]:
    """Lengths of the runs of True in a sequence."""
    out, cur = [], 0
    for f in flags:
        if f:
            cur += 1
        elif cur:
            out.append(cur)
            cur = 0
    if cur:
        out.append(cur)
    return out


def binom_interval(n: int, p: float, alpha: float = 0.001) -> tuple[float, float]:
    return binom.ppf(alpha / 2, n, p), binom.ppf(1 - alpha / 2, n, p)


def gilbert_loss_se(p: float, r: float, n: int) -> float:
    """Standard error of the loss fraction of n packets through a Gilbert chain (loss in
    the bad state only): the chain's eigenvalue 1 - p - r stretches the binomial one."""
    pi = p / (p + r)
    lam = 1 - p - r
    return float(np.sqrt(pi * (1 - pi) / n * (1 + lam) / (1 - lam)))


def lag1(x, pairs=None) -> float:
    """Lag-1 autocorrelation of x; `pairs` (len(x) - 1 booleans) keeps only the pairs
    that are neighbours (a gap in the sequence is no lag of one)."""
    x = np.asarray(x, dtype=float)
    x = x - x.mean()
    prod = x[:-1] * x[1:]
    if pairs is not None:
        prod = prod[np.asarray(pairs)]
        return float(prod.mean() / (x * x).mean())
    return float(prod.sum() / (x * x).sum())


def batch_se(flags, batches: int = 20) -> float:
    """Standard error of the mean of a correlated 0/1 sequence by batch means: losses in
    bursts are not independent, whole batches nearly are."""
    b = np.array([c.mean() for c in np.array_split(np.asarray(flags, dtype=float),
                                                   batches)])
    return float(b.std(ddof=1) / np.sqrt(batches))


# netem's distribution shapes, computed independently of the link's Rust code (scipy's
# normal quantile; the pareto and paretonormal shapes of iproute2's table generators)
def _pareto(u):
    return np.minimum(((1 - u) ** (-1 / 3) - 1.5) * 4 / 3, 4.0)


def _normal(u):
    return np.clip(norm.ppf(u), -4, 4)


SHAPES = {"uniform": lambda u: 2 * u - 1, "normal": _normal, "pareto": _pareto,
          "paretonormal": lambda u: np.clip((_normal(u) + 3 * _pareto(u)) / 4, -4, 4)}


def round_trip_law(dist: str, m: int = 200_000, seed: int = 1) -> np.ndarray:
    """Samples of (RTT - base)/jitter: the sum of one independent draw each way."""
    rng = np.random.default_rng(seed)
    f = SHAPES[dist]
    return np.sort(f(rng.random(m)) + f(rng.random(m)))


def ks(x, law_sorted) -> float:
    """Kolmogorov-Smirnov distance between the sample x and a (large) sorted sample."""
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    f_law = np.searchsorted(law_sorted, x, side="right") / len(law_sorted)
    f_lo = np.searchsorted(law_sorted, x, side="left") / len(law_sorted)
    i = np.arange(1, n + 1) / n
    return float(max((i - f_law).max(), (f_lo - (i - 1 / n)).max(), 0))


def cdf(law_sorted, x, side="right"):
    return np.searchsorted(law_sorted, x, side=side) / len(law_sorted)


def band(x, law_sorted, later: float) -> tuple[float, float]:
    """How a sample's CDF F_n leaves the band a delay law allows when nothing can make a
    delay shorter and the path and the emulator's lateness make it longer by up to
    `later` (a few packets more: the caller's share): (early, late) =
    (sup F_n(x) - F(x): datagrams earlier than the law allows,
     sup F(x - later) - F_n(x): datagrams later than the law and `later` explain).
    A sample of the law itself has both below the KS critical value."""
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    early = float((np.arange(1, n + 1) / n - cdf(law_sorted, x)).max())
    late = float((cdf(law_sorted, x - later) - np.arange(n) / n).max())
    return max(early, 0.0), max(late, 0.0)


def band_gap(true_sorted, other_sorted, later: float) -> float:
    """sup F_other(x - later) - F_true(x). As (true, other): by how much a sample of
    `true` leaves `other`'s band on the late side (lateness only lowers F_n and cannot
    hide it). As (other, true): on the early side, where lateness hides at most `later`
    (and the packets beyond it)."""
    grid = np.linspace(min(true_sorted[0], other_sorted[0]) - 1,
                       max(true_sorted[-1], other_sorted[-1]) + 1, 4001)
    return float((cdf(other_sorted, grid - later) - cdf(true_sorted, grid)).max())


def ks_critical(n: int, alpha: float = 0.001) -> float:
    """Asymptotic one-sample KS critical value: sqrt(-ln(alpha/2)/2)/sqrt(n)."""
    return float(np.sqrt(-np.log(alpha / 2) / 2) / np.sqrt(n))


def max_density(law_sorted) -> float:
    h, _ = np.histogram(law_sorted, bins=400, density=True)
    return float(h.max())


def udp_study(bottleneck: str, *, interval: str = "5ms", duration: str = "8s",
              backend: str = "user", flows: str = "", name: str = "impair",
              probes: int = 1) -> str:
    """Study text: one pair, the link with `bottleneck` (TOML lines), `probes` UDP probes
    s1 -> r1 every `interval` (each its own flow), and `flows` (more TOML tables)."""
    probe = f'[[probe]]\nkind = "udp"\nfrom = "s1"\nto = "r1"\ninterval = "{interval}"\n'
    return (f'[study]\nname = "{name}"\nduration = "{duration}"\nwarmup = "0s"\n'
            f'repetitions = 1\nseed = 11\n[bottleneck]\nbackend = "{backend}"\n'
            f'{bottleneck.strip()}\n' + probe * probes + flows)


def read_pcap(path) -> list[tuple[float, bytes]]:
    """(timestamp s, frame) of each packet of a classic pcap file (tcpdump -w: µs or ns
    stamps, Ethernet frames)."""
    import struct
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise ValueError(f"{path}: not a little-endian pcap file")
    frac = 1e-6 if magic == 0xA1B2C3D4 else 1e-9
    out, off = [], 24
    while off + 16 <= len(data):
        sec, sub, incl, _ = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append((sec + sub * frac, data[off:off + incl]))
        off += incl
    return out


def probe_datagrams(path, src: str) -> list[tuple[tuple[int, int], float]]:
    """((probe flow, seq), capture time) of each UDP probe datagram (b"CCAU", u32 flow,
    u32 seq, ...) from IPv4 `src` in a capture, in capture order."""
    import ipaddress
    import struct
    want = ipaddress.IPv4Address(src).packed
    out = []
    for t, f in read_pcap(path):
        if len(f) < 34 or f[12:14] != b"\x08\x00" or f[23] != 17 or f[26:30] != want:
            continue
        l4 = 14 + (f[14] & 0x0F) * 4
        payload = f[l4 + 8:]
        if payload[:4] == b"CCAU" and len(payload) >= 12:
            out.append((struct.unpack_from("<II", payload, 4), t))
    return out


def one_way(run_dir, s_ip: str, r_ip: str):
    """One-way delays of the UDP probe's datagrams from captures on s1 and r1 (both hosts
    stamp with the same kernel clock): `fwd` {(probe, seq): [delay of each arrival at
    r1]}, `rev` {(probe, seq): [delay of each echo back at s1, from its departure at
    r1]}, the order in which the datagrams reached r1, and when s1 sent each."""
    cap = run_dir / "raw" / "pcap"
    sent = dict(probe_datagrams(cap / "s1.pcap", s_ip))
    at_r = probe_datagrams(cap / "r1.pcap", s_ip)
    echoed = {}
    for seq, t in probe_datagrams(cap / "r1.pcap", r_ip):
        echoed.setdefault(seq, []).append(t)
    back = probe_datagrams(cap / "s1.pcap", r_ip)
    fwd, rev = {}, {}
    for seq, t in at_r:
        if seq in sent:
            fwd.setdefault(seq, []).append(t - sent[seq])
    for seq, t in back:
        if seq in echoed:
            rev.setdefault(seq, []).append(t - min(echoed[seq]))
    return fwd, rev, [seq for seq, _ in at_r], sent
