"""ccarena.cc — congestion controls: which exist, where they come from, and
making them usable for a run (docs/dev/contracts.md §4, docs/algorithms.md).

- ``available(extra_dirs=None)`` → ``{name: Algo}``
- ``resolve(name, force=None)`` → ``Algo`` (``force``: None | "kernel" | "bpf")
- ``acquire(names, run_id, force=None)`` → context manager yielding ``{name: kernel_name}``
- ``cleanup_stale()`` → kernel names unregistered because no live run held them
- ``repairs(kernel_name)`` → corrupted ssthresh/cwnd values repaired by the guard so far
"""

from .hold import acquire, cleanup_stale, repairs
from .errors import CCError, CompileError, LoadError, UnknownAlgorithm
from .registry import CATALOG, Algo, available, resolve

__all__ = [
    "Algo", "CATALOG", "CCError", "CompileError", "LoadError", "UnknownAlgorithm",
    "acquire", "available", "cleanup_stale", "repairs", "resolve",
]
