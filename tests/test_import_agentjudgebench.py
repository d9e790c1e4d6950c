"""`agentjudge import agentjudgebench`: the paper's released outputs and verdicts as a run folder.

The fixtures are written field by field from the publication pipeline's ``output_map`` over our mini
records: ``programmatic_judge_response`` is the published scoring function's output (our ``paper`` mode,
equal to it on every input: FIDELITY row 1 and tests/test_scoring_reference.py), each per-record
``overall_llm_alignment_percentage`` follows the publication's ``ComputeLLMVsProgrammaticAccuracy`` (per
metric 1 − |programmatic − llm|, 0 when the judge gave no value, mean × 100, two decimals), and the files
are laid out as the raw pipeline and as the per-judge release. Planted: failed graph executions (rows whose
every field is None), calls as JSON strings (OpenAI style, arguments a string), missing metrics, a judge call
that failed in the primary output and succeeded in a ``nullrerun`` file, one that failed in both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import fmean
from typing import Any

import pandas as pd
import pytest

from agentjudge.commands.report import report_cli
from agentjudge.commands.run import run_cli
from agentjudge.rundir.records import read_records
from agentjudge.scoring.scorer import score_calls
from agentjudge.tracks.agentjudgebench.importer import import_release

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "data" / "mini" / "records.jsonl"
KEYS = {
    "tool": "tool_selection_accuracy",
    "param": "parameter_structure_accuracy",
    "seq": "sequence_accuracy",
    "cov": "query_coverage_accuracy",
}
GENERATORS = ("llama_3_1_8b_instruct", "gpt_5_4")
JUDGES = ("qwq_32b", "gpt_oss_20b")
DIFFS = ("easy", "hard")
N_RECORDS = 6


def generated(record: Any, generator: str, difficulty: str, index: int) -> list[dict[str, Any]]:
    calls = [{"name": s.call.name, "arguments": dict(s.call.arguments)} for s in record.gt]
    if generator == "llama_3_1_8b_instruct" and (index + len(difficulty)) % 2 == 0:
        calls = calls[:-1]  # forgot the last step
    if generator == "gpt_5_4" and difficulty == "hard" and index % 3 == 0:
        calls = list(reversed(calls))  # out of order
    return calls


def programmatic(record: Any, calls: list[dict[str, Any]]) -> dict[str, float]:
    from agentjudge.types import ToolCall

    scores = score_calls(
        record.expected_calls,
        [ToolCall(name=c["name"], arguments=c["arguments"]) for c in calls],
        "paper",
        edges=record.edges,
        tools=record.tools,
    )
    return {m: round(float(scores[f"p_{m}"]), 4) for m in KEYS}


def verdicts(judge: str, prog: dict[str, float], index: int) -> dict[str, float | None]:
    if judge == "qwq_32b":  # a careful three-level judge
        out: dict[str, float | None] = {
            m: 1.0 if v >= 0.99 else 0.5 if v >= 0.5 else 0.0 for m, v in prog.items()
        }
    else:  # a lenient one
        out = {m: 1.0 for m in prog}
    if judge == "gpt_oss_20b" and index % 4 == 1:
        out["seq"] = None  # no value for a metric
    return out


def overall(prog: dict[str, float], judged: dict[str, float | None]) -> float:
    """The publication's per-record alignment (ComputeLLMVsProgrammaticAccuracy)."""
    matches = [0.0 if judged[m] is None else 1.0 - abs(judged[m] - prog[m]) for m in KEYS]  # type: ignore[operator]
    return round(sum(matches) / len(matches) * 100, 2)


def response(judged: dict[str, float | None]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for metric, value in judged.items():
        body[KEYS[metric]] = {"justification": f"{metric} looked at"} | (
            {} if value is None else {"accuracy": value}
        )
    body["overall_assessment"] = "fixture"
    return body


def build_release(folder: Path, layout: str) -> dict[str, Any]:
    """Write the fixture release; returns what was planted (expected cells and counts)."""
    records = read_records(RECORDS)[:N_RECORDS]
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    reruns: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    expected: dict[tuple[str, str, str, str], list[float]] = {}
    planted = {"failure_rows": 0, "from_reruns": 0, "lost": 0, "missing_metrics": 0}
    for gi, gen in enumerate(GENERATORS):
        for judge in JUDGES:
            for diff in DIFFS:
                cell = rows.setdefault((gen, judge, diff), [])
                for index, record in enumerate(records):
                    calls = generated(record, gen, diff, index)
                    prog = programmatic(record, calls)
                    with_gt = verdicts(judge, prog, index)
                    without = verdicts(judge, prog, index + 1)
                    as_string = judge == "gpt_oss_20b"  # this judge's files carry the calls as JSON strings
                    shown = (
                        json.dumps(
                            [
                                {
                                    "type": "function",
                                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                                }
                                for c in calls
                            ]
                        )
                        if as_string
                        else calls
                    )
                    row = {
                        "id": record.id,
                        "dag_type": record.topology,
                        "user_message": record.queries[diff],
                        "generated_tool_calls": shown,
                        "judge_response": response(with_gt),
                        "judge_response_no_gt": response(without),
                        "programmatic_judge_response": {KEYS[m]: {"accuracy": v} for m, v in prog.items()},
                        "per_metric_comparison": {},
                        "overall_llm_alignment_percentage": overall(prog, with_gt),
                        "per_metric_comparison_no_gt": {},
                        "overall_llm_alignment_percentage_no_gt": overall(prog, without),
                    }
                    planted["missing_metrics"] += sum(v is None for v in with_gt.values())
                    planted["missing_metrics"] += sum(v is None for v in without.values())
                    failed_first = (
                        gen == "gpt_5_4" and judge == "qwq_32b" and diff == "hard" and index in (2, 4)
                    )
                    if failed_first:  # the judge call failed in the primary run: null alignment, no response
                        primary = dict(row, judge_response=None, overall_llm_alignment_percentage=None)
                        cell.append(primary)
                        if index == 2:  # a re-run recovered it
                            reruns.setdefault((gen, judge, diff), []).append(row)
                            planted["from_reruns"] += 1
                        else:
                            planted["lost"] += 1
                            row = primary
                    else:
                        cell.append(row)
                    for condition, key in (
                        ("with_gt", "overall_llm_alignment_percentage"),
                        ("without_gt", "overall_llm_alignment_percentage_no_gt"),
                    ):
                        if row[key] is not None:
                            expected.setdefault((gen, judge, diff, condition), []).append(row[key])
                if gi == 0 and judge == "qwq_32b":  # failed graph executions: every field None
                    cell += [{k: None for k in cell[0]} for _ in range(2)]
                    planted["failure_rows"] += 2
    folder.mkdir(parents=True, exist_ok=True)
    if layout == "raw":
        for (gen, judge, diff), cell in rows.items():
            out = folder / gen / f"judged_by_{judge}"
            out.mkdir(parents=True, exist_ok=True)
            (out / f"judge_{gen}_{judge}_{diff}_output_2026-03-01_10-00-00.json").write_text(
                json.dumps(cell, indent=1)
            )
            if (gen, judge, diff) in reruns:
                rerun = out / f"nullrerun_{judge}_{gen}_{diff}_output_2026-03-02_10-00-00.json"
                rerun.write_text(json.dumps(reruns[(gen, judge, diff)]))
        (folder / "llama_3_1_8b_instruct" / "judged_by_qwq_32b_nogt_05").mkdir(parents=True)  # C2: left out
    else:
        for judge in JUDGES:
            lines = []
            for (gen, j, diff), cell in rows.items():
                if j != judge:
                    continue
                merged = list(cell)
                for fixed in reruns.get((gen, j, diff), []):  # the released files hold the merged rows
                    merged = [
                        fixed if r.get("id") == fixed["id"] and r.get("judge_response") is None else r
                        for r in merged
                    ]
                lines += [json.dumps(dict(r, generator=gen, difficulty=diff)) for r in merged]
            (folder / f"judge_{judge}.jsonl").write_text("\n".join(lines) + "\n")
    expected_cells = {k: fmean(v) for k, v in expected.items()}
    return {"cells": expected_cells, **planted}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    base = tmp_path_factory.mktemp("ajb")
    os.environ.setdefault("AGENTJUDGE_CACHE", str(base / "calls.sqlite"))
    planted = build_release(base / "raw", "raw")
    summary = import_release(base / "raw", RECORDS, base / "run")
    return base / "run", summary, planted


def test_every_cell_equals_the_published_rule(imported: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    run, summary, planted = imported
    cells = pd.read_csv(run / "imported_cells.csv")
    names = {
        "llama_3_1_8b_instruct": "Llama-3.1-8B",
        "gpt_5_4": "GPT-5.4",
        "qwq_32b": "QwQ-32B",
        "gpt_oss_20b": "GPT-OSS-20B",
    }
    assert len(cells) == len(GENERATORS) * len(JUDGES) * len(DIFFS) * 2 == summary["cells"]
    for (gen, judge, diff, condition), want in planted["cells"].items():
        row = cells[
            (cells["generator"] == names[gen])
            & (cells["judge"] == names[judge])
            & (cells["difficulty"] == diff)
            & (cells["condition"] == condition)
        ].iloc[0]
        # what analyze_results.py computes (the mean of the released per-record figures) ...
        assert row["released_overall"] == pytest.approx(want, abs=1e-9)
        # ... and the recomputation from the verdicts under the publication's rule (two decimals apart)
        assert row["published_rule"] == pytest.approx(want, abs=0.005)
    # the printed grid is beside each cell whose generator and judge the paper has
    printed = cells.dropna(subset=["printed"])
    assert len(printed) == len(cells)
    assert (printed["difference"] - (printed["published_rule"] - printed["printed"])).abs().max() < 1e-9
    # ours (a metric without a value left out) is never below the published rule (which counts it 0)
    assert (cells["ours_missing_excluded"] >= cells["published_rule"] - 1e-9).all()
    lenient = cells[cells["judge"] == "GPT-OSS-20B"]
    assert (lenient["ours_missing_excluded"] > lenient["published_rule"]).any()


def test_the_import_counts_what_it_found(imported: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    _, summary, planted = imported
    assert summary["layout"] == "raw pipeline"
    assert summary["failure_rows"] == planted["failure_rows"] == 4
    assert sum(summary["failure_rows_by_file"].values()) == sum(summary["failure_rows_by_cell"].values()) == 4
    assert summary["rows_from_reruns"] == planted["from_reruns"] == 1
    assert summary["judgments_lost_in_the_source"] == planted["lost"] == 1
    assert summary["metrics_without_a_value"] == planted["missing_metrics"] > 0
    assert summary["scorer_disagreements"]["outputs_compared"] == len(GENERATORS) * len(DIFFS) * N_RECORDS
    assert summary["scorer_disagreements"]["by_metric"] == {}
    assert summary["rows"] == len(GENERATORS) * len(JUDGES) * len(DIFFS) * N_RECORDS
    assert summary["queries_differing_from_the_records"] == 0
    assert any("judged_by_qwq_32b_nogt_05" in s for s in summary["files_skipped_other_conditions"])
    # every task of the 60 records the release has no output for is absent, not failed
    assert summary["tasks_without_a_released_output"] == len(GENERATORS) * len(DIFFS) * (60 - N_RECORDS)


def test_the_run_folder_holds_the_published_verdicts(
    imported: tuple[Path, dict[str, Any], dict[str, Any]],
) -> None:
    run, _, _ = imported
    meta = json.loads((run / "meta.json").read_text())
    assert {v["kind"] for v in meta["judges"].values()} == {"imported"}
    assert {v["kind"] for v in meta["generators"].values()} == {"imported"}
    assert not any(v["simulated"] for v in meta["judges"].values())
    jd = pd.read_parquet(run / "judgments.parquet")
    assert set(jd["judge"]) == {"QwQ-32B", "GPT-OSS-20B"} and set(jd["scoring_mode"]) == {"paper"}
    # the lenient judge's planted missing metric: a failed verdict (null, parse_ok false), never a number
    missing = jd[(jd["judge"] == "GPT-OSS-20B") & (jd["metric"] == "seq") & jd["verdict"].isna()]
    assert len(missing) > 0 and not missing["parse_ok"].any()
    # the judgment lost in the source: every metric failed for it
    lost = jd[(jd["judge"] == "QwQ-32B") & (jd["generator"] == "GPT-5.4") & (jd["condition"] == "with_gt")]
    lost = lost[lost["record_id"] == read_records(RECORDS)[4].id + ":hard"]
    assert len(lost) == 4 and lost["verdict"].isna().all()
    # a verdict as released: the careful judge's snapped values
    pred = pd.read_parquet(run / "predictions.parquet")
    absent = pred[pred["calls_json"].isna()]
    assert (absent["error"].str.contains("released no output")).all() and len(absent) == 2 * 2 * 54
    scores = pd.read_parquet(run / "scores.parquet")
    assert len(scores) == len(GENERATORS) * len(DIFFS) * N_RECORDS  # only released outputs are scored
    assert report_cli(run, resamples=50, seed=0) in (0, 1)
    text = (run / "report" / "report.md").read_text()
    assert "QwQ-32B" in text and "imported" in text


def test_both_layouts_import_the_same_cells(
    imported: tuple[Path, dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    run, _, _ = imported
    build_release(tmp_path / "hf", "per-judge")
    summary = import_release(tmp_path / "hf", RECORDS, tmp_path / "run")
    assert summary["layout"] == "per-judge files"
    # one file holds a judge's every cell: its failure rows are summed per file, not overwritten per cell
    assert summary["failure_rows"] == 4 and list(summary["failure_rows_by_file"].values()) == [4]
    a = pd.read_csv(run / "imported_cells.csv")
    b = pd.read_csv(tmp_path / "run" / "imported_cells.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["rows"]), b.drop(columns=["rows"]))


def test_a_judge_added_to_the_imported_run_is_ranked_beside_the_imported_ones(
    imported: tuple[Path, dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(imported[0], run)
    before = pd.read_parquet(run / "judgments.parquet")
    assert run_cli(run / "pipeline.yaml", run, add_judges=["baseline/rule"]) == 0
    after = pd.read_parquet(run / "judgments.parquet")
    added = after[after["judge"] == "baseline/rule"]
    # it judged exactly the released outputs, at their difficulties, under both conditions
    assert len(added) == len(GENERATORS) * len(DIFFS) * N_RECORDS * 2 * 4
    kept = after[after["judge"] != "baseline/rule"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, before.reset_index(drop=True))
    assert report_cli(run, resamples=50, seed=0) in (0, 1)
    ranking = pd.read_csv(run / "report" / "tables" / "first_ranking.csv")
    assert {"baseline/rule", "QwQ-32B", "GPT-OSS-20B"} <= set(ranking["judge"])


def _agentjudge(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "agentjudge", "import", "agentjudgebench", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = _agentjudge(tmp_path / "empty", "--records", RECORDS, "--out", tmp_path / "out")
    assert done.returncode == 2 and "no judge verdicts found" in done.stderr
    assert not (tmp_path / "out").exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    # a judge file without the judged fields: named with the columns found, since nothing else is there
    (bad / "judge_qwq_32b.jsonl").write_text(
        json.dumps({"id": "x", "generator": "g", "difficulty": "easy"}) + "\n"
    )
    done = _agentjudge(bad, "--records", RECORDS, "--out", tmp_path / "out")
    assert done.returncode == 2 and "no judge verdicts found" in done.stderr
    assert "judge_qwq_32b.jsonl: columns difficulty, generator, id fit no kind" in done.stderr
    assert not (tmp_path / "out").exists()
    (bad / "judge_qwq_32b.jsonl").write_text(
        json.dumps({"id": "x", "generated_tool_calls": [], "programmatic_judge_response": {}}) + "\n"
    )
    done = _agentjudge(bad, "--records", RECORDS, "--out", tmp_path / "out")
    assert done.returncode == 2 and "judge_qwq_32b.jsonl, row 1: the generator is not a column" in done.stderr
    release = tmp_path / "release"
    build_release(release, "per-judge")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    done = _agentjudge(release, "--records", RECORDS, "--out", tmp_path / "taken")
    assert done.returncode == 2 and "exists and is not empty" in done.stderr
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(RECORDS.read_text().splitlines()[20:]) + "\n")
    done = _agentjudge(release, "--records", other, "--out", tmp_path / "out")
    assert done.returncode == 2 and "is not in" in done.stderr and not (tmp_path / "out").exists()
    assert "Traceback" not in done.stdout + done.stderr


def test_the_download_root_and_rows_that_name_no_cell(tmp_path: Path) -> None:
    """The download's root (its judge files in data/) is read as the per-judge layout; a failed row whose
    generator and difficulty are None too is counted (its cell unknown); a generator column present but
    null in a row with data is named as such."""
    from agentjudge.tracks.agentjudgebench.files import Failure, ReleaseError, read_judged, scan

    build_release(tmp_path / "root" / "data", "per-judge")
    path = tmp_path / "root" / "data" / "judge_qwq_32b.jsonl"
    lines = path.read_text().splitlines()
    ghost = {k: None for k in json.loads(lines[0])}
    path.write_text("\n".join([*lines, json.dumps(ghost)]) + "\n")
    release = scan(tmp_path / "root")
    assert release.layout == "per-judge files" and len(release.of("judged")) == len(JUDGES)
    items = [item for found in release.of("judged") for item in read_judged(found)]
    unknown = [i for i in items if isinstance(i, Failure) and i.generator == "(unknown generator)"]
    assert len(unknown) == 1 and unknown[0].judge == "qwq_32b"
    row = json.loads(lines[0]) | {"generator": None}
    path.write_text(json.dumps(row) + "\n")
    (found,) = [f for f in scan(tmp_path / "root").of("judged") if f.path == path]
    with pytest.raises(ReleaseError, match=r"row 1: the generator \(generator\) is None, not a name"):
        list(read_judged(found))
