"""The QEMU devices of a guest host (pure; unit-tested): its NIC and its control channel.

    nic_opts(tap, mac, queues, offloads, vhost) -> [QEMU arguments]
    agent_opts(socket_path) -> [QEMU arguments]
    decode_features(bits) -> [virtio-net feature names]

The NIC is virtio-net-pci on a tap device (`-netdev tap`), as the published KVM studies
had it (virtio-net on a Linux bridge): the tap is what attach.py bridges into the host's
namespace, where its veth to the router is. With offloads off the device offers no
checksum or segmentation offload in either direction, so the guest sends and receives
frames of one MTU each, as a namespace host's veth with TSO/GSO/GRO off does.

The control channel is a virtio-serial port named ccarena.agent whose host end is a
UNIX socket QEMU listens on: the guest kernel has virtio_console built in, so it needs
neither a module nor udev (the agent finds its port by name in /sys/class/virtio-ports),
and it works under TCG and KVM alike. (vsock would need /dev/vhost-vsock on the host, a
module many hosts do not load.)"""
from __future__ import annotations

AGENT_PORT = "ccarena.agent"
TAP_PREFIX = "cg"            # the guest's tap: cg<guest id>, within IFNAMSIZ
# virtio-net-pci properties of the offloads: with offloads off, all off
OFFLOAD_PROPS = ("csum", "guest_csum", "gso", "guest_tso4", "guest_tso6", "guest_ecn",
                 "guest_ufo", "host_tso4", "host_tso6", "host_ecn", "host_ufo")
MAX_QUEUES = 16

# virtio-net feature bits (VIRTIO 1.2 §5.1.3; §6 for the transport's)
FEATURES = {
    0: "CSUM", 1: "GUEST_CSUM", 2: "CTRL_GUEST_OFFLOADS", 3: "MTU", 5: "MAC",
    7: "GUEST_TSO4", 8: "GUEST_TSO6", 9: "GUEST_ECN", 10: "GUEST_UFO", 11: "HOST_TSO4",
    12: "HOST_TSO6", 13: "HOST_ECN", 14: "HOST_UFO", 15: "MRG_RXBUF", 16: "STATUS",
    17: "CTRL_VQ", 18: "CTRL_RX", 19: "CTRL_VLAN", 20: "CTRL_RX_EXTRA",
    21: "GUEST_ANNOUNCE", 22: "MQ", 23: "CTRL_MAC_ADDR", 24: "NOTF_COAL",
    28: "RING_INDIRECT_DESC", 29: "RING_EVENT_IDX", 32: "VERSION_1",
    33: "ACCESS_PLATFORM", 34: "RING_PACKED", 35: "IN_ORDER", 36: "ORDER_PLATFORM",
    37: "SR_IOV", 38: "NOTIFICATION_DATA", 39: "NOTIF_CONFIG_DATA", 40: "RING_RESET",
    54: "GUEST_USO4", 55: "GUEST_USO6", 56: "HOST_USO", 57: "HASH_REPORT",
    59: "GUEST_HDRLEN", 60: "RSS", 61: "RSC_EXT", 62: "STANDBY", 63: "SPEED_DUPLEX"}


def tap_name(guest_id: str) -> str:
    return f"{TAP_PREFIX}{guest_id}"


def guest_mac(guest_id: str) -> str:
    """The MAC the guest's NIC boots with (a run gives it its host's MAC, attach.py)."""
    g = int(guest_id, 16)
    return f"02:cc:0f:{g >> 16 & 0xff:02x}:{g >> 8 & 0xff:02x}:{g & 0xff:02x}"


def nic_opts(tap: str, mac: str, *, queues: int = 1, offloads: bool = False,
             vhost: bool = False) -> list[str]:
    """-netdev and -device for the guest's NIC on tap device `tap`, created by QEMU in the
    namespace it runs in."""
    if not 1 <= queues <= MAX_QUEUES:
        raise ValueError(f"queues must be 1..{MAX_QUEUES}, not {queues}")
    netdev = f"tap,id=hn0,ifname={tap},script=no,downscript=no"
    if queues > 1:
        netdev += f",queues={queues}"
    netdev += ",vhost=" + ("on" if vhost else "off")
    dev = f"virtio-net-pci,netdev=hn0,mac={mac}"
    if queues > 1:
        # one MSI-X vector per queue, each way, plus config and control
        dev += f",mq=on,vectors={2 * queues + 2}"
    if not offloads:
        dev += "".join(f",{p}=off" for p in OFFLOAD_PROPS)
    return ["-netdev", netdev, "-device", dev]


def agent_opts(socket_path: str) -> list[str]:
    """A virtio-serial port named AGENT_PORT; QEMU listens on `socket_path` for the host."""
    return ["-device", "virtio-serial-pci,id=ccarena-serial",
            "-chardev", f"socket,id=ccarena-agent,path={socket_path},server=on,wait=off",
            "-device", f"virtserialport,bus=ccarena-serial.0,chardev=ccarena-agent,"
                       f"name={AGENT_PORT}"]


def name_opts(name: str) -> list[str]:
    """QEMU's name (in ps) and names for its threads: "CPU 0/KVM", "ALL CPUs/TCG",
    "vhost-<pid>" (measure/guest_cpu.py reads them)."""
    return ["-name", f"{name},debug-threads=on"]


def decode_features(bits: str) -> list[str]:
    """The names of the features set in sysfs's `features` string ('0'/'1' per bit, bit
    0 first); unnamed bits as bit<N>."""
    return [FEATURES.get(i, f"bit{i}") for i, c in enumerate(bits.strip()) if c == "1"]
