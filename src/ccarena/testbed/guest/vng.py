"""virtme-ng's command line and processes, shared by `ccarena vm` (vm/boot.py: one command
in the reference kernel) and guest hosts (machine.py: a host of a run that is a VM).

    vng_argv(img, accel=..., ...)   the vng command line (pure)
    guest_env(environ, extra)       the environment a guest's command gets (pure)
    find_vng(), tool_versions()     what is installed
    kill_group(popen)               end a process started with start_new_session, and its group

virtme-ng boots a kernel under QEMU over the host's own files: the guest sees the host's
root filesystem read-only, with throw-away overlays on /etc, /tmp, /var..., and the
folders given with --rwdir writable (they are the host's)."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from ccarena.errors import CcarenaError

VNG_VERSION = "1.42"
# passed into the guest: ccarena's own settings and what tests and CI read
ENV_PREFIXES = ("CCARENA_",)
# (PYTHONPATH: the guest imports the code the host does, e.g. a worktree's src/ beside
# another checkout's venv)
ENV_NAMES = ("PYTEST_ADDOPTS", "CI", "COLUMNS", "LANG", "LC_ALL", "NO_COLOR", "PYTHONPATH")
# what vng hands QEMU through a shell (vng joins --qemu-opts with spaces, unquoted): an
# option holding anything else would be split or expanded on the way
QEMU_OPT_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          "_-.,=:/+")


class VmError(CcarenaError):
    """Booting the reference kernel (or another), or running a command in it, failed."""


def vng_argv(img, *, accel: str, cpus: int, memory: str, rwdirs: list[str], cwd: str,
             guest_cmd: str, vng: str = "vng", name: str = "ccarena-vm",
             qemu_opts: list[str] = ()) -> list[str]:
    """The vng command line that boots `img` (a KernelImage, or anything with a
    `vmlinuz` path) and runs `guest_cmd` (a shell line) in it. --verbose sends the
    guest's console (kernel log, init's messages) to vng's stderr, which the caller keeps
    as the console log. `qemu_opts`: more QEMU arguments (devices), each free of spaces
    and shell characters."""
    if accel not in ("kvm", "tcg"):
        raise ValueError(f"accel must be kvm or tcg, not {accel!r}")
    for o in qemu_opts:
        bad = set(o) - QEMU_OPT_SAFE
        if not o or bad:
            raise ValueError(f"QEMU option {o!r}: characters vng's shell would split or "
                             f"expand: {''.join(sorted(bad))!r}")
    argv = [vng, "--run", img.vmlinuz, "--name", name, "--cpus", str(int(cpus)),
            "--memory", str(memory), "--cwd", cwd, "--verbose"]
    opts = list(qemu_opts)
    if accel == "tcg":
        # one host thread for all vCPUs: with a thread each (QEMU's default), a guest
        # kernel that patches its own code across CPUs (static keys, e.g. "sched_clock:
        # Marking stable" at boot) met a stale int3 and panicked in about one boot of
        # eight here ("Oops: int3 ... sched_clock_cpu")
        # and no AVX2 for the guest: QEMU 7.2's emulation of it (Debian bookworm's) gets
        # masked gathers wrong — numpy's AVX2 argsort (vpgatherqq) returned unsorted
        # indices and now and then died of a general protection fault in the guest;
        # without AVX2 numpy and the rest take their SSE4 paths
        argv.append("--disable-kvm")
        opts = ["-accel", "tcg,thread=single", "-cpu", "max,avx2=off"] + opts
    if opts:
        argv.append("--qemu-opts=" + " ".join(opts))
    for d in dict.fromkeys(rwdirs):     # once each, in order
        argv += ["--rwdir", d]
    return argv + ["--exec", guest_cmd]


def guest_env(environ: dict, extra: dict | None = None, venv_bin: str | None = None) -> dict:
    """The environment the command gets: ccarena's settings and a few others from the
    host, the host's PATH with the project's venv first, and `extra`."""
    out = {k: v for k, v in environ.items()
           if (k.startswith(ENV_PREFIXES) and k != "CCARENA_VM") or k in ENV_NAMES}
    path = environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    for p in ("/usr/local/sbin", "/usr/sbin", "/sbin"):     # root's tools (tc, ip)
        if p not in path.split(":"):
            path += ":" + p
    out["PATH"] = f"{venv_bin}:{path}" if venv_bin else path
    out["PYTHONUNBUFFERED"] = "1"
    out.update(extra or {})
    return out


def venv_bin() -> Path:
    return Path(sys.executable).parent


def venv_environ() -> dict:
    """This process's environment with the venv's bin first (vng runs virtme-run by name)."""
    return dict(os.environ, PATH=f"{venv_bin()}:{os.environ.get('PATH', '')}")


def find_vng(what: str = "boot the reference kernel") -> str:
    for p in (venv_bin() / "vng", shutil.which("vng")):
        if p and os.access(p, os.X_OK):
            return str(p)
    raise VmError(f"cannot {what}: vng (virtme-ng) is not installed; run `make vm`")


def find_qemu(what: str = "boot the reference kernel") -> str:
    q = shutil.which("qemu-system-x86_64")
    if not q:
        raise VmError(f"cannot {what}: qemu-system-x86_64 is not installed; run `make vm`")
    return q


def tool_versions(qemu: str | None = None) -> dict:
    out = {"vng": VNG_VERSION}
    qemu = qemu or shutil.which("qemu-system-x86_64")
    if qemu:
        with contextlib.suppress(OSError, subprocess.SubprocessError, IndexError):
            out["qemu"] = subprocess.run([qemu, "--version"], capture_output=True, text=True,
                                         timeout=10).stdout.splitlines()[0]
    return out


def kill_group(p: subprocess.Popen, grace_s: float = 3.0) -> None:
    """End `p` and its process group (started with start_new_session: the group's id is
    p.pid), politely first."""
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)     # whatever of the group is left (qemu)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(5)
