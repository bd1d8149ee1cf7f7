"""environment.json: what a study records of the machine to be re-run, here every
ccarena tool's version and the commit of the checkout (run/environment.py). No root."""
import os
import re
import subprocess

import pytest

from ccarena.paths import find_binary
from ccarena.run import environment

TOOLS = ("ccarena-flow", "ccarena-link", "ccarena-trace", "ccarena-cc")


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def _checkout(tmp_path):
    """A git checkout with one committed file, f."""
    root = tmp_path / "checkout"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "f").write_text("1")
    _git(root, "add", "f")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    return root


def test_every_tool_version_and_the_commit_are_recorded(tmp_path, monkeypatch):
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in TOOLS:
        b = bins / name
        b.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "{name} 9.8.7 (git abc)"\n')
        b.chmod(0o755)
    root = _checkout(tmp_path)
    monkeypatch.setenv("CCARENA_BIN_DIR", str(bins))
    monkeypatch.setenv("CCARENA_ROOT", str(root))
    environment.machine.cache_clear()
    try:
        tools = environment.machine()["tools"]
        for name in TOOLS:
            assert tools[name] == f"{name} 9.8.7 (git abc)"
        assert tools["ccarena_commit"] == _git(root, "rev-parse", "--short=12", "HEAD")
        (root / "f").write_text("2")        # a change not committed is said
        environment.machine.cache_clear()
        assert environment.machine()["tools"]["ccarena_commit"].endswith("+dirty")
        assert environment.worker()["commit"]
    finally:
        environment.machine.cache_clear()
        environment.worker.cache_clear()


@pytest.mark.skipif(not all(find_binary(n) for n in TOOLS),
                    reason="the Rust tools are not built (`make build`)")
@pytest.mark.parametrize("name", TOOLS)
def test_each_built_tool_answers_version(name):
    out = subprocess.run([find_binary(name), "--version"], capture_output=True, text=True,
                         timeout=10, env={**os.environ, "RUST_LOG": ""})
    assert out.returncode == 0
    assert re.match(rf"^{name} \d+\.\d+\.\d+\S* \(git \S+\)$", out.stdout.strip()), out.stdout


def test_reading_the_commit_never_writes_the_checkout_s_index(tmp_path, monkeypatch):
    """`git status` refreshes a stale index and writes it back under .git/index.lock. A
    study reads the commit while the user works in the checkout, and in the reference
    kernel's VM over a shared folder, where a git killed by its time-out left the lock
    behind and the user's next commit failed: ccarena only reads."""
    root = _checkout(tmp_path)
    # the file's stat data no longer match the index: a status would refresh it
    os.utime(root / "f", (1, 1))
    index = root / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.read_bytes())
    monkeypatch.setenv("CCARENA_ROOT", str(root))
    assert environment._git_commit() == _git(root, "rev-parse", "--short=12", "HEAD")
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before
    assert not (root / ".git" / "index.lock").exists()
