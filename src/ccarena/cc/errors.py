"""Errors of ccarena.cc: one line each — the attempt, the object, the cause."""

from __future__ import annotations

try:
    from ccarena.errors import CcarenaError
except ImportError:  # pragma: no cover - the package without its error module
    CcarenaError = Exception  # type: ignore[misc,assignment]


class CCError(CcarenaError):
    """Base class for congestion-control pack errors."""


class UnknownAlgorithm(CCError):
    def __init__(self, name: str, why: str, known: list[str] | None = None):
        self.name, self.why, self.known = name, why, known or []
        hint = f"; known: {', '.join(sorted(self.known))}" if self.known else ""
        super().__init__(f"congestion control {name!r}: {why}{hint}")


class LoadError(CCError):
    """A BPF object failed to load or register (file, errno, verifier log tail)."""

    def __init__(self, file: str, errno: int | None, message: str, log_tail: list[str]):
        self.file, self.errno, self.message, self.log_tail = file, errno, message, log_tail
        e = f" (errno {errno})" if errno is not None else ""
        tail = ("\n" + "\n".join(log_tail)) if log_tail else ""
        super().__init__(f"load {file}: {message}{e}{tail}")


class CompileError(CCError):
    def __init__(self, file: str, argv: list[str], rc: int, stderr_tail: str):
        self.file, self.argv, self.rc, self.stderr_tail = file, argv, rc, stderr_tail
        super().__init__(f"compile {file}: clang exited {rc}\n{stderr_tail}")
