"""Verdict parsing: strict where it can be, lenient where it must be, never defaulting.

Order of attempts: the whole answer as strict JSON; then JSON objects found inside code fences
or prose (with small, safe repairs: trailing commas, single-quoted strings, Python literals, bare keys);
then free-form lines such as ``Tool selection: 0.5``. A metric that cannot be found is ``None`` and makes
``parse_ok`` False: a judge that failed to answer is counted as such, never given a verdict it did not give.

Both output shapes are read: ours (``{"tool": {"verdict": 1.0, "justification": …}, …, "overall": …}``) and
the published one (``{"tool_selection_accuracy": {"accuracy": 1.0, "justification": …}, …,
"overall_assessment": …}`` with ``parameter_structure_accuracy``, ``sequence_accuracy``,
``query_coverage_accuracy``), which the ``paper`` prompt family asks for.

Three-level variants snap each number to the nearest of {0, 0.5, 1}; continuous variants keep it. A number
outside [0, 1] is accepted only within a small tolerance (clamped, and noted); anything further out is most
likely another scale (``8``, ``4``) and is rejected rather than guessed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from agentjudge.types import METRICS, Metric, PromptVariant

ParseMethod = Literal["json", "fenced_json", "freeform", "failed"]
RANGE_TOLERANCE = 0.05  # numbers in [-0.05, 1.05] are clamped into [0, 1]; further out is an error


@dataclass
class ParsedVerdicts:
    verdicts: dict[Metric, float | None]
    rationales: dict[str, str] = field(default_factory=dict)
    parse_ok: bool = False
    method: ParseMethod = "failed"
    problems: list[str] = field(default_factory=list)  # every deviation from the requested format


def snap_three_level(value: float) -> float:
    """Nearest of {0, 0.5, 1}; exact midpoints (0.25, 0.75) go up."""
    return min(1.0, max(0.0, math.floor(value * 2 + 0.5) / 2))


# ---------------------------------------------------------------- metric names

_SYNONYMS: dict[Metric, tuple[str, ...]] = {
    "tool": (
        "tool",
        "tools",
        "tool_selection",
        "tool_choice",
        "tool_use",
        "tool_usage",
        "selection",
        "tool_selection_score",
        "tool_score",
        "tool_selection_accuracy",  # the published output key
    ),
    "param": (
        "param",
        "params",
        "parameter",
        "parameters",
        "param_structure",
        "parameter_structure",
        "params_structure",
        "parameters_structure",
        "argument",
        "arguments",
        "argument_structure",
        "arguments_structure",
        "parameter_names",
        "param_score",
        "parameter_structure_score",
        "parameter_structure_accuracy",  # the published output key
    ),
    "seq": (
        "seq",
        "sequence",
        "sequence_accuracy",
        "sequencing",
        "order",
        "ordering",
        "call_order",
        "sequence_order",
        "seq_accuracy",
        "sequence_score",
        "seq_score",
    ),
    "cov": (
        "cov",
        "coverage",
        "query_coverage",
        "intent_coverage",
        "task_coverage",
        "request_coverage",
        "completeness",
        "coverage_score",
        "query_coverage_score",
        "query_coverage_accuracy",  # the published output key
    ),
}
_KEY_TO_METRIC: dict[str, Metric] = {syn: m for m, syns in _SYNONYMS.items() for syn in syns}
# "accuracy" is the published entry key: {"tool_selection_accuracy": {"accuracy": 1.0, "justification": ...}}
_VALUE_KEYS = ("verdict", "score", "accuracy", "value", "rating", "grade", "result")
_REASON_KEYS = ("justification", "rationale", "reason", "reasoning", "explanation", "comment")
_OVERALL_KEYS = ("overall", "overall_assessment", "assessment", "summary", "overall_justification")


_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=4096)
def _norm_key(key: str) -> str:
    """``"Tool Selection"`` -> ``"tool_selection"``. Remembered: an answer's few keys are normalised ~30
    times per parse, and judges repeat the same keys answer after answer."""
    return _NON_ALNUM.sub("_", key.lower()).strip("_")


_KEY_AFFIX = re.compile(r"^(?:score|verdict|rating)_|_(?:verdict|score|rating|grade|value|accuracy)$")


@lru_cache(maxsize=4096)
def _metric_of(key: str) -> Metric | None:
    """The metric a key names: a synonym, else one with a score/verdict affix removed ("tool_score").
    Remembered like ``_norm_key`` (a key that names no metric, "overall", costs a regex substitution)."""
    normed = _norm_key(key)
    return _KEY_TO_METRIC.get(normed) or _KEY_TO_METRIC.get(_KEY_AFFIX.sub("", normed))


# ---------------------------------------------------------------- numbers

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
# a number, optionally a percentage or fraction, optionally followed by a comment: "0.5 - one tool missing"
_NUMBER_TEXT = re.compile(
    rf"^\s*({_NUM})\s*(%|/\s*({_NUM})|out\s+of\s+({_NUM}))?\s*(?:$|[-—–:;,(]|\s[A-Za-z])", re.IGNORECASE
)


def _number(value: Any) -> float | None:
    """A number from a JSON value or a short string: ``0.5``, ``"1.0"``, ``"50%"``, ``"1/2"``, ``"3 of 4"``.

    Booleans and words are not numbers: a verdict must be stated, not inferred.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        match = _NUMBER_TEXT.match(value)
        if match:
            return _from_parts(match.group(1), match.group(2), match.group(3) or match.group(4))
    return None


def _from_parts(num: str, suffix: str | None, denom: str | None) -> float | None:
    x = float(num)
    if suffix and suffix.strip() == "%":
        return x / 100.0
    if denom is not None:
        d = float(denom)
        return x / d if d > 0 else None
    return x


def _finish(metric: str, x: float, scale: str, problems: list[str]) -> float | None:
    """Range check, then snap (three-level) or keep (continuous)."""
    if x < -RANGE_TOLERANCE or x > 1 + RANGE_TOLERANCE:
        problems.append(f"{metric}: value {x:g} is outside [0, 1] (another scale?); not used")
        return None
    if x < 0 or x > 1:
        problems.append(f"{metric}: value {x:g} clamped to [0, 1]")
        x = min(1.0, max(0.0, x))
    if scale == "three_level":
        snapped = snap_three_level(x)
        if snapped != x:
            problems.append(f"{metric}: value {x:g} snapped to {snapped:g}")
        return snapped
    return x


# ---------------------------------------------------------------- JSON candidates

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.DOTALL)


def strip_reasoning(text: str, problems: list[str]) -> str:
    """Remove ``<think>…</think>`` blocks (and a leading unopened one ending in ``</think>``)."""
    text = _THINK.sub("", text)
    close = re.search(r"</(think|thinking|reasoning)>", text, re.IGNORECASE)
    if close:  # some servers put the opening tag in the prompt: everything before the close is reasoning
        text = text[close.end() :]
    opened = re.search(r"<(think|thinking|reasoning)>", text, re.IGNORECASE)
    if opened:
        problems.append("unterminated reasoning block (output cut off while thinking?)")
        text = text[: opened.start()]
    return text.strip()


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{…}`` span, matching braces outside (single- or double-quoted) strings."""
    spans: list[str] = []
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            # an apostrophe in prose inside braces is rare; in JSON-ish text it opens a string
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


_BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _repair(text: str) -> tuple[str, list[str]]:
    """Rewrite JSON-ish text into JSON token by token.

    Repairs: single-quoted strings, trailing commas, Python literals, bare keys.

    Works on tokens (strings are copied, never edited inside), so a repair cannot change a string's content.
    """
    out: list[str] = []
    fixes: set[str] = set()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            j, buf = i + 1, []
            while j < n and text[j] != ch:
                if text[j] == "\\" and j + 1 < n:
                    buf.append(text[j : j + 2])
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            raw = "".join(buf)
            if ch == "'":
                fixes.add("single quotes")
                raw = raw.replace("\\'", "'").replace('"', '\\"')
            out.append('"' + raw.replace("\n", "\\n") + '"')
            i = j + 1
        elif ch == ",":
            k = i + 1
            while k < n and text[k].isspace():
                k += 1
            if k < n and text[k] in "}]":
                fixes.add("trailing comma")
            else:
                out.append(ch)
            i += 1
        elif ch.isalpha() or ch == "_":
            word = _BARE_WORD.match(text, i)
            assert word is not None
            token = word.group(0)
            rest = text[word.end() :].lstrip()
            if token in _PY_LITERALS:
                fixes.add("Python literals")
                out.append(_PY_LITERALS[token])
            elif token in ("true", "false", "null"):
                out.append(token)
            elif rest.startswith(":"):
                fixes.add("unquoted keys")
                out.append(json.dumps(token))
            else:
                out.append(token)  # not repairable: json.loads will reject it
            i = word.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out), sorted(fixes)


def _load_object(text: str) -> tuple[dict[str, Any] | None, list[str]]:
    try:
        value = json.loads(text)
        return (value if isinstance(value, dict) else None), []
    except json.JSONDecodeError:
        pass
    repaired, fixes = _repair(text)
    try:
        value = json.loads(repaired)
    except json.JSONDecodeError:
        return None, []
    return (value if isinstance(value, dict) else None), fixes


# ---------------------------------------------------------------- reading a JSON object


def _find_metric_map(obj: dict[str, Any], depth: int = 0) -> dict[str, Any] | list[Any] | None:
    """The dict (or list) that holds the metric entries: the object itself, or one level of nesting down."""
    if any(_metric_of(k) for k in obj):
        return obj
    if depth >= 2:
        return None
    for value in obj.values():
        if isinstance(value, dict):
            found = _find_metric_map(value, depth + 1)
            if found is not None:
                return found
        if (
            isinstance(value, list)
            and value
            and all(isinstance(v, dict) for v in value)
            and any(_metric_of(str(v.get("metric", v.get("name", "")))) for v in value)
        ):
            return value
    return None


def _entry_value(entry: Any) -> tuple[Any, str]:
    """(raw verdict, justification) from a metric entry: a number, a string, or a dict with verdict keys."""
    if isinstance(entry, dict):
        normed = {_norm_key(k): v for k, v in entry.items()}
        raw = next((normed[k] for k in _VALUE_KEYS if k in normed), None)
        reason = next((normed[k] for k in _REASON_KEYS if k in normed), "")
        return raw, reason if isinstance(reason, str) else json.dumps(reason)
    return entry, ""


def _from_object(
    obj: dict[str, Any], scale: str
) -> tuple[dict[Metric, float | None], dict[str, str], list[str]]:
    verdicts: dict[Metric, float | None] = dict.fromkeys(METRICS)
    rationales: dict[str, str] = {}
    problems: list[str] = []
    holder = _find_metric_map(obj)
    entries: list[tuple[str, Any]] = []
    if isinstance(holder, dict):
        entries = list(holder.items())
    elif isinstance(holder, list):
        entries = [(str(v.get("metric", v.get("name", ""))), v) for v in holder]
    # sibling justification maps, e.g. {"scores": {...}, "justifications": {...}}
    side: dict[str, str] = {}
    for key, value in obj.items():
        if _norm_key(key) in ("justifications", "rationales", "reasons", "explanations") and isinstance(
            value, dict
        ):
            side.update({k: v for k, v in value.items() if isinstance(v, str)})
    for key, entry in entries:
        metric = _metric_of(key)
        if metric is None or verdicts[metric] is not None:
            continue
        raw, reason = _entry_value(entry)
        x = _number(raw)
        if x is None:
            problems.append(f"{metric}: verdict {raw!r} is not a number")
            continue
        verdicts[metric] = _finish(metric, x, scale, problems)
        if reason:
            rationales[metric] = reason.strip()
    for key, text in side.items():
        metric = _metric_of(key)
        if metric and metric not in rationales:
            rationales[metric] = text.strip()
    # the holder first, then the whole object (once when they are the same dict: a second pass over it
    # would find what the first found)
    for source in (holder, obj) if isinstance(holder, dict) and holder is not obj else (obj,):
        for key, value in source.items():
            if _norm_key(key) in _OVERALL_KEYS and "overall" not in rationales:
                overall = value if isinstance(value, str) else _entry_value(value)[1] or json.dumps(value)
                rationales["overall"] = overall.strip()
    return verdicts, rationales, problems


# ---------------------------------------------------------------- free-form lines

_ACC = r"(?:[\s_-]*accuracy)?"  # the published names end in "accuracy": "Tool selection accuracy: 0.8"
_FREE_NAMES: dict[Metric, str] = {
    "tool": rf"tool[\s_-]*(?:selection|choice|use|usage){_ACC}|tools?",
    "param": rf"param(?:eter)?s?[\s_-]*(?:structure|names?|shape)?{_ACC}|arguments?[\s_-]*(?:structure)?",
    "seq": r"seq(?:uence)?[\s_-]*(?:accuracy|order(?:ing)?)?|(?:call[\s_-]*)?ordering|call[\s_-]*order",
    "cov": rf"(?:query|intent|task|request)[\s_-]*coverage{_ACC}|coverage|cov",
}
_SKIP = r"[\s*_`\"']*"  # markdown emphasis, code ticks, quotes of broken JSON
_FREE_VALUE = (
    rf"{_SKIP}(?:\((?:score|verdict)\))?{_SKIP}(?:score|verdict|rating)?{_SKIP}"
    r"(?:[:=|–—-]|\bis\b|\()[\s*_`|\"']*"
    r"(?:\{\s*[\"']?(?:verdict|score|value|rating)[\"']?\s*:\s*)?[\"']?"  # truncated JSON: {"verdict": 1.0
    rf"(?P<num>{_NUM})[ \t]*(?P<suffix>%|/[ \t]*(?P<den>{_NUM})|out[ \t]+of[ \t]+(?P<den2>{_NUM}))?(?!\.?\d)"
    r"(?P<rest>[^\n]*)"
)
_FREE: dict[Metric, re.Pattern[str]] = {
    m: re.compile(rf"(?<![A-Za-z])(?:{names})(?![A-Za-z]){_FREE_VALUE}", re.IGNORECASE)
    for m, names in _FREE_NAMES.items()
}
_FREE_OVERALL = re.compile(
    r"(?<![A-Za-z])overall(?:\s+assessment)?[\s*_`]*[:=–—-][\s*_`]*(?P<text>[^\n]+)", re.I
)


def _from_freeform(text: str, scale: str) -> tuple[dict[Metric, float | None], dict[str, str], list[str]]:
    """Last ``<metric name> <separator> <number>`` per metric (verdicts come after any reasoning)."""
    verdicts: dict[Metric, float | None] = dict.fromkeys(METRICS)
    rationales: dict[str, str] = {}
    problems: list[str] = []
    for metric, pattern in _FREE.items():
        matches = list(pattern.finditer(text))
        if not matches:
            continue
        # the last in-range mention wins: verdicts come after reasoning, which may mention other numbers
        values = [
            (m, _from_parts(m.group("num"), m.group("suffix"), m.group("den") or m.group("den2")))
            for m in matches
        ]
        usable = [(m, x) for m, x in values if x is not None and -RANGE_TOLERANCE <= x <= 1 + RANGE_TOLERANCE]
        match, x = usable[-1] if usable else values[-1]
        if x is None:
            problems.append(f"{metric}: unreadable score {match.group(0).strip()!r}")
            continue
        verdicts[metric] = _finish(metric, x, scale, problems)
        rest = match.group("rest").strip(" *_`|()-—–:.,").strip()
        if rest and rest[0] not in "\"'{}[],":  # not the remains of a broken JSON object
            rationales[metric] = rest
    overall = list(_FREE_OVERALL.finditer(text))
    if overall:
        rationales["overall"] = overall[-1].group("text").strip(" *_`")
    return verdicts, rationales, problems


# ---------------------------------------------------------------- entry point


def _count(verdicts: dict[Metric, float | None]) -> int:
    return sum(v is not None for v in verdicts.values())


def parse_verdicts(text: str, variant: PromptVariant) -> ParsedVerdicts:
    """Read the four verdicts from a judge's answer; see the module docstring for the order of attempts."""
    scale = "continuous" if variant.prompt_format == "freeform" else "three_level"
    problems: list[str] = []
    body = strip_reasoning(text or "", problems)
    if not body:
        return ParsedVerdicts(dict.fromkeys(METRICS), {}, False, "failed", problems + ["empty answer"])

    best: tuple[int, ParseMethod, dict[Metric, float | None], dict[str, str], list[str]] | None = None
    try:
        whole = json.loads(body)
    except json.JSONDecodeError:
        whole = None
    unused: list[str] = []  # problems met on the way, reported if nothing better is found
    if isinstance(whole, dict):
        v, r, p = _from_object(whole, scale)
        best = (_count(v), "json", v, r, p)
        unused += p
    if best is None or best[0] < len(METRICS):
        fenced = [m.group(2) for m in _FENCE.finditer(body)]
        candidates: list[str] = []
        for span in [s for chunk in fenced for s in _balanced_objects(chunk)] + _balanced_objects(body):
            if span not in candidates and not (span == body and isinstance(whole, dict)):
                candidates.append(span)
        for candidate in candidates:
            obj, fixes = _load_object(candidate)
            if obj is None:
                continue
            v, r, p = _from_object(obj, scale)
            p = ([f"JSON repaired: {', '.join(fixes)}"] if fixes else []) + p
            if candidate != body and not any(candidate in chunk for chunk in fenced):
                p = ["JSON embedded in prose"] + p
            if _count(v) > 0 and (best is None or _count(v) >= best[0]):
                best = (_count(v), "fenced_json", v, r, p)  # ties: the later object wins (verdicts come last)
            else:
                unused += [x for x in p if x.startswith(METRICS)]
    if (best is None or best[0] < len(METRICS)) and not isinstance(whole, dict):
        # free-form reading of a valid JSON answer would only second-guess what the JSON said
        v, r, p = _from_freeform(body, scale)
        if _count(v) > (best[0] if best else 0):
            best = (_count(v), "freeform", v, r, p)
        else:
            unused += p
    if best is None or best[0] == 0:
        where = "" if len(body) < 120 else f" (answer of {len(body)} characters)"
        unused = list(dict.fromkeys(unused))  # de-duplicated, in order
        return ParsedVerdicts(
            dict.fromkeys(METRICS), {}, False, "failed", problems + unused + [f"no verdicts found{where}"]
        )
    count, method, verdicts, rationales, found_problems = best
    problems += found_problems
    missing = [m for m in METRICS if verdicts[m] is None]
    if missing:
        problems.append(f"missing verdict(s) for {', '.join(missing)}")
    return ParsedVerdicts(verdicts, rationales, not missing, method, problems)
