"""Boot the reference kernel (ccarena.vm.image) under QEMU with virtme-ng and run one
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

The accelerator is KVM when /dev/kvm works for this kernel — probed by booting it once to
the point where it looks for init, since a /dev/kvm that opens can still fail on the
first instruction (nested KVM here: "failed to set MSR") — and TCG otherwise.

Nothing outlives boot(): vng runs in its own process group, which is killed on a
timeout, an error or Ctrl-C; the session folder is removed."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ccarena.errors import CcarenaError
from ccarena.paths import build_dir, repo_root
from ccarena.vm import image as image_mod

BOOT_TIMEOUT_S = 300.0      # launch to the guest script's first line, TCG on a busy host
KVM_PROBE_TIMEOUT_S = 30.0
HANDSHAKE_POLLS = 1200      # x 50 ms the guest waits for host.json
VNG_VERSION = "1.42"
# passed into the guest: ccarena's own settings and what tests and CI read
ENV_PREFIXES = ("CCARENA_",)
# (PYTHONPATH: the guest imports the code the host does, e.g. a worktree's src/ beside
# another checkout's venv)
ENV_NAMES = ("PYTEST_ADDOPTS", "CI", "COLUMNS", "LANG", "LC_ALL", "NO_COLOR", "PYTHONPATH")


class VmError(CcarenaError):
    """Booting the reference kernel, or running a command in it, failed."""


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


# -- pure parts (unit-tested) ---------------------------------------------------------------

@dataclass(frozen=True)
class KvmProbe:
    usable: bool
    why: str


def choose_accel(want: str, kvm: KvmProbe) -> tuple[str, str]:
    """-> (accel, why). `want` is auto, kvm or tcg; kvm when it cannot work is an error."""
    if want not in ("auto", "kvm", "tcg"):
        raise VmError(f"accelerator {want!r}: expected auto, kvm or tcg")
    if want == "tcg":
        return "tcg", "asked for"
    if kvm.usable:
        return "kvm", "asked for" if want == "kvm" else kvm.why
    if want == "kvm":
        raise VmError(f"cannot boot the reference kernel with KVM: {kvm.why}")
    return "tcg", f"KVM unusable: {kvm.why}"


def vng_argv(img: image_mod.KernelImage, *, accel: str, cpus: int, memory: str,
             rwdirs: list[str], cwd: str, guest_cmd: str, vng: str = "vng",
             name: str = "ccarena-vm") -> list[str]:
    """The vng command line that boots `img` and runs `guest_cmd` (a shell line) in it.
    --verbose sends the guest's console (kernel log, init's messages) to vng's stderr,
    which boot() keeps as the console log."""
    if accel not in ("kvm", "tcg"):
        raise ValueError(f"accel must be kvm or tcg, not {accel!r}")
    argv = [vng, "--run", img.vmlinuz, "--name", name, "--cpus", str(int(cpus)),
            "--memory", str(memory), "--cwd", cwd, "--verbose"]
    if accel == "tcg":
        # one host thread for all vCPUs: with a thread each (QEMU's default), a guest
        # kernel that patches its own code across CPUs (static keys, e.g. "sched_clock:
        # Marking stable" at boot) met a stale int3 and panicked in about one boot of
        # eight here ("Oops: int3 ... sched_clock_cpu")
        # and no AVX2 for the guest: QEMU 7.2's emulation of it (Debian bookworm's) gets
        # masked gathers wrong — numpy's AVX2 argsort (vpgatherqq) returned unsorted
        # indices and now and then died of a general protection fault in the guest;
        # without AVX2 numpy and the rest take their SSE4 paths
        argv += ["--disable-kvm", "--qemu-opts=-accel tcg,thread=single -cpu max,avx2=off"]
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


# -- KVM ------------------------------------------------------------------------------------

KVM_GET_API_VERSION = 0xAE00


def _dev_kvm() -> str | None:
    """Why /dev/kvm cannot be used, or None."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return f"/dev/kvm: {e.strerror}"
    try:
        v = fcntl.ioctl(fd, KVM_GET_API_VERSION)
        return None if v == 12 else f"/dev/kvm: API version {v}, expected 12"
    except OSError as e:
        return f"/dev/kvm: KVM_GET_API_VERSION: {e.strerror}"
    finally:
        os.close(fd)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def accel_for(config: "VmConfig", img: image_mod.KernelImage) -> tuple[str, str]:
    """The accelerator a boot of `img` with `config` uses, and why (KVM probed only when
    the config allows it; the probe is cached)."""
    return choose_accel(config.accel, probe_kvm(img) if config.accel != "tcg"
                        else KvmProbe(False, "not probed"))


def probe_kvm(img: image_mod.KernelImage, qemu: str | None = None,
              cache: Path | None = None) -> KvmProbe:
    """Whether KVM boots `img`: the kernel must reach its search for init within
    KVM_PROBE_TIMEOUT_S. Cached until the host reboots (keyed by its boot id)."""
    why = _dev_kvm()
    if why:
        return KvmProbe(False, why)
    qemu = qemu or shutil.which("qemu-system-x86_64")
    if not qemu:
        return KvmProbe(False, "qemu-system-x86_64 not installed (make vm)")
    cache = cache or image_mod.cache_dir()
    key = {"boot_id": _boot_id(), "qemu": qemu, "kernel": img.release}
    memo = cache / "kvm-probe.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        d = json.loads(memo.read_text())
        if d["key"] == key:
            return KvmProbe(d["usable"], d["why"])
    argv = [qemu, "-machine", "q35,accel=kvm", "-cpu", "host", "-m", "256", "-smp", "1",
            "-nodefaults", "-display", "none", "-monitor", "none", "-serial", "stdio",
            "-no-reboot", "-kernel", img.vmlinuz,
            "-append", "console=ttyS0 panic=-1 init=/ccarena-kvm-probe"]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    out, deadline = b"", time.monotonic() + KVM_PROBE_TIMEOUT_S
    try:
        os.set_blocking(p.stdout.fileno(), False)
        while time.monotonic() < deadline:
            chunk = p.stdout.read() or b""
            out += chunk
            if b"No working init found" in out or p.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        _kill_group(p)
    text = out.decode(errors="replace")
    reached = "No working init found" in text
    if reached:
        res = KvmProbe(True, "KVM boots the reference kernel")
    else:
        bad = [ln.strip() for ln in text.splitlines()
               if "error" in ln.lower() or "assert" in ln.lower()]
        res = KvmProbe(False, (bad[0] if bad else "the kernel did not reach init within "
                               f"{KVM_PROBE_TIMEOUT_S:.0f} s") + " (nested KVM?)")
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps({"key": key, "usable": res.usable, "why": res.why}))
    return res


# -- running --------------------------------------------------------------------------------

def _kill_group(p: subprocess.Popen, grace_s: float = 3.0) -> None:
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


def tool_versions(qemu: str | None = None) -> dict:
    out = {"vng": VNG_VERSION}
    qemu = qemu or shutil.which("qemu-system-x86_64")
    if qemu:
        with contextlib.suppress(OSError, subprocess.SubprocessError, IndexError):
            out["qemu"] = subprocess.run([qemu, "--version"], capture_output=True, text=True,
                                         timeout=10).stdout.splitlines()[0]
    return out


def _venv_bin() -> Path:
    return Path(sys.executable).parent


def find_vng() -> str:
    for p in (_venv_bin() / "vng", shutil.which("vng")):
        if p and os.access(p, os.X_OK):
            return str(p)
    raise VmError("cannot boot the reference kernel: vng (virtme-ng) is not installed; "
                  "run `make vm`")


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
    if not shutil.which("qemu-system-x86_64"):
        raise VmError("cannot boot the reference kernel: qemu-system-x86_64 is not "
                      "installed; run `make vm`")
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
    env = guest_env(os.environ, config.env, str(_venv_bin()))
    (session / "guest.sh").write_text(guest_script(str(session), list(argv), env, cwd))
    full = vng_argv(img, accel=accel, cpus=config.cpus, memory=config.memory, rwdirs=rwdirs,
                    cwd=cwd, guest_cmd=f"sh {shlex.quote(str(session / 'guest.sh'))}",
                    vng=vng, name=f"ccarena-vm-{sid}")
    venv_env = dict(os.environ, PATH=f"{_venv_bin()}:{os.environ.get('PATH', '')}")
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
            _kill_group(p)
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
