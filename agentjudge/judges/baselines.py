"""Offline baseline judges: alignment for free, alignment from simple checks, and the reachable maximum.

* ``baseline/always-1``, ``baseline/always-0.5``, ``baseline/always-0`` — constant verdicts without looking
  at the calls. Their alignment is how much a judge gets by saying nothing (the 1.0-default compression of
  RQ3 is measured against ``always-1``).
* ``baseline/rule`` — a judge without GT built from checks anyone could run on the query, the schemas and
  the calls (see ``rule_verdicts``); each check maps to a three-level verdict with a rationale naming what it
  found.
* ``baseline/gt-rule`` — the rule checks' GT-reading sibling: a structural diff against the GT the request
  shows (``gt_rule.gt_diff_verdicts``), so a wrong GT anchors it; the no-GT rules when none is shown.
* ``baseline/ceiling`` — an ORACLE, not a judge: it reads the programmatic reference
  (``JudgeRequest.reference``) and snaps it to {0, 0.5, 1} (three-level variants) or keeps it (continuous
  variants). Its alignment is the best any judge can reach on the verdict scale.

All are deterministic and fast (tens of thousands of calls in a quickstart run).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator

from agentjudge.judges.gt_rule import gt_diff_verdicts
from agentjudge.judges.parse import snap_three_level
from agentjudge.judges.prompts import verdict_scale
from agentjudge.memo import exact_key, remembered
from agentjudge.quickvalid import Check, surely_valid
from agentjudge.types import (
    METRICS,
    TRAJECTORY_CONDITIONS,
    Judge,
    JudgeRequest,
    JudgeResult,
    Metric,
    ModelSettings,
    ScoringMode,
    Task,
    ToolCall,
    ToolSchema,
)

PREFIX = "baseline/"


# ---------------------------------------------------------------- rule checks (baseline/rule)

_STOP_WORDS = """
the a an and or of to for in on at by with from into onto is are be been was were it its this that these
those please can could would should will shall may might must i me my we our you your he she they them
their his her also then than so if as any all some each every one two new just now get make want need
let lets know tell show give find look up out about after before when what which who whom whose how there
here do does did done have has had not no yes ok thanks thank
"""
_STOP = frozenset(_STOP_WORDS.split())
_PLACEHOLDER = re.compile(
    r"^\s*(?:<[^<>]+>|\{\{.+\}\}|\$\{?[\w.\[\]-]+\}?|\{[\w.\[\]-]+\})\s*$"
    r"|\b(?:from|of|returned by|output of|result of)\s+(?:step|call)\s*#?\d+"
    r"|\bstep\s*#?\d+\b",
    re.IGNORECASE,
)
_CAMEL = re.compile(r"([a-z])([A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
_STEP_REF = re.compile(r"\b(?:step|call)\s*#?(\d+)", re.IGNORECASE)


@lru_cache(maxsize=8_192)  # the same query is judged for every generator, trial and condition, in a row
def _tokens(text: str) -> frozenset[str]:
    """Content words, lower-cased, crude plural folding; identifiers split on ``_`` and camel case."""
    text = _CAMEL.sub(r"\1 \2", text).lower()
    out = set()
    for word in _WORD.findall(text):
        if word in _STOP or (len(word) < 3 and not word.isdigit()):
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(out)


@dataclass
class _ToolInfo:
    name: str
    validator: Draft202012Validator
    properties: frozenset[str]
    required: frozenset[str]
    produces: frozenset[str]  # output property names (and their singulars) the tool creates, not echoes
    tokens: frozenset[str]  # words of the name and description
    vocabulary: frozenset[str]  # tokens plus parameter names and enum values: what the tool is about
    choices: frozenset[str]  # enum values of its parameters: picked from the schema, not produced by a call
    surely_valid: Check | None  # arguments with nothing for _validate to report (quickvalid.py), when known


_INFOS: dict[str, _ToolInfo] = {}
_BY_ID: dict[int, tuple[ToolSchema, _ToolInfo]] = {}  # fast path: the same schema object seen again
# a full dataset has ~50k tool schemas, but the runner judges a record's units together (prefix_order,
# runner/offline.py), so a few thousand are enough; beyond that a cache starts over. Small on purpose: every
# process of an offline run (workers) holds its own (one validator each).
_MAX_INFOS = 2_048
_MAX_ERRORS = 8_192


def _output_names(schema: dict[str, Any]) -> set[str]:
    """Property names of an output schema (object, array of objects, one level of nested arrays)."""
    names: set[str] = set()
    for node in (schema, schema.get("items") if isinstance(schema.get("items"), dict) else None):
        if isinstance(node, dict) and isinstance(node.get("properties"), dict):
            names.update(node["properties"])
            for sub in node["properties"].values():
                if isinstance(sub, dict) and isinstance(sub.get("items"), dict):
                    names.update(sub["items"].get("properties", {}))
    return names | {n[:-1] for n in names if n.endswith("ids")}  # booking_ids feeds booking_id


def _tool_info(tool: ToolSchema) -> _ToolInfo:
    """Per-tool facts, cached by the schema's content (records share schemas across difficulties and trials).

    The schema is not meta-validated here (the dataset gates do that, and it costs ~30 ms per schema);
    a schema the validator cannot use shows up as a validation note instead.
    """
    held = _BY_ID.get(id(tool))
    if held is not None and held[0] is tool:  # the cache holds the object, so its id cannot be reused
        return held[1]
    key = json.dumps(
        [tool.name, tool.description, tool.parameters, tool.returns], sort_keys=True, default=str
    )
    info = _INFOS.get(key)
    if info is not None:
        _remember(tool, info)
        return info
    params = tool.parameters
    props = params.get("properties", {}) if isinstance(params.get("properties"), dict) else {}
    enums = [str(v) for spec in props.values() if isinstance(spec, dict) for v in spec.get("enum", [])]
    tokens = _tokens(tool.name) | _tokens(tool.description)
    info = _ToolInfo(
        name=tool.name,
        validator=Draft202012Validator(params),
        properties=frozenset(props),
        required=frozenset(params.get("required", []) or []),
        produces=frozenset(_output_names(tool.returns) - set(props)),
        tokens=tokens,
        vocabulary=tokens | _tokens(" ".join([*props, *enums])),
        choices=frozenset(enums),
        surely_valid=surely_valid(params),
    )
    if len(_INFOS) >= _MAX_INFOS:
        _INFOS.clear()
    _INFOS[key] = info
    _remember(tool, info)
    return info


def _remember(tool: ToolSchema, info: _ToolInfo) -> None:
    if len(_BY_ID) >= _MAX_INFOS:
        _BY_ID.clear()
    _BY_ID[id(tool)] = (tool, info)


_ERRORS: dict[tuple[int, bytes], tuple[_ToolInfo, list[str]]] = {}


def _schema_errors(info: _ToolInfo, arguments: dict[str, Any]) -> list[str]:
    """Validation messages other than required/additional keys (those are reported by name); remembered
    per tool and arguments (the simulated generators repeat most GT calls verbatim: validating them was
    half of the rule checks' time). The memo holds the tool's info, so its id is not reused meanwhile.
    Arguments the quick test calls valid (~95 % of a grid's) skip both (``quickvalid.py``)."""
    if info.surely_valid is not None and info.surely_valid(arguments):
        return []
    key = exact_key(arguments)
    if key is None:
        return _validate(info, arguments)
    held = remembered(_ERRORS, (id(info), key), _MAX_ERRORS, lambda: (info, _validate(info, arguments)))
    return list(held[1])


def _validate(info: _ToolInfo, arguments: dict[str, Any]) -> list[str]:
    try:
        return [
            e.message[:80]
            for e in info.validator.iter_errors(arguments)
            if e.validator not in ("required", "additionalProperties")
        ]
    except Exception as exc:  # noqa: BLE001 - an unusable schema is a finding, not a crash of the run
        return [f"schema of {info.name} unusable: {type(exc).__name__}"]


_NONE: frozenset[str] = frozenset()
# identifiers (PAX-67834, AU-7056, INV2024-11) and numbers of 3+ digits other than bare years
_SALIENT = re.compile(r"(?<![\w-])(?:[A-Za-z]+[-_]?\d[\w-]*\w|(?!(?:19|20)\d\d\b)\d[\d,.]*\d{2})(?![\w-])")


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(key, scalar) pairs of an argument tree; list items keep their parent's key."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    elif value is not None:
        yield key, value


def _in_query(value: Any, query_folded: str) -> bool:
    if isinstance(value, bool):
        return True  # flags are choices, not facts to ground
    if isinstance(value, int | float):
        forms = {str(value)} | ({str(int(value))} if float(value).is_integer() else set())
        return any(f in query_folded for f in forms)
    text = " ".join(str(value).lower().replace("_", " ").split())
    return bool(text) and text in query_folded


def _three(bad: int, total: int, *, minor: int = 0) -> float:
    """0 problems → 1.0; problems on more than half of the items → 0.0; otherwise 0.5."""
    if bad * 2 > total:
        return 0.0
    return 0.5 if bad or minor else 1.0


@dataclass(frozen=True)
class _TaskFacts:
    """What ``rule_verdicts`` reads of a task whatever the calls: a record's task is judged for every
    generator, condition and rule judge (~20 times in a paper grid), its facts are worked out once."""

    task: Task  # held, so that its id is not reused while it is a key of _FACTS
    tools: dict[str, _ToolInfo]
    query_folded: str
    query_tokens: frozenset[str]
    vocabulary: frozenset[str]  # of every tool
    salient: tuple[str, ...]  # the query's ID-like values (_SALIENT), each once, in order


_FACTS: dict[int, _TaskFacts] = {}
_MAX_FACTS = 512  # tasks come a record at a time (runner/offline.py's prefix_order)


def _task_facts(task: Task) -> _TaskFacts:
    held = _FACTS.get(id(task))
    if held is not None and held.task is task:
        return held
    tools = {t.name: _tool_info(t) for t in task.tools}
    facts = _TaskFacts(
        task=task,
        tools=tools,
        query_folded=" ".join(task.query.lower().replace("_", " ").split()),
        query_tokens=_tokens(task.query),
        vocabulary=frozenset().union(*(info.vocabulary for info in tools.values())),
        salient=tuple(dict.fromkeys(_SALIENT.findall(task.query))),
    )
    if len(_FACTS) >= _MAX_FACTS:
        _FACTS.clear()
    _FACTS[id(task)] = facts
    return facts


def rule_verdicts(task: Task, calls: list[ToolCall]) -> tuple[dict[Metric, float], dict[str, str]]:
    """Per-metric verdicts and rationales from checks that need no GT (thresholds are this baseline's own)."""
    if not calls:
        note = "no calls were made"
        return dict.fromkeys(METRICS, 0.0), {**dict.fromkeys(METRICS, note), "overall": note}
    facts = _task_facts(task)
    tools, query_folded, query_tokens = facts.tools, facts.query_folded, facts.query_tokens

    # tool selection: known tools, no exact duplicates, each tool's vocabulary touches the query
    unknown = [c.name for c in calls if c.name not in tools]
    seen: set[str] = set()
    duplicates = []
    named = Counter(c.name for c in calls)
    for c in calls:
        if named[c.name] < 2:  # a call alone under its tool's name duplicates no other
            continue
        key = c.name + json.dumps(c.arguments, sort_keys=True, default=str)
        if key in seen:
            duplicates.append(c.name)
        seen.add(key)
    unrelated = [c.name for c in calls if c.name in tools and not (tools[c.name].tokens & query_tokens)]
    tool_v = 0.0 if len(unknown) * 2 > len(calls) else (0.5 if unknown or duplicates or unrelated else 1.0)
    tool_r = (
        f"{len(calls)} call(s); unknown tools {unknown or 'none'}; exact duplicates {duplicates or 'none'}; "
        f"tools sharing no word with the query {unrelated or 'none'}"
    )

    # parameter structure: required names, unexpected names, schema validation
    major, minor, notes = 0, 0, []
    for i, c in enumerate(calls, start=1):
        info = tools.get(c.name)
        if info is None:
            major += 1
            continue
        missing = sorted(info.required - c.arguments.keys())
        extra = sorted(c.arguments.keys() - info.properties) if info.properties else []
        other = _schema_errors(info, c.arguments)
        if missing:
            major += 1
            notes.append(f"call {i} {c.name} lacks required {missing}")
        elif extra or other:
            minor += 1
            notes.append(
                f"call {i} {c.name}: " + "; ".join([*([f"unexpected {extra}"] if extra else []), *other][:2])
            )
    param_v = _three(major, len(calls), minor=minor)
    param_r = (
        "; ".join(notes) if notes else "every call names its tool's parameters as the schema defines them"
    )

    # sequence: an argument that only a LATER call can produce, or a placeholder pointing to a later step
    order_bad, seq_notes, ungrounded = 0, [], 0
    leaves = [list(_leaves(c.arguments)) for c in calls]
    produced = [tools[c.name].produces if c.name in tools else _NONE for c in calls]
    later_of = [_NONE] * len(calls)  # what the calls after each one produce
    for i in range(len(calls) - 1, 0, -1):
        later_of[i - 1] = later_of[i] | produced[i]
    earlier: frozenset[str] = _NONE  # what the calls before the current one produce
    for i, c in enumerate(calls):
        if i:
            earlier = earlier | produced[i - 1]
        later = later_of[i]
        bad_here = False
        info = tools.get(c.name)
        for key, value in leaves[i]:
            if _in_query(value, query_folded) or (info is not None and str(value) in info.choices):
                continue
            refs = [int(n) for n in _STEP_REF.findall(str(value))] if isinstance(value, str) else []
            # a 1-based reference to this or a later step, or a value only a later call produces
            if any(r > i for r in refs) or (key in later and key not in earlier):
                bad_here = True
            elif not (key in earlier or (isinstance(value, str) and _PLACEHOLDER.search(value) and i > 0)):
                ungrounded += 1
        if bad_here:
            order_bad += 1
            seq_notes.append(f"call {i + 1} {c.name} uses a value only a later call produces")
    seq_v = 0.0 if order_bad * 3 > len(calls) and order_bad > 1 else (0.5 if order_bad else 1.0)
    seq_r = "; ".join(seq_notes) if seq_notes else "no call needs a value that only a later call produces"

    # coverage: of the query words the toolset has a word for, the share the calls touch; every ID-like value
    # of the query (PAX-67834, AU-7056, 1500) must reach some argument
    vocabulary = facts.vocabulary
    texts = [str(v).lower() for call_leaves in leaves for _, v in call_leaves]
    values_text = " ".join(texts)
    # the values' words: a word never spans two values, and one value recurs across a record's predictions
    call_tokens: set[str] = set().union(*map(_tokens, texts))
    for c in calls:
        call_tokens |= tools[c.name].vocabulary if c.name in tools else _tokens(c.name)
        call_tokens |= _tokens(" ".join(c.arguments))
    wanted = query_tokens & vocabulary
    covered = wanted & call_tokens
    share = len(covered) / len(wanted) if wanted else 1.0
    values_missing = [v for v in facts.salient if v.lower() not in values_text]
    cov_v = 1.0 if share >= 0.6 else (0.5 if share >= 0.3 else 0.0)
    if values_missing and cov_v == 1.0:
        cov_v = 0.5
    cov_r = f"{len(covered)}/{len(wanted)} of the query's tool-related words are touched by the calls" + (
        f"; query values never used: {values_missing[:5]}" if values_missing else ""
    )
    verdicts: dict[Metric, float] = {"tool": tool_v, "param": param_v, "seq": seq_v, "cov": cov_v}
    overall = (
        f"rule baseline (no GT): {ungrounded} argument value(s) neither in the query nor traceable to an "
        "earlier call (values are not scored)"
    )
    return verdicts, {"tool": tool_r, "param": param_r, "seq": seq_r, "cov": cov_r, "overall": overall}


_RULE_MEMO: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[Metric, float], dict[str, str]]] = {}
_RULE_MEMO_SIZE = 1_024


def rule_verdicts_once(task: Task, calls: list[ToolCall]) -> tuple[dict[Metric, float], dict[str, str]]:
    """``rule_verdicts``, remembered for the last few thousand (query, tools, calls): a grid asks it for the
    same prediction under every condition, and ``baseline/gt-rule`` asks it again without GT. The key holds
    the tool schemas by identity (the memo keeps them alive, so an id is never reused while it is a key)
    and the calls by content, in their own key order (the checks read arguments in that order); the
    caller gets its own copies of the dicts."""
    tools = tuple(task.tools)
    calls_key = exact_key([[c.name, c.arguments] for c in calls])
    if calls_key is None:
        return rule_verdicts(task, calls)
    key = (task.query, tuple(map(id, tools)), calls_key)
    held = remembered(_RULE_MEMO, key, _RULE_MEMO_SIZE, lambda: (tools, *rule_verdicts(task, calls)))
    return dict(held[1]), dict(held[2])


class ConstantJudge:
    """Always the same verdict for every metric; never inspects the request."""

    needs_reference = False

    def __init__(self, name: str, value: float) -> None:
        self.name = name
        self.value = value
        self._rationale = f"constant baseline: always {value:g}, the calls are not inspected"

    def answers_alike(self, condition: str) -> bool:
        """Whether every request of ``condition`` gets the same result (there is no trajectory outcome to
        judge): the runner then judges one request and reuses the result (``runner.grid``: half of a
        paper-shaped offline grid's units are constant baselines)."""
        return condition not in TRAJECTORY_CONDITIONS

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        return JudgeResult(
            verdicts=dict.fromkeys(METRICS, self.value),
            rationales={**dict.fromkeys(METRICS, self._rationale), "overall": self._rationale},
            parse_ok=True,
            raw_output=f"{self.name}: constant verdict {self.value:g}",
            outcome=_outcome("constant", request, self.value),
        )


def _blind_to_gt(condition: str) -> bool:
    """``condition_blind`` of the judges that never read the GT shown: a request gets the same result under
    every condition but the trajectory ones (which add an outcome verdict read from the trajectory)."""
    return condition not in TRAJECTORY_CONDITIONS


class RuleJudge:
    """No-GT checks on the query, schemas and calls, mapped to three-level verdicts."""

    needs_reference = False

    def __init__(self, name: str) -> None:
        self.name = name

    def condition_blind(self, condition: str) -> bool:
        """Whether the result ignores the unit's condition (the GT shown): the runner then judges a
        prediction once for all such conditions and reuses the result (``runner.grid.judge_offline``)."""
        return _blind_to_gt(condition)

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        verdicts, rationales = rule_verdicts_once(request.task, request.calls)
        return JudgeResult(
            verdicts=dict(verdicts),
            rationales=rationales,
            parse_ok=True,
            raw_output=f"{self.name}: rule checks (no GT used, condition ignored)",
            outcome=_outcome("rule", request),
        )


class GTRuleJudge:
    """Diffs the calls against the GT in the request; no-GT rules when the request carries none."""

    needs_reference = False

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        if request.gt is None:
            verdicts, rationales = rule_verdicts_once(request.task, request.calls)
            how = "no GT in this condition: no-GT rule checks"
        else:
            verdicts, rationales = gt_diff_verdicts(request.gt, request.calls)
            how = "structural diff against the GT shown"
        return JudgeResult(
            verdicts={m: verdicts[m] for m in METRICS},
            rationales=rationales,
            parse_ok=True,
            raw_output=f"{self.name}: {how}",
            outcome=_outcome("gt-rule", request),
        )


class CeilingJudge:
    """The reference itself on the verdict scale: an upper bound on alignment, labelled as an oracle."""

    needs_reference = True

    def __init__(self, name: str) -> None:
        self.name = name

    def condition_blind(self, condition: str) -> bool:
        """As ``RuleJudge.condition_blind``: the reference read is the prediction's, whatever GT is shown."""
        return _blind_to_gt(condition)

    async def __call__(self, request: JudgeRequest) -> JudgeResult:
        if request.reference is None:
            raise ValueError(
                f"{self.name} needs JudgeRequest.reference (the programmatic scores) for "
                f"{request.task.record_id}; the runner must pass it to judges with needs_reference=True"
            )
        if "strict" not in request.reference:
            raise ValueError(f"{self.name}: reference for {request.task.record_id} lacks the 'strict' mode")
        continuous = verdict_scale(request.variant) == "continuous"
        mode_verdicts: dict[ScoringMode, dict[Metric, float]] = {}
        for mode, scores in request.reference.items():
            missing = [m for m in METRICS if m not in scores]
            if missing:
                raise ValueError(
                    f"{self.name}: reference[{mode!r}] for {request.task.record_id} lacks {missing}"
                )
            mode_verdicts[mode] = {
                m: (min(1.0, max(0.0, scores[m])) if continuous else snap_three_level(scores[m]))
                for m in METRICS
            }
        how = "clamped" if continuous else "snapped to {0, 0.5, 1}"
        note = f"oracle: the programmatic reference {how}; an upper bound, not a judge"
        return JudgeResult(
            verdicts=dict(mode_verdicts["strict"]),
            rationales={**dict.fromkeys(METRICS, note), "overall": note},
            parse_ok=True,
            raw_output=f"{self.name}: {note}",
            mode_verdicts=mode_verdicts,
            outcome=_outcome("ceiling", request),
        )


def _outcome(kind: str, request: JudgeRequest, constant: float | None = None) -> float | None:
    """Trajectory conditions only: the baseline's outcome verdict (judges/outcome_rules.py)."""
    if request.condition not in TRAJECTORY_CONDITIONS:
        return None
    from agentjudge.judges.outcome_rules import baseline_outcome

    return baseline_outcome(kind, request, constant)[0]


_FACTORIES: dict[str, Callable[[str], Judge]] = {
    "always-1": lambda name: ConstantJudge(name, 1.0),
    "always-0.5": lambda name: ConstantJudge(name, 0.5),
    "always-0": lambda name: ConstantJudge(name, 0.0),
    "rule": RuleJudge,
    "ceiling": CeilingJudge,
    "gt-rule": GTRuleJudge,
}


KNOWN_BASELINES: tuple[str, ...] = tuple(PREFIX + k for k in _FACTORIES)


def make_baseline_judge(settings: ModelSettings) -> Judge:
    """The baseline judge named by ``settings.model`` (``baseline/<name>``); its name is the display name."""
    if not settings.model.startswith(PREFIX) or settings.model[len(PREFIX) :] not in _FACTORIES:
        raise ValueError(f"unknown baseline judge {settings.model!r}; known: {', '.join(KNOWN_BASELINES)}")
    return _FACTORIES[settings.model[len(PREFIX) :]](settings.display_name)
