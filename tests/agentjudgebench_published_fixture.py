"""Released-verdict fixtures for `agentjudge import agentjudgebench`, written from the published code alone
(an independent second transcription, used by tests/test_import_agentjudgebench_crosscheck.py).

The paper's pipeline (ServiceNow/SyGra, tasks/examples/agentic_bfcl_judge_eval at 3b818e9) stores one row
per generator output and judge with the fields of its graph_config.yaml ``output_config.output_map``. Here
those rows are built field by field: the programmatic reference by a transcription of its
``ProgrammaticJudge`` (with ``extract_tool_calls`` / ``safe_parse_json``), each row's alignment by a
transcription of ``ComputeLLMVsProgrammaticAccuracy`` (a metric without a value counts 0), failure rows as
its null-rerun script describes them (every field null, id included), reruns merged by that script's rule,
and the expected cell values by a transcription of ``analyze_results.py`` (mean of the non-null row
alignments). No helper of agentjudge is used, so the importer is checked against the published logic.

The judges are seeded noise around the reference (this is a fixture, not a model): each metric value is
0, 0.5 or 1, sometimes missing; some outputs are absent (generator attrition), some rows are failures.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METRIC_KEYS = (
    "tool_selection_accuracy",
    "parameter_structure_accuracy",
    "sequence_accuracy",
    "query_coverage_accuracy",
)
DIFFS = ("easy", "medium", "hard")
QUERY_FIELD = {"easy": "user_message", "medium": "query_medium", "hard": "query_hard"}
JUDGE_KEYS = ("gpt_5_4", "claude_large", "reranker_gemini", "qwq_32b", "gpt_oss_20b", "gpt_oss_120b")
HF_JUDGE = {"reranker_gemini": "gemini_2_5_pro"}
GEN_KEYS = ("llama_3_3_70b_instruct", "llama_3_1_8b_instruct", "qwen3_32b", "smollm3_3b", "gpt_5_4")
DISPLAY = {
    "gpt_5_4": "GPT-5.4",
    "claude_large": "Claude Sonnet 4.5",
    "reranker_gemini": "Gemini-2.5-Pro",
    "qwq_32b": "QwQ-32B",
    "gpt_oss_20b": "GPT-OSS-20B",
    "gpt_oss_120b": "GPT-OSS-120B",
    "llama_3_3_70b_instruct": "Llama-3.3-70B",
    "llama_3_1_8b_instruct": "Llama-3.1-8B",
    "qwen3_32b": "Qwen3-32B",
    "smollm3_3b": "SmolLM3-3B",
}
FIELDS = (
    "id",
    "dag_type",
    "user_message",
    "generated_tool_calls",
    "judge_response",
    "judge_response_no_gt",
    "programmatic_judge_response",
    "per_metric_comparison",
    "overall_llm_alignment_percentage",
    "per_metric_comparison_no_gt",
    "overall_llm_alignment_percentage_no_gt",
)


# ----------------------------------------------------------------- transcriptions of the published code
def safe_parse_json(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if "</think>" in text:
        text = text.split("</think>")[-1].strip()
    text = re.sub(r"^```(?:json)?\s*\n?", "", text)
    text = re.sub(r"\n?```\s*$", "", text)
    return json.loads(text.strip())


def extract_tool_calls(generated_tool_calls: Any, expected_responses: Any) -> tuple[list[Any], list[Any]]:
    generated = safe_parse_json(generated_tool_calls)
    expected = []
    for msg in safe_parse_json(expected_responses):
        if isinstance(msg, dict) and msg.get("role") == "assistant" and msg.get("tool_calls"):
            calls = safe_parse_json(msg["tool_calls"])
            if isinstance(calls, list):
                expected.extend(tc for tc in calls if isinstance(tc, dict))
    return generated, expected


def programmatic_judge(generated_tool_calls: Any, expected_responses: Any) -> dict[str, dict[str, float]]:
    generated, expected = extract_tool_calls(generated_tool_calls, expected_responses)
    gen_tools = [g["function"]["name"] for g in generated]
    exp_tools = [e["function"]["name"] for e in expected]
    gen_set, exp_set = set(gen_tools), set(exp_tools)
    intersection = gen_set & exp_set
    extra, missing = gen_set - exp_set, exp_set - gen_set
    if not gen_set and not exp_set:
        tool = 1.0
    else:
        tool = max(0.0, 1.0 - (len(extra) + len(missing)) / max(len(exp_set), 1))
    exp_arg_map = {e["function"]["name"]: set(e["function"]["arguments"].keys()) for e in expected}
    param_scores = []
    for g in generated:
        expected_args = exp_arg_map.get(g["function"]["name"])
        if expected_args is None:
            param_scores.append(0.0)
            continue
        provided = set(g["function"]["arguments"].keys())
        if not (expected_args - provided) and not (provided - expected_args):
            param_scores.append(1.0)
        elif not (expected_args - provided):
            param_scores.append(0.5)
        else:
            param_scores.append(0.0)
    param = sum(param_scores) / len(param_scores) if param_scores else 1.0
    matched = sum(1 for i, t in enumerate(gen_tools) if i < len(exp_tools) and t == exp_tools[i])
    seq = matched / max(len(exp_tools), 1) if exp_tools else 1.0
    if not exp_set:
        cov = 1.0
    elif not intersection:
        cov = 0.0
    else:
        cov = len(intersection) / len(exp_set)
    return {k: {"accuracy": round(v, 4)} for k, v in zip(METRIC_KEYS, (tool, param, seq, cov), strict=True)}


def compute_alignment(programmatic: dict[str, Any], judge_response: dict[str, Any]) -> tuple[dict, float]:
    total, cumulative, per_metric = 0, 0.0, {}
    for metric, prog_val in programmatic.items():
        prog_acc = prog_val.get("accuracy")
        llm_acc = judge_response.get(metric, {}).get("accuracy")
        total += 1
        if llm_acc is None:
            match, error = 0.0, 1.0
        else:
            error = abs(llm_acc - prog_acc)
            match = 1.0 - error
        per_metric[metric] = {
            "programmatic_accuracy": prog_acc,
            "llm_accuracy": llm_acc,
            "absolute_error": round(error, 4),
            "match_score": round(match, 4),
        }
        cumulative += match
    return per_metric, round(cumulative / total * 100 if total else 100.0, 2)


def analyze_cell(rows: list[dict[str, Any]], key: str) -> float | None:
    """analyze_results.py: the mean of the non-null row alignments of a cell (it rounds to 2 decimals for
    its CSV; unrounded here)."""
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else None


# ----------------------------------------------------------------- building rows
def _calls(rng: random.Random, expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = [{"function": {"name": c["name"], "arguments": dict(c["arguments"])}} for c in expected]
    kind = rng.random()
    if kind < 0.45 or not calls:
        return calls
    if kind < 0.55:
        return calls[:-1]
    if kind < 0.65 and len(calls) > 1:
        calls[0], calls[1] = calls[1], calls[0]
        return calls
    if kind < 0.75:
        calls[0]["function"]["arguments"]["note"] = "extra"
        return calls
    if kind < 0.82:
        calls[-1]["function"]["name"] = "lookup_anything"
        return calls
    if kind < 0.88:
        args = calls[0]["function"]["arguments"]
        if args:
            args.pop(next(iter(args)))
        return calls
    if kind < 0.92:
        return []
    return [*calls, calls[0]]


def _spell(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    """The generator output as the pipeline stored it: usually a JSON string, sometimes fenced, after a
    think block, or with arguments as JSON strings (the published parser reads them all)."""
    kind = rng.random()
    if kind < 0.15:
        return calls  # a list, not a string
    text = json.dumps(calls, indent=2)
    if kind < 0.3:
        return f"```json\n{text}\n```"
    if kind < 0.4:
        return f"<think>plan the calls</think>\n{text}"
    return text


def _judge(rng: random.Random, prog: dict[str, Any], skill: float, p_missing: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in METRIC_KEYS:
        r = rng.random()
        if r < p_missing:
            continue  # the judge's answer lacks the metric
        if r < 1.5 * p_missing:
            out[key] = {"accuracy": None, "justification": "not assessable"}
            continue
        truth = prog[key]["accuracy"]
        value = min((0.0, 0.5, 1.0), key=lambda v: abs(v - truth))
        if rng.random() > skill:
            value = rng.choice((0.0, 0.5, 1.0))
        out[key] = {"accuracy": value, "justification": f"{key.split('_')[0]} judged {value}"}
    out["overall_assessment"] = "fixture"
    return out


@dataclass
class Fixture:
    root: Path
    records: Path
    cells: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)  # merged rows
    failure_rows: int = 0  # after the rerun merge
    planted_reference_errors: int = 0  # rows whose programmatic field was altered (scorer disagreements)
    cell_values: dict[tuple[str, str, str, str], float] = field(default_factory=dict)
    rows: int = 0  # rows after the merge, failure rows included

    def add_cell(self, g: str, j: str, d: str, merged: list[dict[str, Any]], keep_rows: bool) -> None:
        self.rows += len(merged)
        if keep_rows:
            self.cells[(g, j, d)] = merged
        for cond, key in (
            ("with_gt", "overall_llm_alignment_percentage"),
            ("without_gt", "overall_llm_alignment_percentage_no_gt"),
        ):
            value = analyze_cell(merged, key)
            if value is not None:
                self.cell_values[(DISPLAY[g], DISPLAY[j], d, cond)] = value

    def expected(self) -> dict[tuple[str, str, str, str], float]:
        """(generator, judge, difficulty, condition) display names -> published cell value (%)."""
        return dict(self.cell_values)


def record_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scaled_records(source: Path, out: Path, n: int) -> Path:
    """``n`` records in the published layout, cycling through ``source``'s with paper-style ids."""
    base = record_lines(source)
    with out.open("w") as f:
        for i in range(n):
            rec = dict(base[i % len(base)])
            rec["id"] = f"{rec['dag_type']}_{hashlib.md5(str(i).encode()).hexdigest()}"
            f.write(json.dumps(rec) + "\n")
    return out


def build(
    root: Path,
    records_path: Path,
    *,
    generators: tuple[str, ...] = GEN_KEYS[:2],
    judges: tuple[str, ...] = JUDGE_KEYS[:3],
    seed: int = 7,
    attrition: float = 0.05,
    p_failure: float = 0.04,
    p_missing: float = 0.03,
    plant_reference_errors: int = 2,
    layout: str = "raw",
    jsonl_cell: bool = True,
    counts: dict[tuple[str, str], int] | None = None,
    extra_failures: float = 0.0,
    indent: int | None = 2,
    keep_rows: bool = True,
    rerun_recovery: float = 0.5,
) -> Fixture:
    """Write a release in ``layout`` ("raw": the pipeline's folders, with a resume file, a null-rerun file
    and one cell as .jsonl; "hf": one file per judge) and return what it holds. ``counts``: exactly that
    many outputs per (generator, difficulty) instead of random attrition; ``extra_failures``: the chance
    of a persistent failure row beside a judged row (the release's size scaled by the paper's counts)."""
    rng = random.Random(seed)
    records = record_lines(records_path)
    fx = Fixture(root, records_path)
    outputs: dict[tuple[str, str, str], tuple[Any, dict[str, Any]]] = {}
    for g in generators:
        for d in DIFFS:
            kept = set(rng.sample(range(len(records)), counts[(g, d)])) if counts else None
            for i, rec in enumerate(records):
                if (kept is None and rng.random() < attrition) or (kept is not None and i not in kept):
                    continue  # unparseable generator output: never judged
                calls = _calls(rng, rec["expected_tool_calls"])
                spelled = _spell(rng, calls)
                outputs[(g, d, rec["id"])] = (spelled, programmatic_judge(spelled, rec["expected_responses"]))
    planted = 0
    by_id = {r["id"]: r for r in records}
    order = {
        key: n for n, key in enumerate(sorted((g, j, d) for g in generators for j in judges for d in DIFFS))
    }
    by_cell: dict[tuple[str, str], list[tuple[str, Any, Any]]] = defaultdict(list)
    for (og, od, rid), (spelled, prog) in outputs.items():
        by_cell[(og, od)].append((rid, spelled, prog))
    for j_index, j in enumerate(judges):
        skill = 0.75 + 0.04 * j_index
        for g in generators:
            for d in DIFFS:
                primary: list[Any] = []
                rerun: list[Any] = []
                merged: list[dict[str, Any]] = []
                for rid, spelled, prog in by_cell[(g, d)]:
                    rec = by_id[rid]
                    if planted < plant_reference_errors and j_index == 0:
                        prog = json.loads(json.dumps(prog))
                        key = METRIC_KEYS[planted % 4]
                        prog[key]["accuracy"] = 0.0 if prog[key]["accuracy"] >= 0.5 else 1.0
                        planted += 1
                    resp, resp_no = (
                        _judge(rng, prog, skill, p_missing),
                        _judge(rng, prog, skill - 0.05, p_missing),
                    )
                    per, overall = compute_alignment(prog, resp)
                    per_no, overall_no = compute_alignment(prog, resp_no)
                    row = dict(
                        zip(
                            FIELDS,
                            (
                                rid,
                                rec["dag_type"],
                                rec[QUERY_FIELD[d]],
                                spelled,
                                resp,
                                resp_no,
                                prog,
                                per,
                                overall,
                                per_no,
                                overall_no,
                            ),
                            strict=True,
                        )
                    )
                    if rng.random() < p_failure:
                        primary.append(dict.fromkeys(FIELDS))
                        if rng.random() < rerun_recovery:  # recovered by the null rerun
                            rerun.append(row)
                            merged.append(row)
                        else:
                            fx.failure_rows += 1
                            merged.append(dict.fromkeys(FIELDS))
                    else:
                        primary.append(row)
                        merged.append(row)
                    if extra_failures and rng.random() < extra_failures:
                        primary.append(dict.fromkeys(FIELDS))
                        merged.append(dict.fromkeys(FIELDS))
                        fx.failure_rows += 1
                fx.add_cell(g, j, d, merged, keep_rows)
                if layout == "raw":
                    _write_raw(root, order[(g, j, d)], (g, j, d), primary, rerun, jsonl_cell, indent)
                else:
                    _write_hf(root, (g, j, d), merged)
    fx.planted_reference_errors = planted
    return fx


def _write_raw(
    root: Path,
    n: int,
    cell: tuple[str, str, str],
    primary: list[Any],
    rerun: list[Any],
    jsonl_cell: bool,
    indent: int | None,
) -> None:
    """One cell's files; ``n``: the cell's place in sorted order (which cells get a resume or .jsonl)."""
    g, j, d = cell
    folder = root / g / f"judged_by_{j}"
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"judge_{g}_{j}_{d}_output_2026-03-0{1 + n % 9}_12-00-00"
    if n == 1 and len(primary) > 4:  # an interrupted run completed by a resume run
        (folder / f"resume_{j}_{g}_{d}_output_2026-03-10_08-00-00.json").write_text(
            json.dumps(primary[-4:], indent=indent)
        )
        primary = primary[:-4]
    if jsonl_cell and n == 2:
        (folder / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in primary))
    else:
        (folder / f"{stem}.json").write_text(json.dumps(primary, indent=indent))
    if rerun:
        (folder / f"nullrerun_{j}_{g}_{d}_output_2026-03-11_09-00-00.json").write_text(
            json.dumps(rerun, indent=indent)
        )


def _write_hf(root: Path, cell: tuple[str, str, str], rows: list[dict[str, Any]]) -> None:
    """One cell's rows appended to its judge's file; a failure row keeps its cell's generator and
    difficulty (the per-judge files' columns are not documented: this is one reading of them)."""
    g, j, d = cell
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    with (data / f"judge_{HF_JUDGE.get(j, j)}.jsonl").open("a") as handle:
        for row in rows:
            extra = {"generator": g, "difficulty": d}
            handle.write(json.dumps({**row, **extra}) + "\n")
