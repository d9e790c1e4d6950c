"""``baseline/gt-rule``: a rule judge that READS the GT it is shown, like an LLM judge would.

Why it exists: the constant and no-GT rule baselines ignore the condition, so an offline run shows no GT
gain and no anchoring. This judge diffs the calls against whatever GT the prompt carries — the true one
(with_gt) or another record's (swapped_gt) — and falls back to the no-GT rules when there is none. It is
the simplest judge that can be anchored by a wrong GT, so the quickstart exercises RQ3's anchoring test
with a real effect, not an invented one. It is a baseline, labelled as such, never a model.

Three-level mapping per metric (structural, as the judges' rubric; values are not judged):
- tool: multiset diff of tool names; 1 none missing or extra, 0 nothing shared or diff ≥ |GT|, else 0.5
- param: each GT call paired with the first unused call of its tool; 1 all pairs have its exact key set,
  0 no pair or more than half differ, else 0.5
- seq: the paired calls must respect the GT's dependency edges; 1 none violated, 0.5 one, 0 more (or no pair)
- cov: share of GT calls paired; 1 all, 0.5 at least half, else 0

The judge itself (``GTRuleJudge``, with the no-GT fallback) is in ``baselines.py`` beside the other baselines;
this module is only the diff, so it imports nothing of theirs.
"""

from __future__ import annotations

from collections import Counter

from agentjudge.types import GTStep, Metric, ToolCall


def gt_diff_verdicts(gt: list[GTStep], calls: list[ToolCall]) -> tuple[dict[Metric, float], dict[str, str]]:
    expected = Counter(step.call.name for step in gt)
    got = Counter(c.name for c in calls)
    missing = sum((expected - got).values())
    extra = sum((got - expected).values())
    shared = sum((expected & got).values())
    n = len(gt)
    tool = 1.0 if missing == extra == 0 else 0.0 if shared == 0 or missing + extra >= n else 0.5

    used: set[int] = set()
    position: dict[int, int] = {}  # GT index -> index of its paired call
    for i, step in enumerate(gt):
        for j, call in enumerate(calls):
            if j not in used and call.name == step.call.name:
                used.add(j)
                position[i] = j
                break
    pairs = len(position)
    wrong_keys = sum(1 for i, j in position.items() if set(calls[j].arguments) != set(gt[i].call.arguments))
    param = 0.0 if pairs == 0 or wrong_keys > pairs / 2 else 1.0 if wrong_keys == 0 else 0.5

    edges = [(u, v) for v, step in enumerate(gt) for u in step.depends_on]
    violated = sum(1 for u, v in edges if u in position and v in position and position[u] > position[v])
    seq = 0.0 if pairs == 0 else 1.0 if violated == 0 else 0.5 if violated == 1 else 0.0

    share = pairs / n if n else 1.0
    cov = 1.0 if share == 1.0 else 0.5 if share >= 0.5 else 0.0
    verdicts: dict[Metric, float] = {"tool": tool, "param": param, "seq": seq, "cov": cov}
    rationales = {
        "tool": f"vs the GT shown: {missing} tool call(s) missing, {extra} extra",
        "param": f"{wrong_keys} of {pairs} paired call(s) differ from the GT's key set",
        "seq": f"{violated} of {len(edges)} GT dependency edge(s) violated by the call order",
        "cov": f"{pairs} of {n} GT call(s) present",
        "overall": "gt-rule baseline: a structural diff against the GT in the prompt (anchors on it)",
    }
    return verdicts, rationales
