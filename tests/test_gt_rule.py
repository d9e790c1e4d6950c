"""baseline/gt-rule: hand-computed diffs against the GT it is shown (true or swapped)."""

from __future__ import annotations

import asyncio

from agentjudge.judges.baselines import make_baseline_judge
from agentjudge.judges.gt_rule import gt_diff_verdicts
from agentjudge.types import GTStep, JudgeRequest, ModelSettings, Task, ToolCall

A = ToolCall(name="find_user", arguments={"email": "a@x.io"})
B = ToolCall(name="get_orders", arguments={"user_id": "U1"})
C = ToolCall(name="get_tickets", arguments={"user_id": "U1"})
D = ToolCall(name="notify", arguments={"order_ids": ["O1"], "ticket_ids": ["T1"]})
DIAMOND = [
    GTStep(call=A, output={"user_id": "U1"}),
    GTStep(call=B, output=["O1"], depends_on=[0]),
    GTStep(call=C, output=["T1"], depends_on=[0]),
    GTStep(call=D, output="N1", depends_on=[1, 2]),
]


def test_exact_copy_and_valid_branch_swap_score_one() -> None:
    assert gt_diff_verdicts(DIAMOND, [A, B, C, D])[0] == {"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0}
    assert gt_diff_verdicts(DIAMOND, [A, C, B, D])[0]["seq"] == 1.0  # branches are independent


def test_hand_computed_defects() -> None:
    # D before C violates edge 2->3 only: seq 0.5; all present: tool/cov 1
    assert gt_diff_verdicts(DIAMOND, [A, B, D, C])[0] == {"tool": 1.0, "param": 1.0, "seq": 0.5, "cov": 1.0}
    # D before both branches violates 1->3 and 2->3: seq 0
    assert gt_diff_verdicts(DIAMOND, [A, D, B, C])[0]["seq"] == 0.0
    # reversed: edges 0->1, 0->2, 1->3, 2->3 all violated -> seq 0
    assert gt_diff_verdicts(DIAMOND, [D, C, B, A])[0]["seq"] == 0.0
    # drop C: 1 missing of 4 -> tool 0.5, cov 3/4 -> 0.5
    v, _ = gt_diff_verdicts(DIAMOND, [A, B, D])
    assert (v["tool"], v["cov"]) == (0.5, 0.5)
    # one of four paired calls with a wrong key set -> param 0.5; three of four -> 0
    bad_b = ToolCall(name="get_orders", arguments={"customer": "U1"})
    assert gt_diff_verdicts(DIAMOND, [A, bad_b, C, D])[0]["param"] == 0.5
    bad = [ToolCall(name=c.name, arguments={"x": 1}) for c in (A, B, C)] + [D]
    assert gt_diff_verdicts(DIAMOND, bad)[0]["param"] == 0.0
    # nothing shared
    assert gt_diff_verdicts(DIAMOND, [ToolCall(name="other")])[0] == {
        "tool": 0.0,
        "param": 0.0,
        "seq": 0.0,
        "cov": 0.0,
    }


def test_judge_anchors_on_the_gt_it_is_shown() -> None:
    judge = make_baseline_judge(ModelSettings(model="baseline/gt-rule"))
    task = Task(record_id="r:easy", base_id="r", difficulty="easy", query="q", system_prompt="s", tools=[])
    other = [GTStep(call=ToolCall(name="cancel_order", arguments={"order_id": "O9"}), output=None)]
    true = asyncio.run(judge(JudgeRequest(task=task, calls=[A, B, C, D], gt=DIAMOND, condition="with_gt")))
    swapped = asyncio.run(
        judge(JudgeRequest(task=task, calls=[A, B, C, D], gt=other, condition="swapped_gt"))
    )
    assert true.verdicts == {"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0}
    assert swapped.verdicts["tool"] == 0.0 and swapped.verdicts["cov"] == 0.0
    assert true.parse_ok and swapped.parse_ok
