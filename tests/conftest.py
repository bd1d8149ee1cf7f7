"""Shared fixtures. Tests that need namespaces are marked `root`; every one of them is
checked for leaks: no namespace, ccarena process or registered struct_ops of ours may
outlive it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "studies"
IS_ROOT = os.geteuid() == 0


def pytest_collection_modifyitems(config, items):
    if IS_ROOT:
        return
    skip = pytest.mark.skip(reason="needs root for network namespaces")
    for it in items:
        if "root" in it.keywords:
            it.add_marker(skip)


def ccarena_namespaces() -> set[str]:
    from ccarena import netns
    from ccarena.testbed.registry import RUN_NS
    return {n for n in netns.list_names("cca") if RUN_NS.match(n)}


def ccarena_processes() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "ccarena-(flow|link) --config .*/runs/"], capture_output=True, text=True)
    return {int(p) for p in out.stdout.split()}


def our_struct_ops() -> set[str]:
    r = subprocess.run(["bpftool", "struct_ops", "list"], capture_output=True, text=True)
    return {line.split()[1] for line in r.stdout.splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith("cca_")}


@pytest.fixture
def no_leaks():
    """Asserts that the test leaves nothing of ccarena's behind."""
    before_ns, before_p, before_ops = ccarena_namespaces(), ccarena_processes(), our_struct_ops()
    yield
    assert ccarena_namespaces() - before_ns == set(), "namespaces left behind"
    assert ccarena_processes() - before_p == set(), "processes left behind"
    assert our_struct_ops() - before_ops == set(), "struct_ops left registered"


def ccarena_cli(*args, cwd=None, timeout=600, check=True, env=None):
    """Run the CLI as a user would (a separate process)."""
    r = subprocess.run([sys.executable, "-m", "ccarena.cli", *map(str, args)], cwd=cwd,
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    if check and r.returncode != 0:
        raise AssertionError(f"ccarena {' '.join(map(str, args))} -> {r.returncode}\n"
                             f"{r.stdout}\n{r.stderr}")
    return r
