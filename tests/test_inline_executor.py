"""The runner's loops build litellm's requests inline (models/inline_executor.py): the same answers, no
thread hop for OpenAI-compatible providers, threads for everything else."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from typing import Any

from fakeserver import TEST_KEY

from agentjudge.models import inline_executor
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
