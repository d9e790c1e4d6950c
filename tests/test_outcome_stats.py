"""Outcome statistics: accuracy, κ and AUC of a verdict against state_match, checked by hand and against
scikit-learn, and their cluster-bootstrap CIs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from agentjudge.stats import ClusterBootstrap
from agentjudge.stats.outcome import outcome_agreement


def frame() -> pd.DataFrame:
    # judge A: verdicts 1, 1, 0.5, 0, 1, 0 on outcomes T, T, T, F, F, F
    return pd.DataFrame(
        {
            "base_id": ["r1", "r2", "r3", "r4", "r5", "r6"],
            "judge": ["A"] * 6,
            "verdict": [1.0, 1.0, 0.5, 0.0, 1.0, 0.0],
            "outcome": [True, True, True, False, False, False],
        }
    )


def test_hand_computed_accuracy_kappa_auc() -> None:
    df = frame()
    boot = ClusterBootstrap(df["base_id"], resamples=200, seed=1)
    row = outcome_agreement(df, boot, ["judge"], "verdict").iloc[0]
    # called accomplished (verdict > 0.5): rows 1, 2, 5 -> TP 2, FP 1, FN 1 (the 0.5), TN 2
    assert row["accuracy"] == pytest.approx(4 / 6)
    # kappa: p_o = 4/6, p_e = (3*3 + 3*3)/36 = 0.5 -> (2/3 - 1/2) / (1/2) = 1/3
    assert row["kappa"] == pytest.approx(1 / 3)
    # AUC over 3 positives x 3 negatives: pairs (pos > neg) + ties / 2
    # pos 1.0 vs neg {0, 1, 0}: 2 wins + 1 tie, twice; pos 0.5 vs neg: 2 wins -> (2.5 + 2.5 + 2) / 9
    assert row["auc"] == pytest.approx(7 / 9)
    assert row["auc"] == pytest.approx(roc_auc_score(df["outcome"], df["verdict"]))
    pred = (df["verdict"] > 0.5).astype(int)
    assert row["kappa"] == pytest.approx(cohen_kappa_score(df["outcome"].astype(int), pred))
    assert row["n"] == 6 and row["positives"] == 3 and row["n_missing"] == 0
    assert row["accuracy_lo"] <= row["accuracy"] <= row["accuracy_hi"]
    assert row["accuracy_lo"] < row["accuracy_hi"]  # six clusters resampled: the CI has width


def test_missing_verdicts_are_counted_and_continuous_scores_rank() -> None:
    rng = np.random.default_rng(0)
    n = 300
    y = rng.random(n) < 0.4
    score = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1).round(2)
    df = pd.DataFrame({"base_id": [f"r{i // 3}" for i in range(n)], "g": "x", "s": score, "outcome": y})
    df.loc[5, "s"] = np.nan
    boot = ClusterBootstrap(df["base_id"], resamples=100, seed=0)
    row = outcome_agreement(df, boot, ["g"], "s").iloc[0]
    ok = df["s"].notna()
    assert row["n_missing"] == 1 and row["n"] == n - 1
    assert row["auc"] == pytest.approx(roc_auc_score(df.loc[ok, "outcome"], df.loc[ok, "s"]))
    assert row["auc_lo"] < row["auc"] < row["auc_hi"]


@pytest.mark.parametrize("interval", ["expanded", "percentile"])
def test_the_intervals_follow_the_plans_ci_choice(interval: str) -> None:
    """``--ci`` reaches RQ7's tables: each CI is read at the plan's tails (``boot.alpha``), computed here
    independently from the same seeded resamples with numpy's percentile (issue 42: the plain interval
    was used whatever ``--ci`` said)."""
    df = frame()
    boot = ClusterBootstrap(df["base_id"], resamples=400, seed=7, interval=interval)
    row = outcome_agreement(df, boot, ["judge"], "verdict").iloc[0]
    # the accuracy of each resample by hand: the drawn scenarios' rows, counted with multiplicity
    correct = ((df["verdict"] > 0.5) == df["outcome"]).to_numpy(float)
    order = boot.cluster_codes(df["base_id"])
    per_cluster = np.zeros(len(boot.clusters))
    per_cluster[order] = correct
    draws = (boot.weights @ per_cluster) / boot.weights.sum(axis=1)
    n = 6  # scenarios: the expanded tails are 2*Phi(-sqrt(n/(n-1)) * t_{n-1, .975}) / 2 each
    from scipy import stats as sps

    tail = sps.norm.cdf(-np.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1)) if interval == "expanded" else 0.025
    lo, hi = np.percentile(draws, [100 * tail, 100 * (1 - tail)])
    assert (row["accuracy_lo"], row["accuracy_hi"]) == (pytest.approx(lo), pytest.approx(hi))
    if interval == "expanded":  # six scenarios: the expanded interval reads tails well beyond 2.5 %
        assert tail < 0.01
