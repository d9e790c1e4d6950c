"""``cache_stats`` and ``cache_clear``: the model-call cache."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentjudge.errors import InputError


@dataclass(frozen=True)
class CacheStats:
    """The call cache at ``path``: whether it exists, its entries, bytes, hits served, and per model."""

    path: Path
    exists: bool
    entries: int = 0
    size_bytes: int = 0
    hits: int = 0
    per_model: dict[str, dict[str, int]] = field(default_factory=dict)  # model -> entries, hits


def cache_stats(path: Path | str | None = None) -> CacheStats:
    """Entries, size and hit counts of the call cache (``agentjudge cache stats``); ``path`` default:
    ``$AGENTJUDGE_CACHE``, else ~/.cache/agentjudge/calls.sqlite. Raises ``InputError`` for a file that is
    not a readable cache."""
    from agentjudge.models.cache import CallCache, default_cache_path

    target = Path(path) if path is not None else default_cache_path()
    if not target.exists():
        return CacheStats(target, exists=False)
    try:
        stats: dict[str, Any] = CallCache(target).stats()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{target} is not a readable cache: {exc}") from exc
    shown = Path(stats["path"])  # as the cache names itself
    return CacheStats(
        shown, True, stats["entries"], stats["size_bytes"], stats["hits"], dict(stats["per_model"])
    )


@dataclass(frozen=True)
class CacheCleared:
    """What ``cache_clear`` deleted from the cache at ``path`` (nothing when it does not exist)."""

    path: Path
    exists: bool
    deleted: int = 0
    model: str | None = None


def cache_clear(path: Path | str | None = None, *, model: str | None = None) -> CacheCleared:
    """Delete cached model answers, all or one model's (``agentjudge cache clear``). Raises ``InputError``
    for a file that is not a readable cache."""
    from agentjudge.models.cache import CallCache, default_cache_path

    target = Path(path) if path is not None else default_cache_path()
    if not target.exists():
        return CacheCleared(target, exists=False, model=model)
    try:
        deleted = CallCache(target).clear(model)
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{target} is not a readable cache: {exc}") from exc
    return CacheCleared(target, True, deleted, model)
