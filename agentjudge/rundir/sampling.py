"""RUNDIR/sampling.json: the design of a sampled run, as the report and other readers need it.

Written by the export of a sampled run (``runner/sampling/record.py`` builds it from the run's plan) and
removed by the export of an unsampled one, so a folder later judged in full is not read as sampled: the
order of base scenarios with their topologies (the strata), every cell's prefix length and its growth over
the stages, what the predictions covered, and the share of the full grid's units this run planned.
``design()`` turns it into the ``stats.design.Design`` the estimators use.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError

from agentjudge.rundir.errors import RunFolderError
from agentjudge.rundir.meta import UnitShare
from agentjudge.types import Strict

if TYPE_CHECKING:
    from agentjudge.stats.design import Design

SAMPLING_FILE = "sampling.json"


class CellRecord(Strict):
    judge: str
    generator: str
    difficulty: str
    condition: str
    n: int = Field(ge=0)  # prefix length judged
    complete: bool = False  # judged in full before the design took it up (e.g. a judge added to a run)
    stages: list[int] = Field(default_factory=list)  # its prefix after each stage


class PredictionRecord(Strict):
    generator: str
    difficulty: str
    n: int = Field(ge=0)


class SamplingRecord(Strict):
    version: Literal[1] = 1
    target_ci_pp: float
    confidence: float = 0.95
    fpc: bool
    pilot: int
    seed: int
    applies_to: list[str]
    population: int
    order: list[str]
    order_strata: list[str]  # each scenario's stratum: its topology (source:topology when sources mix)
    stages: int
    cells: list[CellRecord]
    predictions: list[PredictionRecord]
    judge_units: UnitShare
    predict_units: UnitShare

    def strata(self) -> dict[str, int]:
        return dict(sorted(Counter(self.order_strata).items()))

    def design(self) -> Design:
        from agentjudge.stats.design import Design  # numpy and pandas: not for the run's lean export

        return Design(
            order=list(self.order),
            strata=dict(zip(self.order, self.order_strata, strict=True)),
            cells={(c.judge, c.generator, c.difficulty, c.condition): c.n for c in self.cells},
            predictions={(p.generator, p.difficulty): p.n for p in self.predictions},
            fpc=self.fpc,
        )

    def sampled_cells(self) -> list[CellRecord]:
        return [c for c in self.cells if not c.complete]


def read_sampling(rundir: Path) -> SamplingRecord | None:
    """The run folder's design, or None for a run that judged every scenario (no sampling.json)."""
    path = Path(rundir) / SAMPLING_FILE
    if not path.is_file():
        return None
    try:
        return SamplingRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise RunFolderError(f"{path}: not a sampling record ({first})") from None
