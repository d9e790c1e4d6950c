"""A judge served by a fleet of loopback servers (``api_bases``): per-endpoint counts, optionally with one
server killed mid-run.

    python bench/bench_fleet.py --servers 3 --out runs/bench-fleet
    python bench/bench_fleet.py --servers 3 --kill-after 40 --out runs/bench-fleet-kill

Starts N scripted OpenAI-compatible servers on 127.0.0.1 (tests/fakeserver.py; real HTTP through litellm),
writes a pipeline over the mini split (``--limit`` base scenarios, all difficulties, three simulated
generators, one LLM judge whose ``api_bases`` lists the N servers, both GT conditions) and runs it with the
ordinary runner into a fresh folder and a fresh cache. ``--kill-after K`` kills the last server (connections
refused, requests it holds dropped unanswered) once it has answered K requests; ``--kill-all-after K`` kills
every server once they have answered K requests together (the remaining units fail, each with its error).

Prints the runner's own output (including "This run, per endpoint"), then per server the requests it
received and answered, the run summary's ok/failed for that endpoint (meta.json), the units done/failed,
and whether every unit was answered exactly once (answers sent by the servers + the judge's call-cache hits
= judge units done: two generators can make byte-identical calls, and the identical judge prompt is then
asked once and read from the cache by the other unit).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import yaml  # noqa: E402
from fakeserver import TEST_KEY, TEST_KEY_ENV, FakeLLM  # noqa: E402

from agentjudge.commands.run import run_cli  # noqa: E402
from agentjudge.rundir import RunFolder  # noqa: E402


def _verdict(_request: dict[str, object]) -> str:
    metrics = {m: {"verdict": 1.0, "justification": "ok"} for m in ("tool", "param", "seq", "cov")}
    return json.dumps(metrics | {"overall": "ok"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--kill-after", type=int, default=None, help="kill the last server after K answers")
    parser.add_argument("--kill-all-after", type=int, default=None, help="kill every server after K answers")
    parser.add_argument("--limit", type=int, default=20, help="base scenarios of the mini split")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per answer")
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    os.environ.setdefault(TEST_KEY_ENV, TEST_KEY)
    servers = [FakeLLM().start() for _ in range(args.servers)]
    for server in servers:
        server.set_responder(_verdict)
        server.latency = args.latency
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    pipeline = {
        "name": "bench-fleet",
        "dataset": str(REPO / "data" / "mini" / "records.jsonl"),
        "limit": args.limit,
        "generators": ["sim/weak", "sim/mid", "sim/perfect"],
        "judges": [
            {
                "model": "openai/fleet-model",
                "name": "fleet-judge",
                "api_bases": [s.base_url for s in servers],
                "api_key_env": TEST_KEY_ENV,
                "timeout_s": 5.0,
                "max_retries": 2,
                "concurrency": args.concurrency,
            }
        ],
        "conditions": ["with_gt", "without_gt"],
        "concurrency": args.concurrency,
        "cache": str(args.out / "cache.sqlite"),
    }
    path = args.out / "pipeline.yaml"
    path.write_text(yaml.safe_dump(pipeline, sort_keys=False), encoding="utf-8")

    victim = servers[-1]
    if args.kill_after is not None:

        def kill() -> None:
            while victim.answered < args.kill_after and not victim.dead:
                time.sleep(0.001)
            victim.kill()
            print(f"-- killed {victim.base_url} after {victim.answered} answers", flush=True)

        threading.Thread(target=kill, daemon=True).start()
    if args.kill_all_after is not None:

        def kill_all() -> None:
            while sum(s.answered for s in servers) < args.kill_all_after:
                time.sleep(0.001)
            for server in servers:
                server.kill()
            print(f"-- killed every server after {sum(s.answered for s in servers)} answers", flush=True)

        threading.Thread(target=kill_all, daemon=True).start()
    rundir = args.out / "run"
    started = time.perf_counter()
    code = run_cli(path, rundir)
    wall = time.perf_counter() - started
    for server in servers:
        if not server.dead:
            server.stop()

    folder = RunFolder.open(rundir)
    rows = folder.meta.last_invocation.per_model  # type: ignore[union-attr]
    judge_row = next(r for r in rows if r.model == "fleet-judge")
    endpoints = {url: count.model_dump() for url, count in (judge_row.endpoints or {}).items()}
    hits = int(judge_row.cache_hits or 0)
    units = Counter(folder.units(["status"], [("stage", "==", "judge")])["status"])
    print(f"\nexit code {code}, {wall:.1f} s wall clock; judge units {dict(units)}")
    print(f"{'server':<28} {'received':>8} {'answered':>8} {'summary ok':>10} {'summary failed':>14}")
    for server in servers:
        count = endpoints[server.base_url]
        print(
            f"{server.base_url:<28} {len(server.requests):>8} {server.answered:>8} {count['ok']:>10} "
            f"{count['failed']:>14}" + ("  (killed)" if server.dead else "")
        )
    answered = sum(s.answered for s in servers)
    alive = [s.answered for s in servers if not s.dead] if args.kill_after is not None else []
    errors = Counter(folder.units(["error"], [("status", "==", "failed")])["error"])
    for error, n in errors.most_common(3):
        print(f"{n} failed unit(s) with error: {str(error)[:300]}")
    print(
        f"answers sent {answered} + cache hits {hits} = judge units done {units['done']}: "
        f"{answered + hits == units['done']}"
    )
    if alive:
        print(f"after the kill, the survivors' answers: {alive}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
