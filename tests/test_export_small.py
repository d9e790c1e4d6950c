"""judgments.parquet of a small table: the constant columns repeated in Python (``export.SMALL_TABLE_ROWS``)
give the same file as Arrow's ``take``, also when pyarrow runs without numpy
(``fastpaths/lean_export.py``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_resume_cache import _outputs, _pipeline

from agentjudge.commands.run import run_cli
from agentjudge.runner import export


def test_small_and_large_tables_write_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = _pipeline(tmp_path / "p")
    assert run_cli(pipeline, tmp_path / "python") == 0  # 6 records: far below SMALL_TABLE_ROWS
    rows = pq.read_metadata(tmp_path / "python" / "judgments.parquet").num_rows
    assert 0 < rows <= export.SMALL_TABLE_ROWS
    monkeypatch.setattr(export, "SMALL_TABLE_ROWS", 0)  # every table through `take`
    assert run_cli(pipeline, tmp_path / "take") == 0
    assert _outputs(tmp_path / "python") == _outputs(tmp_path / "take")  # all of OUTPUTS, byte for byte


def test_take_without_numpy_writes_the_same_files(tmp_path: Path) -> None:
    """The large-table path (``take``, its index built from Python ints) in a process whose pyarrow was
    imported without numpy, as ``agentjudge run`` exports (``lean_export``), writes what an in-process
    run with numpy and pandas writes."""
    import subprocess
    import sys

    from agentjudge.fastpaths import lean_export

    # numpy is refused when the installed pyarrow does not require it (pyarrow 26 does not)
    refused = "pandas" if lean_export.pyarrow_requires_numpy() else "numpy pandas"
    pipeline = _pipeline(tmp_path / "p")
    assert run_cli(pipeline, tmp_path / "inproc") == 0
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from agentjudge.fastpaths.lean_export import kept_out, lean_imports\n"
        "refused = sorted(kept_out())\n"
        "with lean_imports():\n"
        "    from agentjudge.runner import export\n"
        "    export.SMALL_TABLE_ROWS = 0\n"
        "    from agentjudge.commands.run import run_cli\n"
        "    code = run_cli(Path(sys.argv[1]), Path('take'), lean_export=True)\n"
        "print('RESULT', code, *refused, 'numpy' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(pipeline)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == f"RESULT 0 {refused} {refused == 'pandas'}"
    assert _outputs(tmp_path / "take") == _outputs(tmp_path / "inproc")
