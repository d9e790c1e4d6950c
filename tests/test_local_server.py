"""``python -m agentjudge.models.local_server`` ends, non-zero and saying why, when its llama.cpp server
dies: a server that crashed must not leave a process that looks like it serves ("serving smollm2 at …" as
its last line, nothing listening). The child here is a stand-in that answers ``GET /v1/models`` and then
dies as llama.cpp did (SIGSEGV); no [local] extra is needed."""

from __future__ import annotations

import signal
import sys
import textwrap
from pathlib import Path

import pytest

from agentjudge.models import local_server

DIES = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Models(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"object": "list", "data": [{"id": "smollm2"}]}'
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(float(sys.argv[2]))
    os.kill(os.getpid(), getattr(signal, sys.argv[3]))
    """
)


def _child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after_s: float, how: str = "SIGSEGV") -> None:
    script = tmp_path / "llama_stand_in.py"
    script.write_text(DIES)
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda model_path, port, n_ctx: [sys.executable, str(script), str(port), str(after_s), how],
    )


def test_the_server_command_exits_non_zero_when_its_llama_cpp_child_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _child(tmp_path, monkeypatch, after_s=1.0)
    code = local_server.main(["--port", str(local_server.free_port())])
    out = capsys.readouterr()
    assert code == 1
    assert "serving smollm2 at http://127.0.0.1:" in out.out
    assert "the llama.cpp server was killed by SIGSEGV" in out.err and "is not served any more" in out.err
    assert "-DGGML_NATIVE=OFF" in out.err  # how to rebuild it portable
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # called in-process: its handler is gone


def test_a_child_that_dies_before_it_answers_is_an_error_with_the_rebuild_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "crash.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    monkeypatch.setattr(local_server, "server_command", lambda m, p, n: [sys.executable, str(script)])
    assert local_server.main(["--port", str(local_server.free_port())]) == 2
    err = capsys.readouterr().err
    assert "was killed by SIGILL before it answered" in err and "-DGGML_NATIVE=OFF" in err
