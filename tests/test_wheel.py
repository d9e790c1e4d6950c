"""The built wheel works on its own: installed in a fresh virtual environment outside the repository, the
quick start runs by its shipped name from an empty folder and writes the same files and report tables as the
editable install; the wheel installs no top-level ``analysis`` package and carries the prompts, pipelines
and the mini split inside ``agentjudge/``.

Slow (a fresh environment installs every dependency: ~1 min from pip's cache, then two quick starts with
their reports), so it is marked ``slow``; ``.ci/run`` runs it as its own step before the suite.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ("predictions.parquet", "scores.parquet", "judgments.parquet")


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"{argv}: rc {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _digests(out: Path) -> dict[str, str]:
    tables = sorted(p.relative_to(out).as_posix() for p in (out / "report" / "tables").glob("*.csv"))
    assert len(tables) > 20, tables
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in [*FILES, *tables]}


@pytest.mark.slow
def test_the_wheel_runs_the_quick_start_by_name_from_an_empty_folder(tmp_path: Path) -> None:
    # the wheel, built from the repository as a user would (pip's isolated build)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)], tmp_path)
    (wheel,) = dist.glob("agentjudge-*.whl")

    # a fresh environment outside the repository; the wheel and its dependencies from the package index
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], tmp_path, clean)

    listing = _run([str(python), "-m", "pip", "show", "-f", "agentjudge"], tmp_path, clean)
    files = [line.strip() for line in listing.splitlines()[listing.splitlines().index("Files:") + 1 :]]
    assert not [f for f in files if f.startswith("analysis/")], "the wheel installs a top-level analysis"
    for shipped in (
        "agentjudge/analysis/headline.py",
        "agentjudge/prompts/system.md",
        "agentjudge/prompts/paper/with_gt.md",
        "agentjudge/pipelines/quickstart.yaml",
        "agentjudge/data/mini/records.jsonl",
        "agentjudge/data/published/agentjudgebench_main_grid.csv",
        "agentjudge/viewer/static/index.html",
    ):
        assert shipped in files, shipped

    # the quick start by name, from an empty folder, with the installed console script
    empty = tmp_path / "empty"
    empty.mkdir()
    where = _run([str(python), "-c", "import agentjudge; print(agentjudge.__file__)"], empty, clean)
    assert str(env_dir) in where and str(ROOT) not in where
    script = str(env_dir / "bin" / "agentjudge")
    _run([script, "run", "quickstart", "--out", "runs/qs"], empty, clean)
    _run([script, "report", "runs/qs"], empty, clean)

    # the same quick start through the editable install the suite runs on
    editable = tmp_path / "editable"
    _run([sys.executable, "-m", "agentjudge", "run", "quickstart", "--out", str(editable)], tmp_path)
    _run([sys.executable, "-m", "agentjudge", "report", str(editable)], tmp_path)

    assert _digests(empty / "runs" / "qs") == _digests(editable)
