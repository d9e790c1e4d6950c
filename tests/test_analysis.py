"""Each analysis section on small synthetic run folders, including the one-line 'data lacking' messages."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agentjudge.analysis._context import Context, Section, load_context

from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run

FULL_VARIANTS = [
    Variant("with_gt", trials=3),
    Variant("without_gt", trials=3),
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


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Context:
    d = tmp_path_factory.mktemp("full")
    spec = SyntheticSpec(
        n_base=24,
        variants=FULL_VARIANTS,
        generator_trials=2,
        judges={"judge-a": 1, "judge-b": 2, "judge-c": 3, "baseline/majority": 3},
    )
    write_run(d, spec)
    return load_context(d, resamples=200, seed=0)


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> Context:
    d = tmp_path_factory.mktemp("minimal")
    write_run(d, SyntheticSpec(n_base=12, judges={"judge-a": 1}, variants=[Variant("with_gt")]))
    return load_context(d, resamples=100, seed=0)


def run(name: str, ctx: Context) -> Section:
    return importlib.import_module(f"agentjudge.analysis.{name}").analyze(ctx)


def test_headline_matches_plain_groupby(full: Context) -> None:
    sec = run("headline", full)
    head = sec.tables["headline"]
    raw = pd.read_parquet(full.rundir / "judgments.parquet")
    main = raw[
        (raw["trial"] == 0)
        & (raw["generator_trial"] == 0)
        & (raw["prompt_format"] == "json")
        & ~raw["cot"]
        & (raw["default_mode"] == "1.0")
        & raw["temperature"].isna()
        & raw["condition"].isin(["with_gt", "without_gt"])
    ]
    main = main.assign(mu=1 - (main["reference"] - main["verdict"]).abs())
    expect = main.groupby(["scoring_mode", "judge", "condition"])["mu"].mean()
    got = head.set_index(["scoring_mode", "judge", "condition"])["align"]
    for key, val in expect.items():
        assert got[key] == pytest.approx(val)
        row = head.set_index(["scoring_mode", "judge", "condition"]).loc[key]
        assert row["ci_lo"] <= val <= row["ci_hi"]
    failed = main.groupby(["judge", "condition"])["verdict"].apply(lambda s: int(s.isna().sum()))
    assert (head.set_index(["judge", "condition"])["n_failed"].reindex(failed.index) == failed).all()
    gain = sec.tables["gt_gain"].set_index("judge")["gt_gain"]
    assert gain["judge-a"] == pytest.approx(
        expect[("strict", "judge-a", "with_gt")] - expect[("strict", "judge-a", "without_gt")]
    )
    assert (head.loc[head["judge"] == "baseline/majority", "judge_kind"] == "baseline").all()
    assert (sec.tables["headline_cells"]["generator_kind"] == "simulated").all()
    # three-level verdicts can never beat the snapped reference, row by row, so no cell can either
    assert (head["align"] <= head["ceiling"] + 1e-9).all() and "headline" in sec.figures


def test_rq1_tables_and_monotonicity(full: Context) -> None:
    sec = run("rq1_metrics_topologies", full)
    assert set(sec.tables["rq1_metric"]["metric"].astype(str)) == {"tool", "param", "seq", "cov"}
    assert sec.tables["rq1_topology"]["topology"].nunique() == 6
    mono = sec.tables["rq1_monotonicity"]
    expect = (mono["easy"] >= mono["medium"]) & (mono["medium"] >= mono["hard"])
    assert (mono["monotone_non_increasing"] == expect).all()
    assert "rq1_difficulty" in sec.figures


def test_rq2_kappa_tiers_and_jury(full: Context) -> None:
    sec = run("rq2_agreement", full)
    pairs = sec.tables["rq2_pairs"]
    assert len(pairs) == 2 * 6  # 4 judges -> 6 pairs per condition
    rho = sec.tables["rq2_kappa_vs_tier"]
    assert rho["pairs_with_tiers"].tolist() == [6, 6] and rho["spearman_rho"].notna().all()
    jb = sec.tables["rq2_jury_vs_best"]
    assert set(jb["best_judge"]) <= {"judge-a", "judge-b", "judge-c"}
    assert (jb["ci_lo"] <= jb["delta"]).all() and (jb["delta"] <= jb["ci_hi"]).all()


def test_rq3_distributions_default_mode_anchoring(full: Context) -> None:
    sec = run("rq3_convergence", full)
    dist = sec.tables["rq3_verdict_distribution"]
    np.testing.assert_allclose(dist[["0.0", "0.5", "1.0"]].sum(axis=1), 1.0)
    dm = sec.tables["rq3_default_mode"]
    assert len(dm) == 2 * 2 and dm["strength"].notna().all()
    anch = sec.tables["rq3_anchoring"]
    assert set(anch["judge"]) == set(full.judges)
    row = anch.set_index("judge").loc["judge-a"]
    assert row["swapped_minus_true"] == pytest.approx(row["swapped_gt"] - row["with_gt"])
    # beside it, the wrong GT against no GT: the alignments of judge-a's rows in those two conditions
    ok = full.vary(None, conditions=("swapped_gt", "without_gt"))
    ok = ok[(ok["judge"] == "judge-a").to_numpy() & ok["ok"].to_numpy()]
    mu = ok.groupby("condition", observed=True)["mu"].mean()
    assert row["swapped_minus_without"] == pytest.approx(mu["swapped_gt"] - mu["without_gt"])
    assert (
        row["swapped_minus_without_ci_lo"]
        <= row["swapped_minus_without"]
        <= row["swapped_minus_without_ci_hi"]
    )


@pytest.mark.parametrize(
    "name,factor,level",
    [
        ("rq4_temperature", "temperature", "0.7"),
        ("rq5_cot", "cot", "True"),
        ("rq6_format", "prompt_format", "freeform"),
    ],
)
def test_variant_deltas_are_paired_differences(full: Context, name: str, factor: str, level: str) -> None:
    sec = run(name, full)
    key = name.split("_")[0]
    deltas = sec.tables[f"{key}_deltas"]
    align = sec.tables[f"{key}_alignment"]
    assert len(deltas) == 2 * len(full.judges)
    r = deltas[(deltas["judge"] == "judge-b") & (deltas["condition"] == "without_gt")].iloc[0]
    # by hand: over the verdict rows answered at both levels (a row failed on either side drops the pair)
    d = full.vary(factor)
    d = d[(d["judge"] == "judge-b") & (d["condition"] == "without_gt")]
    key = ["record_id", "generator", "generator_trial", "metric"]
    on = d[(d[factor].astype(str) == level).to_numpy()].set_index(key)
    off = d[(d[factor].astype(str) != level).to_numpy()].set_index(key)
    both = on.index[on["verdict"].notna()].intersection(off.index[off["verdict"].notna()])
    assert 0 < len(both) < len(on)  # the fixture's failures leave some pairs out

    def mu(rows: pd.DataFrame) -> float:
        return float((1 - (rows["reference"] - rows["verdict"]).abs()).mean())

    # the sign each table names: level − baseline, except RQ6's published JSON − free-form
    sign = -1 if factor == "prompt_format" else 1
    assert r["direction"] == ("json − freeform" if sign < 0 else f"{r['level']} − {r['baseline_level']}")
    assert r["delta"] == pytest.approx(sign * (mu(on.loc[both]) - mu(off.loc[both])))
    assert r["ci_lo"] <= r["delta"] <= r["ci_hi"]
    # the alignment table keeps each level over its own answered rows
    a = align[(align["judge"] == "judge-b") & (align["condition"] == "without_gt")]
    lev = a[a[factor].astype(str) == level]["align"].iloc[0]
    assert lev == pytest.approx(mu(on[on["verdict"].notna()]))


def test_robustness_guide_passk_failures(full: Context) -> None:
    rob = run("robustness", full)
    assert set(rob.tables["robust_weighting_rho"]["weighting"]) == {
        "seq×2",
        "param×2",
        "cov×0.5",
        "seq×2+param×2",
        "tool×2",
    }
    topo = rob.tables["robust_topology_weighting"]
    assert topo["n_topologies"].eq(6).all()
    assert (topo["topology_balanced_ci_lo"] <= topo["topology_balanced"]).all()
    assert (topo["topology_balanced"] <= topo["topology_balanced_ci_hi"]).all()
    assert (topo["shift_pp_ci_lo"] <= topo["shift_pp_ci_hi"]).all()
    # the balanced estimate is the plain mean of per-topology means (independent recomputation)
    main = full.main
    first = topo.iloc[0]
    part = main[(main.judge == first.judge) & (main.condition == first.condition) & main.verdict.notna()]
    by_topo = (1 - (part.reference - part.verdict).abs()).groupby(part.topology, observed=True).mean()
    assert first.topology_balanced == pytest.approx(by_topo.mean())
    guide = run("guide", full).tables["guide"]
    assert len(guide) == 6 and "baseline/majority" not in set(guide["leader"]) | set(guide["runner_up"])
    assert (guide["leader_align"] >= guide["runner_up_align"]).all()
    assert (guide["decisive"] == (guide["margin_ci_lo"] > 0)).all()
    pk = run("passk", full)
    judges = pk.tables["passk_judges"]
    assert judges["k"].max() == 3
    assert (
        judges.groupby(["judge", "condition"])["pass_hat_k"].apply(lambda s: s.is_monotonic_decreasing)
    ).all()
    assert pk.tables["passk_generators"]["k"].max() == 2
    # the text gives pass@k too, as the section's title promises: judge-a's last k of the table
    a = judges[(judges["judge"] == "judge-a") & (judges["condition"] == "with_gt")].iloc[-1]
    line = next(t for t in pk.text if t.startswith("- judge judge-a, with_gt:"))
    assert f"pass@{int(a['k'])} {100 * a['pass_at_k']:.1f} % (at least one)" in line
    assert any("; pass@2 " in t for t in pk.text if t.startswith("- generator "))
    fails = run("failures", full).tables["parse_failures"]
    assert fails["failed"].sum() == int(full.df["verdict"].isna().sum())


@pytest.mark.parametrize(
    "name,needle",
    [
        ("rq4_temperature", "one temperature"),
        ("rq5_cot", "one chain-of-thought"),
        ("rq6_format", "one prompt format"),
        ("rq2_agreement", "1 rankable judge(s)"),
        ("guide", "at least two rankable judges"),
        ("passk", "one trial"),
    ],
)
def test_lacking_data_is_one_line(minimal: Context, name: str, needle: str) -> None:
    sec = run(name, minimal)
    assert sec.lacking is not None and needle in sec.lacking and "\n" not in sec.lacking
    assert not sec.tables


def test_minimal_run_sections_still_work(minimal: Context) -> None:
    head = run("headline", minimal)
    assert len(head.tables["headline"]) == 1
    assert any("lacks one of the two conditions" in t for t in head.text)
    rq3 = run("rq3_convergence", minimal)
    assert any("one default mode" in t for t in rq3.text) and any("no swapped_gt" in t for t in rq3.text)


def test_figures_other_than_headline_mark_simulated_and_calibration_judges(tmp_path: Path) -> None:
    """Legends and judge axes mark simulated and calibration judges like the headline figure and the prose."""
    judges = {"judge-a": 1, "simjudge/careful": 2, "baseline/always-1": 3, "baseline/ceiling": 3}
    write_run(tmp_path, SyntheticSpec(n_base=12, judges=judges))
    ctx = load_context(tmp_path, resamples=20, seed=0)
    rq1 = run("rq1_metrics_topologies", ctx)
    legend = {t.get_text() for t in rq1.figures["rq1_difficulty"].legends[0].get_texts()}
    assert legend == {
        "judge-a",
        "simjudge/careful (simulated)",
        "baseline/always-1 (constant, calibration)",
        "baseline/ceiling (oracle, calibration)",
    }
    rows = {t.get_text() for t in rq1.figures["rq1_metric_with_gt"].axes[0].get_yticklabels()}
    assert "simjudge/careful (simulated)" in rows and "baseline/ceiling (oracle, calibration)" in rows
    assert "simjudge/careful" not in rows
    rq2 = run("rq2_agreement", ctx)
    ticks = {t.get_text() for t in rq2.figures["rq2_kappa_with_gt"].axes[0].get_xticklabels()}
    assert ticks == {"judge-a", "simjudge/careful (simulated)"}
    rq3 = run("rq3_convergence", ctx)
    bars = [t.get_text() for t in rq3.figures["rq3_verdict_distribution"].axes[0].get_yticklabels()]
    assert "simjudge/careful (simulated) · with_gt" in bars and "simjudge/careful · with_gt" not in bars


def test_bottom_legend_with_marked_names_stays_inside_the_figure(tmp_path: Path) -> None:
    """Long marked names ("… (constant, calibration)") once ran off both edges of a six-column legend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    judges = {"judge-a": 1, "simjudge/careful": 2, "baseline/always-1": 3, "baseline/ceiling": 3}
    write_run(tmp_path, SyntheticSpec(n_base=12, judges=judges))
    fig = run("rq1_metrics_topologies", load_context(tmp_path, resamples=20, seed=0)).figures[
        "rq1_difficulty"
    ]
    renderer = FigureCanvasAgg(fig).get_renderer()
    box, page = fig.legends[0].get_window_extent(renderer), fig.bbox
    assert box.x0 >= page.x0 and box.x1 <= page.x1 and box.y0 >= page.y0
    axes_bottom = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes)
    assert box.y1 <= axes_bottom + 1  # the legend does not cover the panels' axis labels
