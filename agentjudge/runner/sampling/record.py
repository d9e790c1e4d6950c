"""Writing RUNDIR/sampling.json, the design of a sampled run, from the run's plan (``SampledGrid``).

The file's model and reader are ``rundir/sampling.py`` (``SamplingRecord``); this writes it at each export
of a sampled run and removes it at the export of an unsampled one, so a folder later judged in full is not
read as sampled.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentjudge.rundir.meta import UnitShare
from agentjudge.rundir.sampling import SAMPLING_FILE, CellRecord, PredictionRecord, SamplingRecord

if TYPE_CHECKING:
    from agentjudge.runner.pipeline import Pipeline
    from agentjudge.runner.sampling.stages import SampledGrid


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

    path = rundir / SAMPLING_FILE
    if record is None:
        path.unlink(missing_ok=True)
        return
    write_json(path, record.model_dump(mode="json"))
