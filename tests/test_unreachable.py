"""An endpoint that cannot be reached fails fast and says so (issue 36).

Real loopback HTTP (tests/fakeserver.py) and real failures: a port where nothing listens (connection
refused), a host under the reserved ``.invalid`` domain (never resolves, no network needed), and a server
that closes every chat connection unanswered. A model none of whose calls has ever connected is stopped
after its first call's retries (``unreachable``, reason ``connection``); one that answered before keeps its
retries through a short outage.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from fakeserver import TEST_KEY_ENV, FakeLLM
from test_preflight import _free_port
from test_runner import write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.models.client import ModelCallError, ModelClient, endpoint_of
from agentjudge.models.failures import is_model_fatal, reason_of_kind
from agentjudge.types import ModelSettings

MSG = [{"role": "user", "content": "say hello"}]


def _settings(api_base: str, **kw: object) -> ModelSettings:
    values: dict[str, object] = {
        "model": "openai/test-model",
        "api_base": api_base,
        "api_key_env": TEST_KEY_ENV,
        "timeout_s": 2.0,
        "max_retries": 3,
    }
    return ModelSettings(**(values | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "api_base",
    [
        pytest.param("refused", id="connection-refused"),
        pytest.param("http://no-such-host.invalid/v1", id="dns"),
    ],
)
async def test_a_model_that_never_connected_is_stopped_after_one_calls_retries(api_base: str) -> None:
    if api_base == "refused":
        api_base = f"http://127.0.0.1:{_free_port()}/v1"
    settings = _settings(api_base)
    client = ModelClient(backoff_base_s=0.01)
    with pytest.raises(ModelCallError) as first:
        await client.complete(settings, MSG)
    assert first.value.kind == "unreachable" and first.value.attempts == 4  # 1 + max_retries
    message = first.value.message
    assert api_base in message and "could not connect" in message and "--probe" in message
    assert reason_of_kind(first.value.kind) == "connection"
    assert is_model_fatal(first.value.kind)
    stats = client.stats.model(settings.display_name)
    assert stats.requests == 4 and stats.retries_by_kind == {"connection": 3}
    with pytest.raises(ModelCallError) as second:  # every later call fails at once, unsent
        await client.complete(settings, [{"role": "user", "content": "another question"}])
    assert second.value.kind == "unreachable" and second.value.attempts == 0
    assert "the model is stopped" in second.value.message
    assert client.stats.model(settings.display_name).requests == 4


@pytest.mark.parametrize(
    "model",
    [
        "openai/test-model",
        "hosted_vllm/test-model",
        "anthropic/claude-3-haiku-20240307",
        "mistral/test-model",
    ],
)
@pytest.mark.parametrize("dead", ["refused", "dropped"])
async def test_every_provider_classes_a_failed_connection_as_connection_and_stops_after_one_call(
    model: str, dead: str, fake_llm: FakeLLM
) -> None:
    """litellm wraps a refused or dropped connection of hosted_vllm/, anthropic/, mistral/ as an
    InternalServerError (status 500): it is a connection failure all the same, and a model that never
    connected is stopped after one call's retries, as openai/ is."""
    if dead == "refused":
        base = f"http://127.0.0.1:{_free_port()}/v1"
    elif model.startswith("anthropic/"):
        pytest.skip("the fake server drops chat-completions requests only, not Anthropic's /v1/messages")
    else:
        fake_llm.drop_next(-1)  # accepted, then closed with no answer
        base = fake_llm.base_url
    if model.startswith("anthropic/"):
        base = base.removesuffix("/v1")
    settings = _settings(base, model=model, max_retries=2)
    client = ModelClient(backoff_base_s=0.01)
    with pytest.raises(ModelCallError) as first:
        await client.complete(settings, MSG)
    assert first.value.kind == "unreachable" and first.value.attempts == 3
    stats = client.stats.model(settings.display_name)
    assert stats.retries_by_kind == {"connection": 2}
    with pytest.raises(ModelCallError) as second:
        await client.complete(settings, [{"role": "user", "content": "another question"}])
    assert second.value.attempts == 0 and client.stats.model(settings.display_name).requests == 3


def test_a_provider_with_no_default_host_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """hosted_vllm has no default host (litellm would send its calls to api.openai.com): without an
    api_base it is refused by the preflight, nothing sent, nothing written."""
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"])
    code = run_cli(pipeline, tmp_path / "run", judges=["hosted_vllm/gpt-4o-mini"], dry_run=True)
    captured = capsys.readouterr()
    err = captured.err + captured.out
    assert code == 2
    assert "provider hosted_vllm has no default host" in err and "--api-base" in err
    assert not (tmp_path / "run").exists()


async def test_calls_already_retrying_give_up_once_the_model_is_stopped() -> None:
    """Eight calls at once to a dead endpoint: none retries past the moment the first is found unreachable."""
    settings = _settings(f"http://127.0.0.1:{_free_port()}/v1", max_retries=4, concurrency=8)
    client = ModelClient(backoff_base_s=0.02)
    questions = [[{"role": "user", "content": f"q{i}"}] for i in range(8)]
    out = await asyncio.gather(*(client.complete(settings, q) for q in questions), return_exceptions=True)
    assert all(isinstance(e, ModelCallError) and e.kind == "unreachable" for e in out)
    assert client.stats.model(settings.display_name).requests <= 8 * 5


async def test_a_model_that_answered_before_keeps_its_retries_through_an_outage(fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: "ok")
    settings = _settings(fake_llm.base_url)
    client = ModelClient(backoff_base_s=0.01)
    assert (await client.complete(settings, MSG)).text == "ok"
    fake_llm.drop_next(2)  # a blip: two connections closed unanswered, then the server answers again
    out = await client.complete(settings, [{"role": "user", "content": "during the blip"}])
    assert out.text == "ok" and fake_llm.dropped == 2
    stats = client.stats.model(settings.display_name)
    assert stats.retries_by_kind == {"connection": 2}
    fake_llm.drop_next(-1)  # a longer outage: the call fails as a connection failure, the model goes on
    with pytest.raises(ModelCallError) as failed:
        await client.complete(settings, [{"role": "user", "content": "during the outage"}])
    assert failed.value.kind == "connection" and not client.stopped
    fake_llm.drop_next(0)
    assert (await client.complete(settings, [{"role": "user", "content": "after"}])).text == "ok"


def test_endpoint_of_names_where_calls_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    assert endpoint_of(ModelSettings(model="openai/gpt-4o-mini")) == (
        "https://api.openai.com/v1 (the openai default)"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:pw@proxy.example:8080/v1?key=x")
    assert endpoint_of(ModelSettings(model="openai/gpt-4o-mini")) == (
        "http://proxy.example:8080/v1 (from OPENAI_BASE_URL / OPENAI_API_BASE)"
    )
    assert endpoint_of(ModelSettings(model="openai/x", api_base="http://h:1/v1")) == "http://h:1/v1"


def test_a_grid_stops_a_model_whose_endpoint_drops_every_call(tmp_path: Path, fake_llm: FakeLLM) -> None:
    """The server answers ``GET /models`` (so the preflight passes) but closes every chat connection: the
    judge is stopped after its first calls' retries, its other units are not run, and the run says
    connection everywhere it says why."""
    fake_llm.drop_next(-1)
    judge = fake_llm.settings(name="judge", max_retries=3).model_dump(exclude_defaults=True)
    pipeline = write_pipeline(tmp_path, judges=[judge], conditions=["with_gt"], concurrency=2, workers=1)
    started = time.monotonic()
    assert run_cli(pipeline, tmp_path / "run") == 1
    assert time.monotonic() - started < 30
    summary = json.loads((tmp_path / "run" / "run_summary.json").read_text())
    failed = summary["failed_units"]
    assert failed and {u["reason"] for u in failed} == {"connection"}
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    (row,) = [r for r in meta["last_invocation"]["per_model"] if r["model"] == "judge"]
    assert set(row["retries_by_kind"]) == {"connection"}
    units = 16  # 4 records x 2 difficulties x 2 generators x 1 condition
    assert len(failed) < units  # the rest were never sent
    assert fake_llm.dropped <= len(failed) * 4


def test_a_provider_base_url_from_the_environment_is_checked_before_any_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's reproduction: ``OPENAI_BASE_URL`` pointing nowhere; the preflight asks it (a free
    ``GET /models``) and exits 2 at once, naming the URL and saying connection."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://no-such-host.invalid/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    pipeline = write_pipeline(tmp_path, judges=["openai/gpt-4o-mini"], conditions=["with_gt"])
    started = time.monotonic()
    assert run_cli(pipeline, tmp_path / "run") == 2
    assert time.monotonic() - started < 30
    err = capsys.readouterr()
    text = err.out + err.err
    assert "no-such-host.invalid" in text and "connection failed" in text
    assert not (tmp_path / "run" / "run.sqlite").exists()


HINT = "(`agentjudge run PIPELINE --out RUNDIR --dry-run --probe` does)"


def test_what_a_stopped_model_prints_is_whole_and_says_each_thing_once(
    tmp_path: Path, fake_llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our own advice is never cut (only the provider's quoted error may be, at its end, with " …"), and no
    line says both that a call was not retried and how many attempts it made."""
    fake_llm.drop_next(-1)
    judge = {
        "model": "openai/gpt-4o-mini",  # priced: --max-cost applies
        "name": "a-judge-with-a-rather-long-display-name-for-the-console",
        "api_base": fake_llm.base_url,
        "api_key_env": TEST_KEY_ENV,
        "max_retries": 4,
    }
    pipeline = write_pipeline(tmp_path, judges=[judge], conditions=["with_gt"], concurrency=2, workers=1)
    assert run_cli(pipeline, tmp_path / "run", max_cost=1.0) == 1
    lines = capsys.readouterr().out.splitlines()
    stopping = [line for line in lines if line.startswith("stopping ")]
    assert len(stopping) == 1 and HINT in stopping[0]
    example = next(line for line in lines if ": connection x" in line)
    assert HINT in example
    closing = next(line for line in lines if "unit(s) not run. Fix the set-up" in line)
    assert closing.endswith("stopped (connection); " + closing.split("; ", 1)[1])
    assert "--probe checks it" not in closing  # the error already said how to check: said once
    for line in lines:
        assert not ("not retried" in line and "attempt(s)" in line), line
        assert line.count("attempt(s)") <= 1, line

    # the preflight's probe of the same endpoint: the advice whole there too
    capsys.readouterr()
    assert run_cli(pipeline, tmp_path / "run2", dry_run=True, probe=True) == 2
    out = capsys.readouterr()
    (probe,) = [line for line in (out.out + out.err).splitlines() if "--probe: a 1-token call failed" in line]
    assert HINT in probe
