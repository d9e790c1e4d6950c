"""Hand-computed cases for every §6 formula in both scoring modes (the arithmetic is in the comments)."""

from __future__ import annotations

import json
import random
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.commands.data import score_cli
from agentjudge.dataset.env import ToolError
from agentjudge.scoring.files import SCORE_COLUMNS
from agentjudge.scoring.scorer import (
    METRIC_FIELDS,
    prepare,
    score_calls,
    score_prediction,
    state_match,
    values_match,
)
from agentjudge.types import GTStep, Prediction, Record, ToolCall, ToolSchema


def c(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, arguments=args)


def schema(name: str, props: list[str], required: list[str]) -> ToolSchema:
    return ToolSchema(
        name=name,
        description=f"tool {name}",
        parameters={
            "type": "object",
            "properties": {p: {"type": "string"} for p in props},
            "required": required,
        },
    )


def approx(d: dict[str, float]) -> dict[str, Any]:
    return {k: pytest.approx(v) for k, v in d.items()}


def record_of(
    calls: list[ToolCall], deps: list[list[int]] | None = None, tools: list[ToolSchema] | None = None
) -> Record:
    deps = deps or [[i - 1] if i else [] for i in range(len(calls))]
    return Record(
        id="t-0001",
        domain="test",
        scenario="s",
        topology="linear",
        queries={"easy": "q", "medium": "q", "hard": "q"},
        system_prompt="sys",
        tools=tools or [schema(n, [], []) for n in sorted({x.name for x in calls})],
        gt=[GTStep(call=x, output=None, depends_on=d) for x, d in zip(calls, deps, strict=True)],
    )


ALL_ONE = dict.fromkeys(METRIC_FIELDS, 1.0)


@pytest.mark.parametrize("mode", ["paper", "strict"])
def test_identical_scores_one(mode: str) -> None:
    e = [c("find", q="x"), c("get", id=1), c("put", id=1, v=[1, 2])]
    assert score_calls(e, list(e), mode) == ALL_ONE  # type: ignore[arg-type]


# loop_like: E = [list, get(a), get(b)], edges 0->1, 0->2
LOOP = [c("list", q="all"), c("get", id="a"), c("get", id="b")]
LOOP_EDGES = [(0, 1), (0, 2)]


def test_loop_missing_repeat_sets_vs_multisets() -> None:
    g = [c("list", q="all"), c("get", id="a")]
    paper = score_calls(LOOP, g, "paper", edges=LOOP_EDGES)
    # sets {list,get} equal -> tool 1, cov 1; positions 2 of |E|=3 (rounded to 4 decimals); both G calls
    # exact key sets
    assert paper == approx(dict(p_tool=1, p_cov=1, p_seq=0.6667, p_param=1, p_value=1, p_seq_dag=1 / 2))
    strict = score_calls(LOOP, g, "strict", edges=LOOP_EDGES)
    # multisets: one get missing -> 1 - 1/3; cov 2/3; seq 2/max(3,2); pairs (0,0),(1,1) exact;
    # edge 0->2 unmatched
    assert strict == approx(
        dict(p_tool=2 / 3, p_cov=2 / 3, p_seq=2 / 3, p_param=1, p_value=1, p_seq_dag=1 / 2)
    )


def test_loop_extra_repeat() -> None:
    g = [*LOOP, c("get", id="c")]
    assert score_calls(LOOP, g, "paper", edges=LOOP_EDGES)["p_tool"] == 1.0  # sets collapse the repeat
    strict = score_calls(LOOP, g, "strict", edges=LOOP_EDGES)
    assert strict == approx(dict(p_tool=2 / 3, p_cov=1, p_seq=3 / 4, p_param=1, p_value=1, p_seq_dag=1))


def test_loop_swapped_items_pair_by_position() -> None:
    # strict matching pairs the k-th expected get with the k-th generated get, so swapped items lose values
    g = [c("list", q="all"), c("get", id="b"), c("get", id="a")]
    s = score_calls(LOOP, g, "strict", edges=LOOP_EDGES)
    assert s["p_seq"] == 1.0 and s["p_seq_dag"] == 1.0
    assert s["p_value"] == pytest.approx((1 + 0 + 0) / 3)


def test_extra_trailing_call() -> None:
    e, g = [c("a", x=1), c("b", y=2)], [c("a", x=1), c("b", y=2), c("z")]
    paper = score_calls(e, g, "paper")
    # p_seq 2/|E| ignores the trailer; p_tool 1 - 1/2; p_param (1 + 1 + 0)/3 = 0.6667 (z is unknown to E)
    assert paper == approx(dict(p_tool=0.5, p_cov=1, p_seq=1, p_param=0.6667, p_value=1, p_seq_dag=1))
    strict = score_calls(e, g, "strict")
    # p_seq 2/max(2,3); p_param over matched pairs only
    assert strict == approx(dict(p_tool=0.5, p_cov=1, p_seq=2 / 3, p_param=1, p_value=1, p_seq_dag=1))


FAN = [c("root", id=1), c("x", id=1), c("y", id=1), c("z", id=1)]
FAN_EDGES = [(0, 1), (0, 2), (0, 3)]
DIAMOND = [c("A"), c("B"), c("C"), c("D")]
DIAMOND_EDGES = [(0, 1), (0, 2), (1, 3), (2, 3)]


@pytest.mark.parametrize("mode", ["paper", "strict"])
def test_fan_out_valid_reorder(mode: str) -> None:
    s = score_calls(FAN, [FAN[0], FAN[3], FAN[1], FAN[2]], mode, edges=FAN_EDGES)  # type: ignore[arg-type]
    assert s["p_seq"] == 0.25 and s["p_seq_dag"] == 1.0 and s["p_tool"] == 1.0


@pytest.mark.parametrize("mode", ["paper", "strict"])
def test_fan_out_invalid_reorder(mode: str) -> None:
    s = score_calls(FAN, [FAN[1], FAN[0], FAN[2], FAN[3]], mode, edges=FAN_EDGES)  # type: ignore[arg-type]
    # positions 2 and 3 agree; edge root->x broken, root->y and root->z kept
    assert s["p_seq"] == 0.5 and s["p_seq_dag"] == pytest.approx(2 / 3)


def test_diamond_reorders() -> None:
    valid = score_calls(DIAMOND, [DIAMOND[i] for i in (0, 2, 1, 3)], "strict", edges=DIAMOND_EDGES)
    assert valid["p_seq"] == 0.5 and valid["p_seq_dag"] == 1.0
    invalid = score_calls(DIAMOND, [DIAMOND[i] for i in (0, 1, 3, 2)], "strict", edges=DIAMOND_EDGES)
    assert invalid["p_seq"] == 0.5 and invalid["p_seq_dag"] == 0.75  # C->D broken


def test_default_edges_are_consecutive_pairs() -> None:
    # order A,C,B,D vs chain A->B->C->D: A(0)<B(2) ok, B(2)<C(1) broken, C(1)<D(3) ok
    s = score_calls(DIAMOND, [DIAMOND[i] for i in (0, 2, 1, 3)], "strict")
    assert s["p_seq_dag"] == pytest.approx(2 / 3)


def test_seq_dag_prefers_occurrences_after_predecessors() -> None:
    # a stray get before list must not break list->get when a later get exists
    g = [c("get", id="a"), c("list", q="all"), c("get", id="a"), c("get", id="b")]
    assert score_calls(LOOP, g, "strict", edges=LOOP_EDGES)["p_seq_dag"] == 1.0


@pytest.mark.parametrize("mode", ["paper", "strict"])
def test_unknown_tool(mode: str) -> None:
    s = score_calls([c("a", x=1)], [c("zzz", x=1)], mode)  # type: ignore[arg-type]
    # 1 - (1+1)/1 clipped at 0; no shared tool; single call: no edges -> p_seq_dag 1
    assert s == dict(p_tool=0.0, p_param=0.0, p_seq=0.0, p_cov=0.0, p_value=0.0, p_seq_dag=1.0)


GET = schema("get", ["id", "verbose"], ["id"])


def test_param_extra_keys_and_lenient() -> None:
    e = [c("get", id=1)]
    extra_allowed = [c("get", id=1, verbose="yes")]
    extra_unknown = [c("get", id=1, bogus="x")]
    assert score_calls(e, extra_allowed, "paper", tools=[GET])["p_param"] == 0.5
    assert score_calls(e, extra_allowed, "strict", tools=[GET])["p_param"] == 0.5
    assert score_calls(e, extra_allowed, "strict", tools=[GET], lenient=True)["p_param"] == 1.0
    assert score_calls(e, extra_unknown, "strict", tools=[GET], lenient=True)["p_param"] == 0.5
    assert score_calls(e, extra_allowed, "strict", lenient=True)["p_param"] == 0.5  # schema unknown


def test_param_missing_keys() -> None:
    assert score_calls([c("get", id=1)], [c("get", verbose="y")], "paper", tools=[GET])["p_param"] == 0.0
    assert score_calls([c("get", id=1)], [c("get", verbose="y")], "strict", tools=[GET])["p_param"] == 0.0
    # missing an optional key: paper 0 (a missing key), strict 0.5 (required keys present, set differs)
    e, g = [c("get", id=1, verbose="y")], [c("get", id=1)]
    assert score_calls(e, g, "paper", tools=[GET])["p_param"] == 0.0
    assert score_calls(e, g, "strict", tools=[GET])["p_param"] == 0.5
    # schema unknown: the expected call's keys count as required
    assert score_calls(e, g, "strict")["p_param"] == 0.0


def test_param_paper_uses_last_expected_call() -> None:
    e = [c("get", id=1), c("get", id=2, verbose="y")]
    g = list(e)
    # both generated gets are compared with the LAST expected get {id, verbose}: 0.0 + 1.0, over 2
    assert score_calls(e, g, "paper", tools=[GET])["p_param"] == 0.5
    assert score_calls(e, g, "strict", tools=[GET])["p_param"] == 1.0


def test_param_mean_over_pairs_strict() -> None:
    e = [c("a", x=1), c("b", y=1), c("c", z=1)]
    g = [c("a", x=1), c("b", y=1, w=2), c("c")]
    # pairs: exact 1, extra 0.5, missing 0 -> 0.5; paper: same keys logic per generated call -> 0.5
    assert score_calls(e, g, "strict")["p_param"] == 0.5
    assert score_calls(e, g, "paper")["p_param"] == 0.5


def test_empty_prediction() -> None:
    e = [c("a", x=1), c("b", y=1)]
    paper = score_calls(e, [], "paper")
    # published quirk: p_param = 1 when G is empty
    assert paper == dict(p_tool=0.0, p_param=1.0, p_seq=0.0, p_cov=0.0, p_value=0.0, p_seq_dag=0.0)
    assert score_calls(e, [], "strict") == dict.fromkeys(METRIC_FIELDS, 0.0)


@pytest.mark.parametrize("mode", ["paper", "strict"])
def test_empty_gt(mode: str) -> None:
    assert score_calls([], [], mode) == ALL_ONE  # type: ignore[arg-type]
    s = score_calls([], [c("a", x=1)], mode)  # type: ignore[arg-type]
    # 1 - 1/max(0,1) -> 0; nothing to cover -> 1; no pair/unknown tool -> 0; no edges -> 1;
    # p_seq: strict 0/max(0,1,1) = 0, paper 1 whenever E is empty (published)
    p_seq = 1.0 if mode == "paper" else 0.0
    assert s == dict(p_tool=0.0, p_param=0.0, p_seq=p_seq, p_cov=1.0, p_value=0.0, p_seq_dag=1.0)


def test_values_match_rules() -> None:
    assert values_match("  New   York ", "new york")
    assert not values_match("new-york", "new york")
    assert values_match(3, 3.000001) and not values_match(3, 3.01)
    assert values_match(42, "42") and values_match(0.5, 0.5)
    assert not values_match(True, 1) and not values_match(1, True) and values_match(False, False)
    assert values_match([1, "A b"], [1.0, "a  B"]) and not values_match([1, 2], [2, 1])
    assert values_match({"k": {"n": 2}}, {"k": {"n": 2.0}}) and not values_match({"k": 1}, {"k": 1, "j": 2})
    assert values_match(None, None) and not values_match(None, "") and not values_match("x", ["x"])
    assert not values_match(float("nan"), float("nan"))


def test_p_value_shares() -> None:
    e = [c("get", id="AB-1", n=3), c("put", id="AB-1", note="Done")]
    g = [c("get", id="ab-1", n=4), c("put", note=" done ")]
    # get: 1 of 2 values; put: id missing, note folded -> 1 of 2; mean 0.5 (same in both modes)
    assert score_calls(e, g, "strict")["p_value"] == 0.5
    assert score_calls(e, g, "paper")["p_value"] == 0.5
    assert score_calls([c("ping")], [c("ping", x=1)], "strict")["p_value"] == 1.0  # no GT values to miss


def test_bad_mode_and_edges() -> None:
    with pytest.raises(ValueError, match="unknown scoring mode"):
        score_calls([c("a")], [c("a")], "lax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="out of range"):
        score_calls([c("a")], [c("a")], "strict", edges=[(0, 3)])


def _random_call(rng: random.Random) -> ToolCall:
    keys = rng.sample(["id", "v", "w", "n"], rng.randint(0, 3))
    return c(
        rng.choice("abcde"), **{k: rng.choice([1, 2.0, "x", "X ", True, None, [1], {"a": 1}]) for k in keys}
    )


def test_scores_in_unit_interval_random() -> None:
    rng = random.Random(1234)
    tools = [schema(n, ["id", "v", "w"], ["id"]) for n in "abc"]
    for _ in range(3000):
        e = [_random_call(rng) for _ in range(rng.randint(0, 5))]
        g = [_random_call(rng) for _ in range(rng.randint(0, 6))]
        edges = sorted({(u, v) for v in range(len(e)) for u in range(v) if rng.random() < 0.4})
        for mode in ("paper", "strict"):
            for lenient in (False, True):
                s = score_calls(e, g, mode, edges=edges, tools=tools, lenient=lenient)
                assert all(0.0 <= s[k] <= 1.0 for k in METRIC_FIELDS), (e, g, s)
        assert score_calls(e, e, "strict", edges=edges, tools=tools) == ALL_ONE


class FakeEnv:
    """A key-value store: set(key, value) writes, get(key) reads, anything else is rejected."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {"a": 0}

    def execute(self, call: ToolCall) -> Any:
        if call.name == "set" and "key" in call.arguments:
            self.state[call.arguments["key"]] = call.arguments.get("value")
            return {"ok": True}
        if call.name == "get" and call.arguments.get("key") in self.state:
            return self.state[call.arguments["key"]]
        raise ToolError(f"bad call {call.name}")

    def snapshot(self) -> dict[str, Any]:
        return dict(self.state)


STATE_GT = [c("get", key="a"), c("set", key="a", value=5)]


def test_state_match_with_fake_env() -> None:
    rec = record_of(STATE_GT)
    env = lambda r: FakeEnv()  # noqa: E731
    assert state_match(rec, STATE_GT, env_factory=env) is True
    assert state_match(rec, [c("set", key="a", value=5)], env_factory=env) is True  # reads do not matter
    assert state_match(rec, [c("set", key="a", value=6)], env_factory=env) is False
    # a rejected predicted call fails silently and changes nothing
    assert state_match(rec, [c("nope"), c("set", key="a", value=5)], env_factory=env) is True
    assert state_match(rec, [], env_factory=env) is False
    assert state_match(rec, STATE_GT, env_factory=lambda r: None) is None


def test_state_match_caches_gt_end_state_on_prepared() -> None:
    rec = record_of(STATE_GT)
    made: list[FakeEnv] = []

    def factory(r: Record) -> FakeEnv:
        made.append(FakeEnv())
        return made[-1]

    prep = prepare(rec)
    assert state_match(rec, STATE_GT, env_factory=factory, prepared=prep) is True
    assert len(made) == 2  # GT environment + prediction environment
    assert state_match(rec, [c("set", key="a", value=4)], env_factory=factory, prepared=prep) is False
    assert len(made) == 3  # the GT end state was reused
    assert state_match(rec, [c("set", key="a", value=5)], env_factory=factory, prepared=prep) is True


def test_state_match_broken_gt_is_an_error() -> None:
    rec = record_of([c("nope")])
    with pytest.raises(ValueError, match="GT step 0"):
        state_match(rec, [], env_factory=lambda r: FakeEnv())


def _prediction(calls: list[ToolCall] | None, error: str | None = None) -> Prediction:
    return Prediction(
        record_id="t-0001:easy",
        base_id="t-0001",
        difficulty="easy",
        generator="g",
        trial=2,
        calls=calls,
        error=error,
    )


def test_score_prediction() -> None:
    rec = record_of(STATE_GT)
    s = score_prediction(
        rec, _prediction([c("set", key="a", value=5)]), "strict", env_factory=lambda r: FakeEnv()
    )
    assert s.scoring_mode == "strict" and s.trial == 2 and s.state_match is True
    assert s.p_cov == 0.5 and s.p_seq == 0.0 and s.p_value == 1.0
    s2 = score_prediction(rec, _prediction(list(STATE_GT)), "paper", prepared=prepare(rec), with_state=False)
    assert s2.state_match is None and s2.p_tool == 1.0
    with pytest.raises(ValueError, match="failed"):
        score_prediction(rec, _prediction(None, error="timeout"), "strict")


def _write_predictions(path: Any, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _pred_row(
    calls: list[ToolCall] | None, error: str | None = None, gen: str = "g", trial: int = 0
) -> dict[str, Any]:
    return {
        "record_id": "t-0001:hard", "base_id": "t-0001", "difficulty": "hard",
        "generator": gen, "trial": trial,
        "calls_json": None if calls is None else json.dumps([x.model_dump() for x in calls]),
        "raw_output": "", "error": error,
    }  # fmt: skip


def test_score_cli_end_to_end(tmp_path: Any, capsys: Any) -> None:
    from agentjudge.rundir.records import write_records

    rec = record_of([c("find", q="x"), c("get", id=1), c("put", id=1, v="a")])
    write_records(tmp_path / "records.jsonl", [rec])
    preds = tmp_path / "predictions.jsonl"
    good = [c("find", q="X"), c("put", id=1, v="a")]
    _write_predictions(preds, [_pred_row(good), _pred_row(None, error="timeout", trial=1)])
    for suffix in (".csv", ".parquet"):
        out = tmp_path / f"scores{suffix}"
        assert score_cli(tmp_path / "records.jsonl", preds, out, "both", False) == 0
        frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
        assert list(frame.columns) == list(SCORE_COLUMNS)
        assert sorted(frame["scoring_mode"]) == ["paper", "strict"] and set(frame["trial"]) == {0}
        strict = frame[frame["scoring_mode"] == "strict"].iloc[0]
        # E = find,get,put; G = find,put: tool 1-1/3, cov 2/3, seq 1/3, values 1, chain edges kept 0 of 2
        assert strict["p_tool"] == pytest.approx(2 / 3) and strict["p_seq"] == pytest.approx(1 / 3)
        assert strict["p_value"] == 1.0 and strict["p_seq_dag"] == 0.0 and strict["topology"] == "linear"
        assert frame["state_match"].isna().all()  # domain "test" has no executable environment
    printed = capsys.readouterr().out
    assert "scored 1 of 2 predictions" in printed and "g: 1 of 2 predictions failed" in printed
    # the same predictions as parquet (the run folder's format) give the same scores
    pq = tmp_path / "predictions.parquet"
    pd.DataFrame([_pred_row(good), _pred_row(None, error="timeout", trial=1)]).to_parquet(pq)
    assert score_cli(tmp_path / "records.jsonl", pq, tmp_path / "again.csv", "both", False) == 0
    assert pd.read_csv(tmp_path / "again.csv").equals(pd.read_csv(tmp_path / "scores.csv"))


def test_score_cli_bad_input(tmp_path: Any, capsys: Any) -> None:
    from agentjudge.rundir.records import write_records

    write_records(tmp_path / "records.jsonl", [record_of([c("a")])])
    preds = tmp_path / "predictions.jsonl"
    row = _pred_row([c("a")])
    del row["calls_json"]
    _write_predictions(preds, [_pred_row([c("a")]), row])
    assert score_cli(tmp_path / "records.jsonl", preds, tmp_path / "s.csv", "strict", False) == 2
    assert "predictions.jsonl, line 2: missing field(s) calls_json" in capsys.readouterr().err
    _write_predictions(preds, [_pred_row([c("a")]) | {"error": "boom"}])
    assert score_cli(tmp_path / "records.jsonl", preds, tmp_path / "s.csv", "strict", False) == 2
    assert "both calls_json and error" in capsys.readouterr().err
    _write_predictions(preds, [_pred_row([c("a")]) | {"base_id": "zz-1"}])
    assert score_cli(tmp_path / "records.jsonl", preds, tmp_path / "s.csv", "strict", False) == 2
    assert "not in records" in capsys.readouterr().err
    assert score_cli(tmp_path / "records.jsonl", preds, tmp_path / "s.csv", "lax", False) == 2


def test_p_value_fast_paths_keep_type_rules() -> None:
    # dict equality says {"n": 1} == {"n": True} and [1] == [True]; the scorer must not
    e = [c("a", n=1, tags=[1, "x"], m={"k": 2})]
    assert score_calls(e, [c("a", n=True, tags=[1, "x"], m={"k": 2})], "strict")["p_value"] == pytest.approx(
        2 / 3
    )
    assert score_calls(e, [c("a", n=1, tags=[True, "x"], m={"k": 2})], "strict")["p_value"] == pytest.approx(
        2 / 3
    )
    assert score_calls(e, [c("a", n=1, tags=[1, "x"], m={"k": True})], "strict")["p_value"] == pytest.approx(
        2 / 3
    )
    nan = float("nan")
    assert score_calls([c("a", x=nan)], [c("a", x=nan)], "strict")["p_value"] == 0.0


def test_p_value_matches_naive_definition() -> None:
    rng = random.Random(99)
    pool: list[Any] = [
        0,
        1,
        1.0,
        True,
        False,
        "x",
        "X",
        " x ",
        [1],
        [True],
        ["x"],
        {"a": 1},
        {"a": True},
        None,
    ]
    for _ in range(2000):
        e = [c(rng.choice("ab"), **{k: rng.choice(pool) for k in rng.sample("pqr", rng.randint(0, 3))})
             for _ in range(rng.randint(1, 4))]  # fmt: skip
        g = [x.model_copy(deep=True) if rng.random() < 0.5
             else c(x.name, **{k: rng.choice(pool) for k in x.arguments})
             for x in e if rng.random() < 0.9]  # fmt: skip
        used: set[int] = set()
        shares = []
        for x in e:  # naive strict matching and value share
            j = next((j for j, y in enumerate(g) if y.name == x.name and j not in used), None)
            if j is None:
                continue
            used.add(j)
            args = x.arguments
            hits = sum(
                1 for k, v in args.items() if k in g[j].arguments and values_match(v, g[j].arguments[k])
            )
            shares.append(hits / len(args) if args else 1.0)
        expected = sum(shares) / len(shares) if shares else 0.0
        assert score_calls(e, g, "strict")["p_value"] == pytest.approx(expected), (e, g)


def test_state_match_with_domain_engine() -> None:
    """Integration with the executable domains: the GT reproduces its end state, a missing write does not."""
    from agentjudge.dataset.scenario import build_scenario

    rec, _ = build_scenario("itsm", "fan_in", 1, 0)
    gt = rec.expected_calls
    assert state_match(rec, gt) is True
    assert state_match(rec, gt[:-1]) is False  # the final write (a notification) is missing
    # a call the environment rejects has no effect
    assert state_match(rec, [ToolCall(name="no_such_tool", arguments={}), *gt]) is True
    s = score_prediction(rec, Prediction(record_id=rec.record_id("hard"), base_id=rec.id, difficulty="hard",
                                         generator="g", calls=gt), "strict")  # fmt: skip
    assert s.state_match is True and s.p_seq_dag == 1.0


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True)
    | st.sampled_from(["x", "X ", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2),
    max_leaves=6,
)
calls_strategy = st.lists(
    st.builds(
        lambda name, args: ToolCall(name=name, arguments=args),
        st.sampled_from("abcd"),
        st.dictionaries(st.sampled_from(["id", "v", "w"]), json_values, max_size=3),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(e=calls_strategy, g=calls_strategy, data=st.data())
def test_scores_in_unit_interval_hypothesis(e: list[ToolCall], g: list[ToolCall], data: Any) -> None:
    pairs = [(u, v) for v in range(len(e)) for u in range(v)]
    edges = data.draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    tools = [schema(n, ["id", "v"], ["id"]) for n in "ab"]
    for mode in ("paper", "strict"):
        s = score_calls(e, g, mode, edges=edges, tools=tools, lenient=data.draw(st.booleans()))
        assert all(0.0 <= s[k] <= 1.0 for k in METRIC_FIELDS)
    # a faithful copy is perfect in strict mode except for values that never match themselves (NaN)
    same = score_calls(e, [x.model_copy(deep=True) for x in e], "strict", edges=edges, tools=tools)
    assert {k: v for k, v in same.items() if k != "p_value"} == {
        k: 1.0 for k in METRIC_FIELDS if k != "p_value"
    }
