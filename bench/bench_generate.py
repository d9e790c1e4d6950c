"""Time `agentjudge generate --size full` and check that two runs write byte-identical files.

Each run is a child process (`python -m agentjudge generate ...`), so its memory is measured apart from
this script: `resource.getrusage(RUSAGE_CHILDREN)` gives the largest single process's peak RSS, and a
poller sums the RSS of the whole process tree (main process + pool workers) every 50 ms for the peak
the machine actually had to hold. CPU time is printed beside wall time because on a shared machine wall
time also measures the neighbours. Targets (issue): wall ≤ 60 s, peak ≤ 1 GiB.

    python bench/bench_generate.py [--runs 2] [--size full] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _tree_rss_kib(root: int) -> int:
    """Sum of VmRSS over ``root`` and its descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields.get("PPid", "0").strip())
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) if "VmRSS" in fields else 0
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(rss.get(p, 0) for p in tree)


def run_once(out: Path, size: str, seed: int) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [
        sys.executable,
        "-m",
        "agentjudge",
        "generate",
        "--out",
        str(out),
        "--size",
        size,
        "--seed",
        str(seed),
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss_kib(proc.pid))
            stop.wait(0.05)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    output, _ = proc.communicate()
    wall = time.perf_counter() - started
    stop.set()
    thread.join()
    if proc.returncode != 0:
        sys.exit(f"generate failed (exit {proc.returncode}):\n{output}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "max_process_rss_mib": after.ru_maxrss / 1024,  # Linux: KiB; max over all children so far
        "tree_rss_peak_mib": peak / 1024,
    }


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--size", default="full")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} before the first run")
    results, digests = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"run{i}"
            r = run_once(out, args.size, args.seed)
            results.append(r)
            digests.append((digest(out / "records.jsonl"), digest(out / "manifest.json")))
            print(
                f"run {i + 1}: wall {r['wall_s']:.1f} s, cpu {r['cpu_s']:.1f} s, peak RSS (process tree) "
                f"{r['tree_rss_peak_mib']:.0f} MiB, largest single process {r['max_process_rss_mib']:.0f} MiB"
            )
        size_mb = (Path(tmp) / "run0" / "records.jsonl").stat().st_size / 1e6
    walls = [r["wall_s"] for r in results]
    print(
        f"--size {args.size}: median wall {statistics.median(walls):.1f} s (target ≤ 60 s), "
        f"max tree peak RSS {max(r['tree_rss_peak_mib'] for r in results):.0f} MiB (target ≤ 1024 MiB), "
        f"records.jsonl {size_mb:.1f} MB"
    )
    identical = len(set(digests)) == 1
    print(f"byte-identical across {args.runs} runs: {identical} (records sha256 {digests[0][0][:16]}…)")
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
