"""`paper` scoring mode against a plain transcription of the published scoring logic (SPEC §6, corrected).

``published_scores`` below is written from the text of SPEC §6 alone, step by step, with no helper of
``agentjudge.scoring.scorer``: sets of tool names, a dict of expected key sets keyed by tool name (so the LAST
repeat wins), the published empty cases and rounding to 4 decimals. ``paper`` mode must agree with it on
every input; the generated cases lean on repeated tools and key-set variations, where the quirks live.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.scoring.scorer import score_calls
from agentjudge.types import ToolCall

FOUR = ("p_tool", "p_param", "p_seq", "p_cov")


def published_scores(expected: list[ToolCall], generated: list[ToolCall]) -> dict[str, float]:
    """The published function, transcribed from SPEC §6 (one statement per sentence of the spec)."""
    e_names = [call.name for call in expected]
    g_names = [call.name for call in generated]
    e_set = set(e_names)
    g_set = set(g_names)

    # p_tool = max(0, 1 - (|G\E| + |E\G|) / max(|E|, 1)) over sets; 1 when both sets are empty
    p_tool = max(0.0, 1.0 - (len(g_set - e_set) + len(e_set - g_set)) / max(len(e_set), 1))

    # p_cov = |G & E| / |E| over sets; 1 when E is empty
    p_cov = 1.0 if len(e_set) == 0 else len(g_set & e_set) / len(e_set)

    # p_seq = positions where the tool names agree, over |E|; 1 whenever E is empty
    if len(expected) == 0:
        p_seq = 1.0
    else:
        same = 0
        for i in range(min(len(expected), len(generated))):
            if generated[i].name == expected[i].name:
                same += 1
        p_seq = same / len(expected)

    # p_param: a dict keyed by tool name (later repeats overwrite earlier ones), mean over generated calls
    expected_by_name: dict[str, dict[str, Any]] = {}
    for call in expected:
        expected_by_name[call.name] = call.arguments
    if len(generated) == 0:
        p_param = 1.0
    else:
        total = 0.0
        for call in generated:
            if call.name not in expected_by_name:
                continue  # unknown tool: 0
            expected_keys = set(expected_by_name[call.name].keys())
            generated_keys = set(call.arguments.keys())
            if generated_keys == expected_keys:
                total += 1.0
            elif expected_keys.issubset(generated_keys):
                total += 0.5
            # anything else (a missing key): 0
        p_param = total / max(len(generated), 1)

    return {
        "p_tool": round(p_tool, 4),
        "p_param": round(p_param, 4),
        "p_seq": round(p_seq, 4),
        "p_cov": round(p_cov, 4),
    }


def paper_four(expected: list[ToolCall], generated: list[ToolCall]) -> dict[str, float]:
    scores = score_calls(expected, generated, "paper")
    return {k: scores[k] for k in FOUR}


def call(name: str, *keys: str) -> ToolCall:
    return ToolCall(name=name, arguments={k: f"<{k}>" for k in keys})


# ------------------------------------------------------------------ hand-made cases (arithmetic in comments)


def test_repeated_tool_last_expected_call_wins() -> None:
    e = [call("get", "id"), call("get", "id", "verbose")]
    # both generated gets are compared with {id, verbose}: get{id} misses a key (0), get{id,verbose} exact (1)
    assert paper_four(e, list(e))["p_param"] == 0.5
    assert published_scores(e, list(e))["p_param"] == 0.5
    # reversed GT order: now {id} wins; get{id} exact 1, get{id,verbose} has extras 0.5 -> 0.75
    assert paper_four(e[::-1], e[::-1])["p_param"] == 0.75


def test_repeated_tool_hand_cases() -> None:
    e = [call("list", "q"), call("get", "id"), call("get", "id")]
    # G misses one repeat: sets equal -> tool 1, cov 1; positions 2/3 -> 0.6667; both G calls exact -> 1
    assert paper_four(e, e[:2]) == {"p_tool": 1.0, "p_param": 1.0, "p_seq": 0.6667, "p_cov": 1.0}
    # three extra repeats: sets still equal; positions 3/3; every G call exact
    g = [*e, call("get", "id"), call("get", "id")]
    assert paper_four(e, g) == {"p_tool": 1.0, "p_param": 1.0, "p_seq": 1.0, "p_cov": 1.0}
    # an unknown extra tool: |G\E| = 1 over |E set| = 2 -> 0.5; p_param (1 + 1 + 1 + 0)/4 = 0.75
    g = [*e, call("zap")]
    assert paper_four(e, g) == {"p_tool": 0.5, "p_param": 0.75, "p_seq": 1.0, "p_cov": 1.0}
    # thirds and sixths show the rounding to 4 decimals
    e3 = [call("a"), call("b"), call("c")]
    assert paper_four(e3, [call("a", "x"), call("z"), call("y")]) == {
        "p_tool": 0.0,  # 1 - (2 + 2)/3 < 0
        "p_param": 0.1667,  # a{x} has every expected key (none) plus x: 0.5; over 3 generated calls
        "p_seq": 0.3333,
        "p_cov": 0.3333,
    }


def test_empty_cases_as_published() -> None:
    assert paper_four([], []) == {"p_tool": 1.0, "p_param": 1.0, "p_seq": 1.0, "p_cov": 1.0}
    # E empty, G not: p_seq 1 whenever E is empty; p_cov 1; p_tool 1 - 1/1 = 0; unknown tool -> p_param 0
    assert paper_four([], [call("a", "x")]) == {"p_tool": 0.0, "p_param": 0.0, "p_seq": 1.0, "p_cov": 1.0}
    # G empty: p_param 1; p_cov 0 (no shared tool); p_seq 0/2; p_tool 1 - 2/2 = 0
    e = [call("a", "x"), call("b")]
    assert paper_four(e, []) == {"p_tool": 0.0, "p_param": 1.0, "p_seq": 0.0, "p_cov": 0.0}


# ------------------------------------------------------------------ generated cases


def _random_calls(rng: random.Random, n_max: int) -> list[ToolCall]:
    """Few tool names and key names, so repeated tools and overlapping key sets are the rule."""
    calls = []
    for _ in range(rng.randint(0, n_max)):
        name = rng.choice("abcd")
        keys = rng.sample(["id", "v", "w"], rng.randint(0, 3))
        calls.append(call(name, *keys))
    return calls


def count_disagreements(n_cases: int, seed: int) -> tuple[int, int, list[Any]]:
    """(disagreements, cases with a repeated tool in E or G, the first few disagreeing cases)."""
    rng = random.Random(seed)
    bad: list[Any] = []
    repeated = 0
    for _ in range(n_cases):
        e = _random_calls(rng, 6)
        g = _random_calls(rng, 7)
        if len({x.name for x in e}) < len(e) or len({x.name for x in g}) < len(g):
            repeated += 1
        ours, theirs = paper_four(e, g), published_scores(e, g)
        if ours != theirs:
            bad.append((e, g, ours, theirs))
    return len(bad), repeated, bad[:3]


def test_paper_mode_equals_published_logic_on_generated_cases() -> None:
    n_cases = 20_000
    disagreements, repeated, examples = count_disagreements(n_cases, seed=20260)
    print(
        f"paper mode vs published transcription: {disagreements} disagreements in {n_cases} cases "
        f"({repeated} with a repeated tool)"
    )
    assert repeated > n_cases // 2  # the generator really exercises repeated tools
    assert disagreements == 0, examples


calls_strategy = st.lists(
    st.builds(
        lambda name, keys: call(name, *keys),
        st.sampled_from("abc"),
        st.lists(st.sampled_from(["id", "v", "w"]), unique=True, max_size=3),
    ),
    max_size=7,
)


@settings(max_examples=400, deadline=None)
@given(e=calls_strategy, g=calls_strategy)
def test_paper_mode_equals_published_logic_hypothesis(e: list[ToolCall], g: list[ToolCall]) -> None:
    assert paper_four(e, g) == published_scores(e, g)
