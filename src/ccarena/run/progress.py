"""The terminal progress of a study: a bar over its runs, the current run's cell, and
re-runs as they happen."""
from __future__ import annotations

from ccarena.study.plan import PlannedRun


class Progress:
    def __init__(self, total: int, name: str):
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)
        self.p = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                          MofNCompleteColumn(), TextColumn("{task.fields[run]}"),
                          TimeRemainingColumn(), transient=False)
        self.p.start()
        self.task = self.p.add_task(name, total=total, run="")
        self.n = 0

    def update(self, r: PlannedRun):
        if self.n:
            self.p.advance(self.task)
        self.n += 1
        params = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in r.params.items())
        self.p.update(self.task, run=f"{r.label} {params}")

    def done(self, r: PlannedRun):
        """Runs that run at once: one more is complete (use instead of update)."""
        self.p.advance(self.task)
        self.p.update(self.task, run=f"{r.label} done")

    def rerun(self, r: PlannedRun, k: int):
        self.p.update(self.task, run=f"{r.label} again (re-run {k}: the machine's noise "
                      "made it invalid)")

    def close(self):
        if self.n:
            self.p.advance(self.task)
        self.p.stop()
