"""RUNDIR/sampling.json: the design of a sampled run, as the report and other readers need it.

Written by the export of a sampled run (and removed by the export of an unsampled one, so a folder later
judged in full is not read as sampled): the order of base scenarios with their topologies (the strata),
every cell's prefix length and its growth over the stages, what the predictions covered, and the share of
the full grid's units this run planned. ``design()`` turns it into the ``stats.sampling.Design`` the
estimators use.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError

from agentjudge.types import Strict

if TYPE_CHECKING:
    from agentjudge.runner.pipeline import Pipeline
    from agentjudge.runner.sampling.stages import SampledGrid
    from agentjudge.stats.design import Design

FILE = "sampling.json"


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


class UnitShare(Strict):
    planned: int = Field(ge=0)
    full_grid: int = Field(ge=0)


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


class RecordError(ValueError):
    """A sampling.json that cannot be read; the message names the file."""


def read_record(rundir: Path) -> SamplingRecord | None:
    """The run folder's design, or None for a run that judged every scenario (no sampling.json)."""
    path = rundir / FILE
    if not path.is_file():
        return None
    try:
        return SamplingRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise RecordError(f"{path}: not a sampling record ({first})") from None


def build_record(
    grid: SampledGrid, pipe: Pipeline, planned_predict: int, planned_judge: int
) -> SamplingRecord:
    """The record of a sampled run as it stands (its current plan and the units it holds planned)."""
    per_cell = len(pipe.prompt_variants) * len(pipe.temperatures) * pipe.trials * pipe.generator_trials
    full_judge = len(grid.cells) * grid.population * per_cell
    full_predict = len(pipe.generators) * len(pipe.difficulties) * pipe.generator_trials * grid.population
    spec = grid.spec
    return SamplingRecord(
        target_ci_pp=spec.target_ci_pp,
        fpc=spec.fpc,
        pilot=spec.pilot,
        seed=grid.seed,
        applies_to=list(spec.applies_to),
        population=grid.population,
        order=grid.order,
        order_strata=[grid.strata[b] for b in grid.order],
        stages=len(grid.history),
        cells=[
            CellRecord(
                judge=c[0],
                generator=c[1],
                difficulty=c[2],
                condition=c[3],
                n=grid.sizes[c],
                complete=c in grid.complete,
                stages=[stage[c] for stage in grid.history if c in stage],
            )
            for c in grid.cells
        ],
        predictions=[
            PredictionRecord(generator=g, difficulty=d, n=n)
            for (g, d), n in sorted(grid.prediction_lengths().items())
        ],
        judge_units=UnitShare(planned=planned_judge, full_grid=full_judge),
        predict_units=UnitShare(planned=planned_predict, full_grid=full_predict),
    )


def write_record(rundir: Path, record: SamplingRecord | None) -> None:
    """Write RUNDIR/sampling.json, or remove it for an unsampled run (a folder judged in full after a
    sampled run must not be read as sampled)."""
    from agentjudge.runner.export import write_json

    path = rundir / FILE
    if record is None:
        path.unlink(missing_ok=True)
        return
    write_json(path, record.model_dump(mode="json"))
