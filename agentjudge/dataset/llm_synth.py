"""Optional LLM rewrites of the medium and hard queries (`agentjudge generate --llm MODEL`).

The deterministic realiser (``realiser.py``) always runs first, so every record already has three queries
that pass the gates. With ``--llm`` a model is asked to reword medium and hard from the easy query; each
answer is checked by the same Gate 2 as the deterministic text (sufficiency, grounding, naturalness), and
retried up to ``MAX_TRIES`` times. A difficulty whose rewrites all fail keeps its deterministic query and is
marked ``rewrite_<d>_status = "FAILED"`` — counted in the manifest, never hidden. Calls go through the
shared ``ModelClient`` (cache, retries, no key in files); answers are cached, so a rerun is reproducible.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from agentjudge.dataset.plan import QueryPlan
from agentjudge.types import Difficulty, Record

MAX_TRIES = 3
REWRITTEN: tuple[Difficulty, ...] = ("medium", "hard")
STYLE: dict[str, str] = {
    "medium": (
        "Paraphrase it in your own words. Mention the steps in a different order than the original (keep "
        "enough cues that the right order can still be worked out). Give some values indirectly: dates "
        "written out (e.g. 'March 17, 2026'), small numbers as words."
    ),
    "hard": (
        "Make it harder to follow: leave look-up steps implicit (just state the facts they need), give dates "
        "only relative to today (e.g. 'in three days', 'this coming Friday') and say somewhere what today's "
        "date is, refer back to values already mentioned instead of repeating them, and add one or two "
        "true but irrelevant details."
    ),
}


def _user_values(plan: QueryPlan) -> list[str]:
    """Values the user must supply (each must stay recoverable after the rewrite)."""
    out: list[str] = []
    for step in plan.steps:
        for slot in step.slots:
            if slot.source == "query":
                out.append(f"- {slot.noun}: {json.dumps(slot.value, ensure_ascii=False)}")
    return out


def build_messages(record: Record, plan: QueryPlan, difficulty: Difficulty) -> list[dict[str, Any]]:
    """The prompt. The original request is delimited so that instructions inside it stay data."""
    system = (
        "You rewrite requests that a person sends to an assistant with tools. Output only the rewritten "
        "request as plain prose: no preamble, no quotes around it, no lists of fields, no JSON, no code, no "
        "tool or function names, no snake_case identifiers. Every value listed must remain exactly "
        "recoverable by a careful reader (identifiers, e-mail addresses and quoted texts verbatim)."
    )
    values = "\n".join(_user_values(plan)) or "- (none)"
    condition = (
        f"\nThe request must still state this condition: {plan.condition_text}" if plan.condition_text else ""
    )
    user = (
        f"Today's date: {plan.reference_date}.\nStyle: {STYLE[difficulty]}{condition}\n"
        f"Values that must stay recoverable:\n{values}\n"
        f"<original_request>\n{record.queries['easy']}\n</original_request>"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def clean(text: str) -> str:
    """Strip what models wrap answers in (code fences, surrounding quotes, a "Rewritten:" label)."""
    text = text.strip()
    text = re.sub(r"^```\w*\s*|\s*```$", "", text).strip()
    text = re.sub(r"^(?:rewritten(?: request)?|request)\s*:\s*", "", text, flags=re.IGNORECASE)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return re.sub(r"\s+", " ", text)


async def rewrite_record(
    client: Any, settings: Any, record: Record, plan: QueryPlan
) -> tuple[Record, dict[str, int]]:
    """(record with LLM queries where they passed Gate 2, failure counts per reason code)."""
    from agentjudge.dataset.gates import run_gates
    from agentjudge.models.errors import MODEL_FATAL_KINDS, ModelCallError

    failures: dict[str, int] = {}
    queries = dict(record.queries)
    status = dict(record.rewrite_status)
    for difficulty in REWRITTEN:
        accepted = False
        for attempt in range(MAX_TRIES):
            try:
                completion = await client.complete(
                    settings,
                    build_messages(record, plan, difficulty),
                    sample_index=attempt,
                )
            except ModelCallError as exc:
                if exc.kind in MODEL_FATAL_KINDS:  # every other call would fail alike: stop, no fallback
                    raise
                failures[f"model_error:{exc.kind}"] = failures.get(f"model_error:{exc.kind}", 0) + 1
                continue
            candidate = record.model_copy(update={"queries": {**queries, difficulty: clean(completion.text)}})
            found = [f for f in run_gates(candidate).findings if f.difficulty == difficulty]
            if not found:
                queries[difficulty] = candidate.queries[difficulty]
                accepted = True
                break
            for code in {f.code for f in found}:
                failures[code] = failures.get(code, 0) + 1
        status[difficulty] = "OK" if accepted else "FAILED"  # FAILED: the deterministic query is kept
    final = record.model_copy(update={"queries": queries, "rewrite_status": status})
    report = run_gates(final)
    if not report.passed:  # cannot happen unless the gates changed under us; never ship it silently
        raise RuntimeError(
            f"{record.id}: record fails the gates after LLM rewriting: {report.findings[0].detail}"
        )
    report.regenerations = record.validation.regenerations if record.validation else 0
    return final.model_copy(update={"validation": report}), failures


def rewrite_all(
    lines: list[str], plan_jsons: list[str], model: str, api_base: str | None, seed: int
) -> tuple[list[str], dict[str, Any]]:
    """Rewrite every record's medium/hard query; returns new lines and {"medium": n, "hard": n,
    "reasons": {...}} counting difficulties that fell back to the deterministic text."""
    from agentjudge.models.cache import CallCache
    from agentjudge.models.client import ModelClient
    from agentjudge.rundir.records import dumps_record, parse_line
    from agentjudge.types import ModelSettings

    settings = ModelSettings(model=model, api_base=api_base, temperature=0.7)
    client = ModelClient(cache=CallCache())
    records = [parse_line(line, "<generated>", i + 1) for i, line in enumerate(lines)]
    plans = [QueryPlan.model_validate_json(p) for p in plan_jsons]

    async def run() -> list[tuple[Record, dict[str, int]]]:
        return await asyncio.gather(
            *(rewrite_record(client, settings, r, p) for r, p in zip(records, plans, strict=True))
        )

    results = asyncio.run(run())
    reasons: dict[str, int] = {}
    for _, failures in results:
        for code, n in failures.items():
            reasons[code] = reasons.get(code, 0) + n
    failed = {
        "medium": sum(r.rewrite_status.get("medium") == "FAILED" for r, _ in results),
        "hard": sum(r.rewrite_status.get("hard") == "FAILED" for r, _ in results),
        "failed_attempts_by_reason": dict(sorted(reasons.items())),
        "seed": seed,
    }
    return [dumps_record(r) for r, _ in results], failed
