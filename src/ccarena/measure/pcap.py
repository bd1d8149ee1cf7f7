"""Optional packet capture per host (`[[probe]] kind = "pcap"`): tcpdump on the host's
eth0, headers only (snaplen), into raw/pcap/<host>.pcap for Wireshark/tshark."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from ccarena.testbed.proc import NsProcess


class Pcap:
    def __init__(self, host: str, ns: str, raw_dir: Path, snaplen: int):
        d = raw_dir / "pcap"
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / f"{host}.pcap"
        # -U: write each packet as it comes so an interrupted run keeps its capture;
        # -Z root: stay root, since a change of user would clear the parent-death signal
        # that ends the capture with ccarena (testbed/proc.py)
        self.proc = NsProcess(f"tcpdump-{host}", ns, ["tcpdump", "-Z", "root", "-i", "eth0",
                              "-n", "-U",
                              "-s", str(snaplen), "-w", str(self.path)], raw_dir / "logs",
                              stdin=False)

    def ready(self, timeout_s: float = 5.0) -> None:
        # tcpdump says "listening on eth0" on stderr once the capture is open
        import time
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if "listening on" in self.proc.stderr_tail(5):
                return
            if self.proc.p.poll() is not None:
                break
            time.sleep(0.02)
        self.proc._fail("tcpdump did not start")

    def stop(self) -> None:
        if self.proc.p.poll() is None:
            try:
                os.killpg(self.proc.p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            self.proc.wait(5.0)
        self.proc.terminate(2.0)
