"""Bench `agentjudge import agentjudgebench` and the report of the imported run at the released scale,
before and after, in one run.

A release of the paper's size is generated over the full split (``--data``, 3,808 base records): five
generators whose valid outputs per difficulty are the paper's own counts (``data/published/
agentjudgebench_eval_stats.csv``: 53,608 in all), six judges, each output judged with and without GT —
321,648 judged rows, 643,296 judgments — plus 0.5 % failed graph executions. The same rows are written in
two layouts:

- **released**: the downloaded dataset's layout (``README.md``; ``data/main/records.jsonl``, the records in
  the published layout; ``data/<config>/train.jsonl`` per generator with ``score_<metric>`` columns;
  ``data/judges/judge_<key>.jsonl`` with ``with_gt`` / ``without_gt`` objects of ``llm_score`` per metric);
- **per-judge**: the pipeline's rows in ``judge_<judge>.jsonl`` files (the layout the import read before it
  read the released one), with ``--records DATA``.

Then, each in a fresh process, in this order (``--repeats`` times over):

  before  the code of ``--before`` (default: main; extracted with ``git archive``) on the per-judge layout
  after   this checkout on the per-judge layout
  after   this checkout on the released layout (only ``--out``: the release's own records)

each step being ``agentjudge import agentjudgebench …`` then ``agentjudge report RUN``. Per process: wall
time; peak RSS of the process or its largest child (``wait4``); and the peak of the summed PSS of the
process and all its children (the memory they hold together, shared pages split between them), sampled
every 0.2 s. The ratios after / before are of the medians over the repeats.
``--prometheus`` adds a seventh judge file (Prometheus-2) to the released layout (not in the ratios: the
before code cannot read that layout).

Run: python bench/bench_import_agentjudgebench.py [--data data/full/records.jsonl] [--work DIR] [--keep]
       [--before main] [--repeats 1] [--prometheus]
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LONG = {
    "tool": "tool_selection_accuracy",
    "param": "parameter_structure_accuracy",
    "seq": "sequence_accuracy",
    "cov": "query_coverage_accuracy",
}
SHORT = {
    "tool": "tool_selection",
    "param": "parameter_structure",
    "seq": "sequence_accuracy",
    "cov": "query_coverage",
}
JUDGES = ("gpt_5_4", "claude_large", "gemini_2_5_pro", "qwq_32b", "gpt_oss_20b", "gpt_oss_120b")
OUTPUT_MAP = (  # the pipeline's fields of a judged row
    "id",
    "dag_type",
    "user_message",
    "generated_tool_calls",
    "judge_response",
    "judge_response_no_gt",
    "programmatic_judge_response",
    "overall_llm_alignment_percentage",
    "overall_llm_alignment_percentage_no_gt",
)
CONFIG = {"gpt_5_4": "gpt5_4"}  # the released configs' spelling of a generator
PUBLISHED_KEYS = (
    "id",
    "dag_type",
    "user_message",
    "query_medium",
    "query_hard",
    "rewrite_medium_status",
    "rewrite_hard_status",
    "system_prompt",
    "available_tools",
    "expected_tool_calls",
    "expected_responses",
)


def make_release(data: Path, out: Path, prometheus: bool, seed: int = 0) -> int:
    """Write both layouts under ``out`` (``per-judge/``, ``released/``); returns the judged rows."""
    from agentjudge.rundir.records import read_records
    from agentjudge.scoring.scorer import score_calls
    from agentjudge.types import ToolCall

    rng = random.Random(seed)
    records = read_records(data)
    with (ROOT / "data" / "published" / "agentjudgebench_eval_stats.csv").open() as handle:
        counts = {r["generator"]: r for r in csv.DictReader(handle)}
    per_judge, released = out / "per-judge", out / "released"
    per_judge.mkdir(parents=True)
    (released / "data" / "main").mkdir(parents=True)
    (released / "data" / "judges").mkdir(parents=True)
    (released / "README.md").write_text("# AgentJudgeBench (generated for the bench)\n")
    with data.open() as src, (released / "data" / "main" / "records.jsonl").open("w") as dst:
        for line in src:
            raw = json.loads(line)
            dst.write(json.dumps({k: raw[k] for k in PUBLISHED_KEYS if k in raw}) + "\n")
    outputs = []
    for gen, row in counts.items():
        folder = released / "data" / CONFIG.get(gen, gen)
        folder.mkdir(parents=True)
        with (folder / "train.jsonl").open("w") as handle:
            for diff in ("easy", "medium", "hard"):
                for record in rng.sample(records, int(row[diff])):
                    calls = [{"name": s.call.name, "arguments": s.call.arguments} for s in record.gt]
                    if rng.random() < 0.4 and len(calls) > 1:
                        calls = calls[:-1] if rng.random() < 0.5 else list(reversed(calls))
                    prog = score_calls(
                        record.expected_calls,
                        [ToolCall(name=c["name"], arguments=c["arguments"]) for c in calls],
                        "paper",
                        edges=record.edges,
                        tools=record.tools,
                    )
                    published = {m: round(float(prog[f"p_{m}"]), 4) for m in LONG}
                    expected = [{"name": s.call.name, "arguments": s.call.arguments} for s in record.gt]
                    handle.write(
                        json.dumps(
                            {
                                "id": record.id,
                                "dag_type": record.topology,
                                "difficulty": diff,
                                "user_query": record.queries[diff],
                                "available_tools": json.dumps(
                                    [{"type": "function", "function": {"name": t.name}} for t in record.tools]
                                ),
                                "generated_tool_calls": json.dumps(calls),
                                "expected_tool_calls": json.dumps(expected),
                                **{f"score_{SHORT[m]}": v for m, v in published.items()},
                                "overall_programmatic_score": round(sum(published.values()) / 4, 4),
                            }
                        )
                        + "\n"
                    )
                    outputs.append(
                        (gen, diff, record.id, record.topology, record.queries[diff], calls, published)
                    )
    del records
    judged = 0
    judges = (*JUDGES, "prometheus_2_7b") if prometheus else JUDGES
    for judge in judges:
        legacy = None if judge.startswith("prometheus") else (per_judge / f"judge_{judge}.jsonl").open("w")
        with (released / "data" / "judges" / f"judge_{judge}.jsonl").open("w") as new:
            for gen, diff, rid, topology, query, calls, published in outputs:
                judged += legacy is not None
                if rng.random() < 0.005:  # a failed graph execution: every field None but its cell's
                    if legacy is not None:
                        legacy.write(
                            json.dumps(dict.fromkeys(OUTPUT_MAP) | {"generator": gen, "difficulty": diff})
                        )
                        legacy.write("\n")
                    failed = {
                        "id": None,
                        "generator": gen,
                        "difficulty": diff,
                        "with_gt": None,
                        "without_gt": None,
                    }
                    new.write(json.dumps(failed) + "\n")
                    continue
                old_row: dict[str, Any] = {
                    "id": rid,
                    "dag_type": topology,
                    "user_message": query,
                    "generated_tool_calls": json.dumps(calls),
                    "programmatic_judge_response": {LONG[m]: {"accuracy": v} for m, v in published.items()},
                    "generator": gen,
                    "difficulty": diff,
                }
                new_row: dict[str, Any] = {"id": rid, "generator": gen, "difficulty": diff}
                for field, overall, condition in (
                    ("judge_response", "overall_llm_alignment_percentage", "with_gt"),
                    ("judge_response_no_gt", "overall_llm_alignment_percentage_no_gt", "without_gt"),
                ):
                    verdict = {
                        m: (1.0 if v >= 0.99 or rng.random() < 0.3 else 0.5 if v >= 0.5 else 0.0)
                        for m, v in published.items()
                    }
                    pct = round(100 * sum(1 - abs(published[m] - verdict[m]) for m in LONG) / 4, 2)
                    old_row[field] = {
                        LONG[m]: {"accuracy": v, "justification": "ok"} for m, v in verdict.items()
                    }
                    old_row[overall] = pct
                    new_row[condition] = {
                        **{
                            SHORT[m]: {
                                "llm_score": v,
                                "programmatic_score": published[m],
                                "justification": "ok",
                            }
                            for m, v in verdict.items()
                        },
                        "overall_alignment_pct": pct,
                    }
                if legacy is not None:
                    legacy.write(json.dumps(old_row) + "\n")
                new.write(json.dumps(new_row) + "\n")
        if legacy is not None:
            legacy.close()
    return judged


def _tree_pss(pid: int) -> int:
    """Summed PSS (bytes) of ``pid`` and its descendants, from /proc: a page shared by n processes counts
    1/n in each, so forked workers are not counted twice."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    total = 0
    for p in tree:
        try:
            with open(f"/proc/{p}/smaps_rollup") as handle:
                total += next(int(line.split()[1]) for line in handle if line.startswith("Pss:")) * 1024
        except (OSError, StopIteration, ValueError):
            continue
    return total


def measure(args: list[str], cwd: Path, code: Path) -> dict[str, Any]:
    """Exit code, wall s, peak RSS GiB (wait4: the process or its largest child), peak summed PSS GiB of
    the process tree (sampled), output tail."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentjudge", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], _tree_pss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "wall": wall,
        "rss": usage.ru_maxrss / 2**20,
        "tree": peak[0] / 2**30,
        "tail": out[-1200:],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "full" / "records.jsonl")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the generated releases and run folders")
    ap.add_argument("--before", default="main", help="git revision of the code measured as 'before'")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--prometheus", action="store_true", help="add a Prometheus-2 judge file (released)")
    args = ap.parse_args()
    if not args.data.is_file():
        sys.exit(f"{args.data}: not found (agentjudge generate --size full --seed 0 --out data/full)")
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-import-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    data = args.data.resolve()
    print(f"load average: {os.getloadavg()}; cores: {os.cpu_count()}; work: {work}")
    before = work / "before-code"
    if not before.exists():
        before.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.before], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        if (before / "analysis").is_dir() and not (before / "agentjudge" / "analysis").exists():
            # what the wheel (and the editable install, for this checkout) maps into the package
            (before / "agentjudge" / "analysis").symlink_to(Path("..") / "analysis")
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.before], capture_output=True, text=True
    ).stdout.strip()
    started = time.perf_counter()
    judged = make_release(data, work / "release", args.prometheus)
    gc.collect()
    sizes = {
        name: sum(p.stat().st_size for p in (work / "release" / name).rglob("*") if p.is_file()) / 2**20
        for name in ("per-judge", "released")
    }
    print(
        f"release: {judged:,} judged rows ({2 * judged:,} judgments with both conditions) of the six judges"
        + (" + a Prometheus-2 file (released layout)" if args.prometheus else "")
        + f"; per-judge layout {sizes['per-judge']:.0f} MiB, released layout {sizes['released']:.0f} MiB; "
        f"made in {time.perf_counter() - started:.0f} s"
    )
    os.environ["AGENTJUDGE_CACHE"] = str(work / "calls.sqlite")
    steps = [
        (f"before ({args.before} {sha}), per-judge", before, "per-judge", ["--records", str(data)]),
        ("after (this checkout), per-judge", ROOT, "per-judge", ["--records", str(data)]),
        ("after (this checkout), released", ROOT, "released", []),
    ]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for repeat in range(args.repeats):
        for label, code, layout, extra in steps:
            run = work / f"run-{layout}-{'before' if code == before else 'after'}-{repeat}"
            shutil.rmtree(run, ignore_errors=True)
            release = work / "release" / layout
            imp = measure(["import", "agentjudgebench", str(release), *extra, "--out", str(run)], work, code)
            rep = measure(["report", str(run)], work, code)
            for what, r in (("import", imp), ("report", rep)):
                results.setdefault((label, what), []).append(r)
                print(
                    f"[{repeat + 1}/{args.repeats}] {label:38s} {what:6s} exit {r['exit']}  "
                    f"{r['wall']:7.1f} s  peak RSS {r['rss']:.2f} GiB  tree PSS {r['tree']:.2f} GiB  "
                    f"(load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
                if r["exit"] != 0:
                    print("  " + "\n  ".join(r["tail"].strip().splitlines()[-8:]))
            if imp["exit"] == 0:
                lines = [s for s in imp["tail"].splitlines() if s.startswith(("imported", "  our paper"))]
                print("  " + "\n  ".join(lines))
            if not args.keep:
                shutil.rmtree(run, ignore_errors=True)

    def med(label: str, what: str, key: str) -> float:
        return statistics.median(r[key] for r in results[(label, what)])

    print(f"\nmedians over {args.repeats} repeat(s); ratios after / before (< 1: after is smaller or faster)")
    base = steps[0][0]
    for label, *_ in steps:
        for what in ("import", "report"):
            line = (
                f"  {label:38s} {what:6s} {med(label, what, 'wall'):7.1f} s  peak RSS "
                f"{med(label, what, 'rss'):.2f} GiB  tree PSS {med(label, what, 'tree'):.2f} GiB"
            )
            if label != base:
                line += (
                    f"   ratio: time {med(label, what, 'wall') / med(base, what, 'wall'):.2f}  "
                    f"peak RSS {med(label, what, 'rss') / med(base, what, 'rss'):.2f}  "
                    f"tree PSS {med(label, what, 'tree') / med(base, what, 'tree'):.2f}"
                )
            print(line)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
