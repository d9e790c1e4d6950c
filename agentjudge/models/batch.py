"""The provider side of batch mode: request lines, batch files, and litellm's Files and Batches calls.

Why a separate path at all: OpenAI and Azure OpenAI answer a file of chat requests within 24 hours at
half the price, so a grid of 10^5 judge calls costs half and never meets a rate limit. The request lines
carry exactly the parameters a direct call would send (``ModelClient._kwargs``), the ``custom_id`` of each
line is the call's cache key, and an answer is turned into a ``Completion`` by the same code as a direct
answer; only its price is the batch price. The runner's bookkeeping (what was submitted, polled,
answered) is ``runner.batches``; this module holds no state.

litellm's ``acreate_file`` / ``acreate_batch`` / ``aretrieve_batch`` / ``afile_content`` take ``api_base``
and ``api_key`` like ``acompletion`` does, so a self-hosted OpenAI-compatible server (and the tests'
loopback server) can play the provider.
"""

from __future__ import annotations

import contextvars
import json
import os
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from agentjudge.models.credentials import required_env_headers
from agentjudge.models.prices import litellm_provider
from agentjudge.types import ModelSettings, Strict

# provider -> (requests per batch file, bytes per batch file), the providers' documented limits
PROVIDER_LIMITS: dict[str, tuple[int, int]] = {
    "openai": (50_000, 200 * 1024 * 1024),
    "azure": (100_000, 200 * 1024 * 1024),
    "hosted_vllm": (50_000, 200 * 1024 * 1024),
    "litellm_proxy": (50_000, 200 * 1024 * 1024),
}
FINAL_STATES = frozenset({"completed", "failed", "expired", "cancelled"})
CHAT_ENDPOINT = "/v1/chat/completions"
# the unit a model call is made for (set by the runner around each unit): stored with each request
CURRENT_UNIT: contextvars.ContextVar[str] = contextvars.ContextVar("agentjudge_batch_unit", default="")


def current_unit() -> str:
    """The id of the unit whose call is being made ("" outside the runner)."""
    return CURRENT_UNIT.get()


# kwargs of ModelClient._kwargs that are transport, not request body
_NOT_BODY = (
    "timeout", "num_retries", "max_retries", "api_base", "api_key", "drop_params", "api_version",
    "extra_headers",  # HTTP headers of the Files/Batches requests (BatchAPI), never a line's body
)  # fmt: skip


def batch_provider(model: str) -> str | None:
    """The litellm provider of ``model`` if it has a batch API litellm drives, else None."""
    provider = litellm_provider(model)
    return provider if provider in PROVIDER_LIMITS else None


def request_line(custom_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """One line of a batch input file: the body a direct call would send, addressed by ``custom_id``."""
    from agentjudge.models.litellm_import import litellm_module as _litellm

    body = {k: v for k, v in kwargs.items() if k not in _NOT_BODY}
    try:
        body["model"] = _litellm().get_llm_provider(kwargs["model"])[0]  # the provider's own name
    except Exception:  # noqa: BLE001
        body["model"] = str(kwargs["model"]).partition("/")[2] or kwargs["model"]
    return {"custom_id": custom_id, "method": "POST", "url": CHAT_ENDPOINT, "body": body}


def sendable_line(text: str) -> str:
    """A stored request line as it may be sent: without ``_NOT_BODY``'s keys in its ``body``, every other
    field (``custom_id`` first) unchanged. ``request_line`` never puts them there, but a line queued by an
    older version could carry ``extra_headers`` (HTTP headers, possibly a credential) in its body, and a
    resumed run sends stored lines as they are. A clean line is returned as it is, byte for byte; an
    unreadable one too (it is sent as before and the provider reports it)."""
    if not any(f'"{key}"' in text for key in _NOT_BODY):  # no such key at all: not worth parsing the line
        return text
    try:
        line = json.loads(text)
    except ValueError:
        return text
    body = line.get("body") if isinstance(line, dict) else None
    if not isinstance(body, dict) or not any(key in body for key in _NOT_BODY):
        return text
    line["body"] = {k: v for k, v in body.items() if k not in _NOT_BODY}
    return json.dumps(line, sort_keys=True)  # as ``BatchBroker.defer`` stores a line


def split_lines(lines: list[bytes], max_requests: int, max_bytes: int) -> list[list[int]]:
    """Indices of ``lines`` grouped into files of at most ``max_requests`` lines and ``max_bytes`` bytes
    (newlines included). A single line larger than ``max_bytes`` raises ValueError (no file can hold it)."""
    files: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, line in enumerate(lines):
        n = len(line) + 1
        if n > max_bytes:
            raise ValueError(f"one batch request is {n} bytes, over the {max_bytes}-byte file limit")
        if current and (len(current) >= max_requests or size + n > max_bytes):
            files.append(current)
            current, size = [], 0
        current.append(i)
        size += n
    if current:
        files.append(current)
    return files


class RequestCounts(Strict):
    total: int = 0
    completed: int = 0
    failed: int = 0


class BatchInfo(Strict):
    """The fields of a provider's batch object the runner uses (the rest is ignored)."""

    id: str
    status: str
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    created_at: int | None = None
    request_counts: RequestCounts = Field(default_factory=RequestCounts)
    errors: str | None = None  # the provider's reasons for a failed batch, joined

    @classmethod
    def of(cls, obj: Any) -> BatchInfo:
        data = obj.model_dump() if hasattr(obj, "model_dump") else dict(obj)
        counts = data.get("request_counts") or {}
        errors = data.get("errors") or {}
        reasons = [str(e.get("message") or e) for e in (errors.get("data") or [])] if errors else []
        return cls(
            id=str(data["id"]),
            status=str(data.get("status") or "unknown"),
            input_file_id=data.get("input_file_id"),
            output_file_id=data.get("output_file_id"),
            error_file_id=data.get("error_file_id"),
            created_at=data.get("created_at"),
            request_counts=RequestCounts(
                total=int(counts.get("total") or 0),
                completed=int(counts.get("completed") or 0),
                failed=int(counts.get("failed") or 0),
            ),
            errors="; ".join(reasons) or None,
        )


@dataclass(frozen=True)
class ResultLine:
    """One line of an output or error file: the answer body (status 200) or the failure."""

    custom_id: str
    status: int | None
    body: dict[str, Any] | None
    error: str | None


def parse_result_line(line: str) -> ResultLine | None:
    """A line of an output/error file, or None for a line without a ``custom_id`` (nothing to attach)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not data.get("custom_id"):
        return None
    response = data.get("response") or {}
    status = response.get("status_code")
    body = response.get("body")
    error = data.get("error")
    message = None
    if error:
        message = str(error.get("message") or error) if isinstance(error, dict) else str(error)
    elif status != 200 or not isinstance(body, dict):
        inner = (body or {}).get("error") if isinstance(body, dict) else None
        message = str((inner or {}).get("message") or inner or body or "no response body")
    return ResultLine(str(data["custom_id"]), status, body if isinstance(body, dict) else None, message)


class BatchAPI:
    """litellm's Files and Batches calls for one model's provider, endpoint and key."""

    def __init__(self, settings: ModelSettings) -> None:
        provider = batch_provider(settings.model)
        if provider is None:
            raise ValueError(f"{settings.model}: no batch API litellm drives (batch: true needs one of "
                             f"{sorted(PROVIDER_LIMITS)})")  # fmt: skip
        self.provider = provider
        self.settings = settings
        self.limits = PROVIDER_LIMITS[provider]

    def _auth(self) -> dict[str, Any]:
        out: dict[str, Any] = {"custom_llm_provider": self.provider, "timeout": self.settings.timeout_s}
        if self.settings.api_base:
            out["api_base"] = self.settings.api_base
        key_env = self.settings.api_key_env
        if key_env:
            out["api_key"] = os.environ.get(key_env) or ""
        for name in ("api_version",):  # Azure needs its API version on every call
            if name in self.settings.extra:
                out[name] = self.settings.extra[name]
        # ``extra``'s headers and the ``headers_env`` ones go out with every Files and Batches request (a
        # gateway or proxy in front of the provider checks them there, not inside the batch's lines)
        # (an unset variable raises MissingCredentialError, an ``auth`` failure: client.classify)
        headers = {**(self.settings.extra.get("extra_headers") or {}), **required_env_headers(self.settings)}
        if headers:
            out["extra_headers"] = headers
        return out

    async def upload(self, data: bytes, filename: str) -> str:
        from agentjudge.models.litellm_import import litellm_module as _litellm

        obj = await _litellm().acreate_file(file=(filename, data), purpose="batch", **self._auth())
        return str(obj.id)

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        from agentjudge.models.litellm_import import litellm_module as _litellm

        obj = await _litellm().acreate_batch(
            completion_window="24h",
            endpoint=CHAT_ENDPOINT,
            input_file_id=input_file_id,
            metadata=metadata,
            **self._auth(),
        )
        return BatchInfo.of(obj)

    async def retrieve(self, batch_id: str) -> BatchInfo:
        from agentjudge.models.litellm_import import litellm_module as _litellm

        # litellm's success logging would download a completed batch's whole output file a second time to
        # price it (without the request's extra_headers, so a gateway that needs them refuses it); the
        # runner prices every answer line itself, so that accounting is switched off (litellm's own flag
        # for a caller that owns batch accounting)
        ours = {"batch_ignore_default_logging": True}
        obj = await _litellm().aretrieve_batch(batch_id=batch_id, litellm_metadata=ours, **self._auth())
        return BatchInfo.of(obj)

    async def recent(self, limit: int = 100) -> list[BatchInfo]:
        """The provider's most recent batches (to find one created just before a crash)."""
        from agentjudge.models.litellm_import import litellm_module as _litellm

        page = await _litellm().alist_batches(limit=limit, **self._auth())
        data = getattr(page, "data", None)
        if data is None and isinstance(page, dict):
            data = page.get("data")
        return [BatchInfo.of(item) for item in data or []]

    async def content(self, file_id: str) -> str:
        from agentjudge.models.litellm_import import litellm_module as _litellm

        response = await _litellm().afile_content(file_id=file_id, **self._auth())
        raw = getattr(response, "content", response)
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
