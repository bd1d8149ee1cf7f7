"""Shared fixtures. Tests that need namespaces are marked `root`; every one of them is
checked for leaks: no namespace, ccarena process, host cgroup or registered struct_ops of
ours may outlive it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "studies"
IS_ROOT = os.geteuid() == 0

# tests/vm shares the user-space link tests' helpers (tests/integration/linkhelpers.py…).
# This is the suite's only conftest.py: pytest imports every conftest as the module
# `conftest`, so a second one would replace this one in sys.modules and the tests'
# `from conftest import …` would find the wrong file.
sys.path.insert(0, str(REPO / "tests" / "integration"))


def pytest_collection_modifyitems(config, items):
    if IS_ROOT:
        return
    skip = pytest.mark.skip(reason="needs root for network namespaces")
    for it in items:
        if "root" in it.keywords:
            it.add_marker(skip)


def ccarena_namespaces() -> set[str]:
    from ccarena.testbed import netns
    from ccarena.testbed.leftovers import RUN_NS
    return {n for n in netns.list_names("cca") if RUN_NS.match(n)}


def ccarena_processes() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "ccarena-(flow|link) --config .*/(runs|superseded)/"],
                         capture_output=True, text=True)
    return {int(p) for p in out.stdout.split()}


def ccarena_cgroups() -> set[str]:
    """Host cgroups of ccarena runs (ccarena-<run_id>-<host>), in every hierarchy."""
    from ccarena.testbed import cgroups
    out = set()
    for b in [cgroups.ROOT] + [os.path.join(cgroups.ROOT, c) for c in ("cpu", "cpuset", "memory")]:
        if os.path.isdir(b):
            out |= {os.path.join(b, n) for n in os.listdir(b) if n.startswith(cgroups.PREFIX)}
    return out


def foreign_cgroups() -> set[str]:
    """The cgroups of the runs that live processes outside this test's process tree own."""
    rids = foreign_runs(ids=True)[2]
    return {d for d in ccarena_cgroups() if os.path.basename(d)[len("ccarena-"):][:6] in rids}


def our_struct_ops() -> set[str]:
    r = subprocess.run(["bpftool", "struct_ops", "list"], capture_output=True, text=True)
    return {line.split()[1] for line in r.stdout.splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith("cca_")}


def orphan_xdp_programs() -> set[int]:
    """The user-space link's XDP programs (named cca_xsk, docs/link.md) loaded while no
    ccarena-link process lives. A link's programs are held by its bpf_link and socket
    descriptors, so they go with it; one that stays without any link running was left
    behind. (While some link runs, possibly another session's, programs cannot be told
    apart: this bpftool does not name their holders.)"""
    import json
    if subprocess.run(["pgrep", "-f", "ccarena-link"], capture_output=True).returncode == 0:
        return set()
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    try:
        return {p["id"] for p in json.loads(r.stdout or "[]") if p.get("name") == "cca_xsk"}
    except ValueError:
        return set()


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def foreign_runs(ids: bool = False) -> tuple:
    """Namespaces and owner pids (and with `ids`, run ids) of runs that live processes
    OUTSIDE this test's process tree own right now (another session or a study running
    beside the tests): the leak checks must not blame this test for them."""
    import json
    from ccarena.testbed import leftovers as registry
    me = os.getpid()
    names, owners, rids = set(), set(), set()
    if os.path.isdir(registry.RUNS_DIR):
        for fn in os.listdir(registry.RUNS_DIR):
            try:
                rec = json.loads(open(os.path.join(registry.RUNS_DIR, fn)).read())
            except (OSError, ValueError):
                continue
            pid = int(rec.get("pid", 0))
            if registry.pid_alive(pid) and me not in _ancestors(pid):
                names |= set(rec.get("namespaces", []))
                owners.add(pid)
                rids.add(str(rec.get("run_id", "")))
    return (names, owners, rids) if ids else (names, owners)


@pytest.fixture
def no_leaks():
    """Asserts that the test leaves nothing of ccarena's behind (other live runs on the
    machine are told apart through their run records and process ancestry)."""
    before_ns, before_p, before_ops = ccarena_namespaces(), ccarena_processes(), our_struct_ops()
    before_cg = ccarena_cgroups()
    yield
    names, owners = foreign_runs()
    left_ns = ccarena_namespaces() - before_ns - names
    left_p = {p for p in ccarena_processes() - before_p if not (_ancestors(p) & owners)}
    left_cg = {d for d in ccarena_cgroups() - before_cg - foreign_cgroups()
               if os.path.isdir(d)}     # not one another run removed meanwhile
    assert left_ns == set(), "namespaces left behind"
    assert left_p == set(), "processes left behind"
    assert left_cg == set(), "cgroups left behind"
    if not owners:   # BPF algorithms are shared by every live run: judge them when alone
        assert our_struct_ops() - before_ops == set(), "struct_ops left registered"
        assert orphan_xdp_programs() == set(), "the link's XDP programs left loaded"


def ccarena_cli(*args, cwd=None, timeout=600, check=True, env=None):
    """Run the CLI as a user would (a separate process)."""
    r = subprocess.run([sys.executable, "-m", "ccarena.cli", *map(str, args)], cwd=cwd,
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    if check and r.returncode != 0:
        raise AssertionError(f"ccarena {' '.join(map(str, args))} -> {r.returncode}\n"
                             f"{r.stdout}\n{r.stderr}")
    return r


@pytest.fixture(autouse=True)
def report_reruns(request):
    """A run the machine's noise made invalid is run again (study.reruns): a test must
    not get that second try silently. After each test, every attempt set aside under its
    tmp_path is reported as a warning (shown in the summary: pytest -ra)."""
    base = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames \
        else None
    yield
    if base is None:
        return
    import json
    import warnings
    for m in sorted(base.rglob("superseded/*/meta.json")):
        if m.parent.name.startswith("."):      # a re-run being staged, not one set aside
            continue
        try:
            reasons = json.loads(m.read_text()).get("invalid_reasons") or []
        except (OSError, ValueError):
            reasons = ["(unreadable)"]
        warnings.warn(f"{request.node.nodeid}: run {m.parent.name} was run again after: "
                      + "; ".join(reasons))
