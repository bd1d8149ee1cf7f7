"""Which congestion controls exist here, and where each comes from.

``available()`` → ``{name: Algo}``; ``resolve(name, force)`` → ``Algo``.

Resolution rule (``force=None``): the kernel's own algorithm when the kernel has it
(built in, or a loadable module ``tcp_<name>`` when ``modprobe`` exists), else the BPF
implementation ``cca_<name>``. ``force="kernel"`` / ``force="bpf"`` insist on one source.
A name written ``cca_<name>`` means the BPF one. Names currently registered by
ccarena (``cca_*`` in the kernel's list) are never reported as kernel algorithms.
``<name>:<variant>`` asks for a variant (cc.variants): ``:paper`` is always the BPF
object that follows the paper (``cca_<name>_p`` where it differs from Linux's), ``:linux``
the kernel's module or the BPF object that behaves as it. Every Algo says which variant it
is and what it follows (``variant``, ``follows``), and runs record both.

BPF objects: ``<build>/bpf/cc/<name>.bpf.o`` (``make bpf``), and user sources
``<dir>/<name>.bpf.c`` from the extra directories (see ``paths.extra_dirs``),
compiled on demand with the same flags into ``<build>/bpf/cc-extra/``. A user source
whose name is a shipped algorithm is refused (it would register the same
``cca_<name>``). Listing never loads anything into the kernel.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from ccarena.cc import paths, variants
from ccarena.cc.errors import CompileError, UnknownAlgorithm

AVAILABLE_FILE = "/proc/sys/net/ipv4/tcp_available_congestion_control"
PREFIX = "cca_"
NAME_MAX = 15  # TCP_CA_NAME_MAX (16) minus the NUL
_NAME = re.compile(r"^[a-z0-9_]+$")

# name -> one-line description and the reference the BPF implementation follows.
CATALOG: dict[str, str] = {
    "reno": "Reno/NewReno AIMD — RFC 5681",
    "cubic": "CUBIC — RFC 9438 (Ha, Rhee, Xu 2008)",
    "scalable": "Scalable TCP MIMD — Kelly, CCR 2003",
    "vegas": "Vegas delay-based — Brakmo & Peterson, JSAC 1995",
    "dctcp": "DCTCP ECN-fraction — RFC 8257 (Alizadeh et al. 2010)",
    "highspeed": "HighSpeed TCP — RFC 3649",
    "hybla": "Hybla RTT-normalised — Caini & Firrincieli, IJSCN 2004",
    "westwood": "Westwood+ bandwidth estimation — Mascolo et al. 2001, Grieco & Mascolo 2004",
    "bic": "BIC binary increase — Xu, Harfoush, Rhee, INFOCOM 2004",
    "htcp": "H-TCP — Leith & Shorten, PFLDnet 2004",
    "veno": "Veno — Fu & Liew, JSAC 2003",
    "illinois": "TCP-Illinois — Liu, Başar, Srikant, VALUETOOLS 2006",
    "yeah": "YeAH-TCP — Baiocchi, Castellani, Vacirca, PFLDnet 2007",
    "lp": "TCP-LP low priority — Kuzmanovic & Knightly, INFOCOM 2003",
    "bbr": "BBR (kernel only) — Cardwell et al., ACM Queue 2016",
    "nv": "TCP-NV (kernel only) — Brakmo, Linux Plumbers 2015",
    "cdg": "CAIA delay-gradient (kernel only) — Hayes & Armitage, Networking 2011",
    "bbr2": "BBRv2 model-based, loss-bounded — draft-cardwell-iccrg-bbr-congestion-control-02",
    "bbr3": "BBRv3 model-based, loss- and ECN-bounded — draft-ietf-ccwg-bbr-06",
}


def known_names() -> set[str]:
    """Every algorithm name a study may use: the catalog, the shipped BPF sources, and
    the user's own <name>.bpf.c in the extra directories, and cca_<name> for each of the
    last two. Whether one can run here is
    preflight's question (`resolve`), not the study's."""
    users = {p.name[: -len(".bpf.c")] for d in paths.extra_dirs() for p in d.glob("*.bpf.c")}
    bpf = set(builtin_sources()) | users
    # cca_<name> insists on the BPF version (resolve), so one study can put it beside the
    # kernel's <name>; variants are chosen with cc_variant (study.schema), not by name
    return set(CATALOG) | bpf | {PREFIX + n for n in bpf}


def paper_reference(name: str) -> str | None:
    """The reference a BPF algorithm's paper variant follows (CATALOG's citation)."""
    d = CATALOG.get(name)
    return d.split(" — ", 1)[1] if d and " — " in d else None


def shipped_bpf(name: str) -> bool:
    """A BPF algorithm of ccarena's own pack (variants exist only for these)."""
    return name in builtin_sources() or (name in CATALOG and "kernel only" not in CATALOG[name])


@dataclass(frozen=True)
class Algo:
    """One congestion control as this machine can provide it.

    source: "kernel" | "bpf" | "unavailable". kernel_name: the string for
    TCP_CONGESTION (None when unavailable). why: for kernel, "built in" or the
    module; for bpf, the object file; for unavailable, the reason.
    bpf_object: the BPF object when one exists (also for kernel-sourced names).
    """

    name: str
    source: str
    kernel_name: str | None
    why: str
    bpf_object: Path | None = None
    module: str | None = None
    variant: str | None = None   # "linux" or "paper" (cc.variants); None for a user's own
    follows: str | None = None   # what it behaves as: "linux-6.12", a paper, the kernel


# --- what the kernel offers (functions so tests can monkeypatch them) ---
def kernel_available() -> list[str]:
    try:
        return Path(AVAILABLE_FILE).read_text().split()
    except OSError:
        return []


def kernel_modules() -> dict[str, str]:
    """Loadable ``tcp_<name>`` modules of the running kernel: name → module.

    Only when ``modprobe`` exists; read from ``modules.dep`` (nothing is loaded)."""
    if not shutil.which("modprobe"):
        return {}
    dep = Path("/lib/modules") / platform.release() / "modules.dep"
    try:
        text = dep.read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        path = line.split(":", 1)[0]
        m = re.search(r"/tcp_([a-z0-9_]+)\.ko(\.[a-z]+)?$", path)
        if m and m.group(1) != "diag":
            out[m.group(1)] = f"tcp_{m.group(1)}"
    return out


def builtin_objects() -> dict[str, Path]:
    d = paths.objects_dir()
    if not d.is_dir():
        return {}
    return {p.name[: -len(".bpf.o")]: p for p in sorted(d.glob("*.bpf.o"))}


def paper_objects() -> dict[str, Path]:
    """The paper variants built beside the default objects (-DCCA_PAPER, mk/bpf.mk)."""
    d = paths.paper_objects_dir()
    if not d.is_dir():
        return {}
    return {p.name[: -len(".bpf.o")]: p for p in sorted(d.glob("*.bpf.o"))}


def builtin_sources() -> dict[str, Path]:
    d = paths.source_dir()
    if not d.is_dir():
        return {}
    return {p.name[: -len(".bpf.c")]: p for p in sorted(d.glob("*.bpf.c"))}


# --- user algorithms ---
def compile_flags() -> list[str]:
    """The flags mk/bpf.mk uses (keep the two in step)."""
    return [
        "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", "-Wall", "-Wno-unused-function",
        f"-I{paths.build_dir()}", f"-I{paths.source_dir()}",
    ]


def _vmlinux_h() -> Path:
    h = paths.build_dir() / "vmlinux.h"
    if not h.is_file():
        bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
        h.parent.mkdir(parents=True, exist_ok=True)
        with open(h.with_suffix(".h.tmp"), "w") as f:
            subprocess.run([bpftool, "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"],
                           stdout=f, check=True)
        h.with_suffix(".h.tmp").replace(h)
    return h


def compile_user(src: Path) -> Path:
    """Compile a user ``*.bpf.c`` (cached by content of source, shared header and kernel)."""
    name = src.name[: -len(".bpf.c")]
    vmlinux = _vmlinux_h()
    common = [paths.source_dir() / n for n in ("cca_common.h", "cca_cong_control.h")]
    h = hashlib.sha256()
    for p in (src, *common):
        h.update(p.read_bytes() if p.is_file() else b"")
    h.update(platform.release().encode())
    h.update(str(vmlinux.stat().st_mtime_ns).encode())
    out = paths.extra_objects_dir() / f"{name}-{h.hexdigest()[:12]}.bpf.o"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    clang = os.environ.get("BPF_CLANG") or shutil.which("clang") or "clang"
    argv = [clang, *compile_flags(), "-c", str(src), "-o", str(out) + ".tmp"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise CompileError(str(src), argv, 127, str(e)) from None
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-15:])
        raise CompileError(str(src), argv, r.returncode, tail)
    os.replace(str(out) + ".tmp", out)
    return out


def user_algorithms(extra_dirs=None) -> dict[str, Algo]:
    out: dict[str, Algo] = {}
    shipped = set(builtin_sources()) | set(CATALOG)
    for d in paths.extra_dirs(extra_dirs):
        for src in sorted(d.glob("*.bpf.c")):
            name = src.name[: -len(".bpf.c")]
            if name in out:
                continue  # an earlier directory wins
            kname = PREFIX + name
            if not _NAME.match(name) or len(kname) > NAME_MAX:
                out[name] = Algo(name, "unavailable", None,
                                 f"{src}: name must be [a-z0-9_] and at most {NAME_MAX - len(PREFIX)} characters")
                continue
            if name in shipped or kname in {variants.paper_kernel_name(b) for b in variants.LINUX}:
                out[name] = Algo(name, "unavailable", None,
                                 f"{src}: {name!r} is a shipped algorithm (or its paper "
                                 "variant's kernel name); rename the file")
                continue
            try:
                obj = compile_user(src)
            except (CompileError, OSError, subprocess.CalledProcessError) as e:
                out[name] = Algo(name, "unavailable", None, str(e))
                continue
            out[name] = Algo(name, "bpf", kname, str(obj), bpf_object=obj)
    return out


def available(extra_dirs=None) -> dict[str, Algo]:
    """Every congestion control known here, each resolved as ``resolve(name)`` would."""
    kernel = [n for n in kernel_available() if not n.startswith(PREFIX)]
    modules = kernel_modules()
    objs = builtin_objects()
    srcs = builtin_sources()
    users = user_algorithms(extra_dirs)
    names = list(dict.fromkeys([*kernel, *modules, *CATALOG, *srcs, *objs, *users]))
    return {n: _annotate(_resolve_one(n, None, kernel, modules, objs, srcs, users), n, None, users)
            for n in names}


def _annotate(a: Algo, base: str, variant: str | None, users) -> Algo:
    """`a` with the variant it is and what it follows."""
    if a.source == "kernel":
        return replace(a, variant="linux", follows=f"the running kernel ({platform.release()})")
    if a.source != "bpf" or (base in users and users[base].source == "bpf"):
        return a
    v = variant or variants.default_variant(base)
    return replace(a, variant=v, follows=variants.follows(base, v, paper_reference(base)))


def _bpf_algo(name, objs, srcs, users) -> Algo:
    if name in users and users[name].source == "bpf":
        return users[name]
    if name in objs:  # a user file named like a shipped algorithm is ignored then
        return Algo(name, "bpf", PREFIX + name, str(objs[name]), bpf_object=objs[name])
    if name in users:
        return users[name]
    if name in srcs:
        return Algo(name, "unavailable", None,
                    f"BPF source {srcs[name]} is not built: run `make bpf`")
    return Algo(name, "unavailable", None, "no BPF implementation in ccarena")


def _resolve_one(name, force, kernel, modules, objs, srcs, users) -> Algo:
    bpf = _bpf_algo(name, objs, srcs, users)
    if name in kernel:
        kern = Algo(name, "kernel", name, "built into the running kernel", bpf.bpf_object)
    elif name in modules:
        kern = Algo(name, "kernel", name, f"kernel module {modules[name]} (loaded on acquire)",
                    bpf.bpf_object, module=modules[name])
    else:
        kern = Algo(name, "unavailable", None,
                    f"the running kernel ({platform.release()}) has no {name!r}")
    if force == "kernel":
        return kern
    if force == "bpf":
        return bpf
    if kern.source == "kernel":
        return kern
    if bpf.source == "bpf":
        return bpf
    return Algo(name, "unavailable", None, f"{kern.why}; {bpf.why}")


def resolve(name: str, force: str | None = None, *, extra_dirs=None, strict: bool = False) -> Algo:
    """Resolve one algorithm name (``<name>``, ``cca_<name>``, ``<name>:<variant>``). When it
    cannot be provided, returns an Algo with source "unavailable" and the reason in
    ``why``; ``strict=True`` raises UnknownAlgorithm instead (with the names that are
    known)."""
    if force not in (None, "kernel", "bpf"):
        raise ValueError(f"force={force!r}: expected None, 'kernel' or 'bpf'")
    base, variant = variants.split(name)
    if variant is not None and variant not in variants.VARIANT_NAMES:
        raise UnknownAlgorithm(name, f"unknown variant {variant!r}; accepted: "
                               + ", ".join(variants.VARIANT_NAMES))
    if base.startswith(PREFIX):
        if force == "kernel":
            raise UnknownAlgorithm(name, "a cca_ name is a BPF algorithm; force='kernel' contradicts it")
        base, force = base[len(PREFIX):], "bpf"
    if variant == "paper":
        if force == "kernel":
            raise UnknownAlgorithm(name, "the paper variant is a BPF algorithm; force='kernel' "
                                   "contradicts it")
        force = "bpf"
    kernel = [n for n in kernel_available() if not n.startswith(PREFIX)]
    modules = kernel_modules()
    objs, srcs = builtin_objects(), builtin_sources()
    users = user_algorithms(extra_dirs) if force != "kernel" else {}
    if variant is not None and base in users and users[base].source == "bpf":
        a = Algo(base, "unavailable", None, f"{base} is the user's own BPF algorithm: it has "
                 "one variant (leave cc_variant out)")
    elif variant == "paper" and variants.has_paper_object(base):
        obj = paper_objects().get(base)
        a = (Algo(base, "bpf", variants.paper_kernel_name(base), str(obj), bpf_object=obj)
             if obj else Algo(base, "unavailable", None, f"the paper variant of {base} is not "
                              f"built ({paths.paper_objects_dir() / (base + '.bpf.o')}): run "
                              "`make bpf`"))
    else:
        a = _resolve_one(base, force, kernel, modules, objs, srcs, users)
        if variant == "linux" and a.source == "bpf" and base not in variants.LINUX:
            a = Algo(base, "unavailable", None, f"ccarena's BPF {base} follows its paper only "
                     f"(no Linux variant yet), and the running kernel ({platform.release()}) "
                     f"has no {base!r} of its own")
    a = _annotate(a, base, variant, users)
    if a.source == "unavailable" and strict:
        known = sorted(set(kernel) | set(modules) | set(objs) | {k for k, v in users.items() if v.source == "bpf"})
        raise UnknownAlgorithm(name, a.why, known)
    return a


def listing() -> dict[str, dict]:
    """Every algorithm this machine can use (`ccarena cc list`): its source ("kernel",
    "bpf" or "unavailable"), kernel name, why it comes from there, its variant, what that
    variant follows, and the variants it offers (cc_variant)."""
    return {n: {"source": a.source, "kernel_name": a.kernel_name, "why": a.why,
                "variant": a.variant, "follows": a.follows,
                "variants": variants.describe(n, shipped_bpf(n), paper_reference(n))}
            for n, a in sorted(available().items())}
