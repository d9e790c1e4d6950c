"""Benchmark `agentjudge report` at paper scale and print wall time and peak RSS.

Paper scale (§1): 5 generators × 6 judges × 3 difficulties × 2 GT conditions over 3,808 base scenarios,
321,648 judgments × 4 metrics ≈ 1.29 M rows of SYNTHETIC verdicts. Target: ≤ 60 s and ≤ 4 GiB peak RSS
with 1,000 bootstrap resamples. The report runs in a child process so that its peak RSS can be read with
resource.getrusage(RUSAGE_CHILDREN) (one fresh child per repeat; the figure is the max over children).

Run: python bench/bench_report.py [--repeats 3] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _child(rundir: str, resamples: int, seed: int, q: mp.Queue) -> None:
    from agentjudge.commands.report import report_cli

    t0 = time.perf_counter()
    code = report_cli(Path(rundir), resamples=resamples, seed=seed)
    q.put((code, time.perf_counter() - t0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from agentjudge.rundir.synthetic import SyntheticSpec, Variant, write_run

    spec = SyntheticSpec(
        n_base=3808,
        generators={"sim/g1": 0.9, "sim/g2": 0.8, "sim/g3": 0.7, "sim/g4": 0.55, "sim/g5": 0.4},
        judges={"judge-1": 1, "judge-2": 1, "judge-3": 2, "judge-4": 2, "judge-5": 3, "judge-6": 3},
        variants=[Variant(condition="with_gt"), Variant(condition="without_gt")],
        keep_judgments=321_648,
        seed=args.seed,
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        jd = write_run(Path(tmp), spec)
        print(
            f"synthetic run: {len(jd):,} rows ({len(jd) // 4:,} judgments) written in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        del jd
        ctx = mp.get_context("spawn")
        times = []
        for i in range(args.repeats):
            q: mp.Queue = ctx.Queue()
            p = ctx.Process(target=_child, args=(tmp, args.resamples, args.seed, q))
            t0 = time.perf_counter()
            p.start()
            code, inner = q.get()
            p.join()
            wall = time.perf_counter() - t0
            times.append(inner)
            print(
                f"repeat {i + 1}: report_cli exit {code}, {inner:.1f} s inside the child ({wall:.1f} s with "
                "interpreter start-up)"
            )
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_kib = usage.ru_maxrss  # KiB on Linux
        cpu = (usage.ru_utime + usage.ru_stime) / args.repeats
        med = statistics.median(times)
        print(
            f"median report time: {med:.1f} s wall (target ≤ 60 s), {cpu:.1f} s CPU per child incl. "
            "start-up; "
            f"peak child RSS: {peak_kib / 2**20:.2f} GiB (target ≤ 4 GiB); resamples={args.resamples}; "
            f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
