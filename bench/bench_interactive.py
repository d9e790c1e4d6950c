"""The interactive path end to end, offline (issue 14): prints the figures of the closing note.

1. The loopback scripted CORRECT agent on every record of the mini split (all three difficulties): a model
   behind the real HTTP stack (tests/fakeserver.py, litellm, the episode loop) that reads the tool messages it
   is sent and follows the GT plan; state_match must be true everywhere -- any record where it is not is a
   dataset defect, listed with the agent's own account of what it could not determine.
2. The offline interactive grid: pipelines/interactive.yaml (simulated agents x baseline judges) plus a
   scripted loopback judge (an LLM judge through HTTP whose answers are scripted: it reads the episode in
   its prompt and calls the outcome failed when a tool error was never recovered, a call was sent twice in a
   row, or the episode did not end with a message). Prints state_match per profile and difficulty and the
   RQ7 tables; writes the run folder and its report.

    python bench/bench_interactive.py [--out runs/bench-interactive] [--trials 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from fakeserver import TEST_KEY, TEST_KEY_ENV, FakeLLM, Reply  # noqa: E402

from agentjudge.generators.agent_sim import AgentProfile, AgentRates, next_turn  # noqa: E402
from agentjudge.generators.interactive import make_interactive_llm_generator  # noqa: E402
from agentjudge.judges.trajectory import TAG_TRAJECTORY  # noqa: E402
from agentjudge.models.cache import CallCache  # noqa: E402
from agentjudge.models.client import ModelClient  # noqa: E402
from agentjudge.rundir.records import read_records  # noqa: E402
from agentjudge.runner.work import Dataset  # noqa: E402
from agentjudge.scoring.scorer import score_prediction  # noqa: E402
from agentjudge.types import DIFFICULTIES  # noqa: E402

MINI = REPO / "data" / "mini" / "records.jsonl"
CORRECT = AgentProfile(
    description="correct",
    rates=dict.fromkeys(DIFFICULTIES, AgentRates(**dict.fromkeys(AgentRates.model_fields, 0.0))),
)


def correct_agent_on_mini(server: FakeLLM, cache: Path) -> None:
    data = Dataset(read_records(MINI))
    by_query = {r.queries[d]: (r, d) for r in data.records for d in DIFFICULTIES}

    def respond(request: dict[str, Any]) -> Reply:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        record, difficulty = by_query[user]
        calls, text, _ = next_turn(record, difficulty, CORRECT, 0, request["messages"])
        if calls is None:
            return Reply(text=text)
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        return Reply(
            tool_calls=[
                {"id": f"c{turn}_{k}", "name": c.name, "arguments": c.arguments} for k, c in enumerate(calls)
            ]
        )

    server.set_responder(respond)
    settings = server.settings(generation="interactive", concurrency=8)
    gen = make_interactive_llm_generator(settings, ModelClient(cache=CallCache(cache))).bind(data.by_base)
    tasks = [(r, d) for r in data.records for d in DIFFICULTIES]

    async def go() -> list[Any]:
        return await asyncio.gather(*(gen(data.task(r, d), 0) for r, d in tasks))

    t0 = time.perf_counter()
    preds = asyncio.run(go())
    rows = []
    for (record, difficulty), pred in zip(tasks, preds, strict=True):
        score = score_prediction(record, pred, "strict") if pred.calls is not None else None
        rows.append(
            {
                "record_id": record.record_id(difficulty),
                "difficulty": difficulty,
                "state_match": None if score is None else score.state_match,
                "turns": pred.trajectory.turns if pred.trajectory else None,
                "answer": pred.raw_output or pred.error,
            }
        )
    frame = pd.DataFrame(rows)
    print(f"1. loopback scripted correct agent, mini split: {len(frame)} episodes, "
          f"{len(server.requests)} HTTP requests, {time.perf_counter() - t0:.1f} s")  # fmt: skip
    print(frame.groupby("difficulty")["state_match"].agg(["sum", "count"]).to_string())
    bad = frame[frame["state_match"] != True]  # noqa: E712 - None counts as not matched
    print("records where state_match is not true:", "none" if bad.empty else "")
    for r in bad.itertuples(index=False):
        print(f"  {r.record_id}: {r.answer}")
    server.reset()


def scripted_judge(request: dict[str, Any]) -> Reply:
    user = request["messages"][-1]["content"]
    body = re.search(rf"<{TAG_TRAJECTORY}>\n(.*)\n</{TAG_TRAJECTORY}>", user, re.DOTALL)
    four = '"tool": 1.0, "param": 1.0, "seq": 1.0'
    if body is None:
        return Reply(text=f'{{{four}, "cov": 1.0}}')
    episode = json.loads(body.group(1))
    calls = episode["calls"]
    unrecovered = any(
        "error" in c and not any("output" in d and d["name"] == c["name"] for d in calls[i + 1 :])
        for i, c in enumerate(calls)
    )
    pairs = [(c["name"], c["arguments"]) for c in calls]
    repeated = any(pairs[i] == pairs[i - 1] for i in range(1, len(pairs)))
    failed = unrecovered or repeated or not episode["ended"].startswith("the agent ended with a message")
    return Reply(text=f'{{{four}, "cov": {0.5 if failed else 1.0}, "outcome": {0.0 if failed else 1.0}}}')


def grid(server: FakeLLM, out: Path, trials: int) -> None:
    server.set_responder(scripted_judge)
    pipe = yaml.safe_load((REPO / "pipelines" / "interactive.yaml").read_text(encoding="utf-8"))
    pipe["dataset"] = str(MINI)
    pipe["generator_trials"] = trials
    judge = server.settings(name="loopback/scripted-judge", concurrency=16).model_dump(mode="json")
    pipe["judges"] = [*pipe["judges"], judge]
    pipe["cache"] = str(out / "cache.sqlite")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "pipeline.yaml"
    path.write_text(yaml.safe_dump(pipe, sort_keys=False), encoding="utf-8")
    from agentjudge.commands.report import report_cli
    from agentjudge.commands.run import run_cli

    t0 = time.perf_counter()
    code = run_cli(path, out / "run")
    took = time.perf_counter() - t0
    print(f"2. interactive grid: exit {code}, {took:.1f} s, {len(server.requests)} judge requests")
    assert report_cli(out / "run", resamples=1000, seed=0) == 0
    tables = out / "run" / "report" / "tables"
    sm = pd.read_csv(tables / "outcome_state_match.csv")
    print("state_match rate per simulated profile (rows) and difficulty (columns), all generator trials:")
    print(
        sm.pivot(index="generator", columns="difficulty", values="state_match_rate")[
            list(DIFFICULTIES)
        ].round(3)
    )
    judges = pd.read_csv(tables / "outcome_judges.csv")
    cols = ["condition", "judge", "n", "n_missing", "accuracy", "accuracy_lo", "accuracy_hi", "kappa", "auc"]
    print(judges[cols].round(3).to_string(index=False))
    for name in ("outcome_vs_structural", "outcome_gt_gap", "outcome_predictors", "outcome_passk"):
        if (tables / f"{name}.csv").exists():
            print(f"{name}:")
            print(pd.read_csv(tables / f"{name}.csv").round(3).to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-interactive")
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()
    os.environ[TEST_KEY_ENV] = TEST_KEY
    server = FakeLLM().start()
    try:
        correct_agent_on_mini(server, args.out / "agent-cache.sqlite")
        grid(server, args.out, args.trials)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
