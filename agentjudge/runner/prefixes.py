"""What a run's prompts share, for the dry run's "with prefix caching" estimate.

A provider's prefix cache serves the longest prefix of a prompt it has seen recently (OpenAI: automatically,
from 1,024 tokens on, in steps of 128; Anthropic: up to a ``cache_control`` breakpoint). So the estimate
needs, per call, how many leading tokens an earlier call of the same model already sent. This module cuts
each rendered prompt into pieces at its data blocks (tools, request, reference, calls: the tags of
``judges.prompts``) and at message boundaries, and replays the calls in the order the runner makes them
(``work.prefix_order``), remembering every prefix of pieces each model has sent. Everything from the block
of calls under review onwards is never counted as shared: in a real run it differs between generators
(the dry run only has the GT calls as a stand-in for predictions that do not exist yet).

Assumptions, stated in the dry run's footnote: a prefix stays cached while the calls of one record are made
(the grid order keeps them together) and the system text stays warm across records; cache writes cost the
list price except where litellm lists a cache-creation price (Anthropic).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agentjudge.judges.prompts import TAG_CALLS, TAG_QUERY, TAG_REFERENCE, TAG_TOOLS
from agentjudge.models.prices import MIN_CACHED_PREFIX_TOKENS

_BLOCK = re.compile(rf"(<({TAG_TOOLS}|{TAG_QUERY}|{TAG_REFERENCE}|{TAG_CALLS})>\n.*?\n</\2>)", re.DOTALL)
CACHE_STEP_TOKENS = 128
_ROLE = "\x00role:"  # a piece that marks a message boundary; it has no tokens of its own


@dataclass(frozen=True)
class PromptPieces:
    """One rendered prompt as pieces. ``shared``: how many leading pieces may be served from a cache
    (everything before the calls under review); ``breakpoint``: how many leading pieces a ``cache_control``
    breakpoint covers (0 = the prompt has none)."""

    pieces: tuple[str, ...]
    shared: int
    breakpoint: int = 0
    messages: int = 0


def split_messages(messages: list[dict[str, str]], *, breakpoint_after: str | None = None) -> PromptPieces:
    """Pieces of chat messages: a role marker per message, then its text cut around each data block.

    ``breakpoint_after``: the tag of the block that closes the byte-stable part marked for Anthropic
    (``user_request`` in the ``agentjudge`` family); ``None`` = no breakpoint."""
    pieces: list[str] = []
    shared = breakpoint = -1
    for message in messages:
        pieces.append(_ROLE + message["role"])
        for part in _BLOCK.split(message["content"]):
            if part in (TAG_TOOLS, TAG_QUERY, TAG_REFERENCE, TAG_CALLS) or not part:
                continue  # the tag names captured by the inner group
            if shared < 0 and part.startswith(f"<{TAG_CALLS}>"):
                shared = len(pieces)
            pieces.append(part)
            if breakpoint_after and breakpoint < 0 and part.startswith(f"<{breakpoint_after}>"):
                breakpoint = len(pieces)
    return PromptPieces(
        tuple(pieces),
        shared if shared >= 0 else len(pieces),
        max(breakpoint, 0),
        len(messages),
    )


def cacheable(tokens: int) -> int:
    """The part of a shared prefix a provider caches: nothing below the minimum, then whole steps."""
    if tokens < MIN_CACHED_PREFIX_TOKENS:
        return 0
    return (
        MIN_CACHED_PREFIX_TOKENS
        + (tokens - MIN_CACHED_PREFIX_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS
    )


@dataclass
class PrefixCache:
    """The prefixes one model has been sent so far (by their chained piece hashes)."""

    count: Callable[[str], int]  # tokens of one piece for this model
    seen: set[int] = field(default_factory=set)
    # piece -> tokens; pass one dict to every model with the same model string (counting is the slow part)
    _tokens: dict[str, int] = field(default_factory=dict)

    def tokens(self, piece: str) -> int:
        if piece.startswith(_ROLE):
            return 0
        n = self._tokens.get(piece)
        if n is None:
            n = self._tokens[piece] = self.count(piece)
        return n

    def send(self, prompt: PromptPieces, depth: int) -> tuple[int, int, int]:
        """Record one call; returns (prompt tokens without message overhead, tokens read from the cache,
        tokens written to it). ``depth``: how many leading pieces this provider can cache at all."""
        total = hit = 0
        key = 0
        cumulative = 0
        for i, piece in enumerate(prompt.pieces):
            cumulative += self.tokens(piece)
            if i < depth:
                key = hash((key, piece))
                if key in self.seen:
                    hit = cumulative
                else:
                    self.seen.add(key)
        total = cumulative
        reachable = sum(self.tokens(p) for p in prompt.pieces[:depth])
        read = cacheable(hit)
        written = cacheable(reachable) - read if reachable > hit else 0
        return total, read, max(written, 0)
