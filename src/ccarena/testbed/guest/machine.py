"""One guest: a QEMU VM booted with virtme-ng over the host's files, its NIC on a tap
device, its agent (agent.py) on a control channel (channel.py).

    g = Guest(spec)          spec: study.model.VmSpec, offloads resolved
    g.launch()               starts booting (returns at once: boot several in parallel)
    g.wait_booted(deadline)  the agent answered; g.facts: kernel, vCPUs, memory, ...
    g.request(op, ...)       a request to the agent
    g.shutdown() / g.kill()  nothing left: no QEMU, no tap, no namespace, no folder

A guest lives in a network namespace of its own, cca<id>-vm, where QEMU creates its tap
device (cg<id>); a run moves the tap into the namespace of the host the guest plays and
back (attach.py), so one guest serves the runs of a study one after the other. The id is
registered as a live run (testbed/leftovers.py) with the guest's folder: `ccarena
cleanup` removes what a crashed orchestrator left of it (the namespace, and with it
QEMU, which runs inside; the tap goes with QEMU). QEMU's process is named
ccarena-guest-<id>.

The guest does not outlive its orchestrator: when the orchestrator's end of the control
channel closes, however it ended, the agent exits and the guest powers off.

Under KVM the same command line runs with KVM's vCPU threads and, where /dev/vhost-net
is, vhost-net; the test suite exercises TCG only where KVM does not work (nested
virtualisation), so the KVM path is untested there (docs/vm.md)."""
from __future__ import annotations

import contextlib
import os
import platform
import secrets
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from ccarena.errors import TestbedError
from ccarena.paths import build_dir
from ccarena.study.model import VmSpec
from ccarena.testbed import leftovers, netns
from ccarena.testbed.guest import accel as accel_mod
from ccarena.testbed.guest import image as image_mod
from ccarena.testbed.guest import qemu
from ccarena.testbed.guest.channel import Channel, ChannelError
from ccarena.testbed.guest.vng import (find_qemu, find_vng, guest_env, kill_group,
                                       tool_versions, venv_bin, venv_environ, vng_argv)
from ccarena.testbed.proc import die_with_parent
from ccarena.testbed.topology import ns_name

BOOT_TIMEOUT_S = 900.0          # launch to the agent's first answer: TCG on a loaded 2-core
                                # machine took up to 300 s (18-27 s when quiet)
POWEROFF_TIMEOUT_S = 30.0
NAME_PREFIX = "ccarena-guest-"
GUEST_ROLE = "vm"               # the guest's namespace: cca<id>-vm


class GuestError(TestbedError):
    """A guest could not be booted or used."""


def guests_dir() -> Path:
    return build_dir() / "vm" / "guests"


def _fresh_id() -> str:
    while True:
        gid = secrets.token_hex(3)
        if not netns.list_names(f"cca{gid}-") and not (guests_dir() / gid).exists():
            return gid


def vhost_usable(accel: str) -> str | None:
    """Why vhost-net cannot be used here, or None."""
    if accel != "kvm":
        return "vhost-net needs KVM (under TCG QEMU moves the packets itself)"
    if not os.path.exists("/dev/vhost-net"):
        return "/dev/vhost-net does not exist (the vhost_net module is not loaded)"
    return None


def decide_vhost(want: str, accel: str) -> tuple[bool, str]:
    """-> (vhost on?, why) for `want` auto | on | off."""
    why_not = vhost_usable(accel)
    if want == "off":
        return False, "asked off"
    if want == "on":
        if why_not:
            raise GuestError(f"vm.vhost = true: {why_not}")
        return True, "asked for"
    return (False, why_not) if why_not else (True, "available")


class Guest:
    def __init__(self, spec: VmSpec):
        if spec.offloads is None:
            raise ValueError("resolve the guest's offloads before booting it")
        self.spec = spec
        self.gid = _fresh_id()
        self.ns = ns_name(self.gid, GUEST_ROLE)
        self.dir = guests_dir() / self.gid
        self.tap = qemu.tap_name(self.gid)
        self.mac = qemu.guest_mac(self.gid)
        self.name = NAME_PREFIX + self.gid
        self.proc: subprocess.Popen | None = None
        self.channel: Channel | None = None
        self.facts: dict = {}
        self.accel = self.accel_why = None
        self.vhost = False
        self.broken: str | None = None      # why it cannot serve another run
        self.runs = 0
        self._t_launch = 0.0

    def __repr__(self) -> str:
        return f"Guest({self.gid}, {self.spec.cpus} vCPUs, {self.spec.memory >> 20} MiB)"

    # -- booting ----------------------------------------------------------------------------
    def launch(self) -> None:
        spec = self.spec
        img = image_mod.locate() if spec.kernel is None else UserKernel(spec.kernel)
        vng = find_vng("boot a VM host")
        find_qemu("boot a VM host")
        self.accel, self.accel_why = accel_mod.accel_for(spec.accel, img)
        self.vhost, self.vhost_why = decide_vhost(spec.vhost, self.accel)
        self.kernel_label = getattr(img, "label", img.vmlinuz)
        leftovers.register(self.gid, [self.ns], extra={"guest": self.name,
                                                       "dirs": [str(self.dir)]})
        try:
            self.dir.mkdir(parents=True)
            netns.create(self.ns)
            sock = str(self.dir / "agent.sock")
            env = guest_env(os.environ, {"CCARENA_CC_RUN_DIR": "/tmp/ccarena-guest/cc"},
                            str(venv_bin()))
            script = ["#!/bin/sh"] + [f"export {k}={shlex.quote(str(v))}"
                                      for k, v in sorted(env.items())]
            script.append(f"exec {shlex.quote(str(venv_bin() / 'python'))} -m "
                          f"ccarena.testbed.guest.agent --session {shlex.quote(str(self.dir))}"
                          f" 2>{shlex.quote(str(self.dir / 'agent.log'))}")
            (self.dir / "guest.sh").write_text("\n".join(script) + "\n")
            opts = qemu.nic_opts(self.tap, self.mac, queues=spec.queues,
                                 offloads=spec.offloads, vhost=self.vhost) \
                + qemu.agent_opts(sock) + qemu.name_opts(self.name)
            argv = vng_argv(img, accel=self.accel, cpus=spec.cpus,
                            memory=f"{spec.memory >> 20}M", rwdirs=[str(self.dir)],
                            cwd=str(self.dir), guest_cmd=f"sh {self.dir / 'guest.sh'}",
                            vng=vng, name=self.name, qemu_opts=opts)
            self.console = open(self.dir / "console.log", "wb")
            self._t_launch = time.monotonic()
            # vng makes its temporary files in TMPDIR: the guest's folder, so they go with it
            self.proc = subprocess.Popen(
                netns.exec_argv(self.ns, argv), stdin=subprocess.DEVNULL,
                stdout=self.console, stderr=subprocess.STDOUT, cwd=str(self.dir),
                start_new_session=True, preexec_fn=die_with_parent(),
                env=dict(venv_environ(), TMPDIR=str(self.dir)))
            self.channel = Channel(sock, f"guest {self.gid}")
        except BaseException:
            self.kill()
            raise

    def wait_booted(self, deadline: float) -> None:
        """Until the agent answers (raises GuestError on a dead guest or the deadline)."""
        try:
            self.channel.connect(max(1.0, deadline - time.monotonic()))
            while True:
                self._check_running("booting")
                try:
                    hello = self.channel.request("hello", timeout_s=2.0)
                    break
                except ChannelError as e:
                    if e.gone or time.monotonic() > deadline:
                        raise
        except ChannelError as e:
            self.broken = str(e)
            raise GuestError(f"booting {self!r} ({self.accel}): {e}: "
                             f"{self.console_tail()}") from None
        hello.pop("id", None)
        self.facts = {"guest_id": self.gid, "name": self.name, "kernel": hello["kernel"],
                      "kernel_image": self.kernel_label, "accel": self.accel,
                      "accel_why": self.accel_why, "vcpus": self.spec.cpus,
                      "memory_bytes": self.spec.memory, "nproc": hello["nproc"],
                      "mem_total_bytes": hello["mem_total_bytes"],
                      "clocksource": hello["clocksource"],
                      "boot_s": round(time.monotonic() - self._t_launch, 2),
                      "guest_uptime_s": hello["uptime_s"], "vhost": self.vhost,
                      "vhost_why": self.vhost_why, "queues": self.spec.queues,
                      "offloads": self.spec.offloads, "host_kernel": platform.release(),
                      **tool_versions()}

    def _check_running(self, what: str) -> None:
        if self.proc is None or self.proc.poll() is not None:
            rc = None if self.proc is None else self.proc.returncode
            raise GuestError(f"{what} {self!r}: QEMU ended (vng exit {rc}): "
                             f"{self.console_tail()}")

    def console_tail(self, n: int = 3) -> str:
        try:
            lines = [ln.strip() for ln in (self.dir / "console.log").read_text(
                errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "no console output"
        return " | ".join(lines[-n:]) or "no console output"

    # -- using ------------------------------------------------------------------------------
    def request(self, op: str, timeout_s: float = 30.0, **args) -> dict:
        """A request to the agent; a guest whose channel closed is marked broken."""
        try:
            return self.channel.request(op, timeout_s=timeout_s, **args)
        except ChannelError as e:
            if e.gone:
                self.broken = str(e)
            raise

    def alive(self) -> bool:
        return self.broken is None and self.proc is not None and self.proc.poll() is None

    def qemu_pid(self) -> int | None:
        """QEMU's process (vng's shell starts it inside the guest's namespace)."""
        for pid in netns.pids_in(self.ns):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().startswith("qemu-system"):
                    return pid
        return None

    # -- ending -----------------------------------------------------------------------------
    def shutdown(self, timeout_s: float = POWEROFF_TIMEOUT_S) -> None:
        """Ask the agent to end (the guest powers off), then remove everything."""
        if self.alive() and self.channel is not None:
            with contextlib.suppress(ChannelError):
                self.channel.request("shutdown", timeout_s=5.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout_s)
        self.kill()

    def kill(self) -> None:
        """Stop QEMU (and vng) at once and remove the namespace, the folder and the
        record. Idempotent."""
        if self.channel is not None:
            self.channel.close()
        if self.proc is not None:
            kill_group(self.proc, grace_s=1.0)
        with contextlib.suppress(Exception):
            netns.remove(self.ns)       # kills whatever is left inside (QEMU), the tap too
        with contextlib.suppress(Exception):
            self.console.close()
        with contextlib.suppress(OSError):
            if (self.dir / "console.log").exists():
                shutil.copyfile(self.dir / "console.log",
                                guests_dir().parent / "last-guest-console.log")
        shutil.rmtree(self.dir, ignore_errors=True)
        leftovers.unregister(self.gid)
        if self.broken is None:
            self.broken = "stopped"


class UserKernel:
    """A kernel image the study names (vm.kernel): booted as it is, modules found by
    virtme-ng beside it."""

    def __init__(self, path: str):
        if not os.path.isfile(path):
            raise GuestError(f"vm.kernel: no such kernel image {path!r}")
        self.vmlinuz = path
        self.release = os.path.basename(path)
        self.label = path
