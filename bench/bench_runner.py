"""Is the runner the bottleneck? `agentjudge run` against raw litellm on the same calls (issue 15).

For each latency L and concurrency C an OpenAI-compatible loopback server (tests/fakeserver.py, in its own
process) answers every request after L seconds with one fixed judge verdict. The same judge calls then go
through three clients, one after the other, each in a fresh process:

* ``runner w=N``: ``agentjudge run`` of a pipeline whose only non-simulated model is one judge pointed at
  the server (five simulated generators; judge ``concurrency`` and the pipeline's ``concurrency`` both C;
  ``workers: N`` when ``--workers`` lists it, else the pipeline default);
* ``raw async``: the request bodies the runner sent (logged by the server), replayed with
  ``litellm.acompletion`` under an ``asyncio.Semaphore(C)``;
* ``threads``: the same bodies through a ``ThreadPoolExecutor(C)`` of ``litellm.completion`` (as tau-bench
  does);
* ``raw xK`` (one per ``--workers`` value K > 1): raw async on K processes started together, each replaying
  every K-th body under its share of C, no runner at all: what ``workers: K`` could at best reach with
  litellm on this machine. The runner's ``w=K`` row is also divided by it.

* ``stub runner w=N`` (with ``--stubbed``): the runner row again, with ``litellm.acompletion`` replaced by a
  stub that waits L and returns one prepared answer (``stub_runner``; nothing reaches the server): its steady
  CPU per call is the runner's own code alone (prompt, cache, parse, store, scheduling), without litellm's
  ~10 ms and its sitting-to-sitting swing of a millisecond or more, which hides changes of a few tenths in the
  real rows. Printed under the table as "own CPU per call" next to the real row's steady gap to raw.

Columns (one line per client; with ``--rounds N`` each figure is the median of its N runs, interleaved: every
client once per round, and the last column lists each round's requests/s and steady CPU):

* ``units/s``: judge units finished per second. The runner's from its run folder (first judge unit started to
  last finished); raw/threads: calls per second (first call sent to last answer).
* ``requests/s``: requests the server received per second over the same span. The runner asks an identical
  judge prompt once (two simulated generators often make identical predictions), so it sends fewer requests
  than it finishes units: raw and threads replay exactly the requests the first runner run sent, and the
  ratios and goals compare requests/s (the same work), not units/s.
* ``% of C/L``: requests/s as a share of the ceiling C/L.
* ``CPU ms/request``: the client's whole CPU divided by its requests, start-up included. raw/threads: the
  whole process (litellm's import, 2.6-3.9 s of CPU, is most of it at these sizes); the runner: its whole
  CPU, worker processes included, minus that of the same run without the judge (which imports no litellm). It
  swings by several ms from sitting to sitting: read it as "start-up plus calls", not as the cost of a call.
* ``units``, ``requests``: how many of each the client finished / sent.
* ``steady CPU ms/request``: the per-request cost in steady state, measured the same way for every client
  and from outside it (``_Sampler``): the bench polls the client's process tree (the process and every
  descendant, worker processes included; /proc) and the server's request count every 5 ms, and divides the
  CPU used between the moments the server had received request C + m and request N - m (N requests in all,
  m = 10 % of N - C) by the requests received in between. In that window the client has C requests in
  flight throughout and gets an answer for each request it sends; start-up (imports, the first burst of C)
  and wind-down (the last answers, the runner's repeats answered from the cache, its export) fall outside.
  The goal "CPU within 0.5 ms of raw" is judged on this column. For a ``w=K`` row its line splits the gap
  in two: what litellm alone costs more per request on K processes than on one (``raw xK`` − ``raw``: on
  this machine +1.50 ms in one sitting, with the loopback server on the same two cores), and the runner's
  own over that.
* ``steady %``: requests/s received in that same window, as a share of C/L: the rate with C in flight
  throughout. The goal "≥ 85 % of C/L" is judged on the whole span (``% of C/L``); the steady figure is
  printed beside it, and so is what litellm alone reaches (``raw`` and ``raw xK``): on a 2-core machine
  where litellm costs 5-14 ms of CPU per call (both seen here, hours apart), C=32 at L=200 ms asks
  160 calls/s: 0.8-2.2 cores of litellm alone.

The judge model is ``--model`` (default ``openai/bench-judge``, a name litellm has no price for, as a vLLM,
Ollama or other self-hosted model; ``--model openai/gpt-4o-mini`` measures a model litellm prices: the
loopback server answers whatever the name). For a model litellm cannot price the runner hands litellm a
placeholder per-call price after its first answer (``PLACEHOLDER_PRICE``, fastpaths/litellm_pricing.py),
which spares litellm a failed price-map walk of ~1.5-2 ms per call; raw and threads call litellm as a plain
user would, so for such a model part of the runner's lead over them is that saving, not the runner's own
code (the ``--stubbed`` rows measure that). The output's first line says which case was measured.

Each row's header gives the loopback server's own CPU per request (on 2 cores it competes with the client
being measured). Ratios are measured in one run on one machine: read them, not the absolute figures, when
other jobs share the cores. The issue's goals are printed beside the figures with PASS/MISS; this is a
benchmark, nothing here is asserted. With ``--rounds 2`` or more, the CPU goal's line also lists each
round's gap (the runner's steady CPU less raw's in the same round) and the C/L goal's line each round's
share: one client's steady CPU was seen to move by 2 ms from one round to the next on this machine, so a
verdict whose rounds straddle the threshold is within the noise, not a result.

    python bench/bench_runner.py --quick           # C in {32, 128}, L = 200 ms, 600 calls
    python bench/bench_runner.py                   # C in {8, 32, 128} x L in {50, 200} ms, 1,800 calls
    python bench/bench_runner.py --workers 1,2     # runner rows for workers: 1 and workers: 2
    python bench/bench_runner.py --quick --src base=/tmp/base   # also rows for an older source tree
    python bench/bench_runner.py --quick --rounds 3  # every client 3 times, interleaved; medians
    python bench/bench_runner.py --quick --stubbed --src base=/tmp/base   # own CPU per call, before/after

``--src LABEL=DIR`` (repeatable) adds runner rows for the source tree DIR (e.g. ``git archive b65034e | tar -x
-C /tmp/base``), run with DIR first on PYTHONPATH, against the same server and right after this tree's rows:
a before/after in one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FAKESERVER = ROOT / "tests" / "fakeserver.py"
DATASET = ROOT / "data" / "mini" / "records.jsonl"
KEY_ENV = "AGENTJUDGE_BENCH_KEY"
ANSWER = json.dumps(
    {m: {"verdict": 1.0, "justification": "bench"} for m in ("tool", "param", "seq", "cov")}
    | {"overall": "bench"}
)
MODEL = "openai/bench-judge"  # the judge's model string: see --model
GENERATORS = ["sim/weak", "sim/mid", "sim/strong", "sim/frontier", "sim/perfect"]
CALLS_PER_RECORD = 3 * len(GENERATORS) * 2  # difficulties x generators x conditions


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_TICK = os.sysconf("SC_CLK_TCK")
STEADY_MARGIN = 0.1  # the steady-state window leaves out this share of the requests after the first C


def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and all its descendants, live ones read now and reaped ones through
    their parent's cutime/cstime (Linux /proc; a process that ended meanwhile counts 0)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
        children = " ".join(p.read_text() for p in Path(f"/proc/{pid}/task").glob("*/children"))
    except OSError:
        return 0.0
    return total + sum(_tree_cpu(int(child)) for child in children.split())


class _Sampler:
    """Polls a client process tree's CPU and the server's request count every ``every`` s, from outside the
    client (nothing in the measured code changes). ``steady_ms`` is the CPU per request in steady state: a
    client with C requests in flight sends its first C at once and each later one when an answer comes back,
    so between the moments the server had received request C + m and request N - m (m = 10 % of the N - C
    requests after the first C) it received as many requests as the client got answers, with C in flight
    all along. Start-up (litellm's import, simulated predictions, scoring, the first burst) and wind-down
    (the last answers, the runner's repeats answered from the cache, its export) lie outside that window, so
    the figure is the per-request cost of a sent request and its answer, measured the same way for every
    client."""

    def __init__(self, log: Path, every: float = 0.005) -> None:
        self.log, self.every = log, every
        self.offset = log.stat().st_size if log.exists() else 0
        # (requests received so far, client tree CPU s, monotonic time s)
        self.samples: list[tuple[int, float, float]] = []

    def watch(self, proc: subprocess.Popen[str]) -> tuple[str, str]:
        """Sample until ``proc`` ends; returns its (stdout, stderr)."""
        out: list[str] = []
        err: list[str] = []
        readers = [
            threading.Thread(target=lambda s, b: b.append(s.read()), args=(stream, buf), daemon=True)
            for stream, buf in ((proc.stdout, out), (proc.stderr, err))
        ]
        for reader in readers:
            reader.start()
        seen = 0
        with open(self.log, "a+b") as handle:
            handle.seek(self.offset)
            while proc.poll() is None:
                seen += handle.read().count(b"\n")
                cpu = _tree_cpu(proc.pid)
                if cpu:
                    self.samples.append((seen, cpu, time.monotonic()))
                time.sleep(self.every)
        for reader in readers:
            reader.join()
        return "".join(out), "".join(err)

    def _window(
        self, requests: int, c: int
    ) -> tuple[tuple[int, float, float], tuple[int, float, float]] | None:
        """The first and last sample of the steady window of ``requests`` sent C at a time (None if too
        few samples fall in it)."""
        margin = STEADY_MARGIN * (requests - c)
        lo, hi = c + margin, requests - margin
        first = next((s for s in self.samples if s[0] >= lo), None)
        last = next((s for s in reversed(self.samples) if s[0] <= hi), None)
        if first is None or last is None or last[0] <= first[0]:
            return None
        return first, last

    def steady_ms(self, requests: int, c: int) -> float:
        """CPU ms per request in the steady window of ``requests`` sent C at a time (nan if too few)."""
        window = self._window(requests, c)
        if window is None:
            return float("nan")
        first, last = window
        return 1000 * (last[1] - first[1]) / (last[0] - first[0])

    def steady_rate(self, requests: int, c: int) -> float:
        """Requests per second the server received in the same steady window (nan if too few): the rate
        with C in flight throughout, without start-up and wind-down."""
        window = self._window(requests, c)
        if window is None or window[1][2] <= window[0][2]:
            return float("nan")
        first, last = window
        return (last[0] - first[0]) / (last[2] - first[2])


def _pipeline(
    folder: Path, limit: int, base_url: str | None, c: int, workers: int | None, model: str = MODEL
) -> Path:
    import yaml

    judges = []
    if base_url is not None:
        judges.append(
            {
                "model": model,
                "api_base": base_url,
                "api_key_env": KEY_ENV,
                "concurrency": c,
                "timeout_s": 60,
                "max_retries": 0,
            }
        )
    data: dict[str, Any] = {
        "name": "bench-runner",
        "dataset": str(DATASET),
        "limit": limit,
        "difficulties": ["easy", "medium", "hard"],
        "generators": GENERATORS,
        "judges": judges,
        "conditions": ["with_gt", "without_gt"],
        "concurrency": c,
        "cache": str(folder / "cache.sqlite"),
    }
    if workers is not None:
        data["workers"] = workers
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _price_case(model: str) -> str:
    """Whether litellm prices ``model``, as the runner's cost gate asks it (``models.prices.model_prices``;
    in a child process: this one never imports litellm)."""
    code = (
        "from agentjudge.models.prices import model_prices\n"
        "from agentjudge.types import ModelSettings\n"
        f"print('priced' if model_prices(ModelSettings(model={model!r})) else 'unpriced')"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    if out.stdout.split()[-1:] == ["priced"]:
        return "litellm prices it (runner and raw both pay litellm's price lookup)"
    return (
        "litellm has no price for it (after its first answer the runner hands litellm a placeholder price, "
        "sparing its failed price lookup; raw and threads do not)"
    )


def _run_runner(
    pipeline: Path,
    rundir: Path,
    src: str | None = None,
    sampler: _Sampler | None = None,
    stub: tuple[float, Path] | None = None,
) -> tuple[float, float, int]:
    """(judge-stage seconds, process CPU seconds incl. children, judge units done). ``src``: a source tree
    put first on PYTHONPATH (run from the pipeline's folder, so the current directory is not imported).
    ``sampler``: watches the run's process tree for the steady-state CPU per request. ``stub``: (latency,
    log): run it through ``stub_runner`` (litellm's call replaced, each call logged to ``log``)."""
    env = dict(os.environ, AGENTJUDGE_CACHE=str(rundir.parent / "default-cache.sqlite"))
    env[KEY_ENV] = "sk-bench"
    # the tree measured is first on PYTHONPATH: this bench's own tree unless ``src`` names another (an
    # editable install elsewhere in the venv must not decide which code the rows measure)
    tree = Path(src).resolve() if src is not None else Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    cpu0 = _children_cpu()
    proc = subprocess.Popen(
        [
            sys.executable,
            *(
                ["-m", "agentjudge"]
                if stub is None
                else [__file__, "--stub-runner", str(stub[0]), str(stub[1])]
            ),
            "run",
            str(pipeline),
            "--out",
            str(rundir),
        ],
        cwd=pipeline.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = sampler.watch(proc) if sampler is not None else proc.communicate()
    proc.wait()
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"agentjudge run failed ({proc.returncode}):\n{stdout[-3000:]}{stderr[-3000:]}")
    from agentjudge.rundir import RunFolder  # after the run: the runs are measured in children

    units = RunFolder.open(rundir).units(
        ["first_started_at", "finished_at", "status"], [("stage", "==", "judge")]
    )
    first = units["first_started_at"].min() if len(units) else None
    last, done = units["finished_at"].max(), int((units["status"] == "done").sum())
    if first is None:
        return 0.0, cpu, 0
    seconds = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    return seconds, cpu, int(done or 0)


def _call_kwargs(body: dict[str, Any], base_url: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": "openai/" + str(body["model"]),
        "messages": body["messages"],
        "api_base": base_url,
        "api_key": "sk-bench",
        "timeout": 60,
        "num_retries": 0,
        "max_retries": 0,
    }
    for name in ("temperature", "max_tokens", "response_format", "tools"):
        if body.get(name) is not None:
            kwargs[name] = body[name]
    return kwargs


def contender(
    kind: str, bodies_path: str, base_url: str, c: int, part: int = 0, parts: int = 1, wait: bool = False
) -> None:
    """Child process: replay the bodies with raw async or threads; print JSON figures. ``part``/``parts``:
    replay only every ``parts``-th body from the ``part``-th (one share of a ``raw xK`` run); ``wait``: after
    litellm's import print "ready" and start only when a line arrives on stdin (K shares start together)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    bodies = [json.loads(line) for line in Path(bodies_path).read_text().splitlines()][part::parts]
    calls = [_call_kwargs(b, base_url) for b in bodies]
    failures = 0
    if wait:
        print("ready", flush=True)
        sys.stdin.readline()
    start = time.time()  # wall clock: comparable across the K processes of a raw xK run
    t0 = time.perf_counter()
    if kind == "raw":

        async def main() -> int:
            sem = asyncio.Semaphore(c)

            async def one(kwargs: dict[str, Any]) -> bool:
                async with sem:
                    try:
                        await litellm.acompletion(**kwargs)
                        return True
                    except Exception:  # noqa: BLE001 - counted, printed
                        return False

            results = await asyncio.gather(*(one(k) for k in calls))
            return results.count(False)

        failures = asyncio.run(main())
    else:
        from concurrent.futures import ThreadPoolExecutor

        def one_sync(kwargs: dict[str, Any]) -> bool:
            try:
                litellm.completion(**kwargs)
                return True
            except Exception:  # noqa: BLE001
                return False

        with ThreadPoolExecutor(max_workers=c) as pool:
            failures = list(pool.map(one_sync, calls)).count(False)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)  # the whole process, litellm's import included
    cpu = usage.ru_utime + usage.ru_stime
    figures = {"calls": len(calls), "failures": failures, "seconds": wall, "cpu": cpu}
    print(json.dumps(figures | {"start": start, "end": start + wall}))


def stub_runner(latency: float, log: str, argv: list[str]) -> None:
    """Child process: ``agentjudge <argv>`` with ``litellm.acompletion`` replaced by a stub that logs the call
    (one line to ``log``, as the server logs a request), waits ``latency`` and returns one prepared answer:
    the runner's own CPU per call, without litellm's ~10 ms (and its noise) on top. Workers forked by the run
    inherit the stub."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from agentjudge.commands import main as agentjudge_main
    from agentjudge.models.litellm_import import litellm_module

    litellm = litellm_module()
    answer = litellm.ModelResponse(
        id="bench",
        created=0,
        model="bench-judge",
        object="chat.completion",
        choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}],
        usage={"prompt_tokens": 1000, "completion_tokens": 60, "total_tokens": 1060},
    )
    handle = open(log, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole run

    async def acompletion(**kwargs: Any) -> Any:
        handle.write(json.dumps({"model": kwargs.get("model")}) + "\n")
        handle.flush()
        await asyncio.sleep(latency)
        return answer

    litellm.acompletion = acompletion
    sys.argv = ["agentjudge", *argv]
    agentjudge_main()


def split_contender(bodies_path: str, base_url: str, c: int, k: int) -> None:
    """Child process of a ``raw xK`` row: raw litellm alone on K processes, what the runner's ``workers: K``
    could at best reach with litellm on this machine. K processes each replay every K-th body under its own
    share of C (C // K, the first C % K one more); all import litellm first and start together; figures are
    the sums, and the span from the first share's start to the last share's end."""
    shares = [c // k + (i < c % k) for i in range(k)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--contender",
                "raw",
                bodies_path,
                base_url,
                str(share),
                str(i),
                str(k),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, share in enumerate(shares)
    ]
    for proc in procs:  # every share has imported litellm
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            for other in procs:  # not left waiting to start on their own when this process exits
                other.kill()
            raise SystemExit("raw xK: a share ended before it was ready")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    parts = []
    for proc in procs:
        stdout, _ = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"raw xK: a share failed ({proc.returncode})")
        parts.append(json.loads(stdout.strip().splitlines()[-1]))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime + _children_cpu()
    seconds = max(p["end"] for p in parts) - min(p["start"] for p in parts)
    calls = sum(p["calls"] for p in parts)
    print(
        json.dumps(
            {"calls": calls, "failures": sum(p["failures"] for p in parts), "seconds": seconds, "cpu": cpu}
        )
    )


def _run_contender(kind: str, bodies: Path, base_url: str, c: int, sampler: _Sampler) -> dict[str, Any]:
    if kind.startswith("raw x"):
        argv = ["--split-contender", str(bodies), base_url, str(c), kind.removeprefix("raw x")]
    else:
        argv = ["--contender", kind, str(bodies), base_url, str(c)]
    proc = subprocess.Popen(
        [sys.executable, __file__, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = sampler.watch(proc)
    if proc.wait() != 0:
        raise SystemExit(f"{kind} failed:\n{stderr[-3000:]}")
    out: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    out["steady_ms"] = sampler.steady_ms(out["calls"], c)
    out["steady_rate"] = sampler.steady_rate(out["calls"], c)
    return out


class Server:
    """tests/fakeserver.py in its own process, answering after ``latency`` s and logging request bodies."""

    def __init__(self, latency: float, log: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKESERVER), "--latency", str(latency), "--text", ANSWER, "--log", str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        self.log = log

    def cpu_s(self) -> float | None:
        """The server process's CPU seconds so far (Linux /proc; None elsewhere): on a 2-core machine the
        loopback server's own CPU competes with every client measured here."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        cpu = self.cpu_s()
        self.proc.stdin.close()
        tail = self.proc.stdout.read().strip()
        self.proc.wait(timeout=30)
        requests = len(_lines(self.log))
        if cpu is not None and requests:
            tail += f"; server CPU {1000 * cpu / requests:.2f} ms/request over {requests} requests"
        return tail


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="C in {32, 128}, L = 200 ms, 600 calls")
    parser.add_argument("--records", type=int, default=None, help="base scenarios (30 calls each)")
    parser.add_argument("--workers", default=None, help="comma list of `workers:` values for runner rows")
    parser.add_argument("--concurrency", default=None, help="comma list of C (overrides the preset)")
    parser.add_argument("--latency-ms", default=None, help="comma list of L in ms (overrides the preset)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every client this many times, interleaved, and print medians (default 1)",
    )
    parser.add_argument(
        "--stubbed",
        action="store_true",
        help="also run every runner row with litellm's call replaced by a stub (rows 'stub runner ...'): "
        "the runner's own CPU per call",
    )
    parser.add_argument(
        "--model",
        default=MODEL,
        help=f"the judge's litellm model string (default {MODEL}, which litellm has no price for; "
        "e.g. openai/gpt-4o-mini for one it prices)",
    )
    parser.add_argument(
        "--src",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also run the runner from source tree DIR (rows 'runner[LABEL] ...'); repeatable",
    )
    args = parser.parse_args()
    trees: list[tuple[str, str | None]] = [("", None)]
    for item in args.src:
        label, sep, folder = item.partition("=")
        if not sep or not label or not (Path(folder) / "agentjudge").is_dir():
            parser.error(f"--src {item}: expected LABEL=DIR with DIR/agentjudge a source tree")
        trees.append((f"[{label}]", folder))
    records = args.records or (20 if args.quick else 60)
    cs = (
        [int(x) for x in args.concurrency.split(",")]
        if args.concurrency
        else ([32, 128] if args.quick else [8, 32, 128])
    )
    ls = (
        [int(x) / 1000 for x in args.latency_ms.split(",")]
        if args.latency_ms
        else ([0.2] if args.quick else [0.05, 0.2])
    )
    workers: list[int | None] = [int(x) for x in args.workers.split(",")] if args.workers else [None]
    n = records * CALLS_PER_RECORD
    print(f"bench_runner: {n} judge calls per client; cores {os.cpu_count()}; load {os.getloadavg()}")
    print(f"judge model {args.model}: {_price_case(args.model)}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        root = Path(tmp)
        # the runner's fixed cost (imports, simulated predictions, scoring, export) without the judge
        fixed_cpu: dict[str, float] = {}
        for label, src in trees:
            base_pipe = _pipeline(root / f"nojudge{label}", records, None, 8, workers[0])
            _, fixed_cpu[label], _ = _run_runner(base_pipe, root / f"nojudge{label}" / "run", src)
            print(
                f"runner{label} without the judge: {fixed_cpu[label]:.2f} s CPU "
                "(subtracted from its CPU below)"
            )
        for latency in ls:
            for c in cs:
                log = root / f"requests-{c}-{latency}.jsonl"
                server = Server(latency, log)
                row: dict[str, Any] = {"C": c, "L": latency, "limit": c / latency}
                runs: dict[str, list[dict[str, Any]]] = {}
                try:
                    first_bodies: list[str] | None = None
                    for turn in range(args.rounds):  # interleaved: every client once per round
                        for w in workers:
                            for label, src in trees:
                                name = f"runner{label}" + ("" if w is None else f" w={w}")
                                folder = root / f"run-{c}-{latency}-{w}{label}-{turn}"
                                pipe = _pipeline(folder, records, server.base_url, c, w, args.model)
                                before = len(_lines(log))
                                sampler = _Sampler(log)
                                seconds, cpu, done = _run_runner(pipe, folder / "run", src, sampler)
                                sent = _lines(log)[before:]
                                first_bodies = sent if first_bodies is None else first_bodies
                                runs.setdefault(name, []).append(
                                    _runner_figures(
                                        seconds, cpu - fixed_cpu[label], done, len(sent), sampler, c
                                    )
                                )
                        for w in workers if args.stubbed else []:
                            for label, src in trees:
                                name = f"stub runner{label}" + ("" if w is None else f" w={w}")
                                folder = root / f"stub-{c}-{latency}-{w}{label}-{turn}"
                                pipe = _pipeline(folder, records, server.base_url, c, w, args.model)
                                stub_log = folder / "calls.jsonl"
                                sampler = _Sampler(stub_log)
                                seconds, cpu, done = _run_runner(
                                    pipe, folder / "run", src, sampler, (latency, stub_log)
                                )
                                sent = _lines(stub_log)
                                runs.setdefault(name, []).append(
                                    _runner_figures(
                                        seconds, cpu - fixed_cpu[label], done, len(sent), sampler, c
                                    )
                                )
                        # raw and threads send exactly the requests the first runner row sent (identical
                        # judge prompts of two generators are asked once by the runner: fewer requests
                        # than units)
                        bodies = root / f"bodies-{c}-{latency}.jsonl"
                        bodies.write_text("".join(first_bodies or []))
                        # (not with C < K: a share would have no concurrency at all)
                        split = [f"raw x{w}" for w in workers if w is not None and 1 < w <= c]
                        for kind in ("raw", "threads", *split):
                            out = _run_contender(kind, bodies, server.base_url, c, _Sampler(log))
                            runs.setdefault(kind, []).append(
                                {
                                    "rate": out["calls"] / out["seconds"],
                                    "req_rate": out["calls"] / out["seconds"],
                                    "cpu_ms": 1000 * out["cpu"] / out["calls"],
                                    "steady_ms": out["steady_ms"],
                                    "steady_rate": out["steady_rate"],
                                    "done": out["calls"] - out["failures"],
                                    "requests": out["calls"],
                                }
                            )
                finally:
                    row["server"] = server.close()
                for name, figs in runs.items():  # medians over the rounds, each figure on its own
                    row[name] = {k: statistics.median(f[k] for f in figs) for k in figs[0]}
                    row[name]["steady_all"] = [f["steady_ms"] for f in figs]
                    row[name]["rate_all"] = [f["req_rate"] for f in figs]
                rows.append(row)
                _print_row(row)
                _print_stubbed(row)
    _print_goals(rows)
    # Place for the offline paper-shaped grid timing (issue 15 part B, bench/bench_grid.py): the lead glues
    # its wall / peak memory / no-op re-run figures and goals in here.
    print(f"load after: {os.getloadavg()}")


def _runner_figures(
    seconds: float, cpu: float, done: int, requests: int, sampler: _Sampler, c: int
) -> dict[str, Any]:
    """One runner run's figures: ``cpu`` is its CPU less the run without the judge, ``requests`` the calls
    it sent (to the server, or to the stub)."""
    return {
        "rate": done / seconds if seconds else 0.0,
        "req_rate": requests / seconds if seconds else 0.0,
        "cpu_ms": 1000 * cpu / max(requests, 1),
        "steady_ms": sampler.steady_ms(requests, c),
        "steady_rate": sampler.steady_rate(requests, c),
        "done": done,
        "requests": requests,
    }


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines(keepends=True) if log.exists() else []


def _print_row(row: dict[str, Any]) -> None:
    ceiling = f"ceiling {row['limit']:.0f} calls/s"
    print(f"\nC={row['C']}, L={row['L'] * 1000:.0f} ms ({ceiling}); server {row['server']}")
    print(
        f"  {'client':<20} {'units/s':>8} {'requests/s':>10} {'% of C/L':>9} {'CPU ms/request':>15} "
        f"{'units':>6} {'requests':>8} {'steady CPU ms/request':>22} {'steady %':>9}  "
        "rounds: requests/s; steady CPU"
    )
    for name, fig in row.items():
        if isinstance(fig, dict):
            pct = 100 * fig["req_rate"] / row["limit"]
            each = " ".join(f"{r:.0f}" for r in fig["rate_all"])
            each += "; " + " ".join(f"{m:.2f}" for m in fig["steady_all"])
            steady_pct = 100 * fig["steady_rate"] / row["limit"]
            print(
                f"  {name:<20} {fig['rate']:>8.1f} {fig['req_rate']:>10.1f} {pct:>8.1f}% "
                f"{fig['cpu_ms']:>15.2f} {fig['done']:>6.0f} {fig['requests']:>8.0f} "
                f"{fig['steady_ms']:>22.2f} {steady_pct:>8.1f}%  {each}"
            )
    for name in [k for k in row if k.startswith("runner")]:
        r = row[name]["req_rate"]
        split = f"raw x{_workers_of(name)}"
        versus_split = f"÷ {split} {r / row[split]['req_rate']:.2f}, " if split in row else ""
        print(
            f"  {name} requests/s ÷ raw async {r / row['raw']['req_rate']:.2f}, {versus_split}"
            f"÷ threads {r / row['threads']['req_rate']:.2f}; "
            f"CPU/request − raw: {row[name]['cpu_ms'] - row['raw']['cpu_ms']:+.2f} ms, "
            f"steady: {row[name]['steady_ms'] - row['raw']['steady_ms']:+.2f} ms"
        )
    for name in [k for k in row if k.startswith("runner[")]:  # --src rows: this tree against them
        mine = "runner" + name.partition("]")[2]
        if mine in row:
            ratio = row[mine]["req_rate"] / row[name]["req_rate"]
            delta = row[mine]["cpu_ms"] - row[name]["cpu_ms"]
            steady = row[mine]["steady_ms"] - row[name]["steady_ms"]
            print(
                f"  {mine} ÷ {name}: requests/s {ratio:.2f}, CPU/request {delta:+.2f} ms, "
                f"steady {steady:+.2f} ms"
            )


def _print_stubbed(row: dict[str, Any]) -> None:
    """The ``--stubbed`` rows read: the runner's own steady CPU per call (litellm replaced; the stub's own
    few µs per call, a log line and a sleep, included), printed beside the real row's steady gap to raw, of
    which it is the part the runner's code would explain if litellm cost the same in both."""
    for name in [k for k in row if k.startswith("stub runner")]:
        real = name.removeprefix("stub ")
        gap = ""
        if real in row:
            gap = f"; its steady gap to raw {row[real]['steady_ms'] - row['raw']['steady_ms']:+.2f} ms"
        print(f"  {real}: own CPU per call (litellm stubbed, steady) {row[name]['steady_ms']:.2f} ms{gap}")


def _print_goals(rows: list[dict[str, Any]]) -> None:
    """The issue's goals next to this run's figures (never asserted)."""
    print("\nGoals (issue 15), this run:")
    for name in sorted({k for row in rows for k in row if k.startswith("runner")}):
        for row in rows:
            ratio = row[name]["req_rate"] / row["raw"]["req_rate"]
            goal = 1.5 if row["C"] == 128 else 1.0
            verdict = "PASS" if ratio >= goal else "MISS"
            where = f"C={row['C']}, L={row['L'] * 1000:.0f} ms"
            print(f"  {name}: runner ÷ raw async ≥ {goal} at {where}: {ratio:.2f} {verdict}")
            cpu_gap = row[name]["steady_ms"] - row["raw"]["steady_ms"]
            verdict = "PASS" if cpu_gap <= 0.5 else "MISS"
            print(
                f"  {name}: CPU/call within 0.5 ms of raw at {where} (steady state): {cpu_gap:+.2f} ms "
                f"{verdict}{_per_round(row[name]['steady_all'], row['raw']['steady_all'], '{:+.2f}')}"
            )
            split = f"raw x{_workers_of(name)}"
            if split in row:  # the gap in two: litellm's own on K processes, then the runner's over that
                litellm_k = row[split]["steady_ms"] - row["raw"]["steady_ms"]
                print(
                    f"    of which litellm itself on {_workers_of(name)} processes ({split} − raw): "
                    f"{litellm_k:+.2f} ms; the runner over {split}: {cpu_gap - litellm_k:+.2f} ms"
                )
            if row["C"] == 32 and abs(row["L"] - 0.2) < 1e-9:
                pct = 100 * row[name]["req_rate"] / row["limit"]
                steady = 100 * row[name]["steady_rate"] / row["limit"]
                verdict = "PASS" if pct >= 85 else "MISS"
                each = [100 * r / row["limit"] for r in row[name]["rate_all"]]
                print(
                    f"  {name}: ≥ 85 % of C/L at C=32, L=200 ms: {pct:.1f} % {verdict} "
                    f"(steady state {steady:.1f} %){_per_round(each, None, '{:.1f}')}"
                )
    for row in rows:  # what litellm reaches on its own here: the ceiling any runner row can approach
        if row["C"] == 32 and abs(row["L"] - 0.2) < 1e-9:
            alone = [k for k in row if isinstance(row[k], dict) and k.startswith("raw")]
            figures = ", ".join(
                f"{k} {100 * row[k]['req_rate'] / row['limit']:.1f} % "
                f"(steady {100 * row[k]['steady_rate'] / row['limit']:.1f} %)"
                for k in alone
            )
            print(f"  litellm alone at C=32, L=200 ms, % of C/L: {figures}")
    print("  (≥ 1.5 at C=128 is the goal 'with both cores': read it for the workers ≥ 2 rows)")


def _per_round(figures: list[float], minus: list[float] | None, form: str) -> str:
    """With two rounds or more, each round's figure (less ``minus``'s figure of the same round: the two
    clients ran one after the other in that round), so a verdict within the sitting-to-sitting swing shows
    as such."""
    if len(figures) < 2:
        return ""
    values = figures if minus is None else [a - b for a, b in zip(figures, minus, strict=True)]
    return "; per round: " + " ".join(form.format(v) for v in values)


def _workers_of(name: str) -> str:
    """'runner[base] w=2' -> '2' ('' for a row without ``--workers``)."""
    return name.rpartition(" w=")[2] if " w=" in name else ""


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--contender":
        part, parts = (int(sys.argv[6]), int(sys.argv[7])) if len(sys.argv) > 7 else (0, 1)
        contender(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), part, parts, wait=parts > 1)
    elif len(sys.argv) > 1 and sys.argv[1] == "--stub-runner":
        stub_runner(float(sys.argv[2]), sys.argv[3], sys.argv[4:])
    elif len(sys.argv) > 1 and sys.argv[1] == "--split-contender":
        split_contender(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
