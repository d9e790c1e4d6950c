"""``agentjudge run --dry-run``: how many calls, roughly how many tokens and dollars, before spending any.

Nothing is written and no model is constructed. Token counts are estimates: chars/4 of the exact prompts
the run would send (generator messages from ``LLMGenerator.messages``, judge messages from
``judges.templates.build_messages``), where the judges' inputs use the GT calls as a stand-in for the
predictions that do not exist yet. Completion tokens are chars/4 of a plausible answer: the GT calls for
a generator, and for a judge a JSON verdict with one-sentence rationales (x3 with chain-of-thought).
Judge counts assume every prediction succeeds. Prices come from litellm's bundled cost map; a model it does
not know is reported as "unknown", never as $0.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentjudge.runner.models import model_kind
from agentjudge.runner.pipeline import Pipeline
from agentjudge.runner.store import UnitKey, open_readonly
from agentjudge.runner.work import Dataset, judge_units, predict_units
from agentjudge.types import JudgeRequest, ModelSettings, PromptVariant, Record

# A judge answer in the JSON format: four verdicts with a one-sentence justification each and an overall line.
_JUDGE_ANSWER_CHARS = len(
    json.dumps(
        {
            m: {"verdict": 1.0, "justification": "x" * 110}
            for m in ("tool_selection", "parameter_structure", "sequence_accuracy", "query_coverage")
        }
        | {"overall": "x" * 160}
    )
)
_COT_FACTOR = 3


def _tokens(chars: int) -> int:
    return (chars + 3) // 4


def _generator_prompt_chars(settings: ModelSettings, data: Dataset, key: UnitKey) -> int:
    from agentjudge.generators.llm import LLMGenerator, openai_tools

    record, difficulty = data.locate(key.record_id)
    task = data.task(record, difficulty)
    messages = LLMGenerator(settings, None).messages(task)  # type: ignore[arg-type]  # no call is made
    chars = sum(len(m["content"]) for m in messages)
    if settings.native_tools:
        chars += len(json.dumps(openai_tools(task.tools)))
    return chars


def _judge_prompt_chars(
    record: Record, key: UnitKey, data: Dataset, variant: PromptVariant, partners: dict[str, str]
) -> int:
    from agentjudge.judges.templates import build_messages

    _, difficulty = data.locate(key.record_id)
    gt = None
    if key.condition == "with_gt":
        gt = record.gt
    elif key.condition == "swapped_gt":
        gt = data.by_base[partners[record.id]].gt
    request = JudgeRequest(
        task=data.task(record, difficulty),
        calls=record.expected_calls,
        gt=gt,
        condition=key.condition,  # type: ignore[arg-type]
        variant=variant,
    )
    return sum(len(m["content"]) for m in build_messages(request))


def _price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # noqa: BLE001 - litellm raises several types for "not in the cost map"
        return None
    return float(prompt_cost) + float(completion_cost)


def _done_units(rundir: Path) -> set[tuple[Any, ...]]:
    db = open_readonly(rundir / "run.sqlite")
    if db is None:
        return set()
    try:
        rows = db.execute(
            "SELECT stage, record_id, difficulty, generator, generator_trial, judge, condition, variant, "
            "temperature, trial FROM units WHERE status = 'done'"
        ).fetchall()
    finally:
        db.close()
    return {tuple(r) for r in rows}


def estimate(pipe: Pipeline, data: Dataset, partners: dict[str, str], rundir: Path) -> list[dict[str, Any]]:
    """Per model: calls still to make and estimated prompt/completion tokens and cost."""
    done = _done_units(rundir)
    preds = predict_units(pipe, data)
    units = [u for u in [*preds, *judge_units(pipe, preds)] if u.row() not in done]
    variants = {v.key: v for v in pipe.prompt_variants}
    settings = {("predict", m.display_name): m for m in pipe.generators}
    settings |= {("judge", m.display_name): m for m in pipe.judges}
    calls: dict[tuple[str, str], int] = defaultdict(int)
    prompt_chars: dict[tuple[str, str], int] = defaultdict(int)
    completion_chars: dict[tuple[str, str], int] = defaultdict(int)
    memo: dict[tuple[Any, ...], int] = {}
    for unit in units:
        who = (unit.stage, unit.generator if unit.stage == "predict" else unit.judge)
        model = settings[who]
        calls[who] += 1
        if model_kind(model.model) in ("sim", "baseline"):
            continue  # in-process: no tokens, no money
        record, _ = data.locate(unit.record_id)
        if unit.stage == "predict":
            memo_key: tuple[Any, ...] = ("p", unit.record_id, model.native_tools)
            if memo_key not in memo:
                memo[memo_key] = _generator_prompt_chars(model, data, unit)
            prompt_chars[who] += memo[memo_key]
            completion_chars[who] += len(json.dumps([c.model_dump() for c in record.expected_calls]))
        else:
            memo_key = ("j", unit.record_id, unit.condition, unit.variant)
            if memo_key not in memo:
                memo[memo_key] = _judge_prompt_chars(record, unit, data, variants[unit.variant], partners)
            prompt_chars[who] += memo[memo_key]
            cot = variants[unit.variant].cot
            completion_chars[who] += _JUDGE_ANSWER_CHARS * (_COT_FACTOR if cot else 1)
    rows = []
    for (stage, name), model in settings.items():
        kind = model_kind(model.model)
        p_tok, c_tok = _tokens(prompt_chars[(stage, name)]), _tokens(completion_chars[(stage, name)])
        cost: float | None = 0.0 if kind in ("sim", "baseline") else _price(model.model, p_tok, c_tok)
        if model.input_cost_per_token is not None and model.output_cost_per_token is not None:
            cost = p_tok * model.input_cost_per_token + c_tok * model.output_cost_per_token  # given price
        rows.append(
            {
                "model": name,
                "role": "generator" if stage == "predict" else "judge",
                "kind": kind,
                "calls": calls[(stage, name)],
                "prompt_tokens": p_tok,
                "completion_tokens": c_tok,
                "cost_usd": cost,
            }
        )
    return rows


def dry_run_report(
    pipe: Pipeline, data: Dataset, rundir: Path, console: Console, partners: dict[str, str] | None = None
) -> int:
    rows = estimate(pipe, data, partners or {}, rundir)
    table = Table(title=f"Dry run of {pipe.name}: calls still to make (nothing is spent or written)")
    for col in ("model", "role", "kind", "calls", "~prompt tokens", "~completion tokens", "~cost $"):
        table.add_column(col, justify="left" if col in ("model", "role", "kind") else "right")
    known = 0.0
    unknown = []
    for r in rows:
        cost = r["cost_usd"]
        if cost is None:
            unknown.append(r["model"])
        else:
            known += cost
        table.add_row(
            escape(r["model"]),
            r["role"],
            r["kind"],
            str(r["calls"]),
            str(r["prompt_tokens"]),
            str(r["completion_tokens"]),
            "unknown" if cost is None else f"{cost:.4f}",
        )
    console.print(table)
    total_calls = sum(r["calls"] for r in rows)
    line = f"total: {total_calls} calls, ~${known:.4f} for models with a known price"
    if unknown:
        line += f"; price unknown for {', '.join(unknown)}"
    line += ". Judge calls assume every prediction succeeds; tokens are chars/4 estimates."
    console.print(escape(line), soft_wrap=True)
    return 0
