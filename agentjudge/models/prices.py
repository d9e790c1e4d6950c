"""Prices and token counts: what a model's tokens cost and how many a prompt has, asked in one place.

Every figure of money comes from here: the cost gate's worst case (``model_prices``, ``batch_token_prices``,
``prompt_token_bound``, ``max_completion_tokens``), an answer's price (``cost_at``, ``cache_saving``,
``cached_prompt_tokens``; ``models/completion.py``), the dry run's four cost columns (``Prices``' methods),
preflight's check that ``--max-cost`` can be kept. One look-up (``prices``) reads litellm's bundled cost
map; a pipeline's own ``input_cost_per_token``/``output_cost_per_token`` take its place where given.

Token counts come from the model's own tokenizer through ``litellm.token_counter`` (tiktoken for OpenAI
models; litellm falls back to a generic tokenizer for models it has none for, and we fall back to chars/4
only when litellm itself fails). litellm's map lists a cache-read price (``cache_read_input_token_cost``), a
cache-write price for providers that charge one (``cache_creation_input_token_cost``, Anthropic) and batch
prices (``*_cost_per_token_batches``) per model.

Whether the prefix-cache discount also applies inside a batch is a per-provider fact, not a rule: litellm
lists it as ``cache_read_input_token_cost_batches`` (Anthropic, Gemini, the gpt-5 family, fine-tuned
OpenAI models) and Anthropic's batch-processing page says every usage type, cache reads and writes
included, is billed at 50 % there. For the other models (gpt-4o, gpt-4o-mini, gpt-4.1 among them) no such
price is listed, so the cache discount is not assumed inside a batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentjudge.types import ModelSettings

# Providers whose batch API halves the list price (their pricing pages: OpenAI Batch API, Anthropic
# Message Batches, Google Vertex/Gemini batch prediction). Used only when litellm lists no batch price.
DOCUMENTED_BATCH_DISCOUNT = {"openai": 0.5, "azure": 0.5, "anthropic": 0.5, "vertex_ai": 0.5, "gemini": 0.5}
# Providers whose batch-processing page says cache reads and writes in a batch are billed at 50 % of their
# usual price (Anthropic: "all usage is charged at 50% of the standard API prices"). Used only when litellm
# lists no batch cache price for the model.
DOCUMENTED_BATCH_CACHE_DISCOUNT = {"anthropic": 0.5}
# The shortest prefix a provider caches (OpenAI: 1,024 tokens; Anthropic: 1,024 for most models).
MIN_CACHED_PREFIX_TOKENS = 1024


def _litellm() -> Any:
    from agentjudge.models.litellm_import import litellm_module  # the one place litellm is configured

    return litellm_module()


def count_tokens(
    model: str, *, text: str | None = None, messages: list[dict[str, Any]] | None = None
) -> tuple[int, bool]:
    """(tokens, counted_by_tokenizer) for a text or a list of chat messages as ``model`` would count them.

    ``counted_by_tokenizer`` is False when litellm could not count and chars/4 was used instead."""
    try:
        if messages is not None:
            return int(_litellm().token_counter(model=model, messages=messages)), True
        return int(_litellm().token_counter(model=model, text=text or "")), True
    except Exception:  # noqa: BLE001 - any tokenizer failure falls back to the rough estimate, flagged
        chars = len(text or "") + sum(len(str(m.get("content") or "")) for m in messages or [])
        return (chars + 3) // 4, False


@dataclass(frozen=True)
class Prices:
    """USD per token for one model; ``None`` where litellm's map has no such price."""

    input: float | None
    output: float | None
    cache_read: float | None
    cache_write: float | None
    batch_input: float | None
    batch_output: float | None
    batch_source: str  # "litellm" (listed batch prices), "documented 50%" or "none"
    # the cache prices inside a batch, only where the provider's stacking of the two discounts is listed
    batch_cache_read: float | None = None
    batch_cache_write: float | None = None
    batch_cache_source: str = "none"  # "litellm", "documented 50%" or "none" (not assumed)

    def list_cost(self, prompt: int, completion: int) -> float | None:
        """What ``prompt`` and ``completion`` tokens cost at list price; None when unknown."""
        if self.input is None or self.output is None:
            return None
        return prompt * self.input + completion * self.output

    def cached_cost(self, prompt: int, read: int, written: int, completion: int) -> float | None:
        """List price with ``read`` of the prompt tokens from the provider's prefix cache and ``written``
        to it (at the cache prices where listed)."""
        if self.input is None or self.output is None:
            return None
        cost = (prompt - read) * self.input + read * (
            self.cache_read if self.cache_read is not None else self.input
        )
        if self.cache_write is not None:
            cost += written * (self.cache_write - self.input)
        return cost + completion * self.output

    def batch_cost(self, prompt: int, completion: int) -> float | None:
        """The same tokens at the batch price; None when no batch price is known."""
        if self.batch_input is None or self.batch_output is None:
            return None
        return prompt * self.batch_input + completion * self.batch_output

    def batch_cached_cost(self, prompt: int, read: int, written: int, completion: int) -> float | None:
        """Batch prices with the cached prefixes at the in-batch cache prices where the provider lists them;
        the plain batch price (no cache discount assumed) where it does not."""
        if self.batch_input is None or self.batch_output is None:
            return None
        if self.batch_cache_read is None:
            return self.batch_cost(prompt, completion)
        cost = (prompt - read) * self.batch_input + read * self.batch_cache_read
        if self.batch_cache_write is not None:
            cost += written * (self.batch_cache_write - self.batch_input)
        return cost + completion * self.batch_output


@lru_cache(maxsize=256)
def prices(model: str) -> Prices:
    """The prices litellm's local cost map lists for ``model`` (provider prefix included or not)."""
    litellm = _litellm()
    info: dict[str, Any] | None = None
    for name in (model, model.partition("/")[2]):
        if name and name in litellm.model_cost:
            info = litellm.model_cost[name]
            break
    if info is None:
        try:
            info = dict(litellm.get_model_info(model))
        except Exception:  # noqa: BLE001 - not in the cost map
            info = {}
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    b_in, b_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    provider = model.partition("/")[0] if "/" in model else str(info.get("litellm_provider") or "")
    source = "litellm" if b_in is not None and b_out is not None else "none"
    if source == "none" and inp is not None and out is not None:
        factor = DOCUMENTED_BATCH_DISCOUNT.get(provider)
        if factor is not None:
            b_in, b_out, source = inp * factor, out * factor, "documented 50%"
    c_read, c_write = info.get("cache_read_input_token_cost"), info.get("cache_creation_input_token_cost")
    bc_read = info.get("cache_read_input_token_cost_batches")
    bc_write = info.get("cache_creation_input_token_cost_batches")
    cache_factor = DOCUMENTED_BATCH_CACHE_DISCOUNT.get(provider)
    bc_source = "litellm" if bc_read is not None and source != "none" else "none"
    if bc_source == "none" and source != "none" and c_read is not None and cache_factor is not None:
        bc_read, bc_source = c_read * cache_factor, "documented 50%"
    if bc_source != "none" and bc_write is None and c_write is not None:
        # a write premium with no batch price listed: the documented 50 %, else the full write price
        bc_write = c_write * (cache_factor or 1.0)
    return Prices(
        input=inp,
        output=out,
        cache_read=c_read,
        cache_write=c_write,
        batch_input=b_in if source != "none" else None,
        batch_output=b_out if source != "none" else None,
        batch_source=source,
        batch_cache_read=bc_read if bc_source != "none" else None,
        batch_cache_write=bc_write if bc_source != "none" else None,
        batch_cache_source=bc_source,
    )


def cache_saving(model: str, cache_read_tokens: int, cache_write_tokens: int = 0) -> float:
    """Money a call saved through the prefix cache: read tokens at list minus cache-read price, less the
    premium paid for written tokens where the provider charges one. 0.0 when the prices are unknown."""
    p = prices(model)
    if p.input is None:
        return 0.0
    saved = cache_read_tokens * (p.input - (p.cache_read if p.cache_read is not None else p.input))
    if p.cache_write is not None:
        saved -= cache_write_tokens * (p.cache_write - p.input)
    return saved


def cost_at(per_token: tuple[float, float], prompt: int, completion: int) -> float:
    """USD of ``prompt`` and ``completion`` tokens at (prompt, completion) prices per token."""
    return prompt * per_token[0] + completion * per_token[1]


def pipeline_prices(settings: ModelSettings) -> tuple[float, float] | None:
    """The pipeline's own price per (prompt, completion) token, when it gives both."""
    if settings.input_cost_per_token is not None and settings.output_cost_per_token is not None:
        return settings.input_cost_per_token, settings.output_cost_per_token
    return None


def model_prices(settings: ModelSettings) -> tuple[float, float] | None:
    """USD per (prompt, completion) token: the pipeline's price if given, else litellm's list price
    (``prices``); None if unknown, or listed at $0 (not a price a hard cap can rely on)."""
    own = pipeline_prices(settings)
    if own is not None:
        return own
    listed = prices(settings.model)
    if not listed.input and not listed.output:
        return None
    return float(listed.input or 0.0), float(listed.output or 0.0)


def litellm_provider(model: str) -> str | None:
    """The provider of a litellm model string: its prefix, else litellm's guess; None when unknown."""
    if "/" in model:
        return model.partition("/")[0]
    try:
        return str(_litellm().get_llm_provider(model)[1])
    except Exception:  # noqa: BLE001 - litellm raises several types for an unknown model
        return None


def batch_token_prices(settings: ModelSettings) -> tuple[float, float] | None:
    """USD per (prompt, completion) token in batch mode: litellm's batch prices where it lists them
    (or the provider's documented 50 %, as the dry run's batch column); a pipeline price is taken as the
    list price and discounted the same way. None when unknown."""
    listed = prices(settings.model)
    own = pipeline_prices(settings)
    if own is not None:
        factor = 0.5 if litellm_provider(settings.model) in ("openai", "azure") else 1.0
        return own[0] * factor, own[1] * factor
    if listed.batch_input is None or listed.batch_output is None:
        return None
    return listed.batch_input, listed.batch_output


def max_completion_tokens(settings: ModelSettings) -> int | None:
    """The most tokens one answer can have: ``max_tokens`` if set, else the model's limit if litellm knows."""
    if settings.max_tokens is not None:
        return settings.max_tokens
    return _litellm_max_tokens(settings.model)


@lru_cache(maxsize=256)
def _litellm_max_tokens(model: str) -> int | None:
    try:
        info = _litellm().get_model_info(model)
    except Exception:  # noqa: BLE001
        return None
    value = info.get("max_output_tokens") or info.get("max_tokens")
    return int(value) if value else None


def prompt_token_bound(settings: ModelSettings, messages: list[dict[str, Any]], tools: Any = None) -> int:
    """An upper estimate of a prompt's tokens: litellm's tokenizer count, or chars/3 if that is higher
    (a model whose tokenizer litellm does not have is counted with a stand-in that may undercount)."""
    chars = len(json.dumps(messages, ensure_ascii=False)) + (len(json.dumps(tools)) if tools else 0)
    try:
        counted = int(_litellm().token_counter(model=settings.model, messages=messages, tools=tools))
    except Exception:  # noqa: BLE001 - no tokenizer: the character bound alone
        counted = 0
    return max(counted, chars // 3 + 1)


def cached_prompt_tokens(usage: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens read from the provider's prefix cache, prompt tokens written to it) of one answer.

    OpenAI-style usage reports reads as ``prompt_tokens_details.cached_tokens``; Anthropic's as
    ``cache_read_input_tokens`` and writes as ``cache_creation_input_tokens`` (litellm passes both on)."""
    details = usage.get("prompt_tokens_details") or {}
    read = int(details.get("cached_tokens") or 0) or int(usage.get("cache_read_input_tokens") or 0)
    return read, int(usage.get("cache_creation_input_tokens") or 0)


# Models litellm could not price in an answer (vLLM, Ollama, local servers): found once per process, so an
# answer's cost is not looked up (and the look-up's exception raised) again on every call.
_UNPRICED: set[str] = set()


def unpriced(model: str) -> bool:
    """litellm failed to price an answer of ``model`` in this process (``mark_unpriced``)."""
    return model in _UNPRICED


def mark_unpriced(model: str) -> None:
    _UNPRICED.add(model)
