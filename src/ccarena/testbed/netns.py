"""Network namespaces, created and entered in-process (ctypes: unshare/setns/mount).

Why not `ip netns add` per namespace or pyroute2's NetNS: both fork a process per
namespace (~45 ms each here); a 32-pair dumbbell has 67 namespaces. Here a namespace is
made by unshare(CLONE_NEWNET) on the calling thread, bind-mounted at /run/netns/<name>
exactly as iproute2 does (so `ip netns exec` and `ip -n` work on it), and the thread
returns to its original namespace. `enter(name)` switches only the calling thread, so a
netlink socket or a /proc/sys file opened inside belongs to that namespace.

Contract: every function leaves the calling thread in the namespace it was in."""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import socket
import struct
import subprocess
import time

from ccarena.errors import TestbedError

NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
MS_BIND, MS_REC, MS_SHARED = 4096, 16384, 1 << 20
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_root_fd: int | None = None


def _check(rc: int, what: str):
    if rc != 0:
        e = ctypes.get_errno()
        raise TestbedError(f"{what}: {os.strerror(e)}")


def _home_fd() -> int:
    """An fd of the namespace this process started in (the one we always return to)."""
    global _root_fd
    if _root_fd is None:
        _root_fd = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    return _root_fd


def _prepare_dir():
    """Make /run/netns a shared mount point as iproute2 does, so mounts propagate."""
    os.makedirs(NETNS_DIR, exist_ok=True)
    with open("/proc/self/mountinfo") as f:
        if any(line.split()[4] == NETNS_DIR for line in f):
            return
    _check(_libc.mount(NETNS_DIR.encode(), NETNS_DIR.encode(), b"none", MS_BIND | MS_REC, None),
           f"mount --bind {NETNS_DIR}")
    _check(_libc.mount(b"none", NETNS_DIR.encode(), None, MS_SHARED | MS_REC, None),
           f"mount --make-rshared {NETNS_DIR}")


def path(name: str) -> str:
    return os.path.join(NETNS_DIR, name)


def inode(name: str) -> int:
    """The namespace's inode number (nsfs; the kernel's net->ns.inum), which names it in
    BPF maps keyed by namespace."""
    return os.stat(path(name)).st_ino


def exists(name: str) -> bool:
    return os.path.exists(path(name))


def create(name: str) -> None:
    _prepare_dir()
    home = _home_fd()
    p = path(name)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0)
    except FileExistsError:
        raise TestbedError(f"create namespace {name}: it already exists") from None
    os.close(fd)
    try:
        _check(_libc.unshare(CLONE_NEWNET), f"unshare(CLONE_NEWNET) for {name}")
        try:
            _check(_libc.mount(b"/proc/thread-self/ns/net", p.encode(), b"none", MS_BIND, None),
                   f"bind-mount namespace {name}")
        finally:
            _check(_libc.setns(home, CLONE_NEWNET), "return to the original namespace")
    except Exception:
        with contextlib.suppress(OSError):
            os.unlink(p)
        raise
    with enter(name):
        _write_proc("/proc/sys/net/ipv4/conf/all/forwarding", "0")  # explicit; routers set 1
        # IPv4 only: IPv6 router solicitations and listener reports would otherwise cross
        # the emulated link and count as arrivals (and AQM drops)
        for conf in ("all", "default"):
            p = f"/proc/sys/net/ipv6/conf/{conf}/disable_ipv6"
            if os.path.exists(p):
                _write_proc(p, "1")
        _set_up_lo()


def remove(name: str) -> None:
    """Kill what runs inside, unmount, unlink. Idempotent."""
    p = path(name)
    if not os.path.exists(p):
        return
    kill_all_in(name)
    _libc.umount2(p.encode(), MNT_DETACH)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(p)


def list_names(prefix: str = "") -> list[str]:
    try:
        return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(prefix))
    except FileNotFoundError:
        return []


@contextlib.contextmanager
def enter(name: str):
    """Run the body with the calling thread inside namespace `name`."""
    try:
        fd = os.open(path(name), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TestbedError(f"enter namespace {name}: it does not exist") from None
    home = _home_fd()
    try:
        _check(_libc.setns(fd, CLONE_NEWNET), f"setns into {name}")
        try:
            yield
        finally:
            _check(_libc.setns(home, CLONE_NEWNET), "return to the original namespace")
    finally:
        os.close(fd)


def ns_inode(name: str) -> int:
    return os.stat(path(name)).st_ino


def pids_in(name: str) -> list[int]:
    """Processes whose network namespace is `name` (scans /proc)."""
    try:
        ino = ns_inode(name)
    except FileNotFoundError:
        return []
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat(f"/proc/{d}/ns/net").st_ino == ino:
                out.append(int(d))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            pass
    me = os.getpid()
    return [p for p in out if p != me]


def kill_all_in(name: str, grace_s: float = 1.0) -> None:
    pids = pids_in(name)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)
        deadline = time.monotonic() + grace_s
        while pids and time.monotonic() < deadline:
            time.sleep(0.02)
            pids = pids_in(name)
        if not pids:
            return


def _write_proc(p: str, value: str):
    with open(p, "w") as f:
        f.write(value)


def sysctl_set(name: str, values: dict[str, str]) -> None:
    """Set net.* sysctls inside a namespace (never in the root one)."""
    with enter(name):
        for k, v in values.items():
            p = "/proc/sys/" + k.replace(".", "/")
            try:
                _write_proc(p, v)
            except FileNotFoundError:
                raise TestbedError(f"set sysctl {k} in {name}: this kernel has no such "
                                   "sysctl") from None
            except OSError as e:
                raise TestbedError(f"set sysctl {k}={v!r} in {name}: {e.strerror}") from None


def sysctl_get(name: str, keys) -> dict[str, str]:
    out = {}
    with enter(name):
        for k in keys:
            try:
                with open("/proc/sys/" + k.replace(".", "/")) as f:
                    out[k] = " ".join(f.read().split())
            except OSError:
                out[k] = None
    return out


def _set_up_lo():
    # SIOCGIFFLAGS / SIOCSIFFLAGS on "lo": bring loopback up without a netlink round trip.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
    finally:
        s.close()


# ethtool legacy ioctls: set one offload feature on/off (struct ethtool_value {u32 cmd, data})
SIOCETHTOOL = 0x8946
ETHTOOL_CMDS = {"tso": (0x1e, 0x1f), "gso": (0x23, 0x24), "gro": (0x2b, 0x2c),
                "tx_csum": (0x16, 0x17), "sg": (0x18, 0x19)}


def _ethtool(s, ifname: str, cmd: int, data: int = 0) -> int:
    buf = ctypes.create_string_buffer(struct.pack("II", cmd, data))
    ifr = struct.pack("16sP", ifname.encode(), ctypes.addressof(buf))
    try:
        fcntl.ioctl(s, SIOCETHTOOL, ifr)
    except OSError as e:
        if e.errno == errno.EOPNOTSUPP:
            return -1
        raise
    return struct.unpack("II", buf.raw[:8])[1]


def set_offloads(name: str, ifname: str, on: bool) -> None:
    with enter(name):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for feat in ("tso", "gso", "gro"):
                _ethtool(s, ifname, ETHTOOL_CMDS[feat][1], 1 if on else 0)
        except OSError as e:
            raise TestbedError(f"set offloads of {ifname} in {name}: {e.strerror}") from None
        finally:
            s.close()


def get_offloads(name: str, ifname: str) -> dict[str, bool | None]:
    with enter(name):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            out = {}
            for feat, (get, _set) in ETHTOOL_CMDS.items():
                v = _ethtool(s, ifname, get)
                out[feat] = None if v < 0 else bool(v)
            return out
        finally:
            s.close()


def exec_argv(name: str, argv: list[str]) -> list[str]:
    """argv that runs a program inside namespace `name` (with /sys of that namespace)."""
    return ["ip", "netns", "exec", name, *argv]


def sysfs_write(name: str, rel: str, value: str) -> None:
    """Write `value` to /sys/<rel> as namespace `name` sees it (e.g. a device's
    queues/rx-0/rps_cpus). sysfs shows the devices of the namespace that mounted it, so
    this goes through `ip netns exec`, which mounts a fresh sysfs for the namespace; one
    short process, so keep it off per-packet or per-flow paths."""
    target = "/sys/" + rel.lstrip("/")
    r = subprocess.run(exec_argv(name, ["sh", "-c", 'printf %s "$1" > "$2"', "sh", value, target]),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise TestbedError(f"write {target} in namespace {name}: {r.stderr.strip() or 'failed'}")
