"""The environment's key-like values, scanned again only when the environment changed.

Patches: nothing; it reads CPython's undecoded copy of the environment (``os.environ._data``, a private
attribute every ``os.environ`` write updates) to tell whether anything changed since the last scan.

Why: the model client scrubs every key-like variable's value out of answers and errors, on every call.
Decoding and matching every variable cost ~80 µs a call; comparing the undecoded pairs with the last scan's
~1 µs.

Falls back: an ``os.environ`` without ``_data`` (another Python) is compared decoded, and with
``AGENTJUDGE_NO_FAST_PATHS=1`` the environment is scanned on every call.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agentjudge import fastpaths

# the environment as last scanned (its raw name/value pairs), the pattern, and the matching values found
_SCAN: tuple[tuple[tuple[Any, Any], ...], re.Pattern[str] | None, frozenset[str]] = ((), None, frozenset())


def matching_values(name: re.Pattern[str]) -> frozenset[str]:
    """The values of the environment variables whose name ``name`` matches (``search``)."""
    global _SCAN
    if not fastpaths.enabled():
        return frozenset(v for k, v in os.environ.items() if name.search(k))
    raw = getattr(os.environ, "_data", None)
    pairs = tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())
    scanned, pattern, found = _SCAN
    if pairs != scanned or pattern is not name:
        found = frozenset(v for k, v in os.environ.items() if name.search(k))
        _SCAN = (pairs, name, found)
    return found
