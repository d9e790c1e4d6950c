"""Where raw ``litellm.acompletion`` spends its CPU per call, and what a caller's settings change (issue 15).

The runner cannot be cheaper per call than litellm itself, so this measures litellm alone: judge-sized
request bodies (the mini split's judge prompts, built by ``agentjudge run`` against a logging loopback
server) are replayed with ``litellm.acompletion`` under a semaphore against tests/fakeserver.py (answers at
once), after a warm-up, and the process's CPU per call is printed for each variant, in turns (A B C A B C),
so that load from other jobs falls on all of them alike. litellm's import (~3 s of CPU) is not counted here;
``bench/bench_runner.py`` counts it, as a user's process pays it.

Variants (each a documented litellm setting or call argument):
* ``plain``: as the runner calls it (aiohttp transport, litellm's own price lookup);
* ``httpx``: ``litellm.disable_aiohttp_transport = True`` (the older transport);
* ``price``: per-call custom pricing ``input_cost_per_token``/``output_cost_per_token`` (what the runner
  passes when the pipeline gives a price);
* ``zero_price``: the same at $0 (litellm then runs its zero-cost diagnostic: no saving);
* ``no_log``: the ``no-log`` call argument (skips callbacks; none are registered here).

``--profile`` also prints where the ``plain`` calls' CPU goes (cProfile, cumulative, grouped by stage).

    python bench/bench_litellm_calls.py [--calls 944] [--rounds 2] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_runner import KEY_ENV, Server, _call_kwargs, _pipeline  # noqa: E402

VARIANTS = ("plain", "httpx", "price", "zero_price", "no_log")
# (label, file suffix, function name): cumulative CPU of these frames, as shares of the whole call
STAGES = (
    ("whole call (wrapper_async + its success-logging task)", "litellm/utils.py", "wrapper_async"),
    ("  logging object and call set-up (function_setup)", "litellm/utils.py", "function_setup"),
    ("  openai SDK: build request, send, parse", "openai/_base_client.py", "post"),
    ("    of which building the request", "openai/_base_client.py", "_build_request"),
    ("    of which the HTTP transport (httpx over aiohttp)", "httpx/_client.py", "send"),
    ("    of which parsing the response", "openai/_legacy_response.py", "parse"),
    ("  pricing the answer (response_cost_calculator)", "litellm_logging.py", "response_cost_calculator"),
    ("    of which the zero-cost diagnostic", "litellm_logging.py", "_record_zero_cost_diagnostic"),
    ("    of which price-map lookups (get_model_info)", "litellm/utils.py", "get_model_info"),
    ("  success logging payload (async_success_handler)", "litellm_logging.py", "async_success_handler"),
)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _bodies(folder: Path) -> list[dict[str, Any]]:
    """The judge requests ``agentjudge run`` sends for the mini split (20 base scenarios)."""
    log = folder / "requests.jsonl"
    server = Server(0.0, log)
    try:
        pipe = _pipeline(folder, 20, server.base_url, 32, 1)
        env = dict(os.environ, AGENTJUDGE_CACHE=str(folder / "cache.sqlite"), **{KEY_ENV: "sk-bench"})
        subprocess.run(
            [sys.executable, "-m", "agentjudge", "run", str(pipe), "--out", str(folder / "run")],
            env=env,
            cwd=folder,
            check=True,
            capture_output=True,
        )
    finally:
        server.close()
    return [json.loads(line) for line in log.read_text().splitlines()]


def _variant_calls(name: str, bodies: list[dict[str, Any]], base_url: str) -> list[dict[str, Any]]:
    calls = [_call_kwargs(b, base_url) for b in bodies]
    for kwargs in calls:
        if name == "price":
            kwargs.update(input_cost_per_token=1e-6, output_cost_per_token=2e-6)
        elif name == "zero_price":
            kwargs.update(input_cost_per_token=0.0, output_cost_per_token=0.0)
        elif name == "no_log":
            kwargs["no-log"] = True
    return calls


async def _replay(litellm: Any, calls: list[dict[str, Any]], concurrency: int) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def one(kwargs: dict[str, Any]) -> None:
        async with sem:
            await litellm.acompletion(**kwargs)

    await asyncio.gather(*(one(k) for k in calls))
    await asyncio.sleep(0.2)  # litellm's success-logging tasks finish


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=944, help="calls per variant and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    with tempfile.TemporaryDirectory(prefix="bench-litellm-") as tmp:
        bodies = _bodies(Path(tmp))
        bodies = (bodies * (args.calls // len(bodies) + 1))[: args.calls]
        server = Server(0.0, Path(tmp) / "replay.jsonl")
        load = os.getloadavg()
        print(f"{len(bodies)} judge-sized calls per variant and round, C={args.concurrency}; load {load}")
        try:
            results: dict[str, list[float]] = {v: [] for v in VARIANTS}
            warm = _variant_calls("plain", bodies[:64], server.base_url)
            asyncio.run(_replay(litellm, warm, args.concurrency))
            for _ in range(args.rounds):
                for name in VARIANTS:
                    litellm.disable_aiohttp_transport = name == "httpx"
                    calls = _variant_calls(name, bodies, server.base_url)
                    start, t0 = _cpu(), time.perf_counter()
                    asyncio.run(_replay(litellm, calls, args.concurrency))
                    results[name].append(1000 * (_cpu() - start) / len(calls))
                    wall = time.perf_counter() - t0
                    print(f"  {name:<11} {results[name][-1]:6.2f} ms CPU/call ({wall:.1f} s)")
            litellm.disable_aiohttp_transport = False
            plain = min(results["plain"])
            print("\nbest of rounds, CPU ms per call (and vs plain):")
            for name in VARIANTS:
                best = min(results[name])
                print(f"  {name:<11} {best:6.2f}  ({best - plain:+.2f})")
            if args.profile:
                _profile(litellm, _variant_calls("plain", bodies, server.base_url), args.concurrency)
        finally:
            server.close()


def _profile(litellm: Any, calls: list[dict[str, Any]], concurrency: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(_replay(litellm, calls, concurrency))
    profiler.disable()
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]

    def cumulative(suffix: str, function: str) -> float:
        return max(
            (row[3] for (path, _, name), row in stats.items() if name == function and path.endswith(suffix)),
            default=0.0,
        )

    whole = cumulative("litellm/utils.py", "wrapper_async") + cumulative(
        "litellm_logging.py", "async_success_handler"
    )
    print(f"\nwhere a plain call's CPU goes (cProfile, {len(calls)} calls; shares of {whole:.2f} s):")
    for label, suffix, function in STAGES:
        value = cumulative(suffix, function)
        if function == "wrapper_async":
            value = whole
        print(f"  {100 * value / whole:5.1f} %  {label}")


if __name__ == "__main__":
    main()
