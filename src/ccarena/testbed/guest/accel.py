"""Which accelerator QEMU gets, and what a guest under it carries.

    probe_kvm(img) -> KvmProbe          does KVM boot this kernel here (cached per host boot)
    choose_accel(want, probe) -> (accel, why)    pure
    carries(accel) -> Carries           the rate and sampling a guest is known to carry

The accelerator is KVM when /dev/kvm works for this kernel — probed by booting it once to
the point where it looks for init, since a /dev/kvm that opens can still fail on the
first instruction (nested KVM: "failed to set MSR") — and TCG otherwise."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ccarena.testbed.guest import image as image_mod
from ccarena.testbed.guest.vng import VmError, kill_group

KVM_PROBE_TIMEOUT_S = 30.0
KVM_GET_API_VERSION = 0xAE00

# What a guest under TCG carried with its samples intact on a 2-core x86 machine shared
# with other work (docs/vm.md, Limits): one TCP flow at 2 Mbit/s (5 at most), sampled
# every 50 ms. Under KVM a guest runs at near native speed: no limit of its own.
TCG_RATE_BPS = 5e6
TCG_SAMPLE_S = 0.05


@dataclass(frozen=True)
class KvmProbe:
    usable: bool
    why: str


@dataclass(frozen=True)
class Carries:
    """What a guest under an accelerator carries: None where it sets no limit."""
    accel: str
    rate_bps: float | None
    sample_s: float | None


def carries(accel: str) -> Carries:
    if accel == "tcg":
        return Carries("tcg", TCG_RATE_BPS, TCG_SAMPLE_S)
    return Carries(accel, None, None)


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


def accel_for(want: str, img) -> tuple[str, str]:
    """The accelerator a boot of `img` uses when `want` is asked for, and why (KVM probed
    only when `want` allows it; the probe is cached)."""
    return choose_accel(want, probe_kvm(img) if want != "tcg"
                        else KvmProbe(False, "not probed"))


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


def probe_kvm(img, qemu: str | None = None, cache: Path | None = None) -> KvmProbe:
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
        kill_group(p)
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
