"""The runner's loops build litellm's requests inline (fastpaths/inline_executor.py): the same answers, no
thread hop for OpenAI-compatible providers, threads for everything else; and the runner installs it, in
the main process's grid loop and in every worker process's loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from fakeserver import TEST_KEY
from test_runner import _verdict_json, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.fastpaths import inline_executor
from agentjudge.models.litellm_import import litellm_module


def test_litellm_request_building_runs_in_the_loop_thread_and_answers_the_same(fake_llm: Any) -> None:
    litellm = litellm_module()
    fake_llm.set_responder(lambda request: "answer to " + request["messages"][-1]["content"])

    def on_a_thread() -> int:
        return threading.get_ident()

    async def scenario() -> tuple[list[str], int, int, int]:
        executor = inline_executor.install(litellm)
        loop_thread = threading.get_ident()
        answers = await asyncio.gather(
            *(
                litellm.acompletion(
                    model="openai/fake",
                    messages=[{"role": "user", "content": f"q{n}"}],
                    api_base=fake_llm.base_url,
                    api_key=TEST_KEY,
                    max_retries=0,
                )
                for n in range(3)
            )
        )
        other = await asyncio.get_running_loop().run_in_executor(None, on_a_thread)
        return [a.choices[0].message.content for a in answers], executor.inline_calls, loop_thread, other

    texts, inline_calls, loop_thread, other = asyncio.run(scenario())
    assert texts == ["answer to q0", "answer to q1", "answer to q2"]
    assert inline_calls == 3  # each call's request building ran inline
    assert other != loop_thread  # anything else submitted to the default executor still gets a thread


def test_only_litellm_request_building_for_an_inline_provider_is_recognised() -> None:
    def completion(**kwargs: Any) -> None:
        return None

    def other(**kwargs: Any) -> None:
        return None

    def call(fn: Any, **kwargs: Any) -> Any:
        return functools.partial(contextvars.copy_context().run, functools.partial(fn, **kwargs))

    recognised = inline_executor._is_request_building
    assert recognised(call(completion, model="openai/gpt-4o"), completion)
    assert recognised(call(completion, model="hosted_vllm/x", custom_llm_provider="hosted_vllm"), completion)
    # providers whose request building may fetch credentials over the network keep the thread
    assert not recognised(call(completion, model="bedrock/claude"), completion)
    assert not recognised(call(completion, model="vertex_ai/gemini"), completion)
    assert not recognised(call(completion, model="openai/x", custom_llm_provider="azure"), completion)
    assert not recognised(call(other, model="openai/gpt-4o"), completion)  # another function
    assert not recognised(functools.partial(completion, model="openai/gpt-4o"), completion)  # no context
    assert not recognised(call(completion, model="openai/gpt-4o"), None)  # litellm.main not found


BUILT_ON = "x-request-built-on"


def _report_where_requests_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrap litellm's synchronous ``completion`` (what ``acompletion`` hands to the loop's default executor)
    so that each request tells the server where it was built: in the thread running the event loop
    (inline) or on an executor thread, and in which process. Installed before the run, so the worker
    processes forked by it inherit the wrapper, and the inline executor recognises it as litellm's."""
    main = litellm_module().main
    real = main.completion

    def completion(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            where = "loop"
        except RuntimeError:  # no loop runs in this thread: an executor's thread
            where = "thread"
        kwargs["extra_headers"] = {**(kwargs.get("extra_headers") or {}), BUILT_ON: f"{where} {os.getpid()}"}
        return real(*args, **kwargs)

    monkeypatch.setattr(main, "completion", completion)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_runner_builds_requests_inline_in_its_loop_and_in_each_workers_loop(
    tmp_path: Path, fake_llm: Any, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """``workers: 1``: every judge call's request is built in the main process's grid loop; ``workers: 2``:
    in the worker processes' loops. Fails if either place stops installing the inline executor (the
    request is then built on a thread of asyncio's own default executor)."""
    _report_where_requests_are_built(monkeypatch)
    fake_llm.set_responder(lambda request: _verdict_json(1.0))
    judge = dict(fake_llm.settings(name="j", max_retries=0).model_dump(exclude_defaults=True))
    pipeline = write_pipeline(
        tmp_path, generators=["sim/perfect"], judges=[judge], conditions=["with_gt"], workers=workers
    )
    assert run_cli(pipeline, tmp_path / "run") == 0
    built = [headers[BUILT_ON].split() for headers in fake_llm.headers]
    assert len(built) == 8  # 4 records x 2 difficulties, one judge call each
    assert {where for where, _ in built} == {"loop"}
    pids = {int(pid) for _, pid in built}
    if workers == 1:
        assert pids == {os.getpid()}
    else:
        assert os.getpid() not in pids  # every call went out from a worker process
