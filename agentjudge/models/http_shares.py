"""A worker process's share of a model's requests, held around the HTTP exchange alone.

Why: a model's ``concurrency`` bounds the requests its provider is working on. Held around the whole litellm
call, a share also covers litellm's own work before the request leaves (building it: ~4 ms of CPU) and after
the answer is back (parsing it: ~3 ms), and the time a busy event loop takes to get to either. At C=32,
L=200 ms on two cores that made a share's mean hold 257 ms for a 200 ms answer; held around the exchange
alone it was 212 ms, and the requests per second in steady state rose from ~142 to ~150 (issue 15). The
provider sees no more requests at once than before: each one is still inside its share while it is out.

How: litellm sends its requests through httpx (the OpenAI SDK and litellm's own HTTP handler both do).
``install`` wraps ``httpx.AsyncClient.send`` once per process. A call sets ``SLOT`` (a context variable,
which the task ``asyncio.wait_for`` makes for the call inherits) to a ``Slot``: while ``slot.limit`` is a
semaphore, every request sent within the call takes it for the exchange; the slot also counts the requests
it saw. ``ModelClient`` holds a model's share around the whole call, as before, until a call of that model
has been seen sending through httpx, and only for a provider known to send its requests that way
(``HTTP_PROVIDERS``): a model litellm reaches some other way is never left unlimited.

Not covered: a streamed request (``stream=True`` returns at the headers, before the answer is computed); the
runner never streams, and a call seen streaming puts its model back to the whole-call share.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass
from typing import Any

# providers whose chat requests litellm sends through httpx (the OpenAI SDK or its own httpx handler)
HTTP_PROVIDERS = frozenset({"openai", "hosted_vllm", "azure", "anthropic"})


@dataclass
class Slot:
    """One call's view of its model's share: ``limit`` None while the caller holds the share itself."""

    limit: asyncio.Semaphore | None
    sent: int = 0  # requests seen leaving through httpx during the call
    streamed: bool = False


SLOT: contextvars.ContextVar[Slot | None] = contextvars.ContextVar("agentjudge_http_share", default=None)
_installed = False


def install() -> None:
    """Wrap ``httpx.AsyncClient.send`` (once per process): outside a call with a slot it is unchanged."""
    global _installed
    if _installed:
        return
    import httpx

    original = httpx.AsyncClient.send

    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        slot = SLOT.get()
        if slot is None:
            return await original(self, request, **kwargs)
        slot.sent += 1
        slot.streamed = slot.streamed or bool(kwargs.get("stream"))
        if slot.limit is None:
            return await original(self, request, **kwargs)
        async with slot.limit:
            return await original(self, request, **kwargs)

    httpx.AsyncClient.send = send  # type: ignore[method-assign]
    _installed = True


def sends_through_httpx(slot: Slot) -> bool:
    """What a finished call's slot tells of its model: its request went out through httpx, unstreamed."""
    return slot.sent > 0 and not slot.streamed
