"""The guest's side of a guest host: the agent that runs in the VM and does there what
the orchestrator does in a namespace host — network, sysctls, algorithms, the flow engine
and the per-ACK tracer — on request over the control channel (qemu.py: a virtio-serial
port). The host's side is machine.py; the protocol is channel.py's.

    python -m ccarena.testbed.guest.agent --session DIR     (vng --exec starts it)

Requests are JSON lines {"id": n, "op": name, ...}; each gets one line back, {"id": n,
...} or {"id": n, "error": "one line"}. The agent answers nothing unasked. When the
host's end of the channel closes (the orchestrator ended, however), the agent stops what
it started and exits, and the guest powers off: a guest does not outlive its owner.

The agent imports only the standard library and ccarena.cc (which algorithms the guest's
kernel has, and the BPF pack's holders): Python under TCG starts slowly."""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import select
import subprocess
import sys
import time

from ccarena.testbed.guest.qemu import AGENT_PORT, decode_features

READY_TIMEOUT_S = 60.0      # a flow engine or tracer starting under TCG
WAIT_IDLE_S = 0.05
WRITE_TIMEOUT_S = 30.0      # an answer the host does not take within this: it is gone


class HostGone(Exception):
    """The host's end of the channel closed: whatever the agent was doing, it stops."""


def find_port(name: str = AGENT_PORT, root: str = "/sys/class/virtio-ports") -> str | None:
    """/dev/vportNpM of the virtio-serial port named `name`."""
    for d in sorted(glob.glob(os.path.join(root, "*"))):
        try:
            with open(os.path.join(d, "name")) as f:
                if f.read().strip() == name:
                    return "/dev/" + os.path.basename(d)
        except OSError:
            continue
    return None


def _run(argv: list[str], check: bool = True) -> str:
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip().splitlines()[-1:] or ''}")
    return r.stdout


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _write_sysctl(key: str, value: str) -> None:
    path = "/proc/sys/" + key.replace(".", "/")
    try:
        with open(path, "w") as f:
            f.write(str(value))
    except FileNotFoundError:
        raise RuntimeError(f"set sysctl {key} in the guest: its kernel has no such "
                           "sysctl") from None
    except OSError as e:
        raise RuntimeError(f"set sysctl {key}={value!r} in the guest: {e.strerror}") from None


def _read_sysctl(key: str) -> str | None:
    v = _read("/proc/sys/" + key.replace(".", "/"))
    return " ".join(v.split()) if v is not None else None


def _meminfo(field: str) -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None


class _Child:
    """A process of the agent with a READY line on stdout (flow engine, tracer)."""

    def __init__(self, argv: list[str], stderr_path: str, stdin: bool):
        self.err = open(stderr_path, "wb")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else
                                  subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=self.err, start_new_session=True)
        self.buf = b""
        self.lines: list[str] = []

    def wait_ready(self, timeout_s: float, gone=lambda: False) -> None:
        deadline = time.monotonic() + timeout_s
        fd = self.p.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                text = line.decode(errors="replace").strip()
                self.lines.append(text)
                if text.startswith("READY"):
                    return
            left = deadline - time.monotonic()
            if gone():
                raise HostGone()
            if left <= 0:
                raise RuntimeError(f"{os.path.basename(self.p.args[0])}: no READY within "
                                   f"{timeout_s:g} s: {self.tail()}")
            r, _, _ = select.select([fd], [], [], min(left, 0.2))
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.p.wait(timeout=1)
                    raise RuntimeError(f"{os.path.basename(self.p.args[0])}: exited before "
                                       f"READY (exit {self.p.returncode}): {self.tail()}")
                self.buf += chunk

    def tail(self, n: int = 3) -> str:
        try:
            with open(self.err.name, errors="replace") as f:
                return " | ".join(f.read().splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> int | None:
        if self.p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.p.pid, 15)
            try:
                self.p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.p.pid, 9)
                self.p.wait()
        self.err.close()
        return self.p.returncode


class Agent:
    def __init__(self, session: str):
        self.session = session
        self.original_sysctls: dict[str, str | None] = {}
        self.engine: _Child | None = None
        self.tracer: _Child | None = None
        self.cc_names: tuple = ()
        self.cc_stack: contextlib.ExitStack | None = None
        self.kernel_names: dict = {}
        self.cc_sources: dict = {}
        self.iface: str | None = None
        self.port_fd: int | None = None     # the channel, to notice the host leaving

    def host_gone(self) -> bool:
        """The host's end of the channel has closed (virtio-serial: POLLHUP)."""
        if self.port_fd is None:
            return False
        p = select.poll()
        p.register(self.port_fd, select.POLLIN | select.POLLHUP)
        return any(m & select.POLLHUP for _, m in p.poll(0))

    # -- requests -----------------------------------------------------------------------
    def op_hello(self, req) -> dict:
        uptime = float((_read("/proc/uptime") or "0").split()[0])
        return {"kernel": os.uname().release, "nproc": len(os.sched_getaffinity(0)),
                "cpus_online": os.cpu_count(), "mem_total_bytes": _meminfo("MemTotal"),
                "clocksource": _read("/sys/devices/system/clocksource/clocksource0/"
                                     "current_clocksource"),
                "uptime_s": uptime, "python": sys.version.split()[0],
                "available_cc": (_read("/proc/sys/net/ipv4/tcp_available_congestion_control")
                                 or "").split()}

    def op_clock(self, req) -> dict:
        return {"t": time.monotonic_ns()}

    def _nic(self) -> str:
        if self.iface:
            return self.iface
        for attempt in range(2):
            for d in sorted(glob.glob("/sys/class/net/*")):
                name = os.path.basename(d)
                if name != "lo" and os.path.exists(os.path.join(d, "device")):
                    self.iface = name
                    return name
            if attempt == 0:
                _run(["modprobe", "virtio_net"])
                time.sleep(0.2)
        raise RuntimeError("no network device in the guest (virtio_net did not appear)")

    def op_net(self, req) -> dict:
        """The host's address on the guest's NIC: its MAC (the router's neighbour entry
        names it), address, default route and the router's MAC, pinned as a namespace
        host's are; offloads off unless asked; IPv6 off (as in a namespace)."""
        dev = self._nic()
        for conf in ("all", "default", dev):
            with contextlib.suppress(RuntimeError):
                _write_sysctl(f"net.ipv6.conf.{conf}.disable_ipv6", "1")
        _run(["ip", "link", "set", dev, "down"])
        _run(["ip", "link", "set", dev, "address", req["mac"], "mtu", str(req["mtu"])])
        _run(["ip", "addr", "flush", "dev", dev])
        _run(["ip", "addr", "add", f"{req['addr']}/{req['plen']}", "dev", dev])
        if req.get("queues", 1) > 1:
            _run(["ethtool", "-L", dev, "combined", str(req["queues"])])
        _run(["ip", "link", "set", dev, "up"])
        _run(["ip", "route", "replace", "default", "via", req["gw"], "dev", dev])
        _run(["ip", "neigh", "replace", req["gw"], "lladdr", req["gw_mac"], "dev", dev,
              "nud", "permanent"])
        if not req.get("offloads"):
            # what the device offers is off already (qemu.nic_opts); GRO is the guest's own
            _run(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], check=False)
        return self._nic_facts(dev)

    def _nic_facts(self, dev: str) -> dict:
        base = f"/sys/class/net/{dev}"
        bits = _read(f"{base}/device/features") or ""
        offl = {}
        for line in _run(["ethtool", "-k", dev], check=False).splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k in ("tcp-segmentation-offload", "generic-segmentation-offload",
                     "generic-receive-offload", "tx-checksumming", "rx-checksumming",
                     "scatter-gather"):
                offl[k] = v.split()[0] == "on" if v.split() else None
        queues = len(glob.glob(f"{base}/queues/tx-*"))
        qdisc = " | ".join(ln.strip() for ln in _run(["tc", "qdisc", "show", "dev", dev],
                                                    check=False).splitlines() if ln.strip())
        return {"iface": dev, "virtio_features": decode_features(bits), "qdisc": qdisc,
                "virtio_feature_bits": bits, "offloads": offl, "tx_queues": queues,
                "mtu": int(_read(f"{base}/mtu") or 0), "mac": _read(f"{base}/address")}

    def op_sysctl(self, req) -> dict:
        """This run's sysctls, after those of the run before are put back as they were."""
        for k, v in self.original_sysctls.items():
            if v is not None:
                with contextlib.suppress(RuntimeError):
                    _write_sysctl(k, v)
        for k, v in req["values"].items():
            if k not in self.original_sysctls:
                self.original_sysctls[k] = _read_sysctl(k)
            _write_sysctl(k, v)
        return {"sysctls": {k: _read_sysctl(k) for k in req.get("read", [])}}

    def op_cc(self, req) -> dict:
        """Make the named algorithms usable in the guest's kernel: its own module where
        it has one, else the BPF pack's (ccarena.cc's rule, with the study's force); held
        until the next set differs or the agent ends."""
        names = tuple(sorted(req["names"]))
        force = req.get("force")
        if (names, force) != self.cc_names:
            self._release_cc()
            from ccarena import cc
            stack = contextlib.ExitStack()
            self.kernel_names = stack.enter_context(cc.acquire(names, "guest", force=force))
            self.cc_sources = {n: cc.resolve(n, force).source for n in names}
            self.cc_stack, self.cc_names = stack, (names, force)
        return {"kernel_names": self.kernel_names, "sources": self.cc_sources}

    def _release_cc(self) -> None:
        if self.cc_stack is not None:
            with contextlib.suppress(Exception):
                self.cc_stack.close()
        self.cc_stack, self.cc_names, self.kernel_names = None, (), {}

    def op_fresh(self, req) -> dict:
        """A fresh TCP state for the next run: nothing left of the last run's connections
        and the per-destination metrics cache empty."""
        self._stop_children()
        _run(["ss", "-K", "-t", "state", "all"], check=False)
        _run(["ip", "tcp_metrics", "flush", "all"], check=False)
        return {}

    def op_start(self, req) -> dict:
        """The tracer (if asked) and the flow engine, each to its READY."""
        self._stop_children()
        if req.get("trace"):
            t = req["trace"]
            self.tracer = _Child(t["argv"], t["stderr"], stdin=False)
            self.tracer.wait_ready(READY_TIMEOUT_S, self.host_gone)
        self.engine = _Child(req["argv"], req["stderr"], stdin=True)
        self.engine.wait_ready(READY_TIMEOUT_S, self.host_gone)
        return {"lines": self.engine.lines}

    def op_go(self, req) -> dict:
        if self.engine is None:
            raise RuntimeError("go: no flow engine started")
        self.engine.p.stdin.write(f"GO {int(req['t0_ns'])}\n".encode())
        self.engine.p.stdin.flush()
        return {"t": time.monotonic_ns()}

    def op_wait(self, req) -> dict:
        """Wait for the flow engine to end (it ends at its end_ns), then stop the tracer."""
        out = {"rc": None, "tracer_rc": None}
        if self.engine is not None:
            deadline = time.monotonic() + float(req.get("engine_timeout_s", 60))
            while self.engine.p.poll() is None and time.monotonic() < deadline:
                if self.host_gone():
                    raise HostGone()
                time.sleep(WAIT_IDLE_S)
            out["rc"] = self.engine.p.poll()
            if out["rc"] is None:
                out["timed_out"] = True
            out["stderr_tail"] = self.engine.tail()
            rc = self.engine.stop()
            out["rc"] = out["rc"] if out["rc"] is not None else rc
            self.engine = None
        if self.tracer is not None:
            out["tracer_rc"] = self.tracer.stop()
            out["tracer_tail"] = self.tracer.tail()
            self.tracer = None
        return out

    def op_abort(self, req) -> dict:
        self._stop_children()
        return {}

    def op_state(self, req) -> dict:
        dev = self._nic()
        return {"sysctls": {k: _read_sysctl(k) for k in req.get("keys", [])},
                **self._nic_facts(dev)}

    def _stop_children(self) -> None:
        for c in (self.engine, self.tracer):
            if c is not None:
                c.stop()
        self.engine = self.tracer = None

    def close(self) -> None:
        self._stop_children()
        self._release_cc()

    # -- the loop -------------------------------------------------------------------------
    def handle(self, line: bytes) -> bytes:
        try:
            req = json.loads(line)
            rid = req.get("id")
        except ValueError as e:
            return json.dumps({"id": None, "error": f"bad request: {e}"}).encode() + b"\n"
        op = getattr(self, "op_" + str(req.get("op")), None)
        if op is None:
            out = {"error": f"unknown op {req.get('op')!r}"}
        else:
            try:
                out = op(req)
            except HostGone:
                raise
            except Exception as e:  # noqa: BLE001 — every failure is an answer, not a crash
                out = {"error": f"{req.get('op')}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"}
        out["id"] = rid
        return json.dumps(out).encode() + b"\n"


def _send(fd: int, data: bytes) -> None:
    """Write an answer. A virtio-serial port whose host end is closed blocks a writer
    until the host comes back (drivers/char/virtio_console.c), so the port is
    non-blocking and a write that cannot proceed waits for room or notices the host gone."""
    p = select.poll()
    p.register(fd, select.POLLOUT | select.POLLHUP)
    deadline = time.monotonic() + WRITE_TIMEOUT_S
    while data:
        try:
            data = data[os.write(fd, data):]
            continue
        except BlockingIOError:
            pass
        ev = p.poll(200)
        if any(m & select.POLLHUP for _, m in ev) or time.monotonic() > deadline:
            raise HostGone()


def _shutdown_id(line: bytes):
    """The id of a `shutdown` request, or None for any other line."""
    try:
        req = json.loads(line)
    except ValueError:
        return None
    return req.get("id", 0) if isinstance(req, dict) and req.get("op") == "shutdown" else None


def serve(port: str, agent: Agent, connect_timeout_s: float = 600.0) -> int:
    """Answer requests on `port` until the host's end closes (or `shutdown`)."""
    fd = os.open(port, os.O_RDWR | os.O_NONBLOCK)
    agent.port_fd = fd
    buf, connected = b"", False
    started = time.monotonic()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            ev = poller.poll(1000)
            mask = 0
            for _, m in ev:
                mask |= m
            if mask & select.POLLIN:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    chunk = b""
                if chunk:
                    connected = True
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if not line.strip():
                            continue
                        bye = _shutdown_id(line)
                        if bye is not None:
                            _send(fd, json.dumps({"id": bye, "bye": True}).encode() + b"\n")
                            return 0
                        _send(fd, agent.handle(line))
                    continue
            if mask & select.POLLHUP or (mask & select.POLLIN):
                # the host's end is not open: before it first came, wait for it; after,
                # it has gone, and so do we
                if connected:
                    return 0
                if time.monotonic() - started > connect_timeout_s:
                    return 1
                time.sleep(WAIT_IDLE_S)
    except HostGone:
        return 0
    finally:
        agent.close()
        os.close(fd)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="ccarena.testbed.guest.agent")
    ap.add_argument("--session", required=True, help="the guest's folder on the host")
    ap.add_argument("--port", default=AGENT_PORT)
    args = ap.parse_args(argv)
    port = None
    for _ in range(200):            # the port appears with virtio_console's probe
        port = find_port(args.port)
        if port and os.path.exists(port):
            break
        time.sleep(0.05)
    if not port:
        print(f"ccarena guest agent: no virtio-serial port named {args.port}",
              file=sys.stderr)
        return 1
    return serve(port, Agent(args.session))


if __name__ == "__main__":
    raise SystemExit(main())
