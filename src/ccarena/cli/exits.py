"""The exit statuses of `ccarena` (docs/running.md, "Exit status")."""
OK = 0
ERROR = 1            # something failed; one line says what
USAGE = 2            # bad command line
CHECKS = 3           # a study's check failed or could not be evaluated
INCOMPLETE = 4       # planned runs are missing (interrupted, or a run never stored)
PARTIAL = 5          # every run stored, but a cell has no valid run
FAILED = 6           # no cell of the study has a valid run
INTERRUPTED = 130    # Ctrl-C, SIGTERM or SIGHUP

_OUTCOME = {"incomplete": INCOMPLETE, "failed": FAILED, "partial": PARTIAL}


def of_study(results, passed: bool | None) -> int:
    """A stored study's status: what its runs lack first (a study that cannot answer
    part of its question is never a plain failed check), then its checks (`passed`:
    True, False, or None without checks)."""
    code = _OUTCOME.get(results.outcome)
    if code is not None:
        return code
    return CHECKS if passed is False else OK


def outcome_line(results) -> str | None:
    """One line saying what a study that is not complete lacks (None when complete)."""
    outcome = results.outcome
    if outcome == "complete":
        return None
    st = results.status()
    if outcome == "incomplete":
        n = int(st["state"].eq("missing").sum())
        return (f"the study is incomplete: {n} of {len(st)} planned runs are missing "
                "(complete it with --resume)")
    if outcome == "failed":
        return "the study failed: no cell has a valid run"
    valid = st.groupby("cell")["state"].agg(lambda s: s.eq("valid").any())
    lacking = sorted(valid.index[~valid])
    named = ", ".join(lacking[:5]) + (f" and {len(lacking) - 5} more" if len(lacking) > 5
                                      else "")
    return (f"the study is partial: {len(lacking)} of {len(valid)} cells have no valid run "
            f"({named})")
