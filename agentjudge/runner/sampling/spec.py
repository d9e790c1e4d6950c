"""The pipeline key ``sampling`` (and ``agentjudge run --target-ci PP``).

``sampling: {target_ci_pp: 1.0}``: judge as few base scenarios as give every cell of the grid (judge ×
generator × difficulty × condition; the report's ``headline_cells``) a 95 % CI of half-width at most 1 pp.
Absent: every scenario is judged, as always.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from agentjudge.limits import MAX_PILOT, MIN_TARGET_CI_PP
from agentjudge.types import Strict

Target = Literal["cells", "gt_gain"]
_CELLS: tuple[Target, ...] = ("cells",)


class Sampling(Strict):
    """How a sampled grid is sized. Only ``target_ci_pp`` is required."""

    # the 95 % CI half-width every cell must reach, in percentage points of alignment
    target_ci_pp: float = Field(ge=MIN_TARGET_CI_PP, le=100, allow_inf_nan=False)
    # scenarios every cell judges first (stage 1), from which each cell's variance is estimated
    pilot: int = Field(default=200, ge=10, le=MAX_PILOT)
    # the seed of the order of base scenarios; None: the pipeline's `seed`
    seed: int | None = None
    # CIs for the full grid's value on this dataset (finite-population correction) rather than for the
    # population of scenarios the dataset stands for (false: like an unsampled run's CIs, more scenarios)
    fpc: bool = True
    # what must reach the target: each cell (`cells`) and/or each with/without-GT gain (`gt_gain`: the two
    # conditions of a judge, generator and difficulty judged on one prefix, sized by the paired difference)
    applies_to: list[Target] = Field(default_factory=lambda: list(_CELLS), min_length=1)
    # a run folder of the same judges whose verdicts give `--dry-run` its per-cell variances (relative to
    # the pipeline file); without one, and without verdicts in the run folder, the dry run assumes the
    # largest variance a mean of values in [0, 1] can have
    prior_run: Path | None = None

    @field_validator("applies_to")
    @classmethod
    def _distinct(cls, value: list[Target]) -> list[Target]:
        if len(set(value)) != len(value):
            raise ValueError(f"duplicate entries {value}")
        return value

    @property
    def target(self) -> float:
        """The target as a share (1 pp = 0.01)."""
        return self.target_ci_pp / 100.0

    def order_seed(self, pipeline_seed: int) -> int:
        return pipeline_seed if self.seed is None else self.seed
