"""Running a study's planned runs through Dask: several at once on this machine
(`--jobs N`: an in-process cluster of N one-thread workers, each run held to its own CPU
share) or on the workers of a running Dask scheduler (`--cluster tcp://HOST:8786`, workers
started with `ccarena worker`). Both take the same path:

    with local_client(shares) as client:   # or remote_client(address)
        Dispatcher(client, study, plan, results, ...).run(todo)

Each planned run is one task (run/scaleout/task.py payload; run/remote.run_task), asking for one
`testbed` resource, prioritised in plan order. As each completes, its run directory is
committed into the one results directory exactly as a serial run's (store/archive.py:
staged, checked, renamed), the aggregates refreshed and on_run called. A run that the
machine's noise made invalid is submitted again with the same seed, its attempts set
aside as in a serial study (executor._measure's rules; which cells count as "unhelped"
depends on completion order, so how many re-runs a parallel study makes can differ from a
serial one, never what a run measures). A worker that dies mid-run: Dask runs the task
again elsewhere and nothing of the lost attempt is kept. A task that fails stops the
study with its one-line reason; the committed runs stay and `--resume` completes it."""
from __future__ import annotations

import contextlib
import logging
import secrets
import sys

from ccarena.analysis import aggregates
from ccarena.errors import CcarenaError, RunError
from ccarena.run.scaleout import remote, task
from ccarena.measure import validity
from ccarena.store import archive
from ccarena.store.writer import Writer

CONNECT_TIMEOUT_S = 20
# what every machine of a cluster must run in the same version: a task's payload, the
# run it describes and the archive it returns are only understood alike then
SAME_VERSIONS = ("ccarena", "dask", "distributed")


def version_mismatch(versions: dict) -> str | None:
    """The first machine whose ccarena, dask or distributed differs from this one's, as
    one line (distributed's Client.get_versions shape), or None when all agree."""
    mine = (versions.get("client") or {}).get("packages") or {}
    others = [("the scheduler", (versions.get("scheduler") or {}).get("packages") or {})]
    others += [(f"worker {addr}", (v or {}).get("packages") or {})
               for addr, v in sorted((versions.get("workers") or {}).items())]
    for name in SAME_VERSIONS:
        for who, pk in others:
            if pk.get(name) != mine.get(name):
                return (f"{who} runs {name} {pk.get(name) or '(none)'}, this machine "
                        f"{mine.get(name) or '(none)'}")
    return None


class ClusterError(RunError):
    """The Dask scheduler cannot be reached, or a task failed on a worker."""


@contextlib.contextmanager
def local_client(shares: list[str | None]):
    """An in-process Dask cluster: one one-thread worker per share (`testbed` = 1 each);
    its tasks run in threads of this process, each run in a process of its own."""
    remote.require_dask("--jobs")
    from distributed import Client, LocalCluster
    remote.configure(shares)
    cluster = LocalCluster(n_workers=len(shares), threads_per_worker=1, processes=False,
                           resources={"testbed": 1}, dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()
        with contextlib.suppress(Exception):
            cluster.close()


@contextlib.contextmanager
def remote_client(address: str):
    remote.require_dask("--cluster")
    from distributed import Client
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise ClusterError(f"connecting to the Dask scheduler at {address}: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__} "
                           "(start one with `dask scheduler`, see docs/scale-out.md)") from None
    try:
        bad = version_mismatch(client.get_versions(packages=list(SAME_VERSIONS)))
        if bad:
            raise ClusterError(f"{address}: {bad}; every machine of a cluster must run the "
                               f"same {', '.join(SAME_VERSIONS)} (docs/scale-out.md)")
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()


def testbed_slots(client) -> int:
    """How many runs the scheduler's workers can run at once now."""
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    return int(sum((w.get("resources") or {}).get("testbed", 0) for w in workers.values()))


class Dispatcher:
    """Submits planned runs, commits what comes back, re-runs what noise spoiled."""

    def __init__(self, client, study, plan, results, *, force_cc=None, event_log=False,
                 bar=None, on_run=None, merge_preflight=False):
        self.client, self.study, self.plan, self.results = client, study, plan, results
        self.force_cc, self.event_log, self.bar, self.on_run = force_cc, event_log, bar, on_run
        self.reruns = plan.reruns
        self.unhelped: set[str] = set()
        self.old_meta: dict[str, dict] = {}
        self.done: set[str] = set()
        self.futures: dict = {}
        self.token = secrets.token_hex(3)
        self.pf = {"cells": {}, "algorithms": {}} if merge_preflight else None
        self.ac = self._as_completed()

    def _as_completed(self):
        """The futures as they complete; more can be added while iterating."""
        from distributed import as_completed
        return as_completed(loop=self.client.loop)

    def submit(self, r, superseded: list[dict]) -> None:
        payload = task.make_payload(self.study, self.plan, r, force_cc=self.force_cc,
                                    event_log=self.event_log, superseded=superseded)
        key = f"ccarena-{r.label}-a{len(superseded) + 1}-{self.token}"
        fut = self.client.submit(remote.run_task, payload, key=key, pure=False,
                                 resources={"testbed": 1}, priority=-r.index, retries=0)
        self.futures[fut] = (r, superseded)
        self.ac.add(fut)

    def run(self, todo) -> None:
        try:
            for r in todo:
                self.submit(r, [])
            for fut in self.ac:
                r, superseded = self.futures.pop(fut)
                out = self._result(fut, r)
                fut.release()
                self.received(r, superseded, out)
        except BaseException:
            self.cancel()
            raise

    def cancel(self) -> None:
        """Cancel what is still submitted: workers stop those runs (run/scaleout/remote.py)."""
        pending = list(self.futures)
        self.futures.clear()
        if pending:
            with contextlib.suppress(Exception):
                self.client.cancel(pending, force=True)

    def _result(self, fut, r) -> dict:
        try:
            return fut.result()
        except CcarenaError:
            raise
        except Exception as e:  # noqa: BLE001 — Dask's own (KilledWorker) and a worker's bugs
            name = type(e).__name__
            if name == "KilledWorker":
                raise ClusterError(f"run {r.label}: every worker that ran it died ({e}); the "
                                   "study stops here (complete it with --resume)") from None
            raise ClusterError(f"run {r.label} on a worker: {name}: {e}") from None

    def received(self, r, superseded: list[dict], out: dict) -> None:
        if r.label in self.done:        # a copy Dask ran twice: the first one counts
            return
        res = self.results
        host = ((out.get("meta") or {}).get("worker") or {}).get("host") or "a worker"
        self._note_preflight(r, out.get("preflight"))
        staged, meta = archive.unpack(res, r.label, out["archive"], origin=host)
        if out.get("runs_at_once") is not None:
            # the executor's own record of its parallelism (meta.json is not in the
            # manifest it completes, so the run stays complete)
            meta["runs_at_once"] = int(out["runs_at_once"])
            archive.write_meta(staged, meta)
        if not superseded:
            archive.adopt(res, r.label)
            set_aside: list[dict] = []
            if self.reruns and r.cell in self.unhelped and validity.noise_only(meta):
                meta["rerun_skipped"] = ("an earlier run of this cell was run again and "
                                         "was invalid all the same")
                Writer(res).update_meta(r.label, meta)
                return self._finish(r, meta, set_aside)
        else:
            Writer(res).supersede(r.label, superseded[-1]["attempt"],
                                  self.old_meta.pop(r.label))
            res.forget()
            set_aside = list(superseded)
        if not meta["valid"] and len(set_aside) < self.reruns and validity.noise_only(meta):
            aside = Writer(res).aside_record(r.label, len(set_aside) + 1, meta)
            self.old_meta[r.label] = meta
            if self.bar:
                self.bar.rerun(r, aside["attempt"])
            self.submit(r, set_aside + [aside])
            return
        self._finish(r, meta, set_aside)

    def _finish(self, r, meta: dict, set_aside: list[dict]) -> None:
        if set_aside and validity.noise_only(meta):
            self.unhelped.add(r.cell)
        elif meta["valid"]:
            self.unhelped.discard(r.cell)
        self.done.add(r.label)
        self.results.forget()
        aggregates.refresh(self.results)
        if self.bar:
            self.bar.done(r, meta)
        if self.on_run:
            self.on_run(r, meta)

    def _note_preflight(self, r, pf: dict | None) -> None:
        """Cluster: preflight.json gathers what the workers found for each cell."""
        if self.pf is None or not pf:
            return
        cell = (pf.get("cells") or {})
        first = cell.get("0", cell.get(0))
        if first:
            self.pf["cells"][int(r.cell[1:])] = first
        self.pf["algorithms"].update(pf.get("algorithms") or {})
        Writer(self.results).write_preflight({
            "cells": dict(sorted(self.pf["cells"].items())),
            "algorithms": dict(sorted(self.pf["algorithms"].items()))})


def note(text: str) -> None:
    print(f"ccarena: {text}", file=sys.stderr)
