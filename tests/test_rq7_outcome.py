"""The RQ7 outcome section on an offline interactive grid (simulated agents, baseline judges): figures
recomputed by hand from the run's own tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from agentjudge.analysis._context import load_context
from agentjudge.analysis.rq7_outcome import analyze

from agentjudge.commands.report import report_cli
from agentjudge.commands.run import run_cli

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"


@pytest.fixture(scope="module")
def rundir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rq7")
    pipeline = {
        "name": "rq7",
        "dataset": str(MINI),
        "limit": 10,
        "difficulties": ["easy", "hard"],
        "generators": [
            {"model": "sim/agent-stops-early", "generation": "interactive"},
            {"model": "sim/agent-mixed", "generation": "interactive"},
        ],
        "generator_trials": 3,
        "judges": ["baseline/always-1", "baseline/ceiling", "baseline/gt-rule"],
        "conditions": ["with_gt", "without_gt", "trajectory_with_gt", "trajectory_without_gt"],
        "scoring": "both",
        "cache": "cache.sqlite",
    }
    path = folder / "p.yaml"
    path.write_text(yaml.safe_dump(pipeline), encoding="utf-8")
    assert run_cli(path, folder / "run") == 0
    return folder / "run"


def test_rq7_tables_match_the_run(rundir: Path) -> None:
    ctx = load_context(rundir, resamples=200, seed=0)
    sec = analyze(ctx)
    assert sec.lacking is None
    scores = pd.read_parquet(rundir / "scores.parquet")
    strict = scores[scores.scoring_mode == "strict"]
    # state_match rate per generator and difficulty = the plain mean of the scores table
    sm = sec.tables["outcome_state_match"].set_index(["generator", "difficulty"])["state_match_rate"]
    expected = strict.groupby(["generator", "difficulty"]).state_match.mean()
    for key, value in expected.items():
        assert sm[key] == pytest.approx(value)
    assert set(sec.tables["outcome_state_match"]["generation"]) == {"interactive"}
    # without the read-only GTs (state_match vacuously true): the plain mean of the others, and their count
    state = sec.tables["outcome_state_match"].set_index(["generator", "difficulty"])
    changing = strict[strict.writes_done.notna()].groupby(["generator", "difficulty"]).state_match.mean()
    read_only = strict.writes_done.isna().groupby([strict.generator, strict.difficulty]).sum()
    assert read_only.sum() > 0 and len(changing) == len(expected)  # both kinds occur in this run
    for key, value in changing.items():
        assert state.loc[key, "state_match_rate_changing"] == pytest.approx(value)
        assert state.loc[key, "n_read_only"] == read_only[key]
        assert state.loc[key, "changing_ci_lo"] <= value <= state.loc[key, "changing_ci_hi"]
    assert (state["state_match_rate_changing"] <= state["state_match_rate"] + 1e-12).all()
    judges = sec.tables["outcome_judges"].set_index(["judge", "condition"])
    first = strict[(strict.trial == 0) & strict.writes_done.notna()]  # main slice; read-only GTs left out
    share = first.state_match.mean()
    assert 0 < share < 1
    # always-1 calls everything accomplished: accuracy = share of successes, kappa 0, AUC 0.5
    for cond in ("trajectory_with_gt", "trajectory_without_gt"):
        row = judges.loc[("baseline/always-1", cond)]
        assert row["accuracy"] == pytest.approx(share) and row["auc"] == pytest.approx(0.5)
        assert judges.loc[("baseline/ceiling", cond), "accuracy"] == 1.0
        assert judges.loc[("baseline/ceiling", cond), "kappa"] == pytest.approx(1.0)
    assert set(sec.tables["outcome_gt_gap"]["judge"]) == {
        "baseline/always-1",
        "baseline/ceiling",
        "baseline/gt-rule",
    }
    # generator pass^k on state_match: pass^1 = mean success over all trials; pass^3 = share of tasks
    # whose three trials all succeed (n = 3 = k, so the unbiased estimator is exact)
    curve = sec.tables["outcome_passk"].set_index(["generator", "k"])
    for gen, part in strict.groupby("generator"):
        assert curve.loc[(gen, 1), "pass_hat_k"] == pytest.approx(part.state_match.mean())
        all3 = part.groupby("record_id").state_match.all().mean()
        assert curve.loc[(gen, 3), "pass_hat_k"] == pytest.approx(all3)
    preds = sec.tables["outcome_predictors"]
    assert set(preds["score"]) >= {"p_tool", "p_value", "writes_done"}


def test_report_has_the_section_and_other_sections_still_run(rundir: Path) -> None:
    assert report_cli(rundir, resamples=100, seed=0) == 0
    text = (rundir / "report" / "report.md").read_text(encoding="utf-8")
    assert "RQ7 Outcomes" in text and "FAILED" not in text


def test_rq7_says_how_a_verdict_becomes_yes_or_no_and_names_calibration_judges(rundir: Path) -> None:
    """The 0.5 level is 'not accomplished' (tests/test_outcome_stats.py computes it by hand); the oracle and
    the constant judge are calibration points, not baselines, in the prose as in the figures."""
    sec = analyze(load_context(rundir, resamples=50, seed=0))
    text = "\n".join(sec.text)
    assert "A verdict above 0.5 is the call 'accomplished'" in text
    assert "0.5 counts as not accomplished" in text
    assert "- baseline/ceiling (oracle, calibration), trajectory_with_gt: accuracy" in text
    assert "- baseline/always-1 (constant, calibration), trajectory_with_gt: accuracy" in text
    assert "- baseline/gt-rule (baseline), trajectory_with_gt: accuracy" in text
    assert "ceiling (baseline)" not in text and "always-1 (baseline)" not in text
    legend = {t.get_text() for t in sec.figures["outcome_judges"].axes[0].get_legend().get_texts()}
    assert legend == {
        "baseline/always-1 (constant, calibration)",
        "baseline/ceiling (oracle, calibration)",
        "baseline/gt-rule (baseline)",
    }
