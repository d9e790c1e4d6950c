"""Where a model's calls go, and what one call target is.

A target (``target``) is what a model-fatal error stops and what one ``concurrency`` semaphore caps; the
endpoint (``endpoint_of``) is what a message about an unreachable model names, redacted.
"""

from __future__ import annotations

import os

from agentjudge.models.fleet import redact_url
from agentjudge.types import ModelSettings

Target = tuple[str, str | None, str | None, tuple[tuple[str, str], ...]]


def target(settings: ModelSettings) -> Target:
    """What a model-fatal error stops, and what one ``concurrency`` semaphore caps: the model at its
    endpoint (or at its fleet as a whole) with its credentials, named by their variables (``api_key_env``,
    and ``headers_env``'s headers and variables, never their values): the same model billed to two
    organisations, or behind a gateway with two users' header keys, is two targets; one's revoked key does
    not stop the other."""
    endpoint = ",".join(settings.api_bases) if settings.api_bases else settings.api_base
    return settings.model, endpoint, settings.api_key_env, tuple(sorted(settings.headers_env.items()))


# where litellm sends a provider's calls when no api_base is given: the environment's override, else the
# provider's own address (what an "unreachable" message names; models/preflight checks an override)
DEFAULT_ENDPOINTS = {
    "openai": (("OPENAI_BASE_URL", "OPENAI_API_BASE"), "https://api.openai.com/v1"),
    "anthropic": (("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"), "https://api.anthropic.com"),
    "azure": (("AZURE_API_BASE",), None),
    "gemini": (("GEMINI_API_BASE",), "https://generativelanguage.googleapis.com"),
    "mistral": (("MISTRAL_API_BASE",), "https://api.mistral.ai/v1"),
    "groq": (("GROQ_API_BASE",), "https://api.groq.com/openai/v1"),
    "together_ai": (("TOGETHERAI_API_BASE",), "https://api.together.xyz/v1"),
    "openrouter": (("OPENROUTER_API_BASE",), "https://openrouter.ai/api/v1"),
    "hosted_vllm": (("HOSTED_VLLM_API_BASE",), None),
    "ollama": (("OLLAMA_API_BASE",), "http://localhost:11434"),
}


def provider_of(model: str) -> str:
    """The provider prefix of a litellm model string (``openai/gpt-4o`` → ``openai``; bare names: openai)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def endpoint_override(model: str) -> str | None:
    """The base URL the environment sets for the model's provider (``OPENAI_BASE_URL``, ...), if any."""
    names, _ = DEFAULT_ENDPOINTS.get(provider_of(model), ((), None))
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def endpoint_of(settings: ModelSettings) -> str:
    """Where the model's calls go, for a message: ``api_base``/``api_bases`` (redacted), else the
    environment's override for the provider, else the provider's default address."""
    if settings.api_bases:
        return ", ".join(redact_url(u) for u in settings.api_bases)
    if settings.api_base:
        return redact_url(settings.api_base)
    override = endpoint_override(settings.model)
    provider = provider_of(settings.model)
    if override:
        names = " / ".join(DEFAULT_ENDPOINTS[provider][0])
        return f"{redact_url(override)} (from {names})"
    default = DEFAULT_ENDPOINTS.get(provider, ((), None))[1]
    return f"{default} (the {provider} default)" if default else f"the {provider} provider's endpoint"
