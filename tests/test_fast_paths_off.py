"""``AGENTJUDGE_NO_FAST_PATHS=1`` turns every speed-up of ``agentjudge/fastpaths/`` off and changes no byte.

Two legs run the same pipeline twice as ``python -m agentjudge`` (a process of its own, as a user runs it:
the lean export only applies there), once as shipped and once with the switch set, and compare the files:

* a small grid with two LLM judges behind the loopback server and two worker processes (the httpx share
  wrapper, the inline request building, the per-call price hint for a priced and an unpriced judge,
  litellm's warm-up and the collector's pause and freezes all run), in the default suite;
* the quick start with its report (``-m slow``, 1.5 to 2 min on two cores; ``.ci/run`` runs it as its own
  step).

Each path's own test of "off" is below them: what the switch leaves undone, one by one.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_runner import _verdict_json, write_pipeline

from agentjudge import fastpaths
from agentjudge.fastpaths import env_scan, heap, http_shares, inline_executor, lean_export, litellm_warmup
from agentjudge.fastpaths.litellm_pricing import litellm_pricing
from agentjudge.resources import shipped_pipeline
from agentjudge.types import ModelSettings

ROOT = Path(__file__).resolve().parents[1]
FILES = ("predictions.parquet", "scores.parquet", "judgments.parquet")


def _agentjudge(args: list[str], fast_paths: bool, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != fastpaths.OFF_SWITCH}
    if not fast_paths:
        env[fastpaths.OFF_SWITCH] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "agentjudge", *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def _digests(folder: Path, names: list[str]) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in names}


def test_the_switch_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fastpaths.OFF_SWITCH, raising=False)
    assert fastpaths.enabled()
    for on in ("", "0"):
        monkeypatch.setenv(fastpaths.OFF_SWITCH, on)
        assert fastpaths.enabled()
    for off in ("1", "true", "yes"):
        monkeypatch.setenv(fastpaths.OFF_SWITCH, off)
        assert not fastpaths.enabled()


def test_core_code_never_reads_the_switch_itself() -> None:
    """No module outside agentjudge/fastpaths/ names the variable (core code asks ``fastpaths.enabled``)."""
    readers = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "agentjudge").rglob("*.py"))
        if "NO_FAST_PATHS" in path.read_text(encoding="utf-8") and path.parent.name != "fastpaths"
    ]
    assert readers == []


def test_a_grid_of_llm_judges_in_worker_processes_writes_the_same_bytes_with_the_fast_paths_off(
    tmp_path: Path, fake_llm: Any
) -> None:
    fake_llm.set_responder(lambda request: _verdict_json(0.5 if "test-0001" in str(request) else 1.0))
    priced = fake_llm.settings(name="priced", input_cost_per_token=1e-6, output_cost_per_token=2e-6)
    unpriced = fake_llm.settings(model="openai/no-price-known-model", name="unpriced")
    judges = [s.model_dump(exclude_defaults=True) for s in (priced, unpriced)]
    digests, sent = [], []
    for leg, fast in (("fast", True), ("plain", False)):
        folder = tmp_path / leg  # a call cache of its own: each leg sends its requests
        before = len(fake_llm.requests)
        pipeline = write_pipeline(
            folder, generators=["sim/weak", "sim/perfect"], judges=judges, conditions=["with_gt"], workers=2
        )
        _agentjudge(["run", str(pipeline), "--out", str(folder / "run")], fast, folder)
        digests.append(_digests(folder / "run", list(FILES)))
        sent.append(len(fake_llm.requests) - before)
    assert digests[0] == digests[1]
    assert sent[0] == sent[1] > 0  # each leg asked the server itself


@pytest.mark.slow
def test_the_quick_start_writes_the_same_files_and_report_tables_with_the_fast_paths_off(
    tmp_path: Path,
) -> None:
    pipeline = shipped_pipeline("quickstart")
    digests = []
    for leg, fast in (("fast", True), ("plain", False)):
        out = tmp_path / leg
        _agentjudge(["run", str(pipeline), "--out", str(out)], fast, tmp_path)
        _agentjudge(["report", str(out)], fast, tmp_path)
        tables = sorted(p.relative_to(out).as_posix() for p in (out / "report" / "tables").glob("*.csv"))
        assert tables
        digests.append(_digests(out, [*FILES, *tables]))
    assert digests[0] == digests[1]


# ------------------------------------------------------------------------- each path, switched off
@pytest.fixture
def switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastpaths.OFF_SWITCH, "1")


def test_the_collector_is_neither_paused_nor_frozen(switched_off: None) -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with heap.collector_paused():
        assert gc.isenabled()
    heap.freeze()
    litellm_warmup.warm_up()
    assert gc.get_freeze_count() == frozen


def test_nothing_is_kept_out_of_the_export(switched_off: None) -> None:
    before = list(sys.meta_path)
    with lean_export.lean_imports():
        assert sys.meta_path == before


def test_the_loop_keeps_asyncios_executor(switched_off: None) -> None:
    from agentjudge.models.litellm_import import litellm_module

    litellm_module()  # loaded: with the fast paths on, the inline executor would be installed

    async def install() -> Any:
        return inline_executor.install_if_loaded()

    assert asyncio.run(install()) is None


def test_litellm_gets_no_price_hint(switched_off: None) -> None:
    paid = ModelSettings(model="openai/paid", input_cost_per_token=2e-6, output_cost_per_token=8e-6)
    free = ModelSettings(model="openai/local", input_cost_per_token=0.0, output_cost_per_token=0.0)
    assert litellm_pricing(paid, unpriced=False) == {} == litellm_pricing(free, unpriced=True)


def test_a_share_is_held_around_whole_calls(switched_off: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_shares, "_installed", False)
    http_shares.install()
    assert http_shares._installed is False  # httpx is not wrapped
    share = asyncio.Semaphore(2)
    assert http_shares.HttpShares().slot("m", share, lambda: True) == (None, share)


def test_the_environment_is_scanned_on_every_call(
    switched_off: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = re.compile(r"_FAST_PATHS_PROBE_KEY$")
    monkeypatch.setenv("X_FAST_PATHS_PROBE_KEY", "first-value")
    assert env_scan.matching_values(name) == {"first-value"}
    monkeypatch.setattr(env_scan, "_SCAN", (tuple(os.environ.items()), name, frozenset({"stale"})))
    assert env_scan.matching_values(name) == {"first-value"}  # not the remembered scan
