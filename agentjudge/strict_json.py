"""Strict JSON for every JSON file the project writes.

Python's ``json.dumps`` writes a float NaN or infinity as ``NaN`` / ``Infinity``, which is not JSON: strict
parsers (JavaScript's ``JSON.parse``, ``jq``, Go, Rust's serde) refuse the whole file. A value that is not a
finite number is unknown, so it is written as ``null``; ``allow_nan=False`` then guarantees that nothing
non-standard is left (it raises instead of writing it).
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every float that is not finite (NaN, ±inf), at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``value`` as strict JSON (non-finite numbers as null); other keywords as json's.
    The value is walked (``finite``) only when it holds such a number: the common case costs one dump."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:  # "Out of range float values are not JSON compliant"
        return json.dumps(finite(value), allow_nan=False, **kwargs)
