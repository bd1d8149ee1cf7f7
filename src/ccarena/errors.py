"""The error hierarchy: every error a user can cause or meet is one line that names the
attempt, the object and the cause. The CLI prints str(err); tracebacks only with --debug."""
from __future__ import annotations


class CcarenaError(Exception):
    """Base of every error ccarena reports to a user."""


class SpecError(CcarenaError):
    """A study file is wrong: names the file, the key and what would be accepted."""

    def __init__(self, path, key: str, reason: str):
        self.path, self.key, self.reason = str(path), key, reason
        super().__init__(f"{self.path}: {key}: {reason}" if key else f"{self.path}: {reason}")


class CommandError(CcarenaError):
    """An external command failed."""

    def __init__(self, argv, rc: int, stderr_tail: str = ""):
        self.argv, self.rc, self.stderr_tail = list(map(str, argv)), rc, stderr_tail.strip()
        tail = self.stderr_tail.splitlines()[-3:] if self.stderr_tail else []
        msg = f"command failed (exit {rc}): {' '.join(self.argv)}"
        if tail:
            msg += ": " + " | ".join(tail)
        super().__init__(msg)


class TestbedError(CcarenaError):
    """Building or using the emulated network failed."""

    __test__ = False  # not a pytest class


class PreflightError(CcarenaError):
    """The study needs something this machine cannot give; raised before anything is built."""


class RunError(CcarenaError):
    """A run failed while it ran (a process died, a timeout)."""


class ResultsError(CcarenaError):
    """A results directory is missing, damaged or of an unknown format version."""
