"""The hosts of a run that are QEMU guests (`[hosts.X] vm = {...}`, docs/hosts.md): one
part of the run (run/parts.py) that does for them what the flow engines, the tracer and
the testbed do for namespace hosts.

    prepare  guests from the study's pool (testbed/guest/pool.py, booting what is missing);
             each attached where its host's interface is (attach.py), given the host's
             address, sysctls and algorithms and a fresh TCP state, its clock measured,
             its flow engine (and tracer) started to READY
    go       GO at t0, translated into the guest's clock
    finish   the engine's end; the clock measured again; the outputs translated into the
             host's clock and placed as a namespace host's (raw/<host>/); the host-side
             CPU time of QEMU's vCPU and vhost threads; what went wrong
    stop     whatever still runs in the guests stopped, the taps detached, the guests given
             back to the pool (a guest that died or failed is shut down, not reused)

The facts of each guest go to meta["guests"][host]: kernel, vCPUs, memory, accelerator,
virtio features, NIC offloads and queues, boot time, the clock offsets and their
uncertainty, and the CPU time of QEMU's threads."""
from __future__ import annotations

import contextlib
import json
import shutil
import time

from ccarena.errors import CcarenaError
from ccarena.measure import guest_cpu
from ccarena.measure.guest_records import append_bin, translate_dir
from ccarena.paths import require_binary
from ccarena.run.environment import HOST_SYSCTLS
from ccarena.study.resolve import BASE_PORT, MAX_FLOW_PORTS
from ccarena.testbed.guest import attach as attach_mod
from ccarena.testbed.guest import pool as pool_mod
from ccarena.testbed.guest.clock import ClockMap
from ccarena.testbed.guest.machine import GuestError
from ccarena.workload.engine import host_configs

CLOCK_EXCHANGES = 16
REQUEST_S = 60.0            # a request the agent answers at once, under TCG on a busy host
START_S = 120.0             # the engine (and tracer) to READY in a guest under TCG
TRACE_PORTS = f"{BASE_PORT}-{BASE_PORT + MAX_FLOW_PORTS - 1}"
GUEST_NETNS = "/proc/1/ns/net"      # a guest's one network namespace, for its tracer


class _Host:
    """One guest host of the run."""

    def __init__(self, host: str, guest):
        self.host, self.guest = host, guest
        self.attached = False
        self.started = False
        self.clock_before = self.clock_after = None
        self.pid = None             # QEMU's
        self.cpu0 = None
        self.t_go = 0
        self.run_dir = None
        self.traced = False
        self.fact: dict = {}


class GuestHosts:
    """The part (run/parts.py's five steps) for the study's VM hosts."""

    def __init__(self, study):
        self.wanted = study.vm_hosts
        self.hosts: dict[str, _Host] = {}
        self.pool = None
        self.owned = False
        self.tb = None              # the run's testbed (stop() detaches through it)

    # -- prepare ----------------------------------------------------------------------------
    def prepare(self, ctx):
        if not self.wanted:
            return
        study = ctx.study
        self.tb = ctx.testbed
        self.pool, self.owned = pool_mod.current()
        specs = {h: pool_mod.resolved(s, study) for h, s in self.wanted.items()}
        guests = self.pool.take(specs)
        self.hosts = {h: _Host(h, g) for h, g in guests.items()}
        ctx.meta["guests"] = {}
        cfgs = host_configs(study, ctx.topo, ctx.raw, {}, ctx.seed)
        traced = {h for p in study.probes if p.kind == "tcp_probe" for h in p.hosts}
        for h, gh in self.hosts.items():
            gh.traced = h in traced
            try:
                self._prepare_one(ctx, gh, cfgs.get(h))
            except CcarenaError as e:
                raise GuestError(f"guest {h} ({gh.guest.name}): {e}") from None

    def _prepare_one(self, ctx, gh: _Host, cfg: dict | None) -> None:
        study, topo, g = ctx.study, ctx.topo, gh.guest
        spec = g.spec
        attach_mod.attach(ctx.testbed, gh.host, g)
        gh.attached = True
        g.request("fresh", timeout_s=REQUEST_S)
        end, router = _ends(topo, gh.host)
        ip, plen = end.addr.split("/")
        nic = g.request("net", timeout_s=REQUEST_S, mac=end.mac, addr=ip, plen=int(plen),
                        gw=router.addr.split("/")[0], gw_mac=router.mac, mtu=study.mtu,
                        offloads=spec.offloads, queues=spec.queues)
        sysctls = dict(study.tcp.sysctls())
        hs = study.hosts.get(gh.host)
        if hs:
            sysctls.update(hs.sysctl)
        st = g.request("sysctl", timeout_s=REQUEST_S, values=sysctls, read=list(HOST_SYSCTLS))
        ctx.meta.setdefault("host_state", {}).setdefault("sysctls", {})[gh.host] = \
            st["sysctls"]
        ctx.meta["host_state"].setdefault("offloads", {})[f"guest:{gh.host}/{nic['iface']}"] \
            = nic["offloads"]
        gh.fact = {**g.facts, "runs_before": g.runs,
                   "nic": {k: nic.get(k) for k in ("iface", "virtio_features", "offloads",
                                                    "tx_queues", "mtu", "qdisc")}}
        ctx.meta["guests"][gh.host] = gh.fact
        gh.pid = g.qemu_pid()
        gh.clock_before = g.channel.clock_offset(CLOCK_EXCHANGES)
        if cfg is None and not gh.traced:
            return          # nothing runs in it this run (it answers pings)
        gh.run_dir = g.dir / "work" / topo.run_id / gh.host
        out = gh.run_dir / "out"
        out.mkdir(parents=True, exist_ok=True)
        trace = None
        if gh.traced:
            (gh.run_dir / "trace").mkdir()
            trace = {"argv": [require_binary("ccarena-trace", "the tcp_probe tracer"),
                              "--out", str(gh.run_dir / "trace"), "--ports", TRACE_PORTS,
                              "--netns", GUEST_NETNS],
                     "stderr": str(gh.run_dir / "ccarena-trace.stderr")}
        cfg = dict(cfg or {"host": gh.host, "sample_interval_ns":
                           int(study.sample_interval_s * 1e9), "listen": [], "flows": [],
                           "end_ns": int(study.duration_s * 1e9)})
        names = sorted({x["cc"] for x in cfg["listen"] + cfg["flows"] if x.get("cc")})
        got = g.request("cc", timeout_s=START_S, names=names)
        kn, sources = got["kernel_names"], got["sources"]
        cfg["out_dir"] = str(out)
        cfg["listen"] = [dict(x, cc=kn[x["cc"]]) if x.get("cc") else x for x in cfg["listen"]]
        cfg["flows"] = [dict(x, cc=kn[x["cc"]]) if x.get("cc") else x for x in cfg["flows"]]
        _algorithms_meta(ctx.meta, study, gh.host, kn, sources)
        gh.fact["algorithms"] = {n: {"kernel_name": kn[n], "source": sources[n]} for n in names}
        path = gh.run_dir / "engine.config.json"
        path.write_text(json.dumps(cfg, indent=1))
        (ctx.raw / gh.host).mkdir(parents=True, exist_ok=True)
        (ctx.raw / gh.host / "engine.config.json").write_text(json.dumps(cfg, indent=1))
        g.request("start", timeout_s=START_S,
                  argv=[require_binary("ccarena-flow", "the flow engine"), "--config",
                        str(path)],
                  stderr=str(gh.run_dir / "ccarena-flow.stderr"), trace=trace)
        gh.started = True

    # -- start, go ---------------------------------------------------------------------------
    def start(self, ctx):
        """QEMU's threads' CPU time from here (t0 is fixed, just ahead)."""
        for gh in self.hosts.values():
            gh.cpu0 = (gh.pid, time.monotonic_ns(),
                       guest_cpu.snapshot(gh.pid) if gh.pid else {})

    def go(self, ctx):
        for gh in self.hosts.values():
            if gh.started:
                gh.guest.request("go", timeout_s=REQUEST_S,
                                 t0_ns=ClockMap(gh.clock_before).to_guest(ctx.t0_ns))

    # -- finish -------------------------------------------------------------------------------
    def finish(self, ctx):
        for gh in self.hosts.values():
            try:
                self._finish_one(ctx, gh)
            except CcarenaError as e:
                ctx.reasons.append(f"guest {gh.host} ({gh.guest.name}): {e}")
                _note_dead(ctx, gh)

    def _finish_one(self, ctx, gh: _Host) -> None:
        g = gh.guest
        left = max(1.0, ctx.end_ns / 1e9 - time.monotonic_ns() / 1e9) + 10.0
        res = g.request("wait", timeout_s=left + REQUEST_S, engine_timeout_s=left) \
            if gh.started else {}
        pid0, t0, snap0 = gh.cpu0 or (None, 0, {})
        if pid0:
            u = guest_cpu.usage(snap0, guest_cpu.snapshot(pid0),
                                (time.monotonic_ns() - t0) / 1e9)
            gh.fact["host_cpu"] = u
            reasons, noise = guest_cpu.judge(gh.host, u, g.accel)
            ctx.reasons.extend(reasons)
            ctx.noise.extend(noise)
        gh.clock_after = g.channel.clock_offset(CLOCK_EXCHANGES)
        clock = ClockMap(gh.clock_before, gh.clock_after)
        gh.fact["clock"] = clock.as_dict()
        if not gh.started:
            return
        gh.started = False
        if res.get("timed_out") or res.get("rc") not in (0,):
            why = "did not finish in time" if res.get("timed_out") else f"exit {res.get('rc')}"
            ctx.reasons.append(f"ccarena-flow@{gh.host} (guest) {why}: "
                               f"{res.get('stderr_tail', '')}".rstrip(": "))
        logs = ctx.raw / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        for name in ("ccarena-flow", "ccarena-trace"):
            src = gh.run_dir / f"{name}.stderr"
            if src.exists():
                (logs / f"{name}@{gh.host}.stderr").write_bytes(src.read_bytes())
        got = translate_dir(gh.run_dir / "out", ctx.raw / gh.host, clock)
        gh.fact["records"] = got["records"]
        if gh.traced:
            tdir = gh.run_dir / "trace"
            tj = tdir / "trace.json"
            gh.fact["trace"] = json.loads(tj.read_text()) if tj.exists() else {}
            if (tdir / "tcpprobe.bin").exists():
                translate_dir(tdir, gh.run_dir / "trace-host", clock)
            if res.get("tracer_rc") not in (0, None):
                ctx.reasons.append(f"ccarena-trace@{gh.host} (guest) exit "
                                   f"{res['tracer_rc']}: {res.get('tracer_tail', '')}")

    def merge_traces(self, ctx):
        """The guests' per-ACK records into the run's tcpprobe table (after the host's
        tracer wrote its own; trace/ holds both)."""
        for gh in self.hosts.values():
            src = gh.run_dir / "trace-host" / "tcpprobe.bin" if gh.run_dir else None
            if src is not None and src.exists():
                (ctx.raw / "trace").mkdir(parents=True, exist_ok=True)
                append_bin(src, ctx.raw / "trace" / "tcpprobe.bin")
                lost = (gh.fact.get("trace") or {}).get("lost", 0) or 0
                if lost:
                    ctx.noise.append(f"tcp_probe tracer in guest {gh.host} lost {lost} "
                                     "events")

    # -- stop -----------------------------------------------------------------------------
    def stop(self):
        """Idempotent; also after an error or Ctrl-C."""
        if not self.hosts and self.pool is None:
            return
        tb = self.tb
        for gh in self.hosts.values():
            g = gh.guest
            if gh.started and g.alive():
                with contextlib.suppress(CcarenaError):
                    g.request("abort", timeout_s=REQUEST_S)
                gh.started = False
            if gh.attached and tb is not None:
                try:
                    attach_mod.detach(tb, gh.host, g)
                except Exception as e:  # noqa: BLE001 — a guest that cannot come back goes
                    g.broken = f"detach: {e}"
                gh.attached = False
            if gh.run_dir is not None:
                shutil.rmtree(gh.run_dir.parent, ignore_errors=True)
        if self.pool is not None:
            self.pool.give_back([gh.guest for gh in self.hosts.values()])
            if self.owned:
                self.pool.close()
        self.hosts, self.pool = {}, None


def _ends(topo, host: str):
    """The host's end of its access veth and the router's."""
    ns = topo.ns(host)
    for p in topo.veths:
        if p.a.ns == ns:
            return p.a, p.b
        if p.b.ns == ns:
            return p.b, p.a
    raise KeyError(host)


def _algorithms_meta(meta: dict, study, host: str, kn: dict, sources: dict) -> None:
    """The flows whose data a guest sends ran the guest kernel's algorithms: record
    those (collect.check_algorithms compares them with what the sockets ran)."""
    for f in meta.get("flows", []):
        if f["from"] == host and f["cc"] in kn:
            f["cc_kernel"], f["cc_source"] = kn[f["cc"]], sources[f["cc"]]


def _note_dead(ctx, gh: _Host) -> None:
    """A guest that stopped answering mid-run: QEMU killed, or crashed."""
    g = gh.guest
    if g.proc is not None and g.proc.poll() is None and g.broken is None:
        return
    g.broken = g.broken or "stopped mid-run"
    ctx.meta.setdefault("guests", {}).setdefault(gh.host, {})["died"] = g.broken
    gh.started = False
