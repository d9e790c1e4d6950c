"""Tables against people (``stats.people``): ``ppi_table`` by hand and against its parts, and
``annotator_agreement``'s κ against scikit-learn, its bootstrap against a loop over resamples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from agentjudge.stats import (
    ANNOTATOR_COLUMNS,
    PPI_COLUMNS,
    ClusterBootstrap,
    annotator_agreement,
    kappa_from_confusion,
    label_budget,
    percentile_ci,
    ppi_mean,
    ppi_table,
    slow_ratio_reference,
)

NAN = float("nan")
UNIT = ["record_id", "generator", "generator_trial"]


def _items(seed: int = 0, scenarios: int = 30) -> pd.DataFrame:
    """Two judges × four metrics over ``scenarios`` × 3 difficulties; people labelled the hard records of
    the first half of the scenarios, and judge B failed (no verdict) on one record."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(scenarios):
        for d, diff in enumerate(("easy", "medium", "hard")):
            for m in ("tool", "param", "seq", "cov"):
                p = rng.choice([0.0, 0.5, 1.0], p=[0.1, 0.1, 0.8])
                h = p if rng.random() < 0.93 else rng.choice([0.0, 0.5, 1.0])
                for judge in ("A", "B"):
                    v = p if rng.random() < 0.85 else rng.choice([0.0, 0.5, 1.0])
                    failed = judge == "B" and s == 1 and d == 2
                    labelled = s < scenarios // 2 and diff == "hard"
                    rows.append(
                        {
                            "judge": judge,
                            "condition": "without_gt",
                            "metric": m,
                            "base_id": f"s{s:02d}",
                            "record_id": f"s{s:02d}-{diff}",
                            "generator": "g",
                            "generator_trial": 0,
                            "y": 1 - abs(h - v) if labelled and not failed else NAN,
                            "f": NAN if failed else 1 - abs(p - v),
                            "pi": 0.5 if labelled else NAN,
                        }
                    )
    return pd.DataFrame(rows)


def test_direct_is_the_mean_of_the_labelled_rows_and_pooled_rows_pool() -> None:
    items = _items()
    table = ppi_table(items, ["judge", "condition", "metric"], pool="metric", unit=UNIT, resamples=200)
    assert list(table.columns) == ["judge", "condition", "metric", *PPI_COLUMNS]
    assert len(table) == 2 * 5  # 2 judges × (4 metrics + "all")
    for r in table.itertuples(index=False):
        part = items[(items["judge"] == r.judge) & items["f"].notna()]
        if r.metric != "all":
            part = part[part["metric"] == r.metric]
        labelled = part[part["y"].notna()]
        assert r.direct == pytest.approx(labelled["y"].mean(), abs=1e-12)
        assert r.n_labelled == labelled[UNIT].drop_duplicates().shape[0]
        assert r.n_items == part[UNIT].drop_duplicates().shape[0]
        alone = ppi_mean(part["y"].to_numpy(), part["f"].to_numpy(), part["base_id"].to_numpy(dtype=str))
        assert (r.ppi, r.ppi_lo, r.ppi_hi, r.lam) == pytest.approx(
            (float(alone.estimate), float(alone.lo), float(alone.hi), float(alone.lam)), abs=1e-12
        )
        per_label = r.n_labelled / float(alone.n_labelled)
        assert r.effective_n == pytest.approx(float(alone.effective_n) * per_label, rel=1e-12)
        budget = label_budget(alone, 0.03, n=r.n_labelled, population=r.n_items)
        assert (r.labels_direct, r.labels_ppi) == (budget.direct, budget.ppi)
    a_all = table[(table["judge"] == "A") & (table["metric"] == "all")].iloc[0]
    assert a_all.n_labelled == 15 and a_all.n_items == 90  # records, not metric rows
    b_all = table[(table["judge"] == "B") & (table["metric"] == "all")].iloc[0]
    assert b_all.n_labelled == 14 and b_all.n_items == 89  # the failed record is outside B's population


def test_direct_interval_is_the_cluster_bootstrap_over_scenarios() -> None:
    items = _items(seed=3)
    boot = ClusterBootstrap(items.loc[items["y"].notna(), "base_id"].unique(), resamples=300, seed=5)
    table = ppi_table(items, ["judge"], boot=boot)
    for r in table.itertuples(index=False):
        labelled = items[(items["judge"] == r.judge) & items["y"].notna() & items["f"].notna()]
        draws = slow_ratio_reference(labelled, "y", boot.clusters, boot.idx)
        lo, hi = percentile_ci(draws, boot.alpha)
        assert (r.direct_lo, r.direct_hi) == pytest.approx((lo[0], hi[0]), abs=1e-12)


def test_inclusion_weights_enter_direct_and_ppi() -> None:
    items = _items(seed=4)
    # the perfect half of the labelled verdicts drawn at a quarter of the rate: they weigh 4 / (1/0.5) = 2×
    items["pi"] = np.where(items["y"].notna(), np.where(items["f"] == 1, 0.25, 0.5), NAN)
    table = ppi_table(items, ["judge"], inclusion="pi", resamples=200)
    for r in table.itertuples(index=False):
        labelled = items[(items["judge"] == r.judge) & items["y"].notna() & items["f"].notna()]
        w = 1 / labelled["pi"]
        assert r.direct == pytest.approx(float((w * labelled["y"]).sum() / w.sum()), abs=1e-12)
        assert r.direct_lo <= r.direct <= r.direct_hi
        part = items[(items["judge"] == r.judge) & items["f"].notna()]
        alone = ppi_mean(
            part["y"].to_numpy(),
            part["f"].to_numpy(),
            part["base_id"].to_numpy(dtype=str),
            part["pi"].to_numpy(),
        )
        assert r.ppi == pytest.approx(float(alone.estimate), abs=1e-12)
    unweighted = ppi_table(items, ["judge"], resamples=200)
    assert (unweighted["direct"] < table["direct"]).all()  # weighting up the perfect items raises agreement


def test_a_group_without_labels_gets_nan_not_a_figure() -> None:
    items = _items()
    items.loc[items["judge"] == "B", "y"] = NAN
    table = ppi_table(items, ["judge"], resamples=100).set_index("judge")
    assert table.loc["B", "n_labelled"] == 0
    for col in ("direct", "direct_lo", "ppi", "ppi_lo", "ppi_hi", "effective_n"):
        assert math.isnan(table.loc["B", col]), col
    assert table.loc["B", "labels_ppi"] == math.inf
    assert not math.isnan(table.loc["A", "ppi"])


def test_bad_tables_are_refused() -> None:
    items = _items()
    with pytest.raises(KeyError, match="lack column"):
        ppi_table(items.drop(columns="base_id"), ["judge"])
    with pytest.raises(ValueError, match="pool column"):
        ppi_table(items, ["judge"], pool="metric")


# --- annotators ---------------------------------------------------------------------------------------


def _two_annotators(seed: int = 0, records: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(records):
        for m in ("tool", "param", "seq", "cov"):
            truth = rng.choice([0.0, 0.5, 1.0], p=[0.2, 0.2, 0.6])
            for who, acc in (("ann", 0.85), ("bob", 0.75), ("cyd", 0.9)):
                if who == "cyd" and i % 3 == 0:
                    continue  # cyd labelled two thirds of the items
                v = truth if rng.random() < acc else rng.choice([0.0, 0.5, 1.0])
                rows.append(
                    {
                        "annotator": who,
                        "record_id": f"r{i}",
                        "generator": "g",
                        "generator_trial": 0,
                        "base_id": f"b{i // 3}",  # three records per scenario
                        "metric": m,
                        "verdict": v,
                    }
                )
    return pd.DataFrame(rows)


def _pair(labels: pd.DataFrame, a: str, b: str, metric: str | None) -> pd.DataFrame:
    part = labels if metric is None else labels[labels["metric"] == metric]
    wide = part.pivot_table(index=[*UNIT, "metric", "base_id"], columns="annotator", values="verdict")
    return wide[[a, b]].dropna().reset_index()


def test_kappa_and_agreement_match_scikit_learn() -> None:
    labels = _two_annotators()
    table = annotator_agreement(labels, resamples=200)
    assert list(table.columns) == list(ANNOTATOR_COLUMNS)
    assert len(table) == 3 * 5  # three pairs × (four metrics + all)
    for r in table.itertuples(index=False):
        both = _pair(labels, r.annotator_a, r.annotator_b, None if r.metric == "all" else r.metric)
        a = (both[r.annotator_a] * 2).astype(int)
        b = (both[r.annotator_b] * 2).astype(int)
        assert r.n_items == len(both)
        assert r.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert r.agreement == pytest.approx(float((a == b).mean()), abs=1e-12)
        assert r.kappa_lo <= r.kappa <= r.kappa_hi and r.agreement_lo <= r.agreement <= r.agreement_hi


def test_kappa_interval_equals_a_loop_over_the_resamples() -> None:
    labels = _two_annotators(seed=1)
    boot = ClusterBootstrap(labels["base_id"].unique(), resamples=150, seed=9)
    row = annotator_agreement(labels, boot=boot, pool=False).query(
        "annotator_a == 'ann' and annotator_b == 'bob'"
    )
    row = row[row["metric"] == "param"].iloc[0]
    both = _pair(labels, "ann", "bob", "param")
    by_cluster = {c: g for c, g in both.groupby("base_id")}
    kappas, agrees = [], []
    for drawn in boot.idx:
        sample = pd.concat([by_cluster[boot.clusters[i]] for i in drawn if boot.clusters[i] in by_cluster])
        a, b = (sample["ann"] * 2).astype(int), (sample["bob"] * 2).astype(int)
        kappas.append(cohen_kappa_score(a, b))
        agrees.append(float((a == b).mean()))
    k_lo, k_hi = percentile_ci(np.array(kappas), boot.alpha)
    a_lo, a_hi = percentile_ci(np.array(agrees), boot.alpha)
    assert (row.kappa_lo, row.kappa_hi) == pytest.approx((k_lo[0], k_hi[0]), abs=1e-9)
    assert (row.agreement_lo, row.agreement_hi) == pytest.approx((a_lo[0], a_hi[0]), abs=1e-12)


def test_kappa_from_confusion_batches_and_says_nan_when_undefined() -> None:
    conf = np.array([[[5, 1, 0], [2, 6, 1], [0, 1, 4]], [[3, 0, 0], [0, 0, 0], [0, 0, 0]]], dtype=float)
    a = np.repeat([0, 0, 1, 1, 1, 2, 2], [5, 1, 2, 6, 1, 1, 4])
    b = np.repeat([0, 1, 0, 1, 2, 1, 2], [5, 1, 2, 6, 1, 1, 4])
    out = kappa_from_confusion(conf)
    assert out[0] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert math.isnan(out[1])  # both raters always 0: κ undefined


def test_annotator_input_is_checked() -> None:
    labels = _two_annotators()
    bad = labels.copy()
    bad.loc[0, "verdict"] = 0.7
    with pytest.raises(ValueError, match="0.7"):
        annotator_agreement(bad)
    dup = pd.concat([labels, labels.iloc[[0]]])
    with pytest.raises(ValueError, match="two labels"):
        annotator_agreement(dup)
