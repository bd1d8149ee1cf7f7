"""A study's [[expect]] checks, checked against the study before anything runs: what a
check says must be something that can be evaluated on the study's results, so a study
never runs to its end to fail on a typo in a check.

    BOUND                          the bound forms: a number, "<x>%rate", "<x>*rate",
                                   "<x>*base_rtt"
    parse_bound(v) -> v            the bound as written, or ValueError saying what is accepted
    bound_terms(v) -> (x, unit)    a bound as a multiple of 1, the rate or the base RTT
    check_bounds(e) -> str         why min and max can never both hold ("" when they can)
    check_cells(study, path)       where, relative_to and over against the swept values;
                                   bounds on the rate where a covered cell has none

Which metric names exist is the metrics' business (analysis.check_spec); this module
knows the study only."""
from __future__ import annotations

import re

from ccarena.errors import SpecError

BOUND = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(%rate|\*base_rtt|\*rate)\s*$")
BOUND_FORMS = 'a number, "90%rate", "0.5*rate" or "3*base_rtt"'


def parse_bound(v):
    """A check's min or max as written: a number, or a string of BOUND's forms."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, str) and BOUND.match(v):
        return v
    raise ValueError(f"cannot read the bound {v!r}; write {BOUND_FORMS}")


def bound_terms(v) -> tuple[float, str]:
    """(x, unit): the bound is x (unit ""), x times the rate ("rate") or x times the base
    RTT ("base_rtt")."""
    if not isinstance(v, str):
        return float(v), ""
    m = BOUND.match(v)
    x, what = float(m.group(1)), m.group(2)
    if what == "%rate":
        return x / 100, "rate"
    return x, what[1:]


def check_bounds(e: dict) -> str:
    """Why the check's min and max can never both hold, or ""."""
    if e.get("min") is None or e.get("max") is None:
        return ""
    (lo, a), (hi, b) = bound_terms(e["min"]), bound_terms(e["max"])
    if a == b and lo > hi and "relative_to" not in e:
        return (f"min = {e['min']!r} is above max = {e['max']!r}: no value can pass; "
                "swap them or fix one")
    return ""


def _matches(params: dict, where: dict) -> bool:
    """As the checks select cells (analysis.checks): a value, or a list of values,
    compared as text."""
    for k, v in where.items():
        vals = [str(x) for x in v] if isinstance(v, list) else [str(v)]
        if k not in params or str(params[k]) not in vals:
            return False
    return True


def _swept(study, path: str, key: str, table: dict) -> None:
    """Every factor `table` names is swept, and some cell has the values it asks for (of
    a list, one at least: a list may name values of the study's other scales)."""
    for k, v in table.items():
        if k not in study.sweep:
            have = ", ".join(study.sweep) or "none (this study has no [sweep])"
            raise SpecError(path, f"{key}.{k}", f"{k} is not a swept factor; swept: {have}")
        values = list(dict.fromkeys(str(x) for x in study.sweep[k]))
        asked = v if isinstance(v, list) else [v]
        if not any(str(x) in values for x in asked):
            raise SpecError(path, f"{key}.{k}", f"no cell has {k} = "
                            + " or ".join(repr(x) for x in asked) + "; its values: "
                            + ", ".join(values))
    if not any(_matches(c.params, table) for c in study.cells):
        raise SpecError(path, key, "no cell has " + " and ".join(
            f"{k} = {v!r}" for k, v in table.items()) + " at once")


def check_cells(study, path: str) -> None:
    """Each check's where, relative_to and over against the study's cells (load.parse_study
    calls this once the sweep is known)."""
    for i, e in enumerate(study.expect):
        for k in ("where", "relative_to"):
            if e.get(k):
                _swept(study, path, f"expect[{i}].{k}", e[k])
        if "over" in e and e["over"] not in study.sweep:
            have = ", ".join(study.sweep) or "none (this study has no [sweep])"
            raise SpecError(path, f"expect[{i}].over", f"{e['over']} is not a swept factor; "
                            f"a trend runs over one of: {have}")
        on_rate = [k for k in ("min", "max") if e.get(k) is not None
                   and bound_terms(e[k])[1] == "rate"]
        if not on_rate:
            continue
        for c in study.cells:
            if _matches(c.params, e.get("where") or {}) and c.study.bottleneck.rate_bps is None:
                at = ", ".join(f"{k} = {v}" for k, v in c.params.items())
                raise SpecError(path, f"expect[{i}].{on_rate[0]}",
                                f"{e[on_rate[0]]!r} is relative to the rate, and the "
                                "bottleneck has no rate" + (f" in the cell {at}" if at else "")
                                + "; give bottleneck.rate, a number, or limit the check with "
                                "where")
