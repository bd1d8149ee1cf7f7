"""The TCP settings each host of a stored study's runs had, and where two studies differ.

Contract: `recorded(metas)` takes a study's run manifests (ResultsDir.metas) and returns
{(host, setting): set of values} from each run's `host_state` (the effective sysctls every
host had, and its routes' initial window); `differences(a, b)` compares two such records
and returns one line per setting whose values differ, naming the host and both values.
`against_reference(rec, study)` lists the settings the study left to the host that differ
from the reference kernel's (study/tcp_reference.py). Pure: dicts in, lines out.
"""
from __future__ import annotations

# settings that differ by design between two runs of one machine, not between machines
_VOLATILE = ("net.ipv4.tcp_fastopen_key",)


def recorded(metas: dict) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for m in metas.values():
        sysctls = ((m or {}).get("host_state") or {}).get("sysctls") or {}
        for host, vals in sysctls.items():
            for k, v in (vals or {}).items():
                if k not in _VOLATILE:
                    out.setdefault((host, k), set()).add(
                        "absent" if v is None else " ".join(str(v).split()))
    return out


def _show(vals: set[str] | None) -> str:
    return " | ".join(sorted(vals)) if vals else "not recorded"


def differences(a: dict, b: dict) -> list[str]:
    """'s1 net.ipv4.tcp_rmem: A 4096 131072 6291456, B 4096 131072 33554432' for every
    host and setting recorded in both whose values differ (a setting only one study
    recorded is named too: an older run may not have recorded it)."""
    lines = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va != vb and (va is not None and vb is not None):
            lines.append(f"{key[0]} {key[1]}: A {_show(va)}, B {_show(vb)}")
    only = sorted({k[1] for k in set(a) ^ set(b)})
    if only and a and b:
        lines.append(f"recorded by only one of them: {', '.join(only[:8])}"
                     + (f" and {len(only) - 8} more" if len(only) > 8 else ""))
    return lines


def against_reference(rec: dict, study) -> list[str]:
    """The settings the study left to the hosts that differ from the reference kernel's,
    as the runs recorded them."""
    from ccarena.study.tcp_reference import format_rows, left_to_host
    values = {}
    for (host, k), vals in rec.items():
        values.setdefault(k, set()).update(vals)
    flat = {k: (next(iter(v)) if len(v) == 1 else " | ".join(sorted(v)))
            for k, v in values.items()}
    return format_rows(left_to_host(study, flat), where="in the runs")
