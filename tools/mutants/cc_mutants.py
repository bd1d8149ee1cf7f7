"""Mutation testing of the BPF congestion controls (bpf/cc) through the user-space
harness (crates/cc-harness, docs/dev/testing.md "Mutation testing of the BPF algorithms").

cargo-mutants mutates Rust only; this runner does for the C what it does for the link:
it changes one small thing in the algorithm's own logic, builds, runs the algorithm's
harness tests and records whether they noticed.

    python3 tools/mutants/cc_mutants.py lp yeah          # mutate and test two algorithms
    python3 tools/mutants/cc_mutants.py --list htcp      # the mutants only, nothing built
    python3 tools/mutants/cc_mutants.py lp --ids 12,40   # re-run some mutants
    make mutants-cc CC_MUTANTS="lp yeah"              # the same through make (nice -n 19)

Mutants are made only inside function bodies (and, in the shared headers, inside the
bodies of the function-like macros that hold logic) and from object-like `#define NAME
<integer>` constants; comments, other preprocessor lines, struct definitions, tables
and the CCA_OPS initialiser are left alone. Operators: relational (< <= > >= == !=:
boundary shift and negation), arithmetic (+ - * / %, compound assignments, ++/--),
shifts, && ||, binary & |, a removed `!`, integer constants (0, +1, -1), return values
(0 and 1), a removed `return;`, and deleted expression statements (assignments, calls).

Not mutated either: `x = 0;` deleted from an init op (equivalent: the kernel zeroes the
private area before init).

Each mutant is written to a snapshot taken when the run starts (a workspace of its own
with copies of bpf/cc and crates/cc-harness; the real tree is never edited, and tests
edited meanwhile do not change the verdicts) and built there with CCARENA_CC_DIR
pointing at the copy (crates/cc-harness/build.rs), in a target directory of its own;
`cargo test --no-run` failing makes it unviable. The algorithm's tests (its own file; a
shared header of the pack: every test file; a BBR header: the BBR tests) and the contract
tests every algorithm is held to (harness.rs) then run under a timeout (a hang is
caught: the suite did not pass). Outcomes go to build/mutants-cc/<name>/: caught.txt,
missed.txt, timeout.txt, unviable.txt, a log per mutant that was not caught, and
summary.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from c_source import Mutant, apply, mutants_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CC_DIR = ROOT / "bpf" / "cc"
OUT = ROOT / "build" / "mutants-cc"
PKG = "ccarena-cc-harness"

# the harness tests of each source: (test target, name filter); a converted algorithm's
# replay of Linux's module (tests/replay.rs) judges its default variant
TESTS = {
    "reno": [("reno", None), ("replay", "reno::")],
    "lp": [("lp", None), ("replay", "lp::")],
    "yeah": [("yeah", None), ("replay", "yeah::")],
    "htcp": [("htcp", None)],
    "highspeed": [("highspeed", None), ("replay", "highspeed::")],
    "westwood": [("westwood", None), ("replay", "westwood::")],
    "dctcp": [("dctcp", None), ("replay", "dctcp::")],
    "illinois": [("illinois", None)],
    "cubic": [("cubic", None), ("replay", "cubic::")],
    "scalable": [("scalable", None), ("replay", "scalable::")],
    "vegas": [("vegas", None), ("replay", "vegas::")],
    "hybla": [("hybla", None), ("replay", "hybla::")],
    "bic": [("bic", None), ("replay", "bic::")],
    "veno": [("veno", None), ("replay", "veno::")],
    # BBR: tests/bbr3.rs, tests/bbr_signals.rs, tests/bbr_model.rs and tests/bbr_control.rs
    # check both versions, tests/bbr2.rs v2's own rules, tests/bbr_sim.rs both through the
    # packet simulation
    "bbr3": [("bbr3", None), ("bbr_signals", None), ("bbr_model", None), ("bbr_control", None),
             ("bbr_sim", None)],
    "bbr2": [("bbr2", None), ("bbr3", None), ("bbr_signals", None), ("bbr_model", None),
             ("bbr_control", None), ("bbr_sim", None)],
}
# BBR's shared headers (bbr2 and bbr3 include them): the BBR tests of both
BBR_HEADERS = ("bbr_state.h", "bbr_model.h", "bbr_signals.h", "bbr_machine.h", "bbr_control.h")
for _h in BBR_HEADERS:
    TESTS[_h.removesuffix(".h")] = TESTS["bbr2"]
# an algorithm's part in a header of its own: that algorithm's tests (CUBIC's paper variant;
# Linux's Vegas bookkeeping, which Vegas and YeAH share)
TESTS["cubic_paper"] = TESTS["cubic"]
TESTS["cca_vegas"] = TESTS["vegas"] + TESTS["yeah"]
PART_HEADERS = ("cubic_paper.h", "cca_vegas.h")
HEADERS = ("cca_common.h", "cca_cong_control.h") + BBR_HEADERS + PART_HEADERS
PRIORITY = ["lp", "yeah", "htcp", "highspeed", "westwood", "dctcp", "illinois",
            "cubic", "bic", "vegas", "veno", "hybla", "scalable", "reno", "bbr3", "bbr2"]

# ---------------------------------------------------------------------------------------
# building and running


class Runner:
    """Builds and tests mutants in a snapshot: a workspace of its own holding a copy of
    crates/cc-harness (its tests as they were when the run started, so editing tests
    meanwhile cannot change the verdicts) and of bpf/cc, where one mutant at a time is
    written. crates/cc-harness/build.rs reads the sources from CCARENA_CC_DIR."""

    def __init__(self, target_dir: Path, test_threads: int, verbose: bool):
        self.target = target_dir
        self.threads = test_threads
        self.verbose = verbose
        self.snap = Path(tempfile.mkdtemp(prefix="snapshot-", dir=OUT))
        self.crate = self.snap / "crates" / "cc-harness"
        shutil.copytree(ROOT / "crates" / "cc-harness", self.crate,
                        ignore=shutil.ignore_patterns("target"))
        # its build script's vmlinux.h lookup (a path dependency)
        shutil.copytree(ROOT / "crates" / "buildinfo", self.snap / "crates" / "buildinfo",
                        ignore=shutil.ignore_patterns("target"))
        self.copy = self.snap / "bpf" / "cc"
        shutil.copytree(CC_DIR, self.copy)
        (self.snap / "Cargo.toml").write_text('[workspace]\nresolver = "2"\nmembers = ["crates/cc-harness"]\n')
        shutil.copy(ROOT / "Cargo.lock", self.snap / "Cargo.lock")
        self.env = dict(os.environ, CCARENA_CC_DIR=str(self.copy), CARGO_TARGET_DIR=str(target_dir),
                        CARGO_PROFILE_DEV_DEBUG="0", CARGO_TERM_COLOR="never")
        if not self.env.get("CCARENA_VMLINUX_H"):
            # build.rs would otherwise dump it with bpftool at every rebuild
            vml = ROOT / "build" / "vmlinux.h"
            if not vml.exists():
                vml = OUT / "vmlinux.h"
                with open(vml, "wb") as f:
                    subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux",
                                    "format", "c"], stdout=f, check=True)
            self.env["CCARENA_VMLINUX_H"] = str(vml)

        if shutil.which("ccache") and not self.env.get("BPF_CLANG"):
            # a mutant changes one source: the other algorithms' objects come from the cache
            wrapper = self.snap / "clang-ccache"
            wrapper.write_text('#!/bin/sh\nexec ccache clang "$@"\n')
            wrapper.chmod(0o755)
            self.env.update(BPF_CLANG=str(wrapper), CCACHE_DIR=str(OUT / "ccache"))

    def cleanup(self):
        shutil.rmtree(self.snap, ignore_errors=True)

    def write(self, fname: str, text: str):
        p = self.copy / fname
        p.write_text(text)
        # a build starts right after: make sure cargo sees a newer file than its last run
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, time.time_ns()))

    def build(self, targets: list[str], timeout: float) -> tuple[bool, dict[str, str], str]:
        """cargo test --no-run for the test targets: (ok, target -> executable, log)."""
        cmd = ["cargo", "test", "--offline", "-p", PKG, "--no-run",
               "--message-format=json-render-diagnostics"]
        for t in targets:
            cmd += ["--test", t]
        try:
            p = subprocess.run(cmd, cwd=self.snap, env=self.env, capture_output=True, text=True,
                               timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired as e:
            return False, {}, f"build timed out after {timeout:.0f} s\n{e.stderr or ''}"
        exes = {}
        for line in p.stdout.splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
                    "test" in msg.get("target", {}).get("kind", []):
                exes[msg["target"]["name"]] = msg["executable"]
        return p.returncode == 0, exes, p.stderr[-6000:]

    def run_tests(self, exes: dict[str, str], tests: list[tuple[str, str | None]],
                  timeout: float) -> tuple[str, float, str]:
        """('pass' | 'fail' | 'timeout', seconds, log)"""
        t0 = time.monotonic()
        logs = []
        for target, filt in tests:
            cmd = [exes[target], f"--test-threads={self.threads}"] + ([filt] if filt else [])
            left = timeout - (time.monotonic() - t0)
            proc = subprocess.Popen(cmd, cwd=self.crate, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                out, _ = proc.communicate(timeout=max(left, 1))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
                return "timeout", time.monotonic() - t0, "\n".join(logs + [out or ""])
            logs.append(out)
            if proc.returncode != 0:
                return "fail", time.monotonic() - t0, "\n".join(logs)
            if filt and re.search(r"running 0 tests", out):
                raise SystemExit(f"cc_mutants: filter {filt!r} selects no test in {target}")
        return "pass", time.monotonic() - t0, "\n".join(logs)


def every_source() -> str:
    return "\n".join(p.read_text() for p in sorted(CC_DIR.iterdir()) if p.suffix in (".c", ".h"))


def tests_for(name: str) -> list[tuple[str, str | None]]:
    if name in TESTS:
        # the algorithm's own tests, and the contract every algorithm is held to
        return TESTS[name] + [("harness", None)]
    # a shared header: every test file of the harness
    files = sorted(p.stem for p in (ROOT / "crates" / "cc-harness" / "tests").glob("*.rs"))
    return [(f, None) for f in files]


def parts(fname: str) -> dict[str, range]:
    """The ids of the mutants of each variant of `fname`: an algorithm with a paper variant
    keeps Linux's rules under `#ifndef CCA_PAPER` and the paper's under `#else /* CCA_PAPER
    */` -> {"linux": ids, "paper": ids, "shared": ids of what both compile}; any other file
    -> {"all": its ids}. docs/dev/testing.md scores each part on its own row."""
    src = (CC_DIR / fname).read_text()
    muts = mutants_of(src, fname, every_source())
    start, other, end = (src.find("#ifndef CCA_PAPER"), src.find("#else /* CCA_PAPER */"),
                         src.find("#endif /* CCA_PAPER */"))
    if start < 0 or other < 0 or end < 0:
        return {"all": range(len(muts))}
    ids: dict[str, list[int]] = {}
    for m in muts:
        part = "shared" if m.start < start or m.start > end else \
            "linux" if m.start < other else "paper"
        ids.setdefault(part, []).append(m.id)
    out = {}
    for part, v in ids.items():
        if part != "shared":
            assert v == list(range(v[0], v[-1] + 1)), f"{fname}: {part} ids not contiguous"
            out[part] = range(v[0], v[-1] + 1)
    if "shared" in ids:
        out["shared"] = ids["shared"]
    return out


def source_of(arg: str) -> str:
    """'lp', 'bpf/cc/lp.bpf.c', 'cca_common.h' -> the file name in bpf/cc"""
    base = Path(arg).name
    if base in HEADERS or base.endswith(".bpf.c"):
        name = base
    else:
        name = f"{base}.bpf.c"
    if not (CC_DIR / name).exists():
        have = sorted(p.name for p in CC_DIR.iterdir() if p.suffix in (".c", ".h"))
        raise SystemExit(f"cc_mutants: no {name} in bpf/cc (have: {', '.join(have)})")
    return name


def stem(fname: str) -> str:
    return fname.removesuffix(".bpf.c").removesuffix(".h")


def run_file(runner: Runner, fname: str, ids: set[int] | None, timeout: float | None,
             build_timeout: float) -> dict:
    name = stem(fname)
    src = (CC_DIR / fname).read_text()
    muts = mutants_of(src, fname, every_source())
    if ids is not None:
        muts = [m for m in muts if m.id in ids]
    tests = tests_for(name)
    targets = sorted({t for t, _ in tests})
    out = OUT / name
    if ids is None:
        shutil.rmtree(out, ignore_errors=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)

    # baseline: the unmutated copy must build and pass; its time sets the timeout
    runner.write(fname, src)
    b0 = time.monotonic()
    ok, exes, log = runner.build(targets, build_timeout)
    if not ok:
        raise SystemExit(f"cc_mutants: the unmutated tree does not build:\n{log}")
    build_s = time.monotonic() - b0
    runner.write(fname, src)
    b0 = time.monotonic()
    ok, exes, log = runner.build(targets, build_timeout)
    rebuild_s = time.monotonic() - b0
    res, test_s, log = runner.run_tests(exes, tests, 3600)
    if res != "pass":
        raise SystemExit(f"cc_mutants: the unmutated tree fails its tests:\n{log[-4000:]}")
    tmo = timeout or max(15.0, 4 * test_s + 5)
    print(f"== {fname}: {len(muts)} mutants; tests {targets} pass in {test_s:.1f} s "
          f"(rebuild {rebuild_s:.1f} s), timeout {tmo:.0f} s", flush=True)

    results = {"caught": [], "missed": [], "timeout": [], "unviable": []}
    if ids is not None and (out / "summary.json").exists():
        old = json.loads((out / "summary.json").read_text())
        results = {k: [x for x in v if x["id"] not in ids] for k, v in old["results"].items()}
    t_all = time.monotonic()
    try:
        for k, m in enumerate(muts):
            runner.write(fname, apply(src, m))
            t0 = time.monotonic()
            ok, exes, blog = runner.build(targets, build_timeout)
            bt = time.monotonic() - t0
            if not ok:
                outcome, tt, log = "unviable", 0.0, blog
            else:
                r, tt, log = runner.run_tests(exes, tests, tmo)
                outcome = {"pass": "missed", "fail": "caught", "timeout": "timeout"}[r]
            rec = dict(asdict(m), outcome=outcome, build_s=round(bt, 2), test_s=round(tt, 2))
            results[outcome].append(rec)
            if outcome != "caught":
                (out / "logs" / f"{m.id}.log").write_text(m.describe() + "\n\n" + log)
            if runner.verbose or outcome in ("missed", "timeout"):
                print(f"  [{k + 1}/{len(muts)}] {outcome:8s} #{m.id} {m.describe()} "
                      f"({bt:.1f}+{tt:.1f} s)", flush=True)
    finally:
        runner.write(fname, src)
    summary = write_summary(out, fname, results, time.monotonic() - t_all, build_s, rebuild_s, test_s, tmo)
    return summary


def write_summary(out: Path, fname: str, results: dict, secs: float, build_s: float,
                  rebuild_s: float, test_s: float, tmo: float) -> dict:
    for k, v in results.items():
        v.sort(key=lambda r: r["id"])
        (out / f"{k}.txt").write_text("".join(
            f"#{r['id']} {r['file']}:{r['line']} {r['func']}: {r['op']}: `{r['orig']}` -> `{r['repl']}`\n"
            for r in v))
    n = {k: len(v) for k, v in results.items()}
    viable = sum(n.values()) - n["unviable"]
    score = (n["caught"] + n["timeout"]) / viable if viable else float("nan")
    s = dict(file=fname, mutants=sum(n.values()), **n, score=score, seconds=round(secs),
             baseline=dict(build_s=round(build_s, 1), rebuild_s=round(rebuild_s, 1),
                           test_s=round(test_s, 1), timeout_s=tmo),
             results=results)
    (out / "summary.json").write_text(json.dumps(s, indent=1))
    print(f"== {fname}: {s['mutants']} mutants, {n['caught']} caught, {n['timeout']} timeouts, "
          f"{n['missed']} missed, {n['unviable']} unviable: score {100 * score:.0f} % "
          f"({secs / 60:.0f} min)", flush=True)
    for r in results["missed"]:
        print(f"   missed #{r['id']} {r['file']}:{r['line']} {r['func']}: {r['op']}: "
              f"`{r['orig']}` -> `{r['repl']}`")
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="*", help="algorithm names (lp), bpf/cc paths, "
                    "cca_common.h / cca_cong_control.h, or 'all'")
    ap.add_argument("--list", action="store_true", help="print the mutants, build nothing")
    ap.add_argument("--ids", help="only these mutant ids (comma-separated; one source)")
    ap.add_argument("--part", choices=["linux", "paper"], help="only the mutants of that "
                    "variant's code (one source with a CCA_PAPER part)")
    ap.add_argument("--timeout", type=float, help="seconds per mutant's tests "
                    "(default: 4 x the unmutated run + 5, at least 15)")
    ap.add_argument("--build-timeout", type=float, default=600)
    ap.add_argument("--test-threads", type=int, default=1)
    ap.add_argument("--target-dir", default=str(OUT / "target"))
    ap.add_argument("-v", "--verbose", action="store_true", help="print every mutant's outcome")
    a = ap.parse_args(argv)
    if not a.sources:
        for name in PRIORITY:
            f = source_of(name)
            print(f"{f}: {len(mutants_of((CC_DIR / f).read_text(), f, every_source()))} mutants")
        for f in HEADERS:
            print(f"{f}: {len(mutants_of((CC_DIR / f).read_text(), f, every_source()))} mutants")
        print("name the sources to run (e.g. `tools/mutants/cc_mutants.py lp`, or `all`): "
              "each takes tens of minutes")
        return 0
    names = PRIORITY + list(HEADERS) if a.sources == ["all"] else a.sources
    files = [source_of(s) for s in names]
    if a.list:
        for f in files:
            for m in mutants_of((CC_DIR / f).read_text(), f, every_source()):
                print(f"#{m.id} {m.describe()}")
        return 0
    ids = None
    if a.ids:
        if len(files) != 1:
            raise SystemExit("cc_mutants: --ids needs exactly one source")
        ids = {int(x) for x in a.ids.split(",")}
    if a.part:
        if len(files) != 1 or a.part not in parts(files[0]):
            raise SystemExit(f"cc_mutants: --part {a.part} needs one source with that variant")
        ids = (ids or set(parts(files[0])[a.part])) & set(parts(files[0])[a.part])
    OUT.mkdir(parents=True, exist_ok=True)
    runner = Runner(Path(a.target_dir), a.test_threads, a.verbose)

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    rows = []
    try:
        for f in files:
            rows.append(run_file(runner, f, ids, a.timeout, a.build_timeout))
    except KeyboardInterrupt:
        print("cc_mutants: interrupted", file=sys.stderr)
        return 130
    finally:
        runner.cleanup()
    print("\n| file | mutants | caught | timeouts | missed | unviable | score |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in rows:
        print(f"| `{s['file']}` | {s['mutants']} | {s['caught']} | {s['timeout']} | {s['missed']} "
              f"| {s['unviable']} | {100 * s['score']:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
