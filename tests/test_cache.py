"""CallCache: content addressing, concurrency (threads and processes), CLI helpers."""

from __future__ import annotations

import gc
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentjudge.commands import app
from agentjudge.commands.cache import clear_cli, stats_cli
from agentjudge.models.cache import CallCache, cache_key, default_cache_path
from agentjudge.models.client import ModelClient
from agentjudge.types import ModelSettings

BASE = ModelSettings(
    model="openai/m", api_base="http://x/v1", temperature=0.0, max_tokens=10, extra={"top_p": 1}
)
MSG = [{"role": "user", "content": "hi"}]


def key_of(settings: ModelSettings = BASE, **kw: object) -> str:
    fields = {"messages": MSG, "tools": None, "temperature": None, "sample_index": 0, **kw}
    return cache_key(ModelClient.request_fields(settings, **fields))  # type: ignore[arg-type]


def test_default_path_follows_env(cache_path: Path) -> None:
    assert default_cache_path() == cache_path
    assert CallCache().path == cache_path


def test_key_is_canonical_and_sensitive_to_every_answer_changing_field() -> None:
    assert key_of() == key_of()
    reordered = ModelSettings(
        model="openai/m", api_base="http://x/v1", extra={"top_p": 1}, max_tokens=10, temperature=0.0
    )
    assert key_of(reordered) == key_of()
    variants = [
        key_of(BASE.model_copy(update={"model": "openai/other"})),
        key_of(BASE.model_copy(update={"api_base": "http://y/v1"})),
        key_of(BASE.model_copy(update={"max_tokens": 11})),
        key_of(BASE.model_copy(update={"extra": {"top_p": 0.9}})),
        key_of(temperature=0.7),
        key_of(sample_index=1),
        key_of(messages=[{"role": "user", "content": "hi!"}]),
        key_of(tools=[{"type": "function", "function": {"name": "t", "parameters": {}}}]),
    ]
    assert len({key_of(), *variants}) == len(variants) + 1


def test_key_ignores_credentials_and_display_name() -> None:
    renamed = BASE.model_copy(update={"api_key_env": "SOME_OTHER_KEY", "name": "nice name", "timeout_s": 5.0})
    assert key_of(renamed) == key_of()
    fields = ModelClient.request_fields(BASE, MSG, None, None, 0)
    assert "api_key" not in fields and "api_key_env" not in fields


def test_get_put_hits_stats_clear(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "sub" / "c.sqlite")
    assert cache.get("missing") is None
    cache.put("k1", "model-a", {"text": "ünïcode"})
    cache.put("k2", "model-a", {"text": "two"})
    cache.put("k3", "model-b", {"text": "three"})
    assert cache.get("k1") == {"text": "ünïcode"}
    assert cache.get("k1") is not None
    stats = cache.stats()
    assert stats["entries"] == 3 and stats["size_bytes"] > 0
    assert stats["per_model"] == {"model-a": {"entries": 2, "hits": 2}, "model-b": {"entries": 1, "hits": 0}}
    assert cache.clear("model-a") == 2
    assert len(cache) == 1 and cache.get("k3") == {"text": "three"}
    assert cache.clear() == 1 and len(cache) == 0


def test_put_again_replaces_the_answer_and_keeps_the_hits(tmp_path: Path) -> None:
    """An overwrite (an unreadable entry asked again) replaces model, time and answer; the hit count stays."""
    cache = CallCache(tmp_path / "c.sqlite")
    cache.put("k", "model-a", {"text": "old"})
    assert cache.get("k") == {"text": "old"} and cache.get("k") is not None
    cache.put("k", "model-b", '{"text":"new"}')
    assert cache.get("k") == {"text": "new"}
    assert cache.stats()["per_model"] == {"model-b": {"entries": 1, "hits": 3}}
    assert len(cache) == 1


def _hits_on_disk(path: Path) -> dict[str, int]:
    """The hit counts another process would read now."""
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, hits FROM calls").fetchall())


def test_hits_are_written_in_groups_not_one_transaction_per_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hit is counted in memory; the counts are written together when the group is full
    (``HIT_GROUP`` keys), when it is ``HIT_INTERVAL_S`` old, or when asked (stats, close, ``flush_hits``)."""
    from agentjudge.models import cache as cache_module

    monkeypatch.setattr(cache_module, "HIT_GROUP", 3)
    clock = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: clock[0])
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)
    for key in ("a", "b", "c", "d"):
        cache.put(key, "m", {"k": key})
    assert cache.get("a") and cache.get("a") and cache.get("b")
    assert _hits_on_disk(path) == {"a": 0, "b": 0, "c": 0, "d": 0}  # not a write per hit
    assert cache.get("c")  # the third key fills the group: written together
    assert _hits_on_disk(path) == {"a": 2, "b": 1, "c": 1, "d": 0}
    assert cache.get("d")
    clock[0] += cache_module.HIT_INTERVAL_S - 0.01
    assert cache.get("d") and _hits_on_disk(path)["d"] == 0
    clock[0] += 0.02  # the group's first hit is HIT_INTERVAL_S old: written, however small the group
    assert cache.get("a") and _hits_on_disk(path) == {"a": 3, "b": 1, "c": 1, "d": 2}
    assert cache.get("b")
    assert cache.stats()["hits"] == 8  # stats write the counts first
    assert cache.get("c")
    cache.close()
    assert _hits_on_disk(path) == {"a": 3, "b": 2, "c": 2, "d": 2}


def test_hit_counts_survive_the_process_exit_and_the_objects_collection(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from agentjudge.models.cache import CallCache\n"
        "cache = CallCache(Path(sys.argv[1]))\n"
        "cache.put('k', 'm', {'x': 1})\n"
        "assert cache.get('k') and cache.get('k')\n"  # pending at exit
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "not written" not in done.stderr
    assert _hits_on_disk(path) == {"k": 2}
    cache = CallCache(path)
    assert cache.get("k")
    del cache
    gc.collect()
    assert _hits_on_disk(path) == {"k": 3}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_writes_its_own_hits_not_its_parents(tmp_path: Path) -> None:
    """Worker processes are forked: a child must not write the hits its parent counted before the fork
    (the parent writes those), or they would be counted twice."""
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)
    cache.put("k", "m", {"x": 1})
    assert cache.get("k")  # pending in the parent
    pid = os.fork()
    if pid == 0:  # the child: one hit of its own, written, then the way a worker ends
        code = 1
        try:
            code = 0 if cache.get("k") else 1
            cache.flush_hits()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _hits_on_disk(path) == {"k": 1}  # the child's hit only
    cache.flush_hits()
    assert _hits_on_disk(path) == {"k": 2}


def test_concurrent_writers_threads(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(50):
                cache.put(f"t{t}-{i}", f"m{t % 2}", {"i": i, "t": t})
                assert cache.get(f"t{t}-{i}") == {"i": i, "t": t}
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(cache) == 400


WRITER = """
import sys
from pathlib import Path
from agentjudge.models.cache import CallCache
cache, worker = CallCache(Path(sys.argv[1])), int(sys.argv[2])
for i in range(40):
    cache.put(f"p{worker}-{i}", "m", {"worker": worker, "i": i})
    cache.put("shared", "m", {"worker": worker})  # the same key from every process
"""


def test_concurrent_writers_processes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    CallCache(path).put("seed", "m", {})
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w)]) for w in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    cache = CallCache(path)
    assert len(cache) == 1 + 4 * 40 + 1
    assert cache.get("shared") in [{"worker": w} for w in range(4)]


def test_stats_and_clear_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite"
    assert stats_cli(path) == 2  # explicit path that does not exist
    cache = CallCache(path)
    cache.put("a", "openai/x", {"t": 1})
    cache.put("b", "openai/y", {"t": 2})
    cache.close()
    assert stats_cli(path) == 0
    out = capsys.readouterr().out
    assert "2 entries" in out and "openai/x" in out and "openai/y" in out
    assert clear_cli(path, model="openai/x") == 0
    assert "Deleted 1 cached answers of model openai/x" in capsys.readouterr().out
    assert len(CallCache(path)) == 1


def test_cli_verbs_use_default_path(cache_path: Path) -> None:
    CallCache().put("a", "openai/x", {"t": 1})
    runner = CliRunner()
    result = runner.invoke(app, ["cache", "stats"])
    assert result.exit_code == 0, result.output
    assert "1 entries" in result.output
    result = runner.invoke(app, ["cache", "clear"])
    assert result.exit_code == 0 and "Deleted 1" in result.output
    assert len(CallCache()) == 0


def test_not_a_database_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not sqlite" * 100)
    assert stats_cli(bad) == 2
    assert "not a readable cache" in capsys.readouterr().err
