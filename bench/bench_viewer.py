"""Bench `agentjudge view` at the paper's scale, in one sitting (the machine may be shared: it prints the
load average; the goals of issue 39 are beside each figure).

The folder: the paper-shaped offline grid of ``bench/bench_grid.py`` (5 simulated generators x 6 baseline
judges x 3,808 base scenarios x 3 difficulties x 2 conditions = 685,440 judge units, both scoring modes:
5.48 M verdict rows), made here with ``agentjudge run`` unless ``--rundir`` names one already made.
Measured in a fresh process that serves it over HTTP on 127.0.0.1, each request as a client sees it:

  open    `start()` until the server answers (the index read from judgments.parquet)    goal <= 3 s
  filter  /api/rows for several filters (median and worst of each)                       goal <= 1 s
  item    /api/item of several items (the first builds the dataset's line index)        goal <= 1 s
  memory  peak RSS of the serving process after all of it, and again after paging
          through 200 pages of 500 rows (memory must not grow with the rows shown)

and then as a user meets it, `agentjudge view RUNDIR` in a process of its own:

  open    from the command's start until /api/facets answers (interpreter and imports included)  <= 3 s
  memory  its resident memory after each of 5 rounds of 200 pages x 500 rows and 40 items (a plateau,
          not a climb, is the goal)

`--screens DIR` also takes the two screenshots the issue asks for (headless Chromium, 1400x900): the list
filtered to one judge's largest disagreements, and one item view.

Run: python bench/bench_viewer.py [--data data/full/records.jsonl] [--rundir DIR] [--screens DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

FILTERS = [
    {},
    {"judge": "baseline/rule"},
    {"judge": "baseline/gt-rule", "condition": "without_gt", "min_disagreement": "0.5"},
    {"generator": "sim/weak", "difficulty": "hard", "metric": "seq"},
    {"topology": "fan_in", "domain": "finance"},
    {"failures": "1"},
    {"judge": "baseline/rule", "page": "200"},
    {"sort": "record", "page": "5000"},
    {"mode": "any", "judge": "baseline/ceiling"},
]


def make_folder(data: Path, work: Path) -> Path:
    from bench_grid import JUDGES, pipeline_text

    pipeline = work / "grid.yaml"
    pipeline.write_text(pipeline_text(data, JUDGES, None))
    env = {**os.environ, "AGENTJUDGE_CACHE": str(work / "calls.sqlite")}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(work / "run")],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"agentjudge run failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    print(f"made the paper-shaped folder in {time.perf_counter() - started:.0f} s: {work / 'run'}")
    return work / "run"


def timed(url: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = json.loads(response.read())
    return time.perf_counter() - started, body


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib() -> float:
    """The serving process's resident memory now (VmRSS), to compare before and after paging."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def verdict(value: float, goal: float) -> str:
    return "PASS" if value <= goal else "MISS"


def measure(rundir: Path) -> None:
    from agentjudge.viewer.server import start

    print(f"load average: {os.getloadavg()}; cores: {os.cpu_count()}")
    before = peak_mib()
    started = time.perf_counter()
    server, viewer = start(rundir)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    timed(base + "/api/facets")
    opened = time.perf_counter() - started
    rows = viewer.index.rows
    print(f"\nfolder: {rundir}  ({rows:,} verdict rows; index {viewer.index.nbytes() / 2**20:.0f} MiB)")
    print(f"open            {opened:6.2f} s   goal <= 3 s   {verdict(opened, 3)}")
    print(f"                (peak RSS before opening: {before:.0f} MiB)")
    worst_filter = 0.0
    for params in FILTERS:
        times = []
        for _ in range(3):
            seconds, body = timed(base + "/api/rows?" + urlencode(params))
            times.append(seconds)
        worst_filter = max(worst_filter, max(times))
        label = "&".join(f"{k}={v}" for k, v in params.items()) or "(no filter)"
        median, worst = statistics.median(times), max(times)
        print(f"filter  {median:6.3f} s median, {worst:.3f} worst  {body['total']:>9,} rows  {label}")
    print(f"filter worst    {worst_filter:6.3f} s   goal <= 1 s   {verdict(worst_filter, 1)}")
    _, page = timed(base + "/api/rows?" + urlencode({"judge": "baseline/rule", "per_page": 20}))
    items = []
    for row in page["rows"][::4]:  # type: ignore[index]
        seconds, _ = timed(
            base + "/api/item?" + urlencode({"record": row["record"], "generator": row["generator"]})
        )
        items.append(seconds)
    later = items[1:]
    print(f"item            {items[0]:6.3f} s first (builds the dataset's line index), then median")
    worst_item, mid = max(items), statistics.median(later)
    print(f"                {mid:.3f}, worst {max(later):.3f}   goal <= 1 s   {verdict(worst_item, 1)}")
    now = rss_mib()
    for page_number in range(1, 201):
        timed(base + "/api/rows?" + urlencode({"per_page": 500, "page": page_number}))
    after = rss_mib()
    print(f"memory          peak RSS {peak_mib():.0f} MiB; resident {now:.0f} MiB before paging through")
    print(f"                200 pages x 500 rows, {after:.0f} MiB after ({after - now:+.0f} MiB)")
    server.shutdown()


def as_a_user(rundir: Path) -> None:
    """`agentjudge view` as its own process: the open time a user waits, and its memory over many pages."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentjudge", "view", str(rundir), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    base = ""
    for line in proc.stdout:
        if line.startswith("open http://"):
            base = line.split()[1].rstrip("/")
            break
    if not base:
        sys.exit(f"agentjudge view exited {proc.wait()} without serving")
    timed(base + "/api/facets")
    opened = time.perf_counter() - started
    print(f"\n`agentjudge view` as its own process (load average {os.getloadavg()[0]:.1f})")
    print(f"open            {opened:6.2f} s   from the command's start; goal <= 3 s   {verdict(opened, 3)}")

    def resident() -> float:
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    print(f"memory          {resident():.0f} MiB resident after opening")
    _, listed = timed(base + "/api/rows?" + urlencode({"judge": "baseline/rule", "per_page": 200}))
    items = listed["rows"]  # type: ignore[index]
    for round_number in range(5):
        for page_number in range(round_number * 200 + 1, round_number * 200 + 201):
            timed(base + "/api/rows?" + urlencode({"per_page": 500, "page": page_number}))
        for row in items[round_number * 40 : round_number * 40 + 40]:
            timed(base + "/api/item?" + urlencode({"record": row["record"], "generator": row["generator"]}))
        shown, opened_items = (round_number + 1) * 200 * 500, (round_number + 1) * 40
        print(f"                {resident():.0f} MiB after {shown:,} rows and {opened_items} items")
    proc.send_signal(signal.SIGINT)
    proc.wait(30)


def screens(rundir: Path, out: Path) -> None:
    from chromium import Chromium

    from agentjudge.viewer.server import start

    server, viewer = start(rundir)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    judge = next(j for j in viewer.index.facets()["judge"] if "always" not in j and "ceiling" not in j)
    out.mkdir(parents=True, exist_ok=True)
    with Chromium.start() as browser:
        browser.open(base + "?" + urlencode({"judge": judge, "min_disagreement": "0.5"}))
        browser.wait_ready()
        (out / "viewer-list.png").write_bytes(browser.screenshot())
        browser.eval(
            "document.body.removeAttribute('data-ready'); document.querySelector('#rows tbody tr').click()"
        )
        browser.wait_ready()  # the page brings the opened item into view itself, as a click shows it
        (out / "viewer-item.png").write_bytes(browser.screenshot())
    server.shutdown()
    print(f"screenshots: {out / 'viewer-list.png'}, {out / 'viewer-item.png'} (judge {judge})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "full" / "records.jsonl")
    ap.add_argument("--rundir", type=Path, default=None, help="an existing run folder (skip making one)")
    ap.add_argument("--screens", type=Path, default=None, help="also take the two screenshots into DIR")
    args = ap.parse_args()
    rundir = args.rundir
    if rundir is None:
        if not args.data.is_file():
            sys.exit(f"{args.data}: not found (agentjudge generate --size full --seed 0 --out data/full)")
        rundir = make_folder(args.data, Path(tempfile.mkdtemp(prefix="bench-viewer-")))
    measure(rundir)
    as_a_user(rundir)
    if args.screens:
        screens(rundir, args.screens)


if __name__ == "__main__":
    main()
