"""What the report and the CLI say is what they computed (newcomer-walkthrough fixes)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from agentjudge.commands.report import compare_cli, report_cli
from agentjudge.rundir.synthetic import SyntheticSpec, write_run
from agentjudge.types import Record


def test_compare_ranks_judges_within_each_run_for_robustness(tmp_path: Path) -> None:
    """ρ over weightings is per run: a run's rows equal what its own report computes."""
    a, b = tmp_path / "old", tmp_path / "new"
    write_run(a, SyntheticSpec(n_base=12, judges={"judge-a": 1, "judge-b": 2, "judge-c": 3}, seed=1))
    write_run(b, SyntheticSpec(n_base=12, judges={"judge-d": 1, "judge-e": 3, "judge-f": 2}, seed=2))
    out = tmp_path / "cmp"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare_cli([a, b], out, resamples=20, seed=0) == 0
        assert report_cli(a, resamples=20, seed=0) == 0
    joined = pd.read_csv(out / "tables" / "robust_weighting_rho.csv")
    assert set(joined["run"]) == {"old", "new"}
    assert (joined["n_judges"] == 3).all()  # never the six judges of both runs ranked together
    alone = pd.read_csv(a / "report" / "tables" / "robust_weighting_rho.csv")
    old = joined[joined["run"] == "old"].drop(columns="run").reset_index(drop=True)
    pd.testing.assert_frame_equal(old, alone[old.columns])
    md = (out / "report.md").read_text() + (out / "report.html").read_text()
    assert "within each run (new, old)" in md
    assert "judges ranked within each run" in md  # the first screen's published-comparison row says so


def test_score_says_what_state_match_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The GT's own calls reach its end state, no calls at all do not: "1 of 2 (50.0 %)" (over records whose
    GT changes something: a GT of reads alone ends where no calls end)."""
    import json

    from agentjudge.commands.data import score_cli
    from agentjudge.dataset.domains import load_domain
    from agentjudge.rundir.records import read_records, write_records

    def changes(record: Record) -> bool:
        ops = {t.name: t.op for t in load_domain(record.domain).tools}
        return any(ops[s.call.name] not in ("search", "get", "list", "aggregate") for s in record.gt)

    mini = read_records(Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl")
    records = [r for r in mini if changes(r)][:2]
    write_records(tmp_path / "records.jsonl", records)
    rows = [
        {"record_id": r.record_id("easy"), "base_id": r.id, "difficulty": "easy", "generator": "g",
         "trial": 0, "calls_json": json.dumps([s.call.model_dump() for s in r.gt] if i == 0 else []),
         "raw_output": "", "error": None}
        for i, r in enumerate(records)
    ]  # fmt: skip
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    assert (
        score_cli(tmp_path / "records.jsonl", tmp_path / "p.jsonl", tmp_path / "s.csv", "strict", False) == 0
    )
    assert list(pd.read_csv(tmp_path / "s.csv")["state_match"]) == [True, False]
    out = capsys.readouterr().out
    assert (
        "state_match: 1 of 2 scored predictions (50.0 %) end in the GT's end state when their calls are run "
        "in the record's environment\n"
    ) in out


def test_headline_dots_by_rank_calibration_apart_and_a_zoomed_axis_says_where_it_starts(
    tmp_path: Path,
) -> None:
    """Issue 36: headline.png lists judges by rank (best on top), the calibration judges under a rule in grey,
    on an axis that spans the values (dots, not bars: a start above 0 is said in the label)."""
    from agentjudge.analysis import headline, robustness
    from agentjudge.analysis._context import load_context
    from agentjudge.analysis.first_screen import ranking

    judges = {"judge-a": 1, "judge-b": 2, "judge-c": 3, "baseline/always-1": 3, "baseline/ceiling": 3}
    write_run(tmp_path, SyntheticSpec(n_base=12, judges=judges))
    ctx = load_context(tmp_path, resamples=20, seed=0)
    ax = headline.analyze(ctx).figures["headline"].axes[0]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    ranked = list(ranking(ctx, ctx.main)["judge"])
    assert ticks[: len(ranked)] == ranked  # the first screen's order, best first
    assert {t.split(" (")[0] for t in ticks[len(ranked) :]} == {"baseline/ceiling", "baseline/always-1"}
    assert all(t.get_color() != "black" for t in ax.get_yticklabels()[len(ranked) :])
    assert ax.yaxis_inverted() and ax.get_xlim()[0] > 0
    assert ax.get_xlabel() == f"alignment (%) (axis from {ax.get_xlim()[0]:.0f} %, not 0: dots, not bars)"
    zoomed = robustness.analyze(ctx).figures["robust_binary"].axes[0]  # all bars well above 15 %
    bottom = zoomed.get_ylim()[0]
    assert bottom > 0 and zoomed.get_ylabel() == f"alignment (%) — axis starts at {bottom:.0f}, not 0"
    strokes = [line for line in zoomed.lines if line.get_transform() is zoomed.transAxes]
    assert len(strokes) == 2  # the broken-axis sign across the foot of the y axis


def test_a_zoom_that_would_cut_off_only_a_few_points_starts_at_zero() -> None:
    from agentjudge.analysis._figures import grouped_bars

    table = pd.DataFrame({"condition": ["a", "a"], "judge": ["x", "y"], "align": [0.153, 0.95]})
    ax = grouped_bars(table, "condition", "judge", "align", {}, "t", "alignment (%)", zoom=True).axes[0]
    assert ax.get_ylim()[0] == 0.0 and ax.get_ylabel() == "alignment (%)"  # not "starts at 0, not 0"
    assert not [line for line in ax.lines if line.get_transform() is ax.transAxes]
