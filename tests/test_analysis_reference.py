"""RQ1, RQ3 and the RQ4–RQ6 deltas recomputed from judgments.parquet with plain pandas groupbys.

Why: checking a derived column only against another column of the same output cannot catch a wrong
slice, a wrong baseline level or a swapped sign. Here every figure is recomputed from the raw file: the
main slice is filtered by hand (first trials, json, no CoT, 1.0-default, model-default temperature), μ is
1 − |reference − verdict|, failed verdicts are dropped (for a prompt-factor delta, with the other level's
row of the same scenario: the deltas are paired). Only the point estimates and counts are compared: the
CIs are the bootstrap's (tested in test_stats.py and test_stats_reference.py).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agentjudge.analysis._context import Context, Section, load_context

from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run

VARIANTS = [
    Variant("with_gt", trials=2),
    Variant("without_gt", trials=2),
    Variant("swapped_gt"),
    Variant("with_gt", temperature=0.7),
    Variant("without_gt", temperature=0.7),
    Variant("with_gt", cot=True),
    Variant("without_gt", cot=True),
    Variant("with_gt", prompt_format="freeform"),
    Variant("without_gt", prompt_format="freeform"),
    Variant("with_gt", default_mode="0.5"),
    Variant("without_gt", default_mode="0.5"),
]
BASELINE = {"prompt_format": "json", "cot": False, "default_mode": "1.0", "temperature": np.nan}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Context, pd.DataFrame]:
    d: Path = tmp_path_factory.mktemp("ref")
    spec = SyntheticSpec(
        n_base=18,
        variants=VARIANTS,
        generator_trials=2,
        judges={"judge-a": 1, "judge-b": 2, "judge-c": 3},
        failure_rate=0.05,
    )
    write_run(d, spec)
    raw = pd.read_parquet(d / "judgments.parquet")
    for col in raw.columns:
        if isinstance(raw[col].dtype, pd.CategoricalDtype):
            raw[col] = raw[col].astype(str)
    raw = raw[(raw["trial"] == 0) & (raw["generator_trial"] == 0) & raw["verdict"].notna()]
    raw = raw.assign(mu=1.0 - (raw["reference"] - raw["verdict"]).abs())
    return load_context(d, resamples=50, seed=0), raw


def _slice(
    raw: pd.DataFrame, free: str | None, conditions: tuple[str, ...] = ("with_gt", "without_gt")
) -> pd.DataFrame:
    """Rows with every prompt factor but ``free`` at its baseline value, in the given conditions."""
    keep = raw["condition"].isin(conditions)
    for factor, value in BASELINE.items():
        if factor == free:
            continue
        keep &= raw[factor].isna() if isinstance(value, float) else raw[factor] == value
    return raw[keep]


def _section(name: str, ctx: Context) -> Section:
    return importlib.import_module(f"agentjudge.analysis.{name}").analyze(ctx)


def _indexed(table: pd.DataFrame, keys: list[str], value: str) -> pd.Series:
    out = table.assign(**{k: table[k].astype(str) for k in keys})
    return out.set_index(keys)[value]


def _same(got: pd.Series, want: pd.Series) -> None:
    want.index = want.index.set_levels([lvl.astype(str) for lvl in want.index.levels])
    assert sorted(got.index) == sorted(want.index)
    assert got.reindex(want.index).to_numpy(float) == pytest.approx(want.to_numpy(float))


def test_rq1_per_metric_topology_and_difficulty(run: tuple[Context, pd.DataFrame]) -> None:
    ctx, raw = run
    sec = _section("rq1_metrics_topologies", ctx)
    main = _slice(raw, None)
    for table, keys in (
        ("rq1_metric", ["condition", "judge", "metric"]),
        ("rq1_topology", ["condition", "judge", "topology"]),
        ("rq1_metric_pooled", ["condition", "metric"]),
        ("rq1_difficulty_curves", ["condition", "generator", "judge", "difficulty"]),
    ):
        t = sec.tables[table]
        _same(_indexed(t, keys, "align"), main.groupby(keys)["mu"].mean())
        _same(_indexed(t, keys, "n_verdicts"), main.groupby(keys)["mu"].size())
    curves = main.groupby(["condition", "generator", "judge", "difficulty"])["mu"].mean().unstack()
    expect = (curves["easy"] >= curves["medium"]) & (curves["medium"] >= curves["hard"])
    mono = sec.tables["rq1_monotonicity"]
    _same(_indexed(mono, ["condition", "generator", "judge"], "monotone_non_increasing"), expect)
    assert expect.any() and not expect.all()  # the check can tell the two outcomes apart on this run


def test_rq3_distributions_default_mode_and_anchoring(run: tuple[Context, pd.DataFrame]) -> None:
    ctx, raw = run
    sec = _section("rq3_convergence", ctx)
    main = _slice(raw, None)
    # verdict shares per level (json verdicts are already 0, 0.5 or 1)
    keys = ["judge", "condition", "difficulty"]
    dist = sec.tables["rq3_verdict_distribution"]
    for level in ("0.0", "0.5", "1.0"):
        want = (main["verdict"] == float(level)).groupby([main[k] for k in keys]).mean()
        _same(_indexed(dist, keys, level), want)
    # 0.5-default minus 1.0-default, per condition and generator
    dm = _slice(raw, "default_mode")
    by_mode = dm.groupby(["condition", "generator", "default_mode"])["mu"].mean().unstack()
    _same(
        _indexed(sec.tables["rq3_default_mode"], ["condition", "generator"], "delta"),
        by_mode["0.5"] - by_mode["1.0"],
    )
    # swapped GT minus true GT, per judge
    anch = _slice(raw, None, conditions=("with_gt", "swapped_gt"))
    by_cond = anch.groupby(["judge", "condition"])["mu"].mean().unstack()
    t = sec.tables["rq3_anchoring"].assign(judge=lambda x: x["judge"].astype(str)).set_index("judge")
    want = by_cond["swapped_gt"] - by_cond["with_gt"]
    assert t["swapped_minus_true"].reindex(want.index).to_numpy() == pytest.approx(want.to_numpy())


@pytest.mark.parametrize(
    "name,factor,level",
    [
        ("rq4_temperature", "temperature", 0.7),
        ("rq5_cot", "cot", True),
        ("rq6_format", "prompt_format", "freeform"),
    ],
)
def test_rq4_to_rq6_deltas_from_plain_groupby(
    run: tuple[Context, pd.DataFrame], name: str, factor: str, level: object
) -> None:
    ctx, raw = run
    sec = _section(name, ctx)
    key = name.split("_")[0]
    df = _slice(raw, factor)
    base = BASELINE[factor]
    at_level = df[df[factor] == level]
    at_base = df[df[factor].isna()] if isinstance(base, float) else df[df[factor] == base]
    # paired: only the (judge, record, generator, condition, metric) rows answered at both levels
    pair = ["judge", "record_id", "generator", "generator_trial", "condition", "metric"]
    both = at_level[pair].merge(at_base[pair])
    at_level, at_base = at_level.merge(both), at_base.merge(both)
    assert len(both) < len(df[df[factor] == level])  # the fixture's 5 % failures leave pairs out
    for table, by in ((f"{key}_deltas", ["condition", "judge"]), (f"{key}_deltas_pooled", ["condition"])):
        want = at_level.groupby(by)["mu"].mean() - at_base.groupby(by)["mu"].mean()
        if factor == "prompt_format":  # RQ6 reads JSON − free-form (the published direction)
            want = -want
            assert set(sec.tables[table]["direction"]) == {"json − freeform"}
        if len(by) == 1:
            got = (
                sec.tables[table]
                .assign(condition=lambda x: x["condition"].astype(str))
                .set_index("condition")
            )
            assert got["delta"].reindex(want.index).to_numpy() == pytest.approx(want.to_numpy())
        else:
            _same(_indexed(sec.tables[table], by, "delta"), want)
        assert (want != 0).all()  # a sign error or a swapped baseline would show
