"""A model's answer as the project keeps it (``Completion``), read from what litellm returned.

``to_completion`` is the one reader of an answer, direct or from a batch: its text and tool calls (an answer
with neither is an ``empty_response`` error, never returned in place of one), its usage and its price (the
pipeline's price where given, else litellm's, else unknown: ``cost_known`` False, never a guessed $0).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, model_validator

from agentjudge.models.credentials import scrub
from agentjudge.models.errors import ModelCallError
from agentjudge.models.prices import (
    cache_saving,
    cached_prompt_tokens,
    cost_at,
    mark_unpriced,
    pipeline_prices,
    unpriced,
)
from agentjudge.types import ModelSettings, Strict, Usage


class RawToolCall(Strict):
    """A tool call as the provider returned it; ``arguments`` is the raw JSON text (may be malformed)."""

    id: str
    name: str
    arguments: str


class Completion(Strict):
    text: str
    tool_calls: list[RawToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_known: bool = True  # False: litellm has no price for this model, cost_usd is 0.0 for that reason
    raw: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _cost_known_in_step(self) -> Completion:
        """``cost_known`` and ``usage.cost_known`` say the same (unknown when either says so): the usage is
        what reaches a prediction or a judge result, and a cache entry written before ``Usage`` had the
        flag holds it on the Completion only (its usage reads as the default, True). Assignments after
        construction (the batch path, ``_unsent``) set both themselves, except ``_with_unseen``, which marks
        the usage alone (an earlier attempt's unseen cost, not the answer's price)."""
        known = self.cost_known and self.usage.cost_known
        if not (self.cost_known is self.usage.cost_known is known):
            self.cost_known = known
            self.usage = self.usage.model_copy(update={"cost_known": known})
        return self


def cost_unknown(usage: Usage) -> Usage:
    return usage.model_copy(update={"cost_known": False})


def with_unseen(completion: Completion) -> Completion:
    """An answer after attempts that may have been billed unseen: its usage's cost is a lower bound
    (``cost_known`` False there; the Completion's own flag still says whether the answer's price is known,
    which the model's ``unknown_cost_calls`` counts)."""
    completion.usage = cost_unknown(completion.usage)
    return completion


def unsent(completion: Completion) -> Completion:
    """An answer served without a request (cache hit, or shared with an identical request in flight):
    no cost, and no provider-cache reads or savings either. That $0 is known (nothing was spent), also
    when the stored answer's own price was not: ``cost_known`` is True."""
    completion.usage = completion.usage.model_copy(
        update={
            "cached": True,
            "cost_usd": 0.0,
            "cached_prompt_tokens": 0,
            "cache_saved_usd": 0.0,
            "cost_known": True,
        }
    )
    completion.cost_known = True
    return completion


class BatchBody:
    """A batch answer's body in the shape ``to_completion`` reads (a response's ``model_dump``)."""

    def __init__(self, body: dict[str, Any] | None) -> None:
        self._body = body or {}
        self._hidden_params = {"response_cost": 0.0}  # priced by the caller at the batch price

    def model_dump(self) -> dict[str, Any]:
        return self._body


def to_completion(
    litellm: Any, response: Any, secrets: list[str], settings: ModelSettings | None = None
) -> Completion:
    """The ``Completion`` of one answer (a litellm response, or a ``BatchBody``), scrubbed of ``secrets``."""
    raw: dict[str, Any] = json.loads(scrub(json.dumps(response.model_dump(), default=str), secrets))
    choices = raw.get("choices") or []
    if not choices:
        raise ModelCallError("malformed_response", 1, "response has no choices")
    message = choices[0].get("message") or {}
    text = message.get("content") or ""
    tool_calls = [
        RawToolCall(
            id=str(call.get("id") or f"call_{i}"),
            name=str((call.get("function") or {}).get("name") or ""),
            arguments=str((call.get("function") or {}).get("arguments") or ""),
        )
        for i, call in enumerate(message.get("tool_calls") or [])
    ]
    if not text.strip() and not tool_calls:
        reason = choices[0].get("finish_reason")
        raise ModelCallError("empty_response", 1, f"no text and no tool calls (finish_reason={reason})")
    usage_raw = raw.get("usage") or {}
    cost, known = 0.0, True
    prompt_n = int(usage_raw.get("prompt_tokens") or 0)
    completion_n = int(usage_raw.get("completion_tokens") or 0)
    own = pipeline_prices(settings) if settings is not None else None
    pipeline_price = own is not None
    if own is not None:  # the pipeline's own price; it has no cache price, so cached tokens at full price
        cost = cost_at(own, prompt_n, completion_n)
    else:
        price_key = settings.model if settings is not None else str(raw.get("model") or "")
        # a model litellm could not price was handed a placeholder price (fastpaths/litellm_pricing.py):
        # what litellm computed from it is no price
        hidden = {} if unpriced(price_key) else getattr(response, "_hidden_params", {}) or {}
        value = hidden.get("response_cost")
        if value is None and not unpriced(price_key):
            try:
                value = litellm.completion_cost(completion_response=response)
            except Exception:  # noqa: BLE001 - unknown model price: recorded as unknown, not guessed
                value = None
            if value is None:
                mark_unpriced(price_key)
        cost = float(value or 0.0)
        known = value is not None
    cache_read, cache_write = cached_prompt_tokens(usage_raw)
    model = (settings.model if settings is not None else "") or str(raw.get("model") or "")
    return Completion(
        text=text,
        tool_calls=tool_calls,
        finish_reason=choices[0].get("finish_reason"),
        usage=Usage(
            prompt_tokens=prompt_n,
            completion_tokens=completion_n,
            cost_usd=cost,
            cached_prompt_tokens=cache_read,
            # litellm's cache discount is never mixed with a pipeline price (no cache price is known)
            cache_saved_usd=cache_saving(model, cache_read, cache_write)
            if known and not pipeline_price and cache_read + cache_write
            else 0.0,
            cached=False,
            cost_known=known,
        ),
        cost_known=known,
        raw=raw,
    )
