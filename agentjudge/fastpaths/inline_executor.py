"""The runner's event loops run litellm's request building inline instead of on a thread.

Patches: the running loop's default executor (``loop.set_default_executor``), with one that recognises
litellm's ``run_in_executor`` call of its synchronous ``completion`` by the shape of what it submits.

Why: ``litellm.acompletion`` builds each request by running its synchronous ``completion`` through
``loop.run_in_executor(None, ...)``: every call hops to a thread of the loop's default executor and back. The
work done there is pure CPU (for an OpenAI-compatible provider it builds the request and returns the coroutine
that sends it), so the hop buys no concurrency: it only adds a thread hand-off and waits for the GIL (up to
the 5 ms switch interval, while the loop holds it parsing answers). Measured against the loopback server at
C=128: ~0.2-0.3 ms of CPU and ~10 % of the calls per second; at C=32 the slowest tenth of the calls waited
~450 ms instead of ~290 ms.

What runs inline: only that one call, recognised exactly (``functools.partial(Context.run,
functools.partial(litellm.main.completion, model=...))``), and only for providers whose request building
does no I/O of its own (``INLINE_PROVIDERS``: an OpenAI-compatible HTTP endpoint; a provider that may fetch
credentials synchronously, such as Bedrock or Vertex, keeps the thread). Everything else submitted to the
default executor (DNS look-ups, anything a later litellm submits) still runs on threads, so a litellm whose
internals change only loses the saving. The loop's ``run_in_executor`` still gets a future, so litellm sees
no difference: the same function runs, with the same copied context, and its exception is raised the same
way.

Falls back: a submission of any other shape goes to the executor's threads, as asyncio's own executor
would run it; with ``AGENTJUDGE_NO_FAST_PATHS=1`` the executor is not installed at all.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agentjudge import fastpaths

INLINE_PROVIDERS = frozenset({"openai", "hosted_vllm"})


def _is_request_building(fn: Callable[..., Any], completion: Any) -> bool:
    """Is ``fn`` litellm's ``partial(ctx.run, partial(completion, model=<inline provider>/...))``?"""
    if not isinstance(fn, functools.partial) or len(fn.args) != 1 or fn.keywords:
        return False
    if not isinstance(getattr(fn.func, "__self__", None), contextvars.Context):
        return False
    inner = fn.args[0]
    if not isinstance(inner, functools.partial) or inner.func is not completion:
        return False
    model_prefix = str(inner.keywords.get("model") or "").partition("/")[0]
    provider = inner.keywords.get("custom_llm_provider") or model_prefix  # litellm resolves it first
    return provider in INLINE_PROVIDERS and model_prefix in INLINE_PROVIDERS


class InlineRequestExecutor(ThreadPoolExecutor):
    """A default executor that runs litellm's request building inline (see the module docstring) and
    everything else on its threads, like the executor asyncio would have made."""

    def __init__(self, completion: Any) -> None:
        super().__init__(thread_name_prefix="asyncio")
        self._completion = completion
        self.inline_calls = 0  # how many submissions ran inline (tests)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if args or kwargs or not _is_request_building(fn, self._completion):
            return super().submit(fn, *args, **kwargs)
        self.inline_calls += 1
        future: Future[Any] = Future()
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller, as a thread would
            future.set_exception(exc)
        return future


def install(litellm: Any) -> InlineRequestExecutor:
    """Make the running loop's default executor an ``InlineRequestExecutor`` for litellm's synchronous
    ``completion`` (``litellm.main.completion``; the top-level ``litellm.completion`` is a dispatcher in
    front of it). Call at the start of a loop this program owns: the grid's, a worker's."""
    executor = InlineRequestExecutor(getattr(getattr(litellm, "main", None), "completion", None))
    asyncio.get_running_loop().set_default_executor(executor)
    return executor


def install_if_loaded() -> InlineRequestExecutor | None:
    """``install`` when litellm has been imported (a run with litellm models imports it before its loop
    starts, ``models/litellm_import.py``); None otherwise, and with the fast paths off: the loop keeps
    asyncio's own executor."""
    litellm = sys.modules.get("litellm")
    return install(litellm) if litellm is not None and fastpaths.enabled() else None
