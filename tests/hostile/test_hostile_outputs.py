"""Nothing lost, nothing half-written: every output written whole or not at all, a full disk leaving the
previous files as they were and a resume completing byte-identical, a damaged output rebuilt by a re-run,
``--force-new`` taking every file of the old run away (issue items 1, 2, 3, 5, 6, 15).

The full-disk cases run on a small tmpfs (``harness.SmallDisk``; skipped where mounting is not allowed):
each fills it, runs the verb, checks the exit code, the one line naming the path, the previous files and
that no temporary file is left, then frees the space and runs the verb again to completion.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import mini_records, tau_file, write_pipeline
from harness import bfcl_files, cli, leftovers, refused, small_disk, tree

KIB = 1024


def _subset(preds: Path, out: Path, records: int) -> Path:
    """The predictions of the first ``records`` records (each has 3 difficulties)."""
    lines = preds.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[: 3 * records]), encoding="utf-8")
    return out


# ------------------------------------------------------------------------ item 1: outputs written whole
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_score_out_on_a_full_disk_keeps_the_previous_file_and_resumes(
    tmp_path: Path, mini_predictions: tuple[Path, Path], suffix: str
) -> None:
    data, preds = mini_predictions
    few = _subset(preds, tmp_path / "few.jsonl", 4)
    reference = tmp_path / f"reference{suffix}"
    assert cli("score", data, preds, "--out", reference).code == 0
    with small_disk(tmp_path / "disk", 1 << 20) as disk:
        out = disk.path / f"scores{suffix}"
        assert cli("score", data, few, "--out", out).code == 0
        previous = out.read_bytes()
        disk.fill(leave=0)  # the new file is pages larger than the old one: it does not fit in their place
        refused(cli("score", data, preds, "--out", out), str(out))
        assert out.read_bytes() == previous
        assert leftovers(disk.path) == []
        disk.unfill()
        assert cli("score", data, preds, "--out", out).code == 0
        assert out.read_bytes() == reference.read_bytes()


def test_score_value_matches_on_a_full_disk_keeps_the_previous_file(
    tmp_path: Path, mini_predictions: tuple[Path, Path]
) -> None:
    data, preds = mini_predictions
    few = _subset(preds, tmp_path / "few.jsonl", 2)
    with small_disk(tmp_path / "disk", 1 << 20) as disk:
        out, matches = disk.path / "s.csv", disk.path / "m.jsonl"
        assert cli("score", data, few, "--out", out, "--value-matches", matches).code == 0
        before = tree(disk.path)
        disk.fill(leave=4 * KIB)
        o = cli("score", data, preds, "--out", out, "--value-matches", matches)
        refused(o, str(disk.path))
        assert tree(disk.path) == {**before, "zz-filler": (disk.path / "zz-filler").read_bytes()}
        assert leftovers(disk.path) == []


def test_human_sample_out_on_a_full_disk_keeps_the_previous_file_and_resumes(
    tmp_path: Path, finished_run: Path
) -> None:
    reference = tmp_path / "reference.csv"
    assert cli("human-sample", finished_run, "--n", "8", "--out", reference).code == 0
    with small_disk(tmp_path / "disk", 1 << 20) as disk:
        out = disk.path / "sample.csv"
        assert cli("human-sample", finished_run, "--n", "1", "--out", out).code == 0
        previous = out.read_bytes()
        disk.fill(leave=0)
        refused(cli("human-sample", finished_run, "--n", "8", "--out", out), str(out))
        assert out.read_bytes() == previous
        assert leftovers(disk.path) == []
        disk.unfill()
        assert cli("human-sample", finished_run, "--n", "8", "--out", out).code == 0
        assert out.read_bytes() == reference.read_bytes()


def test_generate_on_a_full_disk_says_so_keeps_the_previous_files_and_resumes(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    assert cli("generate", "--out", reference).code == 0
    with small_disk(tmp_path / "disk", 4 << 20) as disk:
        out = disk.path / "data"
        out.mkdir()
        (out / "records.jsonl").write_text("earlier records\n")
        (out / "manifest.json").write_text("{}\n")
        before = tree(out)
        disk.fill(leave=64 * KIB)  # records.jsonl is ~300 KB
        line = refused(cli("generate", "--out", out), str(out / "records.jsonl"))
        assert "internal error" not in line and "units" not in line  # a verb without units (item 15)
        assert tree(out) == before
        assert leftovers(out) == []
        disk.unfill()
        assert cli("generate", "--out", out).code == 0
        assert tree(out) == tree(reference)


def test_taubench_out_on_a_full_disk_keeps_the_previous_files_and_resumes(tmp_path: Path) -> None:
    from conftest import tau_episode

    small = tau_file(tmp_path / "small.json", [tau_episode(0, 0, 1.0), tau_episode(1, 0, 0.0)])
    big = tau_file(
        tmp_path / "big.json", [tau_episode(t, k, float(t % 2)) for t in range(30) for k in range(2)]
    )
    reference = tmp_path / "reference"
    assert cli("taubench", big, "--out", reference).code == 0
    with small_disk(tmp_path / "disk", 4 << 20) as disk:
        out = disk.path / "tau"
        assert cli("taubench", small, "--out", out).code == 0
        before = tree(out)
        disk.fill(leave=0)
        refused(cli("taubench", small, "--out", out), str(out))  # its run is whole: only the files fail
        assert tree(out) == before
        fresh = disk.path / "tau-big"  # a new folder: its run is made beside it and renamed into place
        refused(cli("taubench", big, "--out", fresh), str(fresh))
        assert leftovers(disk.path) == []
        disk.unfill()
        assert cli("taubench", big, "--out", fresh).code == 0
        for name in ("episodes.parquet", "judgments.parquet", "summary.json"):
            assert (fresh / name).read_bytes() == (reference / name).read_bytes(), name


def test_import_bfcl_on_a_full_disk_keeps_the_previous_files(tmp_path: Path) -> None:
    tasks, answers = bfcl_files(tmp_path, 40)
    with small_disk(tmp_path / "disk", 1 << 20) as disk:
        out = disk.path / "bfcl"
        out.mkdir()
        (out / "records.jsonl").write_text("earlier\n")
        before = tree(out)
        disk.fill(leave=4 * KIB)
        refused(cli("import", "bfcl", tasks, answers, "--out", out), str(out))
        assert tree(out) == before
        assert leftovers(disk.path) == []


# ------------------------------------------------------ item 5: infer's torn last line, resumed
def test_infer_resumes_a_file_whose_last_line_was_torn(tmp_path: Path) -> None:
    data = mini_records(tmp_path, 6)
    reference, out = tmp_path / "reference.jsonl", tmp_path / "preds.jsonl"
    assert cli("infer", data, "--generator", "sim/weak", "--out", reference).code == 0
    text = reference.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    out.write_text("".join(lines[:7]) + lines[7][: len(lines[7]) // 2], encoding="utf-8")  # a torn write
    o = cli("infer", data, "--generator", "sim/weak", "--out", out)
    assert o.code == 0, o.err
    assert "torn" in o.err and str(out) in o.err and "line 8" in o.err
    assert out.read_bytes() == reference.read_bytes()


def test_infer_on_a_full_disk_keeps_what_finished_and_resumes(tmp_path: Path) -> None:
    data = mini_records(tmp_path / "in", 60)
    reference = tmp_path / "reference.jsonl"
    assert cli("infer", data, "--generator", "sim/weak", "--out", reference).code == 0
    with small_disk(tmp_path / "disk", 1 << 20) as disk:
        out = disk.path / "preds.jsonl"
        disk.fill(leave=24 * KIB)  # the file grows to ~90 KB
        # stderr: the plan line and the progress bar, then the error
        line = refused(cli("infer", data, "--generator", "sim/weak", "--out", out), str(out), max_lines=3)
        assert "(unknown path)" not in line
        kept = out.read_text(encoding="utf-8") if out.exists() else ""
        assert kept == "" or kept.endswith("\n") or "\n" in kept  # at most a torn last line
        assert leftovers(disk.path) == []
        disk.unfill()
        o = cli("infer", data, "--generator", "sim/weak", "--out", out)
        assert o.code == 0, o.err
        assert out.read_bytes() == reference.read_bytes()


# ---------------------------------------------------------------- item 6: the report swapped in whole
@pytest.mark.slow  # two reports of a run (~8 s)
def test_report_on_a_full_disk_leaves_the_previous_report_and_resumes(
    tmp_path: Path, fresh_run: Callable[..., Path]
) -> None:
    with small_disk(tmp_path / "disk", 16 << 20) as disk:
        run = fresh_run(disk.path)
        (run / "report").mkdir()
        (run / "report" / "report.md").write_text("# the earlier report\n")
        before = tree(run / "report")
        disk.fill(leave=64 * KIB)  # the report (figures included) needs several hundred KB
        refused(cli("report", run, "--resamples", "50"), str(run))
        assert tree(run / "report") == before
        assert leftovers(run) == []
        disk.unfill()
        assert cli("report", run, "--resamples", "50").code == 0
        files = tree(run / "report")
        assert "report.html" in files and "figures/" not in files
        assert files["report.md"] != before["report.md"]


# ------------------------------------------------------------- the run on a full disk (held before)
def test_run_on_a_full_disk_stops_with_the_path_and_resumes_byte_identical(
    tmp_path: Path, finished_run: Path
) -> None:
    pipeline = finished_run.parent / "p" / "pipeline.yaml"
    with small_disk(tmp_path / "disk", 8 << 20) as disk:
        run = disk.path / "run"
        disk.fill(leave=24 * KIB)
        line = refused(cli("run", pipeline, "--out", run), str(run))
        assert "free some space" in line
        disk.unfill()
        assert cli("run", pipeline, "--out", run).code == 0
        for name in ("predictions.parquet", "scores.parquet", "judgments.parquet"):
            assert (run / name).read_bytes() == (finished_run / name).read_bytes(), name


# --------------------------------------------------------- item 2: damaged outputs rebuilt by a re-run
@pytest.mark.parametrize(
    "name", ["meta.json", "run_summary.json", "judgments.parquet", "predictions.parquet", "scores.parquet"]
)
def test_a_rerun_rebuilds_a_damaged_output_from_the_store(fresh_run: Callable[..., Path], name: str) -> None:
    from agentjudge.rundir import RunFolder

    run = fresh_run()
    pipeline = run.parent / "p" / "pipeline.yaml"
    good = (run / name).read_bytes()
    (run / name).write_bytes(good[: len(good) // 2])
    o = cli("run", pipeline, "--out", run)
    assert o.code == 0, o.err
    assert "nothing to do" not in o.out
    folder = RunFolder.open(run)
    assert folder.summary() is not None and len(folder.judgments()) > 0
    if name.endswith(".parquet"):
        assert (run / name).read_bytes() == good
    else:
        assert json.loads((run / name).read_text())  # reads back
    assert cli("run", pipeline, "--out", run).out.startswith("nothing to do")  # and is current again


# ------------------------------------------------------ item 3: --force-new archives the whole old run
def test_force_new_archives_the_old_runs_summary_and_report(fresh_run: Callable[..., Path]) -> None:
    run = fresh_run()
    pipeline = write_pipeline(run.parent / "p", judges=["baseline/rule"])
    (run / "report").mkdir()
    (run / "report" / "report.html").write_text("<p>the old run's report</p>")
    (run / "human").mkdir()
    (run / "human" / "sample.csv").write_text("sample_id\n1\n")
    old_summary = (run / "run_summary.json").read_bytes()
    o = cli("run", pipeline, "--out", run, "--force-new")
    assert o.code == 0, o.err
    (archive,) = (run / "archive").iterdir()
    assert (archive / "run_summary.json").read_bytes() == old_summary
    assert (archive / "report" / "report.html").is_file()
    assert (archive / "human" / "sample.csv").is_file()
    assert not (run / "report").exists() and not (run / "human").exists()
    summary = json.loads((run / "run_summary.json").read_text())
    assert "baseline/rule" in summary["per_model"] and "simjudge/careful" not in summary["per_model"]


def test_force_new_interrupted_leaves_no_summary_of_the_old_run(
    fresh_run: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old run's files are gone from the folder as soon as the new run starts (archived), so a new run
    that stops before its first export cannot be read as the old one."""
    from agentjudge.runner import grid

    run = fresh_run()
    pipeline = write_pipeline(run.parent / "p", judges=["baseline/rule"])

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(grid._Grid, "run", interrupted)
    o = cli("run", pipeline, "--out", run, "--force-new")
    assert o.code == 130
    for name in ("run_summary.json", "meta.json", "judgments.parquet"):
        assert not (run / name).exists(), name
