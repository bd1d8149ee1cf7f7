"""`ccarena worker tcp://HOST:8786`: this machine runs the runs a Dask scheduler hands it
(studies submitted with `ccarena run STUDY --cluster tcp://HOST:8786`).

It checks the machine first (what `ccarena doctor` calls essential: root, network
namespaces, veth, the flow engine and the link built) and removes what crashed runs left
here, then serves as a Dask worker with one thread and one `testbed` resource per slot
(`--slots K`: K runs at once, each on its own share of the CPUs, or of `--cpus`). SIGINT,
SIGTERM or SIGHUP tears the running runs down and hands them back to the scheduler.

The same machine check and slots serve a plain `dask worker` started with
`--preload ccarena.cli.worker` (what Dask's SSHCluster and dask-jobqueue start)."""
from __future__ import annotations

import os
import sys

from ccarena.errors import CcarenaError


def register(sub) -> None:
    s = sub.add_parser("worker", help="run the runs of a Dask scheduler's studies on this "
                       "machine (docs/scale-out.md)")
    s.add_argument("scheduler", metavar="tcp://HOST:8786", help="the Dask scheduler's address")
    s.add_argument("--slots", type=_slots, default=1, metavar="K",
                   help="runs at once (default 1); with more, each gets its own share of "
                   "the CPUs")
    s.add_argument("--cpus", metavar="LIST", help="the CPUs the runs may use, e.g. 2-7 "
                   "(default: all); divided between the slots")
    s.add_argument("--name", help="the worker's name at the scheduler (default: its address)")
    s.set_defaults(func=cmd_worker)


def _slots(v: str) -> int:
    import argparse
    if not v.isdigit() or int(v) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {v!r}")
    return int(v)


def prepare(slots: int, cpus: str | None) -> list[str | None]:
    """Check this machine, divide its CPUs between `slots` runs, remove what runs killed
    here before left behind; -> the slots' CPU shares."""
    from ccarena import cc
    from ccarena.run.doctor import essential_missing, facts
    from ccarena.run.scaleout import remote
    from ccarena.run.scaleout.shares import worker_shares
    from ccarena.testbed import leftovers
    f = facts()
    missing = essential_missing(f)
    if not f["binaries"]["ccarena-link"]:
        missing.append("ccarena-link is not built (make build)")
    if missing:
        raise CcarenaError("this machine cannot run a worker: " + "; ".join(missing)
                           + " (see `ccarena doctor`)")
    shares = worker_shares(slots, cpus)
    leftovers.cleanup()
    cc.cleanup_stale()
    remote.cleanup_stale_tasks()
    return shares


def cmd_worker(args) -> int:
    from ccarena.run import environment
    from ccarena.run.scaleout import remote
    shares = prepare(args.slots, args.cpus)
    host = environment.worker()
    cpus = ", ".join(s or "all CPUs" for s in shares)
    print(f"ccarena worker on {host['host']} ({host['kernel']}, {host['cpu_model']}): "
          f"{len(shares)} slot{'s' if len(shares) > 1 else ''} ({cpus}); connecting to "
          f"{args.scheduler}", flush=True)

    def ready(w) -> None:
        print(f"ccarena worker ready at {w.address}", flush=True)
    remote.serve(args.scheduler, shares, name=args.name, on_ready=ready)
    print("ccarena worker stopped", file=sys.stderr)
    return 0


# -- a plain `dask worker` as a ccarena worker (docs/scale-out.md: SSH, Slurm) -------------
#   dask worker tcp://HOST:8786 --nthreads K --resources testbed=K --preload ccarena.cli.worker
# One such worker process per machine; CCARENA_WORKER_CPUS restricts its CPUs like --cpus.

def dask_setup(worker) -> None:
    from ccarena.run.scaleout import remote
    n = worker.state.nthreads
    have = (worker.state.total_resources or {}).get("testbed")
    if have != n:
        raise CcarenaError(f"dask worker with --preload ccarena.cli.worker: give it as many "
                           f"testbed resources as threads (--nthreads {n} --resources "
                           f"testbed={n}); it has testbed={have}")
    remote.configure(prepare(n, os.environ.get("CCARENA_WORKER_CPUS")))


async def dask_teardown(worker) -> None:
    """The worker closes: its runs are torn down (and handed back to the scheduler)."""
    import asyncio

    from ccarena.run.scaleout import remote
    await asyncio.to_thread(remote.stop_all)
