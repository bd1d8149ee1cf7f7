"""Start, stop and inspect the ``ccarena-cc hold`` processes that keep BPF
congestion controls registered (one process per algorithm; see crates/cc).

A holder attaches the object's struct_ops map as a BPF link; the kernel
unregisters the algorithm when the link's last fd closes — when the holder exits
or is killed. The holder also exits by itself once no live run file remains in
its bookkeeping directory (ccarena.cc.refcount).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ccarena.cc import paths
from ccarena.cc.errors import CCError, LoadError
from ccarena.cc.refcount import pid_alive
from ccarena.cc.catalog import kernel_available

READY_TIMEOUT_S = 30.0
# Holders this process started (they outlive it if need be). Kept so that a holder
# that exits on its own is reaped (poll) instead of lingering as a zombie.
_children: dict[int, subprocess.Popen] = {}
STOP_TIMEOUT_S = 5.0
_ERR = re.compile(r"^ccarena-cc: (?P<attempt>[^:]+): (?P<rest>.*?)(?: \(errno (?P<errno>\d+)\))?$")


def registered() -> set[str]:
    return set(kernel_available())


def parse_loader_error(obj: str, stderr: str) -> LoadError:
    """Turn ccarena-cc's stderr into a LoadError (file, errno, message, log tail)."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    errno = None
    message = "loader failed without a message"
    tail: list[str] = []
    for i, line in enumerate(lines):
        m = _ERR.match(line)
        if m:
            rest = m.group("rest")
            prefix = f"{obj}: "
            if rest.startswith(prefix):
                rest = rest[len(prefix):]
            message = f"{m.group('attempt')}: {rest}"
            errno = int(m.group("errno")) if m.group("errno") else None
            tail = [l for l in lines[i + 1:] if not l.startswith("--- ")][-20:]
            break
    else:
        tail = lines[-20:]
    return LoadError(obj, errno, message, tail)


def start_holder(obj: Path, kernel_name: str, watch: Path, log: Path | None = None) -> int:
    """Start ``ccarena-cc hold`` for `obj`; return its pid once the algorithm is
    registered. Raises LoadError (with errno and verifier log tail) on failure."""
    reap_children()
    exe = paths.loader()
    if exe is None or not Path(exe).is_file():
        raise CCError(f"register {kernel_name}: loader ccarena-cc not found "
                      f"(build it with `make bpf`, or set CCARENA_CC_LOADER)")
    argv = [str(exe), "hold", "--obj", str(obj), "--name", kernel_name, "--watch", str(watch)]
    errf = open(log or (watch / "holder.log"), "w+")
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=errf, start_new_session=True, close_fds=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        line = b""
        while time.monotonic() < deadline:
            r, _, _ = select.select([p.stdout], [], [], 0.2)
            if r:
                line = p.stdout.readline()
                break
            if p.poll() is not None:
                break
        if not line.startswith(b"READY"):
            if p.poll() is None:
                p.kill()
            p.wait()
            errf.seek(0)
            raise parse_loader_error(str(obj), errf.read())
        p.stdout.close()
        _children[p.pid] = p
        return p.pid
    finally:
        errf.close()


def stop_holder(pid: int, start: int = 0, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the holder and wait until it is gone (SIGKILL after `timeout`)."""
    if not pid_alive(pid, start):
        _reap(pid)
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid, start):
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    while pid_alive(pid, start):
        _reap(pid)
        time.sleep(0.02)


def _reap(pid: int) -> None:
    p = _children.get(pid)
    if p is not None:
        if p.poll() is not None:
            del _children[pid]
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def reap_children() -> None:
    """Collect holders started by this process that have exited."""
    for pid in list(_children):
        _reap(pid)


def wait_unregistered(kernel_name: str, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while kernel_name in registered():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# --- struct_ops registered outside any holder (e.g. `bpftool struct_ops register`) ---
def _bpftool() -> str | None:
    return shutil.which("bpftool") or ("/usr/sbin/bpftool" if os.path.exists("/usr/sbin/bpftool") else None)


def tcp_struct_ops() -> list[dict]:
    """``[{id, map_name, name}]`` for every registered tcp_congestion_ops struct_ops."""
    bt = _bpftool()
    if not bt:
        return []
    r = subprocess.run([bt, "-j", "struct_ops", "list"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        return []
    out = []
    for e in json.loads(r.stdout):
        if e.get("kernel_struct_ops") != "tcp_congestion_ops":
            continue
        name = None
        d = subprocess.run([bt, "-j", "struct_ops", "dump", "id", str(e["id"])],
                           capture_output=True, text=True)
        if d.returncode == 0:
            name = struct_ops_name(d.stdout)
        out.append({"id": e["id"], "map_name": e.get("name"), "name": name})
    return out


def struct_ops_name(dump: str) -> str | None:
    """The algorithm's name in `bpftool -j struct_ops dump id N`'s output. bpftool prints
    one JSON object per part of the map (its map info, then the struct_ops value) joined
    by commas, not one array: each is decoded in turn."""
    dec = json.JSONDecoder()
    i = 0
    while True:
        while i < len(dump) and dump[i] in " \t\r\n,[]":
            i += 1
        if i >= len(dump):
            return None
        try:
            obj, i = dec.raw_decode(dump, i)
        except ValueError:
            return None
        for part in obj if isinstance(obj, list) else [obj]:
            ops = part.get("bpf_struct_ops_tcp_congestion_ops") if isinstance(part, dict) \
                else None
            if isinstance(ops, dict) and isinstance(ops.get("data"), dict):
                return ops["data"].get("name")


def unregister_struct_ops(map_id: int) -> bool:
    bt = _bpftool()
    if not bt:
        return False
    r = subprocess.run([bt, "struct_ops", "unregister", "id", str(map_id)], capture_output=True, text=True)
    return r.returncode == 0


def holder_processes(exe: Path | None = None) -> list[tuple[int, str]]:
    """(pid, kernel_name) of every live ``ccarena-cc hold`` process."""
    import psutil
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        argv = p.info["cmdline"] or []          # None: gone meanwhile, or not ours to read
        if len(argv) > 4 and argv[0].endswith("ccarena-cc") and argv[1] == "hold" \
                and p.info["status"] not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            try:
                out.append((p.pid, argv[argv.index("--name") + 1]))
            except (ValueError, IndexError):
                continue
    return out
