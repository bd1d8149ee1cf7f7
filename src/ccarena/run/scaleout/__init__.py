"""Several runs at once: a local Dask cluster (`--jobs`) or a scheduler's workers
(`--cluster`), each run a task on its own share of the CPUs (docs/scale-out.md)."""
