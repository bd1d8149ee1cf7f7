"""Resolution of congestion-control names (ccarena.cc.registry), with the kernel's
list, its modules and the built objects mocked: no root, no BPF, no clang."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccarena.cc import CompileError, UnknownAlgorithm, available, resolve
from ccarena.cc import catalog as registry


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A fake checkout: sources for reno/vegas/dctcp, objects for reno/vegas;
    kernel offers reno, cubic, bbr and (already registered) cca_vegas."""
    root = tmp_path / "root"
    (root / "bpf" / "cc").mkdir(parents=True)
    (root / "build" / "bpf" / "cc").mkdir(parents=True)
    for n in ("reno", "vegas", "dctcp"):
        (root / "bpf" / "cc" / f"{n}.bpf.c").write_text("/* */\n")
    for n in ("reno", "vegas"):
        (root / "build" / "bpf" / "cc" / f"{n}.bpf.o").write_bytes(b"\x7fELF")
    monkeypatch.setenv("CCARENA_ROOT", str(root))
    monkeypatch.delenv("CCARENA_BUILD_DIR", raising=False)
    monkeypatch.delenv("CCARENA_CC_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(registry, "kernel_available", lambda: ["reno", "cubic", "bbr", "cca_vegas"])
    monkeypatch.setattr(registry, "kernel_modules", lambda: {})
    return root


def test_kernel_algorithm_is_preferred(tree):
    a = resolve("reno")
    assert (a.source, a.kernel_name) == ("kernel", "reno")
    assert a.bpf_object == tree / "build" / "bpf" / "cc" / "reno.bpf.o"


def test_force_bpf_gives_prefixed_name(tree):
    a = resolve("reno", "bpf")
    assert (a.source, a.kernel_name) == ("bpf", "cca_reno")


def test_bpf_used_when_kernel_lacks_it(tree):
    a = resolve("vegas")
    assert (a.source, a.kernel_name) == ("bpf", "cca_vegas")
    assert a.why.endswith("vegas.bpf.o")


def test_prefixed_name_means_bpf(tree):
    assert resolve("cca_reno").kernel_name == "cca_reno"
    with pytest.raises(UnknownAlgorithm):
        resolve("cca_reno", "kernel")   # a contradiction is an error even when not strict


def test_registered_bpf_names_are_not_kernel_algorithms(tree):
    avail = available()
    assert "cca_vegas" not in avail
    assert avail["vegas"].source == "bpf"


def test_source_without_object_says_make_bpf(tree):
    a = resolve("dctcp")
    assert a.source == "unavailable"
    assert "make bpf" in a.why
    with pytest.raises(UnknownAlgorithm) as ei:
        resolve("dctcp", strict=True)
    assert "dctcp" in str(ei.value) and "make bpf" in str(ei.value)


def test_force_kernel_for_bpf_only_algorithm(tree):
    with pytest.raises(UnknownAlgorithm) as ei:
        resolve("vegas", "kernel", strict=True)
    assert "has no 'vegas'" in str(ei.value)


def test_force_bpf_for_kernel_only_algorithm(tree):
    with pytest.raises(UnknownAlgorithm) as ei:
        resolve("bbr", "bpf", strict=True)
    assert "no BPF implementation" in str(ei.value)


def test_unknown_name_lists_known_ones(tree):
    assert resolve("nosuch").source == "unavailable"
    with pytest.raises(UnknownAlgorithm) as ei:
        resolve("nosuch", strict=True)
    assert "known:" in str(ei.value) and "cubic" in str(ei.value)


def test_bad_force_value(tree):
    with pytest.raises(ValueError, match="force='module': expected None, 'kernel' or 'bpf'"):
        resolve("reno", "module")


def test_loadable_module_counts_as_kernel(tree, monkeypatch):
    monkeypatch.setattr(registry, "kernel_modules", lambda: {"vegas": "tcp_vegas"})
    a = resolve("vegas")
    assert (a.source, a.kernel_name, a.module) == ("kernel", "vegas", "tcp_vegas")
    assert resolve("vegas", "bpf").kernel_name == "cca_vegas"


def test_available_lists_catalog_with_reasons(tree):
    avail = available()
    assert set(registry.CATALOG) <= set(avail)
    assert avail["cubic"].source == "kernel"
    assert avail["westwood"].source == "unavailable"
    assert avail["westwood"].why


def _user_dir(tmp_path, *names):
    d = tmp_path / "mycc"
    d.mkdir(exist_ok=True)
    for n in names:
        (d / f"{n}.bpf.c").write_text("/* user */\n")
    return d


def test_user_algorithm_from_cc_path(tree, tmp_path, monkeypatch):
    d = _user_dir(tmp_path, "mine")
    monkeypatch.setenv("CCARENA_CC_PATH", str(d))
    monkeypatch.setattr(registry, "compile_user", lambda src: tmp_path / f"{src.name[:-6]}.o")
    a = resolve("mine")
    assert (a.source, a.kernel_name) == ("bpf", "cca_mine")
    assert a.bpf_object == tmp_path / "mine.o"


def test_user_dir_argument_and_priority(tree, tmp_path, monkeypatch):
    d1 = _user_dir(tmp_path, "mine")
    d2 = tmp_path / "other"
    d2.mkdir()
    (d2 / "mine.bpf.c").write_text("/* shadowed */\n")
    monkeypatch.setenv("CCARENA_CC_PATH", str(d2))
    monkeypatch.setattr(registry, "compile_user", lambda src: src.with_suffix(".o"))
    a = resolve("mine", extra_dirs=[d1])
    assert a.bpf_object == d1 / "mine.bpf.o"


def test_user_file_may_not_shadow_shipped_algorithm(tree, tmp_path, monkeypatch):
    d = _user_dir(tmp_path, "reno", "westwood")
    monkeypatch.setenv("CCARENA_CC_PATH", str(d))
    monkeypatch.setattr(registry, "compile_user", lambda src: src.with_suffix(".o"))
    avail = available()
    assert avail["westwood"].source == "unavailable"
    assert "shipped algorithm" in avail["westwood"].why
    assert resolve("reno", "bpf").bpf_object == tree / "build" / "bpf" / "cc" / "reno.bpf.o"


def test_user_name_too_long(tree, tmp_path, monkeypatch):
    d = _user_dir(tmp_path, "averyverylongname")
    monkeypatch.setenv("CCARENA_CC_PATH", str(d))
    a = resolve("averyverylongname")
    assert a.source == "unavailable" and "at most 11" in a.why


def test_user_compile_error_is_reported(tree, tmp_path, monkeypatch):
    d = _user_dir(tmp_path, "broken")
    monkeypatch.setenv("CCARENA_CC_PATH", str(d))

    def fail(src):
        raise CompileError(str(src), ["clang"], 1, "broken.bpf.c:1:1: error: expected ';'")

    monkeypatch.setattr(registry, "compile_user", fail)
    a = resolve("broken")
    assert a.source == "unavailable" and "expected ';'" in a.why


def test_compile_flags_match_makefile():
    mk = (Path(__file__).resolve().parents[2] / "mk" / "bpf.mk").read_text()
    for flag in ("-O2", "-g", "-target bpf", "-Wall"):
        assert flag in mk
    flags = registry.compile_flags()
    assert flags[:4] == ["-O2", "-g", "-target", "bpf"]
