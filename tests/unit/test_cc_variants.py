"""The variants of ccarena's BPF algorithms (ccarena.cc.variants): Linux's behaviour by
default, the paper's with cc_variant = "paper"; how a study names them, how they resolve
(with the kernel's list and the built objects mocked: no root, no BPF, no clang), and that
the table agrees with the sources and the replay traces in the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ccarena.cc import UnknownAlgorithm, resolve
from ccarena.cc import catalog
from ccarena.cc import variants
from ccarena.errors import SpecError
from ccarena.study.load import loads_study

ROOT = Path(__file__).resolve().parents[2]

STUDY = """
[study]
name = "v"
duration = "5s"
[topology]
kind = "dumbbell"
pairs = 1
[bottleneck]
rate = "10mbit"
delay = "10ms"
buffer = "100p"
[[flow]]
name = "a"
from = "s1"
to = "r1"
cc = "{cc}"
{variant}
"""


def flow_cc(cc: str, variant: str | None) -> str:
    text = STUDY.format(cc=cc, variant=f'cc_variant = "{variant}"' if variant else "")
    return loads_study(text).flows[0].cc


# ---- the study key

def test_the_paper_variant_is_named_apart_and_linux_is_the_plain_name():
    assert flow_cc("bic", None) == "bic"
    assert flow_cc("bic", "linux") == "bic"
    assert flow_cc("bic", "paper") == "bic:paper"
    assert flow_cc("cca_bic", "paper") == "cca_bic:paper"
    # Reno's paper is Linux's reno: a separate name all the same, so the record says which
    # was asked for
    assert flow_cc("reno", "paper") == "reno:paper"


def test_an_algorithm_not_yet_converted_keeps_the_variant_in_its_name():
    # plain "bbr3" would be Linux's where a kernel had it and the paper's where ccarena's
    # BPF one runs; a variant asked for must not depend on the machine
    assert "bbr3" not in variants.LINUX
    assert flow_cc("bbr3", "linux") == "bbr3:linux"
    assert flow_cc("bbr3", "paper") == "bbr3:paper"


def test_an_unknown_variant_is_a_one_line_error_naming_the_key_and_the_choices():
    with pytest.raises(SpecError) as e:
        flow_cc("bic", "papre")
    msg = str(e.value)
    assert "flow.a.cc_variant" in msg and "linux, paper" in msg and "\n" not in msg


def test_the_paper_variant_of_a_kernel_only_algorithm_is_refused():
    assert flow_cc("bbr", "linux") == "bbr"         # its own module is Linux's behaviour
    with pytest.raises(SpecError) as e:
        flow_cc("bbr", "paper")
    assert "flow.a.cc_variant" in str(e.value) and "bic" in str(e.value)


def test_the_sweep_can_choose_the_variant():
    text = STUDY.format(cc="scalable", variant="") + \
        '[sweep]\n"flow.a.cc_variant" = ["linux", "paper"]\n'
    s = loads_study(text)
    assert sorted(c.study.flows[0].cc for c in s.cells) == ["scalable", "scalable:paper"]


# ---- resolution

@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A fake checkout: bic, cubic, reno and bbr3 built, bic's paper variant built; the
    kernel offers reno, cubic and (as a kernel with a BBRv3 module would) bbr3 only."""
    root = tmp_path / "root"
    (root / "bpf" / "cc").mkdir(parents=True)
    (root / "build" / "bpf" / "cc" / "paper").mkdir(parents=True)
    for n in ("bic", "cubic", "reno", "bbr3"):
        (root / "bpf" / "cc" / f"{n}.bpf.c").write_text("/* */\n")
        (root / "build" / "bpf" / "cc" / f"{n}.bpf.o").write_bytes(b"\x7fELF")
    (root / "build" / "bpf" / "cc" / "paper" / "bic.bpf.o").write_bytes(b"\x7fELF")
    monkeypatch.setenv("CCARENA_ROOT", str(root))
    monkeypatch.delenv("CCARENA_BUILD_DIR", raising=False)
    monkeypatch.delenv("CCARENA_CC_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(catalog, "kernel_available", lambda: ["reno", "cubic", "bbr3"])
    monkeypatch.setattr(catalog, "kernel_modules", lambda: {})
    return root


def test_the_default_is_linux_and_says_which_kernel(tree):
    a = resolve("bic")
    assert (a.source, a.kernel_name, a.variant, a.follows) == \
        ("bpf", "cca_bic", "linux", variants.REFERENCE_KERNEL)


def test_the_paper_variant_is_its_own_object_and_kernel_name(tree):
    a = resolve("bic:paper")
    assert (a.source, a.kernel_name, a.variant) == ("bpf", "cca_bic_p", "paper")
    assert a.bpf_object == tree / "build" / "bpf" / "cc" / "paper" / "bic.bpf.o"
    assert "INFOCOM 2004" in a.follows


def test_the_paper_variant_is_always_bpf(tree):
    # the kernel's reno is Linux's; reno's paper is ccarena's cca_reno
    k = resolve("reno")
    assert (k.source, k.variant) == ("kernel", "linux")
    p = resolve("reno:paper")
    assert (p.source, p.kernel_name, p.variant) == ("bpf", "cca_reno", "paper")
    with pytest.raises(UnknownAlgorithm):
        resolve("bic:paper", "kernel")


def test_linux_of_an_unconverted_algorithm_is_the_kernel_or_nothing(tree):
    assert resolve("bbr3:linux").source == "kernel"
    a = resolve("bbr3:linux", "bpf")
    assert a.source == "unavailable" and "no Linux variant yet" in a.why
    b = resolve("bbr3:paper")
    assert (b.source, b.kernel_name, b.variant) == ("bpf", "cca_bbr3", "paper")


def test_an_unbuilt_paper_object_says_how_to_build_it(tree):
    (tree / "build" / "bpf" / "cc" / "paper" / "bic.bpf.o").unlink()
    a = resolve("bic:paper")
    assert a.source == "unavailable" and "make bpf" in a.why
    with pytest.raises(UnknownAlgorithm):
        resolve("bic:paper", strict=True)


def test_an_unknown_variant_is_refused_by_resolve(tree):
    with pytest.raises(UnknownAlgorithm) as e:
        resolve("bic:nope")
    assert "linux, paper" in str(e.value)


# ---- the table against the tree

def paper_sources() -> set[str]:
    out = set()
    for p in (ROOT / "bpf" / "cc").glob("*.bpf.c"):
        if any(re.match(r"#if.*CCA_PAPER", line) for line in p.read_text().splitlines()):
            out.add(p.name[: -len(".bpf.c")])
    return out


def test_the_sources_with_a_paper_variant_are_those_the_table_says_differ():
    assert paper_sources() == {n for n, differs in variants.LINUX.items() if differs}


def test_every_converted_algorithm_is_held_to_recorded_traces():
    replay = (ROOT / "crates" / "cc-harness" / "tests" / "replay.rs").read_text()
    for n in variants.LINUX:
        traces = sorted((ROOT / "crates" / "cc-harness" / "traces" / n).glob("*.csv.gz"))
        assert traces, f"{n}: no traces in crates/cc-harness/traces/{n}"
        assert f'replays!("{n}":' in replay, f"{n}: no replay test in tests/replay.rs"


def test_every_paper_kernel_name_fits_tcp_ca_name_max():
    for n in variants.LINUX:
        assert len(variants.paper_kernel_name(n)) <= catalog.NAME_MAX
    # the longest shipped name, were it converted
    assert len(variants.paper_kernel_name("highspeed")) <= catalog.NAME_MAX


# ---- what validate and show print

def test_validate_and_show_say_which_variant_ran_and_what_it_follows():
    from types import SimpleNamespace

    from ccarena.report.summary import algorithm_lines
    from ccarena.run.dryrun import describe
    from ccarena.study.plan import make_plan
    pf = {"cells": {0: {"backend": "user", "why": "test"}}, "algorithms": {
        "bic:paper": {"source": "bpf", "kernel_name": "cca_bic_p", "why": "x.bpf.o",
                      "variant": "paper", "follows": "Xu, Harfoush, Rhee, INFOCOM 2004"},
        "cubic": {"source": "kernel", "kernel_name": "cubic", "why": "built in",
                  "variant": "linux", "follows": "the running kernel (6.12.95)"}}}
    study = loads_study(STUDY.format(cc="bic", variant='cc_variant = "paper"'))
    lines = describe(study, make_plan(study, seed=1), pf)
    assert "algorithm bic:paper: bpf (cca_bic_p), paper variant following Xu, Harfoush, " \
           "Rhee, INFOCOM 2004: x.bpf.o" in lines
    assert any("cc bic:paper" in line for line in lines)
    shown = algorithm_lines(SimpleNamespace(preflight=pf))
    assert shown == ["algorithm bic:paper: bpf cca_bic_p, paper variant following Xu, "
                     "Harfoush, Rhee, INFOCOM 2004",
                     "algorithm cubic: kernel cubic, linux variant following the running "
                     "kernel (6.12.95)"]
