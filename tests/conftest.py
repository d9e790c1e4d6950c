"""Shared fixtures: the scripted OpenAI-compatible server and an isolated call cache for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# hypothesis' pytest plugin imports hypothesis in its terminal summary when no test of the session did;
# that import (assertion-rewritten) can hit CPython 3.11.7's AST recursion-depth bug (gh-106905) and end a
# run whose tests all passed with INTERNALERROR. Imported here, at collection, it is never imported late.
import hypothesis  # noqa: F401
import pytest

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before anything imports litellm: no network

from fakeserver import TEST_KEY, TEST_KEY_ENV, FakeLLM  # noqa: E402 - after the env var on purpose


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache file (AGENTJUDGE_CACHE) and the dummy key; nothing touches ~/.cache."""
    path = tmp_path_factory.mktemp("cache") / "calls.sqlite"
    monkeypatch.setenv("AGENTJUDGE_CACHE", str(path))
    monkeypatch.setenv(TEST_KEY_ENV, TEST_KEY)
    return path


@pytest.fixture
def cache_path(_isolated_cache: Path) -> Path:
    """The per-test cache file that ``CallCache()`` uses by default."""
    return _isolated_cache


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running fake OpenAI server; see tests/fakeserver.py for the scripting API."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def litellm_kwargs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every ``litellm.acompletion`` call this test makes, in order; the calls
    themselves go through to litellm unchanged."""
    from agentjudge.models.litellm_import import litellm_module

    litellm = litellm_module()
    seen: list[dict[str, Any]] = []
    original = litellm.acompletion

    async def recording(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return await original(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", recording)
    return seen
