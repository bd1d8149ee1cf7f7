"""What this kernel's networking can do, probed in a throw-away namespace (never guessed).

Each probe asks through the tool the testbed itself uses for that part: the veth pair
through netlink (pyroute2, as testbed.build makes them), the qdiscs through tc(8), as the
kernel backend (testbed.kernel_link, `tc -batch`) sets them up, so "available" means
"the backend can set it up", encoder included. Probing is ~50 ms and cached per process."""
from __future__ import annotations

import functools
import os
import secrets
import subprocess

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from ccarena.testbed import netns

QDISCS = ("pfifo", "bfifo", "htb", "tbf", "netem", "red", "codel", "fq_codel", "fq", "prio")


def _tc(ns: str, args: str) -> bool:
    r = subprocess.run(["tc", "-n", ns, *args.split()], capture_output=True, text=True)
    return r.returncode == 0


@functools.lru_cache(maxsize=1)
def probe() -> dict:
    """-> {"netns": bool, "veth": bool, "qdiscs": {name: bool}, "netem": bool, "error": str}"""
    out = {"netns": False, "veth": False, "qdiscs": {q: False for q in QDISCS}, "netem": False,
           "error": None}
    if os.geteuid() != 0:
        out["error"] = "not root: network namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)"
        return out
    name = f"ccaprobe{secrets.token_hex(3)}"
    try:
        netns.create(name)
        out["netns"] = True
        with netns.enter(name):              # the socket lives and dies in the namespace
            ipr = IPRoute()
            try:
                ipr.link("add", ifname="pa", kind="veth", peer={"ifname": "pb"})
                out["veth"] = True
            except NetlinkError as e:
                out["error"] = f"veth: {e}"
                return out
            finally:
                ipr.close()
        for q in QDISCS:
            args = {"htb": "htb default 1", "tbf": "tbf rate 1mbit burst 10kb latency 10ms",
                    "netem": "netem delay 1ms", "red": "red limit 100000 avpkt 1000 "
                    "bandwidth 10mbit min 10000 max 30000 burst 20"}.get(q, q)
            out["qdiscs"][q] = _tc(name, f"qdisc replace dev pa root {args}")
            _tc(name, "qdisc del dev pa root")
        out["netem"] = out["qdiscs"]["netem"]
    except Exception as e:  # report, never crash doctor
        out["error"] = str(e)
    finally:
        netns.remove(name)
    return out
