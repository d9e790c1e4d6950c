"""The client's side of batch mode: a ``batch: true`` model's call queued, or answered from its batch.

While the runner has attached a batch queue (``ModelClient.batch``: ``runner.batches.BatchBroker``), such a
call is not sent: an unanswered one is queued and raises ``batch_pending`` (the unit runs again once the
batch is read); an answered one is parsed by the same code as a direct answer (``models/completion.py``),
priced at the batch price (``models/prices.py``), counted once in the model's stats and written to the call
cache. A mixin of ``ModelClient`` (``models/client.py``); the provider side is ``models/batch.py``.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from agentjudge.models.batch import current_unit, request_line
from agentjudge.models.cache import CallCache
from agentjudge.models.completion import BatchBody, Completion, to_completion, unsent
from agentjudge.models.cost_gate import CostGate
from agentjudge.models.credentials import scrub
from agentjudge.models.errors import ModelCallError
from agentjudge.models.litellm_import import litellm_module
from agentjudge.models.prices import batch_token_prices, cost_at
from agentjudge.models.stats import ModelStats, account
from agentjudge.types import ModelSettings


class BatchQueue(Protocol):
    """Where batch-mode calls are queued and their answers found (``runner.batches.BatchBroker``)."""

    def answer(self, key: str) -> Any: ...  # BatchAnswer | None

    def defer(self, key: str, settings: ModelSettings, line: dict[str, Any]) -> None: ...

    def delivered(self, key: str) -> None: ...


class BatchCalls:
    """``_batched``: one batch-mode call; the state it keeps is set by ``ModelClient.__init__``."""

    batch: BatchQueue | None
    cache: CallCache | None
    cost_gate: CostGate | None
    _batch_reserved: dict[str, float]  # cache key -> worst case held under --max-cost
    _batch_read: set[tuple[str, str]]  # (cache key, unit) answers counted in stats
    _batch_counted: set[str]  # cache keys whose sends are in stats (``_count_sends``)

    async def _reserve(self, settings: ModelSettings, fields: dict[str, Any], batch: bool = False) -> float:
        raise NotImplementedError  # ModelClient's

    @staticmethod
    def _kwargs(
        settings: ModelSettings,
        fields: dict[str, Any],
        api_key: str | None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError  # ModelClient's

    def _batch_replay(self, key: str) -> bool:
        return (key, current_unit()) in self._batch_read

    async def _batched(
        self, settings: ModelSettings, key: str, fields: dict[str, Any], stats: ModelStats, secrets: list[str]
    ) -> Completion:
        """A batch-mode call: queue it (``batch_pending``) or return its answer as a direct call would."""
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
            raise ModelCallError(answer.kind, answer.submissions, scrub(answer.error, secrets))
        if not answer.fresh:  # another unit of this run already received it: a cache hit, as direct
            stats.cache_hits += 1
            return unsent(to_completion(litellm_module(), BatchBody(answer.body), secrets, settings))
        self._count_sends(key, answer, stats)
        try:
            completion = to_completion(litellm_module(), BatchBody(answer.body), secrets, settings)
        except ModelCallError as exc:
            if self.cost_gate is not None:
                await self.cost_gate.settle(reserved, 0.0, held=True)
            stats.failures += 1
            raise ModelCallError(exc.kind, 1, exc.message) from None
        batch_prices = batch_token_prices(settings)
        usage = completion.usage
        cost = 0.0
        if batch_prices is not None:
            cost = cost_at(batch_prices, usage.prompt_tokens, usage.completion_tokens)
        completion.cost_known = batch_prices is not None  # and on the usage, which reaches the result
        completion.usage = usage.model_copy(update={"cost_usd": cost, "cost_known": completion.cost_known})
        replay = (key, current_unit()) in self._batch_read
        if replay:  # the unit was run again for a later call (a re-ask, the next turn): not a new call
            stats.calls -= 1  # (its requests were counted at the first read)
            return completion
        self._batch_read.add((key, current_unit()))
        if self.cost_gate is not None:
            await self.cost_gate.settle(reserved, cost if usage.prompt_tokens else reserved, held=True)
        account(stats, completion)  # completion.usage.cost_usd is the batch price set above
        self.batch.delivered(key)
        if self.cache is not None:
            self.cache.put(key, settings.model, json.loads(scrub(completion.model_dump_json(), secrets)))
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
