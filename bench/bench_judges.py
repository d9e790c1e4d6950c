"""Per-call time of the offline baseline judges and of verdict parsing (prints medians of 5 runs).

Builds one record per (domain, topology) with seed 7, judges its GT calls at the three difficulties.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

from agentjudge.dataset.realiser import render_queries
from agentjudge.dataset.scenario import build_scenario
from agentjudge.dataset.world import list_domains
from agentjudge.judges.baselines import make_baseline_judge
from agentjudge.judges.parse import parse_verdicts
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, JudgeRequest, ModelSettings, PromptVariant, Task


def requests() -> list[JudgeRequest]:
    out = []
    for domain in list_domains():
        for topology in TOPOLOGIES:
            record, plan = build_scenario(domain, topology, 7, 0)
            queries = render_queries(plan, 7)
            for d in DIFFICULTIES:
                task = Task(
                    record_id=record.record_id(d),
                    base_id=record.id,
                    difficulty=d,
                    query=queries[d],
                    system_prompt=record.system_prompt,
                    tools=record.tools,
                )
                ref = {"strict": {"tool": 0.8, "param": 1.0, "seq": 0.4, "cov": 1.0}}
                out.append(
                    JudgeRequest(
                        task=task, calls=record.expected_calls, gt=None, condition="without_gt", reference=ref
                    )
                )
    return out


async def main() -> None:
    reqs = requests()
    for name in ("always-1", "rule", "ceiling"):
        judge = make_baseline_judge(ModelSettings(model=f"baseline/{name}"))
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for r in reqs:
                await judge(r)
            runs.append((time.perf_counter() - t0) / len(reqs) * 1e3)
        print(f"baseline/{name}: median {statistics.median(runs):.3f} ms/call ({len(reqs)} requests, 5 runs)")
    full = json.dumps({m: {"verdict": 1.0, "justification": "fine"} for m in ("tool", "param", "seq", "cov")})
    texts = {
        "json": full,
        "cot+fence": "Reasoning. " * 80 + f"\n```json\n{full}\n```",
        "freeform": "Tool selection: 0.8\nParameter structure: 1\nSequence accuracy: 0.5\nQuery coverage: 1",
    }
    for label, text in texts.items():
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(1000):
                parse_verdicts(text, PromptVariant())
            runs.append(time.perf_counter() - t0)
        print(f"parse {label}: median {statistics.median(runs):.3f} ms/call")


if __name__ == "__main__":
    asyncio.run(main())
