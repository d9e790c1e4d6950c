"""The report's first screen: ranking and calibration split, n/a never 0, degenerate runs without warnings."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentjudge.commands.report import compare_cli, report_cli
from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run

JUDGES = {"judge-a": 1, "judge-b": 2, "baseline/always-1": 3, "baseline/ceiling": 3}


def _report(tmp: Path, spec: SyntheticSpec, resamples: int = 100) -> tuple[int, str, str]:
    write_run(tmp, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any numpy / pandas warning fails the analysis that raised it
        code = report_cli(tmp, resamples=resamples, seed=0)
    out = tmp / "report"
    return code, (out / "report.md").read_text(), (out / "report.html").read_text()


@pytest.fixture(scope="module")
def normal(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    d = tmp_path_factory.mktemp("normal")
    code, md, html = _report(
        d, SyntheticSpec(n_base=24, judges=JUDGES, scoring_modes=("paper", "strict")), 200
    )
    assert code == 0
    return d, md, html


def test_ranking_leaves_out_oracle_and_constants(normal: tuple[Path, str, str]) -> None:
    d, md, _ = normal
    rank = pd.read_csv(d / "report" / "tables" / "first_ranking.csv")
    assert list(rank["judge"]) == sorted(
        ["judge-a", "judge-b"], key=lambda j: -rank.set_index("judge").loc[j, "align"]
    )
    assert (rank["rank"] == [1, 2]).all()
    cal = pd.read_csv(d / "report" / "tables" / "first_calibration.csv")
    assert set(cal["judge"]) == {"baseline/always-1", "baseline/ceiling"}
    assert set(cal["kind"]) == {"constant", "oracle"}
    # κ and the guide see rankable judges only: one pair
    pairs = pd.read_csv(d / "report" / "tables" / "rq2_pairs.csv")
    assert set(pairs["judge_a"]) | set(pairs["judge_b"]) == {"judge-a", "judge-b"}
    guide = pd.read_csv(d / "report" / "tables" / "guide.csv")
    assert set(guide["leader"]) | set(guide["runner_up"]) <= {"judge-a", "judge-b"}
    assert "published, not re-measured here" in md and "Prompt family **agentjudge**" in md


def test_ranking_alignment_and_skill_match_hand_computation(normal: tuple[Path, str, str]) -> None:
    d, _, _ = normal
    raw = pd.read_parquet(d / "judgments.parquet")
    raw = raw[(raw["scoring_mode"] == "strict") & raw["condition"].isin(["with_gt", "without_gt"])]
    rank = pd.read_csv(d / "report" / "tables" / "first_ranking.csv").set_index("judge")
    for judge in ("judge-a", "judge-b"):
        part = raw[(raw["judge"] == judge) & raw["verdict"].notna()]
        ref = part["reference"].to_numpy()
        align = np.mean(1 - np.abs(ref - part["verdict"].to_numpy()))
        ceiling = np.mean(1 - np.abs(ref - np.floor(ref * 2 + 0.5) / 2))
        best_const = max(np.mean(1 - np.abs(ref - c)) for c in (0.0, 0.5, 1.0))
        assert rank.loc[judge, "align"] == pytest.approx(align)
        assert rank.loc[judge, "skill"] == pytest.approx((align - best_const) / (ceiling - best_const))
        assert rank.loc[judge, "ci_lo"] < align < rank.loc[judge, "ci_hi"]


def test_markdown_is_short_and_html_folds_the_rest(normal: tuple[Path, str, str]) -> None:
    _, md, html = normal
    assert len(md.encode()) < 15_000
    assert html.count("<details>") >= 11 and "class='banner'" in html
    assert md.index("Judge ranking") < md.index("Everything else")


@pytest.mark.parametrize(
    "case",
    [
        "all_failed",
        "one_judge",
        "one_condition",
        "only_calibration_judges",
    ],
)
def test_degenerate_runs_report_without_warnings(tmp_path: Path, case: str) -> None:
    spec = {
        "all_failed": SyntheticSpec(n_base=12, judges=JUDGES, failure_rate=1.0),
        "one_judge": SyntheticSpec(n_base=12, judges={"judge-a": 1}),
        "one_condition": SyntheticSpec(n_base=12, judges=JUDGES, variants=[Variant("with_gt")]),
        "only_calibration_judges": SyntheticSpec(
            n_base=12, judges={"baseline/always-1": 1, "baseline/ceiling": 1}
        ),
    }[case]
    code, md, html = _report(tmp_path, spec)
    assert code == 0, md
    assert "FAILED" not in md and "FAILED" not in html
    assert "nan %" not in md and "| nan" not in md and " nan " not in md
    if case == "all_failed":
        assert "n/a (no parsed verdict)" in md and "| — | judge-a |" in md
    if case in ("one_judge", "only_calibration_judges"):
        assert "at least two rankable judges" in md


def test_compare_joins_runs_with_paired_deltas(tmp_path: Path) -> None:
    a, b = tmp_path / "old", tmp_path / "new"
    write_run(a, SyntheticSpec(n_base=12, judges={"judge-a": 1, "judge-b": 2}, seed=1))
    write_run(b, SyntheticSpec(n_base=12, judges={"judge-a": 1, "judge-c": 2}, seed=1))
    out = tmp_path / "cmp"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare_cli([a, b], out, resamples=100, seed=0) == 0
    rank = pd.read_csv(out / "tables" / "first_ranking.csv")
    assert set(rank["judge"]) == {"judge-a @ old", "judge-a @ new", "judge-b", "judge-c"}
    deltas = pd.read_csv(out / "tables" / "compare_paired_deltas.csv")
    pairs = {frozenset((r.judge_a, r.judge_b)): r for r in deltas.itertuples(index=False)}
    same = pairs[frozenset(("judge-a @ old", "judge-a @ new"))]
    # same seed and spec: the records, references and judge-a's verdicts are identical in both runs
    assert same.shared_rows > 0 and same.delta == pytest.approx(0.0, abs=1e-12)
    other = pairs[frozenset(("judge-a @ old", "judge-c"))]
    ja = pd.read_parquet(a / "judgments.parquet")
    jc = pd.read_parquet(b / "judgments.parquet")
    keys = ["record_id", "generator", "condition", "metric"]
    left = ja[(ja["judge"] == "judge-a") & ja["verdict"].notna()]
    right = jc[(jc["judge"] == "judge-c") & jc["verdict"].notna()]
    both = left.merge(right, on=keys, suffixes=("_a", "_c"))
    mu_a = 1 - (both["reference_a"] - both["verdict_a"]).abs()
    mu_c = 1 - (both["reference_c"] - both["verdict_c"]).abs()
    sign = 1 if other.judge_a == "judge-a @ old" else -1
    assert other.shared_rows == len(both)
    assert other.delta == pytest.approx(sign * float((mu_a - mu_c).mean()))
    assert compare_cli([a], out, resamples=10, seed=0) == 2


_PAIR = ["judge", "record_id", "generator", "generator_trial", "metric"]


def _cot_sides(raw: pd.DataFrame, judges: list[str], cond: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    r = raw[(raw["scoring_mode"] == "strict") & (raw["condition"] == cond) & raw["judge"].isin(judges)]
    return r[r["cot"]].set_index(_PAIR), r[~r["cot"]].set_index(_PAIR)


def _mu(rows: pd.DataFrame) -> float:
    return float((1 - (rows["reference"] - rows["verdict"]).abs()).mean())


def _paired_cot_delta(raw: pd.DataFrame, judges: list[str], cond: str) -> float:
    """Alignment with CoT minus without over the verdict rows answered (not failed) at both levels."""
    on, off = _cot_sides(raw, judges, cond)
    both = on.index[on["verdict"].notna()].intersection(off.index[off["verdict"].notna()])
    return _mu(on.loc[both]) - _mu(off.loc[both])


def _unpaired_cot_delta(raw: pd.DataFrame, judges: list[str], cond: str) -> float:
    """The same, each level over its own answered rows (what a failure on one side would give)."""
    on, off = _cot_sides(raw, judges, cond)
    return _mu(on[on["verdict"].notna()]) - _mu(off[off["verdict"].notna()])


def test_compare_pools_variant_deltas_over_judges_with_both_levels(tmp_path: Path) -> None:
    """Run A has CoT on and off, run B has CoT off only: the pooled CoT delta of the join is run A's."""
    a, b = tmp_path / "cot", tmp_path / "plain"
    both = [Variant(c, cot=cot) for c in ("with_gt", "without_gt") for cot in (False, True)]
    write_run(a, SyntheticSpec(n_base=12, judges={"judge-a": 1, "judge-b": 2}, variants=both, seed=1))
    write_run(b, SyntheticSpec(n_base=12, judges={"judge-c": 1}, seed=2))
    out = tmp_path / "cmp"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report_cli(a, resamples=50, seed=0) == 0
        assert compare_cli([a, b], out, resamples=50, seed=0) == 0
    joined = pd.read_csv(out / "tables" / "rq5_deltas_pooled.csv").set_index("condition")
    single = pd.read_csv(a / "report" / "tables" / "rq5_deltas_pooled.csv").set_index("condition")
    # hand computation over run A only: mean mu at cot=True minus mean mu at cot=False over the rows
    # answered at both levels (2 % of verdicts fail, on one side or the other: not the unpaired means)
    raw = pd.read_parquet(a / "judgments.parquet")
    for cond in ("with_gt", "without_gt"):
        want = _paired_cot_delta(raw, ["judge-a", "judge-b"], cond)
        assert want != pytest.approx(_unpaired_cot_delta(raw, ["judge-a", "judge-b"], cond))
        assert joined.loc[cond, "delta"] == pytest.approx(want)
        assert single.loc[cond, "delta"] == pytest.approx(want)
        assert joined.loc[cond, "n_judges"] == 2 and joined.loc[cond, "judges_left_out"] == "judge-c"
    md = (out / "report.md").read_text() + (out / "report.html").read_text()
    assert "left out, one side only: judge-c" in md


def test_variant_delta_is_na_when_no_judge_has_both_levels(tmp_path: Path) -> None:
    a, b = tmp_path / "on", tmp_path / "off"
    on = [Variant(c, cot=True) for c in ("with_gt", "without_gt")]
    write_run(a, SyntheticSpec(n_base=12, judges={"judge-a": 1}, variants=on, seed=1))
    write_run(b, SyntheticSpec(n_base=12, judges={"judge-c": 1}, seed=2))
    out = tmp_path / "cmp"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare_cli([a, b], out, resamples=50, seed=0) == 0
    html = (out / "report.html").read_text()
    assert "pooled delta n/a (no rankable judge that reads the prompt has verdicts at both levels" in html
    pooled = pd.read_csv(out / "tables" / "rq5_deltas_pooled.csv")
    assert pooled.empty


def test_compare_without_shared_rows_has_no_paired_lead_or_recommendation(tmp_path: Path) -> None:
    """Two runs graded different generator outputs: the order across runs has no paired CI."""
    a, b = tmp_path / "old", tmp_path / "new"
    write_run(a, SyntheticSpec(n_base=12, judges={"judge-a": 1}, generators={"sim/one": 0.8}, seed=1))
    write_run(b, SyntheticSpec(n_base=12, judges={"judge-c": 1}, generators={"sim/two": 0.5}, seed=2))
    out = tmp_path / "cmp"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare_cli([a, b], out, resamples=50, seed=0) == 0
    rank = pd.read_csv(out / "tables" / "first_ranking.csv")
    assert list(rank["run"]) != [rank["run"].iloc[0]] * 2 and len(rank) == 2
    assert not rank["shares_rows_with_next"].iloc[0]
    assert rank[["gap_ci_lo", "gap_ci_hi"]].iloc[0].isna().all()
    md = (out / "report.md").read_text()
    assert "n/a (no shared rows)" in md and "| — (last) |" in md
    assert "WARNING: adjacent judges from different runs share no verdict rows" in md
    assert "Overall: no recommendation between" in md and "significant" not in md.split("Overall:")[1][:400]
    guide = pd.read_csv(out / "tables" / "guide.csv")
    assert not guide["decisive"].any() and not guide["shares_rows"].any()
    assert "CI n/a (no shared rows between their runs): not comparable" in md


def test_same_run_lead_keeps_its_paired_ci(normal: tuple[Path, str, str]) -> None:
    d, md, _ = normal
    rank = pd.read_csv(d / "report" / "tables" / "first_ranking.csv")
    assert rank["shares_rows_with_next"].all() and np.isfinite(rank["gap_ci_lo"].iloc[0])
    assert "| — (last) |" in md and "WARNING" not in md
    assert "its CI excludes 0 (significant)" in md or "its CI contains 0 (not significant)" in md


def test_skill_notes_distinguish_below_zero_from_base_rate() -> None:
    from agentjudge.analysis.first_screen import _ranking_notes

    rank = pd.DataFrame(
        {
            "judge": ["bad", "edge", "flat", "good"],
            "skill": [-0.31, -0.89, 0.02, 0.05],
            "skill_ci_lo": [-0.55, -2.67, -0.04, 0.01],
            "skill_ci_hi": [-0.10, -0.001, 0.08, 0.09],  # edge: the issue's [-2.67, 0.00], not "≈ 0"
            "best_constant": ["1", "1", "1", "1"],
        }
    )
    notes = _ranking_notes(rank)
    below = "is below the base rate — worse than a constant judge that always answers 1."
    assert notes == [
        f"- bad: skill -0.31 [-0.55, -0.10] {below}",
        f"- edge: skill -0.89 [-2.67, -0.00] {below}",
        "- flat: skill 0.02 [-0.04, 0.08] ≈ 0 — no better than the base rate (a constant judge).",
    ]


def test_record_sources_alignment_equals_headline_on_single_source_run(tmp_path: Path) -> None:
    """With CoT and temperature variants present, the sources section uses the headline's slice."""
    variants = [
        Variant(c, cot=cot, temperature=t)
        for c in ("with_gt", "without_gt")
        for cot, t in ((False, float("nan")), (True, float("nan")), (False, 0.7))
    ]
    code, md, html = _report(tmp_path, SyntheticSpec(n_base=12, judges=JUDGES, variants=variants), 50)
    assert code == 0
    tables = tmp_path / "report" / "tables"
    src = pd.read_csv(tables / "alignment_by_source.csv")
    head = pd.read_csv(tables / "headline.csv")
    head = head[head["scoring_mode"] == "strict"]
    keys = ["judge", "condition"]
    both = src.merge(head, on=keys, suffixes=("_src", "_head"))
    assert len(both) == len(head) == len(src) == 2 * len(JUDGES)
    assert both["align_src"].to_numpy() == pytest.approx(both["align_head"].to_numpy())
    assert both["ceiling_src"].to_numpy() == pytest.approx(both["ceiling_head"].to_numpy())
    # the old section pooled every variant: the CoT / temperature rows would move these numbers
    allrows = pd.read_parquet(tmp_path / "judgments.parquet")
    assert allrows["cot"].any() and allrows["temperature"].notna().any()
    assert "Record sources: all synthetic" in html and "synthetic vs imported" not in html


def test_calibration_judges_stay_out_of_rank_correlations_and_counts(tmp_path: Path) -> None:
    judges = {"judge-a": 1, "judge-b": 2, "judge-c": 3, "baseline/always-1": 3, "baseline/ceiling": 3}
    variants = [Variant(c, cot=cot) for c in ("with_gt", "without_gt") for cot in (False, True)]
    code, md, html = _report(tmp_path, SyntheticSpec(n_base=12, judges=judges, variants=variants), 50)
    assert code == 0
    tables = tmp_path / "report" / "tables"
    rankable = {"judge-a", "judge-b", "judge-c"}
    assert set(pd.read_csv(tables / "robust_weightings.csv")["judge"]) == rankable
    assert set(pd.read_csv(tables / "robust_binary_collapse.csv")["judge"]) == rankable
    assert (pd.read_csv(tables / "robust_binary_rho.csv")["n_judges"] == 3).all()
    assert "over 3 rankable judges" in html
    # RQ5: 3 rankable judges × 2 conditions, not 5 × 2
    assert "of 6; rankable judges that read the prompt only" in html and "of 10" not in html


def test_small_wording_fixes(tmp_path: Path) -> None:
    """Headline legend marks simulated and calibration judges; the recommendation names a simulated
    leader; one topology is 'n/a: one topology'; no 'nan = model default'; singular 'pair'."""
    from agentjudge.analysis import headline, rq1_metrics_topologies
    from agentjudge.analysis._context import load_context

    judges = {"simjudge/lenient": 1, "judge-b": 3, "baseline/always-1": 3, "baseline/ceiling": 3}
    code, md, html = _report(tmp_path, SyntheticSpec(n_base=12, judges=judges), 50)
    assert code == 0
    ctx = load_context(tmp_path, resamples=20, seed=0)
    ticks = [t.get_text() for t in headline.analyze(ctx).figures["headline"].axes[0].get_yticklabels()]
    assert set(ticks) == {
        "simjudge/lenient (simulated)",
        "judge-b",
        "baseline/always-1 (constant, calibration)",
        "baseline/ceiling (oracle, calibration)",
    }
    assert "nan = model default" not in html and "1 pairs" not in html
    assert "1 judge pair." in html and "), 1 pair |" in md
    rank = pd.read_csv(tmp_path / "report" / "tables" / "first_ranking.csv")
    assert rank["judge"].iloc[0] == "simjudge/lenient"  # tier 1 beats tier 3 in the synthetic run
    assert "**simjudge/lenient** (a SIMULATED judge, not a model)" in md
    one = ctx.main[ctx.main["topology"].astype(str) == str(ctx.main["topology"].iloc[0])]
    ctx.__dict__["_store"]["main"] = one
    text = " ".join(rq1_metrics_topologies.analyze(ctx).text)
    assert "hardest / easiest topology n/a: one topology" in text and "easiest" not in text.replace(
        "hardest / easiest", ""
    )


def test_undefined_jury_gives_its_reason(normal: tuple[Path, str, str]) -> None:
    from agentjudge.analysis._context import Section, load_context
    from agentjudge.analysis.first_screen import published_rows

    d, _, _ = normal
    ctx = load_context(d, resamples=10, seed=0)
    jury = pd.DataFrame(
        [
            {
                "condition": "with_gt",
                "jury": np.nan,
                "best_judge": "judge-a",
                "best_align": 0.8,
                "delta": np.nan,
                "ci_lo": np.nan,
                "ci_hi": np.nan,
            }
        ]
    )
    rq2 = Section("rq2", "RQ2")
    rq2.tables["rq2_jury_vs_best"] = jury
    rows = published_rows(ctx, {"rq2": rq2}, pd.DataFrame())
    text = rows[rows["statistic"].str.startswith("soft jury")]["this run"].iloc[0]
    assert text.startswith(
        "jury n/a (no verdict row where every juror gave a parsed verdict), best judge-a 80.0 %"
    )


def test_banner_words_simulated_agents_apart_from_gt_perturbations() -> None:
    from agentjudge.analysis._context import Context
    from agentjudge.analysis.first_screen import banner

    ctx = Context.__new__(Context)
    ctx.meta = {"generators": {"agent-x": {"model": "sim/agent-careless"}}}
    ctx.generators = ["sim/agent-hasty", "agent-x", "sim/typo", "openai/gpt-4o"]
    ctx.judges = []
    lines = banner(ctx)
    agents = next(line for line in lines if line.startswith("SIMULATED agents"))
    assert "simulated agents acting in the environment with planted errors, not models" in agents
    assert "sim/agent-hasty" in agents and "agent-x" in agents and "sim/typo" not in agents
    gens = next(line for line in lines if line.startswith("SIMULATED generators"))
    assert "seeded perturbations of the GT" in gens
    assert "sim/typo" in gens and "sim/agent-hasty" not in gens and "agent-x" not in gens
    assert not any("openai/gpt-4o" in line for line in lines)


def test_prompt_factor_deltas_pool_judges_that_read_the_prompt_and_calibration_stays_out(
    tmp_path: Path,
) -> None:
    """A baseline is a rule that never reads the prompt: the pooled CoT delta (here and beside the paper) is
    the mean over the other rankable judges, computed by hand; the RQ3 share of 1.0 verdicts and the RQ1
    difficulty-curve count leave the constant judge out."""
    judges = {"judge-a": 1, "judge-b": 2, "baseline/majority": 3, "baseline/always-1": 3}
    both = [Variant(c, cot=cot) for c in ("with_gt", "without_gt") for cot in (False, True)]
    code, md, html = _report(tmp_path, SyntheticSpec(n_base=12, judges=judges, variants=both, seed=3), 50)
    assert code == 0
    pooled = pd.read_csv(tmp_path / "report" / "tables" / "rq5_deltas_pooled.csv").set_index("condition")
    raw = pd.read_parquet(tmp_path / "judgments.parquet")
    for cond in ("with_gt", "without_gt"):
        want = _paired_cot_delta(raw, ["judge-a", "judge-b"], cond)
        assert pooled.loc[cond, "delta"] == pytest.approx(want)
        assert pooled.loc[cond, "n_judges"] == 2
    assert "not the baseline baseline/majority: rules that the prompt&#x27;s wording, format and" in html
    # RQ3: the share of 1.0 verdicts over rankable judges (always-1's 100 % left out)
    dist = pd.read_csv(tmp_path / "report" / "tables" / "rq3_verdict_distribution.csv")
    ranked = dist[dist["judge"] != "baseline/always-1"]
    for cond in ("with_gt", "without_gt"):
        share = 100 * ranked.loc[ranked["condition"] == cond, "1.0"].mean()
        assert f"{cond}: share of 1.0 verdicts {share:.1f} % (judge × difficulty mean, rankable" in html
    # RQ1: curves of the three rankable judges only (2 conditions × 2 generators × 3 judges)
    assert "curves of rankable judges" in html and " of 12 (condition, generator, judge) curves" in html


def test_a_judge_that_chain_of_thought_does_not_move_is_named_beside_its_zero_bar(tmp_path: Path) -> None:
    """judge-b is given its CoT-off verdicts with CoT on (as simjudge/anchored, which ignores CoT): its
    delta is exactly 0 in every resample, and the section says why its bar is 0; judge-a, which CoT
    moves, is not named."""
    judges = {"judge-a": 1, "judge-b": 2, "baseline/majority": 3}
    both = [Variant(c, cot=cot) for c in ("with_gt", "without_gt") for cot in (False, True)]
    write_run(tmp_path, SyntheticSpec(n_base=12, judges=judges, variants=both, seed=3))
    path = tmp_path / "judgments.parquet"
    raw = pd.read_parquet(path)
    coords = [c for c in raw.columns if c not in ("cot", "verdict", "parse_ok", "rationale", "judge_error")]
    off = raw[(raw["judge"] == "judge-b") & ~raw["cot"]].set_index(coords)
    on = (raw["judge"] == "judge-b") & raw["cot"]
    keys = pd.MultiIndex.from_frame(raw.loc[on, coords])
    for column in ("verdict", "parse_ok", "judge_error"):
        raw.loc[on, column] = off[column].reindex(keys).to_numpy()
    raw.to_parquet(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report_cli(tmp_path, resamples=50, seed=0) == 0
    deltas = pd.read_csv(tmp_path / "report" / "tables" / "rq5_deltas.csv")
    b = deltas[deltas["judge"] == "judge-b"]
    assert len(b) == 2 and (b[["delta", "ci_lo", "ci_hi"]] == 0).all().all()
    md = (tmp_path / "report" / "report.md").read_text()
    html = (tmp_path / "report" / "report.html").read_text()
    said = "judge-b: Δ exactly 0 in every resample for cot True (with_gt, without_gt): the same alignment"
    assert said in html or said in md
    assert "judge-a: Δ exactly 0" not in html + md


def test_two_judges_with_the_same_verdicts_are_one_judge_in_the_agreement(tmp_path: Path) -> None:
    """Without GT judge-b gives judge-a's verdicts on every row (as baseline/gt-rule is baseline/rule
    without GT): judge-b is named and its pairs are left out of the mean agreement, here and beside the
    paper; with GT every pair counts."""
    judges = {"judge-a": 2, "judge-b": 3, "judge-c": 1}  # judge-c the most capable: it leads the guide
    write_run(tmp_path, SyntheticSpec(n_base=12, judges=judges, seed=4))
    path = tmp_path / "judgments.parquet"
    rows = pd.read_parquet(path)
    key = ["record_id", "generator", "generator_trial", "condition", "metric", "scoring_mode", "trial"]
    key = [k for k in key if k in rows.columns]
    a = rows[(rows["judge"] == "judge-a") & (rows["condition"] == "without_gt")].set_index(key)["verdict"]
    b = (rows["judge"] == "judge-b") & (rows["condition"] == "without_gt")
    rows.loc[b, "verdict"] = a.reindex(pd.MultiIndex.from_frame(rows.loc[b, key])).to_numpy()
    rows.loc[b, "parse_ok"] = rows.loc[b, "verdict"].notna().to_numpy()
    # and judge-c says with GT what it says without: its GT gain is a measured 0, said to be one
    at = [k for k in key if k != "condition"]
    c = rows[(rows["judge"] == "judge-c") & (rows["condition"] == "without_gt")].set_index(at)
    cw = (rows["judge"] == "judge-c") & (rows["condition"] == "with_gt")
    same_c = c.reindex(pd.MultiIndex.from_frame(rows.loc[cw, at]))
    rows.loc[cw, "verdict"] = same_c["verdict"].to_numpy()
    rows.loc[cw, "parse_ok"] = same_c["parse_ok"].to_numpy()
    rows.to_parquet(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report_cli(tmp_path, resamples=50, seed=0) == 0
    md = (tmp_path / "report" / "report.md").read_text() + (tmp_path / "report" / "report.html").read_text()
    pairs = pd.read_csv(tmp_path / "report" / "tables" / "rq2_pairs.csv")
    without = pairs[pairs["condition"] == "without_gt"]
    same = without[without["same_verdicts"]]
    assert list(zip(same["judge_a"], same["judge_b"], strict=True)) == [("judge-a", "judge-b")]
    assert (same["agreement"] == 1.0).all()
    assert not pairs.loc[pairs["condition"] == "with_gt", "same_verdicts"].any()
    # judge-b is judge-a here: its pairs go, with judge-a and with judge-c (judge-a would count twice)
    kept = without[~(without["judge_a"] == "judge-b") & ~(without["judge_b"] == "judge-b")]
    assert list(zip(kept["judge_a"], kept["judge_b"], strict=True)) == [("judge-a", "judge-c")]
    assert f"without_gt: mean raw agreement {100 * kept['agreement'].mean():.1f} %" in md
    assert "left out: judge-b, which gives judge-a" in md
    assert "1 pair (judge-b left out: the same verdicts as judge-a)" in md
    assert "3 pairs" in md  # with GT every pair counts
    # the guide: judge-a and judge-b have one alignment without GT; the one not named runner-up is a tie
    guide = pd.read_csv(tmp_path / "report" / "tables" / "guide.csv", keep_default_na=False)
    without_rows = guide[guide["condition"] == "without_gt"]
    assert (without_rows["leader"] == "judge-c").any()  # the tie is shown at least once
    for r in without_rows.itertuples(index=False):
        if r.leader == "judge-c":
            assert {r.runner_up, r.runner_up_tied_with} == {"judge-a", "judge-b"}
            assert f"runner-up {r.runner_up} " in md and f"(tied with {r.runner_up_tied_with})" in md
        else:
            assert {r.leader, r.runner_up} == {"judge-a", "judge-b"} and float(r.margin) == 0.0
    assert "judge-c: +0.0 pp [+0.0, +0.0] — the same alignment with and without GT in every resample" in md
    assert "judge-a: +0.0 pp [+0.0, +0.0]" not in md


def test_a_run_whose_only_rankable_judges_are_baselines_says_prompt_effects_are_na(tmp_path: Path) -> None:
    """No judge that reads the prompt: the 0.5-default and CoT effects are n/a with the reason, never a
    pooled 0, and the report still builds (no figure of nothing)."""
    judges = {"baseline/majority": 1, "baseline/always-1": 3}
    variants = [
        Variant(c, cot=cot, default_mode=mode)
        for c in ("with_gt", "without_gt")
        for cot, mode in ((False, "1.0"), (True, "1.0"), (False, "0.5"))
    ]
    code, md, html = _report(tmp_path, SyntheticSpec(n_base=12, judges=judges, variants=variants), 50)
    assert code == 0 and "FAILED" not in md
    assert "0.5-default prompt: n/a (no rankable judge that reads the prompt in this run" in html
    assert "pooled delta n/a (no rankable judge that reads the prompt has verdicts at both levels" in html
    assert pd.read_csv(tmp_path / "report" / "tables" / "rq5_deltas_pooled.csv").empty
    assert not (tmp_path / "report" / "figures" / "rq5_deltas.png").exists()


def test_ranking_carries_per_condition_cis_and_the_calibration_rows(normal: tuple[Path, str, str]) -> None:
    """Issue 36: with-GT and without-GT columns with their CIs; the calibration judges as unranked rows of
    the same table (the scale the figures are read on), the ranking CSV still rankable judges only."""
    d, md, _ = normal
    head = "| rank | judge | kind | alignment % [95 % CI] | with GT % [CI] | without GT % [CI] |"
    assert head in md
    rank = pd.read_csv(d / "report" / "tables" / "first_ranking.csv").set_index("judge")
    a = rank.loc["judge-a"]
    assert a["with_gt_ci_lo"] < a["with_gt"] < a["with_gt_ci_hi"]
    assert (
        f"| {100 * a['with_gt']:.1f} [{100 * a['with_gt_ci_lo']:.1f}, {100 * a['with_gt_ci_hi']:.1f}] |" in md
    )
    assert "| — | baseline/ceiling | oracle (calibration) |" in md
    assert "| — | baseline/always-1 | constant (calibration) |" in md
    assert "baseline/ceiling" not in rank.index
    assert md.index("| — | baseline/ceiling") < md.index("Main table")


def test_published_figures_only_beside_a_real_judge(tmp_path: Path) -> None:
    """A run of simulated and baseline judges only says in one line why the paper's real-model figures are
    not set beside its own; the rows stay in the CSV."""
    spec = SyntheticSpec(
        n_base=12, judges={"simjudge/lenient": 1, "baseline/rule": 2, "baseline/always-1": 3}
    )
    code, md, _ = _report(tmp_path, spec)
    assert code == 0
    assert "Not shown: every judge of this run is simulated, a baseline or a plug-in" in md
    assert "| statistic | this run |" not in md
    assert (tmp_path / "report" / "tables" / "first_published.csv").exists()
