"""``bench/bench_grid.py``'s verdict on its own steps: every retry round's exit code is shown and a failed
step (any round) makes the bench exit non-zero. The steps' processes are replaced by a script of exit
codes (the bench's figures are not what is tested here, only what it says about failures)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench(monkeypatch: pytest.MonkeyPatch, codes: list[int]) -> Any:
    spec = importlib.util.spec_from_file_location("bench_grid_under_test", ROOT / "bench" / "bench_grid.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    script = iter(codes)

    def measure(args: list[str], *_: Any) -> tuple[int, float, float, int, str]:
        code = next(script)
        return code, 1.0, 1.0, 1024, f"(output of {args[0]}, exit {code})"

    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(bench, "fail_units", lambda store, n: None)
    return bench


def _main(bench: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> int:
    data = tmp_path / "records.jsonl"
    data.write_text("{}\n")
    argv = ["bench_grid.py", "--data", str(data), "--work", str(tmp_path / "w"), *flags]
    monkeypatch.setattr(sys, "argv", argv)
    return int(bench.main())


def test_a_failed_middle_round_is_shown_and_fails_the_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the 1,800-unit run, then three retry rounds: the second one fails, the last one passes
    bench = _bench(monkeypatch, [0, 0, 1, 0])
    assert _main(bench, tmp_path, monkeypatch, "--skip-grid", "--repeat", "3") == 1
    out = capsys.readouterr().out
    assert "retry exit codes, each round: 0, 1, 0" in out
    assert "[retry 12 failed, round 2 of 3] exit 1" in out  # the failed round's output, not only the last
    assert "FAILED: retry 12 failed, round 2 of 3 exited 1" in out


def test_every_step_passing_exits_zero_and_a_failed_grid_step_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(_bench(monkeypatch, [0, 0, 0]), tmp_path, monkeypatch, "--skip-grid", "--repeat", "2") == 0
    assert "FAILED" not in capsys.readouterr().out
    # grid run fails; no-op re-run, report, 1,800-unit run and the one retry pass
    assert _main(_bench(monkeypatch, [1, 0, 0, 0, 0]), tmp_path, monkeypatch) == 1
    assert "FAILED: grid run exited 1" in capsys.readouterr().out
