"""Boot the reference kernel (ccarena.testbed.guest.image) under QEMU with virtme-ng and run one
command in it as root, over the host's own files.

    boot(argv, config) -> VmResult   CMD's exit status (and output), the boot time

The guest sees the host's root filesystem read-only, with throw-away overlays on /etc,
/tmp, /var...; the project folder, the results folder and any `rwdirs` are writable and
are the host's. The command runs through a small guest script (guest_script) that
writes its output and exit status into a session folder under build/vm/ (writable in
the guest): this needs neither udev nor virtio-serial in the guest, which virtme-ng
otherwise wants for the command's output — udev's device scan alone takes ~25 s under
TCG. The host follows those files while the guest runs and echoes them.

Boot time is the time from launching vng to the guest script's first line; the guest
waits for the host to hand it that figure (host.json) and exports it as CCARENA_VM, so a
run inside records it (ccarena.vm.guest.vm_record).

The accelerator is KVM when /dev/kvm works for this kernel, TCG otherwise
(testbed/guest/accel.py).

Nothing outlives boot(): vng runs in its own process group, which is killed on a
timeout, an error or Ctrl-C; the session folder is removed."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ccarena.paths import build_dir, repo_root
from ccarena.testbed.guest import image as image_mod
from ccarena.testbed.guest.accel import (KvmProbe, choose_accel,  # noqa: F401 (re-exported)
                                         probe_kvm)
from ccarena.testbed.guest.accel import accel_for as _accel_for
from ccarena.testbed.guest.vng import (VmError, find_qemu, find_vng,  # noqa: F401
                                       guest_env, kill_group, tool_versions, venv_bin,
                                       venv_environ, vng_argv)

BOOT_TIMEOUT_S = 300.0      # launch to the guest script's first line, TCG on a busy host
HANDSHAKE_POLLS = 1200      # x 50 ms the guest waits for host.json


@dataclass
class VmConfig:
    accel: str = "auto"             # auto | kvm | tcg
    cpus: int = 2
    memory: str = "2G"
    rwdirs: tuple = ()              # host folders the guest may write, besides the project
    cwd: str | None = None          # default: the caller's working directory
    timeout_s: float | None = None  # whole command; None: no limit
    env: dict = field(default_factory=dict)   # extra environment for the command


@dataclass
class VmResult:
    rc: int
    accel: str
    accel_why: str
    kernel: str
    boot_s: float
    wall_s: float
    stdout: str = ""                # when captured
    stderr: str = ""


# -- pure parts (unit-tested; the vng command line is testbed/guest/vng.py's) --------

def guest_script(session: str, argv: list[str], env: dict, cwd: str) -> str:
    """The shell script the guest runs: mark the start, wait for the host's boot record,
    run `argv` with its output and exit status in files of `session`."""
    q = shlex.quote
    s = q(session)
    lines = [
        "#!/bin/sh",
        f"S={s}",
        'cut -d" " -f1 /proc/uptime > "$S/started.tmp" && mv "$S/started.tmp" "$S/started"',
        "n=0",
        f'while [ ! -e "$S/host.json" ] && [ $n -lt {HANDSHAKE_POLLS} ]; do '
        "sleep 0.05; n=$((n+1)); done",
        'CCARENA_VM=$(cat "$S/host.json" 2>/dev/null); export CCARENA_VM',
    ]
    lines += [f"export {k}={q(str(v))}" for k, v in sorted(env.items())]
    lines += [
        f"cd {q(cwd)} || {{ echo 'ccarena vm: no folder {cwd} in the guest' >&2; exit 1; }}",
        f'{shlex.join(argv)} </dev/null >"$S/stdout" 2>"$S/stderr"',
        'echo $? > "$S/rc.tmp" && mv "$S/rc.tmp" "$S/rc"',
        "sync",
    ]
    return "\n".join(lines) + "\n"


def accel_for(config: "VmConfig", img: image_mod.KernelImage) -> tuple[str, str]:
    """The accelerator a boot of `img` with `config` uses, and why."""
    return _accel_for(config.accel, img)


# -- running --------------------------------------------------------------------------------

class _Follow:
    """Echoes what the guest appends to a file, as it comes (and keeps it)."""

    def __init__(self, path: Path, sink, keep: bool):
        self.path, self.sink, self.keep = path, sink, keep
        self.pos, self.kept = 0, []

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return
        if not data:
            return
        self.pos += len(data)
        text = data.decode(errors="replace")
        if self.keep:
            self.kept.append(text)
        if self.sink is not None:
            self.sink.write(text)
            self.sink.flush()


def boot(argv: list[str], config: VmConfig | None = None, *, capture: bool = False,
         stdout=None, stderr=None, log=None) -> VmResult:
    """Run `argv` as root in the reference kernel; -> VmResult with its exit status.
    Output is echoed to `stdout`/`stderr` (default: ours) as it comes; with `capture`
    it is kept in the result (and echoed only to sinks given). `log(msg)` hears about
    the boot (accelerator, boot time)."""
    config = config or VmConfig()
    if not argv:
        raise VmError("ccarena vm: no command given (ccarena vm -- CMD ...)")
    img = image_mod.locate()
    vng = find_vng()
    find_qemu()
    accel, why = accel_for(config, img)
    if log:
        log(f"vm: booting {img.release} ({accel}: {why})")
    sid = secrets.token_hex(4)
    sessions = build_dir() / "vm" / "sessions"
    session = sessions / sid
    session.mkdir(parents=True)
    cwd = str(Path(config.cwd or os.getcwd()).absolute())
    rwdirs = [str(repo_root())] + [str(Path(d).absolute()) for d in config.rwdirs]
    if not any(_under(session, d) for d in rwdirs):
        rwdirs.append(str(session))
    for d in rwdirs:
        if not Path(d).is_dir():
            shutil.rmtree(session, ignore_errors=True)
            raise VmError(f"cannot boot the reference kernel: the folder {d} to be writable "
                          "in the guest does not exist")
    env = guest_env(os.environ, config.env, str(venv_bin()))
    (session / "guest.sh").write_text(guest_script(str(session), list(argv), env, cwd))
    full = vng_argv(img, accel=accel, cpus=config.cpus, memory=config.memory, rwdirs=rwdirs,
                    cwd=cwd, guest_cmd=f"sh {shlex.quote(str(session / 'guest.sh'))}",
                    vng=vng, name=f"ccarena-vm-{sid}")
    venv_env = venv_environ()
    console_path = session / "console.log"
    out_f = _Follow(session / "stdout", None if capture and stdout is None
                    else (stdout or sys.stdout), capture)
    err_f = _Follow(session / "stderr", None if capture and stderr is None
                    else (stderr or sys.stderr), capture)
    t0 = time.monotonic()
    boot_s = None
    p = None
    try:
        with open(console_path, "wb") as console:
            # vng makes its ret and initramfs temp files in TMPDIR: the session's, so
            # they go with it whatever becomes of vng
            p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=console,
                                 stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                                 env=dict(venv_env, TMPDIR=str(session)))
            while p.poll() is None:
                now = time.monotonic()
                if boot_s is None and (session / "started").exists():
                    boot_s = now - t0
                    host = {"accel": accel, "accel_why": why, "boot_s": round(boot_s, 2),
                            "image": img.label, "host_kernel": platform.release(),
                            "cpus": config.cpus, "memory": config.memory,
                            **tool_versions()}
                    tmp = session / "host.json.tmp"
                    tmp.write_text(json.dumps(host))
                    tmp.replace(session / "host.json")
                    if log:
                        log(f"vm: booted in {boot_s:.1f} s")
                if boot_s is None and now - t0 > BOOT_TIMEOUT_S:
                    raise VmError(f"booting {img.release} ({accel}): no sign of the guest "
                                  f"after {BOOT_TIMEOUT_S:.0f} s: "
                                  f"{_tail(console_path)}")
                if config.timeout_s is not None and now - t0 > config.timeout_s:
                    raise VmError(f"ccarena vm: {shlex.join(argv)} did not end within "
                                  f"{config.timeout_s:.0f} s; the VM was stopped")
                out_f.poll()
                err_f.poll()
                time.sleep(0.1)
        out_f.poll()
        err_f.poll()
        wall = time.monotonic() - t0
        rc_file = session / "rc"
        if not rc_file.exists():
            raise VmError(f"booting {img.release} ({accel}): the guest stopped before "
                          f"{shlex.join(argv)} ended (vng exit {p.returncode}): "
                          f"{_tail(console_path)}")
        rc = int(rc_file.read_text().strip() or 1)
    finally:
        if p is not None:
            kill_group(p)
        with contextlib.suppress(OSError):
            shutil.copyfile(console_path, build_dir() / "vm" / "last-console.log")
        shutil.rmtree(session, ignore_errors=True)
        with contextlib.suppress(OSError):
            sessions.rmdir()
    return VmResult(rc=rc, accel=accel, accel_why=why, kernel=img.release,
                    boot_s=boot_s if boot_s is not None else float("nan"), wall_s=wall,
                    stdout="".join(out_f.kept), stderr="".join(err_f.kept))


def _under(p: Path, d: str) -> bool:
    try:
        p.resolve().relative_to(Path(d).resolve())
        return True
    except ValueError:
        return False


def _tail(console: Path, n: int = 3) -> str:
    """The console's last meaningful lines, for an error message."""
    try:
        lines = [ln.strip() for ln in console.read_text(errors="replace").splitlines()
                 if ln.strip()]
    except OSError:
        return "no console output"
    return " | ".join(lines[-n:]) or "no console output"
