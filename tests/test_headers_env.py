"""``headers_env``: HTTP headers whose values come from the environment (a basic-auth proxy in front of a
key-less server, Cloudflare Access, a gateway's own key header). The values go out on every call and in
the preflight's probe, are scrubbed from whatever a provider echoes, and never reach the call cache's key,
meta.json, run.sqlite or any other file of a run; a missing variable stops the model with an ``auth``
error naming it."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import TEST_KEY_ENV, FakeLLM, Reply
from test_runner import _verdict_json, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.models.cache import CallCache
from agentjudge.models.client import ModelCallError, ModelClient
from agentjudge.registry.preflight import ModelUse, preflight
from agentjudge.runner.pipeline import config_hash, load_pipeline
from agentjudge.types import ModelSettings

CF_SECRET = "cf-9d2b-header-secret"
BASIC = "Basic " + base64.b64encode(b"judge:pw-31aa-basic-secret").decode()
HEADERS = {"CF-Access-Client-Secret": "AJ_CF_HDR", "Authorization": "AJ_BASIC"}


@pytest.fixture
def header_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AJ_CF_HDR", CF_SECRET)
    monkeypatch.setenv("AJ_BASIC", BASIC)


def _judge(base: str, **fields: Any) -> dict[str, Any]:
    return {
        "model": "openai/test-model",
        "name": "j",
        "api_base": base,
        "api_key_env": TEST_KEY_ENV,
        "headers_env": HEADERS,
        "timeout_s": 2.0,
        "max_retries": 0,
        **fields,
    }


def test_a_run_sends_the_headers_and_writes_their_values_nowhere(
    tmp_path: Path, fake_llm: FakeLLM, header_vars: None, cache_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.set_responder(lambda req: _verdict_json(1.0))
    extra = {"extra_headers": {"X-Title": "agentjudge"}}  # merged with the headers_env ones
    pipeline = write_pipeline(
        tmp_path, judges=[_judge(fake_llm.base_url, extra=extra)], generators=["sim/perfect"],
        conditions=["with_gt"],
    )  # fmt: skip
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 0
    assert len(fake_llm.headers) == 8  # 4 records x 2 difficulties, one call each
    for sent in fake_llm.headers:
        assert sent["cf-access-client-secret"] == CF_SECRET
        assert sent["authorization"] == BASIC  # over the Bearer key litellm would send
        assert sent["x-title"] == "agentjudge"
    meta = json.loads((rundir / "meta.json").read_text(encoding="utf-8"))
    assert meta["pipeline"]["judges"][0]["headers_env"] == HEADERS  # the names are kept, not the values
    files = [p for p in [*tmp_path.rglob("*"), *cache_path.parent.rglob("*")] if p.is_file()]
    assert rundir / "run.sqlite" in files and tmp_path / "cache.sqlite" in files  # the pipeline's cache
    for path in files:
        data = path.read_bytes()
        for value in (CF_SECRET, BASIC, BASIC.split()[1]):
            assert value.encode() not in data, path
    # the cache key has no header in it: the same run with another value is served from the cache
    fake_llm.reset()
    monkeypatch.setenv("AJ_CF_HDR", "another-cf-value")
    assert run_cli(pipeline, tmp_path / "run2") == 0
    assert fake_llm.requests == [] and fake_llm.seen == ["GET /v1/models"]  # only the preflight's


def test_a_header_value_echoed_by_the_provider_is_scrubbed(
    tmp_path: Path, fake_llm: FakeLLM, header_vars: None
) -> None:
    fake_llm.set_responder(lambda req: f"you sent {CF_SECRET} and {BASIC.split()[1]}")
    cache = CallCache(tmp_path / "calls.sqlite")
    client = ModelClient(cache)
    settings = ModelSettings(**_judge(fake_llm.base_url))
    answer = asyncio.run(client.complete(settings, [{"role": "user", "content": "hi"}]))
    assert answer.text == "you sent *** and ***"
    fake_llm.fail_next(status=400, message=f"bad header {CF_SECRET}")
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(client.complete(settings, [{"role": "user", "content": "again"}]))
    assert CF_SECRET not in caught.value.message and "***" in caught.value.message
    cache.close()
    assert CF_SECRET.encode() not in (tmp_path / "calls.sqlite").read_bytes()


def test_a_missing_variable_stops_the_model_before_any_request(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AJ_BASIC", BASIC)
    monkeypatch.delenv("AJ_CF_HDR", raising=False)
    settings = ModelSettings(**_judge(fake_llm.base_url))
    client = ModelClient()
    for _ in range(2):  # the second call is refused at once, as a stopped model
        with pytest.raises(ModelCallError) as caught:
            asyncio.run(client.complete(settings, [{"role": "user", "content": "hi"}]))
        assert caught.value.kind == "auth" and "AJ_CF_HDR" in caught.value.message
    assert fake_llm.seen == []
    (line,) = preflight([ModelUse("judge", settings, "judges[0]")], probe=True)
    assert line == (
        "judges[0] ('openai/test-model'): environment variable AJ_CF_HDR (headers_env "
        "CF-Access-Client-Secret) is not set or empty"
    )
    assert fake_llm.seen == ["GET /v1/models"]  # not probed


def test_the_probe_sends_the_headers(fake_llm: FakeLLM, header_vars: None) -> None:
    fake_llm.set_responder(lambda req: Reply(text="OK"))
    settings = ModelSettings(**_judge(fake_llm.base_url))
    assert preflight([ModelUse("judge", settings, "judges[0]")], probe=True) == []
    (sent,) = fake_llm.headers
    assert sent["cf-access-client-secret"] == CF_SECRET and sent["authorization"] == BASIC


def test_batch_mode_reads_a_missing_headers_env_variable_as_an_auth_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentjudge.models.batch import BatchAPI
    from agentjudge.models.client import classify
    from agentjudge.models.credentials import MissingCredentialError

    monkeypatch.delenv("AJ_UNSET_HDR", raising=False)
    api = BatchAPI(
        ModelSettings(model="openai/gpt-4o-mini", batch=True, headers_env={"X-Key": "AJ_UNSET_HDR"})
    )
    with pytest.raises(
        MissingCredentialError, match=r"AJ_UNSET_HDR \(X-Key\) \(headers_env\) is not set"
    ) as info:
        asyncio.run(api.retrieve("batch_1"))  # before any request: nothing is sent without the header
    assert classify(info.value) == "auth"


def test_headers_env_leaves_the_config_hash_alone(tmp_path: Path) -> None:
    # like api_key_env: how a call is authenticated does not change what its results mean (an older run
    # folder, made before the key existed, resumes)
    plain = load_pipeline(write_pipeline(tmp_path, judges=[_judge("http://127.0.0.1:9/v1", headers_env={})]))
    with_headers = load_pipeline(write_pipeline(tmp_path, judges=[_judge("http://127.0.0.1:9/v1")]))
    assert with_headers.judges[0].headers_env == HEADERS
    assert config_hash(plain) == config_hash(with_headers)


GATEWAY = "X-Gateway-Key"


def _gateway_judge(base: str, name: str, variable: str, **fields: Any) -> dict[str, Any]:
    """A judge behind a gateway that authenticates by a header: the same model, endpoint and api_key_env
    as every other such judge; only the variable holding its gateway key differs."""
    return _judge(base, name=name, headers_env={GATEWAY: variable}, concurrency=1, **fields)


def test_a_refused_header_key_stops_only_the_model_that_sends_it(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two judges that differ only in ``headers_env`` are two targets: the gateway refusing one's key (401,
    model-fatal) stops that judge, and the other, whose key is valid, finishes every unit."""
    monkeypatch.setenv("AJ_GW_REVOKED", "gw-revoked-value")
    monkeypatch.setenv("AJ_GW_VALID", "gw-valid-value")
    fake_llm.refuse_header(GATEWAY, "gw-revoked-value")
    fake_llm.set_responder(lambda req: _verdict_json(1.0))
    fake_llm.latency = 0.05  # the refusal comes first, while the valid judge's first call is out
    judges = [
        _gateway_judge(fake_llm.base_url, "j-revoked", "AJ_GW_REVOKED"),
        # another temperature: another request, so the call cache (which never keys on headers) cannot
        # answer one judge with the other's answer; the stop target does not include the temperature
        _gateway_judge(fake_llm.base_url, "j-valid", "AJ_GW_VALID", temperature=0.5),
    ]
    pipeline = write_pipeline(tmp_path, judges=judges, generators=["sim/perfect"], conditions=["with_gt"])
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 1  # j-revoked's units failed or were not run
    meta = json.loads((rundir / "meta.json").read_text(encoding="utf-8"))
    rows = {row["model"]: row for row in meta["last_invocation"]["per_model"]}
    assert (rows["j-valid"]["done"], rows["j-valid"]["failed"]) == (8, 0)  # 4 records x 2 difficulties
    assert rows["j-revoked"]["done"] == 0 and rows["j-revoked"]["failed"] >= 1
    sent = {h[GATEWAY.lower()] for h in fake_llm.headers}
    assert sent == {"gw-revoked-value", "gw-valid-value"}
    assert sum(h[GATEWAY.lower()] == "gw-revoked-value" for h in fake_llm.headers) == 1  # stopped after one


def test_models_that_differ_only_in_headers_env_have_their_own_concurrency(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``concurrency: 1`` each: their two calls are out at the same time (one shared semaphore would send
    them one after the other)."""
    monkeypatch.setenv("AJ_GW_ONE", "gw-one")
    monkeypatch.setenv("AJ_GW_TWO", "gw-two")
    fake_llm.set_responder(lambda req: "ok")
    fake_llm.latency = 0.3
    one = ModelSettings(**_gateway_judge(fake_llm.base_url, "one", "AJ_GW_ONE"))
    two = ModelSettings(**_gateway_judge(fake_llm.base_url, "two", "AJ_GW_TWO"))
    client = ModelClient()

    async def both() -> list[str]:
        calls = [client.complete(s, [{"role": "user", "content": s.display_name}]) for s in (one, two)]
        return [c.text for c in await asyncio.gather(*calls)]

    assert asyncio.run(both()) == ["ok", "ok"]
    assert fake_llm.max_in_flight == 2
