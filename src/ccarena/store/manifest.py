"""A run's manifest (runs/<label>/meta.json): its keys, their types and meanings, and its
format version, declared here and nowhere else. The runner fills it in as the run goes
(run/one_run.py, run/parts.py, run/collect.py); the store checks it against this list
when it writes it, so a key nobody declared (a typo, a part that records something new
without saying what) fails where it is written, not when somebody reads it.

The run is complete only when meta.json exists and every file its `files` lists is there
with its size (store.results)."""
from __future__ import annotations

from ccarena.store.atomic import StoreError

MANIFEST_VERSION = 1

_num = (int, float)
_opt_num = (int, float, type(None))

# key -> (accepted types, meaning). Nested values are the recording part's own.
KEYS: dict[str, tuple[tuple, str]] = {
    "version": ((int,), "this manifest's format version (MANIFEST_VERSION)"),
    "run_id": ((str,), "6 hex digits; they name the run's namespaces"),
    "label": ((str,), "the planned run's label: its directory under runs/"),
    "study": ((str,), "the study's name"),
    "cell": ((str,), "the cell (c000, c001, ...)"),
    "cell_params": ((dict,), "the cell's swept factors: dotted key -> value"),
    "rep": ((int,), "the repetition, from 1"),
    "index": ((int, type(None)), "the run's place in the plan's order"),
    "seed": ((int,), "the run's seed"),
    "backend": ((str,), "the link backend: user or kernel"),
    "duration_s": (_num, "the study's duration"),
    "warmup_s": (_num, "excluded from steady-state metrics"),
    "base_rtt_s": (_opt_num, "the base RTT the study gives its path"),
    "sample_interval_s": (_num, "the samplers' interval"),
    "bottleneck": ((dict,), "the bottleneck as resolved (rate_bps, delay_s, buffer, ...)"),
    "flows": ((list,), "each flow as resolved: kind, ends, algorithm, its source, ..."),
    "namespaces": ((list,), "the run's network namespaces"),
    "valid": ((bool,), "False when something other than the network decided the run"),
    "invalid_reasons": ((list,), "why the run is invalid, one line each"),
    "noise_reasons": ((list,), "the reasons that are the machine's noise (re-run)"),
    "worker": ((dict,), "where the run ran: host, kernel, CPU model (run.environment)"),
    "cpuset": ((str,), "the CPUs the run was held to when runs shared the machine"),
    "runs_at_once": ((int,), "how many runs shared the machine with this one"),
    "superseded": ((list,), "earlier attempts set aside for the machine's noise"),
    "superseded_by_rerun": ((bool,), "this attempt was set aside (under superseded/)"),
    "rerun_skipped": ((str,), "why an invalid run was not run again"),
    "interrupted": ((bool,), "SIGINT or SIGTERM stopped the run"),
    "error": ((str,), "what failed, when something did"),
    "killed": ((list,), "processes of the run something outside killed"),
    "unmeasured": ((dict,), "ccarena failed the run before t0 (stage setup) or in its "
                   "metrics (stage metrics): not a result; --resume runs it again"),
    "wall_start": ((str,), "local time the run started"),
    "wall_s": (_num, "the run's wall time"),
    "t0_ns": ((int,), "CLOCK_MONOTONIC of the common start"),
    "t0_late_ns": ((int,), "how late the setup made t0"),
    "anomalies": ((list,), "what looks like a failure in a valid run (metrics.anomalies)"),
    "host_state": ((dict,), "each host's sysctls, offloads and qdiscs as the run found them"),
    "host_limits": ((dict,), "each host's CPU and memory limits as applied"),
    "qdisc_sampler": ((dict,), "the kernel backend's queue sampler: reads, failures"),
    "shaper": ((dict,), "the kernel backend's shaper delivery while backlogged"),
    "cpu": ((dict,), "the machine's CPU busy and steal time during the run"),
    "link_ingress": ((dict,), "packets the user-space link's ports dropped on the way in"),
    "link": ((dict,), "the user-space link's own counters"),
    "link_delivery": ((dict,), "what the link delivered against its rate, and why"),
    "kernel_delay": ((dict,), "the kernel backend's delay against the study's"),
    "engines": ((dict,), "each flow engine's counters (sampling gaps, errors)"),
    "trace": ((dict,), "the per-ACK tracer's counters"),
    "cc_guard_at_entry": ((dict,), "BPF algorithms: corrupted ssthresh seen at entry"),
    "cc_repairs": ((dict,), "BPF algorithms: repairs made late"),
    "cc_repairs_found": ((dict,), "BPF algorithms: repairs, by what was found"),
    "guests": ((dict,), "each VM host's guest: kernel, vCPUs, memory, accelerator, virtio "
               "features, NIC, boot time, clock offsets, host CPU of QEMU's threads"),
    "files": ((dict,), "every file of the run with its size: written last"),
}


def check(meta: dict, where: str) -> None:
    """Raise StoreError when `meta` has a key this module does not declare or a value of
    another type; `where` names the file for the message."""
    for k, v in meta.items():
        decl = KEYS.get(k)
        if decl is None:
            raise StoreError(f"{where}: run manifest key {k!r} is not declared "
                             "(store/manifest.py declares every key)")
        if not isinstance(v, decl[0]) or (isinstance(v, bool) and bool not in decl[0]):
            raise StoreError(f"{where}: run manifest key {k!r} is a {type(v).__name__}, "
                             f"declared {' or '.join(t.__name__ for t in decl[0])}")
