"""A quick "surely valid" test for a tool's arguments, so ``jsonschema`` is asked only about the others.

Why: ``jsonschema`` takes ~140 µs to validate one call's arguments, and nearly every call of a grid or a
dataset is valid. Two callers ask it again and again: the rule baseline (``judges/baselines.py``), which
reports a call's schema problems other than missing and unexpected keys (~95 % of a grid's calls have
none), and Gate 1 (``dataset/gates.py``), which validates every GT call (all of a generated dataset's are
valid). ``surely_valid(schema)`` compiles a tool's parameter schema into a predicate that answers True
only when validation of the arguments reports no error other than ``required`` and
``additionalProperties`` ones (the baseline leaves those out); with ``complete=True``, only when it
reports no error at all (Gate 1). False means "ask jsonschema", which then writes the messages, so no
finding can change: the predicate only decides when there is nothing to report. Draft 7 and Draft
2020-12 (without a format checker, as both callers build their validators) read every keyword handled
here alike.

It knows the keywords the dataset's schemas use (``type``, ``properties``, ``items``, ``enum``,
``pattern``, the length, size and bound keywords, ``uniqueItems``, ``required``, a boolean
``additionalProperties``; the annotations). A schema with any other keyword, or a keyword value
``jsonschema`` might read differently, compiles to None: every call is then validated by ``jsonschema``.
Values other than plain JSON ones (exact ``str``, ``int``, ``float``, ``bool``, ``None``, ``list``,
``dict``) are never called valid here. ``tests/test_quickvalid.py`` holds it to ``jsonschema`` on
generated schemas and values.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "format"})
_JSON = frozenset({str, int, float, bool, type(None), list, dict})
_NUMERIC = (int, float)


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


def _number(value: Any) -> bool:
    return type(value) in _NUMERIC


_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "integer": _is_integer,
    "number": _number,
}


class _Unsupported(Exception):
    """The schema uses something this module does not decide: jsonschema validates every call."""


def surely_valid(schema: Any, complete: bool = False) -> Check | None:
    """A predicate over argument values (see the module docstring), or None when the schema uses a keyword
    or a keyword value this module does not handle. ``complete``: missing required keys and keys that
    ``additionalProperties: false`` forbids make a value not surely valid too."""
    try:
        return _compile(schema, complete)
    except _Unsupported:
        return None
    # a schema that makes compiling fail ({"type": [["string"]]}, a pattern's repeat count too large, nesting
    # too deep) is jsonschema's to report on (the baseline says "unusable"), never a crash here
    except (TypeError, ValueError, OverflowError, RecursionError, re.error):
        return None


def _compile(schema: Any, complete: bool) -> Check:
    if schema is True:
        return lambda value: type(value) in _JSON
    if type(schema) is not dict:
        raise _Unsupported
    checks: list[Check] = []
    for keyword, arg in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        # a value jsonschema would stumble on (a schema under additionalProperties reports its errors
        # under its own keywords) is left to jsonschema
        if keyword == "required":
            if type(arg) is not list or any(type(name) is not str for name in arg):
                raise _Unsupported
            if complete and arg:
                checks.append(_required(tuple(arg)))
            continue
        if keyword == "additionalProperties":
            if type(arg) is not bool:
                raise _Unsupported
            if complete and not arg:
                known = schema.get("properties", {})
                if type(known) is not dict:
                    raise _Unsupported
                checks.append(_closed(frozenset(known)))
            continue
        checks.append(_keyword(keyword, arg, complete))
    if not checks:
        return lambda value: type(value) in _JSON
    if len(checks) == 1:
        only = checks[0]
        return lambda value: type(value) in _JSON and only(value)

    def every(value: Any) -> bool:  # a loop, not all() over a generator: a third less time per node
        if type(value) not in _JSON:
            return False
        for check in checks:  # noqa: SIM110 - see above
            if not check(value):
                return False
        return True

    return every


def _required(names: tuple[str, ...]) -> Check:
    return lambda v: type(v) is not dict or all(name in v for name in names)


def _closed(allowed: frozenset[str]) -> Check:
    return lambda v: type(v) is not dict or allowed.issuperset(v)


def _count(arg: Any) -> int | float:
    if type(arg) not in _NUMERIC:
        raise _Unsupported
    return arg


def _keyword(keyword: str, arg: Any, complete: bool) -> Check:  # noqa: C901 - one branch per keyword, read top to bottom
    if keyword == "type":
        names = [arg] if type(arg) is str else arg
        if type(names) is not list or not names or any(n not in _TYPES for n in names):
            raise _Unsupported
        kinds = [_TYPES[n] for n in names]
        if len(kinds) == 1:
            return kinds[0]
        return lambda v: any(kind(v) for kind in kinds)
    if keyword == "properties":
        if type(arg) is not dict or any(type(name) is not str for name in arg):
            raise _Unsupported
        subs = {name: _compile(sub, complete) for name, sub in arg.items()}

        def properties(v: Any) -> bool:
            if type(v) is dict:
                for name, value in v.items():  # a call's few arguments, not the schema's every property
                    check = subs.get(name)
                    if check is not None and not check(value):
                        return False
            return True

        return properties
    if keyword == "items":
        item = _compile(arg, complete)
        return lambda v: type(v) is not list or all(map(item, v))
    if keyword == "enum":
        if type(arg) is not list:
            raise _Unsupported
        texts = frozenset(e for e in arg if type(e) is str)
        return lambda v: type(v) is str and v in texts  # another kind of value: jsonschema decides
    if keyword == "pattern":
        if type(arg) is not str:
            raise _Unsupported
        search = re.compile(arg).search  # jsonschema: re.search(pattern, value); re.error: see surely_valid
        return lambda v: type(v) is not str or search(v) is not None
    if keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        bound, kind = _count(arg), (str if keyword.endswith("Length") else list)
        if keyword.startswith("min"):
            return lambda v: type(v) is not kind or len(v) >= bound
        return lambda v: type(v) is not kind or len(v) <= bound
    if keyword == "minimum":
        low = _count(arg)
        return lambda v: not _number(v) or v >= low
    if keyword == "maximum":
        high = _count(arg)
        return lambda v: not _number(v) or v <= high
    if keyword == "uniqueItems":
        if type(arg) is not bool:
            raise _Unsupported
        if not arg:
            return lambda v: True
        # strings only: jsonschema's equality is plain equality for them; anything else, jsonschema decides
        return lambda v: type(v) is not list or (all(type(e) is str for e in v) and len(set(v)) == len(v))
    raise _Unsupported
