"""A price handed to litellm with each call, so that it does not look the model up in its price map.

Patches: nothing of litellm's code; it passes litellm's documented per-call custom pricing
(``input_cost_per_token``/``output_cost_per_token``) where the client never reads the price litellm
computes with it.

Why: litellm prices every answer itself before returning it. Looking the model up in its price map costs
about 0.6 ms of CPU per call (~15 % of litellm's own per-call CPU against the loopback server); for a model
it cannot price (vLLM, Ollama, local servers) the attempt walks the whole map and fails, on every call:
about 1.5 ms of litellm's ~12 ms per call (``bench/bench_runner.py``). With a price in the call it
multiplies instead.

What is passed, and why no figure changes (``models/completion.py`` reads the cost):

* a pipeline price (both per-token prices set, not both 0): that price. The client charges the pipeline's
  price and never reads litellm's.
* a pipeline price of exactly 0 (local servers), or no pipeline price for a model litellm has already
  failed to price in this process (``models.prices.unpriced``): ``PLACEHOLDER_PRICE``. Passed as 0, litellm
  would run its zero-cost diagnostics on every answer, which cost as much as the failed look-up. What
  litellm computes from the placeholder is not a price and is never read: the first is charged at the
  pipeline's $0, the second is recorded as of unknown cost, as when litellm failed. litellm keeps a
  per-call price on the call (it does not enter its price map, which tests/test_client.py checks), so the
  cost gate's look-up still finds no price for the model.
* anything else (a model priced by litellm's map): nothing; litellm's own price, with its cache-read prices.

Falls back: with ``AGENTJUDGE_NO_FAST_PATHS=1`` nothing is passed: litellm looks every model up (and fails
for the unpriced), and the client reads the same figures as above.
"""

from __future__ import annotations

from agentjudge import fastpaths
from agentjudge.types import ModelSettings

PLACEHOLDER_PRICE: dict[str, float] = {"input_cost_per_token": 1e-12, "output_cost_per_token": 1e-12}


def litellm_pricing(settings: ModelSettings, unpriced: bool) -> dict[str, float]:
    """The keyword arguments to add to a direct call's ``litellm.acompletion`` (a batch request line is the
    provider's body and carries nothing of litellm's). ``unpriced``: litellm has failed to price the model
    in this process."""
    if not fastpaths.enabled():
        return {}
    if settings.input_cost_per_token is None or settings.output_cost_per_token is None:
        return PLACEHOLDER_PRICE if unpriced else {}
    if settings.input_cost_per_token == 0 and settings.output_cost_per_token == 0:
        return PLACEHOLDER_PRICE
    return {
        "input_cost_per_token": settings.input_cost_per_token,
        "output_cost_per_token": settings.output_cost_per_token,
    }
