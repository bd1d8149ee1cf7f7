"""The worker's side of a study run on Dask: each task is one planned run, run by a
process of its own (run/scaleout/task.py), held to one of this machine's CPU shares.

    configure(shares)       the slots of this process: one CPU share each (run/scaleout/shares.py)
    run_task(payload)       the Dask task: -> {"meta", "archive", "preflight"}
    stop_all()              tear every run of this process down (interrupt, worker closing)
    serve(address, shares)  a Dask worker for `ccarena worker`: one thread and one
                            `testbed` resource per slot

A task takes a free slot's share for as long as its run lasts. While the run process
works, the task watches for its own cancellation (the submitter was interrupted or went
away) and for this worker closing; either stops the run, which tears itself down. A run
stopped because its worker closes is handed back to the scheduler (Reschedule), which
runs it elsewhere; nothing of it is kept. A run process that fails says why in one line,
raised to the submitter as RemoteRunError."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ccarena.errors import RunError
from ccarena.run import environment

log = logging.getLogger(__name__)

TEARDOWN_WAIT_S = 60.0      # how long a stopped run may take to tear itself down
POLL_S = 0.5


class RemoteRunError(RunError):
    """A worker could not run a planned run (its run process failed before storing it)."""


class RunCancelled(RunError):
    """The submitter no longer wants the run (cancelled, or gone)."""


_slots: "queue.Queue[str | None]" = queue.Queue()
_live: dict[int, subprocess.Popen] = {}
_at_once: dict[int, int] = {}      # live run process -> most runs alive at once in its life
_lock = threading.Lock()
_closing = threading.Event()
_tasks = [0]        # run_task calls under way in this process
TASK_PREFIX = "ccarena-task-"   # + <worker pid>-<label>-<random>, in the temp directory


def require_dask(what: str) -> None:
    """Raise PreflightError naming the extra when dask/distributed are not installed."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        from ccarena.errors import PreflightError
        raise PreflightError(f"{what} needs Dask: install ccarena with its cluster extra "
                             "(pip install 'ccarena[cluster]'; `make install` does)") from None


def configure(shares: list[str | None]) -> None:
    """This process runs len(shares) runs at once, each held to its share."""
    global _slots
    _closing.clear()
    _slots = queue.Queue()
    for s in shares:
        _slots.put(s)


def _where() -> dict:
    """This task's Dask worker and key (None outside a worker)."""
    try:
        from distributed import get_worker
        w = get_worker()
        return {"worker": w, "key": w.get_current_task()}
    except (ImportError, ValueError, AttributeError):
        return {"worker": None, "key": None}


def _cancelled(where: dict) -> bool:
    w = where["worker"]
    if w is None:
        return False
    ts = w.state.tasks.get(where["key"])
    return ts is None or ts.state in ("cancelled", "released", "forgotten")


def run_task(payload: dict) -> dict:
    """Run one planned run here; -> its meta, its directory as a tar (store/archive.py),
    the preflight of its cell on this machine, and runs_at_once: the most run processes
    this process ran at the same time while this one ran (the executor's own count of
    its parallelism; at most its number of slots)."""
    from ccarena.store.archive import pack
    where = _where()
    label = payload.get("label")
    host = environment.worker()["host"]
    if _closing.is_set():       # this worker is going: run it elsewhere
        from distributed import Reschedule
        raise Reschedule()
    try:
        share = _slots.get(timeout=5)
    except queue.Empty:
        raise RemoteRunError(f"run {label} on {host}: no free CPU share in this process "
                             "(start workers with `ccarena worker`)") from None
    with _lock:
        _tasks[0] += 1
    tmp = None
    try:
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f"{TASK_PREFIX}{os.getpid()}-{label}-"))
        except OSError as e:
            raise RemoteRunError(f"run {label} on {host}: creating its directory in "
                                 f"{tempfile.gettempdir()}: {e.strerror}") from None
        w = where["worker"]
        (tmp / "payload.json").write_text(json.dumps(
            {**payload, "cpuset": share,
             "worker": {"dask_worker": w.address if w is not None else None}},
            default=str))
        rc, why, at_once = _run_process(tmp, where)
        result = tmp / "result.json"
        if rc == 0 and result.exists():
            out = json.loads(result.read_text())
            archive = pack(Path(out["run_dir"]))
            return {"meta": out["meta"], "preflight": out["preflight"], "archive": archive,
                    "runs_at_once": at_once}
        if why == "closing":
            from distributed import Reschedule
            raise Reschedule()
        if why == "cancelled":
            raise RunCancelled(f"run {label} on {host}: cancelled by the submitter")
        err = tmp / "error.txt"
        text = err.read_text().strip() if err.exists() else ""
        if not text:
            tail = (tmp / "stderr").read_text(errors="replace").strip().splitlines()[-3:] \
                if (tmp / "stderr").exists() else []
            text = f"its process exited {rc}" + (": " + " | ".join(tail) if tail else "")
        raise RemoteRunError(f"run {label} on {host}: {text}")
    finally:
        _slots.put(share)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        with _lock:
            _tasks[0] -= 1


def cleanup_stale_tasks(base: str | None = None) -> list[str]:
    """Remove the task directories of worker processes that are gone (a worker killed
    while its run process could not clean up either); -> what was removed."""
    from ccarena.testbed.leftovers import pid_alive
    base = Path(base or tempfile.gettempdir())
    gone = []
    for d in base.glob(f"{TASK_PREFIX}*"):
        pid = d.name[len(TASK_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            gone.append(str(d))
    return gone


def _run_process(tmp: Path, where: dict) -> tuple[int, str | None, int]:
    """Run the run process for `tmp`; -> (exit code, None | "closing" | "cancelled", the
    most run processes alive at once in this process while it ran)."""
    with open(tmp / "stderr", "wb") as err:
        p = subprocess.Popen([sys.executable, "-m", "ccarena.run.scaleout.task", str(tmp),
                              str(os.getpid())], stdin=subprocess.DEVNULL, stdout=err,
                             stderr=err, start_new_session=True)
    with _lock:
        _live[p.pid] = p
        for pid in _live:
            _at_once[pid] = max(_at_once.get(pid, 0), len(_live))
    why = None
    try:
        while True:
            try:
                rc = p.wait(timeout=POLL_S)
                with _lock:
                    return rc, why, _at_once.get(p.pid, 1)
            except subprocess.TimeoutExpired:
                pass
            if why is None and (_closing.is_set() or _cancelled(where)):
                why = "closing" if _closing.is_set() else "cancelled"
                _stop(p)
    finally:
        with _lock:
            _live.pop(p.pid, None)
            _at_once.pop(p.pid, None)


def _stop(p: subprocess.Popen) -> None:
    """SIGTERM a run process (it tears its run down); SIGKILL and clean up after it if it
    takes longer than TEARDOWN_WAIT_S."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=TEARDOWN_WAIT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        from ccarena.testbed import leftovers
        leftovers.cleanup()


def stop_all(timeout_s: float = TEARDOWN_WAIT_S) -> None:
    """Stop every run this process runs and wait until each has torn itself down."""
    _closing.set()
    with _lock:
        procs = list(_live.values())
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _stop(p)
    # the tasks notice within POLL_S, remove their directories and hand their runs back
    while True:
        with _lock:
            if not _live and not _tasks[0]:
                return
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)


def serve(address: str, shares: list[str | None], name: str | None = None,
          on_ready=None) -> int:
    """A Dask worker connected to the scheduler at `address`, with one thread and one
    `testbed` resource per share, until SIGINT or SIGTERM (then every run is torn down and
    handed back to the scheduler) or the scheduler closes it."""
    import asyncio

    require_dask("ccarena worker")
    from distributed import Worker
    configure(shares)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, stop.set)
        w = await Worker(address, nthreads=len(shares), resources={"testbed": len(shares)},
                         name=name, validate=False)
        if on_ready:
            on_ready(w)
        done = asyncio.ensure_future(w.finished())
        asked = asyncio.ensure_future(stop.wait())
        await asyncio.wait([done, asked], return_when=asyncio.FIRST_COMPLETED)
        stopping = loop.run_in_executor(None, stop_all)
        if not done.done():
            await w.close(reason="ccarena worker stopped", executor_wait=False)
        await stopping
        for t in (done, asked):
            t.cancel()

    asyncio.run(main())
    return 0
