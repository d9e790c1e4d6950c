"""Baseline judges on hand-made cases: constants, the no-GT rule judge, the ceiling oracle."""

from __future__ import annotations

from typing import Any

import pytest

from agentjudge.judges.baselines import KNOWN_BASELINES, make_baseline_judge
from agentjudge.types import Judge, JudgeRequest, ModelSettings, PromptVariant, Task, ToolCall, ToolSchema

TOOLS = [
    ToolSchema(
        name="get_ticket",
        description="Fetch a support ticket with its assignee.",
        parameters={
            "type": "object",
            "properties": {"ticket_id": {"type": "string"}, "include_history": {"type": "boolean"}},
            "required": ["ticket_id"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {"assignee_id": {"type": "string"}, "status": {"type": "string"}},
        },
    ),
    ToolSchema(
        name="notify_user",
        description="Send a message to a user.",
        parameters={
            "type": "object",
            "properties": {"assignee_id": {"type": "string"}, "message": {"type": "string"}},
            "required": ["assignee_id", "message"],
        },
    ),
    ToolSchema(
        name="book_meeting_room",
        description="Reserve a conference room.",
        parameters={"type": "object", "properties": {"room": {"type": "string"}}, "required": ["room"]},
    ),
]
QUERY = "Look up ticket T-1042 and send its assignee a message saying the ticket is urgent."
GOOD = [
    ToolCall(name="get_ticket", arguments={"ticket_id": "T-1042"}),
    ToolCall(
        name="notify_user", arguments={"assignee_id": "<assignee from step 1>", "message": "ticket is urgent"}
    ),
]


def req(calls: list[ToolCall], **overrides: Any) -> JudgeRequest:
    task = Task(
        record_id="itsm-0009:easy",
        base_id="itsm-0009",
        difficulty="easy",
        query=QUERY,
        system_prompt="",
        tools=TOOLS,
    )
    values: dict[str, Any] = {"task": task, "calls": calls, "gt": None, "condition": "without_gt"}
    values.update(overrides)
    return JudgeRequest(**values)


def make(name: str) -> Judge:
    return make_baseline_judge(ModelSettings(model=f"baseline/{name}"))


@pytest.mark.parametrize(("name", "value"), [("always-1", 1.0), ("always-0.5", 0.5), ("always-0", 0.0)])
async def test_constants(name: str, value: float) -> None:
    judge = make(name)
    assert judge.name == f"baseline/{name}" and isinstance(judge, Judge)
    for calls in (GOOD, []):
        result = await judge(req(calls))
        assert result.verdicts == dict.fromkeys(("tool", "param", "seq", "cov"), value)
        assert result.parse_ok and result.error is None and "constant" in result.rationales["overall"]


async def test_display_name_is_used() -> None:
    judge = make_baseline_judge(ModelSettings(model="baseline/always-1", name="floor-1"))
    assert judge.name == "floor-1"


def test_unknown_baseline_lists_known() -> None:
    with pytest.raises(ValueError, match="baseline/always-1.*baseline/ceiling"):
        make("always-2")
    assert set(KNOWN_BASELINES) == {
        f"baseline/{n}" for n in ("always-1", "always-0.5", "always-0", "rule", "ceiling", "gt-rule")
    }


def test_the_pipeline_checks_light_list_is_the_registry() -> None:
    """``model_strings.BASELINE_NAMES`` (what a pipeline may name, known without importing the judges)
    names exactly the baselines the registry builds."""
    from agentjudge.registry.model_strings import BASELINE_NAMES

    assert sorted(f"baseline/{n}" for n in BASELINE_NAMES) == sorted(KNOWN_BASELINES)
    assert len(set(BASELINE_NAMES)) == len(BASELINE_NAMES)


# ---------------------------------------------------------------- rule judge


async def test_rule_good_plan_scores_top() -> None:
    result = await make("rule")(req(GOOD))
    assert result.verdicts == {"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0}, result.rationales
    assert result.parse_ok and set(result.rationales) == {"tool", "param", "seq", "cov", "overall"}


async def test_rule_ignores_gt_and_condition() -> None:
    judge = make("rule")
    a = await judge(req(GOOD))
    b = await judge(req(GOOD, condition="swapped_gt", gt=[]))
    assert a.verdicts == b.verdicts


async def test_rule_no_calls_is_zero() -> None:
    result = await make("rule")(req([]))
    assert result.verdicts == {"tool": 0.0, "param": 0.0, "seq": 0.0, "cov": 0.0}
    assert "no calls" in result.rationales["overall"]


async def test_rule_unknown_and_irrelevant_tools() -> None:
    calls = [*GOOD, ToolCall(name="book_meeting_room", arguments={"room": "A"})]
    result = await make("rule")(req(calls))
    assert result.verdicts["tool"] == 0.5 and "book_meeting_room" in result.rationales["tool"]
    hallucinated = [ToolCall(name="fetch_tix", arguments={}), ToolCall(name="ping", arguments={}), GOOD[0]]
    result = await make("rule")(req(hallucinated))
    assert result.verdicts["tool"] == 0.0 and "fetch_tix" in result.rationales["tool"]
    assert result.verdicts["param"] == 0.0  # unknown tools have no valid parameters


async def test_rule_param_missing_required_and_extra_keys() -> None:
    missing = [GOOD[0], ToolCall(name="notify_user", arguments={"message": "urgent"})]
    result = await make("rule")(req(missing))
    assert result.verdicts["param"] == 0.5 and "lacks required ['assignee_id']" in result.rationales["param"]
    all_missing = [ToolCall(name="get_ticket", arguments={}), ToolCall(name="notify_user", arguments={})]
    assert (await make("rule")(req(all_missing))).verdicts["param"] == 0.0
    extra = [ToolCall(name="get_ticket", arguments={"ticket_id": "T-1042", "priority": "high"}), GOOD[1]]
    result = await make("rule")(req(extra))
    assert result.verdicts["param"] == 0.5 and "priority" in result.rationales["param"]
    wrong_type = [
        ToolCall(name="get_ticket", arguments={"ticket_id": "T-1042", "include_history": "yes"}),
        GOOD[1],
    ]
    assert (await make("rule")(req(wrong_type))).verdicts["param"] == 0.5


async def test_rule_sequence_violation() -> None:
    reversed_calls = [
        ToolCall(
            name="notify_user", arguments={"assignee_id": "<from step 2>", "message": "ticket is urgent"}
        ),
        ToolCall(name="get_ticket", arguments={"ticket_id": "T-1042"}),
    ]
    result = await make("rule")(req(reversed_calls))
    assert result.verdicts["seq"] == 0.5 and "call 1 notify_user" in result.rationales["seq"]
    # no placeholder, but the key is only produced by the later get_ticket call
    keyed = [ToolCall(name="notify_user", arguments={"assignee_id": "u7", "message": "urgent"}), GOOD[0]]
    assert (await make("rule")(req(keyed))).verdicts["seq"] == 0.5


async def test_rule_coverage() -> None:
    only_lookup = [GOOD[0]]
    result = await make("rule")(req(only_lookup))
    assert result.verdicts["cov"] < 1.0
    unrelated = [ToolCall(name="book_meeting_room", arguments={"room": "B"})]
    result = await make("rule")(req(unrelated))
    assert result.verdicts["cov"] == 0.0
    assert "1042" in result.rationales["cov"]  # the ticket number from the query is never used


# ---------------------------------------------------------------- ceiling oracle

REFERENCE = {
    "strict": {"tool": 0.8, "param": 0.2, "seq": 0.75, "cov": 1.0},
    "paper": {"tool": 1.0, "param": 0.4, "seq": 0.5, "cov": 0.0},
}


async def test_ceiling_snaps_reference_per_mode() -> None:
    judge = make("ceiling")
    assert judge.needs_reference is True  # type: ignore[attr-defined]
    result = await judge(req(GOOD, reference=REFERENCE))
    assert result.verdicts == {"tool": 1.0, "param": 0.0, "seq": 1.0, "cov": 1.0}
    assert result.mode_verdicts == {
        "strict": {"tool": 1.0, "param": 0.0, "seq": 1.0, "cov": 1.0},
        "paper": {"tool": 1.0, "param": 0.5, "seq": 0.5, "cov": 0.0},
    }
    assert "oracle" in result.rationales["overall"]


async def test_ceiling_continuous_variant_keeps_reference() -> None:
    result = await make("ceiling")(
        req(GOOD, reference=REFERENCE, variant=PromptVariant(prompt_format="freeform"))
    )
    assert result.verdicts == REFERENCE["strict"]


async def test_ceiling_without_reference_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs JudgeRequest.reference"):
        await make("ceiling")(req(GOOD))
    with pytest.raises(ValueError, match="lacks the 'strict' mode"):
        await make("ceiling")(req(GOOD, reference={"paper": REFERENCE["paper"]}))


def test_only_ceiling_needs_reference() -> None:
    flags = {
        name: getattr(make(name[len("baseline/") :]), "needs_reference", False) for name in KNOWN_BASELINES
    }
    assert flags == {name: name == "baseline/ceiling" for name in KNOWN_BASELINES}


def test_rule_facts_kept_per_task_never_serve_another_task() -> None:
    """``rule_verdicts`` keeps a task's facts (tools, query words) by the task object; two tasks with the
    same tools but different queries, judged in turn, get what each gets with nothing kept."""
    from agentjudge.judges import baselines

    urgent = req(GOOD).task
    rooms = urgent.model_copy(update={"query": "Book the Everest meeting room for Friday at noon."})
    asked = [(t, calls) for t in (urgent, rooms, urgent, rooms) for calls in (GOOD, GOOD[:1])]
    kept = [baselines.rule_verdicts(t, calls) for t, calls in asked]
    fresh = []
    for t, calls in asked:
        baselines._FACTS.clear()
        fresh.append(baselines.rule_verdicts(t, calls))
    assert kept == fresh
    assert kept[0] != kept[2]  # the two queries are judged differently (coverage)


# sha256 of the rule checks' verdicts and rationales below, as the code before the rule checks' speed-ups
# (quick validity test, one pass for what calls produce, values tokenised one by one) gave them. A change
# meant to alter what the rule baseline says updates it, and says so in its commit. Re-pinned when the
# mini dataset was regenerated with issue 37's query realiser (twice: the second after the audit's wording
# fixes) and again with issue 51's domain rules (eleven times: the third for the moves a bulk change may
# make and the overdraft notice, which changed two mini records, the later ones for the context fixes and
# bulk moves of later readings, which changed five; the seventh for the per-domain review, which changed
# 35; the eighth and ninth for the next two readings' defects, which changed 3 and 9; the tenth for the
# second review of the context sentences, which changed 13; the eleventh for the last readings' defects,
# which changed 8): the code of 24cd2b4^ (before the speed-ups) gives this digest on the new data/mini, as
# it gave each previous one (03fbedc6…, 4a607c20…, 9310a32e…, 5ae02e4d…, 0ce98453…, c566b9a0…,
# 861ce101…, a90fc5b3…, ce5e6299…, 5693039a…, 09b0427c…, 348a9cd6…, 3b4a4eb0…) on the data/mini of its
# time.
MINI_RULE_VERDICTS = "3527ce23f6522ab2f4c5a3f31250bdc5a0d1349e85971b3e354339b0f8ea697e"


def test_the_rule_checks_say_what_they_said_on_the_mini_datasets_simulated_predictions() -> None:
    import hashlib
    import json
    from pathlib import Path

    from agentjudge.generators.simulated import make_simulated_generator
    from agentjudge.judges.baselines import rule_verdicts
    from agentjudge.rundir.records import read_records
    from agentjudge.runner.offline import drive
    from agentjudge.runner.work import Dataset

    records = read_records(Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl")
    data = Dataset(records)
    generators = [
        make_simulated_generator(ModelSettings(model=f"sim/{p}")).bind(data.by_base)
        for p in ("weak", "mid", "strong", "frontier", "perfect")
    ]
    said = [
        rule_verdicts(task, drive(generator(task, trial)).calls or [])
        for record in records
        for task in (data.task(record, d) for d in ("easy", "medium", "hard"))
        for generator in generators
        for trial in (0, 1)
    ]
    assert len(said) == 1_800
    assert len({json.dumps(v, sort_keys=True) for v, _ in said}) > 10  # verdicts vary: not a constant
    assert hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest() == MINI_RULE_VERDICTS
