"""ModelClient end to end: litellm really called, against the scripted server in tests/fakeserver.py."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from fakeserver import TEST_KEY, FakeLLM, prompt_text

from agentjudge.models.cache import CallCache, cache_key
from agentjudge.models.client import Completion, ModelCallError, ModelClient, classify
from agentjudge.models.endpoints import target
from agentjudge.types import ModelSettings

MSG = [{"role": "user", "content": "say hello"}]


def fast_client(cache: CallCache | None = None, **kw: object) -> ModelClient:
    return ModelClient(cache, backoff_base_s=0.005, **kw)  # type: ignore[arg-type]


async def test_text_answer_usage_and_request(fake_llm: FakeLLM) -> None:
    fake_llm.queue("hello there friend", usage={"prompt_tokens": 11, "completion_tokens": 3})
    client = fast_client()
    out = await client.complete(fake_llm.settings(temperature=0.3, max_tokens=50, extra={"top_p": 0.5}), MSG)
    assert out.text == "hello there friend"
    assert out.tool_calls == []
    assert out.finish_reason == "stop"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.cached) == (11, 3, False)
    (req,) = fake_llm.requests
    assert req["model"] == "test-model"
    assert req["messages"] == MSG
    assert req["temperature"] == 0.3 and req["max_tokens"] == 50 and req["top_p"] == 0.5
    assert fake_llm.headers[0]["authorization"] == f"Bearer {TEST_KEY}"
    assert fake_llm.paths == ["/v1/chat/completions"]
    stats = client.stats.model("openai/test-model")
    assert (stats.calls, stats.requests, stats.prompt_tokens, stats.completion_tokens) == (1, 1, 11, 3)


async def test_key_only_in_authorization_header(fake_llm: FakeLLM) -> None:
    fake_llm.queue("ok")
    await fast_client().complete(fake_llm.settings(), MSG)
    headers = dict(fake_llm.headers[0])
    assert headers.pop("authorization") == f"Bearer {TEST_KEY}"
    assert TEST_KEY not in repr(headers)
    assert TEST_KEY not in repr(fake_llm.requests)


async def test_request_temperature_overrides_settings(fake_llm: FakeLLM) -> None:
    fake_llm.queue("a", times=2)
    client = fast_client()
    await client.complete(fake_llm.settings(temperature=0.3), MSG, temperature=0.9)
    await client.complete(fake_llm.settings(), MSG)
    assert fake_llm.requests[0]["temperature"] == 0.9
    assert "temperature" not in fake_llm.requests[1]  # provider default when nobody set one


async def test_tool_calls_in_order(fake_llm: FakeLLM) -> None:
    fake_llm.queue(
        tool_calls=[
            {"name": "get_user", "arguments": {"id": 7}},
            {"name": "close_ticket", "arguments": '{"ticket": "<get_user.ticket>"}'},
        ]
    )
    tools = [{"type": "function", "function": {"name": "get_user", "parameters": {"type": "object"}}}]
    out = await fast_client().complete(fake_llm.settings(), MSG, tools=tools)
    assert [(c.name, c.arguments) for c in out.tool_calls] == [
        ("get_user", '{"id": 7}'),
        ("close_ticket", '{"ticket": "<get_user.ticket>"}'),
    ]
    assert out.finish_reason == "tool_calls"
    assert fake_llm.requests[0]["tools"] == tools


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_retries_transient_errors_then_succeeds(fake_llm: FakeLLM, status: int) -> None:
    fake_llm.fail_next(status=status, times=2)
    fake_llm.queue("finally")
    client = fast_client()
    out = await client.complete(fake_llm.settings(max_retries=3), MSG)
    assert out.text == "finally"
    assert len(fake_llm.requests) == 3
    stats = client.stats.total
    assert (stats.retries, stats.failures, stats.requests, stats.calls) == (2, 0, 3, 1)


async def test_retry_after_is_honoured(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next(status=429, retry_after=0.4)
    fake_llm.queue("ok")
    start = time.perf_counter()
    await fast_client().complete(fake_llm.settings(), MSG)
    assert time.perf_counter() - start >= 0.38  # backoff alone would be ~5 ms


async def test_gives_up_after_max_retries(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next(status=500, times=10)
    client = fast_client()
    with pytest.raises(ModelCallError) as err:
        await client.complete(fake_llm.settings(max_retries=2), MSG)
    assert (err.value.kind, err.value.attempts) == ("server_error", 3)
    assert len(fake_llm.requests) == 3
    assert client.stats.total.failures == 1


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "bad_request"), (401, "auth"), (403, "auth"), (404, "not_found"), (422, "bad_request")],
)
async def test_no_retry_on_request_errors(fake_llm: FakeLLM, status: int, kind: str) -> None:
    fake_llm.fail_next(status=status, times=5)
    with pytest.raises(ModelCallError) as err:
        await fast_client().complete(fake_llm.settings(max_retries=4), MSG)
    assert (err.value.kind, err.value.attempts) == (kind, 1)
    assert len(fake_llm.requests) == 1


async def test_timeout_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.hang_next(seconds=30)  # far beyond the bound below: only the 0.3 s timeout can end it in time
    fake_llm.queue("after the stall")
    start = time.perf_counter()
    out = await fast_client().complete(fake_llm.settings(timeout_s=0.3), MSG)
    assert out.text == "after the stall"
    assert len(fake_llm.requests) == 2
    assert time.perf_counter() - start < 15  # generous under load; without the timeout it takes >= 30 s


async def test_timeout_exhausted_gives_timeout_kind(fake_llm: FakeLLM) -> None:
    """A server that answered before and then hangs: a timeout (one that never answered is stopped as
    ``unreachable``: tests/hostile/test_hostile_stops.py)."""
    fake_llm.queue("first answer")
    client = fast_client()
    settings = fake_llm.settings(timeout_s=0.3, max_retries=1)
    await client.complete(settings, MSG)
    fake_llm.hang_next(seconds=5, times=3)
    with pytest.raises(ModelCallError) as err:
        await client.complete(settings, [{"role": "user", "content": "another question"}])
    assert (err.value.kind, err.value.attempts) == ("timeout", 2)
    assert client.stats.total.retries == 1


async def test_a_server_that_never_answered_and_times_out_is_unreachable(fake_llm: FakeLLM) -> None:
    fake_llm.hang_next(seconds=5, times=3)
    client = fast_client()
    with pytest.raises(ModelCallError) as err:
        await client.complete(fake_llm.settings(timeout_s=0.3, max_retries=1), MSG)
    assert (err.value.kind, err.value.attempts) == ("unreachable", 2)
    assert "no answer from" in err.value.message and "within 0.3 s" in err.value.message


async def test_malformed_body_retried_then_error(fake_llm: FakeLLM) -> None:
    fake_llm.malformed_next(times=5)
    with pytest.raises(ModelCallError) as err:
        await fast_client().complete(fake_llm.settings(max_retries=1), MSG)
    assert err.value.kind == "malformed_response"
    assert len(fake_llm.requests) == 2


async def test_malformed_body_once_then_ok(fake_llm: FakeLLM) -> None:
    fake_llm.malformed_next()
    fake_llm.queue("good")
    assert (await fast_client().complete(fake_llm.settings(), MSG)).text == "good"


async def test_empty_answer_is_an_error_and_not_cached(fake_llm: FakeLLM, cache_path: Path) -> None:
    fake_llm.queue("")
    cache = CallCache()
    with pytest.raises(ModelCallError) as err:
        await fast_client(cache).complete(fake_llm.settings(), MSG)
    assert err.value.kind == "empty_response"
    assert len(cache) == 0


async def test_key_never_in_errors_or_cache(fake_llm: FakeLLM, cache_path: Path) -> None:
    fake_llm.fail_next(status=401, message=f"Incorrect API key provided: {TEST_KEY}")
    cache = CallCache()
    client = fast_client(cache)
    with pytest.raises(ModelCallError) as err:
        await client.complete(fake_llm.settings(), MSG)
    assert TEST_KEY not in str(err.value) and TEST_KEY not in err.value.message
    assert "***" in err.value.message
    fake_llm.queue(f"echo {TEST_KEY}")  # even a model that echoes the key does not put it on disk
    client = fast_client(cache)  # a fresh client: the 401 stopped this model in the first one
    out = await client.complete(fake_llm.settings(), [{"role": "user", "content": "another"}])
    assert TEST_KEY not in out.model_dump_json()
    cache.close()
    for path in cache_path.parent.iterdir():
        assert TEST_KEY.encode() not in path.read_bytes(), path


async def test_key_from_provider_default_env_is_scrubbed_too(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-default-0123456789")
    fake_llm.fail_next(status=401, message="Incorrect API key provided: sk-openai-default-0123456789")
    with pytest.raises(ModelCallError) as err:
        await fast_client().complete(fake_llm.settings(api_key_env=None), MSG)  # litellm reads the env itself
    assert fake_llm.headers[0]["authorization"] == "Bearer sk-openai-default-0123456789"
    assert "sk-openai-default" not in str(err.value) and "***" in err.value.message


async def test_a_placeholder_key_is_not_scrubbed_out_of_the_answers(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, cache_path: Path
) -> None:
    """Local servers take any key, and users give them "EMPTY" or "none": a value that short is no secret,
    and replacing it in every answer would corrupt the stored answers (a judge's rationale that says
    "none", say). A real key echoed in the same answer is still scrubbed."""
    monkeypatch.setenv("AGENTJUDGE_TEST_KEY", "none")
    monkeypatch.setenv("LOCAL_GATEWAY_API_KEY", "sk-local-gateway-0123456789")
    answer = "none of the calls is wrong; the key was sk-local-gateway-0123456789"
    fake_llm.queue(answer)
    cache = CallCache(cache_path)
    out = await fast_client(cache).complete(fake_llm.settings(), MSG)
    assert fake_llm.headers[0]["authorization"] == "Bearer none"  # the placeholder was sent as the key
    assert out.text == "none of the calls is wrong; the key was ***"
    assert (cache.get(cache_key(ModelClient.request_fields(fake_llm.settings(), MSG, None, None, 0))) or {})[
        "text"
    ] == out.text


async def test_a_key_exported_after_earlier_calls_is_scrubbed_too(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key-like variables are scanned again whenever the environment changed since the last call (the
    scan is remembered between calls): a key exported, or changed, mid-run is still scrubbed."""
    client = fast_client()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-first-0123456789")
    fake_llm.queue("ok")
    await client.complete(fake_llm.settings(api_key_env=None), MSG)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-second-0123456789")  # same names, another value
    fake_llm.fail_next(status=401, message="Incorrect API key provided: sk-openai-second-0123456789")
    with pytest.raises(ModelCallError) as err:
        await client.complete(fake_llm.settings(api_key_env=None), [{"role": "user", "content": "again"}])
    assert fake_llm.headers[-1]["authorization"] == "Bearer sk-openai-second-0123456789"
    assert "sk-openai-second" not in str(err.value) and "***" in err.value.message
    monkeypatch.setenv("AGENTJUDGE_OTHER_TOKEN", "tok-exported-later-0123456789")  # a new name
    fake_llm.fail_next(status=400, message="bad header tok-exported-later-0123456789")
    with pytest.raises(ModelCallError) as err:
        await client.complete(fake_llm.settings(api_key_env=None), [{"role": "user", "content": "third"}])
    assert "tok-exported-later" not in str(err.value) and "***" in err.value.message


async def test_unreadable_cache_entry_is_a_miss(fake_llm: FakeLLM) -> None:
    fake_llm.queue("fresh")
    cache = CallCache()
    settings = fake_llm.settings()
    key = cache_key(ModelClient.request_fields(settings, MSG, None, None, 0))
    cache.put(key, settings.model, {"text": 1, "unexpected": True})
    out = await fast_client(cache).complete(settings, MSG)
    assert out.text == "fresh" and len(fake_llm.requests) == 1
    assert cache.get(key)["text"] == "fresh"  # type: ignore[index]


async def test_cache_second_identical_run_is_all_hits(fake_llm: FakeLLM) -> None:
    fake_llm.queue("first answer", usage={"prompt_tokens": 5, "completion_tokens": 2})
    first = fast_client(CallCache())
    a = await first.complete(fake_llm.settings(), MSG)
    second = fast_client(CallCache())  # a new process / run over the same cache file
    b = await second.complete(fake_llm.settings(), MSG)
    assert len(fake_llm.requests) == 1
    assert (b.text, b.usage.cached, a.usage.cached) == ("first answer", True, False)
    assert b.usage.prompt_tokens == 5 and b.usage.cost_usd == 0.0
    stats = second.stats.total
    assert (stats.calls, stats.cache_hits, stats.requests, stats.hit_rate) == (1, 1, 0, 1.0)


async def test_identical_requests_in_flight_are_sent_once(fake_llm: FakeLLM) -> None:
    # three identical requests at the same moment (e.g. two generators' identical calls judged side by
    # side) and one different one: the provider sees two requests, the copies read the first's answer
    fake_llm.latency = 0.3
    fake_llm.set_responder(lambda req: "other answer" if "else" in prompt_text(req) else "the answer")
    client = fast_client(CallCache())
    settings = fake_llm.settings(concurrency=4)
    other = [{"role": "user", "content": "something else"}]
    a, b, c, d = await asyncio.gather(
        client.complete(settings, MSG),
        client.complete(settings, MSG),
        client.complete(settings, MSG),
        client.complete(settings, other),
    )
    assert len(fake_llm.requests) == 2
    assert [x.text for x in (a, b, c)] == ["the answer"] * 3 and d.text == "other answer"
    assert [x.usage.cached for x in (a, b, c, d)] == [False, True, True, False]
    assert b.usage.cost_usd == 0.0 and b.usage.prompt_tokens == a.usage.prompt_tokens == 2  # "say hello"
    stats = client.stats.total
    assert (stats.calls, stats.cache_hits, stats.requests) == (4, 2, 2)
    assert client._in_flight == {}  # nothing left behind


async def test_a_failed_request_in_flight_lets_the_copy_ask_itself(fake_llm: FakeLLM) -> None:
    fake_llm.latency = 0.3
    fake_llm.fail_next(status=500)  # max_retries=0: the first call fails (a server error stops no model)
    fake_llm.queue("second try")
    client = fast_client(CallCache())
    settings = fake_llm.settings(concurrency=2, max_retries=0)
    first, second = await asyncio.gather(
        client.complete(settings, MSG), client.complete(settings, MSG), return_exceptions=True
    )
    assert isinstance(first, ModelCallError)
    assert isinstance(second, Completion) and second.text == "second try" and not second.usage.cached
    assert len(fake_llm.requests) == 2  # the copy was not handed the failure: it sent its own request


async def test_no_cache_reads_nothing_but_writes(fake_llm: FakeLLM) -> None:
    fake_llm.queue("one")
    fake_llm.queue("two")
    cache = CallCache()
    await fast_client(cache).complete(fake_llm.settings(), MSG)
    out = await fast_client(cache, read_cache=False).complete(fake_llm.settings(), MSG)
    assert out.text == "two" and len(fake_llm.requests) == 2
    assert (await fast_client(cache).complete(fake_llm.settings(), MSG)).text == "two"  # overwritten
    assert len(fake_llm.requests) == 2


async def test_sample_index_gives_distinct_entries(fake_llm: FakeLLM) -> None:
    fake_llm.set_responder(lambda req: f"answer {len(fake_llm.requests)}")
    cache = CallCache()
    client = fast_client(cache)
    a = await client.complete(fake_llm.settings(), MSG, temperature=0.7, sample_index=0)
    b = await client.complete(fake_llm.settings(), MSG, temperature=0.7, sample_index=1)
    assert a.text != b.text and len(fake_llm.requests) == 2 and len(cache) == 2


async def test_failures_are_not_cached(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next(status=503)
    fake_llm.queue("fine now")
    cache = CallCache()
    client = fast_client(cache)
    with pytest.raises(ModelCallError):
        await client.complete(fake_llm.settings(max_retries=0), MSG)
    assert len(cache) == 0
    assert (await client.complete(fake_llm.settings(max_retries=0), MSG)).text == "fine now"


async def test_bad_request_stops_the_model_without_sending_more(fake_llm: FakeLLM) -> None:
    fake_llm.fail_next(status=400, message="unknown parameter")
    fake_llm.queue("never asked")
    client = fast_client()
    with pytest.raises(ModelCallError) as first:
        await client.complete(fake_llm.settings(), MSG)
    with pytest.raises(ModelCallError) as second:
        await client.complete(fake_llm.settings(), [{"role": "user", "content": "other"}])
    assert (first.value.kind, first.value.attempts) == ("bad_request", 1)
    assert second.value.kind == "bad_request" and second.value.attempts == 0
    assert "not sent" in second.value.message and "unknown parameter" in second.value.message
    assert len(fake_llm.requests) == 1


async def test_concurrency_limit_per_model(fake_llm: FakeLLM) -> None:
    fake_llm.latency = 0.15
    fake_llm.set_responder(lambda req: "ok")
    client = fast_client()
    settings = fake_llm.settings(concurrency=3)
    msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
    await asyncio.gather(*(client.complete(settings, m) for m in msgs))
    assert len(fake_llm.requests) == 10
    assert fake_llm.max_in_flight == 3  # never more than 3, and the limit was actually reached


async def test_a_worker_share_limits_a_models_requests_and_can_grow(fake_llm: FakeLLM) -> None:
    """A worker process's share of a model's ``concurrency`` (``call_limits``, by display name) caps its
    requests in flight below the model's own limit; ``widen`` (another worker exited) raises it at once, also
    for requests already waiting. A model without a share in a process with shares is refused, unsent."""
    fake_llm.latency = 0.15
    fake_llm.set_responder(lambda req: "ok")
    client = fast_client(call_limits={"judge-a": 2})
    settings = fake_llm.settings(concurrency=8, name="judge-a")
    msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(8)]
    await asyncio.gather(*(client.complete(settings, m) for m in msgs))
    assert fake_llm.max_in_flight == 2  # the share, not the model's 8; and reached
    fake_llm.max_in_flight = 0
    more = [[{"role": "user", "content": f"r{i}"}] for i in range(8)]
    calls = [asyncio.create_task(client.complete(settings, m)) for m in more]
    await asyncio.sleep(0.05)  # two are out, six wait for the share
    client.widen({"judge-a": 2})
    await asyncio.gather(*calls)
    assert fake_llm.max_in_flight == 4
    with pytest.raises(ModelCallError) as refused:
        await client.complete(fake_llm.settings(name="judge-b"), MSG)
    assert "not sent" in refused.value.message and "holds no share" in refused.value.message
    assert len(fake_llm.requests) == 16  # the refused call was not sent, nor counted as a request
    assert client.stats.summary()["per_model"]["judge-b"]["requests"] == 0


class _Inside:
    """Wraps ``litellm.acompletion``: counts the calls inside it at once, each first spending ``before`` s
    there (litellm's own work before its request leaves), then answering with ``answer`` (no request) or by
    the real call."""

    def __init__(self, original: Any, before: float, answer: Any = None) -> None:
        self.original, self.before, self.answer = original, before, answer
        self.now = self.most = 0

    async def __call__(self, **kwargs: Any) -> Any:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(self.before)
            return self.answer if self.answer is not None else await self.original(**kwargs)
        finally:
            self.now -= 1


async def test_a_worker_share_is_held_around_the_http_exchange_alone(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a call of the model was seen sending its request through httpx, a worker's share is held around
    each request alone (fastpaths/http_shares.py): calls do litellm's work before sending side by side, while
    the server never has more than the share of requests at once. The first call holds it whole."""
    import litellm

    fake_llm.latency = 0.1
    fake_llm.set_responder(lambda req: "ok")
    inside = _Inside(litellm.acompletion, before=0.05)
    monkeypatch.setattr(litellm, "acompletion", inside)
    client = fast_client(call_limits={"judge-a": 1})
    settings = fake_llm.settings(concurrency=8, name="judge-a")
    await client.complete(settings, MSG)  # the first: its share held around the whole call
    assert inside.most == 1
    msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(4)]
    answers = await asyncio.gather(*(client.complete(settings, m) for m in msgs))
    assert [a.text for a in answers] == ["ok"] * 4 and len(fake_llm.requests) == 5
    assert inside.most == 4  # every call inside litellm at once, none holding the share there
    assert fake_llm.max_in_flight == 1  # the share, at the server


async def test_a_share_stays_around_whole_calls_when_no_request_goes_through_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model whose calls send nothing through httpx (here litellm answers itself; a provider reached some
    other way) keeps its share held around whole calls: never unlimited."""
    import litellm

    answer = litellm.ModelResponse(
        choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    )
    inside = _Inside(litellm.acompletion, before=0.02, answer=answer)
    monkeypatch.setattr(litellm, "acompletion", inside)
    client = fast_client(call_limits={"judge-a": 2})
    settings = ModelSettings(model="openai/test-model", name="judge-a", concurrency=8, max_retries=0)
    for batch in ("q", "r"):  # the second batch after the first has finished: nothing was learnt from it
        msgs = [[{"role": "user", "content": f"{batch}{i}"}] for i in range(8)]
        await asyncio.gather(*(client.complete(settings, m) for m in msgs))
    assert inside.most == 2


async def test_unknown_price_is_noted_known_price_is_counted(fake_llm: FakeLLM) -> None:
    import litellm

    fake_llm.set_responder(lambda req: "ok")
    client = fast_client()
    out = await client.complete(fake_llm.settings(), MSG)
    assert (out.usage.cost_usd, out.cost_known) == (0.0, False)
    assert "no known price" in client.stats.summary()["per_model"]["openai/test-model"]["cost_note"]
    priced = fake_llm.settings(model="openai/gpt-4o-mini")
    out = await client.complete(priced, [{"role": "user", "content": "one two three four"}])
    p_cost, c_cost = litellm.cost_per_token(
        model="gpt-4o-mini",
        prompt_tokens=out.usage.prompt_tokens,
        completion_tokens=out.usage.completion_tokens,
    )
    assert out.cost_known and out.usage.cost_usd == pytest.approx(p_cost + c_cost) and out.usage.cost_usd > 0
    assert client.stats.model("openai/gpt-4o-mini").cost_usd == pytest.approx(out.usage.cost_usd)


async def test_a_model_litellm_cannot_price_is_handed_a_placeholder_price_and_stays_unpriced(
    fake_llm: FakeLLM, litellm_kwargs: list[dict[str, object]]
) -> None:
    """After litellm failed to price a model once, its calls carry ``PLACEHOLDER_PRICE`` (so litellm does not
    walk its price map again on every answer: fastpaths/litellm_pricing.py); the figure litellm computes
    from it is never read: the cost stays unknown, litellm's price map does not learn the placeholder, and
    the cost gate still finds no price.
    A pipeline price of exactly $0 is charged as $0 and also spares litellm's lookup."""
    import litellm

    from agentjudge.fastpaths.litellm_pricing import PLACEHOLDER_PRICE as _PLACEHOLDER_PRICE
    from agentjudge.models.prices import model_prices

    sent = litellm_kwargs
    fake_llm.set_responder(lambda req: "one two three")
    client = fast_client()
    settings = fake_llm.settings(model="openai/placeholder-price-test-model")
    outs = [await client.complete(settings, [{"role": "user", "content": f"q{i}"}]) for i in range(3)]
    assert [{k: kw.get(k) for k in _PLACEHOLDER_PRICE} for kw in sent] == [
        {"input_cost_per_token": None, "output_cost_per_token": None},  # the first call: litellm is asked
        _PLACEHOLDER_PRICE,
        _PLACEHOLDER_PRICE,
    ]
    assert all((o.usage.cost_usd, o.cost_known) == (0.0, False) for o in outs)
    assert outs[2].usage.prompt_tokens > 0  # a real answer whose placeholder cost would have been > 0
    assert client.stats.model("openai/placeholder-price-test-model").unknown_cost_calls == 3
    assert "openai/placeholder-price-test-model" not in litellm.model_cost
    assert "placeholder-price-test-model" not in litellm.model_cost
    assert model_prices(settings) is None
    sent.clear()
    free = fake_llm.settings(
        model="openai/free-local-test-model", input_cost_per_token=0.0, output_cost_per_token=0.0
    )
    out = await client.complete(free, MSG)
    assert {k: sent[0].get(k) for k in _PLACEHOLDER_PRICE} == _PLACEHOLDER_PRICE
    assert (out.usage.cost_usd, out.cost_known) == (0.0, True)
    assert model_prices(free) == (0.0, 0.0)


async def test_connection_refused_is_retried_then_unreachable() -> None:
    """Refused on every attempt, by an endpoint that never answered: ``unreachable`` (a connection failure
    that stops the model; tests/test_unreachable.py has the rest)."""
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = FakeLLM.settings_for(f"http://127.0.0.1:{port}/v1", max_retries=1)
    client = fast_client()
    with pytest.raises(ModelCallError) as err:
        await client.complete(settings, MSG)
    assert (err.value.kind, err.value.attempts) == ("unreachable", 2)
    assert client.stats.total.retries == 1 and client.stats.total.retries_by_kind == {"connection": 1}


def test_classify_plain_exceptions() -> None:
    assert classify(TimeoutError()) == "timeout"
    assert classify(ConnectionRefusedError()) == "connection"
    assert classify(RuntimeError("weird")) == "other"


async def test_hosted_vllm_model_string(fake_llm: FakeLLM) -> None:
    fake_llm.queue("served by vllm")
    out = await fast_client().complete(fake_llm.settings(model="hosted_vllm/test-model"), MSG)
    assert out.text == "served by vllm"
    assert fake_llm.requests[0]["model"] == "test-model" and fake_llm.paths == ["/v1/chat/completions"]


async def test_unset_key_env_is_a_config_error(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTJUDGE_TEST_KEY")
    with pytest.raises(ModelCallError) as err:
        await fast_client().complete(fake_llm.settings(), MSG)
    assert err.value.kind == "auth" and "AGENTJUDGE_TEST_KEY" in err.value.message
    assert fake_llm.requests == []


async def test_a_model_without_a_price_is_looked_up_once_per_process(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    asked: list[str] = []
    original = litellm.completion_cost

    def counting(*args: object, **kwargs: object) -> object:
        asked.append("cost")
        return original(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion_cost", counting)
    fake_llm.set_responder(lambda req: "ok")
    client = fast_client()
    settings = fake_llm.settings(model="openai/no-price-model-for-this-test")
    outs = [await client.complete(settings, [{"role": "user", "content": f"q{i}"}]) for i in range(4)]
    assert all((o.usage.cost_usd, o.cost_known) == (0.0, False) for o in outs)
    assert len(asked) <= 1  # the "no price" answer is remembered for the model
    assert client.stats.model("openai/no-price-model-for-this-test").unknown_cost_calls == 4


# ---- review findings 3, 4, 6 -----------------------------------------------------------------------
async def test_a_stop_is_per_credentials_not_per_model_and_endpoint(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same judge billed to two organisations: orgB's revoked key must not stop orgA
    monkeypatch.setenv("ORG_B_KEY", "sk-org-b-revoked-0000")
    fake_llm.set_responder(lambda req: "ok")
    org_a = fake_llm.settings(name="judge@orgA")
    org_b = fake_llm.settings(name="judge@orgB", api_key_env="ORG_B_KEY")
    client = fast_client()
    fake_llm.fail_next(401, message="invalid key for org B")
    with pytest.raises(ModelCallError) as info:
        await client.complete(org_b, MSG)
    assert info.value.kind == "auth"
    out = await client.complete(org_a, [{"role": "user", "content": "different question"}])
    assert out.text == "ok" and len(fake_llm.requests) == 2
    with pytest.raises(ModelCallError, match="the model is stopped"):  # orgB itself stays stopped
        await client.complete(org_b, [{"role": "user", "content": "third"}])
    assert len(fake_llm.requests) == 2


async def test_a_cancelled_call_settles_its_cost_reservation(fake_llm: FakeLLM, tmp_path: Path) -> None:
    # cap $0.0001, worst case per call 6.5e-5 (15 prompt-token bound + 50 out at $1e-6): room for one
    fake_llm.set_responder(lambda req: "ok")
    settings = fake_llm.settings(max_tokens=50, input_cost_per_token=1e-6, output_cost_per_token=1e-6)
    client = fast_client(CallCache(tmp_path / "c.sqlite"), max_cost_usd=0.0001)
    gate = client.cost_gate
    assert gate is not None
    fake_llm.hang_next(1.0)
    leader = asyncio.create_task(client.complete(settings, MSG))
    await asyncio.sleep(0.3)
    waiter = asyncio.create_task(client.complete(settings, MSG))  # identical: waits on the leader
    await asyncio.sleep(0.1)
    worst = gate.reserved
    assert worst > 0
    leader.cancel()
    await asyncio.gather(leader, return_exceptions=True)
    # the cancelled request may have been billed: its worst case is spent, nothing is left reserved
    assert (gate.reserved, gate.spent) == (0.0, pytest.approx(worst))
    with pytest.raises(ModelCallError) as info:  # the waiter is not blocked: it is refused at once
        await asyncio.wait_for(waiter, 3.0)
    assert info.value.kind == "cost_cap"


async def test_a_retried_timeout_counts_as_spent_and_the_retry_must_fit_under_the_cap(
    fake_llm: FakeLLM,
) -> None:
    """A timed-out attempt may have been billed (the server may have computed its answer): under
    ``--max-cost`` its worst case is counted as spent before the retry is sent, and the retry needs a
    reservation of its own, so retries never take the run past the cap. Worst case per call 6.5e-5 (15
    prompt-token bound + 50 out at $1e-6)."""
    settings = fake_llm.settings(
        max_tokens=50, input_cost_per_token=1e-6, output_cost_per_token=1e-6, timeout_s=0.3, max_retries=2
    )
    # room for two worst cases: the timed-out attempt and its retry
    client = fast_client(max_cost_usd=0.00014)
    gate = client.cost_gate
    assert gate is not None
    fake_llm.hang_next(seconds=30)
    fake_llm.queue("after the stall")
    out = await client.complete(settings, MSG)
    worst = 6.5e-5
    assert out.text == "after the stall" and len(fake_llm.requests) == 2
    assert gate.reserved == pytest.approx(0.0)
    assert gate.spent == pytest.approx(worst + out.usage.cost_usd)  # the timed-out attempt counted in full
    # room for one worst case only: the attempt times out and its retry is not sent
    client = fast_client(max_cost_usd=0.0001)
    gate = client.cost_gate
    assert gate is not None
    fake_llm.hang_next(seconds=30)
    with pytest.raises(ModelCallError) as refused:
        await client.complete(settings, MSG)  # a client without a cache: asked again
    assert refused.value.kind == "cost_cap" and "may have been billed" in refused.value.message
    assert len(fake_llm.requests) == 3  # the retry was not sent
    assert (gate.reserved, gate.spent) == (pytest.approx(0.0), pytest.approx(worst))


async def test_a_failed_batch_request_shared_by_two_units_counts_its_submissions_once(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    from agentjudge.models.batch import CURRENT_UNIT
    from agentjudge.runner.batches import BatchBroker

    settings = fake_llm.settings(name="judge", batch=True, max_tokens=50)
    client = fast_client(CallCache(tmp_path / "c.sqlite"))
    broker = BatchBroker(tmp_path / "run.sqlite", {"judge": settings})
    client.batch = broker

    async def in_unit(unit: str) -> ModelCallError:
        CURRENT_UNIT.set(unit)
        with pytest.raises(ModelCallError) as info:
            await client.complete(settings, MSG)
        return info.value

    assert {e.kind for e in await asyncio.gather(in_unit("A"), in_unit("B"))} == {"batch_pending"}
    ((key,),) = broker.store.db.execute("SELECT cache_key FROM batch_requests").fetchall()
    # the one request was submitted twice (an expired batch, then a retry) and then failed for good
    broker.store.db.execute(
        "UPDATE batch_requests SET state = 'failed', error_kind = 'server_error', error = 'boom', "
        "submissions = 2"
    )
    broker._failed_now.add(key)
    errors = await asyncio.gather(in_unit("A"), in_unit("B"))
    assert {e.kind for e in errors} == {"server_error"}
    stats = client.stats.model("judge")
    assert (stats.requests, stats.failures, stats.calls) == (2, 2, 2)
    broker.close()


async def test_an_answered_batch_request_counts_each_submission(fake_llm: FakeLLM, tmp_path: Path) -> None:
    import json

    from agentjudge.models.batch import CURRENT_UNIT
    from agentjudge.runner.batches import BatchBroker

    settings = fake_llm.settings(name="judge", batch=True, max_tokens=50)
    client = fast_client(CallCache(tmp_path / "c.sqlite"))
    broker = BatchBroker(tmp_path / "run.sqlite", {"judge": settings})
    client.batch = broker
    CURRENT_UNIT.set("A")
    with pytest.raises(ModelCallError):
        await client.complete(settings, MSG)
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
    # answered in the second batch (the first expired before reaching it): two submissions
    broker.store.db.execute(
        "UPDATE batch_requests SET state = 'done', answer = ?, submissions = 2", (json.dumps(body),)
    )
    assert (await client.complete(settings, MSG)).text == "hi"
    assert (await client.complete(settings, MSG)).text == "hi"  # the same unit again (a replay)
    CURRENT_UNIT.set("B")
    assert (await client.complete(settings, MSG)).usage.cached  # another unit: a cache hit
    stats = client.stats.model("judge")
    assert (stats.requests, stats.calls, stats.cache_hits) == (2, 2, 1)
    broker.close()


def test_the_fake_server_sends_each_answer_at_once() -> None:
    """The loopback server writes an answer's headers and body separately; with Nagle's algorithm on, the
    body of every answer after a connection's first waited for the client's delayed ACK (~40 ms), so a
    server told to answer after 200 ms answered after ~244 ms and bench_runner's "% of C/L" was capped near
    81 % for every client. The server's connections must set TCP_NODELAY (socketserver does it for a handler
    with ``disable_nagle_algorithm``), checked here on a real accepted connection."""
    import socket
    import threading

    handler = FakeLLM()._handler_class()
    seen: list[int] = []

    class Probe(handler):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            super().setup()
            seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        def handle(self) -> None:
            return

    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        connection, address = listener.accept()
        thread = threading.Thread(target=Probe, args=(connection, address, None))
        thread.start()
        thread.join(10)
        client.close()
        connection.close()
    assert seen and seen[0] != 0


async def test_a_call_litellm_never_ends_is_given_up_as_a_timeout(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's own deadline (litellm's timeout plus HANG_GUARD_S) ends a call that litellm never ends,
    as a retried ``timeout``; the hung calls are cancelled, not left running."""
    from agentjudge.models import errors as errors_module
    from agentjudge.models.litellm_import import litellm_module

    litellm = litellm_module()
    cancelled = []

    async def hangs(**kwargs: object) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(kwargs["model"])
            raise

    monkeypatch.setattr(litellm, "acompletion", hangs)
    monkeypatch.setattr(errors_module, "HANG_GUARD_S", 0.05)
    started = time.monotonic()
    client, settings = fast_client(), fake_llm.settings(timeout_s=0.05, max_retries=1)
    client.connected.add(target(settings))  # it answered before (one never answered stops: unreachable)
    with pytest.raises(ModelCallError) as err:
        await client.complete(settings, MSG)
    assert (err.value.kind, err.value.attempts) == ("timeout", 2)
    assert len(cancelled) == 2
    assert time.monotonic() - started < 30  # given up, not waited for an hour


# ------------------------------------------------------------------ the cost cap's worst case (issue 42)
# gpt-4o-mini's list prices stand in the ratio 1 : 4 (input : output); a completion priced at the input
# rate would reserve a quarter of the real worst case and let a long-answering judge overspend the cap
PRICE_IN, PRICE_OUT, MAX_OUT = 1e-6, 4e-6, 200


def _capped_settings(fake_llm: FakeLLM) -> ModelSettings:
    return fake_llm.settings(  # type: ignore[no-any-return]
        max_tokens=MAX_OUT, input_cost_per_token=PRICE_IN, output_cost_per_token=PRICE_OUT, max_retries=0
    )


async def test_the_reserved_worst_case_prices_prompt_and_completion_at_their_own_rates(
    fake_llm: FakeLLM,
) -> None:
    from agentjudge.models.prices import prompt_token_bound

    settings = _capped_settings(fake_llm)
    # the prompt bound of MSG: 42 characters of JSON -> 42 // 3 + 1 = 15 tokens (litellm counts fewer)
    assert prompt_token_bound(settings, MSG, None) == 15
    client = fast_client(max_cost_usd=1.0)
    gate = client.cost_gate
    assert gate is not None
    fake_llm.hang_next(seconds=0.6)
    call = asyncio.create_task(client.complete(settings, MSG))
    await asyncio.sleep(0.3)  # the request is in flight: its worst case is held
    assert gate.reserved == pytest.approx(15 * 1e-6 + 200 * 4e-6)  # $0.000815
    await call
    assert gate.reserved == pytest.approx(0.0)


async def test_answers_of_max_tokens_never_take_spending_past_the_cap(fake_llm: FakeLLM) -> None:
    """Every answer is as long as ``max_tokens`` allows, so each call really costs its worst case
    ($0.000815): a cap of $0.003 pays for three and the other seven are refused unsent, however many are
    asked at once."""
    settings = _capped_settings(fake_llm)
    fake_llm.set_responder(
        lambda req: {"text": "long answer", "usage": {"prompt_tokens": 15, "completion_tokens": MAX_OUT}}
    )
    fake_llm.latency = 0.05
    client = fast_client(max_cost_usd=0.003)
    gate = client.cost_gate
    assert gate is not None
    questions = [[{"role": "user", "content": f"question {i}"}] for i in range(10)]  # 40 chars of JSON each
    out = await asyncio.gather(*(client.complete(settings, q) for q in questions), return_exceptions=True)
    refused = [e for e in out if isinstance(e, ModelCallError)]
    assert all(e.kind == "cost_cap" for e in refused)
    answered = [c for c in out if isinstance(c, Completion)]
    assert len(answered) == 3 and len(refused) == 7 and len(fake_llm.requests) == 3
    assert all(c.usage.cost_usd == pytest.approx(0.000815) for c in answered)
    assert gate.spent == pytest.approx(3 * 0.000815) and gate.spent <= 0.003
