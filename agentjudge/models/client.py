"""The one choke point for every model call: litellm, cache, concurrency, retries, accounting.

Why one place: retries, rate limits, cost and the rule "an API key never reaches a file or an error"
are easy to get wrong once per call site and easy to get right once. Everything that talks to a model
(generators, judges, dataset rewrites) calls ``ModelClient.complete``.

* litellm is imported lazily (``agentjudge --help`` stays fast) with the local cost map (no network) and its
  own retries, telemetry and logging turned off — retries happen here, where they are counted.
* A semaphore per (model, api_base or api_bases, api_key_env, headers_env names) caps in-flight requests at
  ``settings.concurrency``; a model with ``api_bases`` (a fleet of replicas) spreads its calls over them
  and fails over (``models/fleet.py``).
* 429 / 5xx / timeouts / connection errors / malformed bodies are retried with exponential backoff and
  jitter (Retry-After honoured, capped); errors caused by the request (400/401/403/404/422) are not.
* After the last attempt ``ModelCallError(kind, attempts, message)`` is raised; an empty answer is an error
  too, never returned in place of one. Messages are scrubbed of the key.
* Errors that no retry can fix (auth: 401/403/missing key; bad_request/not_found: 400/404/422) stop the
  model: every later call to the same target (model, endpoint, api_key_env, headers_env names: ``_target``)
  fails at once with the first error, unsent (a fleet is stopped only when every endpoint refused it:
  ``_call_fleet``). So does a call whose every attempt failed to connect to a target that has never
  answered (``unreachable``: a wrong or dead endpoint, named in the message), after that one call's retries;
  calls of that target already retrying give up at their next attempt.
* ``cost_cap`` (``--max-cost``) is a hard cap: each call reserves its worst-case price (prompt tokens by
  litellm's tokenizer + ``max_tokens``) before it is sent; a call that does not fit is not sent.
* A model with ``batch: true`` is not called here while the runner has attached a batch queue
  (``self.batch``, ``runner.batches``): an unanswered call is queued and raises ``batch_pending``; an
  answered one is parsed like a direct answer and priced at the batch price (``models.batch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import os
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from pydantic import Field, ValidationError, model_validator

from agentjudge.models import http_shares
from agentjudge.models.cache import CallCache, cache_key
from agentjudge.models.credentials import MissingCredentialError, env_headers, required_env_headers
from agentjudge.models.fleet import (
    ENDPOINT_DOWN_KINDS,
    ENDPOINT_REFUSED_KINDS,
    EndpointCount,
    Fleet,
    redact_url,
)
from agentjudge.models.litellm_import import litellm_module
from agentjudge.models.tokens import cache_saving
from agentjudge.types import ModelSettings, Strict, Usage

log = logging.getLogger(__name__)

RETRYABLE_KINDS = frozenset({"rate_limit", "server_error", "timeout", "connection", "malformed_response"})
MODEL_FATAL_KINDS = frozenset({"auth", "bad_request", "not_found", "unreachable"})  # these stop the model
# "unreachable": connection failures (refused, DNS, TLS, dropped) on every attempt of a call to a target none
# of whose calls has ever connected (no HTTP answer of any status, ever): the endpoint is wrong or down, and
# every other call would spend its retries finding that out again. A target that answered once keeps its
# retries: a blip mid-run must not stop a grid.
# an attempt that ended so may have been billed with no usage counted (the server computed, or may have
# computed, an answer; an empty one's usage is not kept). Under --max-cost its worst case is counted as spent,
# before a retry or when the call fails; its unit's cost is unknown (``ModelCallError.unseen_cost``)
MAYBE_BILLED_KINDS = frozenset({"timeout", "malformed_response", "empty_response"})
# kinds of a failed attempt that got no HTTP answer (they say nothing of whether the endpoint is there)
NOT_AN_ANSWER_KINDS = frozenset({"connection", "timeout", "other"})
_AUTH_MARKERS = ("api_key client option must be set", "missing credentials", "no api key", "invalid api key")
MAX_BACKOFF_S = 30.0  # cap for one sleep, Retry-After included
BASE_BACKOFF_S = 0.5
HANG_GUARD_S = 5.0  # a call litellm has not ended this long after its own timeout is given up as a timeout


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


class BatchQueue(Protocol):
    """Where batch-mode calls are queued and their answers found (``runner.batches.BatchBroker``)."""

    def answer(self, key: str) -> Any: ...  # BatchAnswer | None

    def defer(self, key: str, settings: ModelSettings, line: dict[str, Any]) -> None: ...

    def delivered(self, key: str) -> None: ...


class ModelCallError(Exception):
    """A model call that failed for good. ``kind`` is one of RETRYABLE_KINDS or bad_request, auth (also
    a missing key), not_found, empty_response, cost_cap (not sent: over ``--max-cost``), other."""

    def __init__(self, kind: str, attempts: int, message: str, unseen_cost: bool = False) -> None:
        super().__init__(f"{kind} after {attempts} attempt(s): {message}")
        self.kind = kind
        self.attempts = attempts
        self.message = message
        # some attempt may have been billed with no usage to count (``MAYBE_BILLED_KINDS``): the call's
        # cost is not known, although nothing was answered
        self.unseen_cost = unseen_cost

    def usage_after(self, usage: Usage) -> Usage:
        """``usage`` (what the unit spent before this failure) as its row should say it: with an unknown
        cost when this call may have been billed unseen."""
        return _cost_unknown(usage) if self.unseen_cost else usage


@dataclass
class ModelStats:
    """Counters for one model. ``calls`` counts ``complete`` invocations (cache hits included)."""

    calls: int = 0
    cache_hits: int = 0
    requests: int = 0  # HTTP attempts actually sent
    failures: int = 0
    retries: int = 0
    retries_by_kind: dict[str, int] = field(default_factory=dict)  # rate_limit, server_error, timeout, ...
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache
    cost_usd: float = 0.0
    cache_saved_usd: float = 0.0  # what those cached tokens would have cost more at list price
    unknown_cost_calls: int = 0  # answers whose price litellm does not know (cost counted as 0.0)
    # requests that timed out or came back unreadable or empty (``MAYBE_BILLED_KINDS``): the provider may
    # have billed them, with no usage to count, so ``cost_usd`` is a lower bound
    unseen_cost_requests: int = 0

    @property
    def hit_rate(self) -> float:
        return self.cache_hits / self.calls if self.calls else 0.0

    def add(self, other: ModelStats) -> None:
        for name in self.__dataclass_fields__:
            if name == "retries_by_kind":
                for kind, n in other.retries_by_kind.items():
                    self.retries_by_kind[kind] = self.retries_by_kind.get(kind, 0) + n
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class ClientStats:
    per_model: dict[str, ModelStats] = field(default_factory=dict)
    # fleets only: model display name -> redacted endpoint URL -> requests answered / failed there
    per_endpoint: dict[str, dict[str, EndpointCount]] = field(default_factory=dict)

    def model(self, name: str) -> ModelStats:
        return self.per_model.setdefault(name, ModelStats())

    def endpoint(self, model: str, label: str) -> EndpointCount:
        return self.per_endpoint.setdefault(model, {}).setdefault(label, EndpointCount())

    @property
    def total(self) -> ModelStats:
        out = ModelStats()
        for stats in self.per_model.values():
            out.add(stats)
        return out

    def summary(self) -> dict[str, Any]:
        """Plain dict for logs / meta.json: totals, hit rate and a note when some costs are unknown."""

        def row(s: ModelStats) -> dict[str, Any]:
            out: dict[str, Any] = {
                **asdict(s),
                "hit_rate": round(s.hit_rate, 4),
                "cost_usd": round(s.cost_usd, 6),
            }
            notes = []
            if s.unknown_cost_calls:
                notes.append(f"{s.unknown_cost_calls} answer(s) had no known price; counted as $0")
            if s.unseen_cost_requests:
                notes.append(
                    f"{s.unseen_cost_requests} request(s) timed out or came back unreadable or empty: "
                    "maybe billed"
                )
            if notes:
                out["cost_note"] = "; ".join(notes)
            return out

        out = {"total": row(self.total), "per_model": {k: row(v) for k, v in sorted(self.per_model.items())}}
        if self.per_endpoint:
            out["per_endpoint"] = {
                model: {label: asdict(count) for label, count in endpoints.items()}
                for model, endpoints in sorted(self.per_endpoint.items())
            }
        return out


def cached_prompt_tokens(usage: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens read from the provider's prefix cache, prompt tokens written to it) of one answer.

    OpenAI-style usage reports reads as ``prompt_tokens_details.cached_tokens``; Anthropic's as
    ``cache_read_input_tokens`` and writes as ``cache_creation_input_tokens`` (litellm passes both on)."""
    details = usage.get("prompt_tokens_details") or {}
    read = int(details.get("cached_tokens") or 0) or int(usage.get("cache_read_input_tokens") or 0)
    return read, int(usage.get("cache_creation_input_tokens") or 0)


_litellm = litellm_module  # the name the rest of this module (and its tests) use


Target = tuple[str, str | None, str | None, tuple[tuple[str, str], ...]]


def _target(settings: ModelSettings) -> Target:
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


def _count_retry(stats: ModelStats, kind: str) -> None:
    """One more request for a call that failed with ``kind`` (one endpoint, or a fleet's next endpoint)."""
    stats.retries += 1
    stats.retries_by_kind[kind] = stats.retries_by_kind.get(kind, 0) + 1


def _backoff(base_s: float, attempts: int) -> float:
    """The wait before attempt ``attempts + 1``: doubling from ``base_s``, with jitter in its upper half so
    that clients failing together do not retry together."""
    delay = base_s * 2 ** (attempts - 1)
    return delay / 2 + random.uniform(0, delay / 2)


def _note_unseen(stats: ModelStats, kind: str) -> bool:
    """Count a request that may have been billed with no usage to count (``MAYBE_BILLED_KINDS``)."""
    if kind not in MAYBE_BILLED_KINDS:
        return False
    stats.unseen_cost_requests += 1
    return True


def _cost_unknown(usage: Usage) -> Usage:
    return usage.model_copy(update={"cost_known": False})


def _with_unseen(completion: Completion) -> Completion:
    """An answer after attempts that may have been billed unseen: its usage's cost is a lower bound
    (``cost_known`` False there; the Completion's own flag still says whether the answer's price is known,
    which the model's ``unknown_cost_calls`` counts)."""
    completion.usage = _cost_unknown(completion.usage)
    return completion


def _account(stats: ModelStats, completion: Completion) -> None:
    """Add a fresh (not cached) answer's tokens and money to the model's counters."""
    stats.prompt_tokens += completion.usage.prompt_tokens
    stats.completion_tokens += completion.usage.completion_tokens
    stats.cached_prompt_tokens += completion.usage.cached_prompt_tokens
    stats.cost_usd += completion.usage.cost_usd
    stats.cache_saved_usd += completion.usage.cache_saved_usd
    if not completion.cost_known:
        stats.unknown_cost_calls += 1


class _Answer:
    """A batch answer's body in the shape ``_to_completion`` reads (a response's ``model_dump``)."""

    def __init__(self, body: dict[str, Any] | None) -> None:
        self._body = body or {}
        self._hidden_params = {"response_cost": 0.0}  # priced by the caller at the batch price

    def model_dump(self) -> dict[str, Any]:
        return self._body


def load_litellm() -> None:
    """Import litellm now: callers do it before their event loop starts (the import blocks for seconds,
    so done inside a running loop it would stall every call in flight)."""
    _litellm()


# Models whose price litellm does not know (vLLM, Ollama, local servers): asked once per process, so an
# answer's cost is not looked up (and the lookup's exception raised) again on every call.
_NO_PRICE: set[str] = set()

# Handed to litellm (its documented per-call custom pricing) for a model in ``_NO_PRICE`` without a pipeline
# price. litellm prices every answer before returning it, and for a model it cannot price that attempt walks
# its whole price map and fails, on every call: about 1.5 ms of CPU of litellm's ~12 ms per call against the
# loopback server (bench/bench_runner.py). With a price in the call it multiplies instead. The figure it then
# computes is not a price and is never read: ``_to_completion`` records the cost of such a call as unknown,
# as it did when litellm failed. litellm keeps a per-call price on the call (it does not enter its price map,
# which tests/test_client.py checks), so the cost gate's lookup still finds no price for the model.
_PLACEHOLDER_PRICE: dict[str, float] = {"input_cost_per_token": 1e-12, "output_cost_per_token": 1e-12}


def _litellm_pricing(settings: ModelSettings) -> dict[str, float]:
    """litellm's documented per-call custom pricing, from the pipeline's own price (direct calls only: a
    batch request line is the provider's body and carries nothing of litellm's).

    litellm prices every answer itself before returning it; looking the model up in its price map costs
    about 0.6 ms of CPU per call (~15 % of litellm's own per-call CPU against the loopback server). With a
    pipeline price this client charges that price and never reads litellm's (``_to_completion``), so
    handing litellm the same price changes no figure and spares the lookup. Models priced by litellm's
    map keep litellm's own price (with its cache-read prices): nothing is passed for them. Two cases get
    ``_PLACEHOLDER_PRICE`` instead: a pipeline price of exactly 0 (local servers; passed as 0, litellm would
    run its zero-cost diagnostics on every answer, which cost as much as the failed lookup), charged at the
    pipeline's $0 as before; and a model without a pipeline price that litellm has already failed to price in
    this process, whose cost stays unknown."""
    if settings.input_cost_per_token is None or settings.output_cost_per_token is None:
        return _PLACEHOLDER_PRICE if settings.model in _NO_PRICE else {}
    if settings.input_cost_per_token == 0 and settings.output_cost_per_token == 0:
        return _PLACEHOLDER_PRICE
    return {
        "input_cost_per_token": settings.input_cost_per_token,
        "output_cost_per_token": settings.output_cost_per_token,
    }


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def classify(exc: BaseException) -> str:
    """Map a litellm/httpx/openai exception to an error kind (decides whether to retry)."""
    if isinstance(exc, MissingCredentialError):
        return "auth"
    name = type(exc).__name__
    text = str(exc).lower()
    status = _status_of(exc)
    if isinstance(exc, asyncio.TimeoutError) or "Timeout" in name or status == 408:
        return "timeout"
    if status == 429 or "RateLimit" in name:
        return "rate_limit"
    if (
        status in (401, 403)
        or name in ("AuthenticationError", "PermissionDeniedError")
        or any(marker in text for marker in _AUTH_MARKERS)  # litellm wraps a missing key as a 500
    ):
        return "auth"
    if status == 404 or name == "NotFoundError":
        return "not_found"
    if (status is not None and 400 <= status < 500) or name in (
        "BadRequestError",
        "UnprocessableEntityError",
        "ContextWindowExceededError",
        "UnsupportedParamsError",
    ):
        return "bad_request"  # the request itself is wrong: sending it again cannot help
    if isinstance(exc, json.JSONDecodeError) or any(
        marker in text for marker in ("jsondecodeerror", "expecting value", "invalid json", "unable to parse")
    ):
        return "malformed_response"
    connection_markers = ("connection error", "connection refused", "connecterror", "connection reset")
    if (
        "Connection" in name
        or isinstance(exc, ConnectionError | OSError)
        or any(
            marker in text
            for marker in connection_markers  # litellm wraps these as InternalServerError
        )
    ):
        return "connection"
    if (status is not None and status >= 500) or name in ("InternalServerError", "ServiceUnavailableError"):
        return "server_error"
    if status == 200:
        return "malformed_response"
    return "other"


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header, if the provider sent one."""
    for holder in (getattr(exc, "response", None), exc):
        headers = getattr(holder, "headers", None) or getattr(holder, "litellm_response_headers", None)
        if headers is None:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            return None
    return None


_SECRET_ENV_RE = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.IGNORECASE)


def _unsent(completion: Completion) -> Completion:
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


def settings_secrets(settings: ModelSettings) -> list[str]:
    """``_secrets`` of a model's own key and ``headers_env`` values, read from the environment."""
    api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    return _secrets(api_key, env_headers(settings))


# A value shorter than this is a placeholder, not a secret: local servers take any key, and "EMPTY", "none" or
# "x" is what users give them. Scrubbed, it would be replaced in every answer and error it occurs in (a
# judge's "none" rationale, a word of a generated argument), corrupting what is stored.
MIN_SECRET_CHARS = 8


def _secrets(api_key: str | None, headers: dict[str, str] | None = None) -> list[str]:
    """Values to scrub: the call's key, its ``headers_env`` values (and the credential after a scheme such
    as ``Basic``/``Bearer``), and every key-like env var (litellm reads e.g. OPENAI_API_KEY itself when no
    ``api_key_env`` is given, and a provider may echo it in an error), of ``MIN_SECRET_CHARS`` or more."""
    values = set(_env_secrets())
    if api_key:
        values.add(api_key)
    for value in (headers or {}).values():
        values.add(value)
        values.add(value.partition(" ")[2].strip())
    values = {value for value in values if len(value) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)  # longest first: no partial replacement of a longer key


# the environment as last scanned (its raw name/value pairs) and the key-like values found in it
_ENV_SCAN: tuple[tuple[tuple[Any, Any], ...], frozenset[str]] = ((), frozenset())


def _env_secrets() -> frozenset[str]:
    """The values of key-like env vars (``_SECRET_ENV_RE``; ``_secrets`` drops the short), scanned again when
    the environment changed: decoding and matching every variable cost ~80 µs, on every call; comparing
    CPython's undecoded pairs (``os.environ._data``, which every ``os.environ`` write updates) ~1 µs."""
    global _ENV_SCAN
    raw = getattr(os.environ, "_data", None)
    pairs = tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())
    scanned, found = _ENV_SCAN
    if pairs != scanned:
        found = frozenset(v for k, v in os.environ.items() if _SECRET_ENV_RE.search(k))
        _ENV_SCAN = (pairs, found)
    return found


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def schema_response_format(
    settings: ModelSettings, name: str, schema: dict[str, Any], strict: bool = True
) -> dict[str, Any]:
    """``response_format`` carrying ``schema`` in the wire form ``settings.structured_output`` names
    (``strict`` only for schemas that meet OpenAI's strict rules: every key required, no extra keys)."""
    if settings.structured_output == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


def model_prices(settings: ModelSettings) -> tuple[float, float] | None:
    """USD per (prompt, completion) token: the pipeline's price if given, else litellm's; None if unknown."""
    if settings.input_cost_per_token is not None and settings.output_cost_per_token is not None:
        return settings.input_cost_per_token, settings.output_cost_per_token
    return _litellm_prices(settings.model)


@lru_cache(maxsize=256)
def _litellm_prices(model: str) -> tuple[float, float] | None:
    """litellm's list price of ``model``, resolved once per model (the cost gate asks on every call)."""
    try:
        info = _litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises several types for "not in the cost map"
        return None
    prompt, completion = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not prompt and not completion:  # missing, or listed at $0: not a price a hard cap can rely on
        return None
    return float(prompt or 0.0), float(completion or 0.0)


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


@dataclass
class CostGate:
    """``--max-cost`` for one invocation: money spent plus money reserved by calls in flight never
    exceeds ``cap``. A call that would fit once the calls in flight have settled waits for them; one that
    cannot fit even then is refused."""

    cap: float
    spent: float = 0.0
    reserved: float = 0.0
    refused: int = 0  # calls not sent because they did not fit
    _changed: asyncio.Condition | None = field(default=None, repr=False)

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    held: float = 0.0  # of reserved: batch requests, settled only when their batch is read (never waited on)

    async def reserve(self, amount: float, hold: bool = False) -> bool:
        """``hold``: a batch request's reservation, refused at once rather than waited for."""
        async with self._condition():
            while self.spent + self.reserved + amount > self.cap + 1e-12:
                if hold or self.reserved - self.held <= 0 or self.spent + amount > self.cap + 1e-12:
                    self.refused += 1
                    return False
                await self._condition().wait()
            self.reserved += amount
            self.held += amount if hold else 0.0
            return True

    async def settle(self, reserved: float, actual: float, held: bool = False) -> None:
        async with self._condition():
            self.reserved -= reserved
            self.held -= reserved if held else 0.0
            self.spent += actual
            self._condition().notify_all()


_UNLIMITED: contextlib.nullcontext[None] = contextlib.nullcontext()  # the share of a process without shares


def _http_provider(settings: ModelSettings) -> bool:
    """Whether litellm sends this model's requests through httpx (``http_shares.HTTP_PROVIDERS``)."""
    try:
        provider = _litellm().get_llm_provider(settings.model, api_base=settings.api_base)[1]
    except Exception:  # noqa: BLE001 - unknown to litellm: its share stays around whole calls
        return False
    return provider in http_shares.HTTP_PROVIDERS


class ModelClient:
    """Async client shared by every generator and judge of a run (one per process is the intent)."""

    def __init__(
        self,
        cache: CallCache | None = None,
        *,
        read_cache: bool = True,
        backoff_base_s: float = BASE_BACKOFF_S,
        max_cost_usd: float | None = None,
        call_limits: dict[str, int] | None = None,
    ) -> None:
        self.cache = cache
        self.read_cache = read_cache
        self.cost_gate = None if max_cost_usd is None else CostGate(max_cost_usd)
        self.stopped: dict[Target, ModelCallError] = {}  # model-fatal errors
        self.connected: set[Target] = set()  # targets that have answered (any HTTP status) at least once
        self.backoff_base_s = backoff_base_s  # first retry waits ~this long, doubling; tests use a few ms
        self.stats = ClientStats()
        self._semaphores: dict[tuple[int, Target], asyncio.Semaphore] = {}
        # a worker process's share of each model's calls in flight, by display name (runner/workers.py
        # splits each model's `concurrency` over the workers): held around the request alone (around the HTTP
        # exchange once the model was seen sending through httpx: models/http_shares.py), so a unit's
        # prompt building, cache lookup and parsing never hold one. None: no shares (one process)
        self.call_limits = None if call_limits is None else dict(call_limits)
        self._shares: dict[tuple[int, str], asyncio.Semaphore] = {}
        # where a model's share is held, by display name (models/http_shares.py): True around each HTTP
        # exchange (a call was seen sending through httpx), None around whole calls while its calls are
        # watched, False around whole calls for good (a provider not known to send through httpx)
        self._http_shares: dict[str, bool | None] = {}
        if call_limits is not None:
            http_shares.install()
        self.batch: BatchQueue | None = None  # set by the runner when the pipeline has batch: true models
        self._batch_reserved: dict[str, float] = {}  # cache key -> worst case held under --max-cost
        self._batch_read: set[tuple[str, str]] = set()  # (cache key, unit) answers counted in stats
        self._batch_counted: set[str] = set()  # cache keys whose sends are in stats (``_count_sends``)
        self._fleets: dict[tuple[int, Target], Fleet] = {}
        # requests being sent, by (event loop, cache key): an identical request made meanwhile waits for it
        # and reads its answer from the cache instead of paying for the same question twice (what the
        # cache does anyway when the two are not sent at the same moment)
        self._in_flight: dict[tuple[int, str], asyncio.Future[None]] = {}

    def _fleet(self, settings: ModelSettings) -> Fleet:
        """The endpoint states of a model with ``api_bases``: one per event loop and target, like the
        semaphores — an endpoint that refuses one entry's credentials (401) is out for that entry only, not
        for another entry of the same model and endpoints with other credentials."""
        key = (id(asyncio.get_running_loop()), _target(settings))
        fleet = self._fleets.get(key)
        if fleet is None:
            fleet = self._fleets[key] = Fleet.of(
                list(settings.api_bases or ()),
                settings.concurrency,
                settings.endpoint_concurrency,
                self.backoff_base_s,
            )
        return fleet

    def _semaphore(self, settings: ModelSettings) -> asyncio.Semaphore:
        key = (id(asyncio.get_running_loop()), _target(settings))  # a fleet has its own, as its own model
        sem = self._semaphores.get(key)
        if sem is None:
            sem = self._semaphores[key] = asyncio.Semaphore(max(1, settings.concurrency))
        return sem

    def _share(self, settings: ModelSettings) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """This process's share of the model's calls in flight (``call_limits``); unlimited without shares."""
        if self.call_limits is None:
            return _UNLIMITED
        key = (id(asyncio.get_running_loop()), settings.display_name)
        sem = self._shares.get(key)
        if sem is None:
            limit = self.call_limits.get(settings.display_name, 0)
            if limit < 1:  # the parent routes a model's units only to workers holding a share of it
                name = settings.display_name
                raise RuntimeError(f"{name}: this worker process holds no share of its calls")
            sem = self._shares[key] = asyncio.Semaphore(limit)
        return sem

    def _http_slot(
        self, settings: ModelSettings, share: asyncio.Semaphore | contextlib.nullcontext[None]
    ) -> tuple[http_shares.Slot | None, asyncio.Semaphore | contextlib.nullcontext[None]]:
        """(the call's ``http_shares.Slot``, what the call itself holds). Without shares: no slot, nothing
        more. A model whose calls were seen sending through httpx: the slot holds the share around each
        request, the call nothing more. Else the call holds the share, and the slot watches how it sends."""
        if not isinstance(share, asyncio.Semaphore):
            return None, share
        name = settings.display_name
        if name not in self._http_shares:  # asked of litellm once per model and process
            self._http_shares[name] = None if _http_provider(settings) else False
        known = self._http_shares[name]
        if known:
            return http_shares.Slot(share), _UNLIMITED
        return (http_shares.Slot(None) if known is None else None), share

    def _learn_http(self, settings: ModelSettings, slot: http_shares.Slot) -> None:
        """After a call: a model of an httpx provider whose request went out through httpx, unstreamed, holds
        its share around the exchange from now on; one seen streaming holds it around whole calls again."""
        name = settings.display_name
        if self._http_shares.get(name) is False:
            return
        if slot.streamed:
            self._http_shares[name] = False
        elif http_shares.sends_through_httpx(slot):
            self._http_shares[name] = True

    def widen(self, shares: dict[str, int]) -> None:
        """Take over more of some models' calls in flight (a worker process that held them has exited)."""
        if self.call_limits is None:
            return
        for name, more in shares.items():
            self.call_limits[name] = self.call_limits.get(name, 0) + more
            for (_, held), sem in self._shares.items():
                if held == name:
                    for _ in range(more):
                        sem.release()  # an asyncio.Semaphore grows past its start value on release

    @staticmethod
    def request_fields(
        settings: ModelSettings,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        temperature: float | None,
        sample_index: int,
        response_format: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Everything that changes the answer (the cache key's content). No credentials by construction."""
        optional = {} if response_format is None else {"response_format": response_format}
        return optional | {
            "model": settings.model,
            # a fleet is named, not listed: any replica's answer will do, adding one keeps the cache, and two
            # fleets of one model string (a small and a big deployment) keep apart
            "api_base": f"fleet:{settings.display_name}" if settings.api_bases else settings.api_base,
            "messages": messages,
            "tools": tools,
            "temperature": temperature if temperature is not None else settings.temperature,
            "max_tokens": settings.max_tokens,
            "extra": settings.extra,
            "drop_params": settings.drop_params,
            "sample_index": sample_index,
        }

    async def complete(
        self,
        settings: ModelSettings,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        sample_index: int = 0,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, from the cache when allowed, else from the provider with retries.

        A cache hit returns the stored answer with ``usage.cached=True`` and ``cost_usd=0.0`` (nothing was
        spent: a known $0, ``cost_known`` True); its token counts are those of the original call and are
        not added to ``stats`` tokens.
        """
        stats = self.stats.model(settings.display_name)
        stats.calls += 1
        fields = self.request_fields(settings, messages, tools, temperature, sample_index, response_format)
        key = cache_key(fields)
        if settings.batch and self.batch is not None and self._batch_replay(key):
            # a unit run again for a later call (a re-ask, the next turn) reads its earlier batch answer
            # again, with that answer's usage, as the same unit would have in one direct pass
            return await self._batched(settings, key, fields, stats, settings_secrets(settings))
        if self.cache is not None and self.read_cache:
            cached = self._cached(key, settings)
            flight = (id(asyncio.get_running_loop()), key)
            pending = self._in_flight.get(flight) if cached is None else None
            if pending is not None:  # the identical request is being sent: wait, then read its answer
                await asyncio.shield(pending)
                cached = self._cached(key, settings)  # None if it failed: then ask ourselves
            if cached is not None:
                stats.cache_hits += 1
                return _unsent(cached)
            if pending is None:
                self._in_flight[flight] = done = asyncio.get_running_loop().create_future()
                try:
                    return await self._send(settings, fields, key, stats)
                finally:
                    del self._in_flight[flight]
                    done.set_result(None)
        return await self._send(settings, fields, key, stats)

    def _cached(self, key: str, settings: ModelSettings) -> Completion | None:
        hit = self.cache.get(key) if self.cache is not None else None
        try:
            return None if hit is None else Completion.model_validate(hit)
        except ValidationError:  # written by an older/newer format: ask again and overwrite
            log.warning("ignoring an unreadable cache entry %s for %s", key[:12], settings.display_name)
            return None

    async def _send(
        self, settings: ModelSettings, fields: dict[str, Any], key: str, stats: ModelStats
    ) -> Completion:
        """Send one request to the provider (not from the cache), account for it, store the answer."""
        earlier = self.stopped.get(_target(settings))
        if earlier is not None:
            stats.failures += 1
            raise ModelCallError(earlier.kind, 0, f"not sent, the model is stopped: {earlier.message}")
        api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        if settings.api_key_env and not api_key:
            stats.failures += 1
            raise self._stop(
                settings,
                ModelCallError(
                    "auth",
                    0,
                    f"environment variable {settings.api_key_env} (api_key_env) is not set or empty",
                ),
            )
        try:
            headers = required_env_headers(settings)
        except MissingCredentialError as exc:
            stats.failures += 1
            raise self._stop(settings, ModelCallError("auth", 0, str(exc))) from None
        if settings.batch and self.batch is not None:
            return await self._batched(settings, key, fields, stats, _secrets(api_key, headers))
        worst = await self._reserve(settings, fields)
        reserved = worst  # what this call holds in the cost gate now (0 between a retry's settle and reserve)
        secrets = _secrets(api_key, headers)
        kwargs = self._kwargs(settings, fields, api_key, headers) | _litellm_pricing(settings)

        async def rebill(attempts: int) -> None:
            """Before retrying an attempt that may have been billed (it timed out, or its answer could not be
            read): its worst case is spent, and the retry reserves its own, or is not sent."""
            nonlocal reserved
            assert self.cost_gate is not None
            await self.cost_gate.settle(reserved, reserved)
            reserved = 0.0
            if not await self.cost_gate.reserve(worst):
                stats.failures += 1
                gate = self.cost_gate
                raise ModelCallError(
                    "cost_cap",
                    attempts,
                    f"not retried: attempt {attempts} may have been billed (its worst case ${worst:.6f} is "
                    f"counted as spent) and another does not fit under --max-cost ${gate.cap:.4f} "
                    f"(spent ${gate.spent:.6f}, reserved ${gate.reserved:.6f})",
                    unseen_cost=True,
                )
            reserved = worst

        try:
            on_retry = rebill if self.cost_gate is not None else None
            completion = await self._call_with_retries(settings, kwargs, secrets, stats, on_retry)
        except ModelCallError as exc:
            if self.cost_gate is not None:  # a refused request is not billed; a timed-out one may have been
                await self.cost_gate.settle(reserved, reserved if exc.kind in MAYBE_BILLED_KINDS else 0.0)
            raise (self._stop(settings, exc) if exc.kind in MODEL_FATAL_KINDS else exc) from None
        except BaseException:  # cancelled (or worse) mid-request: it may have been billed, so the worst case
            if self.cost_gate is not None:  # is spent; a reservation never settled would block later calls
                await self.cost_gate.settle(reserved, reserved)
            raise
        if self.cost_gate is not None:
            billed = completion.usage.cost_usd
            if completion.usage.prompt_tokens == 0 and completion.usage.completion_tokens == 0:
                billed = reserved  # the server reported no usage: assume the worst case was spent
            elif billed > reserved:
                log.warning(
                    "%s: a call cost $%.6f, more than its reserved worst case $%.6f",
                    settings.display_name,
                    billed,
                    reserved,
                )
            await self.cost_gate.settle(reserved, billed)
        if self.cache is not None:
            self.cache.put(key, settings.model, _scrub(completion.model_dump_json(), secrets))
        return completion

    def _stop(self, settings: ModelSettings, exc: ModelCallError) -> ModelCallError:
        """Remember a model-fatal error: later calls to this model fail with it at once, unsent."""
        self.stopped.setdefault(_target(settings), exc)
        return exc

    def _unreachable(self, settings: ModelSettings, attempts: int, message: str) -> ModelCallError:
        """The error of a call none of whose attempts connected, to a target that never answered: it names
        the endpoint (redacted) and the cause, and says how to check the set-up; ``_send`` stops the model."""
        where = endpoint_of(settings)
        return ModelCallError(
            "unreachable",
            attempts,
            f"could not connect to {where} on any of {attempts} attempt(s), and no call of "
            f"{settings.display_name} has ever connected (last: {message}); the model is stopped. Check the "
            "endpoint, the network and any proxy, e.g. with `agentjudge run PIPELINE --out RUNDIR --dry-run "
            "--probe`",
        )

    def _give_up_if_stopped(
        self, settings: ModelSettings, stats: ModelStats, attempts: int, unseen: bool
    ) -> None:
        """Before a retry: a call of a target another call has stopped since (it was found unreachable, or
        refused the key) is not sent again; it fails with that error."""
        earlier = self.stopped.get(_target(settings))
        if earlier is not None:
            stats.failures += 1
            raise ModelCallError(
                earlier.kind, attempts, f"not retried, the model is stopped: {earlier.message}", unseen
            )

    def _batch_replay(self, key: str) -> bool:
        from agentjudge.models.batch import current_unit

        return (key, current_unit()) in self._batch_read

    async def _batched(
        self, settings: ModelSettings, key: str, fields: dict[str, Any], stats: ModelStats, secrets: list[str]
    ) -> Completion:
        """A batch-mode call: queue it (``batch_pending``) or return its answer as a direct call would."""
        from agentjudge.models.batch import batch_token_prices, current_unit, request_line

        assert self.batch is not None
        answer = self.batch.answer(key)
        if answer is None or answer.state == "pending":
            if key not in self._batch_reserved:
                self._batch_reserved[key] = await self._reserve(settings, fields, batch=True)
            self.batch.defer(key, settings, request_line(key, self._kwargs(settings, fields, None)))
            stats.calls -= 1  # not a call yet: counted when its answer is read
            raise ModelCallError("batch_pending", 0, "queued for the provider's batch API")
        reserved = self._batch_reserved.pop(key, 0.0)
        if answer.state == "failed":
            if self.cost_gate is not None:
                await self.cost_gate.settle(reserved, 0.0, held=True)
            stats.failures += 1
            self._count_sends(key, answer, stats)
            # not a model stop: the batch's other answers are paid for and are read all the same
            raise ModelCallError(answer.kind, answer.submissions, _scrub(answer.error, secrets))
        if not answer.fresh:  # another unit of this run already received it: a cache hit, as direct
            stats.cache_hits += 1
            return _unsent(self._to_completion(_litellm(), _Answer(answer.body), secrets, settings))
        self._count_sends(key, answer, stats)
        try:
            completion = self._to_completion(_litellm(), _Answer(answer.body), secrets, settings)
        except ModelCallError as exc:
            if self.cost_gate is not None:
                await self.cost_gate.settle(reserved, 0.0, held=True)
            stats.failures += 1
            raise ModelCallError(exc.kind, 1, exc.message) from None
        batch_prices = batch_token_prices(settings)
        usage = completion.usage
        cost = 0.0
        if batch_prices is not None:
            cost = usage.prompt_tokens * batch_prices[0] + usage.completion_tokens * batch_prices[1]
        completion.cost_known = batch_prices is not None  # and on the usage, which reaches the result
        completion.usage = usage.model_copy(update={"cost_usd": cost, "cost_known": completion.cost_known})
        replay = (key, current_unit()) in self._batch_read
        if replay:  # the unit was run again for a later call (a re-ask, the next turn): not a new call
            stats.calls -= 1  # (its requests were counted at the first read)
            return completion
        self._batch_read.add((key, current_unit()))
        if self.cost_gate is not None:
            await self.cost_gate.settle(reserved, cost if usage.prompt_tokens else reserved, held=True)
        _account(stats, completion)  # completion.usage.cost_usd is the batch price set above
        self.batch.delivered(key)
        if self.cache is not None:
            self.cache.put(key, settings.model, json.loads(_scrub(completion.model_dump_json(), secrets)))
        return completion

    def _count_sends(self, key: str, answer: Any, stats: ModelStats) -> None:
        """A batch request's submissions as requests, and the sends after the first as retries by why it
        was sent again (``BatchAnswer.retries``), the first time any unit reads its answer; nothing after
        (the units sharing one request, or reading it again, sent nothing more)."""
        if key in self._batch_counted:
            return
        self._batch_counted.add(key)
        stats.requests += answer.submissions
        for kind, n in sorted(answer.retries.items()):
            stats.retries += n
            stats.retries_by_kind[kind] = stats.retries_by_kind.get(kind, 0) + n

    async def _reserve(self, settings: ModelSettings, fields: dict[str, Any], batch: bool = False) -> float:
        """Reserve the call's worst-case price under ``--max-cost``; raise ``cost_cap`` if it does not fit.
        ``batch``: at the batch price, held until the batch is read (``CostGate.reserve(hold=True)``)."""
        if self.cost_gate is None:
            return 0.0
        from agentjudge.models.batch import batch_token_prices

        prices = batch_token_prices(settings) if batch else model_prices(settings)
        out_tokens = max_completion_tokens(settings)
        if prices is None or out_tokens is None:
            missing = "a price" if prices is None else "a max_tokens"
            self.cost_gate.refused += 1
            self.stats.model(settings.display_name).calls -= 1  # not a call: nothing was asked
            raise ModelCallError("cost_cap", 0, f"not sent: --max-cost needs {missing} for {settings.model}")
        worst = prompt_token_bound(settings, fields["messages"], fields["tools"]) * prices[0]
        worst += out_tokens * prices[1]
        if not await self.cost_gate.reserve(worst, hold=batch):
            self.stats.model(settings.display_name).calls -= 1  # not a call: nothing was asked
            gate = self.cost_gate
            raise ModelCallError(
                "cost_cap",
                0,
                f"not sent: worst case ${worst:.6f} does not fit under --max-cost ${gate.cap:.4f} "
                f"(spent ${gate.spent:.6f}, reserved ${gate.reserved:.6f})",
            )
        return worst

    @staticmethod
    def _kwargs(
        settings: ModelSettings,
        fields: dict[str, Any],
        api_key: str | None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """litellm's arguments for one call. ``headers``: the ``headers_env`` values, sent as
        ``extra_headers`` over any of ``extra``'s (they never enter ``fields``, the cache key)."""
        kwargs: dict[str, Any] = dict(copy.deepcopy(settings.extra))
        if headers:
            kwargs["extra_headers"] = {**(kwargs.get("extra_headers") or {}), **headers}
        kwargs.update(
            model=settings.model,
            messages=copy.deepcopy(fields["messages"]),
            timeout=settings.timeout_s,
            num_retries=0,
            max_retries=0,
        )
        if fields["tools"]:
            kwargs["tools"] = copy.deepcopy(fields["tools"])
        if fields["temperature"] is not None:
            kwargs["temperature"] = fields["temperature"]
        if settings.max_tokens is not None:
            kwargs["max_tokens"] = settings.max_tokens
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if api_key:
            kwargs["api_key"] = api_key
        if settings.drop_params:
            kwargs["drop_params"] = True
        if fields.get("response_format") is not None:
            kwargs["response_format"] = copy.deepcopy(fields["response_format"])
        return kwargs

    async def _call_with_retries(
        self,
        settings: ModelSettings,
        kwargs: dict[str, Any],
        secrets: list[str],
        stats: ModelStats,
        rebill: Callable[[int], Awaitable[None]] | None = None,
    ) -> Completion:
        """``rebill(attempts)``: awaited before retrying an attempt that may have been billed
        (``MAYBE_BILLED_KINDS``); under ``--max-cost`` it counts that attempt's worst case as spent and
        reserves the retry's, raising ``cost_cap`` when the retry does not fit."""
        if settings.api_bases:
            return await self._call_fleet(settings, kwargs, secrets, stats, rebill)
        litellm = _litellm()
        try:
            share = self._share(settings)
        except RuntimeError as exc:  # not sent, so no request counted
            stats.failures += 1
            raise ModelCallError("other", 0, f"not sent: {exc}") from None
        attempts = 0
        unseen = False  # some attempt may have been billed with no usage to count
        while True:
            attempts += 1
            stats.requests += 1
            slot, held = self._http_slot(settings, share)
            token = http_shares.SLOT.set(slot)
            try:
                # the guard against a call litellm never ends; wait_for runs the call as a task of its own (a
                # deadline on this task instead, asyncio.timeout, measured 5-15 % fewer calls per second)
                try:
                    async with held, self._semaphore(settings):
                        response = await asyncio.wait_for(
                            litellm.acompletion(**kwargs), timeout=settings.timeout_s + HANG_GUARD_S
                        )
                finally:
                    http_shares.SLOT.reset(token)
                    if slot is not None:
                        self._learn_http(settings, slot)
                self.connected.add(_target(settings))
                completion = self._to_completion(litellm, response, secrets, settings)
            except ModelCallError as exc:  # empty answer: retrying a deterministic call will not help
                stats.failures += 1
                unseen = _note_unseen(stats, exc.kind) or unseen
                raise ModelCallError(exc.kind, attempts, exc.message, unseen) from None
            except Exception as exc:  # noqa: BLE001 - every provider error is classified below
                kind = classify(exc)
                message = _scrub(f"{type(exc).__name__}: {exc}", secrets)[:2000]
                if kind not in NOT_AN_ANSWER_KINDS:  # an HTTP status came back: the endpoint is there
                    self.connected.add(_target(settings))
                unseen = _note_unseen(stats, kind) or unseen
                if kind not in RETRYABLE_KINDS or attempts > settings.max_retries:
                    stats.failures += 1
                    if kind == "connection" and _target(settings) not in self.connected:
                        raise self._unreachable(settings, attempts, message) from None
                    raise ModelCallError(kind, attempts, message, unseen) from None
                _count_retry(stats, kind)
                if rebill is not None and kind in MAYBE_BILLED_KINDS:
                    await rebill(attempts)
                delay = _retry_after(exc)
                delay = min(
                    _backoff(self.backoff_base_s, attempts) if delay is None else delay, MAX_BACKOFF_S
                )
                log.info("%s: %s (attempt %d), retry in %.2fs", settings.display_name, kind, attempts, delay)
                await asyncio.sleep(delay)
                self._give_up_if_stopped(settings, stats, attempts, unseen)
                continue
            _account(stats, completion)
            return _with_unseen(completion) if unseen else completion

    async def _call_fleet(
        self,
        settings: ModelSettings,
        kwargs: dict[str, Any],
        secrets: list[str],
        stats: ModelStats,
        rebill: Callable[[int], Awaitable[None]] | None = None,
    ) -> Completion:
        """The retry loop of ``_call_with_retries`` spread over ``settings.api_bases`` (see models/fleet.py):
        a failed attempt moves to an endpoint this call has not failed on, without a backoff sleep; the call
        fails for good when its retries are spent and every endpoint has failed it."""
        litellm, fleet = _litellm(), self._fleet(settings)
        failed_on: dict[str, str] = {}  # endpoint URL -> the kind of error this call got there
        attempts = 0
        unseen = False  # some attempt may have been billed with no usage to count
        while True:
            attempts += 1
            stats.requests += 1
            async with self._semaphore(settings):  # the model's own cap, then a slot on one endpoint
                endpoint = await fleet.acquire(set(failed_on))
                if endpoint is None:  # every endpoint refused the model (not_found/auth): stop it
                    stats.requests -= 1  # nothing was sent
                    stats.failures += 1
                    raise self._every_endpoint_refused(fleet, attempts - 1)
                count = self.stats.endpoint(settings.display_name, endpoint.label)
                kind: str | None = None
                error: BaseException | None = None
                answered = False
                try:
                    response = await asyncio.wait_for(
                        litellm.acompletion(**{**kwargs, "api_base": endpoint.url}),
                        timeout=settings.timeout_s + HANG_GUARD_S,
                    )
                    answered = True
                    self.connected.add(_target(settings))
                except Exception as exc:  # noqa: BLE001 - classified as in _call_with_retries
                    kind, error = classify(exc), exc
                    if kind not in NOT_AN_ANSWER_KINDS:
                        self.connected.add(_target(settings))
                finally:  # also when the unit is cancelled: the slot goes back
                    count.ok += answered  # a cancelled request counts as neither
                    count.failed += error is not None
                    retry_after = _retry_after(error) if error is not None else None
                    refused = None
                    if kind in ENDPOINT_REFUSED_KINDS:
                        text = fleet.redact(_scrub(f"{type(error).__name__}: {error}", secrets))[:500]
                        refused = f"{kind}: {text}"
                    await fleet.release(
                        endpoint, down=kind in ENDPOINT_DOWN_KINDS, retry_after=retry_after, refused=refused
                    )
            if error is None:
                try:
                    completion = self._to_completion(litellm, response, secrets, settings)
                except ModelCallError as exc:  # an empty answer: the endpoint works, a retry cannot help
                    stats.failures += 1
                    unseen = _note_unseen(stats, exc.kind) or unseen
                    raise ModelCallError(exc.kind, attempts, exc.message, unseen) from None
                _account(stats, completion)
                return _with_unseen(completion) if unseen else completion
            assert kind is not None  # for mypy
            unseen = _note_unseen(stats, kind) or unseen
            message = fleet.redact(_scrub(f"{type(error).__name__}: {error}", secrets))[:2000]
            failed_on[endpoint.url] = kind
            if kind in ENDPOINT_REFUSED_KINDS:  # this replica cannot serve the model; another may
                if len(fleet.refused()) == len(fleet.endpoints):
                    stats.failures += 1
                    raise self._every_endpoint_refused(fleet, attempts)
                _count_retry(stats, kind)
                continue
            everywhere = (failed_on.keys() | {e.url for e in fleet.refused()}) >= fleet.all_urls()
            spent = attempts > settings.max_retries and everywhere
            if (
                kind not in RETRYABLE_KINDS
                or spent
                or attempts > (settings.max_retries + 1) * len(fleet.endpoints)
            ):
                stats.failures += 1
                if kind in RETRYABLE_KINDS:
                    where = ", ".join(f"{fleet.label(url)}: {k}" for url, k in failed_on.items())
                    message = f"failed on every endpoint ({where}); last: {message}"
                if set(failed_on.values()) == {"connection"} and _target(settings) not in self.connected:
                    raise self._unreachable(settings, attempts, message) from None  # every replica down
                raise ModelCallError(kind, attempts, message, unseen) from None
            _count_retry(stats, kind)
            if rebill is not None and kind in MAYBE_BILLED_KINDS:
                await rebill(attempts)
            if everywhere:  # nowhere left to fail over to: back off as a single endpoint would
                delay = min(_backoff(self.backoff_base_s, attempts), MAX_BACKOFF_S)
                log.info("%s: %s on every endpoint, retry in %.2fs", settings.display_name, kind, delay)
                await asyncio.sleep(delay)
                self._give_up_if_stopped(settings, stats, attempts, unseen)

    @staticmethod
    def _every_endpoint_refused(fleet: Fleet, attempts: int) -> ModelCallError:
        """The error of a fleet none of whose endpoints can serve the model (a model-fatal kind)."""
        refused = fleet.refused()
        where = "; ".join(f"{e.label}: {e.refused}" for e in refused)
        kind = (refused[-1].refused or "not_found").split(":", 1)[0]
        return ModelCallError(kind, attempts, f"refused by every endpoint ({where})")

    @staticmethod
    def _to_completion(
        litellm: Any, response: Any, secrets: list[str], settings: ModelSettings | None = None
    ) -> Completion:
        raw: dict[str, Any] = json.loads(_scrub(json.dumps(response.model_dump(), default=str), secrets))
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
        pipeline_price = (
            settings is not None
            and settings.input_cost_per_token is not None
            and settings.output_cost_per_token is not None
        )
        if pipeline_price:  # the pipeline's own price; it has no cache price, so cached tokens at full price
            assert settings is not None and settings.input_cost_per_token is not None  # for mypy
            cost = prompt_n * settings.input_cost_per_token + completion_n * (
                settings.output_cost_per_token or 0.0
            )
        else:
            price_key = settings.model if settings is not None else str(raw.get("model") or "")
            # a model litellm could not price was handed ``_PLACEHOLDER_PRICE``: what it computed is no price
            hidden = {} if price_key in _NO_PRICE else getattr(response, "_hidden_params", {}) or {}
            value = hidden.get("response_cost")
            if value is None and price_key not in _NO_PRICE:
                try:
                    value = litellm.completion_cost(completion_response=response)
                except Exception:  # noqa: BLE001 - unknown model price: recorded as unknown, not guessed
                    value = None
                if value is None:
                    _NO_PRICE.add(price_key)
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
