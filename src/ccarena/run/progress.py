"""The terminal progress of a study: a bar over its runs, the time within the current run
against its duration, and one line per finished run with its outcome (valid with its
headline numbers, invalid with why, anomalies), so a long study can be watched."""
from __future__ import annotations

import threading
import time

from ccarena import units
from ccarena.study.plan import PlannedRun


def outcome(meta: dict) -> str:
    """One finished run, for people."""
    head = "valid" if meta.get("valid", True) else "INVALID: " + "; ".join(
        meta.get("invalid_reasons") or [])
    odd = meta.get("anomalies") or []
    if odd:
        head += f"; {len(odd)} anomal{'y' if len(odd) == 1 else 'ies'}: " + "; ".join(
            a.get("what", "") for a in odd[:2])
    return head


def _params(r: PlannedRun) -> str:
    return ", ".join(f"{k.split('.')[-1]}={v}" for k, v in r.params.items())


class Progress:
    def __init__(self, total: int, name: str):
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)
        self.p = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=24),
                          MofNCompleteColumn(), TextColumn("{task.fields[run]}"),
                          TimeElapsedColumn(), TextColumn("{task.fields[left]}"),
                          transient=False)
        self.p.start()
        self.study = self.p.add_task(name, total=total, run="", left="")
        self.run = self.p.add_task("  run", total=1, run="", left="", visible=False)
        self.n = 0
        self._started = None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True, name="progress")
        self._ticker.start()

    def _tick(self):
        """Move the current run's bar with the clock: how far into its duration it is."""
        while not self._stop.wait(0.5):
            if self._started is not None:
                self.p.update(self.run, completed=time.monotonic() - self._started)

    def update(self, r: PlannedRun):
        self.n += 1
        self.p.update(self.study, run=f"{r.label} {_params(r)}")
        self.p.reset(self.run, total=r.study.duration_s, visible=True,
                     run=f"{units.format_time(r.study.duration_s)} run + setup", left="")
        self._started = time.monotonic()

    def done(self, r: PlannedRun, meta: dict):
        """Runs that run at once (--jobs, --cluster): one more is complete, with its
        outcome (used instead of update and finished; no bar of a current run then)."""
        self.p.update(self.study, run=f"{r.label} done")
        self.finished(r, meta)

    def rerun(self, r: PlannedRun, k: int):
        if self._started is None:   # runs that run at once: no current run to reset
            self.p.console.print(f"  {r.label} {_params(r)}: again (re-run {k}: the "
                                 "machine's noise made it invalid)", markup=False,
                                 highlight=False)
            return
        # reset() replaces every field of the task: all the columns' fields are given
        self.p.reset(self.run, total=r.study.duration_s, visible=True,
                     run=f"again (re-run {k}: the machine's noise made it invalid)", left="")
        self._started = time.monotonic()

    def finished(self, r: PlannedRun, meta: dict):
        self.p.advance(self.study)
        self.p.console.print(f"  {r.label} {_params(r)}: {outcome(meta)}", markup=False,
                             highlight=False)

    def close(self):
        self._stop.set()
        self._ticker.join(timeout=2)
        self.p.update(self.run, visible=False)
        self.p.stop()
