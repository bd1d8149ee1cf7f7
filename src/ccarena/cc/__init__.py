"""ccarena.cc — congestion controls: which exist, where they come from, and
making them usable for a run (docs/dev/contracts.md §4, docs/algorithms.md).

- ``available(extra_dirs=None)`` → ``{name: Algo}``
- ``resolve(name, force=None)`` → ``Algo`` (``force``: None | "kernel" | "bpf")
- ``acquire(names, run_id, force=None)`` → context manager yielding ``{name: kernel_name}``
- ``cleanup_stale()`` → kernel names unregistered because no live run held them
- ``guard_counts(kernel_name)`` → what the algorithm's guard repaired so far, per network
  namespace (late, at entry); ``run_guard_counts(kernel_name, inodes)`` → summed over a run's
"""

from ccarena.cc.hold import GuardCounts, acquire, cleanup_stale, guard_counts, run_guard_counts
from ccarena.cc.errors import CCError, CompileError, LoadError, UnknownAlgorithm
from ccarena.cc.catalog import CATALOG, Algo, available, resolve

__all__ = [
    "Algo", "CATALOG", "CCError", "CompileError", "LoadError", "UnknownAlgorithm",
    "GuardCounts", "acquire", "available", "cleanup_stale", "guard_counts", "resolve",
    "run_guard_counts",
]
