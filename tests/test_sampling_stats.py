"""The statistics of a sampled grid (agentjudge/stats/design.py, issue 38), against hand-computed values
and a simulation: the stratified order, sizes and half-widths, the finite-population scale of the
bootstrap, the design weights and the shared prefix of a paired comparison."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.stats import ClusterBootstrap
from agentjudge.stats.design import (
    Design,
    bound_n,
    fpc_scale,
    half_width,
    ratio_variance,
    required_n,
    shared_lengths,
    stratified_order,
    z_value,
)


def _labels(counts: dict[str, int]) -> tuple[list[str], list[str]]:
    ids, strata = [], []
    for label, n in counts.items():
        for i in range(n):
            ids.append(f"{label}-{i:04d}")
            strata.append(label)
    return ids, strata


def test_order_is_a_seeded_permutation_independent_of_input_order() -> None:
    ids, strata = _labels({"a": 30, "b": 12, "c": 5})
    order = stratified_order(ids, strata, seed=3)
    assert sorted(order) == sorted(ids)
    assert stratified_order(ids[::-1], strata[::-1], seed=3) == order
    assert stratified_order(ids, strata, seed=4) != order


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=6),
    seed=st.integers(min_value=0, max_value=10**6),
)
def test_every_prefix_keeps_each_stratum_share_within_one(counts: list[int], seed: int) -> None:
    ids, strata = _labels({f"t{k}": n for k, n in enumerate(counts)})
    order = stratified_order(ids, strata, seed)
    label = dict(zip(ids, strata, strict=True))
    total = len(ids)
    seen: Counter[str] = Counter()
    for n, b in enumerate(order, start=1):
        seen[label[b]] += 1
        for k, size in enumerate(counts):
            assert abs(seen[f"t{k}"] - n * size / total) < 1.0


def test_half_width_and_required_n_by_hand() -> None:
    # z of the expanded interval at n, times sqrt((1 - n/N) S^2 / n)
    s2, big = 0.04, 1000
    n = required_n(s2, big, 0.01)
    assert half_width(s2, n, big) <= 0.01 < half_width(s2, n - 1, big)
    assert half_width(s2, 400, big) == pytest.approx(z_value(400) * math.sqrt(0.6 * 0.04 / 400))
    # without the correction: n0 = z^2 S^2 / h^2, about 1,540 here (more than the population)
    assert required_n(s2, big, 0.01, fpc=False) == big
    assert required_n(s2, 10**6, 0.01, fpc=False) == pytest.approx(1.96**2 * 0.04 / 1e-4, rel=0.01)
    assert required_n(0.0, big, 0.01) == 1
    # the bound: a mean of values in [0, 1] never needs more
    assert bound_n(3808, 0.01) >= required_n(0.2, 3808, 0.01)
    assert bound_n(3808, 0.01) == required_n(0.25 * 3808 / 3807, 3808, 0.01)


def test_fpc_scale_sums_to_the_finite_population_variance_of_every_prefix() -> None:
    big = 500
    g2 = fpc_scale(np.arange(big), big) ** 2
    for n in (1, 10, 100, 250):
        assert g2[:n].sum() == pytest.approx(n - n * n / big)
    assert (g2[big // 2 :] == 0).all()  # beyond N/2 nothing can shrink further (conservative)


def test_ratio_variance_by_hand() -> None:
    sums = np.array([4.0, 3.0, 2.0, 4.0])
    counts = np.array([4.0, 4.0, 4.0, 4.0])
    r, s2 = ratio_variance(sums, counts)
    assert r == pytest.approx(13 / 16)
    assert s2 == pytest.approx(np.var(sums / 4, ddof=1))


def test_bootstrap_with_the_scale_gives_the_finite_population_variance_of_a_prefix() -> None:
    """A prefix of n of N scenarios: the scaled bootstrap's variance is (1/n − 1/N) S², the plain one's
    S²/n (to Monte-Carlo precision)."""
    rng = np.random.default_rng(0)
    big, n = 1000, 200
    values = rng.random(n)
    order = [f"s{i:04d}" for i in range(big)]
    df = pd.DataFrame({"base_id": order[:n], "g": "x", "v": values})
    scale = dict(zip(order[:n], fpc_scale(np.arange(n), big), strict=True))
    s2 = values.var(ddof=1)
    scaled = ClusterBootstrap(order[:n], 4000, seed=1, scale=scale).ratio(df, ["g"], "v").draws[:, 0]
    plain = ClusterBootstrap(order[:n], 4000, seed=1).ratio(df, ["g"], "v").draws[:, 0]
    assert scaled.var() == pytest.approx((1 / n - 1 / big) * s2, rel=0.08)
    assert plain.var() == pytest.approx(s2 / n, rel=0.08)


def _design() -> Design:
    order = [f"s{i}" for i in range(10)]
    strata = {b: ("a" if i % 2 == 0 else "b") for i, b in enumerate(order)}
    cells = {("j1", "g", "easy", "with_gt"): 4, ("j2", "g", "easy", "with_gt"): 6}
    return Design(order=order, strata=strata, cells=cells)


def test_design_weights_are_stratum_sizes_over_prefix_counts() -> None:
    d = _design()  # strata alternate a, b: a prefix of 4 holds 2 of each of the 5 + 5
    w = d.weight(np.array([0, 1, 3, 4, 5]), np.array([4, 4, 4, 4, 6]))
    assert w.tolist() == [2.5, 2.5, 2.5, 0.0, 5 / 3]
    # the weighted mean is the stratified mean: Σ N_h ȳ_h / N
    vals = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])  # ranks 0..5 of a prefix of 6 (a: 0,2,4; b: 1,3,5)
    ww = d.weight(np.arange(6), np.full(6, 6))
    assert (ww * vals).sum() / ww.sum() == pytest.approx(0.5 * (2 / 3) + 0.5 * (1 / 3))


def test_cell_lengths_and_the_shared_prefix_of_a_paired_comparison() -> None:
    d = _design()
    df = pd.DataFrame(
        {
            "judge": ["j1", "j2", "j2", "j3"],
            "generator": "g",
            "difficulty": "easy",
            "condition": "with_gt",
        }
    )
    lengths = d.cell_lengths(df)
    assert lengths.tolist() == [4, 6, 6, 10]  # j3: a cell the design does not name is judged in full
    pair = df[df["judge"] != "j3"]
    assert shared_lengths(pair, d, "judge", d.cell_lengths(pair)).tolist() == [4, 4, 4]


def test_pairwise_agreement_weighs_each_shared_coordinate_by_the_shorter_prefix() -> None:
    """Judges a (prefix 4 of 10) and b (prefix 8): they share a's 4 scenarios, each standing for 10/4 of
    the population (the larger of their two weights); unweighted, the result is the plain share."""
    from agentjudge.stats import pairwise_agreement

    rows = []
    for judge, n, weight in (("a", 4, 2.5), ("b", 8, 1.25)):
        for i in range(n):
            verdict = 1.0 if (judge == "a" or i != 1) else 0.0  # b disagrees with a on scenario 1 only
            rows.append(
                {
                    "record_id": f"s{i}:easy",
                    "base_id": f"s{i}",
                    "generator": "g",
                    "generator_trial": 0,
                    "condition": "with_gt",
                    "metric": "tool",
                    "judge": judge,
                    "verdict": verdict,
                    "reference": 1.0,
                    "w": weight,
                }  # fmt: skip
            )
    df = pd.DataFrame(rows)
    plain = pairwise_agreement(df)
    weighted = pairwise_agreement(df, design="w")
    assert plain["n_pairs"].tolist() == weighted["n_pairs"].tolist() == [4]
    assert plain["agreement"].tolist() == [0.75]
    assert weighted["agreement"].tolist() == [0.75]  # one slice: equal weights change nothing
    df.loc[(df["judge"] == "b") & (df["base_id"] == "s1"), "w"] = 99.0  # the larger weight is taken
    assert pairwise_agreement(df, design="w")["agreement"].iloc[0] == pytest.approx(3 * 2.5 / (3 * 2.5 + 99))


def test_paired_rows_and_weighted_means_of_the_report() -> None:
    from types import SimpleNamespace

    from agentjudge.analysis._common import group_mean, paired

    d = _design()
    rows = []
    for judge, n in (("j1", 4), ("j2", 6)):
        for r in range(n):
            rows.append(
                {
                    "judge": judge,
                    "generator": "g",
                    "difficulty": "easy",
                    "condition": "with_gt",
                    "base_id": f"s{r}",
                    "_rank": r,
                    "mu": float(r % 2),
                }  # fmt: skip
            )
    df = pd.DataFrame(rows)
    df["design_weight"] = d.weight(df["_rank"].to_numpy(), d.cell_lengths(df))
    ctx = SimpleNamespace(design=d)
    both = paired(ctx, df, "judge")  # type: ignore[arg-type]
    assert sorted(both.groupby("judge")["_rank"].max().tolist()) == [3, 3]  # j2 cut to j1's prefix of 4
    assert (both["design_weight"] == 2.5).all()
    means = group_mean(ctx, df, ["judge"], ["mu"])["mu"]  # type: ignore[arg-type]
    # j2's prefix of 6 holds 3 of stratum a (ranks 0, 2, 4: mu 0) and 3 of b (ranks 1, 3, 5: mu 1)
    assert means["j1"] == pytest.approx(0.5) and means["j2"] == pytest.approx(0.5)
    assert paired(SimpleNamespace(design=None), df, "judge") is df  # type: ignore[arg-type]


def test_upper_variance_adds_the_standard_error_of_the_variance() -> None:
    from agentjudge.stats.design import upper_variance

    resid = np.array([1.0, -1.0] * 50)  # kurtosis 1: a variance known exactly, nothing added
    assert upper_variance(resid, 1.0) == pytest.approx(resid.var(ddof=1))
    rng = np.random.default_rng(0)
    normal = rng.standard_normal(10_000)  # kurtosis 3: s2 (1 + sd sqrt(2/n))
    assert upper_variance(normal, 2.0) == pytest.approx(
        normal.var(ddof=1) * (1 + 2 * np.sqrt(2 / 10_000)), rel=1e-3
    )


def test_next_sizes_keeps_done_cells_grows_short_ones_and_never_shrinks() -> None:
    from agentjudge.runner.sampling.spec import Sampling
    from agentjudge.runner.sampling.stages import next_sizes

    spec = Sampling(target_ci_pp=1.0, pilot=200)
    n, big = 200, 3808
    quiet = (np.full(n, 4.0), np.full(n, 4.0))  # every verdict right: variance 0, done at the pilot
    rng = np.random.default_rng(1)
    noisy = (rng.integers(0, 5, n).astype(float), np.full(n, 4.0))  # sd about 0.35: must grow
    cells = {
        ("j", "g", "easy", "with_gt"): n,
        ("j", "g", "easy", "without_gt"): n,
        ("j", "g", "hard", "with_gt"): n,
    }
    sums = {
        ("j", "g", "easy", "with_gt"): {"strict": quiet},
        ("j", "g", "easy", "without_gt"): {"strict": noisy},
    }
    new = next_sizes(spec, big, cells, set(), sums)
    assert new[("j", "g", "easy", "with_gt")] == n
    assert new[("j", "g", "hard", "with_gt")] == n  # nothing judged yet: nothing decided
    grown = new[("j", "g", "easy", "without_gt")]
    assert n < grown <= big
    assert half_width(np.var(noisy[0] / 4, ddof=1), grown, big) <= 0.92 * 0.01
    # a complete cell is never touched; a pair under gt_gain gets one prefix
    assert next_sizes(spec, big, cells, set(cells), sums) == cells
    pair = next_sizes(Sampling(target_ci_pp=1.0, pilot=200, applies_to=["gt_gain"]), big, cells, set(), sums)
    assert pair[("j", "g", "easy", "with_gt")] == pair[("j", "g", "easy", "without_gt")] > n


def test_a_gain_may_grow_past_a_cells_bound() -> None:
    """A with − without GT difference lies in [-1, 1]: its variance may reach 1, four times a cell's
    bound, so a pair sized by its gain is capped by the gain's bound, not the cell's."""
    from types import SimpleNamespace

    from agentjudge.runner.sampling.estimate import expected_sizes
    from agentjudge.runner.sampling.spec import Sampling
    from agentjudge.runner.sampling.stages import next_sizes
    from agentjudge.stats.design import GAIN_MAX_VARIANCE

    n, big = 200, 3808
    spec = Sampling(target_ci_pp=1.0, pilot=n, applies_to=["gt_gain"])
    right = np.tile([4.0, 0.0], n // 2)  # with GT right where without GT is wrong: the gain is ±1
    cells = {("j", "g", "easy", "with_gt"): n, ("j", "g", "easy", "without_gt"): n}
    sums = {
        ("j", "g", "easy", "with_gt"): {"strict": (right, np.full(n, 4.0))},
        ("j", "g", "easy", "without_gt"): {"strict": (4.0 - right, np.full(n, 4.0))},
    }
    cell_ceiling = bound_n(big, 0.0092)
    gain_ceiling = bound_n(big, 0.0092, max_variance=GAIN_MAX_VARIANCE)
    assert cell_ceiling < gain_ceiling < big
    grown = next_sizes(spec, big, cells, set(), sums)
    assert set(grown.values()) == {gain_ceiling}
    # the dry run: a gain known to vary that much is sized the same way, not cut at the cell's bound
    pipe = SimpleNamespace(
        judges=[SimpleNamespace(display_name="j")],
        generators=[SimpleNamespace(display_name="g", generation="single")],
        difficulties=["easy"],
        conditions=["with_gt", "without_gt"],
    )
    priors = {("j", "g", "easy", "gt_gain"): (1.0, 1.0)}
    sizes, _ = expected_sizes(spec, pipe, big, priors)  # type: ignore[arg-type]
    assert set(sizes.values()) == {required_n(1.0, big, 0.0092)}
    assert min(sizes.values()) > cell_ceiling
