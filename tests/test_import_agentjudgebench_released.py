"""`agentjudge import agentjudgebench` on the released dataset's own layout (tests/
agentjudgebench_released_fixture.py: a miniature of the download, written from what is known of it)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import agentjudgebench_released_fixture as fixture
import pandas as pd
import pytest

from agentjudge.commands.report import report_cli
from agentjudge.commands.run import run_cli
from agentjudge.rundir.units import decode_result
from agentjudge.tracks.agentjudgebench.importer import import_release

ROOT = Path(__file__).resolve().parents[1]
SIX = {"GPT-5.4", "Claude Sonnet 4.5", "Gemini-2.5-Pro", "QwQ-32B"}  # the fixture's share of the six


def _agentjudge(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "agentjudge", *map(str, args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, fixture.Release, dict[str, Any]]:
    base = tmp_path_factory.mktemp("released")
    os.environ.setdefault("AGENTJUDGE_CACHE", str(base / "calls.sqlite"))
    rel = fixture.build(base / "AgentJudgeBench")
    done = _agentjudge("import", "agentjudgebench", base / "AgentJudgeBench", "--out", base / "run")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((base / "run" / "import_summary.json").read_text())
    return base / "run", rel, {"summary": summary, "stdout": done.stdout}


def test_only_out_every_cell_is_the_published_rule(
    imported: tuple[Path, fixture.Release, dict[str, Any]],
) -> None:
    run, rel, _ = imported
    cells = pd.read_csv(run / "imported_cells.csv")
    got = {(r.generator, r.judge, r.difficulty, r.condition): r for r in cells.itertuples(index=False)}
    assert set(got) == set(rel.expected)  # every cell of every judge file, Prometheus-2's too
    for key, want in rel.expected.items():
        # mean over non-null rows of the mean over metrics of 1 − |programmatic − llm_score| (missing: 0)
        assert got[key].published_rule == pytest.approx(want, abs=1e-9), key
        assert got[key].released_overall == pytest.approx(rel.released_overall[key], abs=1e-9), key
    # a cell with a metric without a value: our rule (left out) is above the published one (counted 0)
    for key in rel.cells_with_missing:
        assert got[key].ours_missing_excluded > got[key].published_rule
    # printed beside the paper's grid where the paper has the judge; never for Prometheus-2
    assert cells[cells["judge"] == "Prometheus-2"]["printed"].isna().all()
    assert cells[cells["judge"] != "Prometheus-2"]["printed"].notna().all()


def test_the_run_alignment_is_the_published_rule_where_nothing_is_missing(
    imported: tuple[Path, fixture.Release, dict[str, Any]],
) -> None:
    """The run's own verdict rows (our paper-mode reference, the released verdicts) give the same cell
    values, except where the release's reference and ours disagree (one planted score) or a metric is
    missing (the report leaves it out; the published rule counts 0)."""
    run, rel, info = imported
    jd = pd.read_parquet(run / "judgments.parquet")
    example = info["summary"]["scorer_disagreements"]["examples"][0]
    disputed = example.split()[1]  # "<generator> <task> <metric>: ours …"
    checked = 0
    for (gen, judge, diff, cond), part in jd.groupby(["generator", "judge", "difficulty", "condition"]):
        key = (gen, judge, diff, cond)
        if key in rel.cells_with_missing or (disputed in set(part["record_id"])):
            continue
        ok = part[part["parse_ok"]]
        value = 100 * (1 - (ok["reference"] - ok["verdict"]).abs()).mean()
        assert value == pytest.approx(rel.expected[key], abs=1e-9), key
        checked += 1
    assert checked >= 30


def test_the_runs_records_are_the_releases(imported: tuple[Path, fixture.Release, dict[str, Any]]) -> None:
    run, rel, info = imported
    summary = info["summary"]
    assert (run / "records.jsonl").read_bytes() == rel.records.read_bytes()
    pipeline = (run / "pipeline.yaml").read_text()
    assert "dataset: records.jsonl" in pipeline
    assert summary["records"]["from"] == "the release" and summary["records"]["records"] == len(rel.ids)
    pred = pd.read_parquet(run / "predictions.parquet")
    assert set(pred["base_id"]) == set(rel.ids)
    # the released queries and GT calls are the records' (compared row by row)
    assert summary["queries_differing_from_the_records"] == 0
    assert summary["expected_calls_differing_from_the_records"] == 0


def test_what_the_import_counted(imported: tuple[Path, fixture.Release, dict[str, Any]]) -> None:
    run, rel, info = imported
    summary = info["summary"]
    assert summary["layout"] == "released dataset"
    # gpt5_4 (the configs) and gpt_5_4 (the judge files) are one generator
    assert summary["generators"] == {"gpt_5_4": "GPT-5.4", "llama_3_1_8b_instruct": "Llama-3.1-8B"}
    assert summary["judges"]["prometheus_2_7b"] == "Prometheus-2"
    assert summary["baseline_judges"] == ["Prometheus-2"]
    assert summary["rows"] == rel.judged and summary["failure_rows"] == rel.failure_rows
    assert summary["judgments_lost_in_the_source"] == rel.lost > 0
    assert summary["metrics_without_a_value"] == rel.missing_metrics > 0
    assert summary["tasks_without_a_released_output"] == 2 * 3 * len(rel.ids) - rel.outputs > 0
    assert summary["judged_rows_without_a_readable_output"] == 0
    dis = summary["scorer_disagreements"]
    assert dis["outputs_compared"] == dis["rows_compared"] == rel.outputs
    assert sum(dis["by_metric"].values()) == rel.planted_score_errors == 1
    assert dis["by_metric"] == {"param": 1}
    # the file whose columns fit no kind is named with them, and the import went on
    (unknown,) = summary["files_unrecognised"]
    assert unknown["file"].endswith("alignment_summary.jsonl")
    assert unknown["columns"] == ["generator", "judge", "mean_alignment"]
    assert "alignment_summary.jsonl: columns generator, judge, mean_alignment fit no kind" in info["stdout"]


def test_failures_are_the_sources_never_a_default(
    imported: tuple[Path, fixture.Release, dict[str, Any]],
) -> None:
    run, rel, _ = imported
    jd = pd.read_parquet(run / "judgments.parquet")
    # a verdict without a value is exactly a lost judgment's four metrics or a metric the judge left
    # without one: never a 0 or 1 in its place, and its judgment is counted unparsed
    failed = jd[jd["verdict"].isna()]
    assert len(failed) == 4 * rel.lost + rel.missing_metrics and not failed["parse_ok"].any()
    assert jd[jd["parse_ok"]]["verdict"].notna().all()
    assert set(failed["judge"]) == {"Claude Sonnet 4.5", "Gemini-2.5-Pro", "QwQ-32B"}
    assert {"cov", "seq"} >= set(failed[failed["judge"] == "QwQ-32B"]["metric"])
    # each failed judgment's reason, as the run's store keeps it: the source's
    conn = sqlite3.connect(run / "run.sqlite")
    rows = conn.execute("SELECT judge, result FROM units WHERE stage = 'judge'")
    results = [(judge, json.loads(decode_result(stored) or "")) for judge, stored in rows]
    problems = [
        (judge, result["rationales"].get("_parse_problems", ""))
        for judge, result in results
        if not result["parse_ok"]
    ]
    conn.close()
    lost = [j for j, why in problems if "its judge call failed there: a null row" in why]
    assert len(lost) == rel.lost and set(lost) == {"Claude Sonnet 4.5", "Gemini-2.5-Pro"}
    partial = [why for j, why in problems if j == "QwQ-32B"]
    assert partial and all(
        "cov: llm_accuracy is null (the source says: 'could not assess coverage')" in why
        or "seq: no sequence_accuracy in the source's judgment" in why
        for why in partial
    )
    # verdicts as released: only 0, 0.5 and 1 from the judges; continuous references from the scorer
    assert set(jd["verdict"].dropna()) <= {0.0, 0.5, 1.0}
    assert not set(jd["reference"].dropna()) <= {0.0, 0.5, 1.0}


def test_prometheus_is_a_baseline_shown_apart(imported: tuple[Path, fixture.Release, dict[str, Any]]) -> None:
    run, _, _ = imported
    meta = json.loads((run / "meta.json").read_text())
    assert meta["judges"]["Prometheus-2"]["kind"] == "imported-baseline"
    assert {meta["judges"][j]["kind"] for j in SIX} == {"imported"}
    assert not any(v["simulated"] for v in meta["judges"].values())
    copy = run.parent / "reported"
    shutil.copytree(run, copy)
    assert report_cli(copy, resamples=50, seed=0) in (0, 1)
    ranking = pd.read_csv(copy / "report" / "tables" / "first_ranking.csv")
    assert set(ranking["judge"]) == SIX  # ranked: the six (here four) only
    apart = pd.read_csv(copy / "report" / "tables" / "first_calibration.csv")
    assert set(apart["judge"]) == {"Prometheus-2"} and set(apart["kind"]) == {"judge-specific baseline"}
    text = (copy / "report" / "report.md").read_text()
    assert "| — | Prometheus-2 | judge-specific baseline (calibration) |" in text
    # not on the jury, not in κ: the six's pooled figures stay the six's
    tables = copy / "report" / "tables"
    jury = re.search(r"Soft jury = mean verdict of ([^(]*) \(", (copy / "report" / "report.html").read_text())
    assert jury is not None and set(jury.group(1).split(", ")) == SIX
    pairs = pd.read_csv(tables / "rq2_pairs.csv")
    assert set(pairs["judge_a"]) | set(pairs["judge_b"]) == SIX


def test_an_added_judge_judges_the_same_rows(
    imported: tuple[Path, fixture.Release, dict[str, Any]], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(imported[0], run)
    before = pd.read_parquet(run / "judgments.parquet")
    assert run_cli(run / "pipeline.yaml", run, add_judges=["baseline/rule"]) == 0
    after = pd.read_parquet(run / "judgments.parquet")
    added = after[after["judge"] == "baseline/rule"]
    rows = ["generator", "record_id", "condition", "metric"]
    for judge in (*SIX, "Prometheus-2"):
        theirs = before[before["judge"] == judge][rows]
        assert set(map(tuple, added[rows].to_numpy())) == set(map(tuple, theirs.to_numpy())), judge
    assert len(added) == imported[1].outputs * 2 * 4
    kept = after[after["judge"] != "baseline/rule"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, before.reset_index(drop=True))


def test_records_given_are_checked_against_the_releases(tmp_path: Path) -> None:
    rel = fixture.build(tmp_path / "AgentJudgeBench", n_records=6, plant_score_error=False)
    lines = rel.records.read_text().splitlines()
    changed = json.loads(lines[1])
    changed["query_hard"] = changed["query_hard"] + " Thanks."
    given = tmp_path / "given.jsonl"
    given.write_text("\n".join([lines[0], json.dumps(changed), *lines[2:], *_more(tmp_path)]) + "\n")
    summary = import_release(tmp_path / "AgentJudgeBench", given, tmp_path / "run")
    check = summary["records_check"]
    assert check["records_given"] == 7 and check["records_in_release"] == 6
    assert (check["only_in_given"], check["only_in_release"], check["differing"]) == (1, 0, 1)
    assert check["differing_fields"] == {"query_hard": 1}
    assert summary["records"]["from"] == "--records"
    assert (tmp_path / "run" / "records.jsonl").read_bytes() == given.read_bytes()
    # the judged hard query of that record now differs from the run's record: counted per output
    data = tmp_path / "AgentJudgeBench" / "data"
    outputs = [
        json.loads(line)
        for path in (data / "gpt5_4" / "train.jsonl", data / "generations" / "llama_3_1_8b_instruct.jsonl")
        for line in path.read_text().splitlines()
    ]
    hard = sum(1 for o in outputs if o["id"] == changed["id"] and o["difficulty"] == "hard")
    assert summary["queries_differing_from_the_records"] == hard > 0
    assert summary["scorer_disagreements"]["by_metric"] == {}


def _more(tmp_path: Path) -> list[str]:
    """One record the release does not have (the 8th of the mini records, a fresh id)."""
    extra = tmp_path / "extra.jsonl"
    fixture.published_records(fixture.MINI, extra, 8)
    line = json.loads(extra.read_text().splitlines()[7])
    line["id"] = line["id"] + "_extra"
    return [json.dumps(line)]


def test_refused_only_when_what_is_needed_is_missing(tmp_path: Path) -> None:
    fixture.build(tmp_path / "AgentJudgeBench", n_records=4)
    data = tmp_path / "AgentJudgeBench" / "data"
    # no generator outputs: nothing to judge; named, with the files that fit no kind
    hidden = tmp_path / "aside"
    hidden.mkdir()
    for path in (data / "gpt5_4" / "train.jsonl", data / "generations" / "llama_3_1_8b_instruct.jsonl"):
        shutil.move(path, hidden / path.name)
    done = _agentjudge("import", "agentjudgebench", tmp_path / "AgentJudgeBench", "--out", tmp_path / "out")
    assert done.returncode == 2 and "judge verdicts but no generator outputs found" in done.stderr
    assert "alignment_summary.jsonl: columns generator, judge, mean_alignment fit no kind" in done.stderr
    assert not (tmp_path / "out").exists() and "Traceback" not in done.stdout + done.stderr
    shutil.move(hidden / "train.jsonl", data / "gpt5_4" / "train.jsonl")
    # no records and no --records
    shutil.move(data / "main" / "records.jsonl", hidden / "records.jsonl")
    done = _agentjudge("import", "agentjudgebench", tmp_path / "AgentJudgeBench", "--out", tmp_path / "out")
    assert done.returncode == 2 and "no base records found" in done.stderr and "--records" in done.stderr
    assert not (tmp_path / "out").exists()
    shutil.move(hidden / "records.jsonl", data / "main" / "records.jsonl")
    # a bad row of a judge file: file, row and field named, nothing written
    judge = data / "judges" / "judge_qwq_32b.jsonl"
    rows = judge.read_text().splitlines()
    bad = json.loads(rows[2]) | {"difficulty": "extreme"}
    judge.write_text("\n".join([*rows[:2], json.dumps(bad), *rows[3:]]) + "\n")
    done = _agentjudge("import", "agentjudgebench", tmp_path / "AgentJudgeBench", "--out", tmp_path / "out")
    assert done.returncode == 2 and "judge_qwq_32b.jsonl, row 3: difficulty 'extreme'" in done.stderr
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".import-*"))
    # one generator's outputs missing is not a refusal: its judged rows are counted and left out
    judge.write_text("\n".join(rows) + "\n")
    done = _agentjudge("import", "agentjudgebench", tmp_path / "AgentJudgeBench", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stdout
    summary = json.loads((tmp_path / "out" / "import_summary.json").read_text())
    assert list(summary["judged_rows_of_generators_without_outputs"]) == ["llama_3_1_8b_instruct"]


def test_the_command_in_the_docs_imports_the_download(tmp_path: Path) -> None:
    """docs/paper.md's import command, as written, run where the download sits."""
    text = (ROOT / "docs" / "paper.md").read_text()
    download = re.search(
        r"^huggingface-cli download ServiceNow-AI/AgentJudgeBench .*--local-dir (\S+)", text, re.M
    )
    command = re.search(r"^agentjudge import agentjudgebench .*$", text, re.M)
    assert download is not None and command is not None
    argv = shlex.split(command.group(0))
    assert argv[3] == download.group(1) and "--records" not in argv  # the download's folder, nothing else
    fixture.build(tmp_path / download.group(1), n_records=4)
    done = _agentjudge(*argv[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / argv[argv.index("--out") + 1]
    assert (out / "judgments.parquet").is_file() and (out / "records.jsonl").is_file()
