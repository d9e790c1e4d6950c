"""Statistics checked against independent recomputations (issue 17): the bootstrap resamples BASE
scenarios, and κ snaps continuous verdicts before counting agreement.

Each test here exists because a realistic one-line bug passed the rest of the suite: resampling
``record_id`` instead of ``base_id`` (every CI too narrow), and κ computed on unsnapped free-form verdicts
(0.8 and 1.0 counted as disagreeing). ``bench/mutate.py`` re-applies those bugs and checks these tests fail.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agentjudge.analysis._context import Context, load_context
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run
from agentjudge.stats import (
    ClusterBootstrap,
    add_alignment_columns,
    binary_collapse,
    binary_collapse_table,
    pairwise_agreement,
    spearman,
)

RESAMPLES = 400
SEED = 11


def _plain_percentile_ci(
    df: pd.DataFrame, clusters: list[str], idx: np.ndarray, alpha: float
) -> tuple[float, float]:
    """Loop per resample: concatenate the rows of the drawn base ids, take the mean of ``mu``; the interval
    reads the ``alpha / 2`` and ``1 - alpha / 2`` percentiles (the plan's tails: plain or expanded)."""
    rows = {b: part["mu"].dropna().to_numpy() for b, part in df.groupby("base_id", observed=True)}
    stats = []
    for draw in idx:
        cat = np.concatenate([rows.get(clusters[i], np.empty(0)) for i in draw])
        stats.append(cat.mean())
    lo, hi = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


def _variant_frame(n_base: int = 15) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    easy = pd.DataFrame(
        {
            "base_id": [f"b{i:02d}" for i in range(n_base) for _ in range(4)],
            "judge": "j",
            "mu": rng.random(4 * n_base),
        }
    )
    parts = [
        easy.assign(record_id=easy["base_id"] + f":{d}", difficulty=d) for d in ("easy", "medium", "hard")
    ]
    return pd.concat(parts, ignore_index=True)


def test_clusters_are_base_ids_and_identical_variants_change_nothing() -> None:
    """Three identical difficulty variants of each scenario: resampling scenarios gives exactly the draws
    of the one-variant table (each drawn scenario brings its three copies, the mean is unchanged);
    resampling records would treat the copies as independent evidence and narrow the CI."""
    three = _variant_frame()
    one = three[three["difficulty"] == "easy"]
    boot = ClusterBootstrap(three["base_id"].unique(), resamples=RESAMPLES, seed=SEED)
    assert list(boot.clusters) == sorted(three["base_id"].unique())
    got3 = boot.ratio(three, ["judge"], "mu").table()
    got1 = ClusterBootstrap(one["base_id"].unique(), resamples=RESAMPLES, seed=SEED).ratio(
        one, ["judge"], "mu"
    )
    t1 = got1.table()
    assert got3[["align", "ci_lo", "ci_hi"]].to_numpy() == pytest.approx(
        t1[["align", "ci_lo", "ci_hi"]].to_numpy()
    )
    lo, hi = _plain_percentile_ci(three, list(boot.clusters), boot.idx, boot.alpha)
    assert got3["ci_lo"].iloc[0] == pytest.approx(lo) and got3["ci_hi"].iloc[0] == pytest.approx(hi)
    # the record-level interval (what the bug computed) is clearly narrower: the checks above see it
    rec = ClusterBootstrap(three["record_id"].unique(), resamples=RESAMPLES, seed=SEED)
    narrow = rec.ratio(three, ["judge"], "mu", cluster_col="record_id").table()
    assert (narrow["ci_hi"] - narrow["ci_lo"]).iloc[0] < 0.8 * (got3["ci_hi"] - got3["ci_lo"]).iloc[0]


def _identical_variant_runs(root: Path) -> tuple[Context, Context]:
    """Two run folders from one synthetic run: only the easy variant, and the easy rows copied to medium and
    hard (same references, same verdicts)."""
    spec = SyntheticSpec(
        n_base=18,
        judges={"judge-a": 1, "judge-b": 2},
        variants=[Variant("with_gt"), Variant("without_gt")],
        failure_rate=0.05,
    )
    src = root / "src"
    write_run(src, spec)
    jd = pd.read_parquet(src / "judgments.parquet")
    easy = jd[jd["difficulty"].astype(str) == "easy"].copy()
    for col in ("difficulty", "record_id"):
        easy[col] = easy[col].astype(str)
    copies = [
        easy.assign(difficulty=d, record_id=easy["base_id"].astype(str) + f":{d}")
        for d in ("easy", "medium", "hard")
    ]
    dirs = {}
    for name, table in (("one", easy), ("three", pd.concat(copies, ignore_index=True))):
        d = root / name
        d.mkdir()
        table.to_parquet(d / "judgments.parquet", index=False)
        (d / "meta.json").write_text((src / "meta.json").read_text())
        dirs[name] = d
    return (
        load_context(dirs["one"], resamples=RESAMPLES, seed=SEED),
        load_context(dirs["three"], resamples=RESAMPLES, seed=SEED),
    )


def test_report_context_resamples_base_scenarios(tmp_path: Path) -> None:
    """Through the report's own bootstrap plan and the headline section: the run with three identical
    variants has the CIs of the one-variant run, and they equal a plain loop over drawn base ids."""
    one, three = _identical_variant_runs(tmp_path)
    assert len(three.main) == 3 * len(one.main)
    assert list(three.boot.clusters) == sorted(one.main["base_id"].astype(str).unique())
    by = ["judge", "condition"]
    t1 = one.boot.ratio(one.main, by, "mu").table()
    t3 = three.boot.ratio(three.main, by, "mu").table()
    for col in ("align", "ci_lo", "ci_hi"):
        assert t3[col].to_numpy() == pytest.approx(t1[col].to_numpy())
    head1 = importlib.import_module("agentjudge.analysis.headline").analyze(one).tables["headline"]
    head3 = importlib.import_module("agentjudge.analysis.headline").analyze(three).tables["headline"]
    key = ["judge", "condition"]
    h1 = head1.assign(**{k: head1[k].astype(str) for k in key}).set_index(key).sort_index()
    h3 = head3.assign(**{k: head3[k].astype(str) for k in key}).set_index(key).sort_index()
    assert h3[["align", "ci_lo", "ci_hi"]].to_numpy() == pytest.approx(
        h1[["align", "ci_lo", "ci_hi"]].to_numpy()
    )
    # independent: percentile interval of the mean over rows of the drawn base ids, per judge and condition
    clusters = list(three.boot.clusters.astype(str))
    main = three.main.assign(base_id=three.main["base_id"].astype(str))
    for (judge, cond), part in main.groupby(["judge", "condition"], observed=True):
        lo, hi = _plain_percentile_ci(part, clusters, three.boot.idx, three.boot.alpha)
        row = h3.loc[(str(judge), str(cond))]
        assert (row["ci_lo"], row["ci_hi"]) == pytest.approx((lo, hi))


def _freeform(judge: str, verdicts: list[float], refs: list[float]) -> pd.DataFrame:
    n = len(verdicts)
    return pd.DataFrame(
        {
            "record_id": [f"r{i // 4}:hard" for i in range(n)],
            "base_id": [f"r{i // 4}" for i in range(n)],
            "generator": "g",
            "generator_trial": 0,
            "judge": judge,
            "condition": "with_gt",
            "prompt_format": "freeform",
            "cot": False,
            "default_mode": "1.0",
            "temperature": np.nan,
            "trial": 0,
            "metric": ["tool", "param", "seq", "cov"] * (n // 4),
            "scoring_mode": "strict",
            "reference": refs,
            "verdict": verdicts,
        }
    )


def _category(v: float) -> int:
    """Nearest of the three verdict levels, written out: below 0.25 → 0, below 0.75 → 0.5, else 1 (exact
    ties go up, as the reference's snapping does)."""
    if v < 0.25:
        return 0
    if v < 0.75:
        return 1
    return 2


def test_kappa_on_continuous_verdicts_uses_snapped_categories() -> None:
    """Free-form judges answer 0.8 or 0.2; κ and raw agreement count categories {0, 0.5, 1}."""
    a = [0.2, 0.25, 0.75, 0.8]
    b = [0.0, 0.5, 1.0, 1.0]
    refs = [0.0, 0.5, 1.0, 1.0]
    t = pairwise_agreement(pd.concat([_freeform("ja", a, refs), _freeform("jb", b, refs)]))
    assert t["agreement"].iloc[0] == 1.0  # every pair snaps to the same level
    assert t["kappa"].iloc[0] == pytest.approx(1.0)
    # a larger mix: κ (plain and linear-weighted) equals scikit-learn on the categories computed above
    rng = np.random.default_rng(5)
    levels = np.array([0.0, 0.2, 0.25, 0.4, 0.5, 0.6, 0.75, 0.8, 1.0])
    va = rng.choice(levels, 200)
    vb = np.where(rng.random(200) < 0.5, va, rng.choice(levels, 200))
    refs2 = list(rng.random(200))
    df = pd.concat([_freeform("ja", list(va), refs2), _freeform("jb", list(vb), refs2)])
    ca = [_category(v) for v in va]
    cb = [_category(v) for v in vb]
    plain = pairwise_agreement(df).iloc[0]
    assert plain["agreement"] == pytest.approx(np.mean(np.array(ca) == np.array(cb)))
    assert plain["kappa"] == pytest.approx(cohen_kappa_score(ca, cb))
    linear = pairwise_agreement(df, weights="linear").iloc[0]
    assert linear["kappa"] == pytest.approx(cohen_kappa_score(ca, cb, weights="linear"))


def test_spearman_helpers_equal_scipy_on_raw_values() -> None:
    """``spearman`` ranks its inputs itself: on raw (unranked) alignments it must equal scipy's ρ, not
    Pearson's r (the two agree only when the inputs are already ranks)."""
    x = [0.91, 0.52, 0.55, 0.97, 0.10, 0.60]
    y = [0.30, 0.21, 0.95, 0.99, 0.05, 0.40]
    assert spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic)
    assert spearman(x, y) != pytest.approx(sps.pearsonr(x, y).statistic)
    # the binary-collapse table's ρ between the two scales' alignments, recomputed per condition
    rng = np.random.default_rng(2)
    rows = []
    for judge, bias in (("j1", 0.0), ("j2", 0.2), ("j3", 0.4), ("j4", 0.1), ("j5", 0.3)):
        ref = rng.choice([0.0, 0.3, 0.6, 0.8, 1.0], 40)
        ver = np.clip(np.floor((ref + bias * rng.random(40)) * 2 + 0.5) / 2, 0, 1)
        rows.append(pd.DataFrame({"judge": judge, "condition": "with_gt", "reference": ref, "verdict": ver}))
    df = pd.concat(rows, ignore_index=True)
    table, rho = binary_collapse_table(df)
    want = sps.spearmanr(table["align_three_level"], table["align_binary"]).statistic
    assert rho["rho_rankings"].iloc[0] == pytest.approx(want)


def test_ceiling_counts_only_rows_the_judge_answered() -> None:
    """The three-level ceiling beside a judge is computed on the rows that judge answered: a failed verdict
    removes its row from the ceiling as it does from the alignment."""
    df = pd.DataFrame({"reference": [0.8, 0.4, 0.6, 1.0], "verdict": [1.0, np.nan, 0.5, np.nan]})
    out = add_alignment_columns(df)
    assert out["mu_ceiling"].isna().tolist() == [False, True, False, True]
    # answered rows: snap(0.8) = 1 -> 0.8; snap(0.6) = 0.5 -> 0.9
    assert out["mu_ceiling"].mean() == pytest.approx((0.8 + 0.9) / 2)
    assert out["mu"].mean() == pytest.approx((0.8 + 0.9) / 2)


def test_binary_collapse_boundary_is_below_half() -> None:
    """§8: a 0.5 verdict becomes 0 when the reference is BELOW 0.5 and 1 otherwise, so a reference of
    exactly 0.5 collapses to 1; verdicts other than 0.5 are untouched."""
    ref = np.array([0.5, 0.4999, 0.5001, 0.0, 1.0, 0.3])
    ver = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 1.0])
    assert binary_collapse(ref, ver).tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
