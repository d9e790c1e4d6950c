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


def test_the_interval_follows_ci_expanded_by_default() -> None:
    """``interval`` as ``--ci`` (issue 42: the plain percentile interval was used whatever was asked):
    the default reads the expanded tails (Hesterberg), computed here from the same seeded resamples."""
    import numpy as np
    from scipy import stats as sps

    from agentjudge.stats.bootstrap import draw_indices, multiplicities

    full = pd.concat([_run([1.0, 1.0, 1.0, 0.5]).assign(base_id=lambda f, k=k: f.base_id + k) for k in "xyz"])
    full["record_id"] = full["base_id"] + ":easy"
    compact = full.copy()
    compact.loc[compact.base_id == "b1x", "verdict"] = 0.5  # b1x: mu 1, 1 -> 0.5, 0.5
    compact.loc[compact.base_id == "b2y", "verdict"] = 1.0  # b2y: mu 1, 0.5 -> 1, 1
    plain = paired_alignment_delta(full, compact, resamples=500, seed=4, interval="percentile")
    default = paired_alignment_delta(full, compact, resamples=500, seed=4)
    # by hand: six scenarios in sorted order b1x b1y b1z b2x b2y b2z, two rows each; summed differences
    sums = np.array([-1.0, 0.0, 0.0, 0.0, 0.5, 0.0])
    weights = multiplicities(draw_indices(6, 500, 4), 6)
    draws = (weights @ sums) / (weights @ np.full(6, 2.0))
    tail = sps.norm.cdf(-np.sqrt(6 / 5) * sps.t.ppf(0.975, 5))
    assert (plain.ci_lo, plain.ci_hi) == tuple(pytest.approx(v) for v in np.percentile(draws, [2.5, 97.5]))
    assert (default.ci_lo, default.ci_hi) == tuple(
        pytest.approx(v) for v in np.percentile(draws, [100 * tail, 100 * (1 - tail)])
    )
    assert default.ci_lo < plain.ci_lo and default.ci_hi > plain.ci_hi
    with pytest.raises(ValueError, match="interval"):
        paired_alignment_delta(full, compact, interval="bca")
