"""Call-cache keys are the ones the runner has always computed (issue 15: ``cache_key`` escapes a message's
shared leading text once, ``share_prefix``; a changed byte would make every cached answer miss and be paid
for again).

``EXPECTED`` was computed by the code before that change (commit 43297d2, whose ``cache_key`` was
``sha256(canonical_json({"v": 1, **request}))``) over the judge requests of the mini dataset in both prompt
families, with and without cache breakpoints, with a response format, tools and extra parameters; the
property test compares the key with that definition for arbitrary requests and shared prefixes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_prompt_bytes import _requests

from agentjudge.judges import prompts
from agentjudge.judges.llm import VERDICT_SCHEMA
from agentjudge.judges.prompts import build_messages, with_cache_breakpoint
from agentjudge.models import cache
from agentjudge.models.cache import cache_key, share_prefix
from agentjudge.models.client import ModelClient, schema_response_format
from agentjudge.types import ModelSettings

SETTINGS = [
    ModelSettings(model="openai/judge", api_base="http://127.0.0.1:8000/v1"),
    ModelSettings(
        model="anthropic/claude-x",
        temperature=0.3,
        max_tokens=512,
        extra={"top_p": 0.9, "stop": ["\n\n"], "metadata": {"é": "ü"}},
        drop_params=True,
        structured_output="json_schema",
    ),
]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
EXPECTED = {
    # sha256 of the keys below, one per line, as 43297d2 computed them (``_reference_key``); re-pinned for
    # issue 51's regenerated data/mini (the per-domain review and the readings after it): that definition
    # gives this on the new file (59389be9…, 30ab3c89… and d910229a… on the previous ones, 2ab60972…,
    # 823361f5…, 96a8ea77… and 632856b3… before them)
    "mini": "4025a09baed3946fc736d9b2fdf0ae2308877affc2f7f5b23d5d6a131563ede8",
    # one small request, spelled out
    "small": "16892b6b71247ff61d084a3c728864cdc976c045547cbe2385b56d7817cd30e8",
}


def _reference_key(request: dict[str, Any]) -> str:
    """The key as 43297d2 defined it."""
    text = json.dumps(
        {"v": 1, **request}, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _mini_keys() -> list[str]:
    keys = []
    for i, request in enumerate(_requests()):
        model = SETTINGS[i % 2]
        for family in ("agentjudge", "paper"):
            messages = build_messages(request, family)  # type: ignore[arg-type]
            shapes = [messages]
            if family == "agentjudge":
                shapes.append(with_cache_breakpoint(messages, request, "full"))
            for shape in shapes:
                fields = ModelClient.request_fields(
                    model,
                    shape,
                    TOOLS if i % 3 == 0 else None,
                    None if i % 2 else 0.7,
                    i % 4,
                    schema_response_format(model, "judge_verdicts", VERDICT_SCHEMA) if i % 5 == 0 else None,
                )
                keys.append(cache_key(fields))
    return keys


def _small() -> dict[str, Any]:
    return ModelClient.request_fields(
        SETTINGS[0], [{"role": "user", "content": 'say "hi" ü\n'}], None, None, 0, None
    )


def test_judge_request_keys_are_unchanged() -> None:
    prompts.reload_templates()
    keys = _mini_keys()
    assert hashlib.sha256("\n".join(keys).encode()).hexdigest() == EXPECTED["mini"]


def test_a_small_key_is_unchanged() -> None:
    assert cache_key(_small()) == EXPECTED["small"]


_TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('"\\\n\t\x00\x1f</>{}'), max_size=40)
_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    heads=st.lists(_TEXT, min_size=1, max_size=3),
    tails=st.lists(_TEXT, min_size=1, max_size=3),
    extra=st.dictionaries(st.sampled_from(["extra", "tools", "aaa", "zzz", "v", "n"]), _VALUE, max_size=4),
    odd=st.sampled_from(["", "list_content", "other_value", "non_list"]),
)
def test_key_is_the_canonical_json_digest_whatever_prefixes_are_shared(
    heads: list[str], tails: list[str], extra: dict[str, Any], odd: str
) -> None:
    cache._PREFIXES.clear()
    pad = "x" * cache._PREFIX_MIN_CHARS  # long enough to be shared
    for head in heads:
        share_prefix(pad + head)
    messages: list[Any] = [
        {"role": "system" if i == 0 else "user", "content": pad + head + tail}
        for i, (head, tail) in enumerate(zip(heads, tails, strict=False))
    ]
    if odd == "list_content":
        messages.append({"role": "user", "content": [{"type": "text", "text": pad + heads[0]}]})
    elif odd == "other_value":
        messages.append({"role": "tool", "content": pad + tails[0], "n": 3})
    request: dict[str, Any] = {"model": "m", "messages": messages, **extra}
    if odd == "non_list":
        request["messages"] = tuple(messages)
    assert cache_key(request) == _reference_key(request)
