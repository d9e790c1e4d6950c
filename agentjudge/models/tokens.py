"""Token counts and the per-token prices that depend on how a prompt is served (list, cached, batch, both).

One small place for both because the dry run, the run summary and the spending cap all need the same
numbers: tokens counted by the model's own tokenizer through ``litellm.token_counter`` (tiktoken for
OpenAI models; litellm falls back to a generic tokenizer for models it has none for, and we fall back to
chars/4 only when litellm itself fails), and prices from litellm's bundled cost map, which lists a
cache-read price (``cache_read_input_token_cost``), a cache-write price for providers that charge one
(``cache_creation_input_token_cost``, Anthropic) and batch prices (``*_cost_per_token_batches``) per model.

Whether the prefix-cache discount also applies inside a batch is a per-provider fact, not a rule: litellm
lists it as ``cache_read_input_token_cost_batches`` (Anthropic, Gemini, the gpt-5 family, fine-tuned
OpenAI models) and Anthropic's batch-processing page says every usage type, cache reads and writes
included, is billed at 50 % there. For the other models (gpt-4o, gpt-4o-mini, gpt-4.1 among them) no such
price is listed, so the cache discount is not assumed inside a batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

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
