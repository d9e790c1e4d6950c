"""One model served by several endpoints (``api_bases``: e.g. vLLM replicas): spread, fail over, count.

Why: a self-hosted judge scales by adding replicas, and a grid of hundreds of thousands of calls outlives
any single replica. A model whose settings list ``api_bases`` is called through a ``Fleet``:

* each call goes to the usable endpoint with the fewest requests in flight (ties: the fewest sent so far,
  then list order), so the load spreads evenly while all are up; each endpoint takes at most
  ``endpoint_concurrency`` requests at once (default: ``concurrency`` divided over the endpoints);
* an endpoint that refuses, drops, times out or answers 5xx/429 is taken out for a cool-down that doubles
  with each failure in a row (``backoff_base_s`` × 2^(n-1), at most ``MAX_COOLDOWN_S``; a 429's
  Retry-After if longer); when the cool-down ends it gets one request at a time until one succeeds; while
  *every* endpoint is cooling down nothing waits for a cool-down: calls go out, paced by the client's
  retry backoff, exactly as for a single endpoint (so a dead fleet fails its units as fast as a dead server);
* an endpoint that answers 404 (``not_found``: e.g. vLLM started with another ``--served-model-name``, a LoRA
  not loaded) or 401/403 (``auth``: a proxy with another key) is misconfigured, not busy: it is taken out
  for the rest of the run and the call moves on; the model stops only when *every* endpoint was taken out
  so (``ENDPOINT_REFUSED_KINDS``). A fleet's state belongs to one model entry and its credentials (the
  client keeps one per target, like its semaphores): a key refused there does not take the endpoint out
  for an entry with another key. A 400/422 (``bad_request``) is not failed over: it is the request's
  fault (context too long, a parameter the model rejects), the replicas serve the same model, and
  asking each of them would only multiply a certain failure;
* a call that failed on one endpoint moves to another at once (no backoff sleep while an endpoint it has
  not failed on remains); it fails for good only when its retry budget (``max_retries``) is spent *and*
  every endpoint has failed it, so no unit is recorded failed while a working replica exists;
* ``EndpointCount`` per endpoint (requests answered / failed) feeds the run summary.

The cache key never names an endpoint (``ModelClient.request_fields`` writes ``"fleet:<display name>"``):
replicas serve the same weights, so an answer from any of them is reused by all, and adding a replica keeps
the cache; two fleets of one model string with different names (a small and a big deployment) keep apart.

Why not litellm's Router: its retries and cool-downs (fixed ``cooldown_time`` after ``allowed_fails``) would
be a second retry policy beside the client's, with its own error classification and no per-endpoint
ok/failed counts without callback plumbing; this module is the client's one retry loop, spread over URLs.
Endpoint URLs are shown only through ``redact_url`` (no userinfo, query or fragment: keys hide there).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ENDPOINT_DOWN_KINDS = frozenset({"connection", "server_error", "timeout", "rate_limit"})
ENDPOINT_REFUSED_KINDS = frozenset({"not_found", "auth"})  # this endpoint cannot serve the model: taken out
MAX_COOLDOWN_S = 60.0


def redact_url(url: str) -> str:
    """``url`` without user:password, query string or fragment: what may be printed or stored."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable api base>"
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass
class EndpointCount:
    """Requests one endpoint answered (``ok``) and requests that failed there (``failed``)."""

    ok: int = 0
    failed: int = 0


@dataclass
class Endpoint:
    url: str
    label: str  # redact_url(url)
    limit: int
    in_flight: int = 0
    sent: int = 0
    failures_in_a_row: int = 0
    down_until: float = 0.0  # time.monotonic(); usable again from then on
    refused: str | None = None  # "kind: message" of a not_found/auth answer: out for the rest of the run

    def usable(self, now: float) -> bool:
        if self.refused is not None or now < self.down_until:
            return False
        cap = 1 if self.failures_in_a_row else self.limit  # after a cool-down: one probe at a time
        return self.in_flight < cap


@dataclass
class Fleet:
    """The endpoints of one model within one event loop: who is up, who is busy, who gets the next call."""

    endpoints: list[Endpoint]
    cooldown_base_s: float
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition, repr=False)

    @classmethod
    def of(cls, urls: list[str], concurrency: int, endpoint_concurrency: int | None, base_s: float) -> Fleet:
        limit = endpoint_concurrency or max(1, math.ceil(concurrency / len(urls)))
        return cls([Endpoint(u, redact_url(u), limit) for u in urls], base_s)

    def _pick(self, failed_here: set[str]) -> Endpoint | None:
        """The endpoint for the next attempt of a call that has failed on ``failed_here``; None: wait."""
        now = time.monotonic()
        live = [e for e in self.endpoints if e.refused is None]
        fleet_down = all(now < e.down_until for e in live)

        def free(e: Endpoint) -> bool:  # while the whole fleet is down, cool-downs are not waited out
            return e.in_flight < e.limit if fleet_down else e.usable(now)

        untried = [e for e in live if e.url not in failed_here]
        pool = [e for e in untried if free(e)]
        if not pool and any(fleet_down or now >= e.down_until for e in untried):
            return None  # an endpoint this call has not failed on is up but busy: wait for it
        pool = pool or [e for e in live if free(e)]
        if not pool:
            return None
        return min(pool, key=lambda e: (e.in_flight, e.sent, self.endpoints.index(e)))

    def refused(self) -> list[Endpoint]:
        """Endpoints taken out for the rest of the run (they answered not_found/auth)."""
        return [e for e in self.endpoints if e.refused is not None]

    async def acquire(self, failed_here: set[str]) -> Endpoint | None:
        """A slot on the best usable endpoint, preferring ones this call has not failed on; waits while
        every endpoint is busy or cooling down. None: every endpoint refused the model (nowhere to go)."""
        async with self._changed:
            while True:
                if len(self.refused()) == len(self.endpoints):
                    return None
                endpoint = self._pick(failed_here)
                if endpoint is not None:
                    endpoint.in_flight += 1
                    endpoint.sent += 1
                    return endpoint
                now = time.monotonic()
                cooling = [e.down_until - now for e in self.endpoints if e.down_until > now]
                with contextlib.suppress(TimeoutError):  # woken by a release, or when a cool-down ends
                    await asyncio.wait_for(self._changed.wait(), timeout=min(cooling) if cooling else None)

    async def release(
        self, endpoint: Endpoint, *, down: bool, retry_after: float | None = None, refused: str | None = None
    ) -> None:
        """Give the slot back; ``down``: the endpoint failed in a way that says it is not serving;
        ``refused``: it cannot serve this model at all (not_found/auth): out for the rest of the run."""
        async with self._changed:
            endpoint.in_flight -= 1
            if refused is not None:
                endpoint.refused = endpoint.refused or refused
            elif down:
                endpoint.failures_in_a_row += 1
                cooldown = self.cooldown_base_s * 2 ** min(endpoint.failures_in_a_row - 1, 16)
                cooldown = min(max(cooldown, retry_after or 0.0), MAX_COOLDOWN_S)
                endpoint.down_until = max(endpoint.down_until, time.monotonic() + cooldown)
            else:
                endpoint.failures_in_a_row = 0
                endpoint.down_until = 0.0
            self._changed.notify_all()

    def label(self, url: str) -> str:
        return next(e.label for e in self.endpoints if e.url == url)

    def all_urls(self) -> set[str]:
        return {e.url for e in self.endpoints}

    def redact(self, text: str) -> str:
        """``text`` with every endpoint URL replaced by its redacted label (longest first)."""
        for endpoint in sorted(self.endpoints, key=lambda e: len(e.url), reverse=True):
            if endpoint.url != endpoint.label:
                text = text.replace(endpoint.url, endpoint.label)
        return text


def redact_model_urls(pipeline: dict[str, Any]) -> dict[str, Any]:
    """A pipeline dump (``Pipeline.model_dump(mode="json")``) whose models' ``api_base``/``api_bases`` are
    redacted, for meta.json: a key in a URL's userinfo or query string must not reach a results folder."""
    for role in ("generators", "judges"):
        for entry in pipeline.get(role) or []:
            if entry.get("api_base"):
                entry["api_base"] = redact_url(entry["api_base"])
            if entry.get("api_bases"):
                entry["api_bases"] = [redact_url(url) for url in entry["api_bases"]]
    return pipeline
