"""The one choke point for every model call: litellm, cache, concurrency, retries, accounting.

Why one place: retries, rate limits, cost and the rule "an API key never reaches a file or an error"
are easy to get wrong once per call site and easy to get right once. Everything that talks to a model
(generators, judges, dataset rewrites) calls ``ModelClient.complete``.

* litellm is imported lazily (``agentjudge --help`` stays fast) with the local cost map (no network) and its
  own retries, telemetry and logging turned off (``models/litellm_import.py``) — retries happen here, where
  they are counted.
* A semaphore per (model, api_base or api_bases, api_key_env, headers_env names) caps in-flight requests at
  ``settings.concurrency``; a model with ``api_bases`` (a fleet of replicas) spreads its calls over them
  and fails over (``models/fleet.py``, ``models/fleet_calls.py``).
* 429 / 5xx / timeouts / connection errors / malformed bodies are retried with exponential backoff and
  jitter (Retry-After honoured, capped); errors caused by the request (400/401/403/404/422) are not
  (``models/errors.py``).
* After the last attempt ``ModelCallError(kind, attempts, message)`` is raised; an empty answer is an error
  too, never returned in place of one (``models/completion.py``). Messages are scrubbed of the key
  (``models/credentials.py``).
* Errors that no retry can fix (auth: 401/403/missing key; bad_request/not_found: 400/404/422) stop the
  model: every later call to the same target (model, endpoint, api_key_env, headers_env names:
  ``endpoints.target``) fails at once with the first error, unsent (a fleet is stopped only when every
  endpoint refused it: ``_call_fleet``). So does a call whose every attempt failed to connect to a target
  that has never answered (``unreachable``: a wrong or dead endpoint, named in the message), after that one
  call's retries; calls of that target already retrying give up at their next attempt.
* ``cost_cap`` (``--max-cost``) is a hard cap: each call reserves its worst-case price before it is sent; a
  call that does not fit is not sent (``models/cost_gate.py``).
* A model with ``batch: true`` is not called here while the runner has attached a batch queue
  (``self.batch``, ``runner.batches``): an unanswered call is queued and raises ``batch_pending``; an
  answered one is parsed like a direct answer and priced at the batch price (``models/batch_path.py``).
* Counters per model and endpoint: ``models/stats.py``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from agentjudge.fastpaths import http_shares
from agentjudge.fastpaths.litellm_pricing import litellm_pricing
from agentjudge.models import errors
from agentjudge.models.batch_path import BatchCalls, BatchQueue
from agentjudge.models.cache import CallCache, cache_key
from agentjudge.models.completion import Completion, to_completion, unsent, with_unseen
from agentjudge.models.cost_gate import CostGate
from agentjudge.models.credentials import (
    MissingCredentialError,
    required_env_headers,
    scrub,
    secrets_of,
    settings_secrets,
)
from agentjudge.models.endpoints import Target, endpoint_of, target
from agentjudge.models.errors import (
    BASE_BACKOFF_S,
    MAX_BACKOFF_S,
    MAYBE_BILLED_KINDS,
    MODEL_FATAL_KINDS,
    NOT_AN_ANSWER_KINDS,
    RETRYABLE_KINDS,
    UNANSWERED_KINDS,
    ModelCallError,
    backoff,
    classify,
    retry_after,
)
from agentjudge.models.fleet import Fleet
from agentjudge.models.fleet_calls import FleetCalls
from agentjudge.models.litellm_import import litellm_module
from agentjudge.models.prices import unpriced
from agentjudge.models.stats import ClientStats, ModelStats, account, count_retry, note_unseen
from agentjudge.types import ModelSettings

log = logging.getLogger(__name__)


def load_litellm() -> None:
    """Import litellm now: callers do it before their event loop starts (the import blocks for seconds,
    so done inside a running loop it would stall every call in flight)."""
    litellm_module()


def schema_response_format(
    settings: ModelSettings, name: str, schema: dict[str, Any], strict: bool = True
) -> dict[str, Any]:
    """``response_format`` carrying ``schema`` in the wire form ``settings.structured_output`` names
    (``strict`` only for schemas that meet OpenAI's strict rules: every key required, no extra keys)."""
    if settings.structured_output == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


def _http_provider(settings: ModelSettings) -> bool:
    """Whether litellm sends this model's requests through httpx (``http_shares.HTTP_PROVIDERS``)."""
    try:
        provider = litellm_module().get_llm_provider(settings.model, api_base=settings.api_base)[1]
    except Exception:  # noqa: BLE001 - unknown to litellm: its share stays around whole calls
        return False
    return provider in http_shares.HTTP_PROVIDERS


def _stopped_by(earlier: ModelCallError) -> str:
    """What a later call of a stopped model says: that the model is stopped, and the error that stopped it
    (an ``unreachable`` error says it is stopped itself: said once)."""
    return earlier.message if earlier.kind == "unreachable" else f"the model is stopped: {earlier.message}"


class ModelClient(FleetCalls, BatchCalls):
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
        # exchange once the model was seen sending through httpx: fastpaths/http_shares.py), so a unit's
        # prompt building, cache lookup and parsing never hold one. None: no shares (one process)
        self.call_limits = None if call_limits is None else dict(call_limits)
        self._shares: dict[tuple[int, str], asyncio.Semaphore] = {}
        self._http_shares = http_shares.HttpShares()  # where each model's share is held
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

    def _semaphore(self, settings: ModelSettings) -> asyncio.Semaphore:
        key = (id(asyncio.get_running_loop()), target(settings))  # a fleet has its own, as its own model
        sem = self._semaphores.get(key)
        if sem is None:
            sem = self._semaphores[key] = asyncio.Semaphore(max(1, settings.concurrency))
        return sem

    def _share(self, settings: ModelSettings) -> http_shares.Share:
        """This process's share of the model's calls in flight (``call_limits``); unlimited without shares."""
        if self.call_limits is None:
            return http_shares.UNLIMITED
        key = (id(asyncio.get_running_loop()), settings.display_name)
        sem = self._shares.get(key)
        if sem is None:
            limit = self.call_limits.get(settings.display_name, 0)
            if limit < 1:  # the parent routes a model's units only to workers holding a share of it
                name = settings.display_name
                raise RuntimeError(f"{name}: this worker process holds no share of its calls")
            sem = self._shares[key] = asyncio.Semaphore(limit)
        return sem

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
                return unsent(cached)
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
        earlier = self.stopped.get(target(settings))
        if earlier is not None:
            stats.failures += 1
            raise ModelCallError(earlier.kind, 0, f"not sent, {_stopped_by(earlier)}")
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
            return await self._batched(settings, key, fields, stats, secrets_of(api_key, headers))
        worst = await self._reserve(settings, fields)
        reserved = worst  # what this call holds in the cost gate now (0 between a retry's settle and reserve)
        secrets = secrets_of(api_key, headers)
        kwargs = self._kwargs(settings, fields, api_key, headers) | litellm_pricing(
            settings, unpriced(settings.model)
        )

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
                    f"attempt {attempts} may have been billed (its worst case ${worst:.6f} is counted as "
                    f"spent) and another does not fit under --max-cost ${gate.cap:.4f} (spent "
                    f"${gate.spent:.6f}, reserved ${gate.reserved:.6f})",
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
            self.cache.put(key, settings.model, scrub(completion.model_dump_json(), secrets))
        return completion

    def _stop(self, settings: ModelSettings, exc: ModelCallError) -> ModelCallError:
        """Remember a model-fatal error: later calls to this model fail with it at once, unsent."""
        self.stopped.setdefault(target(settings), exc)
        return exc

    def _unreachable(
        self, settings: ModelSettings, attempts: int, message: str, kind: str = "connection"
    ) -> ModelCallError:
        """The error of a call none of whose attempts was answered (it could not connect, or the server took
        the connection and said nothing until the timeout: ``kind``), to a target that never answered: it
        names the endpoint (redacted) and the cause, says how to check the set-up, and quotes the provider's
        last error last, so that a message cut to fit a line loses only the end of that quote, never the
        advice; ``_send`` stops the model. (The attempts are the error's own: ``unreachable after N
        attempt(s)``.)"""
        where = endpoint_of(settings)
        failed = (
            f"no answer from {where} within {settings.timeout_s:g} s"
            if kind == "timeout"
            else f"could not connect to {where}"
        )
        return ModelCallError(
            "unreachable",
            attempts,
            f"{failed}, and no call of {settings.display_name} has ever been answered: the model is stopped. "
            "Check the endpoint, the network and any proxy (`agentjudge run PIPELINE --out RUNDIR --dry-run "
            f"--probe` does). Last error: {message}",
        )

    def _give_up_if_stopped(
        self, settings: ModelSettings, stats: ModelStats, attempts: int, unseen: bool
    ) -> None:
        """Before a retry: a call of a target another call has stopped since (it was found unreachable, or
        refused the key) is not sent again; it fails with that error, after its own attempts."""
        earlier = self.stopped.get(target(settings))
        if earlier is not None:
            stats.failures += 1
            raise ModelCallError(earlier.kind, attempts, _stopped_by(earlier), unseen)

    async def _reserve(self, settings: ModelSettings, fields: dict[str, Any], batch: bool = False) -> float:
        """Reserve the call's worst-case price under ``--max-cost``; raise ``cost_cap`` if it does not fit.
        ``batch``: at the batch price, held until the batch is read (``CostGate.reserve_call``)."""
        if self.cost_gate is None:
            return 0.0
        try:
            return await self.cost_gate.reserve_call(settings, fields["messages"], fields["tools"], batch)
        except ModelCallError:
            self.stats.model(settings.display_name).calls -= 1  # not a call: nothing was asked
            raise

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
        litellm = litellm_module()
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
            name = settings.display_name
            slot, held = self._http_shares.slot(name, share, lambda: _http_provider(settings))
            token = http_shares.SLOT.set(slot)
            try:
                # the guard against a call litellm never ends; wait_for runs the call as a task of its own (a
                # deadline on this task instead, asyncio.timeout, measured 5-15 % fewer calls per second)
                try:
                    async with held, self._semaphore(settings):
                        response = await asyncio.wait_for(
                            litellm.acompletion(**kwargs), timeout=settings.timeout_s + errors.HANG_GUARD_S
                        )
                finally:
                    http_shares.SLOT.reset(token)
                    if slot is not None:
                        self._http_shares.learn(name, slot)
                self.connected.add(target(settings))
                completion = to_completion(litellm, response, secrets, settings)
            except ModelCallError as exc:  # empty answer: retrying a deterministic call will not help
                stats.failures += 1
                unseen = note_unseen(stats, exc.kind) or unseen
                raise ModelCallError(exc.kind, attempts, exc.message, unseen) from None
            except Exception as exc:  # noqa: BLE001 - every provider error is classified below
                kind = classify(exc)
                message = scrub(f"{type(exc).__name__}: {exc}", secrets)[:2000]
                if kind not in NOT_AN_ANSWER_KINDS:  # an HTTP status came back: the endpoint is there
                    self.connected.add(target(settings))
                unseen = note_unseen(stats, kind) or unseen
                if kind not in RETRYABLE_KINDS or attempts > settings.max_retries:
                    stats.failures += 1
                    if kind in UNANSWERED_KINDS and target(settings) not in self.connected:
                        raise self._unreachable(settings, attempts, message, kind) from None
                    raise ModelCallError(kind, attempts, message, unseen) from None
                count_retry(stats, kind)
                if rebill is not None and kind in MAYBE_BILLED_KINDS:
                    await rebill(attempts)
                delay = retry_after(exc)
                delay = min(backoff(self.backoff_base_s, attempts) if delay is None else delay, MAX_BACKOFF_S)
                log.info("%s: %s (attempt %d), retry in %.2fs", settings.display_name, kind, attempts, delay)
                await asyncio.sleep(delay)
                self._give_up_if_stopped(settings, stats, attempts, unseen)
                continue
            account(stats, completion)
            return with_unseen(completion) if unseen else completion
