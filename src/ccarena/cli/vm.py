"""`ccarena vm -- CMD` and `ccarena run STUDY --vm`: the command-line side of ccarena.vm."""
from __future__ import annotations

import argparse
import sys

from ccarena.errors import CcarenaError


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def add_vm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accel", choices=("auto", "kvm", "tcg"), default=None,
                   help="accelerator (default auto: KVM when it works here, else TCG; "
                   "or CCARENA_VM_ACCEL)")
    p.add_argument("--cpus", type=_vcpus, default=None, help="guest CPUs (default 2)")
    p.add_argument("--memory", default=None, help="guest memory (default 2G)")


def _vcpus(v: str) -> int:
    """--cpus: as a VM host's vm.cpus accepts."""
    from ccarena.study.keys import VM_KEYS
    try:
        return VM_KEYS["cpus"](int(v))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"guest vCPUs: expected a whole number from 1 to 64, "
                                         f"got {v!r}" if not v.lstrip("-").isdigit()
                                         else f"guest vCPUs {e}") from None


def guest_lines(args, study) -> list[str]:
    """What `validate --vm` says of the guest that would run the study: the reference
    kernel (the cached image, or where it is missing, the one `make vm` fetches) and the
    guest's size; nothing is booted."""
    from ccarena.testbed.guest.image import ImageError, locate
    from ccarena.study.tcp_reference import REFERENCE_KERNEL
    c = _config(args)
    try:
        img = locate()
        kernel = f"{img.release} ({img.label}, {img.root})"
    except ImageError:
        kernel = f"{REFERENCE_KERNEL} (not fetched yet: `make vm` fetches it)"
    from ccarena.vm.session import tcg_advice
    accel = {"auto": "auto (KVM where it works here, else TCG: found when it boots)"}.get(
        c.accel, c.accel)
    return [f"runs in a VM (docs/vm.md): the reference kernel {kernel}; {c.cpus} vCPUs, "
            f"{c.memory} memory, accelerator {accel}",
            "link backend and algorithm sources: the guest's; its kernel has netem, RED, "
            "CoDel, FQ-CoDel and every kernel congestion control"] + \
        [x for x in (tcg_advice(study, "tcg" if c.accel == "tcg" else ""),) if x]


def _config(args, **over):
    from ccarena.vm import config_from_env
    return config_from_env(accel=args.accel, cpus=args.cpus, memory=args.memory, **over)


def cmd_vm(args) -> int:
    from ccarena.vm import run
    argv = list(args.command)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: ccarena vm [options] -- CMD [ARG...]", file=sys.stderr)
        return 2
    res = run(argv, _config(args, rwdirs=tuple(args.rwdir), timeout_s=args.timeout),
              log=None if args.quiet else _log)
    if not args.quiet:
        _log(f"vm: {res.kernel} ({res.accel}) booted in {res.boot_s:.1f} s; "
             f"{res.wall_s:.1f} s in all; exit {res.rc}")
    return res.rc


def vm_config(args):
    """`ccarena run --vm`'s guest, from --accel, --cpus and --memory (else the
    environment's defaults)."""
    return _config(args)


def register(sub) -> None:
    p = sub.add_parser("vm", help="run a command as root in a VM with the reference kernel",
                       description="Boots the reference kernel (make vm) over this "
                       "machine's files and runs CMD in it as root; the project and "
                       "--rwdir folders are writable, the rest of the guest is thrown away "
                       "at exit. Exits with CMD's status.")
    add_vm_options(p)
    p.add_argument("--rwdir", action="append", default=[],
                   help="a host folder the guest may write (repeatable)")
    p.add_argument("--timeout", type=float, help="stop the VM after this many seconds")
    p.add_argument("--quiet", action="store_true", help="say nothing about the boot")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARG...]")
    p.set_defaults(func=cmd_vm)
