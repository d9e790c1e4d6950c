"""Bench `agentjudge import agentjudgebench` and the report of the imported run at the released scale.

A release of the paper's size is generated over the full split (``--data``, 3,808 base records): five
generators whose valid outputs per difficulty are the paper's own counts (``data/published/
agentjudgebench_eval_stats.csv``: 53,608 in all), six judges, each row judged with and without GT —
321,648 judged rows, 643,296 judgments — in the per-judge layout of the release (``judge_<judge>.jsonl``),
fields as the publication's ``output_map`` writes them, plus 0.5 % failed graph executions. Then, each in a
fresh process (wall time and peak RSS of it and its children, from wait4):

  1. agentjudge import agentjudgebench RELEASE --records DATA --out RUN
  2. agentjudge report RUN

Run: python bench/bench_import_agentjudgebench.py [--data data/full/records.jsonl] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEYS = {
    "tool": "tool_selection_accuracy",
    "param": "parameter_structure_accuracy",
    "seq": "sequence_accuracy",
    "cov": "query_coverage_accuracy",
}
JUDGES = ("gpt_5_4", "claude_large", "gemini_2_5_pro", "qwq_32b", "gpt_oss_20b", "gpt_oss_120b")


def make_release(data: Path, out: Path, seed: int = 0) -> int:
    from agentjudge.rundir.records import read_records
    from agentjudge.scoring.scorer import score_calls
    from agentjudge.types import ToolCall

    rng = random.Random(seed)
    records = read_records(data)
    with (ROOT / "data" / "published" / "agentjudgebench_eval_stats.csv").open() as handle:
        counts = {r["generator"]: r for r in csv.DictReader(handle)}
    rows_by_judge: dict[str, list[str]] = {j: [] for j in JUDGES}
    judged = 0
    for gen, row in counts.items():
        for diff in ("easy", "medium", "hard"):
            chosen = rng.sample(records, int(row[diff]))
            for record in chosen:
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
                published = {m: round(float(prog[f"p_{m}"]), 4) for m in KEYS}
                base = {
                    "id": record.id,
                    "dag_type": record.topology,
                    "user_message": record.queries[diff],
                    "generated_tool_calls": json.dumps(calls),
                    "programmatic_judge_response": {KEYS[m]: {"accuracy": v} for m, v in published.items()},
                    "generator": gen,
                    "difficulty": diff,
                }
                for judge in JUDGES:
                    judged += 1
                    if rng.random() < 0.005:  # a failed graph execution
                        rows_by_judge[judge].append(
                            json.dumps({k: None for k in base} | {"generator": gen, "difficulty": diff})
                        )
                        continue
                    out_row = dict(base)
                    for field, overall in (
                        ("judge_response", "overall_llm_alignment_percentage"),
                        ("judge_response_no_gt", "overall_llm_alignment_percentage_no_gt"),
                    ):
                        verdict = {
                            m: (1.0 if v >= 0.99 or rng.random() < 0.3 else 0.5 if v >= 0.5 else 0.0)
                            for m, v in published.items()
                        }
                        out_row[field] = {
                            KEYS[m]: {"accuracy": v, "justification": "ok"} for m, v in verdict.items()
                        }
                        out_row[overall] = round(
                            100 * sum(1 - abs(published[m] - verdict[m]) for m in KEYS) / 4, 2
                        )
                    rows_by_judge[judge].append(json.dumps(out_row))
    out.mkdir(parents=True, exist_ok=True)
    for judge, lines in rows_by_judge.items():
        (out / f"judge_{judge}.jsonl").write_text("\n".join(lines) + "\n")
    return judged


def measure(args: list[str], cwd: Path) -> tuple[int, float, float, str]:
    """(exit code, wall s, peak RSS GiB of the process and its children, output tail)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentjudge", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    return os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss / 2**20, out[-1500:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "full" / "records.jsonl")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the generated release and run folder")
    args = ap.parse_args()
    if not args.data.is_file():
        sys.exit(f"{args.data}: not found (agentjudge generate --size full --seed 0 --out data/full)")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-import-"))
    print(f"load average: {os.getloadavg()}; cores: {os.cpu_count()}; work: {work}")
    started = time.perf_counter()
    judged = make_release(args.data, work / "release")
    size = sum(p.stat().st_size for p in (work / "release").iterdir()) / 2**20
    print(
        f"release: {judged:,} judged rows ({2 * judged:,} judgments with both conditions), {size:.0f} MiB, "
        f"made in {time.perf_counter() - started:.0f} s"
    )
    env_cache = work / "calls.sqlite"
    os.environ["AGENTJUDGE_CACHE"] = str(env_cache)
    code, wall, peak, out = measure(
        [
            "import",
            "agentjudgebench",
            str(work / "release"),
            "--records",
            str(args.data),
            "--out",
            str(work / "run"),
        ],
        work,
    )
    print(f"import  exit {code}  {wall:7.1f} s wall  peak RSS {peak:.2f} GiB")
    print("  " + "\n  ".join(out.strip().splitlines()[-9:]))
    code, wall, peak, out = measure(["report", str(work / "run")], work)
    print(f"report  exit {code}  {wall:7.1f} s wall  peak RSS {peak:.2f} GiB")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
