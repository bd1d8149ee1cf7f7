"""Sweep planning: cells x repetitions = runs, in a shuffled order whose seed is recorded.

Shuffling spreads slow drifts of a shared machine (other load, thermal state) over all
cells instead of biasing the cells that ran last. `--no-shuffle` keeps cell order."""
from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field

from ccarena.study.model import Cell, Study


@dataclass(frozen=True)
class PlannedRun:
    index: int          # position in execution order
    cell: str           # "c000"
    rep: int            # 1-based repetition
    params: dict
    study: Study        # the cell's resolved study
    seed: int           # per-run seed (link RNG, paced gaps, ...)

    @property
    def label(self) -> str:
        return f"{self.cell}-r{self.rep}"


@dataclass
class Plan:
    study: Study
    seed: int
    shuffled: bool
    runs: list[PlannedRun] = field(default_factory=list)
    reruns: int = 1     # how often a run invalid for the machine's noise is run again
    repetitions: int = 1
    # filled by a dry run (ccarena.plan): settings that are legal but rarely meant, and
    # what the preflight found (each cell's link backend, each algorithm's source; root),
    # and what this machine carries (run/dryrun.Capacity; None when a cluster runs it)
    warnings: list[str] = field(default_factory=list)
    preflight: dict | None = None
    capacity: object = None

    def to_json(self) -> dict:
        return {
            "version": 1, "study": self.study.name, "scale": self.study.scale,
            "seed": self.seed, "shuffled": self.shuffled, "reruns": self.reruns,
            "repetitions": self.repetitions,
            "cells": {c: p for c, p in self.cells().items()},
            "runs": [{"index": r.index, "cell": r.cell, "rep": r.rep, "seed": r.seed,
                      "label": r.label} for r in self.runs],
        }

    def cells(self) -> dict[str, dict]:
        out = {}
        for r in self.runs:
            out.setdefault(r.cell, r.params)
        return dict(sorted(out.items()))


def make_plan(study: Study, seed: int | None = None, shuffle: bool | None = None,
              repetitions: int | None = None, reruns: int | None = None) -> Plan:
    seed = seed if seed is not None else (study.seed if study.seed is not None
                                          else secrets.randbelow(2**31))
    shuffle = study.shuffle if shuffle is None else shuffle
    reps = repetitions or study.repetitions
    rng = random.Random(seed)
    drafts = []
    cells = study.cells or [Cell(0, {}, study)]
    width = max(3, len(str(len(cells) - 1)))
    for c in cells:
        for rep in range(1, reps + 1):
            drafts.append((f"c{c.index:0{width}d}", rep, c, rng.randrange(2**31)))
    if shuffle:
        rng.shuffle(drafts)
    runs = [PlannedRun(index=i, cell=label, rep=rep, params=c.params, study=c.study, seed=seed_)
            for i, (label, rep, c, seed_) in enumerate(drafts)]
    return Plan(study=study, seed=seed, shuffled=shuffle, runs=runs,
                reruns=study.reruns if reruns is None else reruns, repetitions=reps)
