"""What every hostile case checks, and the two ways it runs a verb.

``cli`` runs a verb in this process through typer's test runner (fast; stdout and stderr apart). ``child``
runs it as ``python -m agentjudge`` in a child process under an address-space limit (``RLIMIT_AS``, 1 GiB by
default) and reports the child's peak resident memory (``wait4``): every case that could grow without
bound (a grid of a billion units, a billion bootstrap resamples) runs there, never unbounded in the test
process. ``refused`` is the contract of bad input: the exit code, one line on stderr naming the file or the
key, nothing on stdout that looks like an error, no traceback anywhere.

``SmallDisk`` is a tmpfs mounted for one case (root only; a case skips, saying why, where mounting is not
allowed): ``fill(leave=N)`` leaves N bytes free, ``unfill()`` gives the space back, so a case can fail a
verb on a full disk and then resume it on the same path with room to spare.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
GIB = 1 << 30


@dataclass
class Outcome:
    """A verb's exit code, its stdout and stderr, and (in a child) its peak resident memory in bytes."""

    code: int
    out: str
    err: str
    peak: int | None = None
    seconds: float = 0.0
    exception: BaseException | None = None

    def lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def cli(*args: str | Path) -> Outcome:
    """``agentjudge ARGS`` in this process (typer's runner: stdout and stderr kept apart)."""
    from typer.testing import CliRunner

    from agentjudge.commands import app

    started = time.perf_counter()
    result = CliRunner().invoke(app, [str(a) for a in args])
    exception = None if isinstance(result.exception, SystemExit) else result.exception
    return Outcome(
        result.exit_code, result.stdout, result.stderr, None, time.perf_counter() - started, exception
    )


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child verb: this one, the tests folder importable (plug-in models), and glibc's
    malloc arenas capped (each thread's arena reserves 64 MB of address space that is never used, which
    an address-space limit would count)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    env["MALLOC_ARENA_MAX"] = "2"
    env.update(extra)
    return env


def _limits(address_space: int, ignore_sigint: bool, new_session: bool) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    if ignore_sigint:  # what a non-interactive shell does to a background job (`cmd &`)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if new_session:
        os.setsid()


def spawn(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    address_space: int = GIB,
    ignore_sigint: bool = False,
    new_session: bool = False,
) -> subprocess.Popen[str]:
    """``python -m agentjudge ARGS`` started under an address-space limit; stdout and stderr are pipes."""
    return subprocess.Popen(
        [sys.executable, "-m", "agentjudge", *(str(a) for a in args)],
        cwd=cwd,
        env=env or child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: _limits(address_space, ignore_sigint, new_session),
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120.0) -> Outcome:
    """Wait for a child of ``spawn`` (killed after ``timeout``)."""
    started = time.perf_counter()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running after {timeout} s; stderr: {err[-2000:]}") from None
    return Outcome(proc.returncode, out, err, None, time.perf_counter() - started)


def child(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    address_space: int = GIB,
    timeout: float = 120.0,
) -> Outcome:
    """``python -m agentjudge ARGS`` in a child under an address-space limit (1 GiB), waited for with
    ``wait4`` so its own peak resident memory is known."""
    started = time.perf_counter()
    proc = spawn(*args, cwd=cwd, env=env, address_space=address_space)
    assert proc.stdout is not None and proc.stderr is not None
    deadline = started + timeout
    out_parts: list[str] = []
    err_parts: list[str] = []
    import threading

    def drain(stream: object, into: list[str]) -> None:
        into.append(stream.read())  # type: ignore[attr-defined]

    readers = [
        threading.Thread(target=drain, args=(proc.stdout, out_parts)),
        threading.Thread(target=drain, args=(proc.stderr, err_parts)),
    ]
    for r in readers:
        r.start()
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            for r in readers:
                r.join()
            raise AssertionError(f"still running after {timeout} s; stderr: {''.join(err_parts)[-2000:]}")
        time.sleep(0.02)
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Outcome(
        proc.returncode, "".join(out_parts), "".join(err_parts), usage.ru_maxrss * 1024,
        time.perf_counter() - started,
    )  # fmt: skip


def refused(o: Outcome, *naming: str, code: int = 2, max_lines: int = 1) -> str:
    """The contract of bad input: exit ``code``; on stderr at most ``max_lines`` lines, one of which names
    everything in ``naming`` (a file, a line, a key); no error on stdout; no traceback; no exception escaped.
    Returns that line."""
    assert o.exception is None, f"an exception escaped: {o.exception!r}"
    assert "Traceback" not in o.err + o.out, o.err[-3000:]
    assert o.code == code, f"exit {o.code}, expected {code}; stderr: {o.err[-2000:]} stdout: {o.out[-1000:]}"
    lines = o.lines()
    assert lines, f"nothing on stderr (stdout: {o.out[-1000:]})"
    assert len(lines) <= max_lines, f"{len(lines)} lines on stderr: {o.err[-3000:]}"
    hits = [line for line in lines if all(n in line for n in naming)]
    assert hits, f"no stderr line names {naming}: {lines}"
    assert not any(line.lstrip().lower().startswith("error") for line in o.out.splitlines()), o.out[-2000:]
    return hits[0]


def no_traceback(o: Outcome) -> None:
    assert o.exception is None, f"an exception escaped: {o.exception!r}"
    assert "Traceback" not in o.err + o.out, o.err[-3000:]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path → bytes): the state a case compares before and after."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    """Temporary files or folders a writer left behind (dot-names with ``tmp`` in them)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*") if "tmp" in p.name)


class SmallDisk:
    """A tmpfs of ``size`` bytes at ``path`` (root only), unmounted at ``close``."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            pytest.skip("full-disk cases mount a small tmpfs, which needs root (not the case here)")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(
                f"full-disk cases need a small tmpfs; mounting one is not allowed here: {done.stderr}"
            )
        self.filler = path / "zz-filler"

    def free(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self, leave: int) -> None:
        """Leave about ``leave`` bytes free (tmpfs counts whole 4 KiB pages)."""
        self.unfill()
        size = max(0, self.free() - leave)
        with open(self.filler, "wb") as fh:
            chunk = b"\0" * (1 << 20)
            while size > 0:
                n = min(size, len(chunk))
                fh.write(chunk[:n])
                size -= n
        assert self.free() <= leave + 8192, self.free()

    def unfill(self) -> None:
        self.filler.unlink(missing_ok=True)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


@contextlib.contextmanager
def small_disk(path: Path, size: int = 64 << 20) -> Iterator[SmallDisk]:
    disk = SmallDisk(path, size)
    try:
        yield disk
    finally:
        disk.close()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """A read-only tmpfs at ``path`` (root can write through file modes: only a read-only mount stops it)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a read-only folder for root needs a read-only mount (not root here)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(path)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a read-only tmpfs is not allowed here: {done.stderr}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def bfcl_files(folder: Path, n: int) -> tuple[Path, Path]:
    """A BFCL 'multiple' task file and its accepted answers, ``n`` tasks (the inputs of the BFCL import
    cases, full disk and hostile files alike)."""
    tasks, answers = [], []
    for i in range(n):
        tasks.append(
            {
                "id": f"multiple_{i}",
                "question": [[{"role": "user", "content": f"What is the weather in city number {i}?"}]],
                "function": [
                    {
                        "name": "get_weather",
                        "description": "Weather of a city.",
                        "parameters": {
                            "type": "dict",
                            "properties": {"city": {"type": "string", "description": "The city."}},
                            "required": ["city"],
                        },
                    }
                ],
            }
        )
        answers.append(
            {"id": f"multiple_{i}", "ground_truth": [{"get_weather": {"city": [f"city number {i}"]}}]}
        )
    folder.mkdir(parents=True, exist_ok=True)
    t, a = folder / "BFCL_v4_multiple.json", folder / "answers.json"
    t.write_text("".join(json.dumps(x) + "\n" for x in tasks))
    a.write_text("".join(json.dumps(x) + "\n" for x in answers))
    return t, a
