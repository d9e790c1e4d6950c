"""The documentation's plug-in judge works as printed (issue 36: it once answered ``parse_ok=False`` on
every row, so a user who copied it saw nothing but parse failures).

The block is found by its marker comment (``<!-- example: plugin-judge ... -->``) in README.md or any
page under docs/, written verbatim to ``mypkg/judges.py`` in a fresh folder, and added to a small grid
with ``agentjudge run ... --add-judge mypkg.judges:make`` from that folder, as the text tells a user to.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
from test_runner import write_pipeline

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- example: plugin-judge"


def example_block(marker: str = MARKER) -> tuple[Path, str]:
    """(file, code) of the fenced block right after ``marker``; exactly one such block may exist."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(re.escape(marker) + r"[^\n]*-->\n```python\n(.*?)```\n", text, re.S):
            found.append((page, match.group(1)))
    assert len(found) == 1, f"expected one block after {marker!r}, found {[str(p) for p, _ in found]}"
    return found[0]


def _agentjudge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "agentjudge", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_plugin_example_runs_verbatim_and_grades_every_row(tmp_path: Path) -> None:
    page, code = example_block()
    assert code.startswith("# mypkg/judges.py\n"), f"{page}: the block must say which file it is"
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "judges.py").write_text(code, encoding="utf-8")
    pipeline = write_pipeline(tmp_path, judges=["baseline/rule"], conditions=["with_gt", "without_gt"])
    done = _agentjudge("run", str(pipeline), "--out", "run", "--add-judge", "mypkg.judges:make", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "parse" not in done.stdout.split("failures by model and reason")[-1] or "failures" not in done.stdout
    )
    judg = pd.read_parquet(tmp_path / "run" / "judgments.parquet")
    mine = judg[judg.judge == "mypkg.judges:make"]
    assert len(mine) > 0 and mine.parse_ok.all() and mine.judge_error.isna().all()
    assert set(mine.verdict.unique()) <= {0.0, 0.5, 1.0} and mine.verdict.notna().all()
    assert mine.verdict.nunique() > 1  # it grades, rather than saying one thing
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["judges"]["mypkg.judges:make"]["kind"] == "plugin"
    report = _agentjudge("report", "run", "--resamples", "200", cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    ranking = pd.read_csv(tmp_path / "run" / "report" / "tables" / "first_ranking.csv")
    assert ranking.set_index("judge").loc["mypkg.judges:make", "kind"] == "plugin"  # as in the run table
