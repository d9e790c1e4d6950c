"""Batch mode against the loopback server: a direct run and a batch run of the same grid, then a batch run
killed with SIGKILL while its batches are in flight and resumed. Prints the server's own counts.

    python bench/bench_batch.py [--limit 10] [--out /tmp/bench-batch]

The grid: the first ``--limit`` base scenarios of data/mini, three difficulties, ``sim/perfect``
predictions, one LLM judge on the loopback server (an OpenAI-compatible server with the Files and Batches
endpoints, tests/fakeserver.py) with and without GT. The judge's answer depends on the request, so equal
judgments mean every unit got its own answer back.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakeserver import TEST_KEY, TEST_KEY_ENV, FakeLLM  # noqa: E402

from agentjudge.rundir import RunFolder  # noqa: E402


def _responder(req: dict[str, Any]) -> str:
    value = (0.0, 0.5, 1.0)[len(json.dumps(req["messages"])) % 3]
    verdict = {m: {"verdict": value, "justification": "scripted"} for m in ("tool", "param", "seq", "cov")}
    return json.dumps(verdict | {"overall": "ok"})


def _pipeline(out: Path, fake: FakeLLM, limit: int, batch: bool, cache: str) -> Path:
    judge = fake.settings(name="judge", input_cost_per_token=2.5e-6, output_cost_per_token=1e-5)
    entry = judge.model_dump(exclude_defaults=True) | ({"batch": True} if batch else {})
    data = {
        "name": "bench-batch",
        "dataset": str(ROOT / "data" / "mini" / "records.jsonl"),
        "limit": limit,
        "difficulties": ["easy", "medium", "hard"],
        "generators": ["sim/perfect"],
        "judges": [entry],
        "conditions": ["with_gt", "without_gt"],
        "cache": str(out / cache),
        "batch_poll_s": 0.05,
        "batch_poll_max_s": 0.2,
        "batch_max_requests": 25,
    }
    path = out / f"pipeline-{'batch' if batch else 'direct'}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _env(out: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[TEST_KEY_ENV] = TEST_KEY
    env["AGENTJUDGE_CACHE"] = str(out / "env-cache.sqlite")
    return env


def _run(pipeline: Path, rundir: Path, out: Path) -> int:
    command = [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]
    return subprocess.run(command, env=_env(out), capture_output=True, text=True, check=False).returncode


def _stable(rundir: Path) -> pd.DataFrame:
    judg = RunFolder.open(rundir).judgments()
    key = ["record_id", "generator", "judge", "condition", "metric", "scoring_mode"]
    return judg.drop(columns=[c for c in judg.columns if "cost" in c]).sort_values(key).reset_index(drop=True)


def _counts(fake: FakeLLM) -> str:
    answered = len(fake.requests)
    return f"uploads {fake.uploads}, batches created {fake.batches_created}, requests answered {answered}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-batch"))
    args = parser.parse_args(argv)
    out: Path = args.out
    if out.exists():
        print(f"error: {out} exists; give a fresh --out", file=sys.stderr)
        return 2
    out.mkdir(parents=True)
    fake = FakeLLM().start()
    try:
        fake.set_responder(_responder)
        code = _run(_pipeline(out, fake, args.limit, False, "cache-direct.sqlite"), out / "direct", out)
        direct_requests = len(fake.requests)
        print(f"direct run: exit {code}, requests answered {direct_requests}")

        fake.reset()
        fake.set_responder(_responder)
        code = _run(_pipeline(out, fake, args.limit, True, "cache-batch.sqlite"), out / "batch", out)
        print(f"batch run:  exit {code}, {_counts(fake)}")
        d, b = _stable(out / "direct"), _stable(out / "batch")
        equal = d.equals(b)
        print(f"judgment rows: direct {len(d)}, batch {len(b)}; identical apart from cost columns: {equal}")

        fake.reset()
        fake.set_responder(_responder)
        fake.hold_batches = True
        pipeline = _pipeline(out, fake, args.limit, True, "cache-kill.sqlite")
        rundir = out / "killed"
        command = [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]
        proc = subprocess.Popen(command, env=_env(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while fake.retrieves == 0 or not 0 < fake.batches_created == _recorded(rundir):
            if proc.poll() is not None or time.monotonic() > deadline:
                print("error: the run ended or stalled before it could be killed", file=sys.stderr)
                return 1
            time.sleep(0.05)
        time.sleep(0.2)  # let it poll a little
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        print(
            f"killed (SIGKILL) while batches were in flight: {_counts(fake)}; polls so far {fake.retrieves}"
        )
        fake.hold_batches = False
        code = _run(pipeline, rundir, out)
        unique = len({json.dumps(r, sort_keys=True) for r in fake.requests})
        print(f"resumed:    exit {code}, {_counts(fake)}; distinct request bodies {unique}")
        same = _stable(rundir).equals(d)
        print(f"resumed run's judgments identical to the direct run's: {same}")
        return 0 if equal and same and unique == len(fake.requests) == direct_requests else 1
    finally:
        fake.stop()


def _recorded(rundir: Path) -> int:
    try:
        with sqlite3.connect(rundir / "run.sqlite", timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM batches WHERE batch_id LIKE 'batch_%'").fetchone()[0])
    except sqlite3.Error:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
