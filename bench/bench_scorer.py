"""Scorer throughput on a grid-sized workload: 321,648 (record, prediction) pairs, the published grid size.

Target (strict mode, one core, no state_match): >= 50,000 pairs/s. The pairs are synthetic records of 2-5
GT calls (8-19 tools, the six topologies) with simulated predictions of every profile and difficulty, reused
cyclically; only the scoring is timed. Prints the median of 3 runs per mode, wall clock and CPU time (the
CPU figure is the one-core cost when other processes share the machine). state_match needs executable
environments: it is timed on records of the dataset builder when it is importable, else reported skipped.

    python bench/bench_scorer.py [--pairs 321648] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from agentjudge.generators.simulated import apply_profile, load_profiles, stable_seed
from agentjudge.scoring.scorer import prepare, score_many, score_prediction, state_match
from agentjudge.types import DIFFICULTIES, TOPOLOGIES, GTStep, Prediction, Record, ToolCall, ToolSchema

PROPS: dict[str, Any] = {
    "id": {"type": "string"},
    "count": {"type": "integer"},
    "amount": {"type": "number"},
    "status": {"type": "string", "enum": ["open", "closed", "pending"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "note": {"type": "string"},
}


def synthetic_record(i: int) -> Record:
    """A record of 2-5 calls whose dependency shape follows its topology (no executable environment)."""
    rng = random.Random(i)
    topology = TOPOLOGIES[i % len(TOPOLOGIES)]
    n = rng.randint(2, 5) if topology in ("linear", "optional_enrichment") else rng.randint(3, 5)
    tools = [f"tool_{j}" for j in range(rng.randint(8, 19))]
    deps: list[list[int]]
    if topology == "loop_like":
        names = [tools[0]] + [tools[1]] * (n - 1)
        deps = [[]] + [[0]] * (n - 1)
    elif topology == "fan_out":
        names, deps = tools[:n], [[]] + [[0]] * (n - 1)
    elif topology == "fan_in":
        names, deps = tools[:n], [[]] * (n - 1) + [list(range(n - 1))]
    elif topology == "diamond":
        names, deps = tools[:n], [[]] + [[0]] * (n - 2) + [list(range(1, n - 1))]
    else:
        names, deps = tools[:n], [[]] + [[k - 1] for k in range(1, n)]
    steps = []
    for k, (name, dep) in enumerate(zip(names, deps, strict=True)):
        args: dict[str, Any] = {"id": f"ID-{i}-{k}", "count": k + 1, "status": rng.choice(["open", "closed"])}
        if rng.random() < 0.4:
            args["tags"] = ["a", "b"]
        if rng.random() < 0.3:
            args["amount"] = round(rng.uniform(1, 500), 2)
        steps.append(GTStep(call=ToolCall(name=name, arguments=args), output=None, depends_on=dep))
    params = {"type": "object", "properties": PROPS, "required": ["id"]}
    schemas = [ToolSchema(name=t, description=t, parameters=params) for t in tools]
    return Record(
        id=f"bench-{i:05d}", domain="bench", scenario="", topology=topology,
        queries={d: "q" for d in DIFFICULTIES}, system_prompt="", tools=schemas, gt=steps,
    )  # fmt: skip


Pair = tuple[Record, Any, list[tuple[str, dict[str, Any]]]]


def build_pairs(n_pairs: int, n_records: int = 600) -> list[Pair]:
    """(record, prepared record, plain calls) triples: a pool of distinct predictions reused cyclically."""
    profiles = load_profiles()
    records = [synthetic_record(i) for i in range(n_records)]
    pool = []
    for k, r in enumerate(records):
        prep = prepare(r)
        for name, prof in profiles.items():
            d = DIFFICULTIES[k % 3]
            calls = apply_profile(r, d, prof, random.Random(stable_seed(r.id, name, d)))
            pool.append((r, prep, [(c.name, c.arguments) for c in calls]))
    return [pool[i % len(pool)] for i in range(n_pairs)]


def time_mode(pairs: list[Pair], mode: str, runs: int) -> tuple[list[float], list[float]]:
    items = [(prep, calls) for _, prep, calls in pairs]
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        score_many(items, mode)  # type: ignore[arg-type]
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def bench_state_match(n: int = 200) -> None:
    try:
        from agentjudge.dataset.scenario import build_scenario
    except Exception as exc:  # the builder is optional for this bench
        print(f"state_match: skipped (dataset builder not importable: {exc.__class__.__name__}: {exc})")
        return
    profile = load_profiles()["mid"]
    records = []
    for i, topo in enumerate(TOPOLOGIES * 3):
        try:
            records.append(build_scenario("itsm", topo, 7, i)[0])
        except Exception as exc:
            print(f"state_match: build_scenario(itsm, {topo}) failed: {exc.__class__.__name__}: {exc}")
    if not records:
        print("state_match: skipped (no record could be built)")
        return
    preds = []
    for k in range(n):
        r = records[k % len(records)]
        calls = apply_profile(r, "hard", profile, random.Random(stable_seed(r.id, k)))
        preds.append((r, calls))
    c0 = time.process_time()
    results = [state_match(r, calls) for r, calls in preds]
    dt = time.process_time() - c0
    known = [x for x in results if x is not None]
    print(f"state_match, GT replayed per pair: {n} pairs in {dt:.3f}s CPU = {1e3 * dt / n:.2f} ms/pair "
          f"({len(known)} with an environment, {sum(known)} matching)")  # fmt: skip
    prepared = {r.id: prepare(r) for r in records}
    c0 = time.process_time()
    cached = [state_match(r, calls, prepared=prepared[r.id]) for r, calls in preds]
    dt = time.process_time() - c0
    assert cached == results
    print(f"state_match, GT end state cached per record: {1e3 * dt / n:.2f} ms/pair CPU")


def bench_pydantic_path(pairs: list[Pair], n: int = 20_000) -> None:
    """The convenience path (a Prediction in, a pydantic Score out) for comparison."""
    preds = []
    for r, prep, calls in pairs[:n]:
        p = Prediction(record_id=f"{r.id}:easy", base_id=r.id, difficulty="easy", generator="g",
                       calls=[ToolCall(name=a, arguments=b) for a, b in calls])  # fmt: skip
        preds.append((r, prep, p))
    c0 = time.process_time()
    for r, prep, p in preds:
        score_prediction(r, p, "strict", prepared=prep, with_state=False)
    dt = time.process_time() - c0
    print(f"score_prediction (Prediction in, Score out), strict: {n / dt:,.0f} pairs/s CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=321_648)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    pairs = build_pairs(args.pairs)
    print(f"built {len(pairs):,} pairs in {time.perf_counter() - t0:.1f}s")
    n = len(pairs)
    for mode in ("strict", "paper"):
        wall, cpu = time_mode(pairs, mode, args.runs)
        w, c = statistics.median(wall), statistics.median(cpu)
        print(f"{mode}: median of {args.runs}: {n / c:,.0f} pairs/s CPU ({c:.2f}s CPU for the whole grid); "
              f"{n / w:,.0f} pairs/s wall ({w:.2f}s); best run {n / min(cpu):,.0f} pairs/s CPU; "
              f"wall runs {', '.join(f'{t:.2f}' for t in wall)}s")  # fmt: skip
    bench_pydantic_path(pairs)
    bench_state_match()


if __name__ == "__main__":
    main()
