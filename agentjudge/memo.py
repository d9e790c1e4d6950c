"""Bounded memos that start over when full: the per-process caches of the runner's hot loops.

Why one helper: the rule baseline's verdicts and schema messages, a dataset's tasks and expected responses,
and the export's decoded results are each asked for again and again while the runner works through one
record's units, then rarely after. A dict that is cleared when it reaches its size keeps memory bounded in
every process of a run (each forked worker holds its own) at the cost of one rebuild per entry after a
clear; no entry is ever stale, because every key holds everything its value depends on.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def remembered(memo: dict[K, V], key: K, size: int, make: Callable[[], V]) -> V:
    """``memo[key]``, made by ``make()`` when absent (a None value counts as absent); the memo is emptied
    first when it already holds ``size`` entries."""
    value = memo.get(key)
    if value is None:
        if len(memo) >= size:
            memo.clear()
        value = memo[key] = make()
    return value
