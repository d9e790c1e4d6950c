"""Bench the runner's fixed costs on the paper-shaped OFFLINE grid and a small retry, with the goals of
issue 15 next to each figure (a bench, not a timed test: the machine may be shared, so it prints the
load average, and CPU seconds besides wall time).

The grid: 5 simulated generators (sim/weak, mid, strong, frontier, perfect) x 6 offline baseline judges
(always-1, always-0.5, always-0, rule, ceiling, gt-rule) x 3,808 base scenarios x 3 difficulties x 2
conditions (with/without GT) = 685,440 judge units, both scoring modes (5.48 M judgment rows); the full
dataset (`agentjudge generate --size full --seed 0 --out data/full`). Measured, each step in a fresh
process (peak RSS of that process and its children, from wait4):

  1. `agentjudge run` of the grid from an empty folder            goal <= 60 s wall, <= 2 GiB peak
  2. the same command again (nothing to do)                        goal <= 5 s
  3. `agentjudge report` of it                                     goal <= 2 GiB peak
  4. a 1,800-unit grid (60 scenarios x 3 difficulties x 5 generators x baseline/rule x 2 conditions), run,
     then 12 of its judge units set to failed in run.sqlite as a failed call leaves them (status, error,
     store version bumped, export stamp cleared), then the same command: it re-runs the 12   goal <= 2 s
     (``--repeat N``: fail and retry N times, the median is reported; the first retry after the run is
     the one a user sees, the others show the noise; every round's exit code is printed)

Exit code: 1 when any step (any retry round included) exited non-zero, each such step named at the end.

`--src DIR` runs every step with DIR first on PYTHONPATH (e.g. an unpacked `git archive` of an older
commit), to compare before and after in one sitting. `--skip-grid` runs only step 4.

Run: python bench/bench_grid.py [--data data/full/records.jsonl] [--work DIR] [--src DIR] [--skip-grid]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GIB = 1024**3
GENERATORS = ["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"]
JUDGES = [f"baseline/{b}" for b in ("always-1", "always-0.5", "always-0", "rule", "ceiling", "gt-rule")]


def pipeline_text(dataset: Path, judges: list[str], limit: int | None) -> str:
    lines = [
        "name: bench-grid",
        f"dataset: {dataset.resolve()}",
        *([f"limit: {limit}"] if limit else []),
        "difficulties: [easy, medium, hard]",
        f"generators: [{', '.join(GENERATORS)}]",
        f"judges: [{', '.join(judges)}]",
        "conditions: [with_gt, without_gt]",
        "prompt_family: paper",
        "scoring: both",
        "concurrency: 32",
        "reask: 0",
        "seed: 0",
    ]
    return "\n".join(lines) + "\n"


def measure(
    args: list[str], src: str | None, env_extra: dict[str, str], cwd: Path
) -> tuple[int, float, float, int, str]:
    """(exit code, wall s, cpu s, peak RSS bytes, output tail) of one fresh process. It runs in ``cwd``
    (the work folder): ``python -m`` puts its working folder first on sys.path, so run from a checkout it
    would import that checkout instead of ``src``."""
    env = dict(os.environ, **env_extra)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(src).resolve()), env.get("PYTHONPATH", "")])
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentjudge", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out[-600:]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def fail_units(store: Path, n: int) -> None:
    """Leave ``n`` judge units as a failed call would: failed, an error, the store changed since export."""
    with sqlite3.connect(store) as db:
        rowids = [
            r[0]
            for r in db.execute("SELECT rowid FROM units WHERE stage='judge' ORDER BY rowid LIMIT ?", (n,))
        ]
        db.executemany(
            "UPDATE units SET status='failed', result=NULL, "
            "error='server_error after 5 attempt(s): 503 (bench)' WHERE rowid=?",
            [(r,) for r in rowids],
        )
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('store_version', '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )
        db.execute("DELETE FROM meta WHERE key = 'exported_complete'")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("data/full/records.jsonl"))
    ap.add_argument(
        "--work", type=Path, default=None, help="folder for the run folders (default: a temp dir)"
    )
    ap.add_argument("--src", default=None, help="put this source tree first on PYTHONPATH (an older commit)")
    ap.add_argument("--skip-grid", action="store_true", help="only the 1,800-unit retry")
    ap.add_argument("--resamples", type=int, default=1000, help="report bootstrap resamples")
    ap.add_argument("--repeat", type=int, default=1, help="retry step: fail 12 and retry N times (median)")
    args = ap.parse_args()
    if not args.data.is_file():
        print(
            f"{args.data}: not found; make it with: agentjudge generate --size full --seed 0 --out data/full"
        )
        return 2
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-grid-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {"AGENTJUDGE_CACHE": str(work / "calls.sqlite")}
    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}; src: {args.src or 'installed'}")
    rows: list[tuple[str, str, str]] = []
    exits: list[tuple[str, int]] = []  # every step's exit code: the bench fails if any step did

    if not args.skip_grid:
        pipe = work / "grid.yaml"
        pipe.write_text(pipeline_text(args.data, JUDGES, None))
        rundir = work / "grid"
        code, wall, cpu, rss, out = measure(["run", str(pipe), "--out", str(rundir)], args.src, env, work)
        print(f"[grid run] exit {code}\n{out}")
        exits.append(("grid run", code))
        rows.append(("grid run wall", f"{wall:.1f} s (cpu {cpu:.1f} s)", f"<= 60 s  {verdict(wall <= 60)}"))
        rows.append(("grid run peak RSS", f"{rss / GIB:.2f} GiB", f"<= 2 GiB  {verdict(rss <= 2 * GIB)}"))
        code, wall, cpu, rss, out = measure(["run", str(pipe), "--out", str(rundir)], args.src, env, work)
        print(f"[no-op re-run] exit {code}\n{out}")
        exits.append(("no-op re-run", code))
        rows.append(("no-op re-run", f"{wall:.1f} s (cpu {cpu:.1f} s)", f"<= 5 s  {verdict(wall <= 5)}"))
        code, wall, cpu, rss, out = measure(
            ["report", str(rundir), "--resamples", str(args.resamples)], args.src, env, work
        )
        print(f"[report] exit {code}\n{out}")
        exits.append(("report", code))
        rows.append(
            ("report peak RSS", f"{rss / GIB:.2f} GiB ({wall:.0f} s)", f"<= 2 GiB  {verdict(rss <= 2 * GIB)}")
        )

    small = work / "small.yaml"
    small.write_text(pipeline_text(args.data, ["baseline/rule"], 60))
    smalldir = work / "small"
    code, wall, cpu, rss, out = measure(["run", str(small), "--out", str(smalldir)], args.src, env, work)
    print(f"[1,800-unit run] exit {code}, {wall:.1f} s")
    exits.append(("1,800-unit run", code))
    walls, cpus = [], []
    rounds = max(1, args.repeat)
    for i in range(rounds):
        fail_units(smalldir / "run.sqlite", 12)
        code, wall, cpu, rss, out = measure(["run", str(small), "--out", str(smalldir)], args.src, env, work)
        walls.append(wall)
        cpus.append(cpu)
        exits.append((f"retry 12 failed, round {i + 1} of {rounds}", code))
        if code != 0 or i == rounds - 1:  # a failed round's output is shown, not only the last one's
            print(f"[retry 12 failed, round {i + 1} of {rounds}] exit {code}\n{out}")
    if rounds > 1:
        print(f"retry exit codes, each round: {', '.join(str(c) for _, c in exits[-rounds:])}")
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    if len(walls) > 1:
        shown = [f"{w:.2f}/{c:.2f}" for w, c in zip(walls, cpus, strict=True)]
        print(f"retry wall/cpu s, each round: {', '.join(shown)}")
    rows.append(
        ("retry 12 failed of 1,800", f"{wall:.2f} s (cpu {cpu:.2f} s)", f"<= 2 s  {verdict(wall <= 2)}")
    )

    print(f"\nload average after: {os.getloadavg()}")
    width = max(len(r[0]) for r in rows)
    for name, value, goal in rows:
        print(f"{name:<{width}}  {value:<28} goal {goal}")
    print(f"run folders in {work}")
    failed = [(step, code) for step, code in exits if code != 0]
    for step, code in failed:
        print(f"FAILED: {step} exited {code}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
