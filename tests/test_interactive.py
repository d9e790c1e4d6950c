"""Interactive generation through the loopback server: a scripted agent that reads the tool messages it is
sent (agent_sim.next_turn over the request's messages), the episode loop executing its calls in the
record's environment, the trajectory on the prediction, and the outcome references (state_match,
writes_done) -- for a correct agent and one of each error kind."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLM, Reply

from agentjudge.generators.agent_sim import AgentProfile, AgentRates, agent_profiles, next_turn
from agentjudge.generators.interactive import make_interactive_llm_generator, run_episode
from agentjudge.models.cache import CallCache
from agentjudge.models.client import ModelClient
from agentjudge.registry.factory import ModelResolutionError, make_generator
from agentjudge.rundir.records import read_records
from agentjudge.runner.work import Dataset
from agentjudge.scoring.scorer import outcome, replayed_calls, score_prediction
from agentjudge.types import DIFFICULTIES, ModelSettings, Prediction, Record

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
SEED = 7


@pytest.fixture(scope="module")
def data() -> Dataset:
    return Dataset(read_records(MINI))


def only(kind: str | None) -> AgentProfile:
    """A profile that injects exactly ``kind`` (rate 1) at every difficulty; None = the correct agent."""
    rates = AgentRates(**{k: float(k == kind) for k in AgentRates.model_fields})
    return AgentProfile(description=f"test: {kind}", rates=dict.fromkeys(DIFFICULTIES, rates))


def scripted_agent(data: Dataset, profile: AgentProfile) -> Any:
    """The loopback model: finds the record by the user's query, then answers from the tool messages."""
    by_query = {r.queries[d]: (r, d) for r in data.records for d in DIFFICULTIES}

    def respond(request: dict[str, Any]) -> Reply:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        record, difficulty = by_query[user]
        calls, text, _ = next_turn(record, difficulty, profile, SEED, request["messages"])
        if calls is None:
            return Reply(text=text)
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        return Reply(
            tool_calls=[
                {"id": f"c{turn}_{k}", "name": c.name, "arguments": c.arguments} for k, c in enumerate(calls)
            ]
        )

    return respond


def run(
    fake_llm: FakeLLM, data: Dataset, tasks: list[tuple[Record, str]], cache: Path, **settings: Any
) -> list[Prediction]:
    gen = make_interactive_llm_generator(
        fake_llm.settings(generation="interactive", **settings), ModelClient(cache=CallCache(cache))
    ).bind(data.by_base)

    async def go() -> list[Prediction]:
        return [await gen(data.task(r, d), 0) for r, d in tasks]  # type: ignore[arg-type]

    return asyncio.run(go())


def applied(data: Dataset, kind: str) -> tuple[Record, str, list[str]]:
    """The first (record, difficulty) of the mini split where the error ``kind`` applies."""
    for r in data.records:
        for d in DIFFICULTIES:
            calls: list[Any] | None = []
            messages: list[dict[str, Any]] = []
            errors: list[str] = []
            for _ in range(20):  # replay the script in process to see whether the kind applies
                calls, _, errors = next_turn(r, d, only(kind), SEED, messages)  # type: ignore[arg-type]
                if calls is None:
                    break
                messages = simulate(r, messages, calls)
            if kind in errors:
                return r, d, errors
    raise AssertionError(f"no record of the mini split where {kind} applies")


def simulate(record: Record, messages: list[dict[str, Any]], calls: list[Any]) -> list[dict[str, Any]]:
    """Messages after executing ``calls`` from scratch (replays all earlier calls): test helper only."""
    from agentjudge.dataset.env import ToolError
    from agentjudge.dataset.world import environment_for

    env = environment_for(record)
    assert env is not None
    history = [tc for m in messages if m["role"] == "assistant" for tc in m["tool_calls"]]
    for tc in history:
        with contextlib.suppress(ToolError):
            env.execute(_call(tc))
    turn = len([m for m in messages if m["role"] == "assistant"])
    ids = [f"s{turn}_{k}" for k in range(len(calls))]
    sent = [
        {"id": i, "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
        for i, c in zip(ids, calls, strict=True)
    ]
    out = [*messages, {"role": "assistant", "tool_calls": sent}]
    for i, c in zip(ids, calls, strict=True):
        try:
            content = json.dumps(env.execute(c))
        except ToolError as exc:
            content = json.dumps({"error": str(exc)})
        out.append({"role": "tool", "tool_call_id": i, "content": content})
    return out


def _call(tc: dict[str, Any]) -> Any:
    from agentjudge.types import ToolCall

    return ToolCall(name=tc["function"]["name"], arguments=json.loads(tc["function"]["arguments"]))


# ---- the correct agent -----------------------------------------------------------------------------------


def test_correct_agent_reproduces_gt_by_reading_outputs(
    fake_llm: FakeLLM, data: Dataset, tmp_path: Path
) -> None:
    # one record per topology, every difficulty: the trajectory is the GT, executed, output for output
    picks = {}
    for r in data.records:
        picks.setdefault(r.topology, r)
    tasks = [(r, DIFFICULTIES[i % 3]) for i, r in enumerate(picks.values())]  # all: the slow test below
    fake_llm.set_responder(scripted_agent(data, only(None)))
    preds = run(fake_llm, data, tasks, tmp_path / "c.sqlite")
    for (record, _), pred in zip(tasks, preds, strict=True):
        traj = pred.trajectory
        assert traj is not None and pred.error is None
        assert [s.call for s in traj.steps] == record.expected_calls
        assert [s.output for s in traj.steps] == [g.output for g in record.gt]
        assert all(s.error is None for s in traj.steps)
        assert traj.stop_reason == "answered" and traj.answer == "Done."
        # one model turn per batch of consecutive independent steps, plus the answer
        assert traj.turns == len({s.turn for s in traj.steps}) + 1
        score = score_prediction(record, pred, "strict")
        assert score.state_match is True
        assert score.writes_done == 1.0 and score.p_value == 1.0 and score.p_tool == 1.0
    # the values that exist only in outputs reached the agent through the HTTP tool messages
    tool_messages = [m for req in fake_llm.requests for m in req["messages"] if m["role"] == "tool"]
    assert tool_messages and all("tool_call_id" in m for m in tool_messages)
    # at least one turn had parallel calls, executed in the order given
    assert any(
        len({s.turn for s in p.trajectory.steps}) < len(p.trajectory.steps) for p in preds if p.trajectory
    )


@pytest.mark.slow
def test_correct_agent_state_match_on_every_mini_record(
    fake_llm: FakeLLM, data: Dataset, tmp_path: Path
) -> None:
    tasks = [(r, d) for r in data.records for d in DIFFICULTIES]
    fake_llm.set_responder(scripted_agent(data, only(None)))
    preds = run(fake_llm, data, tasks, tmp_path / "all.sqlite")
    failing = [
        (r.record_id(d), p.raw_output)  # type: ignore[arg-type]
        for (r, d), p in zip(tasks, preds, strict=True)
        if score_prediction(r, p, "strict").state_match is not True
    ]
    assert not failing, failing


# ---- one agent per error kind ----------------------------------------------------------------------------


def episode(fake_llm: FakeLLM, data: Dataset, kind: str, tmp_path: Path) -> tuple[Record, Prediction]:
    record, difficulty, _ = applied(data, kind)
    fake_llm.set_responder(scripted_agent(data, only(kind)))
    (pred,) = run(fake_llm, data, [(record, difficulty)], tmp_path / f"{kind}.sqlite")
    assert pred.trajectory is not None and pred.trajectory.stop_reason == "answered"
    return record, pred


def test_wrong_entity(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record, pred = episode(fake_llm, data, "wrong_entity", tmp_path)
    steps = pred.trajectory.steps  # type: ignore[union-attr]
    diffs = [
        (i, k)
        for i, s in enumerate(steps)
        for k, v in s.call.arguments.items()
        if v != record.gt[i].call.arguments[k]
    ]
    assert len(diffs) >= 1
    i, key = diffs[0]
    wrong = steps[i].call.arguments[key]
    # the wrong value is another element of a list that an earlier output actually returned
    lists = [
        v for s in steps[:i] if isinstance(s.output, dict) for v in s.output.values() if isinstance(v, list)
    ]
    assert any(wrong in lst and record.gt[i].call.arguments[key] in lst for lst in lists)
    match, writes, _ = outcome(record, replayed_calls(pred))
    assert match is False and score_prediction(record, pred, "strict").state_match is False
    assert writes is not None and writes < 1.0


def test_stops_early(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record, pred = episode(fake_llm, data, "stops_early", tmp_path)
    steps = pred.trajectory.steps  # type: ignore[union-attr]
    assert 1 <= len(steps) < len(record.gt)
    assert [s.call for s in steps] == record.expected_calls[: len(steps)]  # a correct prefix
    assert pred.trajectory.answer == "Done."  # type: ignore[union-attr]  # it claims success anyway
    score = score_prediction(record, pred, "strict")
    assert score.p_cov < 1.0
    _, _, done = outcome(record, replayed_calls(pred))
    assert all(i < len(steps) for i in done)  # only writes of the prefix can be done


def test_retries_after_error(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record, pred = episode(fake_llm, data, "retries_after_error", tmp_path)
    steps = pred.trajectory.steps  # type: ignore[union-attr]
    failed = [i for i, s in enumerate(steps) if s.error is not None]
    assert len(failed) == 1
    i = failed[0]
    assert "missing required argument" in (steps[i].error or "")
    assert steps[i + 1].call.name == steps[i].call.name and steps[i + 1].error is None
    assert steps[i + 1].turn == steps[i].turn + 1  # retried after seeing the error
    # the error went back to the model as a tool message
    sent = [m for req in fake_llm.requests for m in req["messages"] if m["role"] == "tool"]
    assert any(json.loads(m["content"]) == {"error": steps[i].error} for m in sent)
    score = score_prediction(record, pred, "strict")
    assert score.state_match is True  # a recovered error does not change the outcome
    assert score.p_tool < 1.0  # but the structural metrics count the extra call


def test_repeats_write(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record, pred = episode(fake_llm, data, "repeats_write", tmp_path)
    calls = [s.call for s in pred.trajectory.steps]  # type: ignore[union-attr]
    assert len(calls) == len(record.gt) + 1
    dup = [i for i in range(1, len(calls)) if calls[i] == calls[i - 1]]
    assert len(dup) == 1
    match, writes, _ = outcome(record, replayed_calls(pred))
    assert writes == 1.0  # every GT write was done ...
    assert match is False  # ... but the end state has one write too many


def test_hallucinates_id(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record, pred = episode(fake_llm, data, "hallucinates_id", tmp_path)
    steps = pred.trajectory.steps  # type: ignore[union-attr]
    invented = [
        (i, k) for i, s in enumerate(steps) if i < len(record.gt)
        for k, v in s.call.arguments.items() if v != record.gt[i].call.arguments.get(k)
    ]  # fmt: skip
    assert invented
    i, key = invented[0]
    value = steps[i].call.arguments[key]
    earlier = json.dumps([s.output for s in steps[:i]])
    assert json.dumps(value) not in earlier  # not read from any output the agent received
    assert score_prediction(record, pred, "strict").p_value < 1.0


# ---- the loop itself --------------------------------------------------------------------------------------


def _record(data: Dataset) -> Record:
    return next(r for r in data.records if len(r.gt) >= 2)


def test_bad_arguments_unknown_tool_and_max_turns(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record = _record(data)
    fake_llm.queue(tool_calls=[{"id": "a", "name": record.gt[0].call.name, "arguments": "{not json"}])
    fake_llm.queue(
        tool_calls=[
            {"id": "b", "name": "no_such_tool", "arguments": {}},
            {"id": "c", "name": record.gt[0].call.name, "arguments": record.gt[0].call.arguments},
        ]
    )
    (pred,) = run(fake_llm, data, [(record, "easy")], tmp_path / "m.sqlite", max_turns=2)
    traj = pred.trajectory
    assert traj is not None and traj.stop_reason == "max_turns" and traj.turns == 2
    first, second, third = traj.steps
    assert first.executed is False and (first.error or "").startswith("invalid arguments")
    assert second.error == "unknown tool 'no_such_tool'" and second.turn == 2
    assert third.output == record.gt[0].output and third.turn == 2  # parallel calls, in the order given
    # the tool messages went back in call order, errors included
    last_request = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in last_request[-2:]] == ["assistant", "tool"]
    assert len(fake_llm.requests) == 2
    assert replayed_calls(pred) == [second.call, third.call]  # the unparseable call never reached the tools


def test_json_mode_loop(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record = _record(data)
    step = record.gt[0].call
    fake_llm.queue(json.dumps([{"name": step.name, "arguments": step.arguments}]))
    fake_llm.queue("All done.")
    (pred,) = run(fake_llm, data, [(record, "easy")], tmp_path / "j.sqlite", native_tools=False)
    traj = pred.trajectory
    assert traj is not None and traj.stop_reason == "answered" and traj.answer == "All done."
    assert [s.output for s in traj.steps] == [record.gt[0].output]
    results = fake_llm.requests[1]["messages"][-1]
    assert (
        results["role"] == "user"
        and json.dumps(record.gt[0].output, ensure_ascii=False) in results["content"]
    )
    assert "tools" not in fake_llm.requests[0]


def test_resumed_episode_repays_nothing(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record = _record(data)
    fake_llm.set_responder(scripted_agent(data, only(None)))
    cache = tmp_path / "resume.sqlite"
    (first,) = run(fake_llm, data, [(record, "medium")], cache)
    n = len(fake_llm.requests)
    assert n == first.trajectory.turns  # type: ignore[union-attr]  # one request per turn
    (again,) = run(fake_llm, data, [(record, "medium")], cache)
    assert len(fake_llm.requests) == n  # every turn came from the cache
    assert again.trajectory == first.trajectory and again.usage.cached


PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}  # a pipeline price: every answer priced


def test_transport_failure_fails_the_prediction(fake_llm: FakeLLM, data: Dataset, tmp_path: Path) -> None:
    record = _record(data)
    first = Reply(
        tool_calls=[{"id": "a", "name": record.gt[0].call.name, "arguments": record.gt[0].call.arguments}]
    )
    broken = Reply(status=400, body=json.dumps({"error": {"message": "injected", "type": "fake_error"}}))
    fake_llm.set_responder(
        lambda req: first if len(req["messages"]) == 2 else broken
    )  # faults come first: turn 2 fails
    (pred,) = run(fake_llm, data, [(record, "easy")], tmp_path / "f.sqlite", max_retries=0, **PRICE)
    assert pred.calls is None and pred.trajectory is None
    assert pred.error is not None and "at turn 2" in pred.error
    # the first turn's cost stays on the row; a refused request (400) was not computed: the cost is known
    assert pred.usage.cost_usd > 0 and pred.usage.cost_known


def test_an_episode_whose_call_may_have_been_billed_unseen_has_an_unknown_cost(
    fake_llm: FakeLLM, data: Dataset, tmp_path: Path
) -> None:
    """Turn 2 comes back empty: the server computed an answer, which may have been billed, but its usage is
    not kept, so the failed prediction's cost is not known (null in the predictions file)."""
    record = _record(data)
    first = Reply(
        tool_calls=[{"id": "a", "name": record.gt[0].call.name, "arguments": record.gt[0].call.arguments}]
    )
    fake_llm.set_responder(lambda req: first if len(req["messages"]) == 2 else "")
    (pred,) = run(fake_llm, data, [(record, "easy")], tmp_path / "f.sqlite", max_retries=0, **PRICE)
    assert pred.error is not None and "empty_response" in pred.error and "at turn 2" in pred.error
    assert pred.usage.cost_usd > 0 and pred.usage.cost_known is False  # the first turn's, a lower bound


def test_registry_generation_key() -> None:
    gen = make_generator(ModelSettings(model="sim/agent-correct", generation="interactive"), None)  # type: ignore[arg-type]
    assert gen.name == "sim/agent-correct"
    with pytest.raises(ModelResolutionError, match="generation: interactive"):
        make_generator(ModelSettings(model="sim/agent-correct"), None)  # type: ignore[arg-type]
    with pytest.raises(ModelResolutionError, match="unknown simulated agent"):
        make_generator(ModelSettings(model="sim/weak", generation="interactive"), None)  # type: ignore[arg-type]
    assert set(agent_profiles()) >= {
        "agent-correct", "agent-wrong-entity", "agent-stops-early", "agent-retries",
        "agent-repeats-write", "agent-hallucinates-id", "agent-mixed",
    }  # fmt: skip


def test_episode_loop_with_in_process_policy(data: Dataset) -> None:
    """run_episode drives any Policy; here one that answers at once (zero steps, one turn)."""
    from agentjudge.dataset.world import environment_for
    from agentjudge.generators.interactive import Turn

    record = _record(data)

    async def policy(messages: list[dict[str, Any]]) -> Turn:
        return Turn("Nothing to do.")

    traj, usage = asyncio.run(run_episode(environment_for(record), [], policy, 5, True))
    assert traj.steps == [] and traj.turns == 1 and traj.stop_reason == "answered"
    assert outcome(record, [])[0] is False  # nothing done: the GT changes the state


def test_a_rejected_call_leaves_the_state_unchanged(data: Dataset) -> None:
    """A create whose referenced entity does not exist must not consume an id: otherwise an agent that
    recovers from the error gets other ids than the GT and can never match its end state."""
    from agentjudge.dataset.env import ToolError
    from agentjudge.dataset.world import environment_for, load_domain
    from agentjudge.types import ToolCall

    checked = 0
    for record in data.records:
        dom = load_domain(record.domain)
        ops = {t.name: t for t in dom.tools}
        for step in record.gt:
            spec = ops[step.call.name]
            if spec.op != "create":
                continue
            refs = [
                f
                for f, fs in dom.entities[spec.entity].fields.items()
                if fs.gen == "ref" and f in step.call.arguments
            ]
            if not refs:
                continue
            env = environment_for(record)
            assert env is not None
            before = env.snapshot()
            value = step.call.arguments[refs[0]]
            missing = value[:-1] + ("1" if value[-1] == "0" else "0")
            with pytest.raises(ToolError, match="no "):
                env.execute(
                    ToolCall(name=step.call.name, arguments={**step.call.arguments, refs[0]: missing})
                )
            assert env.snapshot() == before
            checked += 1
    assert checked > 0
