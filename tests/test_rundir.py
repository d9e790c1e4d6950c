"""``RunFolder``: every refusal is one line naming the file and what to do; an older folder is read; the
tables, the store, the JSON files and the labels read as their contracts say (docs/formats.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from test_runner import write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.rundir import (
    FORMAT_VERSION,
    LabelLine,
    RunFolder,
    RunFolderError,
    Shown,
    TornLabelWarning,
    meta,
)
from agentjudge.rundir.labels import append_label, label_path
from agentjudge.rundir.synthetic import SyntheticSpec, write_run
from agentjudge.rundir.units import UNIT_COLUMNS, store_units
from agentjudge.runner.rundir_lock import RunFolderLock


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished run (two judges, two conditions), copied by the tests that change it."""
    work = tmp_path_factory.mktemp("rundir")
    pipeline = write_pipeline(work, judges=["baseline/rule", "baseline/always-1"], conditions=["with_gt"])
    assert run_cli(pipeline, work / "run") == 0
    return work / "run"


@pytest.fixture()
def folder(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy


def _refusal(path: Path) -> str:
    with pytest.raises(RunFolderError) as raised:
        RunFolder.open(path)
    message = str(raised.value)
    assert "\n" not in message, message  # one line
    return message


def _edit_meta(folder: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    path = folder / "meta.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ refusals
def test_a_missing_path_and_a_file_are_refused(tmp_path: Path) -> None:
    assert _refusal(tmp_path / "nowhere") == (
        f"{tmp_path / 'nowhere'}: no such folder (give a run folder written by `agentjudge run PIPELINE "
        "--out FOLDER`)"
    )
    (tmp_path / "file").write_text("x")
    assert _refusal(tmp_path / "file").startswith(f"{tmp_path / 'file'}: not a folder (give a run folder")


def test_a_folder_without_a_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert _refusal(tmp_path) == (
        f"{tmp_path}: not a run folder (no meta.json; give a run folder written by `agentjudge run PIPELINE "
        "--out FOLDER`)"
    )


def test_a_run_in_progress_before_its_first_export_is_refused_as_such(folder: Path) -> None:
    (folder / "meta.json").unlink()
    lock = RunFolderLock(folder)
    lock.acquire()  # this process holds the folder, as a run does
    try:
        message = _refusal(folder)
        assert message.startswith(
            f"{folder / 'meta.json'}: not written yet: a run is in progress in this folder"
        )
        assert f"pid {os.getpid()}" in message and "wait for it to end" in message
    finally:
        lock.release()
    # the same folder once the run stopped (killed before its first export): its store holds units
    assert _refusal(folder) == (
        f"{folder / 'meta.json'}: not found: the run in this folder stopped before its first export "
        "(run.sqlite holds its units); re-run the same `agentjudge run PIPELINE --out FOLDER` to go on and "
        "write its files"
    )


def test_a_lock_file_left_by_a_killed_run_is_not_a_run_in_progress(folder: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = RunFolderLock(folder)
    lock.acquire()
    holder = json.loads((folder / "run.lock").read_text())
    lock.release()
    holder["pid"] = dead.pid  # what a run killed with SIGKILL leaves: its details, no lock
    (folder / "run.lock").write_text(json.dumps(holder))
    assert RunFolder.open(folder).status.state == "complete"
    (folder / "meta.json").unlink()
    assert "stopped before its first export" in _refusal(folder)


def test_a_damaged_meta_json_is_refused_naming_the_line(folder: Path) -> None:
    (folder / "meta.json").write_text('{\n  "seed": 0,\n  "pipeline": {\n}}}\n', encoding="utf-8")
    message = _refusal(folder)
    assert message.startswith(f"{folder / 'meta.json'}: invalid JSON at line 4, column 3: Extra data")
    (folder / "meta.json").write_text("[1, 2]", encoding="utf-8")
    assert _refusal(folder).startswith(f"{folder / 'meta.json'}: not a JSON object")
    (folder / "meta.json").write_bytes(b"\xff\xfe{")
    assert _refusal(folder).startswith(f"{folder / 'meta.json'}: not UTF-8 text")


def test_a_newer_format_is_refused_with_upgrade(folder: Path) -> None:
    path = _edit_meta(folder, lambda m: m.update(format_version=FORMAT_VERSION + 1))
    assert _refusal(folder) == (
        f"{path}: format_version {FORMAT_VERSION + 1} is newer than this agentjudge reads (up to "
        f"{FORMAT_VERSION}): upgrade agentjudge (pip install -U agentjudge) to read this folder"
    )


def test_an_older_unreadable_format_is_refused_with_what_to_do(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _edit_meta(folder, lambda m: m.pop("format_version"))  # version 0
    monkeypatch.setattr(meta, "OLDEST_READABLE_VERSION", 1)  # as if version 0 were no longer read
    message = _refusal(folder)
    written_by = json.loads(path.read_text())["package_version"]
    assert message == (
        f"{path}: format_version 0 is older than this agentjudge reads (from 1 on): re-run its pipeline into "
        f"a new folder (agentjudge run PIPELINE --out NEWFOLDER), or read it with the agentjudge that wrote "
        f"it ({written_by})"
    )


@pytest.mark.parametrize("value", ["1", 1.5, -1, True, None])
def test_a_format_version_that_is_not_one_is_refused(folder: Path, value: Any) -> None:
    path = _edit_meta(folder, lambda m: m.update(format_version=value))
    assert _refusal(folder) == f"{path}: field format_version: {value!r} is not a format version"


def test_meta_json_with_a_key_it_does_not_know_or_a_bad_value_is_refused_naming_the_field(
    folder: Path,
) -> None:
    path = _edit_meta(folder, lambda m: m.update(surprise=1))
    assert _refusal(folder) == f"{path}: field surprise: Extra inputs are not permitted"
    path = _edit_meta(folder, lambda m: (m.pop("surprise"), m["units"]["judge"].update(done="many")))
    message = _refusal(folder)
    assert message.startswith(f"{path}: field units.judge.done: Input should be a valid integer")
    path = _edit_meta(folder, lambda m: (m["units"]["judge"].update(done=1), m.pop("config_hash")))
    assert _refusal(folder) == (
        f"{path}: missing key(s) config_hash (a run's meta.json has them; only a synthetic folder, with "
        "synthetic: true, may lack them)"
    )


# --------------------------------------------------------------------------- versions and status
def test_a_folder_written_before_format_versions_reads_as_version_1(folder: Path) -> None:
    _edit_meta(folder, lambda m: m.pop("format_version"))
    run = RunFolder.open(folder)
    assert run.format_version == 0
    assert len(run.judgments()) == len(RunFolder.open(folder).judgments()) > 0
    assert run.summary() is not None and run.status.state == "complete"


def test_status_says_complete_unfinished_and_in_progress(folder: Path) -> None:
    run = RunFolder.open(folder)
    planned = run.meta.units.predict.planned + run.meta.units.judge.planned  # type: ignore[union-attr]
    assert (run.status.state, run.status.planned, run.status.done, run.status.failed) == (
        "complete",
        planned,
        planned,
        0,
    )
    assert str(run.status) == f"complete: {planned:,} of {planned:,} units done, 0 failed"
    _edit_meta(folder, lambda m: m["units"]["judge"].update(done=m["units"]["judge"]["done"] - 3, failed=2))
    status = RunFolder.open(folder).status
    assert (status.state, status.done, status.failed) == ("unfinished", planned - 3, 2)
    with RunFolderLock(folder):
        status = RunFolder.open(folder).status  # a run may be at work while the folder is read
        assert status.state == "in_progress" and status.holder and status.holder["pid"] == os.getpid()
        assert str(status).startswith(f"in progress (pid {os.getpid()} on host ")


# ----------------------------------------------------------------------------------------- tables
def test_tables_read_with_columns_and_filters(folder: Path) -> None:
    run = RunFolder.open(folder)
    whole = pd.read_parquet(folder / "judgments.parquet")
    part = run.judgments(columns=["judge", "verdict"], filters=[("judge", "==", "baseline/rule")])
    assert list(part.columns) == ["judge", "verdict"]
    assert part.reset_index(drop=True).equals(
        whole.loc[whole["judge"] == "baseline/rule", ["judge", "verdict"]].reset_index(drop=True)
    )
    assert run.scores().equals(pd.read_parquet(folder / "scores.parquet"))
    assert run.predictions().equals(pd.read_parquet(folder / "predictions.parquet"))
    table = run.arrow("judgments", columns=["judge"], read_dictionary=["judge"])
    assert str(table.schema.field("judge").type) == "dictionary<values=string, indices=int32, ordered=0>"
    handle = run.parquet_file("judgments")
    assert handle.metadata.num_rows == len(whole)


def test_a_missing_damaged_or_short_table_is_refused_naming_the_file(folder: Path) -> None:
    run = RunFolder.open(folder)
    (folder / "scores.parquet").unlink()
    assert not run.has("scores")
    with pytest.raises(RunFolderError, match=r"scores\.parquet: file not found \(the run has not exported"):
        run.scores()
    (folder / "predictions.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(RunFolderError, match=r"predictions\.parquet: unreadable parquet \("):
        run.predictions()
    pd.read_parquet(folder / "judgments.parquet").drop(columns=["base_id"]).to_parquet(
        folder / "judgments.parquet"
    )
    with pytest.raises(RunFolderError, match=r"judgments\.parquet: missing column\(s\) \['base_id'\]"):
        run.judgments()
    with pytest.raises(RunFolderError, match=r"judgments\.parquet: missing column"):
        run.parquet_file("judgments")


def test_records_are_the_runs_dataset_and_a_moved_one_is_named(folder: Path, finished: Path) -> None:
    run = RunFolder.open(folder)
    dataset = finished.parent / "records.jsonl"
    assert run.dataset_path == dataset
    records = run.records()
    assert [r.id for r in records] and records == run.records()
    _edit_meta(folder, lambda m: m["pipeline"].update(dataset=str(folder / "gone.jsonl")))
    with pytest.raises(RunFolderError) as raised:
        RunFolder.open(folder).records()
    assert str(raised.value).startswith(
        f"{folder / 'gone.jsonl'}: the run's records file (pipeline.dataset in"
    )
    shutil.copy(dataset, folder / "records.jsonl")  # a copy kept in the folder is read instead
    assert [r.id for r in RunFolder.open(folder).records()] == [r.id for r in records]


# ------------------------------------------------------------------------------------------ store
def test_units_read_the_store_with_filters_and_leave_nothing_behind(folder: Path) -> None:
    run = RunFolder.open(folder)
    units = run.units()
    assert list(units.columns) == list(UNIT_COLUMNS)
    judge = run.units(["judge", "status"], [("stage", "==", "judge"), ("judge", "in", ["baseline/rule"])])
    assert set(judge["judge"]) == {"baseline/rule"} and set(judge["status"]) == {"done"}
    assert len(judge) == run.meta.units.judge.planned // 2  # type: ignore[union-attr]
    assert len(units) == run.status.planned
    assert store_units(folder / "run.sqlite", ["stage"]) is not None
    assert run.store_meta()["config_hash"] == run.meta.config_hash
    assert not (folder / "run.sqlite-wal").exists() and not (folder / "run.sqlite-shm").exists()
    with pytest.raises(RunFolderError, match=r"run\.sqlite: filter on 'nope': no such column"):
        run.units(filters=[("nope", "==", 1)])
    with pytest.raises(RunFolderError, match=r"run\.sqlite: filter .*operator 'like' is not one of"):
        run.units(filters=[("judge", "like", "%")])
    (folder / "run.sqlite").unlink()
    with pytest.raises(RunFolderError, match=r"run\.sqlite: not found"):
        run.units()


# ------------------------------------------------------------------------------------ JSON files
def test_summary_and_sampling_read_and_a_damaged_one_is_named(folder: Path) -> None:
    run = RunFolder.open(folder)
    summary = run.summary()
    assert summary is not None and set(summary.per_model) >= {"baseline/rule", "baseline/always-1"}
    assert run.sampling() is None  # not a sampled run
    (folder / "run_summary.json").write_text('{"per_model": {}, "failed_units": [{}]}')
    with pytest.raises(
        RunFolderError, match=r"run_summary\.json: field failed_units\.0\.model: Field required"
    ):
        run.summary()
    (folder / "sampling.json").write_text("{}")
    with pytest.raises(RunFolderError, match=r"sampling\.json: not a sampling record"):
        run.sampling()


def test_a_synthetic_folder_opens_and_counts_as_complete(tmp_path: Path) -> None:
    write_run(tmp_path, SyntheticSpec(n_base=6, judges={"judge-a": 1}))
    run = RunFolder.open(tmp_path)
    assert run.meta.synthetic and run.format_version == FORMAT_VERSION and run.status.state == "complete"
    assert run.summary() is None and run.dataset_path is None
    with pytest.raises(RunFolderError, match=r"names no records file"):
        run.records()
    with pytest.raises(RunFolderError, match=r"run\.sqlite: not found \(a run keeps its units there"):
        run.units()


# ----------------------------------------------------------------------------------------- labels
def _label(**fields: Any) -> dict[str, Any]:
    line = {
        "record_id": "test-0000:hard",
        "generator": "sim/weak",
        "generator_trial": 0,
        "difficulty": "hard",
        "verdicts": {"tool": 1, "param": 0.5, "seq": 0, "cov": 1},
        "note": "",
        "annotator": "ann",
        "shown": {"gt": True, "scores": False, "verdicts": False},
        "at": "2026-12-05T10:00:00Z",
    }
    return {**line, **fields}


def _write_labels(folder: Path, name: str, lines: list[dict[str, Any]], tail: str = "") -> Path:
    path = folder / "labels" / f"{name}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail, encoding="utf-8")
    return path


def test_labels_latest_per_annotator_and_item_with_the_history_kept(folder: Path) -> None:
    run = RunFolder.open(folder)
    assert run.labels() == []
    first = _label(verdicts={"tool": 0})
    other = _label(record_id="test-0001:easy", difficulty="easy")
    again = _label(note="looked again", at="2026-12-05T09:00:00+00:00")  # an earlier clock: still later
    _write_labels(folder, "ann", [first, other, again])
    _write_labels(folder, "bob", [_label(annotator="bob", generator_trial=1)])
    latest = run.labels()
    assert [(x.annotator, x.record_id, x.note) for x in latest] == [
        ("ann", "test-0001:easy", ""),
        ("ann", "test-0000:hard", "looked again"),
        ("bob", "test-0000:hard", ""),
    ]
    assert latest[1].verdicts == {"tool": 1.0, "param": 0.5, "seq": 0.0, "cov": 1.0}
    assert latest[1].judge == "human/ann" and latest[2].item == ("test-0000:hard", "sim/weak", 1)
    history = run.labels(history=True)
    assert [x.note for x in history] == ["", "", "looked again", ""] and history[0].verdicts == {"tool": 0.0}
    assert history[0] == LabelLine.model_validate(first)


def test_a_torn_last_label_line_is_skipped_with_a_warning(folder: Path) -> None:
    path = _write_labels(folder, "ann", [_label()], tail=json.dumps(_label(note="half"))[:40])
    with pytest.warns(TornLabelWarning, match=rf"{path}, line 2: skipped: the line was not finished"):
        labels = RunFolder.open(folder).labels()
    assert [x.note for x in labels] == [""]
    complete_but_unterminated = json.dumps(_label(note="no newline"))  # counts once its newline is written
    _write_labels(folder, "ann", [_label()], tail=complete_but_unterminated)
    with pytest.warns(TornLabelWarning):
        assert [x.note for x in RunFolder.open(folder).labels()] == [""]
    _write_labels(folder, "ann", [_label()])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a whole file: no warning
        assert len(RunFolder.open(folder).labels()) == 1


@pytest.mark.parametrize(
    "line,problem",
    [
        (_label(verdicts={"tool": 0.7}), "field verdicts.tool: 0.7 is not 0, 0.5 or 1"),
        (_label(verdicts={"tool": True}), "field verdicts.tool: True is not 0, 0.5 or 1"),
        (_label(verdicts={"outcome": 1}), "field verdicts.outcome.[key]: Input should be 'tool'"),
        (_label(at="2026-12-05T10:00:00+02:00"), "field at: not a UTC time"),
        (_label(at="2026-12-05T10:00:00"), "field at: Input should have timezone info"),
        (_label(difficulty="easy"), "record_id 'test-0000:hard' is not at difficulty 'easy'"),
        (_label(extra=1), "field extra: Extra inputs are not permitted"),
        (_label(annotator="bob"), "field annotator: 'bob' in the file of annotator 'ann'"),
        ({k: v for k, v in _label().items() if k != "shown"}, "field shown: Field required"),
    ],
)
def test_a_bad_label_line_is_refused_naming_file_line_and_field(
    folder: Path, line: dict[str, Any], problem: str
) -> None:
    path = _write_labels(folder, "ann", [_label(), line, _label()])
    with pytest.raises(RunFolderError) as raised:
        RunFolder.open(folder).labels()
    assert str(raised.value).startswith(f"{path}, line 2: {problem}")
    assert "\n" not in str(raised.value)


def test_shown_says_whether_the_label_was_blind_and_reads_the_older_one_key_form(folder: Path) -> None:
    _write_labels(
        folder,
        "ann",
        [
            _label(),
            _label(record_id="test-0001:hard", shown={"gt": True, "scores": True, "verdicts": False}),
            _label(record_id="test-0002:hard", shown={"gt": False, "reference": True}),
        ],
    )
    first, second, third = RunFolder.open(folder).labels()
    assert first.shown.blind and not second.shown.blind
    assert third.shown == Shown(gt=False, scores=True, verdicts=True)


def test_append_label_writes_whole_lines_and_cuts_a_torn_tail(folder: Path) -> None:
    line = LabelLine.model_validate(_label(note="a\nnote on two lines"))
    assert append_label(folder, line) == 1 and append_label(folder, line) == 2
    path = folder / "labels" / "ann.jsonl"
    assert path.read_bytes().count(b"\n") == 2 and RunFolder.open(folder).labels(history=True) == [line, line]
    with path.open("ab") as handle:
        handle.write(b'{"record_id": "test-00')
    with pytest.warns(
        TornLabelWarning, match=r"ann\.jsonl, line 3: cut off before saving: a line torn by a crash"
    ):
        assert append_label(folder, line) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(RunFolder.open(folder).labels(history=True)) == 3
    with pytest.raises(RunFolderError, match="annotator '../x'"):
        label_path(folder, "../x")


def test_a_label_line_that_is_not_json_is_refused(folder: Path) -> None:
    path = _write_labels(folder, "ann", [_label()], tail="{oops\n")
    with pytest.raises(RunFolderError, match=rf"{path}, line 2: not valid JSON"):
        RunFolder.open(folder).labels()
