"""Live-run records: /run/ccarena/runs/<run_id>.json holds the owner pid and namespaces.

A run writes its record before creating anything and deletes it after teardown, so
`ccarena cleanup` can tell a crashed run (owner dead) from a live one and remove exactly
what the crashed run made. A guest host's VM (testbed/guest/machine.py) is recorded the
same way under its own id, with the folder it keeps (`dirs`): removing its namespace
stops its QEMU, which runs inside."""
from __future__ import annotations

import json
import os
import re

from ccarena.testbed.netns import list_names, remove
from ccarena.testbed.topology import PREFIX

RUN_NS = re.compile(r"^" + PREFIX + r"([0-9a-f]{6})-[a-z0-9]+$")   # cca<run_id>-<role>
STATE_DIR = os.environ.get("CCARENA_STATE_DIR", "/run/ccarena")
RUNS_DIR = os.path.join(STATE_DIR, "runs")


def register(run_id: str, namespaces: list[str], extra: dict | None = None) -> None:
    os.makedirs(RUNS_DIR, exist_ok=True)
    rec = {"run_id": run_id, "pid": os.getpid(), "namespaces": namespaces, **(extra or {})}
    tmp = os.path.join(RUNS_DIR, f".{run_id}.tmp")
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.replace(tmp, os.path.join(RUNS_DIR, f"{run_id}.json"))


def unregister(run_id: str) -> None:
    try:
        os.unlink(os.path.join(RUNS_DIR, f"{run_id}.json"))
    except FileNotFoundError:
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def live_run_ids() -> set[str]:
    out = set()
    if not os.path.isdir(RUNS_DIR):
        return out
    for fn in os.listdir(RUNS_DIR):
        if not fn.endswith(".json"):
            continue
        try:
            with open(os.path.join(RUNS_DIR, fn)) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        if pid_alive(int(rec.get("pid", 0))):
            out.add(rec["run_id"])
    return out


def cleanup(all_runs: bool = False, only: set[str] | None = None) -> list[str]:
    """Remove namespaces, cgroups and recorded folders of runs whose owner is dead (or of
    every run with all_runs); `only`: of these run (or guest) ids alone. Returns what was
    removed."""
    live = set() if all_runs else live_run_ids()

    def gone(rid: str) -> bool:
        return rid not in live and (only is None or rid in only)
    removed = []
    for name in list_names(PREFIX):
        m = RUN_NS.match(name)
        if not m or not gone(m.group(1)):
            continue
        remove(name)
        removed.append(name)
    from ccarena.testbed.cgroups import cleanup_stale as cgroups_cleanup
    removed += cgroups_cleanup(live, only)
    if os.path.isdir(RUNS_DIR):
        for fn in os.listdir(RUNS_DIR):
            rid = fn.split(".")[0] if not fn.startswith(".") else fn[1:].split(".")[0]
            if gone(rid):
                removed += _remove_dirs(os.path.join(RUNS_DIR, fn))
                try:
                    os.unlink(os.path.join(RUNS_DIR, fn))
                except FileNotFoundError:
                    pass
    return removed


def _remove_dirs(record: str) -> list[str]:
    """The folders a dead run's record names (a guest's: its console, socket, outputs)."""
    import shutil
    try:
        with open(record) as f:
            dirs = json.load(f).get("dirs") or []
    except (OSError, ValueError, AttributeError):
        return []
    out = []
    for d in dirs:
        if os.path.isdir(d):
            shutil.rmtree(d, ignore_errors=True)
            out.append(d)
    return out
