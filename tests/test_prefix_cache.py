"""Issue 18: prompts laid out for prefix caching, cached-token accounting, grid order, dry-run prices.

Through the loopback server: every judge call on one record (generators x conditions x variants) starts with
the same bytes (system message, then the record's tools and query), the calls of one record arrive together,
and cached tokens reported in the provider's usage are recorded and priced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakeserver import Reply

from agentjudge.commands.run import run_cli
from agentjudge.judges.prompts import (
    TAG_QUERY,
    TAG_TOOLS,
    build_messages,
    needs_cache_breakpoint,
    user_parts,
    with_cache_breakpoint,
)
from agentjudge.models.client import ModelClient
from agentjudge.models.prices import cache_saving, cached_prompt_tokens, count_tokens, prices
from agentjudge.runner.prefixes import PrefixCache, PromptPieces, cacheable, split_messages
from agentjudge.runner.store import UnitKey
from agentjudge.runner.work import prefix_order
from agentjudge.types import GTStep, JudgeRequest, PromptVariant, Task, ToolCall, ToolSchema

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
VERDICT = json.dumps({m: {"verdict": 1.0, "justification": "fine"} for m in ("tool", "param", "seq", "cov")})
GPT4O_IN, GPT4O_CACHED, GPT4O_OUT = 2.5e-6, 1.25e-6, 1e-5  # litellm's local cost map, per token


def _pipeline(folder: Path, judge: dict[str, Any], **fields: Any) -> Path:
    data = {
        "name": "prefix-grid",
        "dataset": str(MINI),
        "limit": 2,
        "difficulties": ["easy", "hard"],
        "generators": ["sim/weak", "sim/perfect"],
        "judges": [judge],
        "conditions": ["with_gt", "without_gt"],
        "prompt_variants": [{"prompt_format": "json"}, {"prompt_format": "json", "cot": True}],
        "concurrency": 1,
        "cache": "cache.sqlite",
        **fields,
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _query_of(request: dict[str, Any]) -> str:
    user = request["messages"][1]["content"]
    return user[user.index(f"<{TAG_QUERY}>") : user.index(f"</{TAG_QUERY}>")]


def test_shared_prefix_order_and_cached_token_accounting_through_the_loopback(
    tmp_path: Path, fake_llm: Any
) -> None:
    # The provider reports 1,536 of 2,000 prompt tokens as read from its prefix cache on every call.
    details = {"cached_tokens": 1536}
    usage = {"prompt_tokens": 2000, "completion_tokens": 100, "prompt_tokens_details": details}
    fake_llm.set_responder(lambda req: Reply(text=VERDICT, usage=usage))
    judge = fake_llm.settings(model="openai/gpt-4o", name="judge-a", concurrency=1)
    pipeline = _pipeline(tmp_path, judge.model_dump(exclude_defaults=True))
    assert run_cli(pipeline, tmp_path / "run") == 0

    requests = fake_llm.requests
    per_record = 2 * 2 * 2  # generators x conditions x variants
    assert len(requests) == 2 * 2 * per_record  # 2 base scenarios x 2 difficulties
    # one system message for the whole run: the longest shared prefix of all
    assert len({r["messages"][0]["content"] for r in requests}) == 1
    # grid order: the calls of one record arrive in one stretch, the records of one base together
    queries = [_query_of(r) for r in requests]
    stretches = [q for i, q in enumerate(queries) if i == 0 or q != queries[i - 1]]
    assert len(stretches) == len(set(queries)) == 4
    for query in set(queries):
        users = [r["messages"][1]["content"] for r in requests if _query_of(r) == query]
        assert len(users) == per_record
        common = os.path.commonprefix(users)
        record_part = users[0][: users[0].index(f"</{TAG_QUERY}>") + len(f"</{TAG_QUERY}>")]
        assert common.startswith(record_part)  # tools + query: byte-identical for all 8 calls
        assert users[0].index(f"<{TAG_TOOLS}>") < users[0].index(f"<{TAG_QUERY}>")
        assert "Reference trace" not in common and "agent_calls" not in common  # per-call parts last

    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    (row,) = [r for r in meta["last_invocation"]["per_model"] if r["model"] == "judge-a"]
    n = len(requests)
    assert row["cached_prompt_tokens"] == 1536 * n and row["prompt_tokens"] == 2000 * n
    # litellm.completion_cost prices the cached tokens at the cache-read price; saved = the difference
    assert row["cost_usd"] == pytest.approx(n * (464 * GPT4O_IN + 1536 * GPT4O_CACHED + 100 * GPT4O_OUT))
    assert row["cache_saved_usd"] == pytest.approx(n * 1536 * (GPT4O_IN - GPT4O_CACHED))


async def test_client_records_cached_tokens_per_call(fake_llm: Any) -> None:
    fake_llm.queue(
        "ok",
        usage={
            "prompt_tokens": 3000,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 2048},
        },
    )
    fake_llm.queue("ok", usage={"prompt_tokens": 3000, "completion_tokens": 10})
    client = ModelClient(cache=None)
    settings = fake_llm.settings(model="openai/gpt-4o")
    first = await client.complete(settings, [{"role": "user", "content": "hi"}])
    second = await client.complete(settings, [{"role": "user", "content": "hi again"}])
    assert first.usage.cached_prompt_tokens == 2048
    assert first.usage.cost_usd == pytest.approx(952 * GPT4O_IN + 2048 * GPT4O_CACHED + 10 * GPT4O_OUT)
    assert second.usage.cached_prompt_tokens == 0 and second.usage.cache_saved_usd == 0.0
    assert second.usage.cost_usd == pytest.approx(3000 * GPT4O_IN + 10 * GPT4O_OUT)


async def test_a_call_cache_hit_reports_no_provider_cache_reads(fake_llm: Any, tmp_path: Any) -> None:
    """Our own cache answered: nothing was sent, so no cost and no provider-cache tokens or savings."""
    from agentjudge.models.cache import CallCache

    fake_llm.queue(
        "ok",
        usage={
            "prompt_tokens": 3000,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 2048},
        },
    )
    client = ModelClient(cache=CallCache(tmp_path / "calls.sqlite"))
    settings = fake_llm.settings(model="openai/gpt-4o")
    sent = await client.complete(settings, [{"role": "user", "content": "hi"}])
    hit = await client.complete(settings, [{"role": "user", "content": "hi"}])
    assert sent.usage.cached_prompt_tokens == 2048 and sent.usage.cache_saved_usd > 0
    assert hit.usage.cached and hit.usage.cost_usd == 0.0
    assert hit.usage.cached_prompt_tokens == 0 and hit.usage.cache_saved_usd == 0.0


async def test_pipeline_price_is_not_mixed_with_litellms_cache_discount(fake_llm: Any) -> None:
    """gpt-4o is in litellm's map with a cache price; a pipeline price replaces the whole price, and has no
    cache price, so every prompt token is charged at it and no saving is claimed."""
    usage = {"prompt_tokens": 3000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 2048}}
    fake_llm.queue("ok", usage=usage)
    settings = fake_llm.settings(model="openai/gpt-4o", input_cost_per_token=1e-6, output_cost_per_token=3e-6)
    out = await ModelClient(cache=None).complete(settings, [{"role": "user", "content": "hi"}])
    assert out.cost_known and out.usage.cached_prompt_tokens == 2048
    assert out.usage.cost_usd == pytest.approx(3000 * 1e-6 + 10 * 3e-6)
    assert out.usage.cache_saved_usd == 0.0


async def test_a_pipeline_price_is_handed_to_litellm_and_never_sent(
    fake_llm: Any, litellm_kwargs: list[dict[str, Any]]
) -> None:
    """The pipeline's price also goes to litellm as its per-call custom pricing (it then skips its own price
    lookup): the figures stay the pipeline price's, the request body carries no price, and errors are mapped
    as before."""
    from agentjudge.models.client import ModelCallError

    seen = litellm_kwargs
    usage = {"prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1024}}
    fake_llm.queue('{"tool": 1.0}', usage=usage, finish_reason="length")
    settings = fake_llm.settings(
        model="openai/local-judge", input_cost_per_token=2e-6, output_cost_per_token=5e-6, max_retries=0
    )
    out = await ModelClient(cache=None).complete(settings, [{"role": "user", "content": "hi"}])
    assert out.text == '{"tool": 1.0}' and out.finish_reason == "length"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.cached_prompt_tokens) == (
        1200,
        30,
        1024,
    )
    assert out.cost_known and out.usage.cost_usd == pytest.approx(1200 * 2e-6 + 30 * 5e-6)
    assert (seen[0]["input_cost_per_token"], seen[0]["output_cost_per_token"]) == (2e-6, 5e-6)
    body = fake_llm.requests[-1]
    assert not any("cost" in name for name in body)  # litellm's pricing stays in litellm
    fake_llm.fail_next(status=429, retry_after=0)
    with pytest.raises(ModelCallError) as info:
        await ModelClient(cache=None).complete(settings, [{"role": "user", "content": "again"}])
    assert info.value.kind == "rate_limit"


def test_half_a_pipeline_price_is_refused_naming_the_model(tmp_path: Path) -> None:
    from agentjudge.runner.pipeline import PipelineError, parse_pipeline

    data = {
        "name": "p",
        "dataset": "records.jsonl",
        "generators": ["sim/weak"],
        "judges": [{"model": "hosted_vllm/my-judge", "input_cost_per_token": 1e-6}],
    }
    with pytest.raises(PipelineError) as err:
        parse_pipeline(data, tmp_path / "p.yaml")
    (line,) = str(err.value).splitlines()
    assert "p.yaml: key `judges[0]`" in line and "hosted_vllm/my-judge" in line
    assert "input_cost_per_token and output_cost_per_token" in line


def test_anthropic_usage_fields_and_saving_with_a_write_premium() -> None:
    usage = {"prompt_tokens": 5000, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 500}
    assert cached_prompt_tokens(usage) == (1000, 500)
    assert cached_prompt_tokens({"prompt_tokens": 10}) == (0, 0)
    # claude-sonnet-4-5 in litellm's map: input 3e-6, cache read 3e-7, cache write 3.75e-6 per token
    assert cache_saving("anthropic/claude-sonnet-4-5", 1000, 500) == pytest.approx(
        1000 * (3e-6 - 3e-7) - 500 * (3.75e-6 - 3e-6)
    )
    assert cache_saving("openai/REPLACE-ME-unknown", 1000) == 0.0


def _request(condition: str = "with_gt", **variant: Any) -> JudgeRequest:
    tool = ToolSchema(
        name="get_ticket",
        description="Fetch a ticket.",
        parameters={
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The ticket id."},
                "description": {"type": "string", "description": "A parameter that is called description."},
                "priority": {"type": "string", "enum": ["low", "high"], "description": "How urgent."},
            },
            "required": ["id"],
        },
        returns={"type": "object", "properties": {"assignee_id": {"type": "string"}}},
    )
    call = ToolCall(name="get_ticket", arguments={"id": "T-1"})
    return JudgeRequest(
        task=Task(
            record_id="r:easy",
            base_id="r",
            difficulty="easy",
            query="Show T-1.",
            system_prompt="",
            tools=[tool],
        ),
        calls=[call],
        gt=[GTStep(call=call, output={"assignee_id": "u-1"})] if condition != "without_gt" else None,
        condition=condition,  # type: ignore[arg-type]
        variant=PromptVariant(**variant),
    )


def test_anthropic_breakpoint_marks_the_record_part_and_keeps_the_text() -> None:
    request = _request()
    messages = build_messages(request)
    marked = with_cache_breakpoint(messages, request)
    shared, rest = user_parts(request)
    blocks = marked[1]["content"]
    assert blocks[0] == {"type": "text", "text": shared, "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in blocks[1]
    assert "".join(b["text"] for b in blocks) == messages[1]["content"]
    assert shared.endswith(f"</{TAG_QUERY}>")
    assert needs_cache_breakpoint("anthropic/claude-sonnet-4-5")
    assert needs_cache_breakpoint("bedrock/anthropic.claude-3-5-sonnet")
    assert not needs_cache_breakpoint("openai/gpt-4o") and not needs_cache_breakpoint("hosted_vllm/q")


def test_record_part_is_identical_across_conditions_and_variants() -> None:
    parts = [
        user_parts(_request(c, **v))[0]
        for c in ("with_gt", "without_gt", "swapped_gt")
        for v in ({}, {"cot": True}, {"prompt_format": "freeform", "default_mode": "0.5"})
    ]
    assert len(set(parts)) == 1


def test_compact_tool_rendering_drops_returns_and_parameter_prose_only() -> None:
    request = _request()
    full = build_messages(request)[1]["content"]
    compact = build_messages(request, "agentjudge", "compact")[1]["content"]
    block = compact[compact.index(f"<{TAG_TOOLS}>") + len(TAG_TOOLS) + 3 : compact.index(f"</{TAG_TOOLS}>")]
    (tool,) = json.loads(block)
    assert tool == {
        "name": "get_ticket",
        "description": "Fetch a ticket.",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "description": {"type": "string"},  # a parameter's NAME is never dropped
                "priority": {"type": "string", "enum": ["low", "high"]},
            },
            "required": ["id"],
        },
    }
    assert '"returns"' in full and len(compact) < len(full)
    # the paper family shows tools as the published records did, whatever the rendering option
    assert build_messages(request, "paper", "compact") == build_messages(request, "paper")


def _unit(base: str, difficulty: str, generator: str, condition: str) -> UnitKey:
    return UnitKey("judge", f"{base}:{difficulty}", difficulty, generator, 0, "j", condition, "v", "", 0)


def test_prefix_order_groups_a_record_then_its_condition_then_generators() -> None:
    units = [
        _unit(b, d, g, c)
        for b in ("b", "a")
        for g in ("g2", "g1")
        for c in ("without_gt", "with_gt")
        for d in ("hard", "easy")
    ]
    ordered = [(u.record_id, u.condition, u.generator) for u in sorted(units, key=prefix_order)]
    expected = [
        (f"{b}:{d}", c, g)
        for b in ("a", "b")
        for d in ("easy", "hard")
        for c in ("with_gt", "without_gt")
        for g in ("g1", "g2")
    ]
    assert ordered == expected
    # the plain coordinate order interleaves conditions between generators: the prefix order does not
    plain = [(u.record_id, u.condition, u.generator) for u in sorted(units)]
    assert plain[:2] == [("a:easy", "with_gt", "g1"), ("a:easy", "without_gt", "g1")]


def test_prefix_cache_replay_hand_computed() -> None:
    cache = PrefixCache(count=len)  # one token per character
    system, record, calls = "S" * 1100, "T" * 500, "<agent_calls>\nx\n</agent_calls>"
    prompt = PromptPieces(("\x00role:system", system, "\x00role:user", record, calls), shared=4)
    assert cache.send(prompt, depth=4) == (1600 + len(calls), 0, 1536)  # first call: nothing to read
    assert cache.send(prompt, depth=4) == (1600 + len(calls), 1536, 0)  # 1,024 + 4 x 128 of 1,600
    other = PromptPieces(("\x00role:system", system, "\x00role:user", "U" * 500, calls), shared=4)
    assert cache.send(other, depth=4)[1] == 1024  # only the 1,100-token system text is shared
    assert cache.send(prompt, depth=0)[1:] == (0, 0)  # a provider without caching reads nothing
    assert cacheable(1023) == 0 and cacheable(1024) == 1024 and cacheable(1151) == 1024


def test_split_messages_puts_the_calls_block_outside_the_shared_prefix() -> None:
    request = _request()
    prompt = split_messages(build_messages(request), breakpoint_after=TAG_QUERY)
    assert prompt.pieces[prompt.shared].startswith("<agent_calls>")
    assert prompt.pieces[prompt.breakpoint - 1].startswith(f"<{TAG_QUERY}>")
    assert "".join(p for p in prompt.pieces if not p.startswith("\x00")) == "".join(
        m["content"] for m in build_messages(request)
    )


def test_dry_run_counts_with_the_tokenizer_and_prices_three_ways(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentjudge.runner.dryrun import estimate
    from agentjudge.runner.pipeline import load_pipeline
    from agentjudge.runner.run import load_dataset

    judge = {"model": "openai/gpt-4o", "name": "big"}
    pipe = load_pipeline(
        _pipeline(tmp_path, judge, generators=["sim/weak"], difficulties=["easy"], prompt_variants=[{}])
    )
    data, partners = load_dataset(pipe), {}  # no swapped_gt condition: no partners
    rows = {r["model"]: r for r in estimate(pipe, data, partners, tmp_path / "none")}
    big = rows["big"]
    assert big["calls"] == 2 * 2  # 2 records x 2 conditions
    # tokens: within 1 % of litellm.token_counter over the exact messages the run sends
    exact = 0
    for record in data.records:
        for condition in ("with_gt", "without_gt"):
            request = JudgeRequest(
                task=data.task(record, "easy"),
                calls=record.expected_calls,
                gt=record.gt if condition == "with_gt" else None,
                condition=condition,  # type: ignore[arg-type]
                variant=PromptVariant(),
            )
            exact += count_tokens("openai/gpt-4o", messages=build_messages(request))[0]
    assert big["prompt_tokens"] == pytest.approx(exact, rel=0.01)
    p = prices("openai/gpt-4o")
    assert p.batch_source == "litellm"
    list_price = big["prompt_tokens"] * GPT4O_IN + big["completion_tokens"] * GPT4O_OUT
    assert big["cost_usd"] == pytest.approx(list_price)
    assert big["cost_batch_usd"] == pytest.approx(list_price / 2)  # gpt-4o's listed batch prices are half
    assert 0 < big["cached_prompt_tokens"] < big["prompt_tokens"]
    saved = big["cached_prompt_tokens"] * (GPT4O_IN - GPT4O_CACHED)
    assert big["cost_cached_usd"] == pytest.approx(list_price - saved)
    assert rows["sim/weak"]["cost_usd"] == 0.0


def test_batch_cache_stacking_only_where_the_provider_lists_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    # gpt-4o: litellm lists batch prices and a cache-read price, but no cache-read price inside a batch
    gpt4o = prices("openai/gpt-4o")
    assert gpt4o.batch_cache_source == "none" and gpt4o.batch_cache_read is None
    # claude-sonnet-4-5: litellm lists the in-batch cache prices (half the usual cache prices)
    sonnet = prices("anthropic/claude-sonnet-4-5")
    assert sonnet.batch_cache_source == "litellm"
    assert (sonnet.batch_cache_read, sonnet.batch_cache_write) == (1.5e-7, 1.875e-6)
    # an Anthropic model with cache prices but no batch prices listed: the batch page's 50 % for all usage
    fake = {"litellm_provider": "anthropic", "mode": "chat", "input_cost_per_token": 4e-6,
            "output_cost_per_token": 2e-5, "cache_read_input_token_cost": 4e-7,
            "cache_creation_input_token_cost": 5e-6}  # fmt: skip
    monkeypatch.setitem(litellm.model_cost, "agentjudge-test-claude", fake)
    prices.cache_clear()
    try:
        p = prices("anthropic/agentjudge-test-claude")
        assert (p.batch_source, p.batch_cache_source) == ("documented 50%", "documented 50%")
        assert (p.batch_input, p.batch_output) == (2e-6, 1e-5)
        assert (p.batch_cache_read, p.batch_cache_write) == (2e-7, 2.5e-6)
        # the same model under a provider with no documented stacking: batch yes, cache inside it no
        monkeypatch.setitem(
            litellm.model_cost, "agentjudge-test-claude", fake | {"litellm_provider": "openai"}
        )
        prices.cache_clear()
        q = prices("openai/agentjudge-test-claude")
        assert (q.batch_source, q.batch_cache_source, q.batch_cache_read) == ("documented 50%", "none", None)
    finally:
        prices.cache_clear()


def test_dry_run_batch_plus_cache_column(tmp_path: Path) -> None:
    from agentjudge.runner.dryrun import estimate
    from agentjudge.runner.pipeline import load_pipeline
    from agentjudge.runner.run import load_dataset

    path = _pipeline(tmp_path, {"model": "openai/gpt-4o", "name": "gpt"}, generators=["sim/weak"])
    spec = yaml.safe_load(path.read_text())
    spec["judges"].append({"model": "anthropic/claude-sonnet-4-5", "name": "sonnet"})
    path.write_text(yaml.safe_dump(spec))
    pipe = load_pipeline(path)
    rows = {r["model"]: r for r in estimate(pipe, load_dataset(pipe), {}, tmp_path / "none")}
    gpt, sonnet = rows["gpt"], rows["sonnet"]
    # no documented stacking for gpt-4o: batch+cache is the batch price, to the cent and below
    assert gpt["cost_batch_cached_usd"] == gpt["cost_batch_usd"] and gpt["batch_cache_source"] == "none"
    assert gpt["cached_prompt_tokens"] > 0  # there were cached prefixes; they are just not discounted
    # sonnet: uncached prompt at 1.5e-6, cached reads at 1.5e-7, the write premium at 1.875e-6 - 1.5e-6,
    # completions at 7.5e-6 (litellm's batch prices for claude-sonnet-4-5)
    assert sonnet["batch_cache_source"] == "litellm" and sonnet["cached_prompt_tokens"] > 0
    # the written tokens are not a row field: recover them from the cached column's write premium
    # (cached $ = (P - R) * 3e-6 + R * 3e-7 + W * (3.75e-6 - 3e-6) + C * 1.5e-5)
    p, r, c = sonnet["prompt_tokens"], sonnet["cached_prompt_tokens"], sonnet["completion_tokens"]
    written = (sonnet["cost_cached_usd"] - (p - r) * 3e-6 - r * 3e-7 - c * 1.5e-5) / 0.75e-6
    assert written == pytest.approx(round(written), abs=1e-3) and written > 0
    expected = (p - r) * 1.5e-6 + r * 1.5e-7 + round(written) * 0.375e-6 + c * 7.5e-6
    assert sonnet["cost_batch_cached_usd"] == pytest.approx(expected)
    assert sonnet["cost_batch_cached_usd"] < sonnet["cost_batch_usd"]


def test_dry_run_prices_an_interactive_episode_along_the_gt_path(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from agentjudge.commands.run_output import print_plan
    from agentjudge.generators.interactive import initial_messages, tool_content
    from agentjudge.generators.llm import openai_tools
    from agentjudge.runner.dryrun import estimate, plan
    from agentjudge.runner.pipeline import load_pipeline
    from agentjudge.runner.run import load_dataset

    gens = [
        {"model": "openai/gpt-4o", "name": "shot"},
        {"model": "openai/gpt-4o", "name": "agent", "generation": "interactive"},
    ]
    judge = {"model": "baseline/always-1"}
    pipe = load_pipeline(
        _pipeline(tmp_path, judge, generators=gens, difficulties=["easy"], prompt_variants=[{}])
    )
    data = load_dataset(pipe)
    rows = {r["model"]: r for r in estimate(pipe, data, {}, tmp_path / "none")}
    assert rows["shot"]["calls"] == 2  # one call per record
    assert rows["agent"]["calls"] == sum(len(r.gt) + 1 for r in data.records)  # one per GT step + answer
    # turn k re-sends the first turn's prompt plus k (call, output) pairs: bounded by hand below and above
    low = high = 0
    for record in data.records:
        task = data.task(record, "easy")
        first = count_tokens("openai/gpt-4o", messages=initial_messages(task, True))[0]
        first += count_tokens("openai/gpt-4o", text=json.dumps(openai_tools(task.tools)))[0]
        grown = 0
        for k in range(len(record.gt) + 1):
            low += first + grown
            high += first + grown + 20 * 2 * k  # message framing: generous
            if k < len(record.gt):
                step = record.gt[k]
                grown += count_tokens("openai/gpt-4o", text=json.dumps([step.call.model_dump()]))[0]
                grown += count_tokens("openai/gpt-4o", text=tool_content(step.output, None))[0]
    assert low * 0.99 <= rows["agent"]["prompt_tokens"] <= high * 1.01
    out = io.StringIO()
    print_plan(Console(file=out, width=400), plan(pipe, data, tmp_path / "none"))
    (note,) = [line for line in out.getvalue().splitlines() if "interactive generator(s)" in line]
    assert "agent" in note and "shot" not in note and "one call per GT step" in note


def test_a_zero_pipeline_price_is_handed_to_litellm_as_the_placeholder() -> None:
    """A $0 price (local servers) passed as 0 would make litellm run its zero-cost diagnostics on every
    answer (as much CPU as the price lookup it spares): the placeholder is passed instead (the call is still
    charged the pipeline's $0, tests/test_client.py); a real price is passed as it is."""
    from agentjudge.fastpaths.litellm_pricing import PLACEHOLDER_PRICE, litellm_pricing
    from agentjudge.types import ModelSettings

    free = ModelSettings(model="openai/local", input_cost_per_token=0.0, output_cost_per_token=0.0)
    paid = ModelSettings(model="openai/paid", input_cost_per_token=2e-6, output_cost_per_token=8e-6)
    assert litellm_pricing(free, unpriced=False) == PLACEHOLDER_PRICE
    assert litellm_pricing(paid, unpriced=False) == {
        "input_cost_per_token": 2e-6,
        "output_cost_per_token": 8e-6,
    }
    assert litellm_pricing(ModelSettings(model="openai/gpt-4o"), unpriced=False) == {}  # litellm's own map
