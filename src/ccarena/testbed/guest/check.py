"""What a study with VM hosts needs, checked before anything boots, and what the
accelerator can carry.

    preflight(study) -> {"accel": {...}, "kernels": [...], "memory_bytes": n} or {}
                        raises PreflightError naming what is missing
    advice(study, facts) -> [warnings]     cells a guest under TCG cannot carry
    describe(facts) -> [lines]             what `ccarena validate` shows about the guests"""
from __future__ import annotations

import os

from ccarena import units
from ccarena.errors import CcarenaError, PreflightError
from ccarena.study.model import Cell, Study
from ccarena.testbed.guest import accel as accel_mod
from ccarena.testbed.guest import image as image_mod
from ccarena.testbed.guest.machine import UserKernel, decide_vhost
from ccarena.testbed.guest.pool import demand
from ccarena.testbed.guest.vng import find_qemu, find_vng


def _available_memory() -> int | None:
    import psutil
    try:
        return int(psutil.virtual_memory().available)
    except (OSError, RuntimeError, ValueError):
        return None


def preflight(study: Study) -> dict:
    need = demand(study)
    if not need:
        return {}
    where = f"{study.path}: hosts"
    try:
        find_vng("boot a VM host")
        find_qemu("boot a VM host")
    except CcarenaError as e:
        raise PreflightError(f"{where}: {e}") from None
    if not os.path.exists("/dev/net/tun"):
        raise PreflightError(f"{where}: a VM host's NIC needs a tap device, and /dev/net/tun "
                             "does not exist (modprobe tun)")
    out = {"accel": {}, "kernels": [], "vhost": {}}
    for spec in need:
        try:
            img = image_mod.locate() if spec.kernel is None else UserKernel(spec.kernel)
            label = getattr(img, "label", img.vmlinuz)
            if label not in out["kernels"]:
                out["kernels"].append(label)
            key = f"{spec.accel}:{label}"
            if key not in out["accel"]:
                accel, why = accel_mod.accel_for(spec.accel, img)
                out["accel"][key] = {"asked": spec.accel, "kernel": label, "accel": accel,
                                     "why": why}
            accel = out["accel"][key]["accel"]
            on, why = decide_vhost(spec.vhost, accel)
            out["vhost"][f"{spec.vhost}:{accel}"] = {"on": on, "why": why}
        except CcarenaError as e:
            raise PreflightError(f"{where}: {e}") from None
    total = sum(spec.memory * n for spec, n in need.items())
    out["memory_bytes"] = total
    out["guests"] = sum(need.values())
    have = _available_memory()
    if have is not None and total > have:
        raise PreflightError(f"{where}: the VM hosts need {total / 2**30:.1f} GiB of guest "
                             f"memory at once, more than the {have / 2**30:.1f} GiB this "
                             "machine has available; give them less (vm.memory)")
    return out


def _accels(facts: dict) -> set[str]:
    return {a["accel"] for a in (facts or {}).get("accel", {}).values()}


def describe(facts: dict) -> list[str]:
    out = []
    for a in (facts or {}).get("accel", {}).values():
        c = accel_mod.carries(a["accel"])
        what = (f"TCP up to about {units.format_rate(c.rate_bps)} with its samples intact "
                f"(2 Mbit/s comfortably), sampled every {units.format_time(c.sample_s)} or "
                "slower" if c.rate_bps else "what the host carries")
        out.append(f"VM hosts ({a['kernel']}): {a['accel']} ({a['why']}); a guest carries "
                   f"{what}")
    if facts:
        out.append(f"VM hosts: {facts['guests']} guest{'s' if facts['guests'] != 1 else ''} "
                   f"at once, {facts['memory_bytes'] / 2**30:.1f} GiB of guest memory")
    return out


def advice(study: Study, facts: dict | None) -> list[str]:
    """A warning per cell whose VM hosts boot under TCG and whose bottleneck (or
    sampling) is beyond what TCG carries: those runs will be flagged invalid."""
    if not facts or "tcg" not in _accels(facts):
        return []
    c = accel_mod.carries("tcg")
    out = []
    for cell in study.cells or [Cell(0, {}, study)]:
        s = cell.study
        if not s.vm_hosts:
            continue
        b = s.bottleneck
        rates = [r for r in (b.rate_bps, b.reverse_rate_bps) if r]
        fast = max(rates) if rates else None
        why = []
        if fast is None or fast > c.rate_bps:
            why.append("an unlimited bottleneck" if fast is None
                       else f"a {units.format_rate(fast)} bottleneck")
        if s.sample_interval_s < c.sample_s:
            why.append(f"samples every {units.format_time(s.sample_interval_s)}")
        if why:
            where = ", ".join(f"{k}={v}" for k, v in cell.params.items())
            out.append(("the cell [" + where + "]" if where else "the study") + f" has "
                       f"{' and '.join(why)}, beyond what a VM host under TCG carries (up to "
                       f"about {units.format_rate(c.rate_bps)}, sampled every "
                       f"{units.format_time(c.sample_s)} or slower; docs/vm.md): expect its "
                       "runs to be flagged invalid (on a KVM machine such rates are "
                       "meaningful)")
    return out
