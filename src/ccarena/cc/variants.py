"""The variants of ccarena's BPF algorithms: Linux's behaviour by default, the paper's on
request (docs/algorithms.md, "Variants"; docs/dev/cc-replay.md).

A shipped algorithm's default BPF object (``cca_<name>``) behaves as Linux's own module in
the reference kernel (``REFERENCE_KERNEL``), proven call by call by replaying traces
recorded from that module (crates/cc-harness/tests/replay.rs) — once it is converted:
``LINUX`` lists the converted ones. Where the paper's algorithm differs from Linux's, the
same source compiled with ``-DCCA_PAPER`` is a second object registered as
``cca_<name>_p``. An algorithm not yet converted has one object, which follows its paper.

A study chooses with ``cc_variant = "linux"`` or ``"paper"``; the flow's algorithm is then
named ``<name>:<variant>`` unless the plain name means that variant on every machine
(``bic`` is the Linux BIC, ``bic:paper`` the paper's), so results never mix the two.
"""

from __future__ import annotations

VARIANT_NAMES = ("linux", "paper")
# Which Linux the "linux" variants follow: the reference kernel of `make vm` (docs/vm.md),
# whose modules the replay traces were recorded from.
REFERENCE_KERNEL = "linux-6.12"
SEP = ":"
PAPER_SUFFIX = "_p"   # cca_<name>_p: at most 15 characters for every shipped name

# Converted algorithms: name -> whether the paper's behaviour differs from Linux's (then
# <name>.bpf.c builds a second object with -DCCA_PAPER). Reno's is the same: RFC 5681 is
# what Linux's reno does.
LINUX: dict[str, bool] = {
    "reno": False,
    "scalable": True,
    "bic": True,
    "highspeed": True,
    "vegas": True,
    "hybla": True,
    "veno": True,
    "yeah": True,
    "htcp": True,
    "illinois": True,
    "lp": True,
    "cubic": True,
    "westwood": True,
    "dctcp": True,
}


def split(name: str) -> tuple[str, str | None]:
    """"bic:paper" -> ("bic", "paper"); "bic" -> ("bic", None)."""
    base, sep, variant = name.partition(SEP)
    return base, (variant if sep else None)


def default_variant(base: str, bpf: bool = True) -> str:
    """What `base`'s default is: "linux" when converted (or when only the kernel has it:
    bpf=False), else "paper"."""
    return "linux" if base in LINUX or not bpf else "paper"


def has_paper_object(base: str) -> bool:
    return LINUX.get(base, False)


def paper_kernel_name(base: str) -> str:
    return f"cca_{base}{PAPER_SUFFIX}"


def qualified(base: str, variant: str, bpf: bool = True) -> str:
    """The flow's algorithm name for `variant`: the plain name for Linux's behaviour where
    the plain name means it wherever the study runs (a converted algorithm, or one only
    the kernel has), else <base>:<variant> — an algorithm not yet converted means Linux's
    where the kernel has it and the paper's where ccarena's BPF one runs."""
    if variant == "linux" and (base in LINUX or not bpf):
        return base
    return f"{base}{SEP}{variant}"


def follows(base: str, variant: str, paper_ref: str | None) -> str:
    """What a BPF object of `base` in `variant` behaves as (recorded with every run)."""
    if variant == "linux":
        return REFERENCE_KERNEL + (f" (the same as {paper_ref})" if base in LINUX and
                                   not LINUX[base] and paper_ref else "")
    return paper_ref or "its paper"


def describe(base: str, bpf: bool, paper_ref: str | None) -> str:
    """One line for `ccarena cc list`: the variants `base` offers and what each follows."""
    if not bpf:
        return "linux (the kernel's own module only)"
    if base not in LINUX:
        return f"paper (default; no Linux variant yet): {paper_ref or '?'}"
    if not LINUX[base]:
        return f"linux = paper (default): {REFERENCE_KERNEL}, {paper_ref or '?'}"
    return f"linux (default): {REFERENCE_KERNEL}; paper: {paper_ref or '?'}"
