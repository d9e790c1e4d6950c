"""The cyclic garbage collector: paused while the runner builds long-lived data, told what lives on.

Patches: nothing of another project; it steers CPython's collector (``gc.disable``/``gc.freeze``) from
outside the code that allocates, which a reader of that code would not expect.

Why: CPython runs a full collection whenever the objects that survived earlier collections have grown by
a quarter, and each full collection walks every tracked object. Parsing 3,808 records, 57,120 stored
predictions or 685,440 unit keys (the paper-shaped grid) grows the heap by millions of objects that all
survive, so the collector walks the growing heap again and again and finds nothing: reading the full
dataset took 3.7 s with the collector and 1.3 s without it, and the whole offline grid took ~8 s less
(75.4 and 76.5 s before, 67.6 to 68.3 s after, in one sitting of ``bench/bench_grid.py``).

What is built under the pause is data and containers (pydantic models, dicts, lists, tuples), freed by
reference counting when no longer used, so pausing loses nothing but the scans. The pause never spans
model calls, the event loop or user code: those make cyclic garbage (tracebacks, futures) that must be
collected. ``freeze`` moves what exists now out of the collector's generations (CPython's ``gc.freeze``,
meant for this): the runner calls it where what it built lives until the end (the records, the judge stage's
input), and before forking workers, whose inherited pages a collection would otherwise touch and copy.

Falls back: with ``AGENTJUDGE_NO_FAST_PATHS=1`` both are no-ops; the collector runs as CPython sets it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from agentjudge import fastpaths


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector is enabled again after it (also on an
    exception) unless it was already disabled before. A plain block with the fast paths off."""
    if not fastpaths.enabled():
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze() -> None:
    """Everything alive now is left out of later collections (``gc.freeze``); nothing with the fast paths
    off. ``gc.unfreeze`` (the grid's ``finally``) undoes it."""
    if fastpaths.enabled():
        gc.freeze()
