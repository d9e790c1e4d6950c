"""The `paper` prompt family (SPEC §7a): shape, slots, condition texts, C2, A5, and the pipeline switch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_runner import read, write_pipeline
from test_templates import TAG_CALLS, TAG_QUERY, TAG_REFERENCE, TAG_TOOLS, make_request

from agentjudge.commands.run import run_cli
from agentjudge.judges.prompts import build_messages, load_template, paper_prompt
from agentjudge.rundir.records import gt_turns
from agentjudge.runner.pipeline import config_hash, hashed_config, load_pipeline

OUTPUT_KEYS = (
    "tool_selection_accuracy",
    "parameter_structure_accuracy",
    "sequence_accuracy",
    "query_coverage_accuracy",
    "overall_assessment",
)
RULE_1 = load_template("paper/default_1.0.md")
RULE_05 = load_template("paper/default_0.5.md")


def _blocks(text: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)


def instruction_words(prompt: str) -> int:
    """Words of a prompt outside the data blocks (the instruction a judge reads)."""
    for tag in (TAG_QUERY, TAG_TOOLS, TAG_CALLS, TAG_REFERENCE):
        prompt = re.sub(rf"<{tag}>\n.*?\n</{tag}>", " ", prompt, flags=re.DOTALL)
    return len(prompt.split())


@pytest.mark.parametrize("condition", ["with_gt", "without_gt", "swapped_gt"])
@pytest.mark.parametrize("fmt", ["json", "freeform"])
def test_one_user_message_slots_in_published_order(condition: str, fmt: str) -> None:
    messages = build_messages(make_request(condition, prompt_format=fmt), "paper")
    assert [m["role"] for m in messages] == ["user"]  # no system message
    text = messages[0]["content"]
    tags = [TAG_QUERY, TAG_TOOLS, TAG_CALLS] + ([] if condition == "without_gt" else [TAG_REFERENCE])
    positions = [text.index(f"<{tag}>") for tag in tags]
    assert positions == sorted(positions)  # query, tools, generated calls, expected
    for tag in tags:  # the injection in the query cannot open or close a block
        assert len(_blocks(text, tag)) == 1
    if condition == "without_gt":
        assert f"<{TAG_REFERENCE}>" not in text
    for key in OUTPUT_KEYS:
        assert f'"{key}"' in text
    assert '"accuracy": <float>' in text


def test_expected_slot_is_the_whole_expected_responses_list() -> None:
    request = make_request("with_gt")
    [slot] = _blocks(paper_prompt(request), TAG_REFERENCE)
    shown = json.loads(slot)
    assert shown == gt_turns(request.gt or [])
    # assistant turns with their calls (arguments as objects), then the tool turns with the outputs
    assert [t["role"] for t in shown] == ["assistant", "tool", "assistant", "tool"]
    assert shown[0]["tool_calls"][0]["function"] == {"name": "get_ticket", "arguments": {"ticket_id": "T-1"}}
    assert json.loads(shown[1]["content"]) == {"assignee_id": "u7"}
    # a record read from a published file shows its own list, assistant text included
    verbatim = [*shown, {"role": "assistant", "content": "Done: the assignee was told."}]
    request = request.model_copy(update={"gt_responses": verbatim})
    [slot] = _blocks(paper_prompt(request), TAG_REFERENCE)
    assert json.loads(slot) == verbatim


def test_condition_framing_and_rubrics() -> None:
    with_gt = paper_prompt(make_request("with_gt"))
    without = paper_prompt(make_request("without_gt"))
    assert "as the ground truth" in with_gt and "source of truth" not in with_gt
    assert "your only\nsource of truth" in without
    for text in (with_gt, without):
        assert "strict evaluator" in text and "single shot" in text and "never saw the output" in text
        assert "do not judge the values of parameters" in text
        assert "do not penalise placeholder or symbolic values" in text
        assert "optional parameter" in text and "Parameter structure is the most important" in text
    # the no-GT rubric is the more permissive one
    assert "plausibly helps" in without and "plausibly" not in with_gt
    assert "clearly invalid" in without and "clearly invalid" not in with_gt
    assert "gather or analyse information come before" in without


@pytest.mark.parametrize("condition", ["with_gt", "without_gt"])
def test_default_rule_in_both_places_and_c2_replaces_both(condition: str) -> None:
    default = paper_prompt(make_request(condition))
    assert default.count(RULE_1) == 2 and RULE_05 not in default
    assert default.index(RULE_1) < default.index(f"<{TAG_QUERY}>") < default.rindex(RULE_1)
    c2 = paper_prompt(make_request(condition, default_mode="0.5"))
    assert c2.count(RULE_05) == 2 and RULE_1 not in c2
    assert c2.replace(RULE_05, RULE_1) == default  # nothing else changes


def test_swapped_gt_reads_exactly_like_with_gt() -> None:
    same = paper_prompt(make_request("with_gt")), paper_prompt(make_request("swapped_gt"))
    assert same[0] == same[1]
    other = paper_prompt(make_request("swapped_gt", gt_id="T-999"))
    outside = [
        re.sub(rf"<{TAG_REFERENCE}>.*</{TAG_REFERENCE}>", "", t, flags=re.DOTALL) for t in (same[0], other)
    ]
    assert outside[0] == outside[1] and other != same[0]  # only the expected slot's content differs


def test_a5_is_short_rubric_free_and_continuous() -> None:
    for condition in ("with_gt", "without_gt"):
        text = paper_prompt(make_request(condition, prompt_format="freeform"))
        words = instruction_words(text)
        assert 75 <= words <= 105, words  # published: about 90 words
        assert RULE_1 not in text and "1.0:" not in text and "most important" not in text
        assert "between 0 and 1" in text
        assert (f"<{TAG_REFERENCE}>" in text) == (condition == "with_gt")  # the expected calls are shown
    json_words = instruction_words(paper_prompt(make_request("with_gt")))
    assert json_words > 3 * instruction_words(paper_prompt(make_request("with_gt", prompt_format="freeform")))


def test_cot_adds_one_sentence_before_the_output_format() -> None:
    off = paper_prompt(make_request("with_gt"))
    on = paper_prompt(make_request("with_gt", cot=True))
    sentence = load_template("paper/cot_on.md")
    assert sentence not in off and on.count(sentence) == 1
    assert on.index(sentence) < on.index('"tool_selection_accuracy"')


def test_agentjudge_family_is_unchanged_by_default() -> None:
    request = make_request("with_gt")
    assert build_messages(request) == build_messages(request, "agentjudge")
    assert [m["role"] for m in build_messages(request)] == ["system", "user"]
    with pytest.raises(ValueError, match="unknown prompt family"):
        build_messages(request, "other")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the pipeline key, end to end


def test_prompt_family_is_hashed_and_defaults_to_ours(tmp_path: Path) -> None:
    ours = load_pipeline(write_pipeline(tmp_path / "a"))
    assert ours.prompt_family == "agentjudge" and "prompt_family" not in hashed_config(ours)
    paper = load_pipeline(write_pipeline(tmp_path / "b", prompt_family="paper"))
    assert hashed_config(paper)["prompt_family"] == "paper"
    ours_b = load_pipeline(write_pipeline(tmp_path / "b"))
    assert config_hash(paper) != config_hash(ours_b)
    with pytest.raises(Exception, match="prompt_family"):
        load_pipeline(write_pipeline(tmp_path / "c", prompt_family="published"))


PUBLISHED_ANSWER = json.dumps(
    {
        "tool_selection_accuracy": {"accuracy": 1.0, "justification": "Right tools."},
        "parameter_structure_accuracy": {"accuracy": 0.5, "justification": "One extra key."},
        "sequence_accuracy": {"accuracy": 1.0, "justification": "Lookup first."},
        "query_coverage_accuracy": {"accuracy": 1.0, "justification": "All done."},
        "overall_assessment": "Good.",
    }
)


def test_paper_family_run_sends_one_user_message_and_reads_published_answers(
    tmp_path: Path, fake_llm: Any
) -> None:
    fake_llm.set_responder(lambda req: PUBLISHED_ANSWER)
    judge = fake_llm.settings(model="openai/model-a", name="judge-a").model_dump(exclude_defaults=True)
    pipeline = write_pipeline(
        tmp_path,
        generators=["sim/perfect"],
        judges=[judge],
        difficulties=["easy"],
        conditions=["with_gt", "without_gt"],
        prompt_family="paper",
    )
    assert run_cli(pipeline, tmp_path / "run") == 0
    assert fake_llm.requests and all(
        [m["role"] for m in r["messages"]] == ["user"] for r in fake_llm.requests
    )
    with_gt = [r for r in fake_llm.requests if f"<{TAG_REFERENCE}>" in r["messages"][0]["content"]]
    assert len(with_gt) == len(fake_llm.requests) // 2
    judgments = read(tmp_path / "run", "judgments")
    assert judgments.parse_ok.all()
    assert set(judgments[judgments.metric == "param"].verdict) == {0.5}
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["pipeline"]["prompt_family"] == "paper"
