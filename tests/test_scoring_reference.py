"""The strict scorer, p_value and p_seq_dag against the naive reading of SPEC §6 in reference_scorer.py.

Why: comparing ``score_many`` with ``score_calls`` (or a stage's output with ``score_calls``) runs the same
function twice and cannot catch a formula bug. The reference is written separately, checked on hand-computed
cases first, then compared with the scorer on thousands of random cases that exercise repeated tools,
known and unknown schemas, the lenient switch, arbitrary dependency edges and every kind of value.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from reference_scorer import same_value, strict_scores

from agentjudge.scoring.scorer import METRIC_FIELDS, PreparedRecord, score_calls, score_many, score_prediction
from agentjudge.types import GTStep, Prediction, Record, ToolCall, ToolSchema

# ------------------------------------------------------------- the reference itself, by hand


def test_reference_on_hand_computed_cases() -> None:
    a1, a2, b = ("a", {"id": "1"}), ("a", {"id": "2"}), ("b", {"id": "1", "n": 3})
    # loop_like: E = a a b, G = a b (one repeat missing). Multisets: |G−E| = 0, |E−G| = 1 -> p_tool 2/3,
    # p_cov 2/3; positions: a=a, b≠a -> 1/3; pairs (0,0) (2,1): keys exact -> 1; values 1/1 and 2/2 -> 1;
    # chain edges 0->1 (E[1] unmatched: fails), 1->2 (fails) -> p_seq_dag 0
    s = strict_scores([a1, a2, b], [a1, b])
    assert s == pytest.approx(
        {"p_tool": 2 / 3, "p_param": 1.0, "p_seq": 1 / 3, "p_cov": 2 / 3, "p_value": 1.0, "p_seq_dag": 0.0}
    )
    # trailing extra call: E = a b, G = a b b -> p_tool 1 − 1/2, p_seq 2/3 (divided by |G|), p_cov 1
    s = strict_scores([a1, b], [a1, b, b])
    assert (s["p_tool"], s["p_seq"], s["p_cov"], s["p_seq_dag"]) == pytest.approx((0.5, 2 / 3, 1.0, 1.0))
    # wrong value, extra key, missing required key (schema known: only "id" required)
    schemas = {"b": {"properties": {"id": {}, "n": {}, "note": {}}, "required": ["id"]}}
    s = strict_scores([b], [("b", {"id": " 1 ", "n": "3.0000001", "note": "x"})], schemas=schemas)
    assert (s["p_param"], s["p_value"]) == pytest.approx(
        (0.5, 1.0)
    )  # extra key; " 1 " folds, "3.0000001" ≈ 3
    lenient = strict_scores([b], [("b", {"id": "1", "n": 3, "note": "x"})], schemas=schemas, lenient=True)
    assert lenient["p_param"] == 1.0
    s = strict_scores([b], [("b", {"n": 3})], schemas=schemas)
    assert (s["p_param"], s["p_value"]) == pytest.approx((0.0, 0.5))
    # unknown schema: every expected key is required
    assert strict_scores([b], [("b", {"id": "1"})])["p_param"] == 0.0
    # diamond 0->1, 0->2, 1->3, 2->3: any order of the two branches scores 1
    e = [("s", {}), ("l", {}), ("r", {}), ("j", {})]
    edges = [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert strict_scores(e, [e[0], e[2], e[1], e[3]], edges)["p_seq_dag"] == 1.0
    assert strict_scores(e, [e[3], e[0], e[1], e[2]], edges)["p_seq_dag"] == 0.5
    # empty cases
    assert strict_scores([], []) == dict.fromkeys(METRIC_FIELDS, 1.0)
    assert strict_scores([], [a1]) == pytest.approx(
        {"p_tool": 0.0, "p_param": 0.0, "p_seq": 0.0, "p_cov": 1.0, "p_value": 0.0, "p_seq_dag": 1.0}
    )
    assert strict_scores([a1], [])["p_param"] == 0.0


def test_reference_value_rules() -> None:
    assert same_value("New  York", "new york") and not same_value("NY", "New York")
    assert same_value(42, "42") and same_value(0.1 + 0.2, 0.3) and not same_value(42, 42.01)
    assert not same_value(True, 1) and not same_value(1, True) and same_value(False, False)
    assert same_value([1, "A"], [1.0, "a"]) and not same_value([1], [1, 1])
    assert same_value({"x": [" b "]}, {"x": ["B"]}) and not same_value({"x": 1}, {"y": 1})
    assert same_value(None, None) and not same_value(None, "") and not same_value(float("nan"), float("nan"))


# ------------------------------------------------------------- scorer vs reference, random cases

TOOLS = ["a", "b", "c", "d"]
VALUES: list[Any] = [
    "x",
    "X ",
    "a  b",
    "A b",
    "  x",
    "y",
    "",
    0,
    1,
    1.0,
    "1",
    2.5,
    2.5000001,
    True,
    False,
    None,
    [1, "x"],
    [1.0, "X"],
    {"k": "v"},
    {"k": "V "},
    float("nan"),
]


def _random_call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    keys = rng.sample(["id", "v", "w", "z"], rng.randint(0, 3))
    return rng.choice(TOOLS), {k: rng.choice(VALUES) for k in keys}


def _schemas() -> list[ToolSchema]:
    # "a" and "b" have schemas ("z" is not a property: an extra "z" is never allowed); "c", "d" have none
    return [
        ToolSchema(
            name=n,
            description=f"tool {n}",
            parameters={"type": "object", "properties": {"id": {}, "v": {}, "w": {}}, "required": req},
        )
        for n, req in (("a", ["id"]), ("b", ["id", "v"]))
    ]


def _case(rng: random.Random) -> tuple[list[Any], list[Any], list[tuple[int, int]] | None]:
    e = [_random_call(rng) for _ in range(rng.randint(0, 6))]
    if rng.random() < 0.5:
        g = [_random_call(rng) for _ in range(rng.randint(0, 7))]
    else:  # a perturbed copy of E: the realistic case (dropped, duplicated, swapped, edited calls)
        g = [(n, dict(a)) for n, a in e]
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            if g and op < 0.25:
                g.pop(rng.randrange(len(g)))
            elif g and op < 0.5:
                g.insert(rng.randrange(len(g) + 1), g[rng.randrange(len(g))])
            elif len(g) > 1 and op < 0.75:
                i, j = rng.sample(range(len(g)), 2)
                g[i], g[j] = g[j], g[i]
            elif g:
                name, args = g[rng.randrange(len(g))]
                args[rng.choice(["id", "v", "w", "z"])] = rng.choice(VALUES)
    edges = (
        None
        if rng.random() < 0.3
        else sorted({(u, v) for v in range(len(e)) for u in range(v) if rng.random() < 0.4})
    )
    return e, g, edges


def _calls(plain: list[tuple[str, dict[str, Any]]]) -> list[ToolCall]:
    return [ToolCall(name=n, arguments=a) for n, a in plain]


def test_strict_scorer_equals_reference_on_random_cases() -> None:
    rng = random.Random(17)
    tools = _schemas()
    schema_dict = {t.name: t.parameters for t in tools}
    checked = 0
    for _ in range(2500):
        e, g, edges = _case(rng)
        for known in (False, True):
            for lenient in (False, True):
                got = score_calls(
                    _calls(e),
                    _calls(g),
                    "strict",
                    edges=edges,
                    tools=tools if known else None,
                    lenient=lenient,
                )
                want = strict_scores(e, g, edges, schema_dict if known else None, lenient)
                assert got == pytest.approx(want), (e, g, edges, known, lenient)
                checked += 1
    assert checked == 10000


def test_p_value_and_p_seq_dag_are_mode_independent() -> None:
    """§6: p_value and p_seq_dag are reported beside the four in both modes, with the same meaning."""
    rng = random.Random(5)
    for _ in range(1000):
        e, g, edges = _case(rng)
        got = score_calls(_calls(e), _calls(g), "paper", edges=edges)
        want = strict_scores(e, g, edges)
        assert (got["p_value"], got["p_seq_dag"]) == pytest.approx((want["p_value"], want["p_seq_dag"])), (
            e,
            g,
        )


def test_score_many_equals_reference() -> None:
    """Bulk scoring (the path the runner uses) against the reference, with shared prepared records."""
    rng = random.Random(7)
    tools = _schemas()
    schema_dict = {t.name: t.parameters for t in tools}
    items, expected = [], []
    for _ in range(300):
        e, _, edges = _case(rng)
        prep = PreparedRecord(e, edges, tools)
        for _ in range(3):  # the same prepared record scored against several outputs, as in a run
            _, g, _ = _case(rng)
            items.append((prep, g))
            expected.append(strict_scores(e, g, edges, schema_dict))
    got = score_many(items, "strict")
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert dict(zip(METRIC_FIELDS, row, strict=True)) == pytest.approx(want)


def test_score_prediction_reads_record_edges_and_schemas() -> None:
    """A record's declared edges and tool schemas reach the scorer: fan_out branches in either order score
    p_seq_dag 1, and a schema-optional extra key is 0.5 (1 when lenient) exactly as the reference says."""
    tools = _schemas()
    gt = [
        GTStep(call=ToolCall(name="a", arguments={"id": "1"}), output={}),
        GTStep(call=ToolCall(name="b", arguments={"id": "2", "v": 3}), output={}, depends_on=[0]),
        GTStep(call=ToolCall(name="c", arguments={"id": "3"}), output={}, depends_on=[0]),
    ]
    rec = Record(
        id="ref-0001",
        domain="fixture",
        scenario="s",
        topology="fan_out",
        queries={"easy": "q", "medium": "q", "hard": "q"},
        system_prompt="",
        tools=tools,
        gt=gt,
        seed=0,
        version="test",
    )
    assert rec.edges == [(0, 1), (0, 2)]
    gen = [("a", {"id": "1", "w": "extra"}), ("c", {"id": "3"}), ("b", {"id": "2", "v": "3"})]
    pred = Prediction(
        record_id="ref-0001:easy", base_id="ref-0001", difficulty="easy", generator="g", calls=_calls(gen)
    )
    schema_dict = {t.name: t.parameters for t in tools}
    for lenient in (False, True):
        s = score_prediction(rec, pred, "strict", lenient=lenient, with_state=False)
        want = strict_scores(
            [(x.call.name, x.call.arguments) for x in gt], gen, rec.edges, schema_dict, lenient
        )
        assert {k: getattr(s, k) for k in METRIC_FIELDS} == pytest.approx(want)
    assert want["p_seq_dag"] == 1.0 and want["p_seq"] == pytest.approx(1 / 3)
