"""What a failed model call is: its kind, which kinds are retried or stop the model, and how long to wait.

The kind decides everything after a failure: retried (``RETRYABLE_KINDS``, with ``backoff`` and the
provider's Retry-After), the model stopped (``MODEL_FATAL_KINDS``), its worst case counted as spent under
``--max-cost`` (``MAYBE_BILLED_KINDS``), the endpoint known to be there (any kind but
``NOT_AN_ANSWER_KINDS``). ``classify`` maps whatever litellm, httpx or the OpenAI SDK raised to one kind;
``ModelCallError`` carries the kind and the attempts to the unit, whose row keeps both as fields
(``models/failures.py``) beside the text a person reads.
"""

from __future__ import annotations

import asyncio
import json
import random

from agentjudge.models.credentials import MissingCredentialError
from agentjudge.types import Usage

RETRYABLE_KINDS = frozenset({"rate_limit", "server_error", "timeout", "connection", "malformed_response"})
MODEL_FATAL_KINDS = frozenset({"auth", "bad_request", "not_found", "unreachable"})  # these stop the model
# "unreachable": connection failures (refused, DNS, TLS, dropped) or timeouts (a server that takes the
# connection and never answers) on every attempt of a call to a target none of whose calls has ever been
# answered (no HTTP answer of any status, ever): the endpoint is wrong, down or hung, and every other call
# would spend its retries (at full timeout each) finding that out again. A target that answered once keeps its
# retries: a blip mid-run must not stop a grid.
# an attempt that ended so may have been billed with no usage counted (the server computed, or may have
# computed, an answer; an empty one's usage is not kept). Under --max-cost its worst case is counted as spent,
# before a retry or when the call fails; its unit's cost is unknown (``ModelCallError.unseen_cost``)
MAYBE_BILLED_KINDS = frozenset({"timeout", "malformed_response", "empty_response"})
# kinds of a failed attempt that got no HTTP answer (they say nothing of whether the endpoint is there)
NOT_AN_ANSWER_KINDS = frozenset({"connection", "timeout", "other"})
# a call every attempt of which ended so, to a target that has never answered, stops the model
# ("unreachable"): the server refused the connection, or took it and said nothing until the timeout
UNANSWERED_KINDS = frozenset({"connection", "timeout"})
_AUTH_MARKERS = ("api_key client option must be set", "missing credentials", "no api key", "invalid api key")
MAX_BACKOFF_S = 30.0  # cap for one sleep, Retry-After included
BASE_BACKOFF_S = 0.5
HANG_GUARD_S = 5.0  # a call litellm has not ended this long after its own timeout is given up as a timeout


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
        return usage.model_copy(update={"cost_known": False}) if self.unseen_cost else usage


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


# the transport errors of httpx (``NetworkError``: connect, read, write; ``RemoteProtocolError``: closed with
# no answer) and aiohttp (``ClientConnectionError``: connector, disconnected), by class name in the MRO
_TRANSPORT_CLASSES = frozenset({"NetworkError", "RemoteProtocolError", "ClientConnectionError"})


def _failed_to_connect(exc: BaseException) -> bool:
    """Whether ``exc`` or an exception it was raised from (``__cause__`` / ``__context__``) is a failure of
    the connection: an OS-level error (refused, host not found, TLS, reset) or a transport error of httpx or
    aiohttp (a connection closed with no answer). litellm wraps these in errors of any name and status (an
    ``InternalServerError`` with status 500 for ``hosted_vllm/``, ``anthropic/``, ``mistral/`` ...), keeping
    the original as the cause: the cause, not the wrapper's name, says what happened, for every provider
    alike. A timeout in the chain is not one (its kind is ``timeout``)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 16:
        seen.add(id(link))
        names = {cls.__name__ for cls in type(link).__mro__}
        if isinstance(link, TimeoutError) or any("Timeout" in n for n in names):
            return False
        if isinstance(link, OSError) or names & _TRANSPORT_CLASSES:
            return True
        link = link.__cause__ or link.__context__
    return False


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
        or _failed_to_connect(exc)
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


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds from a Retry-After header, if the provider sent one."""
    if exc is None:
        return None
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


def backoff(base_s: float, attempts: int) -> float:
    """The wait before attempt ``attempts + 1``: doubling from ``base_s``, with jitter in its upper half so
    that clients failing together do not retry together."""
    delay = base_s * 2 ** (attempts - 1)
    return delay / 2 + random.uniform(0, delay / 2)
