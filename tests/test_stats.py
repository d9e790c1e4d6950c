"""§8 statistics against hand-computed values, scipy, scikit-learn and brute force."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from agentjudge.stats import (
    ClusterBootstrap,
    add_alignment_columns,
    alignment_table,
    binary_collapse,
    binary_collapse_table,
    cohen_kappa,
    diff_table,
    kappa_tier_correlation,
    multiplicities,
    pairwise_agreement,
    pass_at_k,
    pass_hat_k,
    passk_curve,
    percentile_ci,
    slow_ratio_reference,
    snap,
    soft_jury,
    success_counts,
    topology_balanced,
    weighting_rankings,
)
from agentjudge.stats.bootstrap import expanded_alpha
from agentjudge.stats.codes import group_codes


def _rows(
    judge: str,
    refs: list[float],
    verdicts: list[float | None],
    base: list[str],
    cond: str = "with_gt",
    metrics: list[str] | None = None,
    topo: list[str] | None = None,
) -> pd.DataFrame:
    n = len(refs)
    metrics = metrics or ["tool", "param", "seq", "cov"] * (n // 4)
    return pd.DataFrame(
        {
            "record_id": [f"{b}:hard" for b in base],
            "base_id": base,
            "generator": "g",
            "generator_trial": 0,
            "judge": judge,
            "condition": cond,
            "prompt_format": "json",
            "cot": False,
            "default_mode": "1.0",
            "temperature": np.nan,
            "trial": 0,
            "metric": metrics,
            "scoring_mode": "strict",
            "topology": topo or ["linear"] * n,
            "difficulty": "hard",
            "domain": "itsm",
            "reference": refs,
            "verdict": [np.nan if v is None else v for v in verdicts],
        }
    )


def test_snap_and_mu_by_hand() -> None:
    assert snap(np.array([0.0, 0.24, 0.25, 0.5, 0.74, 0.75, 1.0])).tolist() == [0, 0, 0.5, 0.5, 0.5, 1.0, 1.0]
    df = add_alignment_columns(_rows("j", [1.0, 0.8, 0.3, 0.0], [1.0, 0.5, None, 1.0], ["a"] * 4))
    assert df["mu"].tolist()[:2] == pytest.approx([1.0, 0.7])
    assert np.isnan(df["mu"].iloc[2])
    assert df["mu"].iloc[3] == 0.0
    # ceiling on the judge's rows: snap(0.8)=1 -> 0.8; snap(0.0)=0 -> 1; failed row excluded
    assert df["mu_ceiling"].tolist()[:2] == pytest.approx([1.0, 0.8])


def test_alignment_excludes_and_counts_failures() -> None:
    df = pd.concat(
        [
            _rows("j1", [1.0, 0.8, 0.3, 0.0], [1.0, 0.5, None, 1.0], ["a"] * 4),
            _rows("j2", [1.0, 0.8, 0.3, 0.0], [0.5, 1.0, 0.5, 0.0], ["a"] * 4),
        ]
    )
    t = alignment_table(add_alignment_columns(df), ["judge"]).set_index("judge")
    assert t.loc["j1", "align"] == pytest.approx((1.0 + 0.7 + 0.0) / 3)
    assert t.loc["j1", "n_failed"] == 1 and t.loc["j1", "n_verdicts"] == 3
    assert t.loc["j1", "failure_rate"] == pytest.approx(0.25)
    assert t.loc["j2", "align"] == pytest.approx((0.5 + 0.8 + 0.8 + 1.0) / 4)


def _random_long(n_base: int = 30, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(n_base):
        for j in ("A", "B"):
            for _ in range(rng.integers(1, 6)):
                rows.append(
                    {"base_id": f"s{b:03d}", "judge": j, "mu": rng.random() if rng.random() > 0.1 else np.nan}
                )
    return pd.DataFrame(rows)


def test_multiplicities_match_loop() -> None:
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    assert multiplicities(idx, 3).tolist() == [[2, 0, 1], [0, 1, 2]]


def test_vectorised_bootstrap_equals_slow_loop() -> None:
    df = _random_long()
    boot = ClusterBootstrap(df["base_id"].unique(), resamples=300, seed=7)
    gd = boot.ratio(df, ["judge"], "mu")
    for judge in ("A", "B"):
        part = df[df["judge"] == judge]
        slow = slow_ratio_reference(part, "mu", boot.clusters, boot.idx)
        fast = gd.draws[:, gd.lookup(judge=judge)]
        np.testing.assert_allclose(fast, slow, rtol=1e-10)
        assert gd.estimate[gd.lookup(judge=judge)] == pytest.approx(part["mu"].mean())
    lo, hi = percentile_ci(gd.draws)
    np.testing.assert_allclose(lo, np.percentile(gd.draws, 2.5, axis=0))
    np.testing.assert_allclose(hi, np.percentile(gd.draws, 97.5, axis=0))
    assert lo[0] < gd.estimate[0] < hi[0]


def test_bootstrap_sparse_path_equals_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentjudge.stats.bootstrap as bmod

    df = _random_long(seed=3)
    boot = ClusterBootstrap(df["base_id"].unique(), resamples=50, seed=1)
    dense = boot.ratio(df, ["judge"], "mu")
    monkeypatch.setattr(bmod, "DENSE_LIMIT", 0)
    sparse_ = boot.ratio(df, ["judge"], "mu")
    np.testing.assert_allclose(dense.draws, sparse_.draws)
    np.testing.assert_allclose(dense.estimate, sparse_.estimate)


def test_same_seed_same_draws_and_paired_difference() -> None:
    df = _random_long()
    plan = dict(resamples=100, seed=3, interval="percentile")
    a = ClusterBootstrap(df["base_id"].unique(), **plan).ratio(df, ["judge"], "mu")  # type: ignore[arg-type]
    b = ClusterBootstrap(df["base_id"].unique(), **plan).ratio(df, ["judge"], "mu")  # type: ignore[arg-type]
    np.testing.assert_array_equal(a.draws, b.draws)
    t = diff_table(a, [], "judge", "A", "B")
    d = a.draws[:, a.lookup(judge="A")] - a.draws[:, a.lookup(judge="B")]
    assert t["delta"].iloc[0] == pytest.approx(
        a.estimate[a.lookup(judge="A")] - a.estimate[a.lookup(judge="B")]
    )
    assert t["ci_lo"].iloc[0] == pytest.approx(np.percentile(d, 2.5))
    assert t["ci_hi"].iloc[0] == pytest.approx(np.percentile(d, 97.5))
    # the default (expanded) plan reads wider tails: 2*Phi(-sqrt(n/(n-1)) * t_{n-1, .975}) / 2 each
    e = ClusterBootstrap(df["base_id"].unique(), resamples=100, seed=3).ratio(df, ["judge"], "mu")
    n = df["base_id"].nunique()
    tail = sps.norm.cdf(-np.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1))
    te = diff_table(e, [], "judge", "A", "B")
    assert te["ci_lo"].iloc[0] == pytest.approx(np.percentile(d, 100 * tail))
    assert te["ci_hi"].iloc[0] == pytest.approx(np.percentile(d, 100 * (1 - tail)))


def test_expanded_alpha_hand_values() -> None:
    # n = 60: t_{59, 0.975} = 2.000995, * sqrt(60/59) = 2.017882, Phi(-2.017882) = 0.021800
    assert expanded_alpha(60) == pytest.approx(2 * 0.021800, abs=2e-5)
    assert expanded_alpha(2) == 0.05  # too few clusters for the correction: plain interval
    assert expanded_alpha(1_000_000) == pytest.approx(0.05, abs=1e-4)
    with pytest.raises(ValueError, match="interval"):
        ClusterBootstrap(["a", "b"], resamples=10, seed=0, interval="bca")  # type: ignore[arg-type]


def test_group_codes_match_pandas_ngroup_with_nan() -> None:
    df = pd.DataFrame(
        {
            "a": pd.Categorical(["x", "y", "x", None, "y", "z"]),
            "t": [0.3, np.nan, 0.3, 0.7, np.nan, 1.0],
            "b": [1, 2, 1, 1, 2, 3],
        }
    )
    codes, keys = group_codes(df, ["a", "t", "b"])
    ref = df.groupby(["a", "t", "b"], dropna=False, observed=True).ngroup().to_numpy()
    assert codes.tolist() == ref.tolist()
    assert len(keys) == 4 and keys["b"].tolist() == [1, 2, 3, 1]


@pytest.mark.parametrize("weights", [None, "linear"])
def test_kappa_vs_sklearn(weights: str | None) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 500)
    b = np.where(rng.random(500) < 0.6, a, rng.integers(0, 3, 500))
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(cohen_kappa_score(a, b, weights=weights))
    assert np.isnan(cohen_kappa(np.zeros(5, int), np.zeros(5, int)))


def test_pairwise_agreement_pairs_identical_coordinates() -> None:
    refs = [1.0, 0.5, 0.0, 1.0, 0.2, 0.9, 0.6, 0.4]
    base = ["a"] * 4 + ["b"] * 4
    v1 = [1.0, 0.5, 0.0, 1.0, 0.0, 1.0, 0.5, None]
    v2 = [1.0, 1.0, 0.0, 0.5, 0.0, 1.0, 1.0, 0.5]
    df = pd.concat([_rows("j1", refs, v1, base), _rows("j2", refs, v2, base)])
    t = pairwise_agreement(df, by=("condition",))
    assert t["n_pairs"].iloc[0] == 7  # the failed verdict is not paired
    a = np.array(v1[:7]) * 2
    b = np.array(v2[:7]) * 2
    assert t["agreement"].iloc[0] == pytest.approx((a == b).mean())
    assert t["kappa"].iloc[0] == pytest.approx(cohen_kappa_score(a.astype(int), b.astype(int)))


def test_kappa_tier_spearman_vs_scipy() -> None:
    pairs = pd.DataFrame(
        {
            "judge_a": ["A", "A", "A", "B", "B", "C"],
            "judge_b": ["B", "C", "D", "C", "D", "D"],
            "kappa": [0.6, 0.4, 0.2, 0.5, 0.3, 0.45],
        }
    )
    tiers = {"A": 1, "B": 1, "C": 2, "D": 3}
    out, rho, _, n = kappa_tier_correlation(pairs, tiers)
    gaps = [0, 1, 2, 1, 2, 1]
    assert out["tier_gap"].tolist() == gaps and n == 6
    assert rho == pytest.approx(sps.spearmanr(gaps, pairs["kappa"]).statistic)
    _, rho2, _, n2 = kappa_tier_correlation(pairs.head(2), tiers)
    assert np.isnan(rho2) and n2 == 2


def test_soft_jury_mean_and_failure() -> None:
    refs = [1.0, 0.5, 0.0, 1.0]
    df = pd.concat(
        [
            _rows("j1", refs, [1.0, 0.5, 0.0, None], ["a"] * 4),
            _rows("j2", refs, [0.5, 0.5, 1.0, 1.0], ["a"] * 4),
        ]
    )
    jury = soft_jury(df, ["j1", "j2"]).set_index("metric")
    assert jury.loc["tool", "verdict"] == 0.75 and jury.loc["seq", "verdict"] == 0.5
    assert np.isnan(jury.loc["cov", "verdict"])
    assert set(jury["judge"]) == {"jury"}


def test_weighting_and_topology_and_binary_by_hand() -> None:
    refs = [1.0, 1.0, 0.0, 0.0]
    df = add_alignment_columns(
        pd.concat(
            [
                _rows(
                    "j1",
                    refs,
                    [1.0, 1.0, 0.5, 1.0],
                    ["a"] * 4,
                    topo=["linear", "linear", "loop_like", "loop_like"],
                ),
                _rows(
                    "j2",
                    refs,
                    [0.5, 0.5, 0.0, 0.0],
                    ["a"] * 4,
                    topo=["linear", "linear", "loop_like", "loop_like"],
                ),
            ]
        )
    )
    long, rho = weighting_rankings(df)
    eq = long[long["weighting"] == "equal"].set_index("judge")["align"]
    assert eq["j1"] == pytest.approx(2.5 / 4) and eq["j2"] == pytest.approx(3.0 / 4)
    seq2 = long[long["weighting"] == "seq×2"].set_index("judge")["align"]
    assert seq2["j1"] == pytest.approx((1 + 1 + 2 * 0.5 + 0) / 5)
    assert len(rho) == 5
    topo = topology_balanced(df).set_index("judge")
    assert topo.loc["j1", "topology_balanced"] == pytest.approx((1.0 + 0.25) / 2)
    assert binary_collapse(np.array([0.2, 0.7, 0.5]), np.array([0.5, 0.5, 1.0])).tolist() == [0.0, 1.0, 1.0]
    bc, _ = binary_collapse_table(df)
    bc = bc.set_index("judge")
    assert bc.loc["j2", "half_rate"] == 0.5 and bc.loc["j2", "align_binary"] == 1.0
    assert bc.loc["j1", "align_binary"] == pytest.approx(3 / 4)  # the 0.5 on reference 0 becomes 0


def _brute(n: int, c: int, k: int, all_: bool) -> float:
    trials = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(trials, k))
    ok = [all(s) if all_ else any(s) for s in subsets]
    return sum(ok) / len(subsets)


def test_passk_unbiased_vs_brute_force() -> None:
    n = np.array([5, 5, 4, 3, 5])
    c = np.array([5, 3, 1, 0, 4])
    for k in range(1, 6):
        use = n >= k
        hat = np.mean([_brute(ni, ci, k, True) for ni, ci in zip(n[use], c[use], strict=True)])
        at = np.mean([_brute(ni, ci, k, False) for ni, ci in zip(n[use], c[use], strict=True)])
        assert pass_hat_k(n, c, k) == pytest.approx(hat)
        assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, 1) == pytest.approx(np.mean(c / n))
    assert pass_hat_k(np.array([5]), np.array([3]), 2) == pytest.approx(comb(3, 2) / comb(5, 2))
    assert np.isnan(pass_hat_k(n, c, 6))


def test_passk_curve_from_trials() -> None:
    df = pd.DataFrame(
        {
            "task": ["t1"] * 3 + ["t2"] * 3,
            "trial": [0, 1, 2] * 2,
            "ok": [True, True, False, True, True, True],
            "who": "j",
        }
    )
    counts = success_counts(df, ["who", "task"], "ok")
    assert counts["n"].tolist() == [3, 3] and counts["c"].tolist() == [2, 3]
    curve = passk_curve(counts, ["who"]).set_index("k")
    assert curve.loc[3, "pass_hat_k"] == pytest.approx(0.5)
    assert curve.loc[1, "pass_at_k"] == pytest.approx((2 / 3 + 1) / 2)
