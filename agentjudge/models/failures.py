"""Why units failed, in a handful of reasons a person can act on, and the end-of-run list of them.

A failed unit carries its failure as fields: ``kind`` (the model client's error kind, ``ModelCallError.kind``,
or the kind its generator or judge names: ``parse_error``, ``bad_arguments``, ``batch_stuck``, ...; None when
nothing named one, e.g. a plug-in that raised) and ``attempts`` (the requests the model client sent for the
failed call; 0 = not sent; None when no model call failed), beside the text a person reads
(``Prediction.error``, ``JudgeResult.error``, a unit's error in run.sqlite, whose ``error_kind`` and
``error_attempts`` columns keep the two fields). ``reason_of_kind`` maps a kind to one of ``REASONS``;
``FailureLog`` counts failures by (model, reason) and keeps the first message of each, so a run whose 2,700
units all failed for want of a key prints one line, not 2,700, and the line says which key.

``read_failure`` reads the two fields back from a failure's text, for text that was stored without them: rows
of a run.sqlite written by an older version, and failures in files written elsewhere. Nothing the runner
writes now is read that way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

REASONS = (
    "auth", "bad_request", "connection", "rate_limit", "server", "timeout", "parse", "cost_cap", "batch",
    "other",
)  # fmt: skip
REASON_HELP = {
    "auth": "401/403 or a missing key: check the key variable; never retried",
    "bad_request": "400/404/422: the model name or a parameter is wrong; never retried",
    "rate_limit": "429 after every retry",
    "connection": "could not connect (refused, host not found, TLS, dropped) after every retry; a model that "
    "never connected is stopped: check its endpoint with --probe",
    "server": "5xx or a broken answer after every retry",
    "timeout": "no answer within timeout_s after every retry",
    "parse": "the answer could not be read",
    "cost_cap": "not sent: over --max-cost",
    "batch": "the provider's batch was given up (unknown to the provider, key changed, or polls kept "
    "failing), or nothing in the run would answer the request; a re-run sends its requests again",
    "other": "see the message",
}
_KIND_TO_REASON = {
    "auth": "auth",
    "config": "auth",
    "bad_request": "bad_request",
    "not_found": "bad_request",
    "rate_limit": "rate_limit",
    "server_error": "server",
    "connection": "connection",
    "unreachable": "connection",
    "malformed_response": "server",
    "timeout": "timeout",
    "empty_response": "parse",
    "parse_error": "parse",
    "bad_arguments": "parse",
    "parse": "parse",
    "cost_cap": "cost_cap",
    "batch_given_up": "batch",
    "batch_stuck": "batch",  # runner.batches.BatchBroker.fail_open, grid._Grid._fail_waiting
}


class Failure(NamedTuple):
    """A failure's two fields (see the module docstring)."""

    kind: str | None
    attempts: int | None


NO_FAILURE = Failure(None, None)


def reason_of_kind(kind: str | None) -> str:
    """The reason (one of ``REASONS``) of a failure of ``kind``."""
    return _KIND_TO_REASON.get(kind or "", "other")


def is_batch_pending(kind: str | None) -> bool:
    """The unit's call was queued for a provider batch (not a failure: the unit runs again on its answer)."""
    return kind == "batch_pending"


def is_model_fatal(kind: str | None) -> bool:
    """A failure that no retry can fix and that every other call to the same model would repeat: a refused
    key or request, or an endpoint no call has ever reached (``unreachable``)."""
    return reason_of_kind(kind) in ("auth", "bad_request") or kind == "unreachable"


# How the texts read: "call_failed[kind]: ..." (single shot) or "call_failed[kind] at turn N: ..."
# (interactive), or "kind: ...", each optionally with the model client's "kind after N attempt(s): ..."
_KIND_RE = re.compile(
    r"^\s*(?:call_failed\[(?P<bracket>\w+)\][^:]*|(?P<plain>\w+)(?: after \d+ attempt\(s\))?):"
)
_ATTEMPTS_RE = re.compile(r"\b(?P<kind>\w+) after (?P<n>\d+) attempt\(s\):")


def read_failure(error: str | None) -> Failure:
    """The kind and attempts a failure's text names, for text stored without its fields (a run.sqlite row
    of an older version, a failure in a file written elsewhere): the kind it starts with (None when it names
    none) and the model client's "<kind> after N attempt(s)" (None when absent)."""
    match = _KIND_RE.match(error or "")
    kind = (match["bracket"] or match["plain"]) if match else None
    attempts = _ATTEMPTS_RE.search(error or "")
    return Failure(kind, int(attempts["n"]) if attempts else None)


def reason_of(error: str | None) -> str:
    """The reason of a failure known only by its text (``read_failure``)."""
    return reason_of_kind(read_failure(error).kind)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with " …" when cut (a message cut
    mid-word, "Check the endpoin", reads as a typo and loses the advice at its end)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 2].rsplit(" ", 1)[0].rstrip(" ,;:(")
    return cut + " …"


@dataclass
class FailureLog:
    """Failures by (model, reason): a count and the first message seen."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, model: str, error: str | None, kind: str | None, reason: str | None = None) -> None:
        """One failure of ``model``: its text, its kind (``reason`` overrides the kind's reason)."""
        key = (model, reason or reason_of_kind(kind))
        self.counts[key] = self.counts.get(key, 0) + 1
        self.examples.setdefault(key, (error or "").strip().replace("\n", " "))

    def extend(self, rows: Iterable[tuple[str, str | None, str | None]]) -> None:
        """``add`` for each (model, error text, kind)."""
        for model, error, kind in rows:
            self.add(model, error, kind)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def lines(self, width: int = 480) -> list[str]:
        """``model  reason  count  e.g. message`` per group, sorted by model then reason order."""
        order = {r: i for i, r in enumerate(REASONS)}
        out = []
        for model, reason in sorted(self.counts, key=lambda k: (k[0], order.get(k[1], 99))):
            example = self.examples[(model, reason)]
            example = clip(example, width)
            n = self.counts[(model, reason)]
            out.append(f"  {model}: {reason} x{n} ({REASON_HELP[reason]}); e.g. {example}")
        return out

    def report(self, title: str = "failures by model and reason") -> str:
        return "\n".join([f"{title}:", *self.lines()]) if self else ""
