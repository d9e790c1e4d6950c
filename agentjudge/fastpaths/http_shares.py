"""A worker process's share of a model's requests, held around the HTTP exchange alone.

Patches: ``httpx.AsyncClient.send`` (wrapped once per process), through which litellm sends its requests.

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

Falls back: a model whose calls never go out through the wrapper (another provider, a later litellm that
sends some other way) keeps its share around whole calls; with ``AGENTJUDGE_NO_FAST_PATHS=1`` nothing is
wrapped and every share is held around whole calls (``HttpShares.slot``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentjudge import fastpaths

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
    """Wrap ``httpx.AsyncClient.send`` (once per process): outside a call with a slot it is unchanged.
    Nothing with the fast paths off."""
    global _installed
    if _installed or not fastpaths.enabled():
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


Share = asyncio.Semaphore | contextlib.nullcontext[None]
UNLIMITED: contextlib.nullcontext[None] = (
    contextlib.nullcontext()
)  # what a call holds beyond its slot's share


@dataclass
class HttpShares:
    """Where a client holds each model's share, by display name: True around each HTTP exchange (a call was
    seen sending through httpx), None around whole calls while its calls are watched, False around whole
    calls for good (a provider not known to send through httpx, or a call seen streaming)."""

    where: dict[str, bool | None] = field(default_factory=dict)

    def slot(self, name: str, share: Share, http_provider: Callable[[], bool]) -> tuple[Slot | None, Share]:
        """(the call's ``Slot``, what the call itself holds). Without shares (``share`` not a semaphore), or
        with the fast paths off: no slot, the call holds its share. A model whose calls were seen sending
        through httpx: the slot holds the share around each request, the call nothing more. Else the call
        holds the share, and the slot watches how it sends. ``http_provider`` is asked once per model."""
        if not isinstance(share, asyncio.Semaphore) or not _installed:
            return None, share
        if name not in self.where:
            self.where[name] = None if http_provider() else False
        known = self.where[name]
        if known:
            return Slot(share), UNLIMITED
        return (Slot(None) if known is None else None), share

    def learn(self, name: str, slot: Slot) -> None:
        """After a call: a model of an httpx provider whose request went out through httpx, unstreamed, holds
        its share around the exchange from now on; one seen streaming holds it around whole calls again."""
        if self.where.get(name) is False:
            return
        if slot.streamed:
            self.where[name] = False
        elif sends_through_httpx(slot):
            self.where[name] = True
