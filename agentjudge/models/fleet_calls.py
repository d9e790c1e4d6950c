"""The client's retry loop for a model served by several endpoints (``api_bases``), spread over them.

``models/fleet.py`` keeps the endpoints' state (in flight, cooling down, refused); this is the loop of one
call over them: a failed attempt moves to an endpoint this call has not failed on, without a backoff sleep;
the call fails for good when its retries are spent and every endpoint has failed it. A mixin of
``ModelClient`` (``models/client.py``), whose single-endpoint loop ``_call_with_retries`` it mirrors; it
uses the client's per-target state (``_semaphore``, ``connected``, ``_unreachable``, ``_give_up_if_stopped``)
and counters (``stats``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agentjudge.models import errors
from agentjudge.models.completion import Completion, to_completion, with_unseen
from agentjudge.models.credentials import scrub
from agentjudge.models.endpoints import Target, target
from agentjudge.models.errors import (
    MAX_BACKOFF_S,
    MAYBE_BILLED_KINDS,
    NOT_AN_ANSWER_KINDS,
    RETRYABLE_KINDS,
    UNANSWERED_KINDS,
    ModelCallError,
    backoff,
    classify,
    retry_after,
)
from agentjudge.models.fleet import ENDPOINT_DOWN_KINDS, ENDPOINT_REFUSED_KINDS, Fleet
from agentjudge.models.litellm_import import litellm_module
from agentjudge.models.stats import ClientStats, ModelStats, account, count_retry, note_unseen
from agentjudge.types import ModelSettings

log = logging.getLogger("agentjudge.models.client")


class FleetCalls:
    """``_call_fleet`` and the fleets it routes through, one per event loop and target."""

    # the client's, set by ``ModelClient.__init__``
    stats: ClientStats
    connected: set[Target]
    backoff_base_s: float
    _fleets: dict[tuple[int, Target], Fleet]

    def _semaphore(self, settings: ModelSettings) -> asyncio.Semaphore:
        raise NotImplementedError  # ModelClient's

    def _unreachable(
        self, settings: ModelSettings, attempts: int, message: str, kind: str = "connection"
    ) -> ModelCallError:
        raise NotImplementedError  # ModelClient's

    def _give_up_if_stopped(
        self, settings: ModelSettings, stats: ModelStats, attempts: int, unseen: bool
    ) -> None:
        raise NotImplementedError  # ModelClient's

    def _fleet(self, settings: ModelSettings) -> Fleet:
        """The endpoint states of a model with ``api_bases``: one per event loop and target, like the
        semaphores — an endpoint that refuses one entry's credentials (401) is out for that entry only, not
        for another entry of the same model and endpoints with other credentials."""
        key = (id(asyncio.get_running_loop()), target(settings))
        fleet = self._fleets.get(key)
        if fleet is None:
            fleet = self._fleets[key] = Fleet.of(
                list(settings.api_bases or ()),
                settings.concurrency,
                settings.endpoint_concurrency,
                self.backoff_base_s,
            )
        return fleet

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
        litellm, fleet = litellm_module(), self._fleet(settings)
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
                        timeout=settings.timeout_s + errors.HANG_GUARD_S,
                    )
                    answered = True
                    self.connected.add(target(settings))
                except Exception as exc:  # noqa: BLE001 - classified as in _call_with_retries
                    kind, error = classify(exc), exc
                    if kind not in NOT_AN_ANSWER_KINDS:
                        self.connected.add(target(settings))
                finally:  # also when the unit is cancelled: the slot goes back
                    count.ok += answered  # a cancelled request counts as neither
                    count.failed += error is not None
                    wait = retry_after(error)
                    refused = None
                    if kind in ENDPOINT_REFUSED_KINDS:
                        text = fleet.redact(scrub(f"{type(error).__name__}: {error}", secrets))[:500]
                        refused = f"{kind}: {text}"
                    await fleet.release(
                        endpoint, down=kind in ENDPOINT_DOWN_KINDS, retry_after=wait, refused=refused
                    )
            if error is None:
                try:
                    completion = to_completion(litellm, response, secrets, settings)
                except ModelCallError as exc:  # an empty answer: the endpoint works, a retry cannot help
                    stats.failures += 1
                    unseen = note_unseen(stats, exc.kind) or unseen
                    raise ModelCallError(exc.kind, attempts, exc.message, unseen) from None
                account(stats, completion)
                return with_unseen(completion) if unseen else completion
            assert kind is not None  # for mypy
            unseen = note_unseen(stats, kind) or unseen
            message = fleet.redact(scrub(f"{type(error).__name__}: {error}", secrets))[:2000]
            failed_on[endpoint.url] = kind
            if kind in ENDPOINT_REFUSED_KINDS:  # this replica cannot serve the model; another may
                if len(fleet.refused()) == len(fleet.endpoints):
                    stats.failures += 1
                    raise self._every_endpoint_refused(fleet, attempts)
                count_retry(stats, kind)
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
                if set(failed_on.values()) <= UNANSWERED_KINDS and target(settings) not in self.connected:
                    raise self._unreachable(settings, attempts, message, kind) from None  # every replica down
                raise ModelCallError(kind, attempts, message, unseen) from None
            count_retry(stats, kind)
            if rebill is not None and kind in MAYBE_BILLED_KINDS:
                await rebill(attempts)
            if everywhere:  # nowhere left to fail over to: back off as a single endpoint would
                delay = min(backoff(self.backoff_base_s, attempts), MAX_BACKOFF_S)
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
