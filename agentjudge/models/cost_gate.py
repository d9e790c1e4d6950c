"""``--max-cost``: a hard cap on what one invocation spends, kept before each request is sent.

Each call reserves its worst-case price (its prompt's tokens by litellm's tokenizer, or chars/3 if more,
plus ``max_tokens`` of answer, at the model's price: ``models/prices.py``) before it is sent, and settles
what it actually cost when it is answered; money spent plus money reserved never exceeds the cap. A call
that does not fit is not sent (``cost_cap``). A batch request's reservation is held until its batch is read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from agentjudge.models.errors import ModelCallError
from agentjudge.models.prices import (
    batch_token_prices,
    max_completion_tokens,
    model_prices,
    prompt_token_bound,
)
from agentjudge.types import ModelSettings


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

    async def reserve_call(
        self, settings: ModelSettings, messages: list[dict[str, Any]], tools: Any, batch: bool = False
    ) -> float:
        """Reserve one call's worst-case price and return it; raise ``cost_cap`` (not sent) when the model
        has no price or no answer-length bound, or the worst case does not fit. ``batch``: at the batch
        price, held until the batch is read (``reserve(hold=True)``)."""
        prices = batch_token_prices(settings) if batch else model_prices(settings)
        out_tokens = max_completion_tokens(settings)
        if prices is None or out_tokens is None:
            missing = "a price" if prices is None else "a max_tokens"
            self.refused += 1
            raise ModelCallError("cost_cap", 0, f"not sent: --max-cost needs {missing} for {settings.model}")
        worst = prompt_token_bound(settings, messages, tools) * prices[0]
        worst += out_tokens * prices[1]
        if not await self.reserve(worst, hold=batch):
            raise ModelCallError(
                "cost_cap",
                0,
                f"not sent: worst case ${worst:.6f} does not fit under --max-cost ${self.cap:.4f} "
                f"(spent ${self.spent:.6f}, reserved ${self.reserved:.6f})",
            )
        return worst
