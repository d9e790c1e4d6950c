"""Scores and Gate 1 findings a resumed run reads from run.sqlite (``runner/resume_cache.py``): used when
nothing they came from changed, recomputed when the dataset, a prediction, the scoring switches or the code
did, ignored when damaged; and the run folder's files are byte-identical with and without them."""

from __future__ import annotations

import functools
import json
import math
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_runner import make_records, write_pipeline

from agentjudge.commands.run import run_cli
from agentjudge.dataset import validate
from agentjudge.rundir.records import LayoutError, read_records, write_records
from agentjudge.runner import offline, resume_cache
from agentjudge.runner.pipeline import file_digest, forget_digests
from agentjudge.runner.store import RunStore, UnitKey
from agentjudge.runner.work import Dataset, compute_scores
from agentjudge.types import Prediction, Score, ToolSchema

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "data" / "mini" / "records.jsonl"
OUTPUTS = ("predictions.parquet", "scores.parquet", "judgments.parquet")


class Spy:
    """Counts what is computed: predictions scored, Gate 1 passes over records."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scored: list[int] = []
        self.gate1: list[int] = []
        real_scores, real_gate1 = resume_cache.compute_scores, validate.gate1_failures

        def scores(data: Any, predictions: Any, *args: Any, **kwargs: Any) -> Any:
            self.scored.append(len(predictions))
            return real_scores(data, predictions, *args, **kwargs)

        def gate1(records: Any) -> Any:
            self.gate1.append(len(records))
            return real_gate1(records)

        real_chunks = offline.scores_in_chunks

        def chunks(data: Any, predictions: Any, *args: Any, **kwargs: Any) -> Any:  # the grid's scorer
            self.scored.append(len(predictions))
            return real_chunks(data, predictions, *args, **kwargs)

        monkeypatch.setattr(resume_cache, "compute_scores", scores)
        monkeypatch.setattr(offline, "scores_in_chunks", chunks)
        monkeypatch.setattr(validate, "gate1_failures", gate1)

    def reset(self) -> None:
        self.scored.clear()
        self.gate1.clear()


def _pipeline(folder: Path, **fields: Any) -> Path:
    """Six records of the mini dataset (executable environments: state_match is computed), two
    generators, three baseline judges (the oracle reads the scores), both scoring modes."""
    folder.mkdir(exist_ok=True)
    shutil.copy(MINI, folder / "mini.jsonl")
    defaults: dict[str, Any] = {
        "dataset": "mini.jsonl",
        "limit": 6,
        "judges": ["baseline/rule", "baseline/ceiling", "baseline/always-0.5"],
        "conditions": ["with_gt", "without_gt"],
    }
    return write_pipeline(folder, **{**defaults, **fields})


def _fail(store: Path, stage: str, n: int) -> None:
    """``n`` units of ``stage`` left as a failed call leaves them (the bench's retry set-up)."""
    with sqlite3.connect(store) as db:
        rowids = [r[0] for r in db.execute("SELECT rowid FROM units WHERE stage=? LIMIT ?", (stage, n))]
        db.executemany(
            "UPDATE units SET status='failed', result=NULL, error='server_error after 5 attempt(s)' "
            "WHERE rowid=?",
            [(r,) for r in rowids],
        )
        db.execute("UPDATE meta SET value = value + 1 WHERE key = 'store_version'")
        db.execute("DELETE FROM meta WHERE key = 'exported_complete'")


def _outputs(rundir: Path) -> dict[str, bytes]:
    return {name: (rundir / name).read_bytes() for name in OUTPUTS}


def test_retry_reads_scores_and_gate1_and_writes_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = _pipeline(tmp_path / "p")
    spy = Spy(monkeypatch)
    assert run_cli(pipeline, tmp_path / "fresh") == 0  # the reference: nothing cached anywhere
    assert spy.scored == [24] and spy.gate1 == [6]  # 6 records x 2 difficulties x 2 generators
    assert run_cli(pipeline, tmp_path / "run") == 0
    spy.reset()
    _fail(tmp_path / "run" / "run.sqlite", "judge", 5)
    assert run_cli(pipeline, tmp_path / "run") == 0  # retries the 5 judge units
    assert spy.scored == [0] and spy.gate1 == []  # every score and Gate 1 read from the store
    assert _outputs(tmp_path / "run") == _outputs(tmp_path / "fresh")
    # failed predictions run again; a simulated generator answers as before, so their digests and
    # scores are found again
    _fail(tmp_path / "run" / "run.sqlite", "predict", 3)
    spy.reset()
    assert run_cli(pipeline, tmp_path / "run") == 0
    assert spy.scored == [0] and spy.gate1 == []
    assert _outputs(tmp_path / "run") == _outputs(tmp_path / "fresh")


def _last_line(probe: str, pipeline: Path, cwd: Path) -> str:
    """The last line ``python -c probe PIPELINE`` prints, in a fresh process (pandas not yet imported)."""
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(pipeline)], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout.splitlines()[-1]


def test_the_run_command_writes_the_same_bytes_without_importing_pandas(tmp_path: Path) -> None:
    """``agentjudge run`` (a process of its own) exports with pandas kept out (``fastpaths/lean_export.py``);
    the files equal those of an in-process run, where pyarrow imported pandas. numpy is kept out too (the
    installed pyarrow does not require it), and a table this small is built without pyarrow.compute
    (``export.SMALL_TABLE_ROWS``)."""
    pipeline = _pipeline(tmp_path / "p")
    assert run_cli(pipeline, tmp_path / "inproc") == 0
    assert "pandas" in sys.modules  # this test process has it: the in-process export ran with it
    probe = (  # `agentjudge run` as its console script runs it, saying at exit which modules were loaded
        "import atexit, runpy, sys\n"
        "names = ('pyarrow', 'pandas', 'pyarrow.compute', 'numpy')\n"
        "atexit.register(lambda: print('LOADED', *(name in sys.modules for name in names)))\n"
        "sys.argv = ['agentjudge', 'run', sys.argv[1], '--out', 'cli']\n"
        "runpy.run_module('agentjudge', run_name='__main__')\n"
    )
    assert _last_line(probe, pipeline, tmp_path) == "LOADED True False False False"
    assert _outputs(tmp_path / "cli") == _outputs(tmp_path / "inproc")


def _store_with_predictions(tmp_path: Path) -> tuple[Path, Path, Dataset, dict[UnitKey, Prediction]]:
    pipeline = _pipeline(tmp_path / "p", judges=["baseline/rule"], conditions=["with_gt"])
    assert run_cli(pipeline, tmp_path / "run") == 0
    store = tmp_path / "run" / "run.sqlite"
    db = RunStore(store)
    predictions = {r.key: Prediction.model_validate(r.result) for r in db.iter_units("predict")}
    db.close()
    dataset = tmp_path / "p" / "mini.jsonl"
    return store, dataset, _dataset(dataset), predictions


def _dataset(path: Path) -> Dataset:
    """The six records as ``grid.load_dataset`` gives them: with the file's sha256."""
    forget_digests()
    data = Dataset(read_records(path, limit=6))
    data.sha256 = file_digest(path)
    return data


def _score_rows(store: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT * FROM score_cache ORDER BY 1, 2, 3, 4").fetchall()


def test_a_changed_prediction_mode_switch_dataset_or_code_is_scored_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, dataset, data, predictions = _store_with_predictions(tmp_path)
    spy = Spy(monkeypatch)
    both: list[Any] = ["paper", "strict"]
    truth = compute_scores(data, predictions, both, False)
    assert resume_cache.cached_scores(store, data, predictions, both, False) == truth
    assert spy.scored == [0]
    assert len(_score_rows(store)) == len(predictions)  # one row per prediction, both modes in it

    # one prediction changed (a retried unit answered differently): only it is scored again
    key = sorted(predictions)[4]
    assert predictions[key].calls
    changed = dict(predictions)
    changed[key] = predictions[key].model_copy(update={"calls": predictions[key].calls[:-1]})
    spy.reset()
    got = resume_cache.cached_scores(store, data, changed, both, False)
    assert spy.scored == [1] and got == compute_scores(data, changed, both, False)
    assert got != truth  # one call fewer changes this prediction's scores (checked, not assumed)
    spy.reset()  # and back: the row now holds the changed prediction's digest, so it is scored again
    assert resume_cache.cached_scores(store, data, predictions, both, False) == truth
    assert spy.scored == [1]

    # the scoring switches: a mode the cache holds is read; lenient (another context) and a mode it lacks
    # are computed (the rows are replaced, so switching back computes again)
    spy.reset()
    strict_only: list[Any] = ["strict"]
    got = resume_cache.cached_scores(store, data, predictions, strict_only, False)
    assert spy.scored == [0] and got == compute_scores(data, predictions, strict_only, False)
    n = len(predictions)
    for lenient, scored in ((True, n), (True, 0), (False, n)):
        spy.reset()
        got = resume_cache.cached_scores(store, data, predictions, both, lenient)
        assert got == compute_scores(data, predictions, both, lenient)
        assert spy.scored == [scored], lenient
    paper_only: list[Any] = ["paper"]
    resume_cache.cached_scores(store, data, predictions, paper_only, True)  # rows: paper only
    spy.reset()
    assert resume_cache.cached_scores(store, data, predictions, both, True) == compute_scores(
        data, predictions, both, True
    )
    assert spy.scored == [n]  # strict was not cached

    # the dataset edited: record 0 loses its last GT step; its scores change and are computed, never read
    records = read_records(dataset)
    records[0] = records[0].model_copy(update={"gt": records[0].gt[:-1]})
    write_records(dataset, records)
    edited = _dataset(dataset)
    spy.reset()
    got = resume_cache.cached_scores(store, edited, predictions, both, False)
    assert spy.scored == [len(predictions)] and got == compute_scores(edited, predictions, both, False)
    assert got != truth and all(got[k] == truth[k] for k in truth if k[0].rpartition(":")[0] != records[0].id)

    # another code version (an edit of the package, an upgrade): everything again
    monkeypatch.setattr(resume_cache, "code_fingerprint", functools.cache(lambda: "another version"))
    spy.reset()
    resume_cache.cached_scores(store, edited, predictions, both, False)
    assert spy.scored == [len(predictions)]


def test_a_run_digests_its_predictions_from_their_stored_text_and_a_caller_with_objects_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grid names each prediction in the score cache by the hash of the text it read it from
    (``stored_digest``), without writing the prediction out again; ``prediction_digest`` of the prediction
    object is the same value, so either caller finds the other's rows."""
    calls: list[int] = []
    real = resume_cache.prediction_digest
    monkeypatch.setattr(resume_cache, "prediction_digest", lambda p: calls.append(1) or real(p))
    store, _, data, predictions = _store_with_predictions(tmp_path)  # a whole run, scores cached
    assert calls == []  # the run digested every prediction from its stored text
    db = RunStore(store)
    texts = {key: text for key, status, text, _, _ in db.iter_raw("predict") if status == "done"}
    db.close()
    assert set(texts) == set(predictions) and len(texts) == 24
    for key, text in texts.items():
        assert resume_cache.stored_digest(text or "") == real(predictions[key])
    spy = Spy(monkeypatch)
    both: list[Any] = ["paper", "strict"]
    assert resume_cache.cached_scores(store, data, predictions, both, False) == compute_scores(
        data, predictions, both, False
    )
    assert spy.scored == [0] and len(calls) == len(predictions)  # every row found by the objects' digests


def test_code_changed_since_the_run_started_neither_reads_nor_writes_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fingerprint is taken at start-up; the scorer may run hours later. If the package's files
    changed in between, results of the new code must not be filed under the old fingerprint."""
    store, _, data, predictions = _store_with_predictions(tmp_path)
    both: list[Any] = ["paper", "strict"]
    files = {"version": "as at start-up"}
    fingerprint = functools.cache(lambda: files["version"])
    monkeypatch.setattr(resume_cache, "code_fingerprint", fingerprint)
    assert fingerprint() == "as at start-up"  # taken when the run started
    resume_cache.cached_scores(store, data, predictions, both, False)  # rows under "as at start-up"
    before = _score_rows(store)
    assert len(before) == len(predictions)
    files["version"] = "edited since"  # a pull or branch switch during a long predict stage
    spy = Spy(monkeypatch)
    got = resume_cache.cached_scores(store, data, predictions, both, False)
    assert spy.scored == [len(predictions)]  # nothing read, although every row matches the start-up code
    assert got == compute_scores(data, predictions, both, False)
    assert _score_rows(store) == before  # and nothing written
    check = resume_cache.gate1_check(data.records, data.sha256, store)
    resume_cache.save_gate1(store, check)
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT context FROM gate1_cache").fetchone()[0] != check.context


def test_force_new_computes_gate1_and_keeps_it_in_the_new_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = _pipeline(tmp_path / "p")
    assert run_cli(pipeline, tmp_path / "run") == 0
    spy = Spy(monkeypatch)
    assert run_cli(pipeline, tmp_path / "run", force_new=True) == 0
    assert spy.gate1 == [6]  # starting over does not read the archived store's Gate 1 result
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        assert db.execute("SELECT count(*) FROM gate1_cache").fetchone()[0] == 1


def test_gate1_result_is_keyed_by_the_format_checks_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jsonschema checks more formats when optional packages are installed: a Gate 1 pass computed
    without them is not reused with them."""
    from jsonschema import Draft7Validator

    store, _, data, _ = _store_with_predictions(tmp_path)
    check = resume_cache.gate1_check(data.records, data.sha256, store)
    assert check.cached  # the run kept it
    checkers = dict(Draft7Validator.FORMAT_CHECKER.checkers)
    checkers["uri-reference"] = checkers.get("uri-reference", (lambda _: True, ()))
    monkeypatch.setattr(
        Draft7Validator.FORMAT_CHECKER, "checkers", {**checkers, "new-format": checkers["date"]}
    )
    assert resume_cache.gate1_check(data.records, data.sha256, store).cached is False


def test_run_invoked_in_process_leaves_pyarrows_pandas_support_intact(tmp_path: Path) -> None:
    """Only the console script keeps pandas out of the export: ``run`` invoked through ``cli.app`` in a
    process that goes on (CliRunner, a notebook) must not leave pyarrow believing pandas is missing."""
    pipeline = _pipeline(tmp_path / "p")
    probe = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from agentjudge.commands import app\n"
        "result = CliRunner().invoke(app, ['run', sys.argv[1], '--out', 'inproc'])\n"
        "assert result.exit_code == 0, result.output\n"
        "import pandas as pd, pyarrow as pa\n"
        "print('NULLS', pa.array(pd.Series([1.0, None])).null_count)\n"
    )
    assert _last_line(probe, pipeline, tmp_path) == "NULLS 1"


def test_a_damaged_score_row_is_recomputed_never_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, dataset, data, predictions = _store_with_predictions(tmp_path)
    both: list[Any] = ["paper", "strict"]
    truth = compute_scores(data, predictions, both, False)
    rows = _score_rows(store)
    target = next(r for r in rows if json.loads(r[5])["paper"]["p_tool"] < 1.0)  # not a perfect score
    scores = json.loads(target[5])
    scores["paper"]["p_tool"] = 1.0
    with sqlite3.connect(store) as db:
        db.execute(
            "UPDATE score_cache SET scores = ? WHERE record_id = ? AND generator = ?",
            (json.dumps(scores), target[0], target[1]),
        )
        other = next(r for r in rows if r[0] != target[0])
        db.execute(
            "UPDATE score_cache SET scores = '{not json' WHERE record_id = ? AND generator = ?",
            (other[0], other[1]),
        )
    spy = Spy(monkeypatch)
    assert resume_cache.cached_scores(store, data, predictions, both, False) == truth
    assert spy.scored == [2]  # the forged row's prediction and the unparsable one's
    spy.reset()
    assert resume_cache.cached_scores(store, data, predictions, both, False) == truth
    assert spy.scored == [0]  # both replaced by what was computed

    # a store whose cache table is gone (older store) or unreadable: computed, never an error
    with sqlite3.connect(store) as db:
        db.execute("DROP TABLE score_cache")
    spy.reset()
    assert resume_cache.cached_scores(store, data, predictions, both, False) == truth
    assert spy.scored == [len(predictions)]
    spy.reset()
    assert resume_cache.cached_scores(tmp_path / "nowhere.sqlite", data, predictions, both, False)
    assert spy.scored == [len(predictions)] and not (tmp_path / "nowhere.sqlite").exists()


def _gate1_dataset(folder: Path) -> Path:
    """The test_runner grid with record test-0001 failing Gate 1 (a tool schema that is no schema)."""
    pipeline = write_pipeline(folder, judges=["baseline/rule"], conditions=["with_gt"])
    records = make_records()
    bad_tool = ToolSchema(name="broken", description="b", parameters={"type": "object", "required": 5})
    records[1] = records[1].model_copy(update={"tools": [*records[1].tools, bad_tool]})
    write_records(folder / "records.jsonl", records)
    return pipeline


def test_gate1_findings_are_reused_only_for_the_same_dataset_and_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    pipeline = _gate1_dataset(folder)
    spy = Spy(monkeypatch)
    assert run_cli(pipeline, tmp_path / "run") == 2
    assert not (tmp_path / "run").exists()  # refused: nothing written, the findings included
    assert run_cli(pipeline, tmp_path / "run", skip_invalid=True) == 0
    assert spy.gate1 == [4, 4]
    spy.reset()
    capsys.readouterr()
    assert run_cli(pipeline, tmp_path / "run", skip_invalid=True) == 0  # no-op: the dataset is not read
    _fail(tmp_path / "run" / "run.sqlite", "judge", 2)
    assert run_cli(pipeline, tmp_path / "run", skip_invalid=True) == 0
    assert spy.gate1 == []  # read from the store
    assert "--skip-invalid: 1 record(s) failing Gate 1 left out" in capsys.readouterr().out
    # without the flag the cached findings refuse the dataset as the computed ones did
    _fail(tmp_path / "run" / "run.sqlite", "judge", 1)
    assert run_cli(pipeline, tmp_path / "run") == 2
    assert "record test-0001: gate1:schema_invalid" in capsys.readouterr().err and spy.gate1 == []

    records = read_records(folder / "records.jsonl")
    store = tmp_path / "run" / "run.sqlite"
    sha = file_digest(folder / "records.jsonl")
    check = resume_cache.gate1_check(records, sha, store)
    assert check.cached and list(check.failing) == ["test-0001"]
    assert not resume_cache.gate1_check(records[:3], sha, store).cached  # other records
    monkeypatch.setattr(resume_cache, "code_fingerprint", lambda: "another version")
    assert not resume_cache.gate1_check(records, sha, store).cached
    monkeypatch.undo()

    # a forged row (the failing record cleared without its digest) or garbage is not trusted
    with sqlite3.connect(store) as db:
        db.execute("UPDATE gate1_cache SET failing = '{}'")
    again = resume_cache.gate1_check(records, sha, store)
    assert not again.cached and list(again.failing) == ["test-0001"]
    with sqlite3.connect(store) as db:
        context, ids = db.execute("SELECT context, records FROM gate1_cache").fetchone()
        junk = '{"test-0001": 5}'
        db.execute(
            "UPDATE gate1_cache SET failing = ?, digest = ?", (junk, resume_cache._sha(context, ids, junk))
        )
    again = resume_cache.gate1_check(records, sha, store)
    assert not again.cached and list(again.failing) == ["test-0001"]

    # the dataset edited: the failing record repaired, checked again and run
    write_records(folder / "records.jsonl", make_records())
    forget_digests()
    fixed = resume_cache.gate1_check(make_records(), file_digest(folder / "records.jsonl"), store)
    assert not fixed.cached and fixed.failing == {}


def test_read_records_streams_and_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_records(path, make_records())
    lines = path.read_bytes().splitlines(keepends=True)
    # after the second record, 1 MB of blank lines, then bytes that are not UTF-8: the reader decodes
    # ahead by a few KB at most, so with limit=2 it stops long before them
    padding = b"\n" * (1 << 20)
    path.write_bytes(b"".join(lines[:2]) + padding + b"\xff\xfe not utf-8\n" + b"".join(lines[2:]))
    assert [r.id for r in read_records(path, limit=2)] == ["test-0000", "test-0001"]
    # the error names the line and column (not a byte position within the reader's decode chunk)
    with pytest.raises(LayoutError, match=rf"line {2 + (1 << 20) + 1}, column 1: not UTF-8"):
        read_records(path)
    # a U+2028 inside a JSON string is text (str.splitlines would cut the line there)
    write_records(path, make_records()[:1])
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["system_prompt"] = "first\u2028second"
    path.write_text(json.dumps(raw, ensure_ascii=False) + "\n", encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")
    assert read_records(path)[0].system_prompt == "first\u2028second"


def test_a_score_json_cannot_carry_is_not_cached(tmp_path: Path) -> None:
    """JSON has no NaN (pydantic writes null): such a score would come back as another value, so it is
    left out of the cache rather than stored wrong."""
    store, dataset, data, predictions = _store_with_predictions(tmp_path)
    key = sorted(predictions)[0]
    score_key = (key.record_id, key.generator, key.generator_trial)
    both: list[Any] = ["paper", "strict"]
    scores = compute_scores(data, {key: predictions[key]}, both, False)
    odd = {m: s.model_copy(update={"writes_done": math.nan}) for m, s in scores[score_key].items()}
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM score_cache")
    context = resume_cache.score_context(data.sha256, False)
    digests = {score_key: resume_cache.prediction_digest(predictions[key])}
    resume_cache._save_scores(store, context, digests, {score_key: odd})
    assert _score_rows(store) == []
    resume_cache._save_scores(store, context, digests, scores)
    assert resume_cache._load_scores(store, context, digests, both) == scores


def test_finite_floats_come_back_bit_for_bit() -> None:
    """What makes a cached score equal to a computed one: pydantic's JSON gives back every finite double
    exactly (random bit patterns: subnormals, huge and tiny exponents, both signs)."""
    rng = random.Random(7)
    doubles = [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(140_000)]
    doubles = [d for d in doubles if math.isfinite(d)] + [0.0, -0.0, 5e-324, 1 / 3, 0.1 + 0.2]
    fields = resume_cache._FLOAT_FIELDS
    zero = dict.fromkeys(("p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag"), 0.0)
    base = Score(record_id="r:easy", generator="g", trial=0, scoring_mode="paper", **zero)
    for start in range(0, len(doubles) - len(fields), len(fields)):
        values = dict(zip(fields, doubles[start : start + len(fields)], strict=True))
        scores: dict[Any, Score] = {"paper": base.model_copy(update=values)}
        assert resume_cache._json_exact(scores["paper"])
        back = resume_cache._SCORES.validate_json(resume_cache._SCORES.dump_json(scores))
        got = [struct.pack("<d", getattr(back["paper"], f)) for f in fields]
        assert got == [struct.pack("<d", values[f]) for f in fields]


def test_a_run_folder_whose_name_looks_like_a_uri_keeps_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The store is opened by URI (read-only / never created): '?', '#' and '%' in the path are escaped."""
    pipeline = _pipeline(tmp_path / "p", judges=["baseline/rule"], conditions=["with_gt"])
    rundir = tmp_path / "odd ?mode=ro #1 %20"
    assert run_cli(pipeline, rundir) == 0
    spy = Spy(monkeypatch)
    _fail(rundir / "run.sqlite", "judge", 2)
    assert run_cli(pipeline, rundir) == 0
    assert spy.scored == [0] and spy.gate1 == []
    capsys.readouterr()
    assert run_cli(pipeline, rundir) == 0  # and the no-op check reads the store too
    assert "nothing to do" in capsys.readouterr().out
