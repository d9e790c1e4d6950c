"""Judge prompt assembly from the template files in ``prompts/``.

Why files and not strings in code: each prompt-variant dimension (condition, format, chain of thought,
default mode) is a research variable, so each value lives in its own file that a person can read and edit.
The assembly is deterministic and laid out for provider prefix caching (issue 18): the system message (role,
metric definitions, rubric) is the same for the whole run; the user message starts with the record's tools
and query, byte-identical for every judge call on the record; the per-call parts (condition, default rule,
format, chain of thought, reference, calls) come last.

Two prompt families (``PromptFamily``, pipeline key ``prompt_family``): ``agentjudge`` is ours (a system
message built from the variant files, then a user message with the data); ``paper`` follows the facts of the
published prompts: ONE user message, no system message, instructions then the four slots in the
published order (query, tools, generated calls, expected responses), the published output keys, and the
default rule near the top and again at the end. Its files are in ``prompts/paper/``; prompts/README.md shows
both families side by side with every deviation.

Untrusted content (tools, query, reference trace, calls) is JSON-encoded inside tagged blocks. A ``<`` that
would begin one of the block tags is written ``\\u003c`` inside the JSON, which keeps it valid JSON and
guarantees that no content can close a block early or open a fake one: the delimiters need no randomness to
be unambiguous.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from agentjudge.models.cache import share_prefix
from agentjudge.types import GTStep, JudgeRequest, PromptFamily, PromptVariant, ToolCall, ToolSchema

PROMPTS_ENV = "AGENTJUDGE_PROMPTS"
DEFAULT_PROMPT_FAMILY: PromptFamily = "agentjudge"
VerdictScale = Literal["three_level", "continuous"]
ToolRendering = Literal["full", "compact"]

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARKER = re.compile(r"\{\{(\w+)\}\}")

# Tag names of the untrusted blocks; tests and readers can rely on them.
TAG_TOOLS = "tool_schemas"
TAG_QUERY = "user_request"
TAG_REFERENCE = "reference_trace"
TAG_CALLS = "agent_calls"
_DELIMITER_LIKE = re.compile(
    rf"<(\s*/?\s*(?:{TAG_TOOLS}|{TAG_QUERY}|{TAG_REFERENCE}|{TAG_CALLS}))", re.IGNORECASE
)


def prompts_dir() -> Path:
    """The prompts folder: ``$AGENTJUDGE_PROMPTS`` if set, else the shipped ``prompts/``
    (``agentjudge.resources``: the repository's folder, or the package's own in a wheel)."""
    return _prompts_dir_for(os.environ.get(PROMPTS_ENV))


@lru_cache(maxsize=16)
def _prompts_dir_for(env: str | None) -> Path:
    """Located once per value of the variable: a judge call must not search the disk (errors are not
    cached, so a folder created later is found)."""
    if env:
        path = Path(env)
        if not path.is_dir():
            raise FileNotFoundError(f"{PROMPTS_ENV}={env!r} is not a directory of judge prompt templates")
        return path
    from agentjudge.resources import prompts_dir as shipped

    try:
        return shipped()
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{exc}; or set {PROMPTS_ENV} to the folder holding system.md etc.") from None


@lru_cache(maxsize=512)
def _template(folder: Path, name: str) -> tuple[str, frozenset[str]]:
    """A template's text (comments removed, outer whitespace stripped) and its markers, read once per process
    and folder: a run reads each file once, not once per judge call (``reload_templates`` forgets them)."""
    file = folder / name
    try:
        raw = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"judge prompt template {name!r} missing in {file.parent} (set {PROMPTS_ENV} to override)"
        ) from None
    text = _COMMENT.sub("", raw).strip()
    return text, frozenset(_MARKER.findall(text))


def reload_templates() -> None:
    """Forget the templates read so far (an edited template is otherwise seen by the next process)."""
    _template.cache_clear()
    _prompts_dir_for.cache_clear()
    _RECORD_PARTS.clear()
    _SYSTEM.clear()
    _INSTRUCTIONS.clear()
    _RENDERED.clear()
    _TOOL_BLOCKS.clear()


def load_template(name: str) -> str:
    """The text of ``prompts/<name>`` with ``<!-- -->`` comments removed and outer whitespace stripped."""
    return _template(prompts_dir(), name)[0]


def fill(name: str, values: dict[str, str]) -> str:
    """Fill the ``{{marker}}`` slots of template ``name`` in one pass (inserted text is never re-scanned).

    Every marker must have a value and every value must have a marker: a template edit that drops
    ``{{calls}}`` would otherwise silently hide the calls from the judge.
    """
    text, found = _template(prompts_dir(), name)
    unknown = found - values.keys()
    if unknown:
        raise ValueError(
            f"prompt template {name!r} has unknown marker(s) {sorted(unknown)}; known: {sorted(values)}"
        )
    unused = values.keys() - found
    if unused:
        raise ValueError(
            f"prompt template {name!r} lacks required marker(s) {sorted('{{' + u + '}}' for u in unused)}"
        )
    return _MARKER.sub(lambda m: values[m.group(1)], text)


def verdict_scale(variant: PromptVariant) -> VerdictScale:
    """Three-level variants snap verdicts to {0, 0.5, 1}; free-form (A5) is continuous in [0, 1]."""
    return "continuous" if variant.prompt_format == "freeform" else "three_level"


def safe_json(payload: Any) -> str:
    """JSON in which no block delimiter can occur: a ``<`` that would start one is written ``\\u003c``.

    Other ``<`` stay readable (placeholders such as ``<id from step 1>`` are common in calls).
    """
    text = json.dumps(payload, ensure_ascii=False, sort_keys=False)
    if "<" not in text:  # nothing to rewrite: the scan for delimiters is most of the cost of a short payload
        return text
    return _DELIMITER_LIKE.sub(lambda m: "\\u003c" + m.group(1), text)


def _json_lines(items: list[Any]) -> str:
    """A JSON array with one element per line: still valid JSON, easier for a reader (and a model) to scan."""
    if not items:
        return "[]"
    return "[\n" + ",\n".join(safe_json(item) for item in items) + "\n]"


def block(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def _tool_payload(tool: ToolSchema, rendering: ToolRendering = "full") -> dict[str, Any]:
    """A tool schema for the judge. ``compact`` drops the ``returns`` block and the per-parameter
    descriptions (the metric definitions in the rubric say what is judged; names, types, required
    lists and enums stay), keeping the tool's own one-line description."""
    if rendering == "compact":
        return {"name": tool.name, "description": tool.description, "parameters": _compact(tool.parameters)}
    payload: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.returns:
        payload["returns"] = tool.returns
    return payload


_SCHEMA_PROSE = ("description", "title", "examples")


def _compact(schema: Any) -> Any:
    """A JSON schema without its prose keys (``description``, ``title``, ``examples``) at every depth.

    Keys under ``properties`` are parameter names, never prose: a parameter called ``description`` stays.
    Values of ``enum``/``const``/``default``/``required`` are data and are kept as they are."""
    if isinstance(schema, list):
        return [_compact(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_PROSE and isinstance(value, str | list):
            continue
        if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _compact(sub) for name, sub in value.items()}
        elif key in ("enum", "const", "default", "required"):
            out[key] = value
        else:
            out[key] = _compact(value)
    return out


# Rendered blocks of lists every judge call on a record or prediction shares (a record's GT steps, a
# prediction's calls, a record's tools for the paper family), keyed by the identity of the list's items: a
# request copies its lists but keeps their items (and a worker process receives them once,
# ``runner.workers``). An entry keeps its items, so no other object can take one of their identities while
# the entry exists, and a hit must hold those very items: equal copies are rendered again. Bounded like the
# other memos: emptied when full.
_RENDERED: dict[tuple[Any, ...], tuple[tuple[Any, ...], str]] = {}
_RENDERED_MAX = 4096


def _rendered(kind: str, items: list[Any], render: Any) -> str:
    """``render(items)``, remembered for these very items (see ``_RENDERED``)."""
    key = (kind, *map(id, items))
    hit = _RENDERED.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], items, strict=True)):
        return hit[1]
    text: str = render(items)
    if len(_RENDERED) >= _RENDERED_MAX:
        _RENDERED.clear()
    _RENDERED[key] = (tuple(items), text)
    return text


def _calls_payload(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [{"step": i + 1, "name": c.name, "arguments": c.arguments} for i, c in enumerate(calls)]


def _gt_payload(gt: list[GTStep]) -> list[dict[str, Any]]:
    """The reference trace as calls plus 1-based dependencies; outputs are left out (structural rubric)."""
    return [
        {
            "step": i + 1,
            "name": s.call.name,
            "arguments": s.call.arguments,
            "depends_on": [d + 1 for d in s.depends_on],
        }
        for i, s in enumerate(gt)
    ]


def system_prompt(variant: PromptVariant, condition: str | None = None) -> str:
    """The system message: the role and metric definitions, then the rubric (three-level variants).

    It is the same for every record, condition and chain-of-thought setting, so a provider's prefix cache
    reuses it across the whole run (``condition`` is accepted for callers of the older signature and
    does not change the text). Assembled once per prompts folder and verdict scale in a process.
    """
    key = (prompts_dir(), verdict_scale(variant))
    text = _SYSTEM.get(key)
    if text is None:
        parts = [load_template("system.md")]
        if key[1] == "three_level":
            parts.append(load_template("rubric_three_level.md"))
        text = _SYSTEM[key] = "\n\n".join(parts)
    share_prefix(text)  # the whole system message of every call: its cache-key escaping is done once
    return text


# assembled texts by prompts folder and what selects their files (a handful per run; reload_templates)
_SYSTEM: dict[tuple[Path, str], str] = {}
_INSTRUCTIONS: dict[tuple[Path, str, str, str, bool], str] = {}


def review_instructions(variant: PromptVariant, condition: str) -> str:
    """The per-call instructions (condition, default, format, CoT), placed after the record's data.
    Assembled once per prompts folder, condition and variant in a process (a template that breaks a rule
    raises every time: nothing is remembered for it)."""
    key = (prompts_dir(), condition, variant.default_mode, variant.prompt_format, variant.cot)
    text = _INSTRUCTIONS.get(key)
    if text is None:
        text = _INSTRUCTIONS[key] = _review_instructions(variant, condition)
    return text


def _review_instructions(variant: PromptVariant, condition: str) -> str:
    condition_text = load_template(f"condition_{condition}.md")
    if condition == "swapped_gt" and condition_text != load_template("condition_with_gt.md"):
        # the C3 anchoring control is only valid if the judge cannot tell it from with_gt
        raise ValueError(
            f"{prompts_dir()}: condition_swapped_gt.md must read exactly like condition_with_gt.md "
            "(comments aside); the swapped GT has to be presented as the reference"
        )
    parts = [
        condition_text,
        load_template(f"default_{variant.default_mode}.md"),
        load_template(f"format_{variant.prompt_format}.md"),
        load_template("cot_on.md" if variant.cot else "cot_off.md"),
    ]
    return "\n\n".join(parts)


def user_parts(request: JudgeRequest, tool_rendering: ToolRendering = "full") -> tuple[str, str]:
    """The user message in two parts: (the record's tools and query, shared by every judge call on the
    record; the per-call rest: instructions, reference block iff a GT is shown, the calls).

    The first part is byte-identical across generators, conditions and variants of one record: it is the
    part a ``cache_control`` breakpoint marks (``cache_blocks``)."""
    if request.condition == "without_gt":
        if request.gt is not None:
            raise ValueError(
                f"{request.task.record_id}: a without_gt judge request must not carry a GT trace"
            )
        reference = ""
    else:
        if request.gt is None:
            raise ValueError(
                f"{request.task.record_id}: a {request.condition} judge request needs a GT trace"
            )
        reference = fill(
            "reference_block.md",
            {
                "gt": _rendered(
                    "gt", request.gt, lambda gt: block(TAG_REFERENCE, _json_lines(_gt_payload(gt)))
                )
            },
        )
        reference += "\n\n"
    shared = _record_part(request, tool_rendering)
    rest = fill(
        "user.md",
        {
            "instructions": review_instructions(request.variant, request.condition),
            "reference": reference,
            "calls": _rendered(
                "calls", request.calls, lambda calls: block(TAG_CALLS, _json_lines(_calls_payload(calls)))
            ),
        },
    )
    return shared, rest


# (record id, query, rendering, prompts folder) -> (the tool list, the record part). Serialising the tools
# was the largest share of building a judge prompt, and every judge call on a record shows the same tools:
# a hit is the same list object, or (a request unpickled in a worker process) an equal one.
_RECORD_PARTS: dict[tuple[str, str, str, Path], tuple[Any, str]] = {}
_RECORD_PARTS_MAX = 4096


def _record_part(request: JudgeRequest, tool_rendering: ToolRendering) -> str:
    """The record's tools and query block (``user_record.md``), rendered once per record in a process."""
    tools = request.task.tools
    key = (request.task.record_id, request.task.query, tool_rendering, prompts_dir())
    hit = _RECORD_PARTS.get(key)
    if hit is not None and (hit[0] is tools or hit[0] == tools):
        share_prefix(hit[1])  # every user message on the record begins with it (``cache_key``)
        return hit[1]
    text = fill(
        "user_record.md",
        {
            "tools": _tools_block(request.task.base_id, tools, tool_rendering),
            "query": block(TAG_QUERY, safe_json(request.task.query)),
        },
    )
    if len(_RECORD_PARTS) >= _RECORD_PARTS_MAX:
        _RECORD_PARTS.clear()
    _RECORD_PARTS[key] = (tools, text)
    share_prefix(text)
    return text


# (base record id, rendering) -> (the tool list, its block). The tools block is the same for every task of a
# record (its difficulties differ in the query): rendered once per record, also in a worker process, which
# receives each task's tools as objects of their own (a hit is the same list or an equal one).
_TOOL_BLOCKS: dict[tuple[str, str], tuple[Any, str]] = {}


def _tools_block(base_id: str, tools: list[ToolSchema], tool_rendering: ToolRendering) -> str:
    key = (base_id, tool_rendering)
    hit = _TOOL_BLOCKS.get(key)
    if hit is not None and (hit[0] is tools or hit[0] == tools):
        return hit[1]
    text = block(TAG_TOOLS, _json_lines([_tool_payload(t, tool_rendering) for t in tools]))
    if len(_TOOL_BLOCKS) >= _RECORD_PARTS_MAX:
        _TOOL_BLOCKS.clear()
    _TOOL_BLOCKS[key] = (tools, text)
    return text


def user_prompt(request: JudgeRequest, tool_rendering: ToolRendering = "full") -> str:
    """The record's tools and query first, then the per-call instructions, reference and calls."""
    shared, rest = user_parts(request, tool_rendering)
    return shared + "\n\n" + rest


def _check_gt(request: JudgeRequest) -> None:
    if request.condition == "without_gt":
        if request.gt is not None or request.gt_responses is not None:
            raise ValueError(
                f"{request.task.record_id}: a without_gt judge request must not carry a GT trace"
            )
    elif request.gt is None:
        raise ValueError(f"{request.task.record_id}: a {request.condition} judge request needs a GT trace")


# ---------------------------------------------------------------- the paper family


def _published_tool(tool: ToolSchema) -> dict[str, Any]:
    """A tool as the published records list it (``available_tools``: OpenAI function style)."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _expected_slot(request: JudgeRequest) -> str:
    """The shown record's whole ``expected_responses`` list (assistant turns with their calls, tool turns,
    any assistant text), as published; built from the GT steps when the request does not carry it."""
    from agentjudge.rundir.records import gt_turns

    assert request.gt is not None
    responses = request.gt_responses if request.gt_responses is not None else gt_turns(request.gt)
    return block(TAG_REFERENCE, _json_lines(responses))


def paper_prompt(request: JudgeRequest) -> str:
    """The one user message of the paper family for a request (any condition, any variant)."""
    _check_gt(request)
    variant = request.variant
    slots = {
        "query": block(TAG_QUERY, safe_json(request.task.query)),
        "tools": _rendered(
            "paper_tools",
            request.task.tools,
            lambda tools: block(TAG_TOOLS, _json_lines([_published_tool(t) for t in tools])),
        ),
        "calls": _rendered(
            "paper_calls",
            request.calls,
            lambda calls: block(
                TAG_CALLS, _json_lines([{"name": c.name, "arguments": c.arguments} for c in calls])
            ),
        ),
        "cot": "\n" + load_template("paper/cot_on.md") + "\n" if variant.cot else "",
    }
    shows_gt = request.condition != "without_gt"
    if variant.prompt_format == "freeform":  # A5: short, no rubric, no default rule
        section = ""
        if shows_gt:
            section = "\n" + fill("paper/expected_section.md", {"expected": _expected_slot(request)})
        return fill("paper/freeform.md", {**slots, "expected_section": section})
    slots["default_rule"] = load_template(f"paper/default_{variant.default_mode}.md")
    if shows_gt:  # swapped_gt reads exactly like with_gt: only the expected slot's content differs
        return fill("paper/with_gt.md", {**slots, "expected": _expected_slot(request)})
    return fill("paper/without_gt.md", slots)


# ---------------------------------------------------------------- entry points


def build_messages(
    request: JudgeRequest,
    family: PromptFamily = DEFAULT_PROMPT_FAMILY,
    tool_rendering: ToolRendering = "full",
) -> list[dict[str, str]]:
    """The chat messages for one judge request (deterministic: same request, same messages).

    ``agentjudge``: system (role, rubric) + user (the record's tools and query, then the per-call
    instructions, reference and calls); ``paper``: one user message, no system message, the published
    order. ``tool_rendering`` (pipeline key ``judge_tool_rendering``) applies to ``agentjudge`` only: the
    ``paper`` family shows the tools as the published records list them."""
    if family == "paper":
        return [{"role": "user", "content": paper_prompt(request)}]
    if family != "agentjudge":
        raise ValueError(f"unknown prompt family {family!r} (expected 'paper' or 'agentjudge')")
    return [
        {"role": "system", "content": system_prompt(request.variant)},
        {"role": "user", "content": user_prompt(request, tool_rendering)},
    ]


def needs_cache_breakpoint(model: str) -> bool:
    """Providers whose prefix cache works only at explicit ``cache_control`` breakpoints (Anthropic's
    models, also through Bedrock and Vertex); OpenAI, DeepSeek and vLLM cache prefixes automatically."""
    provider, _, rest = model.partition("/")
    return provider == "anthropic" or (provider in ("bedrock", "vertex_ai") and "claude" in rest)


def with_cache_breakpoint(
    messages: list[dict[str, Any]], request: JudgeRequest, tool_rendering: ToolRendering = "full"
) -> list[dict[str, Any]]:
    """``agentjudge`` messages with the user message split into two text blocks, the first (the record's
    tools and query, the last byte-stable block) carrying ``cache_control: ephemeral``.

    The text the model reads is unchanged: the two blocks are the two halves of the same user message."""
    shared, rest = user_parts(request, tool_rendering)
    user = messages[1]
    if user.get("content") != shared + "\n\n" + rest:
        raise ValueError(
            "with_cache_breakpoint expects the messages build_messages made for the same request"
        )
    blocks = [
        {"type": "text", "text": shared, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\n\n" + rest},
    ]
    return [messages[0], {"role": "user", "content": blocks}, *messages[2:]]


def reask_message(problems: list[str], family: PromptFamily = DEFAULT_PROMPT_FAMILY) -> dict[str, str]:
    """The follow-up user message after an unparseable answer, quoting what was wrong."""
    text = "; ".join(problems) if problems else "no verdicts found"
    name = "paper/reask.md" if family == "paper" else "reask.md"
    return {"role": "user", "content": fill(name, {"problems": text})}
