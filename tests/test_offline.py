"""Offline units in chunks (runner/offline.py): the same files from one process and from two, the row
groups of judgments.parquet independent of how the store is read, a dead child's chunk computed by the
main process, a SIGKILLed offline run resumed without a duplicate, and the rule baseline's memo."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from agentjudge import api
from agentjudge.commands.run import run_cli
from agentjudge.judges import baselines
from agentjudge.rundir import RunFolder
from agentjudge.rundir.records import read_records
from agentjudge.rundir.units import store_units
from agentjudge.runner import export, grid, offline
from agentjudge.runner import store as store_module
from agentjudge.types import ToolCall

MINI = Path(__file__).resolve().parents[1] / "data" / "mini" / "records.jsonl"
FILES = ("predictions.parquet", "scores.parquet", "judgments.parquet")


def _pipeline(folder: Path, workers: int, limit: int | None = None) -> Path:
    data = {
        "name": "offline-grid",
        "dataset": str(MINI),
        **({"limit": limit} if limit else {}),
        "difficulties": ["easy", "medium", "hard"],
        "generators": ["sim/weak", "sim/mid", "sim/perfect"],
        "judges": [
            "baseline/always-1",
            "baseline/rule",
            "baseline/gt-rule",
            "baseline/ceiling",
            "simjudge/careful",
        ],
        "conditions": ["with_gt", "without_gt", "swapped_gt"],
        "scoring": "both",
        "cache": str(folder / "cache.sqlite"),
        "workers": workers,
        "seed": 0,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_offline_workers_rules() -> None:
    assert offline.offline_workers(4, 0) == 1  # nothing to run
    assert offline.offline_workers(1, 10**6) == 1  # workers: 1 keeps everything in process
    assert offline.offline_workers(2, 10**6) == 2  # explicit: obeyed
    assert offline.offline_workers(8, 1_500, chunk=1_000) == 2  # never more processes than chunks
    assert offline.offline_workers(None, offline.AUTO_MIN_OFFLINE_UNITS - 1) == 1  # small stage
    from agentjudge.runner.workers import default_workers

    assert offline.offline_workers(None, offline.AUTO_MIN_OFFLINE_UNITS) == default_workers()


def test_two_processes_write_the_same_files_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # small chunks and row groups, so that data/mini is cut in many pieces; the same for both runs
    monkeypatch.setattr(offline, "CHUNK_UNITS", 250)
    monkeypatch.setattr(offline, "SCORE_CHUNK", 60)
    monkeypatch.setattr(export, "EXPORT_ROW_GROUP", 1_500)  # read by grid at export time
    forks: list[int] = []
    real_init = offline.ChunkPool.__init__

    def counting_init(self: offline.ChunkPool, size: int, *args: Any, **kwargs: Any) -> None:
        forks.append(size)
        real_init(self, size, *args, **kwargs)

    monkeypatch.setattr(offline.ChunkPool, "__init__", counting_init)
    assert api.run(_pipeline(tmp_path / "one", 1), tmp_path / "one" / "run").status == "complete"
    assert forks == []  # workers: 1 never forks
    assert api.run(_pipeline(tmp_path / "two", 2), tmp_path / "two" / "run").status == "complete"
    # predict, scores and judge: this process and one child; the export: two children
    assert forks == [1, 1, 1, 2]
    judgments = pq.ParquetFile(tmp_path / "two" / "run" / "judgments.parquet")
    # 60 records x 3 difficulties x 3 generators x 5 judges x 3 conditions = 8,100 units
    assert judgments.metadata.num_rows > 8_100 * 8 - 1
    assert judgments.metadata.num_row_groups == 6  # 5 x 1,500 units, then the last 600
    for name in FILES:
        one = (tmp_path / "one" / "run" / name).read_bytes()
        two = (tmp_path / "two" / "run" / name).read_bytes()
        assert one == two, f"{name} differs between workers: 1 and workers: 2"


def test_row_groups_do_not_depend_on_the_batches_read(tmp_path: Path) -> None:
    """write_judgments cuts row groups every ``chunk`` wanted units whatever the store's batches are, and
    leaves out stored units that are not wanted (the rows of such a unit never reach the file)."""
    pipe = _pipeline(tmp_path / "src", 1, limit=4)
    assert api.run(pipe, tmp_path / "src" / "run").status == "complete"
    from agentjudge.runner.store import RangeReader, key_ranges

    reader = RangeReader(tmp_path / "src" / "run" / "run.sqlite", "judge")
    raw = reader((None, None))  # every stored judge row, raw, in coordinate order
    data = grid.Dataset(read_records(MINI, limit=4))
    from agentjudge.runner.pipeline import load_pipeline
    from agentjudge.runner.store import UnitKey
    from agentjudge.runner.work import compute_scores, judge_units, predict_units

    p = load_pipeline(pipe)
    keys = [UnitKey(*row[:10]) for row in raw]
    wanted = set(keys[:-7])  # the last 7 stored units are not wanted
    assert set(judge_units(p, predict_units(p, data))) >= wanted
    from agentjudge.types import Prediction

    pred_store = grid.RunStore(tmp_path / "src" / "run" / "run.sqlite")
    try:
        preds = {
            r.key: Prediction.model_validate(r.result) for r in pred_store.iter_units("predict") if r.result
        }
    finally:
        pred_store.close()
    scores = compute_scores(data, preds, p.scoring_modes, p.lenient)
    variants = {v.key: v for v in p.prompt_variants}
    settings = {j.display_name: j for j in p.judges}
    written = []
    for batch_size, workers in ((10_000, 1), (7, 1), (50, 2), (33, 2)):
        path = tmp_path / f"j-{batch_size}-{workers}.parquet"
        batches = [raw[i : i + batch_size] for i in range(0, len(raw), batch_size)]
        export.write_judgments(
            path, batches, wanted, data, scores, variants, settings, chunk=40, workers=workers
        )
        written.append(path.read_bytes())
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups == -(-len(wanted) // 40) + (len(wanted) % 40 == 0)
    for per_range, workers in ((40, 1), (40, 2), (13, 2)):  # ranges of the store read where they are built
        path = tmp_path / f"r-{per_range}-{workers}.parquet"
        ranges = key_ranges(wanted, per_range)
        assert len(ranges) == -(-len(wanted) // per_range)
        export.write_judgments(
            path, ranges, wanted, data, scores, variants, settings, chunk=40, workers=workers, read=reader
        )
        written.append(path.read_bytes())
    reader.close()
    assert all(w == written[0] for w in written[1:])
    table = pq.read_table(tmp_path / "j-7-1.parquet", columns=["record_id", "judge", "condition"])
    assert table.num_rows == sum(8 for _ in wanted)  # 4 metrics x 2 modes per wanted unit, no other


def _judgments_inputs(tmp_path: Path, limit: int) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
    """A finished offline run of ``limit`` records in tmp_path/src/run: its raw judge rows, and the
    arguments of ``write_judgments`` after ``wanted`` (dataset, scores, variants, judges)."""
    from agentjudge.runner.pipeline import load_pipeline
    from agentjudge.runner.store import RangeReader
    from agentjudge.runner.work import compute_scores

    pipe = _pipeline(tmp_path / "src", 1, limit=limit)
    assert api.run(pipe, tmp_path / "src" / "run").status == "complete"
    reader = RangeReader(tmp_path / "src" / "run" / "run.sqlite", "judge")
    raw = reader((None, None))
    reader.close()
    data = grid.Dataset(read_records(MINI, limit=limit))
    p = load_pipeline(pipe)
    store = grid.RunStore(tmp_path / "src" / "run" / "run.sqlite")
    try:
        preds = {
            r.key: grid.Prediction.model_validate(r.result) for r in store.iter_units("predict") if r.result
        }
    finally:
        store.close()
    scores = compute_scores(data, preds, p.scoring_modes, p.lenient)
    return raw, (data, scores, {v.key: v for v in p.prompt_variants}, {j.display_name: j for j in p.judges})


def test_the_childrens_tables_pass_through_files_that_are_removed(tmp_path: Path) -> None:
    """With children, each table reaches the writer as an Arrow file in a folder beside the temporary file;
    the files are read as they were written (same bytes as one process), and nothing is left behind: not
    the folder, nor the folder and temporary file left by an export whose process is gone (a live process's
    are not touched)."""
    raw, args = _judgments_inputs(tmp_path, 2)
    batches = [raw[i : i + 10] for i in range(0, len(raw), 10)]
    out = tmp_path / "out"
    out.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead = out / f".j.parquet.tmp-{int(gone.stdout)}{export.SPILL_SUFFIX}"  # its process has ended
    live = out / f".j.parquet.tmp-1{export.SPILL_SUFFIX}"  # pid 1 always exists
    for folder in (dead, live):
        folder.mkdir()
        (folder / "9-1.arrow").write_bytes(b"left by a killed export")
    for leftover in (dead.with_suffix(""), live.with_suffix("")):  # .j.parquet.tmp-PID, half written
        leftover.write_bytes(b"PAR1 half a file")
    huge, odd = out / ".j.parquet.tmp-99999999999999999999", out / ".j.parquet.tmp-\u00b2"  # no process's id
    for stray in (huge, odd):
        stray.write_bytes(b"not an export's")
    spilled: list[str] = []
    real_read = export.read_spilled

    def read_spilled(path: str) -> Any:
        spilled.append(path)
        assert Path(path).parent.name.startswith(".j.parquet.tmp-") and Path(path).exists()
        return real_read(path)

    export.read_spilled = read_spilled  # type: ignore[assignment]
    try:
        export.write_judgments(out / "j.parquet", batches, None, *args, chunk=40, workers=2)
    finally:
        export.read_spilled = real_read  # type: ignore[assignment]
    export.write_judgments(tmp_path / "one.parquet", batches, None, *args, chunk=40, workers=1)
    assert len(spilled) == len(batches) and not any(Path(s).exists() for s in spilled)
    assert (out / "j.parquet").read_bytes() == (tmp_path / "one.parquet").read_bytes()
    kept = ["j.parquet", live.name, live.with_suffix("").name]  # what a live process writes is left
    kept.append(odd.name)  # not a number in ASCII digits: not the export's name for a temporary file
    assert sorted(f.name for f in out.iterdir()) == sorted(kept)


def test_a_dead_child_has_its_chunks_computed_here() -> None:
    parent = os.getpid()

    def compute(x: int) -> tuple[int, bool]:
        if os.getpid() != parent and x == 3:
            os._exit(7)  # this child dies on its payload 3
        return x * x, os.getpid() != parent

    answers = list(offline.in_chunks(2, compute, range(10)))
    assert [a for a, _ in answers] == [x * x for x in range(10)]
    remote = {x for x, (_, in_child) in enumerate(answers) if in_child}
    assert {0, 2} <= remote  # the other child kept working
    assert not {3, 5, 7, 9} & remote  # the dead child's payloads, computed in this process


def test_a_busy_child_ended_by_close_prints_nothing_whatever_sigterm_handler_the_parent_had(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """close() SIGTERMs a child still computing. A SIGTERM handler the main process installed (one that
    raises SystemExit, as a served model's does) must not run in the child: it would print a traceback
    under the progress bar."""
    parent = os.getpid()

    def compute(x: int) -> int:
        if os.getpid() != parent:
            time.sleep(30)  # busy when close() comes
        return x

    earlier = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        pool = offline.ChunkPool(1, compute)
        answers = pool.map(range(2))
        started = time.monotonic()
        offline._write_frame(pool.children[0][1], 0)  # the child is now asleep in compute
        time.sleep(0.3)
        pool.close()
        del answers
    finally:
        signal.signal(signal.SIGTERM, earlier)
    assert time.monotonic() - started < 10  # ended by the signal, not by finishing its sleep
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "SystemExit" not in out + err, out + err


def test_unordered_chunks_keep_shares_contiguous_and_survive_a_dead_child() -> None:
    parent = os.getpid()

    def compute(x: int) -> tuple[int, int]:
        if os.getpid() != parent and x == 8:
            os._exit(7)  # the child of the second share (6..12) dies on index 8
        return x * x, os.getpid()

    # three processes: two children (shares 0..5 and 6..12) and this one (13..19)
    answers = dict(offline.in_chunks_unordered(3, compute, 20))
    assert sorted(answers) == list(range(20))  # every index once
    assert all(answers[i][0] == i * i for i in answers)
    # each child starts at the front of its share (two in flight); the rest may be taken by whoever is free
    first, second = answers[0][1], answers[6][1]
    assert answers[1][1] == first and answers[7][1] == second
    assert len({first, second, parent}) == 3
    assert answers[8][1] != second  # the dead child's chunk, computed by another process
    assert list(offline.in_chunks_unordered(1, compute, 3)) == [
        (0, (0, parent)),
        (1, (1, parent)),
        (2, (4, parent)),
    ]


def test_a_child_dying_idle_and_another_mid_chunk_neither_hangs_nor_loses_a_chunk() -> None:
    """Child A answers, then dies with nothing in flight (its pipe stays readable at end of file); child B
    dies inside a chunk. Every index still comes back once (in a subprocess: a hang fails, not blocks)."""
    code = (
        "import os, threading, time\n"
        "from agentjudge.runner import offline\n"
        "parent = os.getpid()\n"
        "def compute(i):\n"
        "    if os.getpid() != parent:\n"
        "        if i == 1:\n"
        "            threading.Timer(0.2, lambda: os._exit(9)).start()\n"
        "        if i == 2:\n"
        "            time.sleep(0.5); os._exit(9)\n"
        "    return i * 10\n"
        "print(sorted(offline.in_chunks_unordered(3, compute, 6)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str([(i, i * 10) for i in range(6)])


def test_a_child_that_cannot_be_forked_is_reported_and_the_rest_go_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real, forks = os.fork, []

    def flaky() -> int:
        forks.append(1)
        if len(forks) == 2:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real()

    monkeypatch.setattr(os, "fork", flaky)
    got = sorted(offline.in_chunks_unordered(3, lambda i: i + 1, 10))
    assert got == [(i, i + 1) for i in range(10)]
    assert "could not start offline worker process 2 of 2" in capsys.readouterr().err
    with pytest.raises(ChildProcessError):  # the child that was started has been reaped
        os.waitpid(-1, os.WNOHANG)
    forks.clear()
    monkeypatch.setattr(os, "fork", lambda: (_ for _ in ()).throw(OSError(12, "Cannot allocate memory")))
    assert list(offline.in_chunks(3, lambda p: p * 2, [1, 2, 3])) == [2, 4, 6]  # no child at all: here


def test_the_rule_memo_gives_the_rules_answer_and_its_own_copies() -> None:
    record = read_records(MINI, limit=1)[0]
    from agentjudge.runner.work import Dataset

    task = Dataset([record]).task(record, "easy")
    calls = [step.call for step in record.gt]
    first = baselines.rule_verdicts_once(task, calls)
    assert first == baselines.rule_verdicts(task, calls)
    first[0]["tool"] = -1.0  # the caller's copy: the memo is not changed
    assert baselines.rule_verdicts_once(task, calls) == baselines.rule_verdicts(task, calls)
    changed = [ToolCall(name=calls[0].name, arguments={**calls[0].arguments, "zzz": 1}), *calls[1:]]
    assert baselines.rule_verdicts_once(task, changed) == baselines.rule_verdicts(task, changed)
    assert baselines.rule_verdicts_once(task, changed) != baselines.rule_verdicts_once(task, calls)
    # the same calls against another task: another query (the hard wording), other tool schemas (a rebuilt
    # copy with one parameter required more), another record: each is the rules' own answer for that task
    hard = Dataset([record]).task(record, "hard")
    assert baselines.rule_verdicts_once(hard, calls) == baselines.rule_verdicts(hard, calls)
    at = next(i for i, t in enumerate(task.tools) if t.name == calls[0].name)  # a tool the calls use
    params = task.tools[at].parameters
    extra = {**params, "properties": {**params.get("properties", {}), "zz_new": {"type": "string"}}}
    extra["required"] = [*params.get("required", []), "zz_new"]
    tools = list(task.tools)
    tools[at] = tools[at].model_copy(update={"parameters": extra})
    rebuilt = task.model_copy(update={"tools": tools})
    assert baselines.rule_verdicts_once(rebuilt, calls) == baselines.rule_verdicts(rebuilt, calls)
    assert baselines.rule_verdicts_once(rebuilt, calls) != baselines.rule_verdicts_once(task, calls)
    other = read_records(MINI, limit=2)[1]
    other_task = Dataset([other]).task(other, "easy")
    assert baselines.rule_verdicts_once(other_task, calls) == baselines.rule_verdicts(other_task, calls)


def test_a_prediction_repeating_earlier_calls_is_scored_as_they_were_under_its_own_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """compute_scores scores once the calls a base record's predictions repeat exactly (the same record at
    another difficulty, another generator or trial) and hands each repeat the same scores under its own ids;
    calls that differ at all (an argument, its key order, the calls an interactive prediction executed)
    are scored on their own. Every score equals score_prediction's for that prediction alone."""
    from agentjudge.runner.store import UnitKey
    from agentjudge.runner.work import Dataset, compute_scores
    from agentjudge.scoring import scorer
    from agentjudge.types import Prediction, ToolStep, Trajectory

    first, second = read_records(MINI, limit=2)
    data = Dataset([first, second])
    gt = [step.call for step in first.gt]
    wrong = [ToolCall(name=gt[0].name, arguments={**gt[0].arguments, "zzz": 1}), *gt[1:]]
    at = next(i for i, c in enumerate(gt) if len(c.arguments) > 1)  # a call with two arguments or more
    reordered = list(gt)
    reordered[at] = ToolCall(name=gt[at].name, arguments=dict(reversed(gt[at].arguments.items())))
    assert reordered[at].arguments == gt[at].arguments  # equal, spelled in another order
    _, writes = scorer.gt_trace(first, None)
    skipped = [ToolStep(turn=i, call=c, executed=i != writes[0]) for i, c in enumerate(gt)]  # a write not run
    trajectory = Trajectory(messages=[], steps=skipped, turns=len(gt), stop_reason="answered")
    plan = [  # (record, difficulty, generator, trial, calls, trajectory)
        (first, "easy", "g1", 0, gt, None),
        (first, "hard", "g1", 0, gt, None),  # repeats: another difficulty
        (first, "easy", "g2", 1, gt, None),  # another generator and trial
        (first, "easy", "g3", 0, wrong, None),
        (first, "medium", "g3", 0, wrong, None),  # repeats the wrong calls
        (first, "hard", "g3", 0, reordered, None),  # equal calls in another key order: scored again
        (first, "medium", "g4", 0, gt, trajectory),  # the same calls, but the environment saw fewer
        (first, "easy", "g5", 0, [], None),  # no calls at all
        (first, "hard", "g5", 0, [], None),  # repeats them
        (second, "easy", "g1", 0, gt, None),  # another record: never the first's scores
    ]
    predictions = {}
    for record, difficulty, generator, trial, calls, traj in plan:
        task = data.task(record, difficulty)  # type: ignore[arg-type]
        key = UnitKey("predict", task.record_id, difficulty, generator, trial)
        predictions[key] = Prediction.for_task(task, generator, trial, calls=calls, trajectory=traj)
    scored: list[str] = []
    real = scorer.score_prediction

    def counting(record: Any, prediction: Prediction, mode: Any, **kwargs: Any) -> Any:
        scored.append(f"{prediction.record_id}/{prediction.generator}")
        return real(record, prediction, mode, **kwargs)

    monkeypatch.setattr(scorer, "score_prediction", counting)
    modes: list[Any] = ["paper", "strict"]
    scores = compute_scores(data, predictions, modes, False)
    monkeypatch.setattr(scorer, "score_prediction", real)
    alone = {
        (key.record_id, key.generator, key.generator_trial): {
            mode: real(data.locate(key.record_id)[0], prediction, mode) for mode in modes
        }
        for key, prediction in predictions.items()
    }
    assert scores == alone  # ids included: each repeat carries its own record id, generator and trial
    assert len(scored) == 2 * 6  # per mode: gt, wrong, reordered, interactive, none, the second record
    executed_fewer = scores[(f"{first.id}:medium", "g4", 0)]["strict"]
    assert executed_fewer.state_match is False and scores[(f"{first.id}:easy", "g1", 0)]["strict"].state_match


def test_repeats_are_never_taken_from_another_base_record_whose_keys_interleave() -> None:
    """Base ids "r" and "r:f" sort r:easy, r:f:easy, r:f:hard, r:f:medium, r:hard, r:medium: the same calls
    under r after r:f's predictions are scored for r, not given r:f's scores."""
    from agentjudge.runner.store import UnitKey
    from agentjudge.runner.work import Dataset, compute_scores
    from agentjudge.scoring import scorer
    from agentjudge.types import Prediction

    first, second = read_records(MINI, limit=2)
    r, rf = first.model_copy(update={"id": "r"}), second.model_copy(update={"id": "r:f"})
    data = Dataset([r, rf])
    calls = [step.call for step in rf.gt]  # right for r:f, wrong for r
    predictions = {}
    for record in (r, rf):
        for difficulty in ("easy", "hard", "medium"):
            task = data.task(record, difficulty)  # type: ignore[arg-type]
            key = UnitKey("predict", task.record_id, difficulty, "g", 0)
            predictions[key] = Prediction.for_task(task, "g", 0, calls=calls)
    assert [k.record_id for k in sorted(predictions)][:3] == ["r:easy", "r:f:easy", "r:f:hard"]
    scores = compute_scores(data, predictions, ["strict"], False)
    for key, prediction in predictions.items():
        record = data.locate(key.record_id)[0]
        alone = scorer.score_prediction(record, prediction, "strict")
        assert scores[(key.record_id, "g", 0)]["strict"] == alone, key.record_id
    assert scores[("r:hard", "g", 0)]["strict"] != scores[("r:f:hard", "g", 0)]["strict"].model_copy(
        update={"record_id": "r:hard"}
    )


def _judge_rows(store: Path) -> int:
    """Judge units stored so far (also while a run is writing the store, before its first export)."""
    try:
        units = store_units(store, ["stage"], [("stage", "==", "judge")])
    except sqlite3.Error:
        return 0
    return 0 if units is None else len(units)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def test_sigkill_of_an_offline_run_with_two_processes_then_resume(tmp_path: Path) -> None:
    """Killed during the judge stage (two children computing chunks): the children exit, the re-run
    stores only what is missing, and the files equal those of an uninterrupted run."""
    ref = tmp_path / "ref"
    assert api.run(_pipeline(ref, 1, limit=30), ref / "run").status == "complete"
    total = _judge_rows(ref / "run" / "run.sqlite")
    work = tmp_path / "killed"
    pipeline = _pipeline(work, 2, limit=30)
    rundir = work / "run"
    env = dict(os.environ)
    command = [sys.executable, "-m", "agentjudge", "run", str(pipeline), "--out", str(rundir)]
    # chunks of 100 units: many small groups, so the kill lands between commits
    code = (
        "import sys; from agentjudge.runner import offline; offline.CHUNK_UNITS = 100; "
        "from agentjudge.commands import app; sys.argv = ['agentjudge', *sys.argv[1:]]; app()"
    )
    command = [sys.executable, "-c", code, *command[3:]]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    children: list[int] = []
    while _judge_rows(rundir / "run.sqlite") < 1_000:
        assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run made no progress"
        children = _children(proc.pid) or children
        time.sleep(0.01)
    children = _children(proc.pid) or children
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    stored = _judge_rows(rundir / "run.sqlite")
    assert 1_000 <= stored < total, "kill came too late to test resuming"
    assert children, "no child process was seen computing chunks"
    deadline = time.monotonic() + 10
    while any(_alive(c) for c in children):  # their request pipes closed with the parent
        assert time.monotonic() < deadline, "orphaned children did not exit"
        time.sleep(0.05)
    err = proc.stderr.read().decode("utf-8", "replace")  # type: ignore[union-attr]
    assert "Traceback" not in err, err[-2000:]  # a child whose answer met a closed pipe exits quietly
    assert api.run(pipeline, rundir).status == "complete"
    attempts = RunFolder.open(rundir).units(["attempts"])["attempts"].value_counts().to_dict()
    assert attempts == {1: total + _predict_rows(rundir)}  # every unit stored once, none run twice
    for name in FILES:
        assert (ref / "run" / name).read_bytes() == (rundir / name).read_bytes(), name


def _predict_rows(rundir: Path) -> int:
    return len(RunFolder.open(rundir).units(["stage"], [("stage", "==", "predict")]))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow  # one more subprocess run; the SIGKILL test above covers resuming in the fast suite
def test_ctrl_c_of_an_offline_run_with_two_processes_then_resume(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    assert api.run(_pipeline(ref, 1, limit=30), ref / "run").status == "complete"
    work = tmp_path / "interrupted"
    pipeline = _pipeline(work, 2, limit=30)
    rundir = work / "run"
    code = (
        "import sys; from agentjudge.runner import offline; offline.CHUNK_UNITS = 100; "
        "from agentjudge.commands import app; sys.argv = ['agentjudge', *sys.argv[1:]]; app()"
    )
    command = [sys.executable, "-c", code, "run", str(pipeline), "--out", str(rundir)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    children: list[int] = []
    while _judge_rows(rundir / "run.sqlite") < 500:
        assert proc.poll() is None and time.monotonic() < deadline
        children = _children(proc.pid) or children
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert "re-run the same command to resume" in out
    assert children and not any(_alive(c) for c in children)  # stopped and reaped by the parent
    assert _judge_rows(rundir / "run.sqlite") < _judge_rows(ref / "run" / "run.sqlite")
    assert api.run(pipeline, rundir).status == "complete"
    for name in FILES:
        assert (ref / "run" / name).read_bytes() == (rundir / name).read_bytes(), name


def _stored_by_main(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stages of the units the main process buffers for its own store (``RunStore.finish_encoded``)."""
    seen: list[str] = []
    real = grid.RunStore.finish_encoded

    def counting(self: Any, key: Any, *args: Any) -> None:
        seen.append(key.stage)
        real(self, key, *args)

    monkeypatch.setattr(grid.RunStore, "finish_encoded", counting)
    return seen


def test_a_child_stores_its_own_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With two processes the child commits the chunks it computes (the main process stores only its own
    share), every unit is stored once, and the files equal those of one process."""
    monkeypatch.setattr(offline, "CHUNK_UNITS", 250)
    ref = tmp_path / "ref"
    assert api.run(_pipeline(ref, 1, limit=20), ref / "run").status == "complete"
    seen = _stored_by_main(monkeypatch)
    work = tmp_path / "two"
    assert api.run(_pipeline(work, 2, limit=20), work / "run").status == "complete"
    total = _judge_rows(work / "run" / "run.sqlite")
    assert total == 20 * 3 * 3 * 5 * 3  # records x difficulties x generators x judges x conditions
    assert 0 < seen.count("judge") < total * 3 // 4  # the child stored a good part of the judge stage
    assert RunFolder.open(work / "run").units(["attempts"], [("attempts", "!=", 1)]).empty
    per_model = json.loads((work / "run" / "meta.json").read_text(encoding="utf-8"))["last_invocation"]
    done = {
        row["model"]: (row["done"], row["failed"], row["parse_failures"]) for row in per_model["per_model"]
    }
    # every unit settled once, wherever it was stored: 20 x 3 x 3 predictions, 3 conditions per judge
    assert done == {
        **{g: (180 // 3, 0, 0) for g in ("sim/weak", "sim/mid", "sim/perfect")},
        **{
            j: (540, 0, 0)
            for j in ("baseline/always-1", "baseline/rule", "baseline/gt-rule", "baseline/ceiling")
        },
        "simjudge/careful": done["simjudge/careful"],
    }
    assert sum(done["simjudge/careful"][:2]) == 540
    for name in FILES:
        assert (ref / "run" / name).read_bytes() == (work / "run" / name).read_bytes(), name


def test_a_child_that_cannot_store_hands_its_chunks_to_the_main_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A child whose chunk write fails (a full disk, an I/O error) answers with the chunk unstored; the
    main process stores it unit by unit and says once why, in one line: no traceback under the progress
    bar, every unit stored once, the same files as one process."""
    monkeypatch.setattr(offline, "CHUNK_UNITS", 250)
    ref = tmp_path / "ref"
    assert run_cli(_pipeline(ref, 1, limit=20), ref / "run") == 0
    capfd.readouterr()

    def full_disk(self: Any, rows: list[Any]) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store_module.GroupWriter, "write", full_disk)  # the forked child inherits it
    seen = _stored_by_main(monkeypatch)
    work = tmp_path / "two"
    assert run_cli(_pipeline(work, 2, limit=20), work / "run") == 0
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    warning = "an offline worker process could not store its chunk in run.sqlite (OperationalError: database"
    assert (out + err).count(warning) == 1, out + err
    assert "the main process stores that process's units instead" in out
    total = _judge_rows(work / "run" / "run.sqlite")
    assert seen.count("judge") == total == 20 * 3 * 3 * 5 * 3  # every unit stored by the main process
    assert RunFolder.open(work / "run").units(["attempts"], [("attempts", "!=", 1)]).empty
    for name in FILES:
        assert (ref / "run" / name).read_bytes() == (work / "run" / name).read_bytes(), name


def test_under_a_cost_cap_the_main_process_stores_every_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cost cap: the main process decides unit by unit what is stored (the engine's rule), so no child
    stores a chunk itself."""
    monkeypatch.setattr(offline, "CHUNK_UNITS", 250)
    seen = _stored_by_main(monkeypatch)
    pipeline = _pipeline(tmp_path, 2, limit=20)
    data = yaml.safe_load(pipeline.read_text(encoding="utf-8"))
    pipeline.write_text(yaml.safe_dump({**data, "max_cost_usd": 5.0}, sort_keys=False), encoding="utf-8")
    assert api.run(pipeline, tmp_path / "run").status == "complete"
    assert seen.count("judge") == _judge_rows(tmp_path / "run" / "run.sqlite") == 20 * 3 * 3 * 5 * 3


def test_the_export_counts_judge_units_in_sqlite_when_none_is_unplanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge stage knows that every stored judge unit is planned, so the export counts them by status
    in SQLite instead of streaming every key; with an unplanned unit in the store it still leaves it out."""
    streamed: list[str] = []
    real = grid.RunStore.iter_statuses

    def counting(self: Any, stage: Any) -> Any:
        streamed.append(stage)
        return real(self, stage)

    monkeypatch.setattr(grid.RunStore, "iter_statuses", counting)
    pipeline = _pipeline(tmp_path, 1, limit=5)
    rundir = tmp_path / "run"
    assert api.run(pipeline, rundir).status == "complete"
    assert streamed.count("judge") == 1  # the judge stage's status read; none by the export
    planned = 5 * 3 * 3 * 5 * 3
    meta = json.loads((rundir / "meta.json").read_text(encoding="utf-8"))
    assert meta["units"]["judge"] == {"planned": planned, "done": planned, "failed": 0}
    with sqlite3.connect(rundir / "run.sqlite") as db:  # a unit of another judge, and one failed unit
        db.execute(
            "INSERT INTO units (stage, record_id, difficulty, generator, generator_trial, judge, condition, "
            "variant, temperature, trial, status, result, error, attempts, first_started_at, finished_at) "
            "SELECT stage, record_id, difficulty, generator, generator_trial, "
            "'baseline/other', condition, variant, temperature, trial, status, result, error, attempts, "
            "first_started_at, finished_at FROM units WHERE stage='judge' LIMIT 1"
        )
        db.execute(
            "UPDATE units SET status='failed', result=NULL, error='x' WHERE rowid = "
            "(SELECT rowid FROM units WHERE stage='judge' AND judge='baseline/rule' LIMIT 1)"
        )
        db.execute("DELETE FROM meta WHERE key = 'exported_complete'")
    assert (
        api.run(pipeline, rundir).status == "complete"
    )  # re-runs the failed unit, skips and does not count the other
    meta = json.loads((rundir / "meta.json").read_text(encoding="utf-8"))
    assert meta["units"]["judge"] == {"planned": planned, "done": planned, "failed": 0}
    assert pq.ParquetFile(rundir / "judgments.parquet").metadata.num_rows == planned * 8


def test_a_constant_baseline_is_asked_once_per_condition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """always-1 answers every request of a condition alike: the runner asks it once per condition (in one
    process) and stores that answer for every unit, the same text a per-unit call stores."""
    asked: list[str] = []
    real = baselines.ConstantJudge.__call__

    async def counting(self: Any, request: Any) -> Any:
        asked.append(request.condition)
        return await real(self, request)

    monkeypatch.setattr(baselines.ConstantJudge, "__call__", counting)
    rundir = tmp_path / "run"
    assert api.run(_pipeline(tmp_path, 1, limit=5), rundir).status == "complete"
    assert sorted(asked) == ["swapped_gt", "with_gt", "without_gt"]
    units = RunFolder.open(rundir).units(
        ["condition", "result"], [("judge", "==", "baseline/always-1"), ("status", "==", "done")]
    )
    stored = list(units.itertuples(index=False))
    assert len(stored) == 5 * 3 * 3 * 3  # records x difficulties x generators x conditions
    (text,) = {text for _, text in stored}  # one answer for every unit: the constant one
    answer = json.loads(text)
    assert answer["verdicts"] == {"tool": 1.0, "param": 1.0, "seq": 1.0, "cov": 1.0}
    assert answer["raw_output"] == "baseline/always-1: constant verdict 1"


@pytest.mark.parametrize("judge_class", [baselines.RuleJudge, baselines.CeilingJudge])
def test_a_condition_blind_baseline_is_asked_once_per_prediction_with_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_class: type
) -> None:
    """rule and ceiling never read the GT shown: the runner asks each once per prediction for with_gt,
    without_gt and swapped_gt and stores that answer for all three units; the judgments are those of a
    run that asks per unit (the judge without ``condition_blind``), so the claim itself is checked too."""
    asked: list[str] = []
    real = judge_class.__call__

    async def counting(self: Any, request: Any) -> Any:
        asked.append(request.condition)
        return await real(self, request)

    monkeypatch.setattr(judge_class, "__call__", counting)
    assert api.run(_pipeline(tmp_path / "blind", 1, limit=5), tmp_path / "blind" / "run").status == "complete"
    predictions = 5 * 3 * 3  # records x difficulties x generators
    assert len(asked) == predictions  # one condition each (the first in the record's order), not three
    asked.clear()
    monkeypatch.delattr(judge_class, "condition_blind")
    assert api.run(_pipeline(tmp_path / "each", 1, limit=5), tmp_path / "each" / "run").status == "complete"
    assert sorted(set(asked)) == ["swapped_gt", "with_gt", "without_gt"] and len(asked) == 3 * predictions
    for name in FILES:
        blind = (tmp_path / "blind" / "run" / name).read_bytes()
        each = (tmp_path / "each" / "run" / name).read_bytes()
        assert blind == each, f"{name}: asking once per prediction changed the results"
    stored = []
    for run in ("blind", "each"):  # every field of every answer, raw output included (not exported)
        rows = RunFolder.open(tmp_path / run / "run").units(
            ["record_id", "generator", "judge", "condition", "status", "result", "error"],
            [("stage", "==", "judge")],
        )
        rows = rows.sort_values(["record_id", "generator", "judge", "condition"], kind="stable")
        stored.append([(*row[:5], json.loads(row[5]), row[6]) for row in rows.itertuples(index=False)])
    assert stored[0] == stored[1]


def test_the_small_files_are_written_while_the_judgments_children_work(tmp_path: Path) -> None:
    """``write_judgments``' ``meanwhile`` (predictions and scores parquet) runs on a thread started after the
    children are forked, and inline with one process; the judgments file is the same either way; what it
    raises is raised by ``write_judgments``, which then leaves no file behind."""
    import threading

    raw, args = _judgments_inputs(tmp_path, 3)
    batches = [raw[i : i + 20] for i in range(0, len(raw), 20)]
    ran: list[tuple[int, bool]] = []

    def meanwhile() -> None:
        ran.append((workers, threading.current_thread() is threading.main_thread()))

    written = []
    for workers in (1, 2):
        path = tmp_path / f"j{workers}.parquet"
        export.write_judgments(path, batches, None, *args, chunk=40, workers=workers, meanwhile=meanwhile)
        written.append(path.read_bytes())
    assert ran == [(1, True), (2, False)] and written[0] == written[1]

    def broken() -> None:
        raise OSError("disk full while writing predictions.parquet")

    path = tmp_path / "broken.parquet"
    with pytest.raises(OSError, match="disk full"):
        export.write_judgments(path, batches, None, *args, chunk=40, workers=2, meanwhile=broken)
    assert not path.exists() and not list(tmp_path.glob(".broken.parquet*"))
