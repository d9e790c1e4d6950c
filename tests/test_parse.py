"""Verdict parsing on a table of realistic well-formed and malformed judge outputs."""

from __future__ import annotations

import pytest

from agentjudge.judges.parse import parse_verdicts, snap_three_level
from agentjudge.types import PromptVariant

JSON = PromptVariant()
FREE = PromptVariant(prompt_format="freeform")
N = None

FULL = (
    '{"tool": {"verdict": 1.0, "justification": "All needed tools."}, '
    '"param": {"verdict": 0.5, "justification": "Extra key on call 2."}, '
    '"seq": {"verdict": 1.0, "justification": "Lookup first."}, '
    '"cov": {"verdict": 0.0, "justification": "Notification missing."}, "overall": "Partly right."}'
)

# (id, text, variant, expected verdicts tool/param/seq/cov, parse_ok, method)
CASES: list[tuple[str, str, PromptVariant, tuple[float | None, ...], bool, str]] = [
    ("strict json", FULL, JSON, (1, 0.5, 1, 0), True, "json"),
    ("flat json", '{"tool": 1, "param": 1, "seq": 0.5, "cov": 1}', JSON, (1, 1, 0.5, 1), True, "json"),
    ("fenced json", f"```json\n{FULL}\n```", JSON, (1, 0.5, 1, 0), True, "fenced_json"),
    ("fence no lang", f"```\n{FULL}\n```", JSON, (1, 0.5, 1, 0), True, "fenced_json"),
    (
        "prose around fence",
        f"Here is my review.\n```json\n{FULL}\n```\nHope this helps!",
        JSON,
        (1, 0.5, 1, 0),
        True,
        "fenced_json",
    ),
    ("json in prose, no fence", f"My verdicts: {FULL} -- done", JSON, (1, 0.5, 1, 0), True, "fenced_json"),
    (
        "trailing commas",
        '```json\n{"tool": {"verdict": 1.0,}, "param": 1.0, "seq": 0.5, "cov": 1.0,}\n```',
        JSON,
        (1, 1, 0.5, 1),
        True,
        "fenced_json",
    ),
    (
        "single quotes",
        "{'tool': {'verdict': 0.5, 'justification': \"agent's choice\"}, 'param': 1, 'seq': 1, 'cov': 0.5}",
        JSON,
        (0.5, 1, 1, 0.5),
        True,
        "fenced_json",
    ),
    (
        "python literals + bare keys",
        "{tool: 1.0, param: 0.0, seq: 1.0, cov: 1.0, passed: True, note: None}",
        JSON,
        (1, 0, 1, 1),
        True,
        "fenced_json",
    ),
    (
        "long key names",
        '{"tool_selection": 1, "parameter_structure": 0.5, "sequence_accuracy": 0, "query_coverage": 1}',
        JSON,
        (1, 0.5, 0, 1),
        True,
        "json",
    ),
    (
        "Title Case keys",
        '{"Tool Selection": {"score": 1}, "Parameter Structure": {"score": 1}, '
        '"Sequence Accuracy": {"score": 1}, "Query Coverage": {"score": 0.5}}',
        JSON,
        (1, 1, 1, 0.5),
        True,
        "json",
    ),
    (
        "nested under verdicts",
        '{"verdicts": {"tool": 1, "param": 1, "seq": 1, "cov": 1}, "overall": "ok"}',
        JSON,
        (1, 1, 1, 1),
        True,
        "json",
    ),
    (
        "list of metric entries",
        '{"metrics": [{"metric": "tool", "verdict": 1}, {"metric": "param", "verdict": 0.5},'
        ' {"metric": "seq", "verdict": 1}, {"metric": "cov", "verdict": 1}]}',
        JSON,
        (1, 0.5, 1, 1),
        True,
        "json",
    ),
    (
        "string numbers",
        '{"tool": "1.0", "param": "0.5", "seq": "1/2", "cov": "100%"}',
        JSON,
        (1, 0.5, 0.5, 1),
        True,
        "json",
    ),
    (
        "number with a comment",
        '{"tool": "1.0 - all present", "param": "0.5 (extra key)", "seq": "1 in order", '
        '"cov": "0.0: refund missing"}',
        JSON,
        (1, 0.5, 1, 0),
        True,
        "json",
    ),
    (
        "affixed keys",
        '{"tool_selection_verdict": 1, "param_score": 0.5, "score_sequence": 1, "query_coverage_rating": 1}',
        JSON,
        (1, 0.5, 1, 1),
        True,
        "json",
    ),
    (
        "version-like string is not a verdict",
        '{"tool": "1.0.2", "param": 1, "seq": 1, "cov": 1}',
        JSON,
        (N, 1, 1, 1),
        False,
        "json",
    ),
    (
        "snap 0.8 and 0.2",
        '{"tool": 0.8, "param": 0.2, "seq": 0.6, "cov": 0.75}',
        JSON,
        (1, 0, 0.5, 1),
        True,
        "json",
    ),
    (
        "continuous keeps 0.8",
        '{"tool": 0.8, "param": 0.2, "seq": 0.6, "cov": 0.75}',
        FREE,
        (0.8, 0.2, 0.6, 0.75),
        True,
        "json",
    ),
    ("missing metric", '{"tool": 1, "param": 1, "seq": 1}', JSON, (1, 1, 1, N), False, "json"),
    (
        "word verdict is not a number",
        '{"tool": "good", "param": 1, "seq": 1, "cov": 1}',
        JSON,
        (N, 1, 1, 1),
        False,
        "json",
    ),
    (
        "boolean is not a verdict",
        '{"tool": true, "param": 1, "seq": 1, "cov": 1}',
        JSON,
        (N, 1, 1, 1),
        False,
        "json",
    ),
    (
        "another scale rejected",
        '{"tool": 8, "param": 10, "seq": 7, "cov": 9}',
        JSON,
        (N, N, N, N),
        False,
        "failed",
    ),
    (
        "tiny overshoot clamped",
        '{"tool": 1.02, "param": -0.01, "seq": 1, "cov": 1}',
        FREE,
        (1, 0, 1, 1),
        True,
        "json",
    ),
    (
        "think block stripped",
        '<think>tool: 0.0? "tool": 0</think>\n' + FULL,
        JSON,
        (1, 0.5, 1, 0),
        True,
        "json",
    ),
    (
        "unopened think close",
        "the user wants... hmm tool: 0.0\n</think>\n" + FULL,
        JSON,
        (1, 0.5, 1, 0),
        True,
        "json",
    ),
    ("unterminated think", "<think>I think tool is 1.0 and param", JSON, (N, N, N, N), False, "failed"),
    (
        "cot prose then json",
        "Call 1 fetches the ticket; tool: fine. The order: 1 then 2.\n\n```json\n" + FULL + "\n```",
        JSON,
        (1, 0.5, 1, 0),
        True,
        "fenced_json",
    ),
    (
        "example then answer",
        'Format: {"tool": 0, "param": 0}\nAnswer: {"tool": 1, "param": 1, "seq": 1, "cov": 1}',
        JSON,
        (1, 1, 1, 1),
        True,
        "fenced_json",
    ),
    (
        "freeform lines",
        "Tool selection: 0.5\nParameter structure: 1\nSequence accuracy: 0.9\nQuery coverage: 0.25\n"
        "Overall: decent",
        FREE,
        (0.5, 1, 0.9, 0.25),
        True,
        "freeform",
    ),
    (
        "freeform markdown bold",
        "**Tool Selection:** 1.0\n**Parameter Structure**: 0.5\n- **Sequence Accuracy** - 1\n"
        "- *Query coverage* = 0",
        JSON,
        (1, 0.5, 1, 0),
        True,
        "freeform",
    ),
    (
        "freeform variants",
        "tool selection score: 1/1\nparam structure - 1\nsequence accuracy = 1.0/1\ncoverage is 50%",
        JSON,
        (1, 1, 1, 0.5),
        True,
        "freeform",
    ),
    (
        "freeform out of",
        "Tool choice: 3 out of 4\nParameters: 2/4\nOrdering: 4/4\nIntent coverage: 0 out of 4",
        FREE,
        (0.75, 0.5, 1, 0),
        True,
        "freeform",
    ),
    (
        "markdown table",
        "| Metric | Score |\n|---|---|\n| Tool selection | 1.0 |\n| Parameter structure | 0.5 |\n"
        "| Sequence accuracy | 1 |\n| Query coverage | 0 |",
        JSON,
        (1, 0.5, 1, 0),
        True,
        "freeform",
    ),
    (
        "parenthesised",
        "1. Tool selection (1.0): right tools\n2. Parameter structure (0.5): one missing\n"
        "3. Sequence accuracy (1.0)\n4. Query coverage (1.0)",
        JSON,
        (1, 0.5, 1, 1),
        True,
        "freeform",
    ),
    (
        "reasoning numbers then verdicts",
        "The agent made 3 calls; tools: 3 were used. Step 2 of 5.\n\n"
        "Tool selection: 1\nParameter structure: 1\nSequence accuracy: 0\nQuery coverage: 1",
        FREE,
        (1, 1, 0, 1),
        True,
        "freeform",
    ),
    (
        "truncated json",
        '{"tool": {"verdict": 1.0, "justification": "ok"}, "param": {"verdict": 0.5, "justif',
        JSON,
        (1, 0.5, N, N),
        False,
        "freeform",
    ),
    (
        "freeform partial",
        "Tool selection: 1.0\nSequence accuracy: 0.5\nI could not assess the rest.",
        FREE,
        (1, N, 0.5, N),
        False,
        "freeform",
    ),
    ("refusal", "I'm sorry, I can't help with grading this.", JSON, (N, N, N, N), False, "failed"),
    ("empty", "", JSON, (N, N, N, N), False, "failed"),
    ("whitespace only", "  \n\t ", JSON, (N, N, N, N), False, "failed"),
    ("json array", "[1, 0.5, 1, 1]", JSON, (N, N, N, N), False, "failed"),
    (
        "injection echo ignored",
        'The query said {"tool": 1.0} but actually:\n{"tool": 0, "param": 0.5, "seq": 1, "cov": 0.5}',
        JSON,
        (0, 0.5, 1, 0.5),
        True,
        "fenced_json",
    ),
]


@pytest.mark.parametrize(
    ("text", "variant", "expected", "ok", "method"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_parse_table(
    text: str, variant: PromptVariant, expected: tuple[float | None, ...], ok: bool, method: str
) -> None:
    parsed = parse_verdicts(text, variant)
    got = tuple(parsed.verdicts[m] for m in ("tool", "param", "seq", "cov"))
    assert got == pytest.approx(expected) if None not in expected else got == expected
    assert parsed.parse_ok is ok
    assert parsed.method == method
    if not ok:
        assert parsed.problems  # a failure always says why


def test_rationales_and_overall_from_json() -> None:
    parsed = parse_verdicts(FULL, JSON)
    assert parsed.rationales == {
        "tool": "All needed tools.",
        "param": "Extra key on call 2.",
        "seq": "Lookup first.",
        "cov": "Notification missing.",
        "overall": "Partly right.",
    }
    assert parsed.problems == []


def test_rationales_from_freeform() -> None:
    text = "Tool selection: 1.0 — all tools present\nParameter structure: 1\nSequence accuracy: 1\n" + (
        "Query coverage: 0.5 (misses the refund)\nOverall: mostly fine"
    )
    parsed = parse_verdicts(text, JSON)
    assert parsed.rationales["tool"] == "all tools present"
    assert parsed.rationales["cov"] == "misses the refund"
    assert parsed.rationales["overall"] == "mostly fine"


def test_out_of_scale_values_are_explained() -> None:
    parsed = parse_verdicts('{"tool": 8, "param": 1, "seq": 1, "cov": 1}', JSON)
    assert parsed.verdicts["tool"] is None and not parsed.parse_ok
    assert any("tool: value 8 is outside [0, 1]" in p for p in parsed.problems)
    failed = parse_verdicts('{"tool": 8, "param": 10, "seq": 7, "cov": 9}', JSON)
    assert failed.method == "failed" and any("param: value 10" in p for p in failed.problems)


def test_repairs_and_snaps_are_reported() -> None:
    parsed = parse_verdicts("```json\n{'tool': 0.8, 'param': 1, 'seq': 1, 'cov': 1,}\n```", JSON)
    assert parsed.parse_ok
    assert any("single quotes" in p and "trailing comma" in p for p in parsed.problems)
    assert any("snapped" in p for p in parsed.problems)


def test_repair_never_changes_string_content() -> None:
    text = "{'tool': 1, 'param': 1, 'seq': 1, 'cov': 1, 'overall': \"it's fine, }really{ True,]\"}"
    parsed = parse_verdicts(text, JSON)
    assert parsed.parse_ok and parsed.rationales["overall"] == "it's fine, }really{ True,]"


@pytest.mark.parametrize(
    ("value", "snapped"),
    [(0.0, 0.0), (0.24, 0.0), (0.25, 0.5), (0.5, 0.5), (0.74, 0.5), (0.75, 1.0), (1.0, 1.0)],
)
def test_snap_three_level(value: float, snapped: float) -> None:
    assert snap_three_level(value) == snapped


# ---------------------------------------------------------------- the published output format (SPEC §7a)

PUBLISHED = """{
  "tool_selection_accuracy": {"accuracy": 1.0, "justification": "Every needed tool is called."},
  "parameter_structure_accuracy": {"accuracy": 0.5, "justification": "Call 2 lacks order_id."},
  "sequence_accuracy": {"accuracy": 0.0, "justification": "The refund precedes the lookup."},
  "query_coverage_accuracy": {"accuracy": 0.5, "justification": "The email is never sent."},
  "overall_assessment": "Right tools, wrong order."
}"""


def test_published_output_format_is_read() -> None:
    parsed = parse_verdicts(PUBLISHED, JSON)
    assert parsed.parse_ok and parsed.method == "json" and parsed.problems == []
    assert parsed.verdicts == {"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": 0.5}
    assert parsed.rationales == {
        "tool": "Every needed tool is called.",
        "param": "Call 2 lacks order_id.",
        "seq": "The refund precedes the lookup.",
        "cov": "The email is never sent.",
        "overall": "Right tools, wrong order.",
    }


def test_published_format_continuous_a5_keeps_floats() -> None:
    text = (
        "```json\n" + PUBLISHED.replace("1.0", "0.9").replace('"accuracy": 0.5', '"accuracy": 0.65') + "\n```"
    )
    parsed = parse_verdicts(text, FREE)
    assert parsed.parse_ok and parsed.method == "fenced_json"
    assert parsed.verdicts == {"tool": 0.9, "param": 0.65, "seq": 0.0, "cov": 0.65}
    # the same answer under a three-level variant is snapped, and the snap is reported
    snapped = parse_verdicts(text, JSON)
    assert snapped.verdicts == {"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": 0.5}
    assert any("param: value 0.65 snapped to 0.5" in p for p in snapped.problems)


def test_published_format_missing_metric_is_a_failure_not_a_zero() -> None:
    text = PUBLISHED.replace('"sequence_accuracy"', '"sequence_note"')
    parsed = parse_verdicts(text, JSON)
    assert not parsed.parse_ok and parsed.verdicts["seq"] is None
    assert "missing verdict(s) for seq" in parsed.problems


def test_published_metric_names_in_free_text() -> None:
    text = (
        "Tool selection accuracy: 1.0\nParameter structure accuracy: 0.5\n"
        "Sequence accuracy: 1\nQuery coverage accuracy: 0.0\nOverall assessment: fine"
    )
    parsed = parse_verdicts(text, JSON)
    assert parsed.parse_ok and parsed.method == "freeform"
    assert parsed.verdicts == {"tool": 1.0, "param": 0.5, "seq": 1.0, "cov": 0.0}
    assert parsed.rationales["overall"] == "fine"
