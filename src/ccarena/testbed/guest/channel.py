"""The host's end of a guest's control channel: JSON lines over the UNIX socket QEMU
listens on for the guest's virtio-serial port (qemu.agent_opts; the agent is agent.py).

    ch = Channel(path); ch.connect(deadline)
    ch.request("net", mac=..., timeout_s=30) -> dict       raises ChannelError
    ch.clock_offset(n=16) -> clock.Offset                   the guest's clock against ours

A request waits for its own answer (the agent answers in order, one line each); an
answer that names an error raises ChannelError with it. A channel that closes (the guest
died, or powered off) raises ChannelError too: the caller decides what that means for
its run."""
from __future__ import annotations

import json
import os
import select
import socket
import time

from ccarena.errors import TestbedError
from ccarena.testbed.guest import clock


class ChannelError(TestbedError):
    """The guest's agent did not answer, answered with an error, or is gone."""

    def __init__(self, msg: str, gone: bool = False):
        super().__init__(msg)
        self.gone = gone        # the channel closed: the guest is not usable any more


class Channel:
    def __init__(self, path: str, name: str = "guest"):
        self.path, self.name = path, name
        self.sock: socket.socket | None = None
        self.buf = b""
        self.next_id = 1

    def connect(self, timeout_s: float) -> None:
        """Connect once QEMU listens (it creates the socket as it starts)."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            if os.path.exists(self.path):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
                try:
                    s.connect(self.path)
                    self.sock = s
                    return
                except OSError as e:
                    last = e
                    s.close()
            time.sleep(0.05)
        raise ChannelError(f"{self.name}: no control channel at {self.path} within "
                           f"{timeout_s:g} s" + (f" ({last.strerror})" if last else ""))

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def send(self, op: str, **args) -> int:
        if self.sock is None:
            raise ChannelError(f"{self.name}: control channel not connected", gone=True)
        rid = self.next_id
        self.next_id += 1
        try:
            self.sock.sendall(json.dumps({"id": rid, "op": op, **args}).encode() + b"\n")
        except OSError as e:
            raise ChannelError(f"{self.name}: {op}: the control channel closed "
                               f"({e.strerror})", gone=True) from None
        return rid

    def receive(self, rid: int, op: str, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue        # a line cut by a dying guest
                if msg.get("id") != rid:
                    continue        # the answer to a request given up on
                if "error" in msg:
                    raise ChannelError(f"{self.name}: {msg['error']}")
                return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelError(f"{self.name}: {op}: no answer within {timeout_s:g} s")
            r, _, _ = select.select([self.sock], [], [], min(left, 0.5))
            if r:
                try:
                    chunk = self.sock.recv(65536)
                except OSError as e:
                    chunk, why = b"", e.strerror
                else:
                    why = "closed"
                if not chunk:
                    raise ChannelError(f"{self.name}: {op}: the control channel {why} "
                                       "(the guest stopped)", gone=True)
                self.buf += chunk

    def request(self, op: str, timeout_s: float = 30.0, **args) -> dict:
        return self.receive(self.send(op, **args), op, timeout_s)

    def clock_offset(self, n: int = 16, most: int = 64, good_rtt_ns: int = 1_000_000,
                     timeout_s: float = 10.0) -> clock.Offset:
        """The guest's clock against ours (clock.estimate) from `n` exchanges, and more,
        up to `most`, while none came back within `good_rtt_ns` (a busy host delays
        some; the shortest round trip bounds the offset best)."""
        samples = []
        while len(samples) < n or (len(samples) < most and
                                   min(r - s for s, _, r in samples) > good_rtt_ns):
            t_send = time.monotonic_ns()
            got = self.request("clock", timeout_s=timeout_s)
            t_recv = time.monotonic_ns()
            samples.append((t_send, int(got["t"]), t_recv))
        return clock.estimate(samples)
