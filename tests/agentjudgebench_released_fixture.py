"""A download of the released AgentJudgeBench dataset in miniature, written from what is known of its layout
(used by tests/test_import_agentjudgebench_released.py; the bench writes its own, at the paper's scale).

What is known of the release (HF dataset ServiceNow-AI/AgentJudgeBench at 13ac79a) and planted here:

- the root holds ``README.md`` and ``data/``; the base records are ``data/main/records.jsonl`` in the
  published record layout (only the published keys; ids ``<dag_type>_<hex>``);
- one file per judge, ``data/judges/judge_<key>.jsonl``, rows ``id``, ``generator``, ``difficulty``,
  ``with_gt``, ``without_gt``; each condition an object, or the same object as a JSON string, keyed by the
  short metric names, each an entry holding ``llm_score`` with other keys beside it, plus
  ``overall_alignment_pct`` (the publication's per-row alignment: a metric without a value counts 0);
  a lost judgment is null. Planted on top: the ``_accuracy`` metric keys and the ``accuracy`` /
  ``llm_accuracy`` value keys, a metric missing, a value null with the judge's reason, failed rows (every
  field null), and a Prometheus-2 file;
- one set of rows per generator, ``id``, ``dag_type``, ``difficulty``, ``user_query``, ``available_tools``,
  ``generated_tool_calls``, ``expected_tool_calls`` (JSON strings or lists), the four ``score_<metric>``
  columns and ``overall_programmatic_score``. Their names and folders are not known: one generator's rows
  are in a folder named after its config (``gpt5_4``: the configs' spelling, where the judge files say
  ``gpt_5_4``) without a generator column, the other's in a file that names it in a column;
- a JSON-lines file whose columns fit no kind (a summary table).

The programmatic scores are the published scorer's (our ``paper`` mode, equal to it on every input: FIDELITY
row 1), continuous (0.3333, 0.6667, …); the judges' values are 0, 0.5 or 1. ``Release.expected`` holds every
cell's value under the published rule, computed here from the rows as written.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "data" / "mini" / "records.jsonl"
PUBLISHED_KEYS = (
    "id",
    "dag_type",
    "user_message",
    "query_medium",
    "query_hard",
    "rewrite_medium_status",
    "rewrite_hard_status",
    "system_prompt",
    "available_tools",
    "expected_tool_calls",
    "expected_responses",
)
SHORT = {
    "tool": "tool_selection",
    "param": "parameter_structure",
    "seq": "sequence_accuracy",
    "cov": "query_coverage",
}
LONG = {
    "tool": "tool_selection_accuracy",
    "param": "parameter_structure_accuracy",
    "seq": "sequence_accuracy",
    "cov": "query_coverage_accuracy",
}
DIFFS = ("easy", "medium", "hard")
QUERY = {"easy": "user_message", "medium": "query_medium", "hard": "query_hard"}
GENERATORS = ("gpt_5_4", "llama_3_1_8b_instruct")
JUDGES = ("gpt_5_4", "claude_large", "gemini_2_5_pro", "qwq_32b", "prometheus_2_7b")
DISPLAY = {
    "gpt_5_4": "GPT-5.4",
    "llama_3_1_8b_instruct": "Llama-3.1-8B",
    "claude_large": "Claude Sonnet 4.5",
    "gemini_2_5_pro": "Gemini-2.5-Pro",
    "qwq_32b": "QwQ-32B",
    "prometheus_2_7b": "Prometheus-2",
}


@dataclass
class Release:
    root: Path
    records: Path
    ids: list[str]
    outputs: int = 0  # released generator outputs
    judged: int = 0  # judged rows (one judge, one output), failure rows not included
    failure_rows: int = 0
    lost: int = 0  # null conditions
    missing_metrics: int = 0
    # (generator, judge, difficulty, condition) display names -> the cell under the published rule (%)
    expected: dict[tuple[str, str, str, str], float] = field(default_factory=dict)
    released_overall: dict[tuple[str, str, str, str], float] = field(default_factory=dict)
    cells_with_missing: set[tuple[str, str, str, str]] = field(default_factory=set)
    planted_score_errors: int = 0


def published_records(source: Path, out: Path, n: int) -> list[str]:
    """The first ``n`` records of ``source`` as the release has them: published keys only, paper-style ids."""
    ids = []
    lines = []
    with source.open() as handle:
        for i, line in zip(range(n), handle, strict=False):
            raw = json.loads(line)
            rec = {k: raw[k] for k in PUBLISHED_KEYS if k in raw}
            rec["id"] = f"{raw['dag_type']}_{hashlib.md5(str(i).encode()).hexdigest()[:24]}"
            ids.append(rec["id"])
            lines.append(json.dumps(rec))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return ids


def programmatic(record: Any, calls: list[dict[str, Any]]) -> dict[str, float]:
    from agentjudge.scoring.scorer import score_calls
    from agentjudge.types import ToolCall

    scores = score_calls(
        record.expected_calls,
        [ToolCall(name=c["name"], arguments=c["arguments"]) for c in calls],
        "paper",
        edges=record.edges,
        tools=record.tools,
    )
    return {m: round(float(scores[f"p_{m}"]), 4) for m in SHORT}


def generated(rng: random.Random, record: Any) -> list[dict[str, Any]]:
    calls = [{"name": s.call.name, "arguments": dict(s.call.arguments)} for s in record.gt]
    kind = rng.random()
    if kind < 0.35 or len(calls) < 2:
        return calls
    if kind < 0.55:
        return calls[:-1]  # forgot the last step
    if kind < 0.7:
        return list(reversed(calls))  # out of order
    if kind < 0.85:
        calls[0]["arguments"] = {**calls[0]["arguments"], "note": "extra"}  # an argument too many
        return calls
    return [*calls, {"name": "lookup_anything", "arguments": {}}]  # a tool that is not in the GT


def verdict(rng: random.Random, truth: float, skill: float) -> float:
    value = min((0.0, 0.5, 1.0), key=lambda v: abs(v - truth))
    return rng.choice((0.0, 0.5, 1.0)) if rng.random() > skill else value


def build(
    root: Path,
    *,
    source: Path = MINI,
    n_records: int = 8,
    seed: int = 5,
    plant_score_error: bool = True,
) -> Release:
    """Write the miniature release under ``root`` (``root/README.md``, ``root/data/…``)."""
    from agentjudge.rundir.records import read_records

    rng = random.Random(seed)
    data = root / "data"
    records_path = data / "main" / "records.jsonl"
    ids = published_records(source, records_path, n_records)
    records = {r.id: r for r in read_records(records_path)}
    (root / "README.md").write_text("# AgentJudgeBench (a miniature written for tests)\n")
    rel = Release(root, records_path, ids)
    outputs: dict[tuple[str, str, str], dict[str, float]] = {}
    for gen in GENERATORS:
        rows = []
        for rid in ids:
            record = records[rid]
            for diff in DIFFS:
                if gen == "llama_3_1_8b_instruct" and rng.random() < 0.15:
                    continue  # an output the generator's parser lost: never judged, not released
                calls = generated(rng, record)
                prog = programmatic(record, calls)
                released = dict(prog)
                if plant_score_error and gen == "llama_3_1_8b_instruct" and rel.planted_score_errors == 0:
                    released["param"] = (
                        0.0 if prog["param"] >= 0.5 else 1.0
                    )  # a released score we disagree with
                    rel.planted_score_errors = 1
                outputs[(gen, rid, diff)] = released
                expected = [{"name": s.call.name, "arguments": s.call.arguments} for s in record.gt]
                as_strings = gen == "gpt_5_4"
                row: dict[str, Any] = {
                    "id": rid,
                    "dag_type": record.topology,
                    "difficulty": diff,
                    "user_query": record.queries[diff],
                    "available_tools": json.dumps(
                        [{"type": "function", "function": {"name": t.name}} for t in record.tools]
                    ),
                    "generated_tool_calls": json.dumps(calls) if as_strings else calls,
                    "expected_tool_calls": json.dumps(expected) if as_strings else expected,
                    **{f"score_{SHORT[m]}": v for m, v in released.items()},
                    "overall_programmatic_score": round(sum(released.values()) / 4, 4),
                }
                if not as_strings:
                    row = {"generator": gen, **row}
                rows.append(json.dumps(row))
                rel.outputs += 1
        path = data / "gpt5_4" / "train.jsonl" if gen == "gpt_5_4" else data / "generations" / f"{gen}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(rows) + "\n")
    cells: dict[tuple[str, str, str, str], list[float]] = {}
    overalls: dict[tuple[str, str, str, str], list[float]] = {}
    for j_index, judge in enumerate(JUDGES):
        rows = []
        skill = 0.55 if judge.startswith("prometheus") else 0.8 + 0.04 * j_index
        for (gen, rid, diff), prog in outputs.items():
            row: dict[str, Any] = {"id": rid, "generator": gen, "difficulty": diff}
            for condition in ("with_gt", "without_gt"):
                key = (DISPLAY[gen], DISPLAY[judge], diff, condition)
                lost = (judge == "claude_large" and condition == "with_gt" and rng.random() < 0.1) or (
                    judge == "gemini_2_5_pro" and condition == "without_gt" and rng.random() < 0.1
                )
                if lost:
                    row[condition] = None
                    rel.lost += 1
                    continue
                body, values = _condition(rng, judge, prog, skill)
                missing = sum(v is None for v in values.values())
                rel.missing_metrics += missing
                if missing:
                    rel.cells_with_missing.add(key)
                per_row = sum(0.0 if v is None else 1 - abs(prog[m] - v) for m, v in values.items()) / 4 * 100
                body["overall_alignment_pct"] = round(per_row, 2)
                cells.setdefault(key, []).append(per_row)
                overalls.setdefault(key, []).append(round(per_row, 2))
                row[condition] = json.dumps(body) if judge == "claude_large" else body
            rows.append(json.dumps(row))
            rel.judged += 1
            if judge == "qwq_32b" and rid == ids[0] and diff == "easy":  # a failed graph execution
                rows.append(json.dumps(dict.fromkeys(row)))
                rel.failure_rows += 1
        path = data / "judges" / f"judge_{judge}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(rows) + "\n")
    rel.expected = {k: sum(v) / len(v) for k, v in cells.items()}
    rel.released_overall = {k: sum(v) / len(v) for k, v in overalls.items()}
    summary = data / "stats" / "alignment_summary.jsonl"
    summary.parent.mkdir(parents=True)
    summary.write_text(json.dumps({"judge": "gpt_5_4", "generator": "gpt5_4", "mean_alignment": 88.1}) + "\n")
    return rel


def _condition(
    rng: random.Random, judge: str, prog: dict[str, float], skill: float
) -> tuple[dict[str, Any], dict[str, float | None]]:
    """One condition's object as this judge's file spells it, and the values it holds."""
    body: dict[str, Any] = {}
    values: dict[str, float | None] = {}
    for metric, truth in prog.items():
        value: float | None = verdict(rng, truth, skill)
        if judge == "gemini_2_5_pro":  # the pipeline's spelling: _accuracy keys, accuracy values
            body[LONG[metric]] = {"accuracy": value, "justification": "looked at"}
        elif judge == "qwq_32b":
            r = rng.random()
            if metric == "seq" and r < 0.08:
                value = None  # the metric is missing altogether
            elif metric == "cov" and r < 0.08:
                value = None
                body[SHORT[metric]] = {"llm_accuracy": None, "justification": "could not assess coverage"}
            else:
                body[SHORT[metric]] = {"llm_accuracy": value}
        else:
            body[SHORT[metric]] = {"llm_score": value, "programmatic_score": truth, "justification": "ok"}
        values[metric] = value
    return body, values
