"""The paired comparison of two runs of one grid (the compact-tools ablation), hand-computed."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from agentjudge.stats.paired_runs import PAIR_COLUMNS, paired_alignment_delta


def _run(verdicts: list[float | None]) -> pd.DataFrame:
    rows = []
    for i, verdict in enumerate(verdicts):
        base = "b1" if i < 2 else "b2"
        row = dict.fromkeys(PAIR_COLUMNS, "x")
        row.update(
            record_id=f"{base}:easy", base_id=base, generator=f"g{i % 2}", generator_trial=0, cot=False,
            temperature=math.nan, trial=0, metric="tool", scoring_mode="strict",
            reference=1.0, verdict=verdict,
        )  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def test_one_changed_verdict_gives_the_hand_computed_delta_and_interval() -> None:
    full, compact = _run([1.0, 1.0, 1.0, 0.5]), _run([1.0, 0.5, 1.0, 0.5])
    d = paired_alignment_delta(full, compact, resamples=2000, seed=1)
    assert (d.mu_a, d.mu_b) == (pytest.approx(0.875), pytest.approx(0.75))
    assert d.delta == pytest.approx(-0.125) and d.pairs == 4 and d.changed == 1 and d.unpaired == 0
    # two clusters: resample means are -0.25 (b1 twice), -0.125 (one each) or 0 (b2 twice), p = 1/4, 1/2, 1/4
    assert d.ci_lo == pytest.approx(-0.25) and d.ci_hi == pytest.approx(0.0)


def test_failed_verdicts_are_left_out_and_counted() -> None:
    d = paired_alignment_delta(_run([1.0, None, 1.0, 1.0]), _run([1.0, 1.0, 1.0, 1.0]))
    assert d.pairs == 3 and d.unpaired == 1 and d.delta == 0.0


def test_runs_of_different_grids_are_refused() -> None:
    other = _run([1.0, 1.0, 1.0, 1.0]).assign(judge="someone-else")
    with pytest.raises(ValueError, match="not the same grid"):
        paired_alignment_delta(_run([1.0, 1.0, 1.0, 1.0]), other)
