"""Issue 16 (fleets): one model served by several loopback servers through ``api_bases``.

Real HTTP on 127.0.0.1 (tests/fakeserver.py): the load spreads evenly while every server is up, a server
killed mid-run costs no unit, every server down fails each unit with a per-unit error and no verdict, the
cache key names no endpoint, the preflight checks every endpoint, and URLs are redacted where shown.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeserver import TEST_KEY_ENV, FakeLLM
from test_preflight import _free_port
from test_runner import _verdict_json, read, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.models.cache import CallCache
from agentjudge.models.client import ModelCallError, ModelClient
from agentjudge.models.fleet import redact_url
from agentjudge.registry.preflight import ModelUse, preflight
from agentjudge.rundir import RunFolder
from agentjudge.runner.pipeline import PipelineError, config_hash, load_pipeline
from agentjudge.types import ModelSettings

COORDS = ["record_id", "generator", "generator_trial", "judge", "condition", "temperature", "trial"]
# write_pipeline's grid with two generators (2 x 4 records x 2 difficulties = 16 predictions), three
# conditions and two trials: 96 judge units, one call each
JUDGE_UNITS = 16 * 3 * 2


@pytest.fixture
def servers() -> Iterator[list[FakeLLM]]:
    started = [FakeLLM().start() for _ in range(3)]
    for server in started:
        server.set_responder(lambda req: _verdict_json(1.0))
        server.latency = 0.01
    try:
        yield started
    finally:
        for server in started:
            if not server.dead:
                server.stop()


def _fleet(urls: list[str], **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "model": "openai/test-model",
        "name": "fleet-judge",
        "api_bases": urls,
        "api_key_env": TEST_KEY_ENV,
        "timeout_s": 2.0,
        "max_retries": 2,
        "concurrency": 6,
    }
    return values | overrides


def _pipeline(tmp_path: Path, judge: dict[str, Any]) -> Path:
    return write_pipeline(tmp_path, judges=[judge], trials=2)


def _meta_endpoints(rundir: Path) -> dict[str, dict[str, int]]:
    rows = json.loads((rundir / "meta.json").read_text())["last_invocation"]["per_model"]
    return next(r for r in rows if r["model"] == "fleet-judge")["endpoints"]


def _sent_units(rundir: Path) -> int:
    """Judge units answered by a request (not by the call cache: two generators can make byte-identical
    calls, and the identical judge prompt is then asked once)."""
    rows = json.loads((rundir / "meta.json").read_text())["last_invocation"]["per_model"]
    return JUDGE_UNITS - int(next(r for r in rows if r["model"] == "fleet-judge")["cache_hits"])


def _units(rundir: Path) -> list[tuple[Any, ...]]:
    units = RunFolder.open(rundir).units(["status"], [("stage", "==", "judge")])
    return list(units.itertuples(index=False, name=None))


def _within_ten_percent_of_even(counts: list[int]) -> bool:
    even = sum(counts) / len(counts)
    return all(abs(n - even) <= 0.1 * even for n in counts)


# ------------------------------------------------------------------------------------------ settings
def test_redact_url_drops_userinfo_query_and_fragment() -> None:
    assert redact_url("http://user:pw@gpu-1:8000/v1?key=abc#x") == "http://gpu-1:8000/v1"
    assert redact_url("https://host/v1") == "https://host/v1"


def test_fleet_keys_are_checked_and_cosmetic(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="api_base .one endpoint. or api_bases"):
        ModelSettings(model="openai/x", api_base="http://a/v1", api_bases=["http://b/v1"])
    with pytest.raises(ValueError, match="twice"):
        ModelSettings(model="openai/x", api_bases=["http://a/v1", "http://a/v1"])
    with pytest.raises(ValueError, match="batch mode sends to one provider endpoint"):
        ModelSettings(model="openai/x", api_bases=["http://a/v1", "http://b/v1"], batch=True)
    path = write_pipeline(tmp_path, judges=[_fleet([], name="j")])
    with pytest.raises(PipelineError, match=r"judges\[0\]\.api_bases"):
        load_pipeline(path)
    # moving or adding replicas does not change what the results mean: the config hash stays
    one = load_pipeline(write_pipeline(tmp_path, judges=[_fleet(["http://a/v1"])]))
    three = load_pipeline(
        write_pipeline(tmp_path, judges=[_fleet(["http://a/v1", "http://b/v1", "http://c/v1"])])
    )
    assert config_hash(one) == config_hash(three)


def test_preflight_checks_every_endpoint_and_redacts_it(fake_llm: FakeLLM) -> None:
    # (a key in a URL, user:password@ or ?api-key=, is refused on its own and shown redacted:
    # tests/test_endpoint_credentials.py)
    dead = f"http://127.0.0.1:{_free_port()}/v1#hunter2-secret"
    settings = ModelSettings(**_fleet([fake_llm.base_url, dead]))
    (line,) = preflight([ModelUse("judge", settings, "judges[0]")])
    assert "does not answer" in line and redact_url(dead) in line
    assert "hunter2" not in line
    assert preflight([ModelUse("judge", ModelSettings(**_fleet([fake_llm.base_url])), "judges[0]")]) == []


# ------------------------------------------------------------------------------------------ client
def test_cache_key_names_no_endpoint(servers: list[FakeLLM]) -> None:
    a, b, c = servers
    client = ModelClient(backoff_base_s=0.01)
    fields = [{"role": "user", "content": "hello"}]
    first = ModelSettings(**_fleet([a.base_url, b.base_url]))
    other = ModelSettings(**_fleet([c.base_url]))
    key_fields = client.request_fields(first, fields, None, None, 0)
    assert key_fields == client.request_fields(other, fields, None, None, 0)  # replicas added or removed
    assert key_fields["api_base"] == "fleet:fleet-judge"


def test_two_fleets_of_one_model_string_share_no_answers_and_no_concurrency(
    servers: list[FakeLLM], tmp_path: Path
) -> None:
    # review finding 5: a small and a big deployment, both served as the same litellm model string
    x, y, _ = servers
    x.set_responder(lambda req: "from fleet X")
    y.set_responder(lambda req: "from fleet Y")
    y.latency = 0.2
    small = ModelSettings(**_fleet([x.base_url], name="small", concurrency=1))
    big = ModelSettings(**_fleet([y.base_url], name="big", concurrency=4))
    client = ModelClient(CallCache(tmp_path / "cache.sqlite"), backoff_base_s=0.01)

    async def go() -> tuple[str, str]:
        first = (await client.complete(small, [{"role": "user", "content": "hello"}])).text
        second = (await client.complete(big, [{"role": "user", "content": "hello"}])).text
        await asyncio.gather(
            *(client.complete(big, [{"role": "user", "content": f"q{i}"}]) for i in range(4))
        )
        return first, second

    assert asyncio.run(go()) == ("from fleet X", "from fleet Y")
    assert y.max_in_flight == 4  # big's own concurrency, not small's 1


def test_two_endpoints_share_calls_evenly_and_count_them(servers: list[FakeLLM]) -> None:
    a, b, _ = servers
    settings = ModelSettings(**_fleet([a.base_url, b.base_url], concurrency=4))
    client = ModelClient(backoff_base_s=0.01)

    async def go() -> None:
        await asyncio.gather(
            *(client.complete(settings, [{"role": "user", "content": f"q{i}"}]) for i in range(40))
        )

    asyncio.run(go())
    assert a.answered + b.answered == 40
    assert _within_ten_percent_of_even([a.answered, b.answered])
    assert a.max_in_flight <= 2 and b.max_in_flight <= 2  # ceil(concurrency 4 / 2 endpoints)
    counts = client.stats.per_endpoint["fleet-judge"]
    assert counts[a.base_url].ok == a.answered and counts[b.base_url].ok == b.answered
    summary = client.stats.summary()["per_endpoint"]["fleet-judge"]
    assert summary[a.base_url] == {"ok": a.answered, "failed": 0}


def test_a_failing_endpoint_is_cooled_down_and_the_call_moves_on(servers: list[FakeLLM]) -> None:
    a, b, _ = servers
    a.fail_next(status=503, times=1)
    settings = ModelSettings(**_fleet([a.base_url, b.base_url], concurrency=1, max_retries=0))
    client = ModelClient(backoff_base_s=5.0)  # a long cool-down: A is not asked again in this test

    async def go() -> list[str]:
        out = []
        for i in range(4):
            out.append((await client.complete(settings, [{"role": "user", "content": f"q{i}"}])).text)
        return out

    texts = asyncio.run(go())
    assert len(texts) == 4  # max_retries 0, yet nothing failed: the 503 moved to B at once
    assert len(a.requests) == 1 and a.answered == 1  # the one 503 answer, then A was left alone
    assert b.answered == 4
    counts = client.stats.per_endpoint["fleet-judge"]
    assert (counts[a.base_url].ok, counts[a.base_url].failed) == (0, 1)
    assert (counts[b.base_url].ok, counts[b.base_url].failed) == (4, 0)
    stats = client.stats.model("fleet-judge")  # the move to B is a retry, counted by kind as on one server
    assert (stats.requests, stats.retries, stats.retries_by_kind) == (5, 1, {"server_error": 1})


def test_an_endpoint_is_asked_again_after_its_cool_down(servers: list[FakeLLM]) -> None:
    a, b, _ = servers
    a.fail_next(status=503)
    settings = ModelSettings(**_fleet([a.base_url, b.base_url], concurrency=1, max_retries=0))
    client = ModelClient(backoff_base_s=0.05)  # A's first cool-down: 0.05 s

    async def go() -> None:
        await client.complete(settings, [{"role": "user", "content": "first"}])  # A: 503, then B
        await asyncio.sleep(0.2)
        for i in range(4):
            await client.complete(settings, [{"role": "user", "content": f"q{i}"}])

    asyncio.run(go())
    # after the cool-down A is probed with one call, answers, and takes its even share again
    assert [r["messages"][0]["content"] for r in a.requests] == ["first", "q0", "q2"]
    assert [r["messages"][0]["content"] for r in b.requests] == ["first", "q1", "q3"]


def test_a_call_tries_each_endpoint_once_before_failing(servers: list[FakeLLM]) -> None:
    # every server answers 503: with max_retries 2 and three endpoints, each call is sent exactly once to
    # each server (a busy endpoint it has not tried is waited for, a tried one is not asked again)
    from fakeserver import Reply

    for server in servers:
        server.set_responder(lambda req: Reply(status=503, body='{"error": {"message": "down"}}'))
    settings = ModelSettings(**_fleet([s.base_url for s in servers], concurrency=6, max_retries=2))
    client = ModelClient(backoff_base_s=0.001)

    async def go() -> list[BaseException | Any]:
        calls = [client.complete(settings, [{"role": "user", "content": f"q{i}"}]) for i in range(24)]
        return await asyncio.gather(*calls, return_exceptions=True)

    errors = asyncio.run(go())
    assert all(isinstance(e, ModelCallError) and e.kind == "server_error" for e in errors)
    assert {e.attempts for e in errors} == {3}
    for server in servers:
        asked = sorted(r["messages"][0]["content"] for r in server.requests)
        assert asked == sorted(f"q{i}" for i in range(24))


@pytest.mark.parametrize("status, kind", [(404, "not_found"), (401, "auth")])
def test_a_replica_that_refuses_the_model_is_taken_out_not_the_fleet(
    servers: list[FakeLLM], status: int, kind: str
) -> None:
    # review finding 1: one misconfigured replica (404: model not served there; 401: another key) used to
    # stop the whole fleet; now it is taken out for the run and its calls move to the working replica
    bad, good, _ = servers
    bad.fail_next(status=status, times=50, message="The model `test-model` does not exist.")
    settings = ModelSettings(**_fleet([bad.base_url, good.base_url], concurrency=4, max_retries=0))
    client = ModelClient(backoff_base_s=0.01)

    async def go() -> list[Any]:
        calls = [client.complete(settings, [{"role": "user", "content": f"q{i}"}]) for i in range(6)]
        first = await asyncio.gather(*calls, return_exceptions=True)
        return [*first, await client.complete(settings, [{"role": "user", "content": "later"}])]

    results = asyncio.run(go())
    assert [r.text for r in results] == [_verdict_json(1.0)] * 7  # every call answered, max_retries 0
    assert not client.stopped
    # the refused replica got at most the calls that went out before its first answer came back (4 in
    # flight at most), and nothing after: "later" went to the good one only
    assert 1 <= len(bad.requests) <= 4 and "later" not in [r["messages"][0]["content"] for r in bad.requests]
    assert good.answered == 7
    counts = client.stats.per_endpoint["fleet-judge"]
    assert counts[bad.base_url].failed == len(bad.requests) and counts[good.base_url].ok == 7


def test_a_fleet_stops_when_every_replica_refuses_the_model(servers: list[FakeLLM]) -> None:
    a, b, _ = servers
    a.fail_next(status=404, times=50, message="no such model here")
    b.fail_next(status=401, times=50, message="bad key here")
    settings = ModelSettings(**_fleet([a.base_url, b.base_url], concurrency=1, max_retries=3))
    client = ModelClient(backoff_base_s=0.01)

    async def go() -> list[Any]:
        first = await asyncio.gather(
            client.complete(settings, [{"role": "user", "content": "q"}]), return_exceptions=True
        )
        second = await asyncio.gather(
            client.complete(settings, [{"role": "user", "content": "r"}]), return_exceptions=True
        )
        return [*first, *second]

    first, second = asyncio.run(go())
    assert isinstance(first, ModelCallError) and first.attempts == 2  # one try per endpoint, no retries
    assert first.kind in ("not_found", "auth") and "refused by every endpoint" in first.message
    assert a.base_url in first.message and b.base_url in first.message
    assert isinstance(second, ModelCallError) and "the model is stopped" in second.message
    assert len(a.requests) == 1 and len(b.requests) == 1  # the second call was not sent


def test_endpoints_refusing_one_entrys_key_still_serve_another_entrys(
    servers: list[FakeLLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two entries of one model on the same fleet, billed to two keys: every endpoint answers one key 401.
    That entry is stopped; the other's calls still find every endpoint (the refusal is per credentials)."""
    a, b, _ = servers
    monkeypatch.setenv("AJ_REVOKED_KEY", "sk-revoked-0123456789")
    monkeypatch.setenv("AJ_VALID_KEY", "sk-valid-0123456789")
    for server in (a, b):
        server.refuse_header("Authorization", "Bearer sk-revoked-0123456789")
    urls = [a.base_url, b.base_url]
    revoked = ModelSettings(**_fleet(urls, name="revoked", api_key_env="AJ_REVOKED_KEY", max_retries=0))
    valid = ModelSettings(**_fleet(urls, name="valid", api_key_env="AJ_VALID_KEY", max_retries=0))
    client = ModelClient(backoff_base_s=0.01)

    async def go() -> tuple[Any, list[str]]:
        refused = await asyncio.gather(
            client.complete(revoked, [{"role": "user", "content": "q"}]), return_exceptions=True
        )
        answers = [
            (await client.complete(valid, [{"role": "user", "content": f"r{i}"}])).text for i in range(4)
        ]
        return refused[0], answers

    refused, answers = asyncio.run(go())
    assert isinstance(refused, ModelCallError) and refused.kind == "auth"
    assert "refused by every endpoint" in refused.message
    assert len(answers) == 4 and all(answers)
    asked = [[r["messages"][0]["content"] for r in server.requests] for server in (a, b)]
    assert [x.count("q") for x in asked] == [1, 1]  # the revoked key: refused by each endpoint once
    assert sorted(c for x in asked for c in x if c != "q") == ["r0", "r1", "r2", "r3"]  # valid: all sent


def test_every_endpoint_down_is_one_clear_error_without_secrets() -> None:
    secret = "qs-secret-token-123"
    urls = [f"http://127.0.0.1:{_free_port()}/v1?token={secret}", f"http://127.0.0.1:{_free_port()}/v1"]
    settings = ModelSettings(**_fleet(urls, max_retries=0))
    client = ModelClient(backoff_base_s=0.01)
    with pytest.raises(ModelCallError) as info:
        asyncio.run(client.complete(settings, [{"role": "user", "content": "hi"}]))
    # no endpoint ever answered: the fleet is unreachable (every replica down), a model-stopping kind
    assert info.value.kind == "unreachable" and info.value.attempts == 2
    assert "failed on every endpoint" in info.value.message
    assert redact_url(urls[0]) in info.value.message and urls[1] in info.value.message
    assert secret not in str(info.value)
    assert secret not in json.dumps(client.stats.summary())


# ------------------------------------------------------------------------------------------ grid
def test_grid_spreads_over_three_endpoints(
    tmp_path: Path, servers: list[FakeLLM], capsys: pytest.CaptureFixture[str]
) -> None:
    urls = [s.base_url for s in servers]
    pipeline = _pipeline(tmp_path, _fleet(urls))
    assert run_cli(pipeline, tmp_path / "dry", dry_run=True) == 0
    assert "fleet-judge" in capsys.readouterr().out and all(s.requests == [] for s in servers)
    assert run_cli(pipeline, tmp_path / "run") == 0
    answered = [s.answered for s in servers]
    assert sum(answered) == _sent_units(tmp_path / "run") > JUDGE_UNITS // 2
    assert _within_ten_percent_of_even(answered), answered
    assert _meta_endpoints(tmp_path / "run") == {
        u: {"ok": n, "failed": 0} for u, n in zip(urls, answered, strict=True)
    }
    out = capsys.readouterr().out
    assert "per endpoint" in out and all(u in out for u in urls)


@pytest.mark.parametrize("n_servers", [2, 3])
def test_grid_survives_an_endpoint_killed_mid_run(
    tmp_path: Path, servers: list[FakeLLM], n_servers: int
) -> None:
    fleet = servers[:n_servers]
    victim = fleet[-1]

    def kill_when_busy() -> None:  # kill the last server after it has answered a few units
        deadline = time.monotonic() + 20
        while victim.answered < 8 and time.monotonic() < deadline:
            time.sleep(0.002)
        victim.kill()

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    rundir = tmp_path / "run"
    assert run_cli(_pipeline(tmp_path, _fleet([s.base_url for s in fleet])), rundir) == 0
    killer.join(timeout=5)
    assert victim.dead and victim.answered >= 8
    # every unit done once, and every answer the servers sent was used exactly once
    assert _units(rundir) == [("done",)] * JUDGE_UNITS
    judg = read(rundir, "judgments")
    assert judg.judge_error.isna().all() and judg.parse_ok.all()
    assert len(judg.drop_duplicates(COORDS)) == JUDGE_UNITS
    assert sum(s.answered for s in fleet) == _sent_units(rundir) > JUDGE_UNITS // 2
    endpoints = _meta_endpoints(rundir)
    assert [endpoints[s.base_url]["ok"] for s in fleet] == [s.answered for s in fleet]
    assert endpoints[victim.base_url]["failed"] >= 1  # the kill was seen and routed around
    assert all(endpoints[s.base_url]["failed"] == 0 for s in fleet[:-1])


def test_grid_with_every_endpoint_dead_fails_each_unit_without_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = [f"http://127.0.0.1:{_free_port()}/v1" for _ in range(2)]
    rundir = tmp_path / "run"
    judge = _fleet(urls, max_retries=0)
    pipeline = write_pipeline(tmp_path, judges=[judge], generators=["sim/perfect"], conditions=["with_gt"])
    from agentjudge.runner import run

    # the preflight would refuse this run (rightly: nothing answers); here the servers die after it
    monkeypatch.setattr(run, "preflight", lambda *a, **k: [])
    assert run_cli(pipeline, rundir) == 1
    # no replica ever answered: the first calls find the fleet unreachable and stop it; the units already
    # given out fail (unsent once it is stopped), the rest are left for a re-run
    units = _units(rundir)
    assert 0 < len(units) < 8 and set(units) == {("failed",)}
    judg = read(rundir, "judgments")
    assert judg.verdict.isna().all() and (~judg.parse_ok).all()
    assert judg.judge_error.str.contains("could not connect|the model is stopped").all()
    assert judg.judge_error.str.contains("failed on every endpoint").any()
    counts = _meta_endpoints(rundir)
    assert set(counts) == set(urls) and all(c["ok"] == 0 and 0 < c["failed"] < 8 for c in counts.values())


def test_probe_calls_every_endpoint_and_names_the_one_that_refuses(servers: list[FakeLLM]) -> None:
    a, b, _ = servers
    b.set_responder(None)
    b.fail_next(status=404, message="model openai/test-model does not exist here")
    settings = ModelSettings(**_fleet([a.base_url, b.base_url]))
    (line,) = preflight([ModelUse("judge", settings, "judges[0]")], probe=True)
    assert line.startswith(f"judges[0] endpoint {b.base_url} ('openai/test-model'): --probe")
    assert len(a.requests) == 1 and a.requests[0]["max_tokens"] == 1
    assert len(b.requests) == 1


def test_a_key_in_an_endpoint_url_reaches_no_file(tmp_path: Path, servers: list[FakeLLM]) -> None:
    # litellm refuses user:password@ next to an api key ("Cannot combine AUTHORIZATION header ..."): the
    # preflight refuses the pipeline before any call (tests/test_endpoint_credentials.py), and the password
    # is in no file but the pipeline itself
    a, b, _ = servers
    secret = "userinfo-secret-77"
    urls = [a.base_url.replace("http://", f"http://judge:{secret}@"), b.base_url]
    pipeline = write_pipeline(
        tmp_path, judges=[_fleet(urls)], generators=["sim/perfect"], conditions=["with_gt"]
    )
    rundir = tmp_path / "run"
    assert run_cli(pipeline, rundir) == 2
    assert a.requests == [] and b.requests == [] and not rundir.exists()
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != pipeline:
            assert secret.encode() not in path.read_bytes(), path


# ----------------------------------------------------------------------------------- routing (issue 42)
def test_fleet_picks_fewest_in_flight_before_fewest_sent() -> None:
    """Hand-computed: A holds one call, B has answered two; the next call goes to B (0 in flight), though
    B has been sent more. Choosing by calls sent first would pick A, behind its slow request."""
    from agentjudge.models.fleet import Fleet

    fleet = Fleet.of(["http://a/v1", "http://b/v1"], concurrency=4, endpoint_concurrency=2, base_s=1.0)
    a, b = fleet.endpoints
    a.in_flight, a.sent = 1, 1
    b.in_flight, b.sent = 0, 2
    assert fleet._pick(set()) is b
    b.in_flight = 1  # both one in flight: the fewest sent breaks the tie
    assert fleet._pick(set()) is a
    a.sent = 2  # and then list order
    assert fleet._pick(set()) is a


def test_calls_avoid_the_replica_holding_a_slow_request(servers: list[FakeLLM]) -> None:
    """A real slow replica: while A holds the first call, the next three calls (each awaited in turn) all
    go to the idle B, with endpoint_concurrency 2 leaving A room for more."""
    a, b, _ = servers
    a.hang_next(seconds=1.0)  # A's first request stalls (the client's timeout is 2 s)
    settings = ModelSettings(**_fleet([a.base_url, b.base_url], concurrency=4, endpoint_concurrency=2))
    client = ModelClient(backoff_base_s=0.01)

    async def go() -> None:
        slow = asyncio.create_task(client.complete(settings, [{"role": "user", "content": "slow"}]))
        while not a.requests:  # the first call is on A (the tie goes to the first listed)
            await asyncio.sleep(0.01)
        for i in range(3):
            await client.complete(settings, [{"role": "user", "content": f"q{i}"}])
            assert len(a.requests) == 1  # A is still holding "slow": nothing more was sent there
        await slow

    asyncio.run(go())
    assert [r["messages"][0]["content"] for r in a.requests] == ["slow"]
    assert [r["messages"][0]["content"] for r in b.requests] == ["q0", "q1", "q2"]


def test_a_failing_endpoints_cool_down_doubles_honours_retry_after_and_is_capped() -> None:
    """Hand-computed cool-downs with a 1 s base: 1, 2, 4 s for failures in a row; a Retry-After longer than
    that wins; nothing lasts beyond MAX_COOLDOWN_S (60 s); one success makes the endpoint whole again. A
    cool-down that did not grow would send a dead replica a paid-for request every second."""
    from agentjudge.models.fleet import MAX_COOLDOWN_S, Fleet

    async def go() -> list[float]:
        fleet = Fleet.of(["http://a/v1", "http://b/v1"], concurrency=2, endpoint_concurrency=1, base_s=1.0)
        a = fleet.endpoints[0]
        waits = []

        async def fail(retry_after: float | None = None) -> None:
            a.in_flight += 1
            before = time.monotonic()
            await fleet.release(a, down=True, retry_after=retry_after)
            waits.append(a.down_until - before)
            a.down_until = 0.0  # the cool-down ends: the next failure starts from now

        for _ in range(3):
            await fail()
        await fail(retry_after=30.0)  # the fourth (8 s) is lengthened by the server's Retry-After
        await fail()  # the fifth: 16 s
        for _ in range(3):
            await fail()  # 32 s, then 64 s and 128 s capped at 60 s
        await fail(retry_after=500.0)  # a Retry-After past the cap is capped too
        a.in_flight += 1
        await fleet.release(a, down=False)
        assert (a.failures_in_a_row, a.down_until) == (0, 0.0)
        assert MAX_COOLDOWN_S == 60.0
        return waits

    waits = asyncio.run(go())
    expected = [1.0, 2.0, 4.0, 30.0, 16.0, 32.0, 60.0, 60.0, 60.0]
    assert waits == [pytest.approx(e, abs=0.05) for e in expected]
