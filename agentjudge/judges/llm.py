"""The LLM judge: prompt from ``templates``, one model call through ``ModelClient``, verdicts from ``parse``.

Failures stay failures. A transport/provider error gives a result with every verdict ``None`` and
``error="<kind>: <message>"``; an answer that cannot be parsed gives ``parse_ok=False`` with the metrics that
could not be read set to ``None``. Optionally the judge is re-asked (``reask`` times) with a short message
quoting the parse problem; the raw text of every attempt is kept and the number of re-asks is recorded, so a
report can count both the first-answer parse failures and the ones re-asking rescued.

The prompt family (``paper`` = the published prompts' facts, ``agentjudge`` = ours) is a judge
attribute, ``agentjudge`` unless the caller sets it: the grid sets it from the pipeline's ``prompt_family``
(and ``tool_rendering`` from ``judge_tool_rendering``). For providers that cache prefixes only at explicit
breakpoints (Anthropic), an ``agentjudge`` prompt is sent with ``cache_control`` on the record's tools and
query, the last block every judge call on the record shares.

Chain of thought is a prompt variant (``cot_on.md`` / ``cot_off.md``). For reasoning models the provider's
thinking switch is a separate matter, passed only when the model's settings ask for it:
``extra["judge_thinking_on"]`` / ``extra["judge_thinking_off"]`` are dicts of litellm parameters merged into
the call when the variant's ``cot`` is on / off (e.g. ``{"reasoning_effort": "high"}``). Both keys are removed
before the call, so they never reach litellm themselves.
"""

from __future__ import annotations

from typing import Any

from agentjudge.judges.parse import ParsedVerdicts, parse_verdicts
from agentjudge.judges.prompts import (
    DEFAULT_PROMPT_FAMILY,
    ToolRendering,
    build_messages,
    needs_cache_breakpoint,
    reask_message,
    with_cache_breakpoint,
)
from agentjudge.judges.trajectory import build_messages as trajectory_messages
from agentjudge.judges.trajectory import is_trajectory, with_outcome
from agentjudge.models.client import schema_response_format
from agentjudge.models.errors import ModelCallError
from agentjudge.types import METRICS, JudgeRequest, JudgeResult, ModelSettings, PromptFamily, Usage


def _metric_schema(number_key: str) -> dict[str, Any]:
    """One metric's entry: a three-level number under ``number_key`` and a one-sentence justification."""
    return {
        "type": "object",
        "properties": {
            number_key: {"type": "number", "enum": [0.0, 0.5, 1.0]},
            "justification": {"type": "string"},
        },
        "required": [number_key, "justification"],
        "additionalProperties": False,
    }


_METRIC_SCHEMA = _metric_schema("verdict")
VERDICT_SCHEMA: dict[str, Any] = {  # the shape prompts/format_json.md asks for
    "type": "object",
    "properties": {**{m: _METRIC_SCHEMA for m in METRICS}, "overall": {"type": "string"}},
    "required": [*METRICS, "overall"],
    "additionalProperties": False,
}
# the trajectory conditions ask for the outcome too (prompts/trajectory_format_json.md)
TRAJECTORY_VERDICT_SCHEMA: dict[str, Any] = {
    **VERDICT_SCHEMA,
    "properties": {**VERDICT_SCHEMA["properties"], "outcome": _METRIC_SCHEMA},
    "required": [*METRICS, "outcome", "overall"],
}
# the published output keys the paper family asks for (prompts/paper/*.md)
PAPER_METRIC_KEYS = (
    "tool_selection_accuracy",
    "parameter_structure_accuracy",
    "sequence_accuracy",
    "query_coverage_accuracy",
)
PAPER_VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{key: _metric_schema("accuracy") for key in PAPER_METRIC_KEYS},
        "overall_assessment": {"type": "string"},
    },
    "required": [*PAPER_METRIC_KEYS, "overall_assessment"],
    "additionalProperties": False,
}
THINKING_ON_KEY = "judge_thinking_on"
THINKING_OFF_KEY = "judge_thinking_off"
ATTEMPT_SEPARATOR = "\n\n===== agentjudge: re-ask {n} =====\n\n"


def call_settings(settings: ModelSettings, cot: bool) -> ModelSettings:
    """Settings for one call: judge-only ``extra`` keys removed, the matching thinking params merged in."""
    extra = dict(settings.extra)
    on = extra.pop(THINKING_ON_KEY, None)
    off = extra.pop(THINKING_OFF_KEY, None)
    chosen = on if cot else off
    if chosen is not None:
        if not isinstance(chosen, dict):
            key = THINKING_ON_KEY if cot else THINKING_OFF_KEY
            raise ValueError(f"{settings.display_name}: extra.{key} must be a mapping of litellm parameters")
        extra.update(chosen)
    if extra == settings.extra:
        return settings
    return settings.model_copy(update={"extra": extra})


def response_format(
    settings: ModelSettings, request: JudgeRequest, family: PromptFamily = DEFAULT_PROMPT_FAMILY
) -> dict[str, Any] | None:
    """The verdict JSON Schema as ``response_format`` when ``settings.structured_output`` is on and the
    variant asks for JSON without chain of thought (reasoning written before the verdicts would not fit a
    schema-constrained answer). None otherwise. The schema is the shape the prompt asks for: with the
    outcome in the trajectory conditions, the published keys in the paper family, ours otherwise."""
    variant = request.variant
    if not settings.structured_output or variant.prompt_format != "json" or variant.cot:
        return None
    if is_trajectory(request.condition):
        return schema_response_format(settings, "judge_verdicts", TRAJECTORY_VERDICT_SCHEMA)
    if family == "paper":
        return schema_response_format(settings, "judge_verdicts", PAPER_VERDICT_SCHEMA)
    return schema_response_format(settings, "judge_verdicts", VERDICT_SCHEMA)


class LLMJudge:
    """A judge backed by any chat model litellm can reach."""

    needs_reference = False

    def __init__(
        self,
        settings: ModelSettings,
        client: Any,
        *,
        reask: int = 0,
        prompt_family: PromptFamily = DEFAULT_PROMPT_FAMILY,
    ) -> None:
        if reask < 0:
            raise ValueError(f"reask must be >= 0, got {reask}")
        self.settings = settings
        self.client = client
        self.reask = reask
        self.prompt_family: PromptFamily = prompt_family  # the grid sets it from the pipeline
        self.tool_rendering: ToolRendering = "full"  # likewise (pipeline key judge_tool_rendering)
        self.name = settings.display_name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        episode = is_trajectory(request.condition)  # judges that see outputs: + the outcome verdict
        messages: list[dict[str, Any]] = list(
            trajectory_messages(request)
            if episode
            else build_messages(request, self.prompt_family, self.tool_rendering)
        )
        if not episode and self.prompt_family == "agentjudge" and needs_cache_breakpoint(self.settings.model):
            messages = with_cache_breakpoint(messages, request, self.tool_rendering)
        outcome: float | None = None
        settings = call_settings(self.settings, request.variant.cot)
        schema = response_format(settings, request, self.prompt_family)
        texts: list[str] = []
        usage = Usage()
        parsed: ParsedVerdicts | None = None
        for attempt in range(self.reask + 1):
            try:
                completion = await self.client.complete(
                    settings,
                    messages,
                    temperature=request.temperature,
                    sample_index=request.trial,
                    response_format=schema,
                )
            except ModelCallError as exc:
                return JudgeResult(
                    verdicts=dict.fromkeys(METRICS),
                    rationales=self._meta(parsed, attempt, texts)
                    | {"_structured_output": str(int(bool(schema)))},
                    parse_ok=False,
                    raw_output=self._joined(texts),
                    error=str(exc),  # "<kind> after N attempt(s): <message>": the requests this unit sent
                    error_kind=exc.kind,
                    error_attempts=exc.attempts,
                    usage=exc.usage_after(usage),
                )
            usage = usage.plus(completion.usage, first=attempt == 0)
            texts.append(completion.text)
            parsed = parse_verdicts(completion.text, request.variant)
            if episode:
                parsed, outcome = with_outcome(parsed, completion.text, request.variant)
            if parsed.parse_ok or attempt == self.reask:
                break
            messages = [
                *messages,
                {"role": "assistant", "content": completion.text},
                reask_message(parsed.problems, self.prompt_family),
            ]
        assert parsed is not None  # the loop ran at least once and either returned or parsed
        rationales = dict(parsed.rationales)
        rationales.update(self._meta(parsed, len(texts) - 1, texts))
        rationales["_structured_output"] = str(int(schema is not None))
        return JudgeResult(
            verdicts=parsed.verdicts,
            rationales=rationales,
            parse_ok=parsed.parse_ok,
            raw_output=self._joined(texts),
            usage=usage,
            outcome=outcome,
        )

    @staticmethod
    def _joined(texts: list[str]) -> str:
        """Every attempt's raw text, separated by a marked line, so nothing a judge said is lost."""
        out = texts[0] if texts else ""
        for n, text in enumerate(texts[1:], start=1):
            out += ATTEMPT_SEPARATOR.format(n=n) + text
        return out

    @staticmethod
    def _meta(parsed: ParsedVerdicts | None, reasks: int, texts: list[str]) -> dict[str, str]:
        """Bookkeeping in underscore keys (not metrics): re-asks made, parse method and problems."""
        meta = {"_reasks": str(reasks), "_attempts": str(len(texts))}
        if parsed is not None:
            meta["_parse_method"] = parsed.method
            if parsed.problems:
                meta["_parse_problems"] = "; ".join(parsed.problems)
        return meta
