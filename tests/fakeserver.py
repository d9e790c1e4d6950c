"""A real OpenAI-compatible HTTP server for tests: scripted answers, injected faults, recorded requests.

Tests talk to it through the real stack (``litellm.acompletion`` → httpx → TCP), so retries, timeouts,
malformed bodies and concurrency limits are exercised for real, without an API key or the internet.

Use the ``fake_llm`` fixture (tests/conftest.py); it serves on 127.0.0.1 at a free port::

    settings = fake_llm.settings()   # ModelSettings(model="openai/test-model", api_base=fake_llm.base_url,
                                     #   api_key_env="AGENTJUDGE_TEST_KEY", timeout_s=2, max_retries=2)
    settings = fake_llm.settings(max_retries=0, timeout_s=0.3, concurrency=2)   # any field overridden

    fake_llm.queue("plain text answer")                               # next answer: text
    fake_llm.queue(tool_calls=[{"name": "get_user", "arguments": {"id": 1}}])   # native tool calls
    fake_llm.queue(body='{"not json', status=200)                     # raw body (malformed JSON)
    fake_llm.set_responder(lambda req: '{"tool": 1.0}' if "X" in prompt_text(req) else "no")
    fake_llm.fail_next(status=429, times=2, retry_after=0)            # two 429s (Retry-After: 0)
    fake_llm.fail_next(status=500)                                    # one 500 (also 503, 400, 401 …)
    fake_llm.hang_next(seconds=5)                                     # stall longer than the client timeout
    fake_llm.malformed_next()                                         # 200 with a broken JSON body
    fake_llm.latency = 0.05                                           # delay every answer
    fake_llm.refuse_header("X-Gateway-Key", "revoked")   # a chat request sending it: HTTP 401 at once

    fake_llm.requests        # list of request JSON bodies, in arrival order
    fake_llm.headers         # matching request headers (lower-cased names)
    fake_llm.seen            # every request of any method and path, "GET /v1/models", in arrival order
    fake_llm.max_in_flight   # highest number of requests handled at the same time
    fake_llm.answered        # replies sent
    fake_llm.kill()          # crash: refuse connections, drop requests in flight unanswered

Batch API (OpenAI Files and Batches: ``POST /v1/files``, ``GET /v1/files/{id}/content``, ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``GET /v1/batches``): each line of a batch is answered like a direct request (same
scripts, recorded in ``requests``) when the batch completes, on its ``batch_polls``-th retrieve::

    fake_llm.batch_polls = 2          # retrieves a batch answers "in_progress" before it completes
    fake_llm.hold_batches = True      # batches stay "in_progress" (a run can be killed while they wait)
    fake_llm.script_batch("expire")   # the next batch answers its first half, then expires
    fake_llm.script_batch("fail_half", status=400)   # the next batch: every second request gets HTTP 400
    fake_llm.uploads, fake_llm.batches_created, fake_llm.retrieves   # counters
    fake_llm.batch_headers            # ("POST /v1/files", lower-cased headers) of every Files/Batches request

Order of precedence for each request: queued faults (``fail_next`` / ``hang_next`` / ``malformed_next``),
then queued answers (``queue``), then the responder. With none of them the server answers 400
"fakeserver: nothing scripted" — a test that forgot to script an answer fails loudly instead of passing on
a made-up default. A responder may return a ``str`` (text), a ``Reply`` or a ``dict`` of ``Reply`` fields.
Every answer carries ``usage`` (prompt/completion token counts = whitespace-separated words).
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
TEST_KEY_ENV = "AGENTJUDGE_TEST_KEY"  # conftest puts TEST_KEY in this variable for every test
TEST_KEY = "sk-test-SECRET-4f1e2d-never-leak"


@dataclass
class Reply:
    """One scripted answer. ``body`` (raw text) bypasses the OpenAI envelope entirely."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # [{"name":..., "arguments": dict|str, "id"?: str}]
    status: int = 200
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


Responder = Callable[[dict[str, Any]], "str | Reply | dict[str, Any]"]


def prompt_text(request: dict[str, Any]) -> str:
    """All message contents of a request joined, for responders that match on the prompt."""
    parts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def _words(text: str) -> int:
    return len(text.split())


class FakeLLM:
    """The scripted server. Thread-safe: handlers run on server threads, tests script from the main thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._faults: deque[Reply] = deque()
        self._answers: deque[Reply] = deque()
        self._responder: Responder | None = None
        self._stop = threading.Event()
        self.latency: float = 0.0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.batch_headers: list[tuple[str, dict[str, str]]] = []  # ("POST /v1/files", headers) per request
        self.paths: list[str] = []
        self.seen: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.answered = 0  # replies actually sent (a killed server drops the requests it was holding)
        self.dead = False
        self.dropped = 0  # chat requests whose connection was closed unanswered (``drop_next``)
        self._drops = 0  # how many more chat requests to drop; -1: every one
        self._refused: dict[str, str] = {}  # lower-cased header name -> value answered with 401
        # batch API state (see the module docstring)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._batch_scripts: deque[tuple[str, int]] = deque()
        self._batch_plan: dict[str, tuple[str, int]] = {}
        self._batch_seen: dict[str, int] = {}
        self.batch_polls = 1
        self.hold_batches = False
        self.uploads = 0
        self.batches_created = 0
        self.retrieves = 0
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._server.handle_error = self._handle_error  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )

    def _handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a killed run's keep-alive connection) is not an error of the server."""
        import sys
        import traceback

        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        traceback.print_exc()

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers that are hanging
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def kill(self) -> None:
        """Die like a crashed process: new connections are refused, and requests in flight or arriving on
        kept-alive connections get their connection closed without an answer."""
        self.dead = True
        self.stop()

    def settings(self, **overrides: Any) -> Any:
        """ModelSettings for this server: ``openai/test-model``, the test key env, small timeouts."""
        return self.settings_for(self.base_url, **overrides)

    @staticmethod
    def settings_for(base_url: str, **overrides: Any) -> Any:
        """The same ModelSettings for any base URL (e.g. a port where nothing listens)."""
        from agentjudge.types import ModelSettings

        values: dict[str, Any] = {
            "model": "openai/test-model",
            "api_base": base_url,
            "api_key_env": TEST_KEY_ENV,
            "timeout_s": 2.0,
            "max_retries": 2,
        }
        values.update(overrides)
        return ModelSettings(**values)

    def reset(self) -> None:
        """Forget scripts and recorded requests (the server keeps running)."""
        with self._lock:
            self._faults.clear()
            self._answers.clear()
            self._responder = None
            self.requests.clear()
            self.headers.clear()
            self.batch_headers.clear()
            self.paths.clear()
            self.seen.clear()
            self.max_in_flight = 0
            self.answered = 0
            self.latency = 0.0
            self._batch_scripts.clear()
            self.uploads = self.batches_created = self.retrieves = 0
            self.hold_batches = False
            self.batch_polls = 1
            self._refused.clear()
            self._drops = self.dropped = 0

    # ---- scripting -------------------------------------------------------------------------------
    def queue(
        self,
        text: str | None = None,
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        body: str | None = None,
        status: int = 200,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        finish_reason: str | None = None,
        usage: dict[str, Any] | None = None,
        times: int = 1,
    ) -> None:
        """Queue an answer (text and/or tool calls, or a raw body) for the next request(s)."""
        reply = Reply(text, tool_calls, status, body, dict(headers or {}), delay, finish_reason, usage)
        with self._lock:
            self._answers.extend(reply for _ in range(times))

    def refuse_header(self, name: str, value: str) -> None:
        """Chat requests whose header ``name`` has this value are answered HTTP 401 at once, before any
        script (a gateway refusing one user's key while it lets the others through)."""
        with self._lock:
            self._refused[name.lower()] = value

    def set_responder(self, fn: Responder | None) -> None:
        """Answer from a function of the request JSON whenever nothing is queued."""
        with self._lock:
            self._responder = fn

    def fail_next(
        self, status: int = 500, times: int = 1, *, retry_after: float | None = None, message: str = ""
    ) -> None:
        """The next ``times`` requests get an OpenAI-style error with this HTTP status."""
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        text = message or f"fakeserver injected HTTP {status}"
        body = json.dumps({"error": {"message": text, "type": "fake_error", "code": status}})
        with self._lock:
            self._faults.extend(Reply(status=status, body=body, headers=headers) for _ in range(times))

    def hang_next(self, seconds: float = 10.0, times: int = 1) -> None:
        """The next requests stall ``seconds`` before answering (use more than the client timeout)."""
        with self._lock:
            self._faults.extend(Reply(text="late answer", delay=seconds) for _ in range(times))

    def drop_next(self, times: int = 1) -> None:
        """The next ``times`` chat requests (-1: all of them) have their connection closed without any answer,
        as a proxy or TLS terminator that cannot reach the model would; ``GET /models`` still answers."""
        with self._lock:
            self._drops = times

    def malformed_next(self, times: int = 1) -> None:
        """The next requests get HTTP 200 with a body that is not valid JSON."""
        with self._lock:
            broken = '{"id": "chatcmpl-broken", "choices": ['
            self._faults.extend(Reply(body=broken, status=200) for _ in range(times))

    def script_batch(self, behaviour: str, status: int = 500) -> None:
        """The next created batch ``expire``s after answering its first half, or answers every second
        request with HTTP ``status`` (``fail_half``)."""
        assert behaviour in ("expire", "fail_half")
        with self._lock:
            self._batch_scripts.append((behaviour, status))

    # ---- batch API -------------------------------------------------------------------------------
    def _upload(self, content_type: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
        if "file" not in fields:
            return 400, {"error": {"message": "no file part"}}
        with self._lock:
            self.uploads += 1
            file_id = f"file-fake-{len(self.files)}"
            self.files[file_id] = fields["file"][1]
        purpose = fields.get("purpose", (None, b"batch"))[1].decode()
        filename, data = fields["file"][0] or "upload.jsonl", fields["file"][1]
        return 200, {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }

    def _create_batch(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id = request.get("input_file_id")
        if file_id not in self.files:
            return 404, {"error": {"message": f"no file {file_id}"}}
        lines = [ln for ln in self.files[file_id].decode().splitlines() if ln.strip()]
        with self._lock:
            self.batches_created += 1
            batch_id = f"batch_fake_{len(self.batches)}"
            self._batch_plan[batch_id] = self._batch_scripts.popleft() if self._batch_scripts else ("", 0)
            self._batch_seen[batch_id] = 0
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": request.get("endpoint", "/v1/chat/completions"),
                "errors": None,
                "input_file_id": file_id,
                "completion_window": request.get("completion_window", "24h"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": request.get("metadata"),
            }
            return 200, dict(self.batches[batch_id])

    def _retrieve_batch(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": f"no batch {batch_id}"}}
            self.retrieves += 1
            if batch["status"] in ("completed", "expired", "failed", "cancelled"):
                return 200, dict(batch)
            self._batch_seen[batch_id] += 1
            if self.hold_batches or self._batch_seen[batch_id] < self.batch_polls:
                batch["status"] = "in_progress"
                return 200, dict(batch)
        self._run_batch(batch)
        return 200, dict(batch)

    def _run_batch(self, batch: dict[str, Any]) -> None:
        """Answer the batch's lines through the same scripts as direct requests; write the result files."""
        behaviour, status = self._batch_plan[batch["id"]]
        lines = [
            json.loads(ln) for ln in self.files[batch["input_file_id"]].decode().splitlines() if ln.strip()
        ]
        if behaviour == "expire":
            lines = lines[: len(lines) // 2]
        out, err = [], []
        for i, line in enumerate(lines):
            request = line["body"]
            if behaviour == "fail_half" and i % 2 == 1:
                body: dict[str, Any] = {
                    "error": {"message": f"fakeserver batch HTTP {status}", "code": status}
                }
                err.append({"id": f"req_{i}", "custom_id": line["custom_id"], "response": {
                    "status_code": status, "request_id": f"r{i}", "body": body}, "error": None})  # fmt: skip
                continue
            with self._lock:
                self.requests.append(request)
                self.paths.append("batch:" + batch["id"])
            reply = self._next_reply(request)
            if reply.body is not None:
                try:
                    body = json.loads(reply.body)
                except json.JSONDecodeError:
                    body = {"error": {"message": reply.body}}
                code = reply.status
            else:
                body, code = self._envelope(request, reply), reply.status
            entry = {"id": f"req_{i}", "custom_id": line["custom_id"], "response": {
                "status_code": code, "request_id": f"r{i}", "body": body}, "error": None}  # fmt: skip
            (out if code == 200 else err).append(entry)
        with self._lock:
            for name, entries in (("output_file_id", out), ("error_file_id", err)):
                if entries:
                    file_id = f"file-fake-{len(self.files)}"
                    self.files[file_id] = "".join(json.dumps(e) + "\n" for e in entries).encode()
                    batch[name] = file_id
            batch["status"] = "expired" if behaviour == "expire" else "completed"
            batch["request_counts"] = {"total": batch["request_counts"]["total"], "completed": len(out),
                                       "failed": len(err)}  # fmt: skip

    def _batch_route(self, method: str, path: str, content_type: str, raw: bytes) -> tuple[int, Any] | None:
        """The Files and Batches endpoints; None for any other path."""
        parts = [p for p in path.split("?")[0].split("/") if p and p != "v1"]
        if method == "POST" and parts == ["files"]:
            return self._upload(content_type, raw)
        if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
            data = self.files.get(parts[1])
            return (404, {"error": {"message": "no such file"}}) if data is None else (200, data)
        if method == "POST" and parts == ["batches"]:
            return self._create_batch(json.loads(raw or b"{}"))
        if method == "GET" and len(parts) == 2 and parts[0] == "batches":
            return self._retrieve_batch(parts[1])
        if method == "GET" and parts == ["batches"]:
            with self._lock:
                return 200, {"object": "list", "data": list(self.batches.values()), "has_more": False}
        return None

    # ---- answering -------------------------------------------------------------------------------
    def _next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
            if self._answers:
                return self._answers.popleft()
            responder = self._responder
        if responder is None:
            body = json.dumps({"error": {"message": "fakeserver: nothing scripted", "type": "fake_error"}})
            return Reply(status=400, body=body)
        out = responder(request)
        if isinstance(out, Reply):
            return out
        if isinstance(out, dict):
            return Reply(**out)
        return Reply(text=str(out))

    def _envelope(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id", f"call_{i}"),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments", {})),
                    },
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        completion_words = _words(reply.text or "") + sum(
            _words(json.dumps(c)) for c in (reply.tool_calls or [])
        )
        usage = reply.usage or {
            "prompt_tokens": max(1, _words(prompt_text(request))),
            "completion_tokens": max(1, completion_words),
        }
        usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes: with Nagle's algorithm on, the body of every answer
            # after a connection's first waited for the client's delayed ACK (~40 ms), so a "200 ms" server
            # answered in ~244 ms and capped every client's rate below C/L (bench/bench_runner.py)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
                return

            def _send(self, status: int, body: str, headers: dict[str, str]) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up: fine
                    self.wfile.write(data)

            def _batch(self, method: str, raw: bytes = b"") -> bool:
                routed = fake._batch_route(method, self.path, self.headers.get("Content-Type") or "", raw)
                if routed is None:
                    return False
                with fake._lock:
                    fake.batch_headers.append(
                        (f"{method} {self.path}", {k.lower(): v for k, v in self.headers.items()})
                    )
                status, payload = routed
                if isinstance(payload, bytes):
                    data = payload
                    self.send_response(status)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(data)
                else:
                    self._send(status, json.dumps(payload), {})
                return True

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                with fake._lock:
                    fake.seen.append(f"GET {self.path}")
                if self._batch("GET"):
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "test-model"}]}), {})
                else:
                    self._send(404, json.dumps({"error": {"message": "not found"}}), {})

            def do_POST(self) -> None:  # noqa: N802
                with fake._lock:
                    fake.seen.append(f"POST {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if fake.dead:  # a kept-alive connection outlived kill(): drop it unanswered
                    self.close_connection = True
                    return
                if self._batch("POST", raw):
                    return
                if self.path.split("?")[0] not in CHAT_PATHS:
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}), {})
                    return
                with fake._lock:
                    drop = fake._drops != 0
                    fake._drops -= fake._drops > 0
                    fake.dropped += drop
                if drop:
                    self.close_connection = True  # closed with nothing written: no HTTP answer at all
                    return
                try:
                    request = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, json.dumps({"error": {"message": "request body is not JSON"}}), {})
                    return
                sent = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.requests.append(request)
                    fake.headers.append(sent)
                    fake.paths.append(self.path)
                    refused = any(sent.get(name) == value for name, value in fake._refused.items())
                if refused:
                    error = {"message": "fakeserver: this key is refused", "type": "invalid_request_error"}
                    self._send(401, json.dumps({"error": error}), {})
                    with fake._lock:
                        fake.answered += 1
                    return
                with fake._lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    reply = fake._next_reply(request)
                    wait = reply.delay + fake.latency
                    if (wait and fake._stop.wait(wait)) or fake.dead:
                        self.close_connection = True
                        return  # server shutting down or killed: no answer
                    if reply.body is not None:
                        self._send(reply.status, reply.body, reply.headers)
                    else:
                        self._send(reply.status, json.dumps(fake._envelope(request, reply)), reply.headers)
                    with fake._lock:
                        fake.answered += 1
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

        return Handler


def main(argv: list[str] | None = None) -> None:
    """``python tests/fakeserver.py --latency 0.2 --text '...'``: serve one fixed answer until stdin closes.

    For benchmarks (bench/bench_runner.py): the server runs in its own process so its CPU is not the
    client's. It prints its base URL on the first line of stdout; with ``--log FILE`` each request body is
    appended to FILE as one JSON line (for replaying the same calls through another client), and
    ``max_in_flight`` is printed on the last line when stdin closes.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--text", required=True, help="the answer's text")
    parser.add_argument("--log", default=None, help="append each request body to this JSONL file")
    args = parser.parse_args(argv)
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115 - open for the run
    log_lock = threading.Lock()

    def responder(request: dict[str, Any]) -> str:
        if log is not None:
            with log_lock:
                log.write(json.dumps(request) + "\n")
                log.flush()
        return str(args.text)

    fake = FakeLLM()
    fake.latency = args.latency
    fake.set_responder(responder)
    fake._server.socket.listen(1024)  # many clients connect at once (the default backlog is 5)
    fake.start()
    print(fake.base_url, flush=True)
    sys.stdin.read()  # until the parent closes the pipe
    print(f"max_in_flight {fake.max_in_flight}", flush=True)
    fake.stop()
    if log is not None:
        log.close()


if __name__ == "__main__":
    main()
