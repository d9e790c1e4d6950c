"""A cost nobody knows is null in the files, not $0.

Why: for a model litellm has no price for (a self-hosted name: vLLM, Ollama, ``openai/my-model`` at a local
server) and no pipeline price, the client's ``Completion`` said ``cost_known=False`` and the end-of-run table
said "unknown", but ``Usage`` had no such flag, so predictions.parquet's ``cost_usd`` said 0.0 for those
rows: an invented figure. ``Usage.cost_known`` now carries it from the answer to the prediction (and the
judge result), and the file says null. A cache hit spent nothing: its $0 is known.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from fakeserver import FakeLLM
from test_runner import read, write_pipeline

from agentjudge import api
from agentjudge.judges.llm import LLMJudge
from agentjudge.models.cache import CallCache, cache_key
from agentjudge.models.client import Completion, ModelClient
from agentjudge.rundir.predictions import read_predictions, write_predictions
from agentjudge.runner.store import from_stored, stored_json
from agentjudge.types import JudgeRequest, JudgeResult, Prediction, Task, ToolCall, Usage

MSG = [{"role": "user", "content": "hello"}]
PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
VERDICT = json.dumps({m: {"verdict": 1.0, "justification": "ok"} for m in ("tool", "param", "seq", "cov")})


def test_usage_plus_is_cost_known_only_when_every_call_was_priced() -> None:
    priced = Usage(prompt_tokens=10, cost_usd=0.5)
    unpriced = Usage(prompt_tokens=20, cost_known=False)
    assert priced.plus(priced).cost_known is True
    for total in (
        priced.plus(unpriced),
        unpriced.plus(priced),
        Usage(cached=True).plus(priced).plus(unpriced),
    ):
        assert total.cost_known is False
        assert total.cost_usd == 0.5 and total.prompt_tokens == 30  # the priced part, the tokens of all
    # ``first`` (the empty start): ``more`` alone decides, as for ``cached``
    assert Usage().plus(unpriced, first=True).cost_known is False
    assert Usage().plus(priced, first=True).cost_known is True
    # an unknown call is not made known by what follows, first or not
    assert unpriced.plus(priced, first=True).cost_known is False
    assert priced.known_cost_usd == 0.5
    assert unpriced.known_cost_usd is None and priced.plus(unpriced).known_cost_usd is None


def test_stored_results_without_the_flag_read_as_known_and_the_flag_costs_nothing_when_true() -> None:
    known = JudgeResult(verdicts={"tool": 1.0}, parse_ok=True, usage=Usage(prompt_tokens=3, cost_usd=1e-6))
    assert "cost_known" not in json.loads(stored_json(known))["usage"]  # compact store: default left out
    unknown = known.model_copy(update={"usage": Usage(prompt_tokens=3, cost_known=False)})
    assert json.loads(stored_json(unknown))["usage"]["cost_known"] is False
    assert from_stored(JudgeResult, stored_json(unknown)).usage.cost_known is False
    # a result stored before the field existed: known, as it was read then
    old = '{"record_id":"r:easy","base_id":"r","difficulty":"easy","generator":"g","calls":[],'
    old += '"usage":{"prompt_tokens":3,"cost_usd":0.25}}'
    usage = from_stored(Prediction, old).usage
    assert (usage.cost_known, usage.cost_usd, usage.known_cost_usd) == (True, 0.25, 0.25)


def test_completion_keeps_its_flag_and_its_usages_in_step() -> None:
    # a cache entry written before ``Usage.cost_known``: the flag on the Completion only
    old = {"text": "hi", "usage": {"prompt_tokens": 5, "completion_tokens": 1}, "cost_known": False}
    read_back = Completion.model_validate(old)
    assert (read_back.cost_known, read_back.usage.cost_known) == (False, False)
    fresh = Completion(text="hi", usage=Usage(cost_known=False))
    assert (fresh.cost_known, fresh.usage.cost_known) == (False, False)
    assert Completion(text="hi").usage.cost_known is True


async def test_an_unpriced_answer_reaches_the_usage_and_a_cache_hit_is_a_known_zero(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.set_responder(lambda req: "ok")
    cache = CallCache(tmp_path / "calls.sqlite")
    client = ModelClient(cache, backoff_base_s=0.005)
    unpriced = fake_llm.settings(model="openai/unpriced-cost-known-test-model")
    out = await client.complete(unpriced, MSG)
    assert (out.cost_known, out.usage.cost_known, out.usage.cost_usd) == (False, False, 0.0)
    priced = fake_llm.settings(model="openai/priced-cost-known-test-model", **PRICE)
    out = await client.complete(priced, MSG)
    assert out.usage.cost_known and out.usage.cost_usd > 0

    key = cache_key(client.request_fields(unpriced, MSG, None, None, 0))
    entry = cache.get(key)
    assert entry is not None and entry["cost_known"] is False and entry["usage"]["cost_known"] is False
    del entry["usage"]["cost_known"]  # as an older version wrote it
    cache.put(key, unpriced.model, entry)
    assert Completion.model_validate(entry).usage.cost_known is False  # still unknown as an answer
    hit = await ModelClient(cache, backoff_base_s=0.005).complete(unpriced, MSG)
    # a hit spends nothing: $0, and that figure is known (the answer's own price still is not)
    assert hit.usage.cached and hit.usage.cost_usd == 0.0
    assert hit.usage.cost_known and hit.cost_known
    assert len(fake_llm.requests) == 2


async def test_a_judge_result_is_unknown_when_any_attempt_was_unpriced(fake_llm: FakeLLM) -> None:
    task = Task(record_id="r:easy", base_id="r", difficulty="easy", query="q", system_prompt="s", tools=[])
    request = JudgeRequest(task=task, calls=[ToolCall(name="a")], gt=None, condition="without_gt")
    fake_llm.set_responder(lambda req: VERDICT if len(req["messages"]) > 2 else "not a verdict")
    client = ModelClient(None, backoff_base_s=0.005)
    for model, price, known in (("openai/unpriced-judge", {}, False), ("openai/priced-judge", PRICE, True)):
        judge = LLMJudge(fake_llm.settings(model=model, max_retries=0, **price), client, reask=1)
        result = await judge(request)
        assert result.parse_ok and result.rationales["_reasks"] == "1"  # two answers summed
        assert result.usage.cost_known is known and (result.usage.cost_usd > 0) is known


def test_predictions_files_say_null_for_an_unknown_cost_and_read_it_back(tmp_path: Path) -> None:
    def pred(generator: str, usage: Usage) -> Prediction:
        return Prediction(
            record_id="r:easy", base_id="r", difficulty="easy", generator=generator, calls=[], usage=usage
        )

    preds = [pred("priced", Usage(cost_usd=0.25)), pred("unpriced", Usage(prompt_tokens=4, cost_known=False))]
    for name in ("p.parquet", "p.jsonl"):
        write_predictions(tmp_path / name, preds)
        back = read_predictions(tmp_path / name)
        assert [(p.usage.cost_usd, p.usage.cost_known) for p in back] == [(0.25, True), (0.0, False)]
    jsonl = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [row["cost_usd"] for row in jsonl] == [0.25, None]
    write_predictions(tmp_path / "all-null.parquet", preds[1:])  # a column of nulls only stays a double
    for name in ("p.parquet", "all-null.parquet"):
        assert str(pq.read_schema(tmp_path / name).field("cost_usd").type) == "double"


def test_predictions_parquet_cost_is_null_for_an_unpriced_model_and_zero_for_a_cache_hit(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Through the runner and the loopback server: an LLM generator litellm cannot price has null
    ``cost_usd`` rows, one with a pipeline price has its dollars; run again on the same cache, every row
    is a hit and costs a known 0.0."""

    def responder(req: dict[str, Any]) -> str:
        text = json.dumps(req["messages"])
        customer = next(c for c in ("C-100", "C-101", "C-102", "C-103") if c in text)
        return json.dumps([{"name": "get_customer", "arguments": {"customer_id": customer}}])

    fake_llm.set_responder(responder)
    common = {"native_tools": False, "max_retries": 0}
    unpriced = fake_llm.settings(name="selfhosted", model="openai/unpriced-export-test-model", **common)
    priced = fake_llm.settings(name="priced", model="openai/priced-export-test-model", **common, **PRICE)
    pipeline = write_pipeline(
        tmp_path,
        generators=[unpriced.model_dump(exclude_defaults=True), priced.model_dump(exclude_defaults=True)],
        judges=["baseline/always-1"],
        conditions=["with_gt"],
        difficulties=["easy"],
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    assert str(pq.read_schema(tmp_path / "run" / "predictions.parquet").field("cost_usd").type) == "double"
    preds = read(tmp_path / "run", "predictions").set_index("generator")
    assert len(preds) == 8 and not preds.cached.any() and (preds.prompt_tokens > 0).all()
    assert preds.loc["selfhosted", "cost_usd"].isna().all()
    assert (preds.loc["priced", "cost_usd"] > 0).all()
    # the per-model figures are as before: "unknown" stays the run's word for the unpriced model
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())["last_invocation"]["per_model"]
    rows = {r["model"]: r for r in meta}
    assert (rows["selfhosted"]["unknown_cost_calls"], rows["selfhosted"]["cost_usd"]) == (4, 0.0)
    assert rows["priced"]["cost_usd"] == pytest.approx(preds.loc["priced", "cost_usd"].sum())

    sent = len(fake_llm.requests)
    assert api.run(pipeline, tmp_path / "again").status == "complete"  # a new run folder, the same call cache
    assert len(fake_llm.requests) == sent
    again = read(tmp_path / "again", "predictions")
    assert again.cached.all() and (again.cost_usd == 0.0).all()
    pd.testing.assert_series_equal(
        again.calls_json, read(tmp_path / "run", "predictions").calls_json, check_names=True
    )


def test_an_unpriced_batch_generator_has_null_cost_rows(tmp_path: Path, fake_llm: FakeLLM) -> None:
    """The batch path prices an answer itself (the batch price, or none): a model with no batch price has
    null rows too. The model name is new to this process, so litellm's own answer (a 0.0 the batch
    answer carries, not a price) is what the batch path has to overrule."""
    fake_llm.set_responder(
        lambda req: json.dumps([{"name": "get_customer", "arguments": {"customer_id": "C"}}])
    )
    gen = fake_llm.settings(name="gen", model="openai/unpriced-batch-cost-known-model", native_tools=False)
    pipeline = write_pipeline(
        tmp_path,
        generators=[gen.model_dump(exclude_defaults=True) | {"batch": True}],
        judges=["baseline/always-1"],
        conditions=["with_gt"],
        difficulties=["easy"],
        batch_poll_s=0.01,
        batch_poll_max_s=0.05,
    )
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    assert fake_llm.batches_created == 1
    preds = read(tmp_path / "run", "predictions")
    assert len(preds) == 4 and (preds.prompt_tokens > 0).all() and preds.cost_usd.isna().all()


async def test_requests_that_may_have_been_billed_unseen_make_the_cost_unknown(fake_llm: FakeLLM) -> None:
    """A request that timed out may have been billed with no usage to count: the model counts it
    (``unseen_cost_requests``, a note in its summary), an answer that came after it has an unknown cost (the
    answer's own price stays known), and a call that failed with it carries ``unseen_cost`` into the failed
    prediction's and judge result's usage. A refused request (500) was not computed: its cost is known."""
    from agentjudge.generators.llm import LLMGenerator
    from agentjudge.models.client import ModelCallError

    client = ModelClient(None, backoff_base_s=0.005)
    settings = fake_llm.settings(model="openai/gpt-4o-mini", timeout_s=0.3, max_retries=1)
    fake_llm.hang_next(seconds=30)
    fake_llm.queue("after the stall")
    out = await client.complete(settings, MSG)
    assert out.text == "after the stall" and out.cost_known and out.usage.cost_usd > 0
    assert out.usage.cost_known is False and out.usage.known_cost_usd is None
    stats = client.stats.model(settings.display_name)
    assert stats.unseen_cost_requests == 1 and stats.unknown_cost_calls == 0
    assert "maybe billed" in client.stats.summary()["per_model"][settings.display_name]["cost_note"]

    once = fake_llm.settings(model="openai/gpt-4o-mini", timeout_s=0.3, max_retries=0)
    fake_llm.hang_next(seconds=30)
    with pytest.raises(ModelCallError) as timed_out:
        await client.complete(once, [{"role": "user", "content": "q2"}])
    assert timed_out.value.kind == "timeout" and timed_out.value.unseen_cost
    fake_llm.fail_next(500)
    with pytest.raises(ModelCallError) as refused:
        await client.complete(once, [{"role": "user", "content": "q3"}])
    assert refused.value.kind == "server_error" and not refused.value.unseen_cost
    fake_llm.queue("")  # an empty answer was computed, and may have been billed: its usage is not kept
    with pytest.raises(ModelCallError) as empty:
        await client.complete(once, [{"role": "user", "content": "q3b"}])
    assert empty.value.kind == "empty_response" and empty.value.unseen_cost

    fake_llm.hang_next(seconds=30)
    task = Task(record_id="r:easy", base_id="r", difficulty="easy", query="q4", system_prompt="s", tools=[])
    pred = await LLMGenerator(once, client)(task, 0)
    assert pred.error is not None and "timeout" in pred.error and pred.usage.cost_known is False
    fake_llm.hang_next(seconds=30)
    task = Task(record_id="r:easy", base_id="r", difficulty="easy", query="q5", system_prompt="s", tools=[])
    request = JudgeRequest(task=task, calls=[ToolCall(name="a")], gt=None, condition="without_gt")
    result = await LLMJudge(once, client)(request)
    assert result.error is not None and result.usage.cost_known is False


def test_the_end_of_run_table_says_a_lower_bound_for_requests_maybe_billed_unseen() -> None:
    from agentjudge.runner.summary import cost_text, unpriced_notes

    row = {"model": "m", "unknown_cost_calls": 0, "unseen_cost_requests": 2, "cost_usd": 0.5}
    assert cost_text(row["cost_usd"], row["unknown_cost_calls"] + row["unseen_cost_requests"]) == "≥ 0.5000"
    assert unpriced_notes([row]) == [
        "m: 2 request(s) timed out or came back unreadable or empty; the provider may have billed them, with "
        "no usage to count, so cost $ is a lower bound"
    ]
    assert unpriced_notes([row | {"unseen_cost_requests": 0}]) == []
