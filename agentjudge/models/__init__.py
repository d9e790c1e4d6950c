"""Model calls: the one client every generator and judge calls, and what it needs (README.md beside this).

The public names, each from the module that defines it (imported on first use, so that importing a
submodule, or ``agentjudge --help``, does not load the client and its dependencies):
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentjudge.models.cache import CallCache, cache_key
    from agentjudge.models.client import ModelClient, load_litellm, schema_response_format
    from agentjudge.models.completion import Completion, RawToolCall
    from agentjudge.models.cost_gate import CostGate
    from agentjudge.models.errors import (
        MODEL_FATAL_KINDS,
        RETRYABLE_KINDS,
        ModelCallError,
        classify,
    )
    from agentjudge.models.failures import REASONS, FailureLog, reason_of_kind
    from agentjudge.models.litellm_import import litellm_module
    from agentjudge.models.prices import (
        Prices,
        batch_token_prices,
        count_tokens,
        max_completion_tokens,
        model_prices,
        prices,
        prompt_token_bound,
    )
    from agentjudge.models.stats import ClientStats, ModelStats

_HOME = {
    "CallCache": "cache",
    "cache_key": "cache",
    "ModelClient": "client",
    "load_litellm": "client",
    "schema_response_format": "client",
    "Completion": "completion",
    "RawToolCall": "completion",
    "CostGate": "cost_gate",
    "MODEL_FATAL_KINDS": "errors",
    "RETRYABLE_KINDS": "errors",
    "ModelCallError": "errors",
    "classify": "errors",
    "REASONS": "failures",
    "FailureLog": "failures",
    "reason_of_kind": "failures",
    "litellm_module": "litellm_import",
    "Prices": "prices",
    "batch_token_prices": "prices",
    "count_tokens": "prices",
    "max_completion_tokens": "prices",
    "model_prices": "prices",
    "prices": "prices",
    "prompt_token_bound": "prices",
    "ClientStats": "stats",
    "ModelStats": "stats",
}
__all__ = [
    "CallCache",
    "ClientStats",
    "Completion",
    "CostGate",
    "FailureLog",
    "MODEL_FATAL_KINDS",
    "ModelCallError",
    "ModelClient",
    "ModelStats",
    "Prices",
    "REASONS",
    "RETRYABLE_KINDS",
    "RawToolCall",
    "batch_token_prices",
    "cache_key",
    "classify",
    "count_tokens",
    "litellm_module",
    "load_litellm",
    "max_completion_tokens",
    "model_prices",
    "prices",
    "prompt_token_bound",
    "reason_of_kind",
    "schema_response_format",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
