"""RUNDIR/*.parquet and meta.json: the run's results in the columns docs/formats.md fixes.

Everything is rebuilt from run.sqlite (never from what happens to be in memory), rows are sorted by their
coordinates and every file is written to a temporary name and renamed, so a resumed run and an
uninterrupted one produce identical files and a reader never sees half a file.

A file whose inputs did not change is not rewritten (``current_files``): predictions.parquet and
scores.parquet depend only on the stored predictions, the configuration, the dataset and the code, which
retrying failed judge units leaves as they were. Each written file's ``stamp`` (a digest of those inputs)
is kept in the store's meta with the sha256 of the file written; a later export keeps the file only when
the stamp is the same and the file still holds those bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from functools import partial
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentjudge import strict_json
from agentjudge.atomic import replacing, write_text
from agentjudge.memo import remembered
from agentjudge.rundir.columns import (
    JUDGMENT_COLUMNS,
    JUDGMENT_OPTIONAL_COLUMNS,
    PREDICTION_COLUMNS,
    SCORE_COLUMNS,
)
from agentjudge.rundir.predictions import trajectory_fields
from agentjudge.runner.pipeline import sha256_file
from agentjudge.runner.store import UnitKey, UnitRow, temperature_value
from agentjudge.runner.work import _FIELD, Dataset, ScoreKey
from agentjudge.scoring.scorer import score_row
from agentjudge.types import (
    METRICS,
    TRAJECTORY_CONDITIONS,
    ModelSettings,
    Prediction,
    PromptVariant,
    Score,
    ScoringMode,
)

_ARROW_TYPES: dict[str, pa.DataType] = {
    **dict.fromkeys(
        ("record_id", "base_id", "domain", "topology", "difficulty", "generator", "judge", "condition",
         "prompt_format", "default_mode", "metric", "scoring_mode", "rationale", "judge_error", "calls_json",
         "raw_output", "error", "source", "generation", "stop_reason", "trajectory_json"),
        pa.string(),
    ),
    **dict.fromkeys(
        ("trial", "generator_trial", "prompt_tokens", "completion_tokens", "turns", "cached_prompt_tokens"),
        pa.int64(),
    ),
    **dict.fromkeys(
        ("cost_usd", "temperature", "reference", "verdict", "p_tool", "p_param", "p_seq", "p_cov", "p_value",
         "p_seq_dag", "writes_done"),
        pa.float64(),
    ),
    **dict.fromkeys(
        ("simulated", "cached", "cot", "parse_ok", "state_match", "structured_output"), pa.bool_()
    ),
}  # fmt: skip


def _schema(columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([(c, _ARROW_TYPES[c]) for c in columns])


PREDICTION_SCHEMA = _schema(PREDICTION_COLUMNS)
SCORE_SCHEMA = _schema(SCORE_COLUMNS)
JUDGMENT_SCHEMA = _schema(JUDGMENT_COLUMNS + JUDGMENT_OPTIONAL_COLUMNS)

EXPORT_ROW_GROUP = 20_000  # judge units per row group of judgments.parquet
# Up to this many rows, judgment_table repeats a unit's constant columns in Python rather than with Arrow's
# ``take``: ``take`` needs pyarrow.compute, whose import (~0.1 s, and numpy.ma's for the index array) costs
# more than repeating ~45 ns per value; past ~100,000 rows (18 such columns) ``take`` wins. The values, so
# the file's bytes, are the same either way (tests/test_export_small.py).
SMALL_TABLE_ROWS = 50_000
_DECODED_HELD = 4_096  # distinct result texts remembered while exporting

# Columns that are the same for every metric/mode row of one judge unit, in schema order.
_CONSTANT_COLUMNS = JUDGMENT_SCHEMA.names[:14]


def write_table(path: Path, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    table = pa.Table.from_pylist(rows, schema=schema)
    with replacing(path) as tmp:
        pq.write_table(table, tmp)


def write_json(path: Path, data: Any) -> None:
    write_text(path, strict_json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def _prediction_error(unit: UnitRow, pred: Prediction | None) -> str | None:
    """A failed unit's error; for a done one, why an imported source has no output for it (else None)."""
    if unit.status == "done":
        return pred.absent if pred is not None else None
    return unit.error or (pred.error if pred else None)


def prediction_rows(units: dict[UnitKey, UnitRow], simulated: dict[str, bool]) -> list[dict[str, Any]]:
    """One row per predict unit in the store, failed ones included (``error`` set, ``calls_json`` null)."""
    rows = []
    for key in sorted(units):
        unit = units[key]
        pred = Prediction.model_validate(unit.result) if unit.result is not None else None
        calls = None
        if unit.status == "done" and pred is not None and pred.calls is not None:
            calls = strict_json.dumps([c.model_dump(mode="json") for c in pred.calls], sort_keys=True)
        usage = pred.usage if pred is not None else None
        rows.append(
            {
                "record_id": key.record_id,
                "base_id": key.record_id.rpartition(":")[0],
                "difficulty": key.difficulty,
                "generator": key.generator,
                "trial": key.generator_trial,
                "calls_json": calls,
                "raw_output": pred.raw_output if pred else "",
                "error": _prediction_error(unit, pred),
                "simulated": bool(pred.simulated) if pred else simulated.get(key.generator, False),
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
                "cost_usd": usage.known_cost_usd if usage else 0.0,  # null: some call had no known price
                "cached": usage.cached if usage else False,
                **trajectory_fields(pred),
                "cached_prompt_tokens": usage.cached_prompt_tokens if usage else 0,
            }
        )
    return rows


def score_rows(data: Dataset, scores: dict[ScoreKey, dict[ScoringMode, Score]]) -> list[dict[str, Any]]:
    rows = []
    for record_id, generator, trial in sorted(scores):
        record, difficulty = data.locate(record_id)
        for _mode, s in sorted(scores[(record_id, generator, trial)].items()):
            rows.append(score_row(record, difficulty, s))
    return rows


_UNIT_COLUMNS = (*_CONSTANT_COLUMNS, "parse_ok", "source", "judge_error", "structured_output")
_ROW_COLUMNS = ("metric", "reference", "verdict", "scoring_mode", "rationale")


def judgment_table(
    data: Dataset,
    units: list[UnitRow],
    scores: dict[ScoreKey, dict[ScoringMode, Score]],
    variants: dict[str, PromptVariant],
    judges: dict[str, ModelSettings],
    unit_rows: list[int] | None = None,
    modes: tuple[ScoringMode, ...] = ("paper", "strict"),
) -> pa.Table:
    """Long form: judge unit x metric x scoring mode. A failed call or unparsed metric has a null verdict.
    A record without GT (``Record.gt_known`` false) has no scores: its rows carry a null ``reference`` in
    each of the run's scoring ``modes`` (and, under a trajectory condition, the outcome verdict with a null
    reference too): the verdicts are kept, and nothing is put where no reference exists.

    ``temperature`` is the temperature the judge was run at: the grid's value, or the judge's own
    ``ModelSettings.temperature`` when the grid says null; NaN only when neither sets one (provider default).
    Built column-wise from the stored JSON (written by ``JudgeResult.model_dump``): a paper grid has
    millions of rows, and validating a pydantic model per unit would dominate the export. The columns
    that are the same for every row of a unit are converted to Arrow once per unit and repeated by Arrow
    (``take``): converting each row's Python values was most of the export's time. A table of at most
    ``SMALL_TABLE_ROWS`` rows repeats them in Python instead (cheaper than importing pyarrow.compute).
    The per-row columns are extended a unit at a time, not appended row by row: the references once per
    prediction, the verdicts and rationales once per decoded result (the decoder hands out one object per
    distinct text: the constant baselines' one result, a condition-blind judge's per prediction): ~22 %
    less time per unit. ``tests/test_judgment_rows.py`` holds the table to a row-by-row reading.
    ``unit_rows`` gets the rows of each unit (for cutting row groups at unit boundaries).
    """
    unit_values: list[tuple[Any, ...]] = []  # per unit, its _UNIT_COLUMNS' values (columns made at the end)
    per_row: dict[str, list[Any]] = {name: [] for name in _ROW_COLUMNS}
    repeats: list[int] = []
    fields = {m: _FIELD[m] for m in METRICS}
    metric_col, reference_col, verdict_col = per_row["metric"], per_row["reference"], per_row["verdict"]
    mode_col, rationale_col = per_row["scoring_mode"], per_row["rationale"]
    last_scores: dict[ScoringMode, Score] | None = None
    refs: tuple[float | None, ...] = ()
    outcome_refs: tuple[float | None, ...] | None = None
    unit_modes: tuple[ScoringMode, ...] = ()
    shape: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    shape_outcome = shape
    # (id of a decoded result, ok, metrics, modes) -> its rows' verdicts and rationales; the key's result
    # is alive while this runs (held by `units`), so its id is not reused
    row_values: dict[tuple[Any, ...], tuple[tuple[float | None, ...], tuple[str, ...]]] = {}
    for unit in units:
        key = unit.key
        mode_scores = scores.get((key.record_id, key.generator, key.generator_trial))
        if mode_scores is None:
            known = data.by_base.get(key.record_id.rpartition(":")[0])
            if known is None or known.gt_known:  # the prediction behind it is gone: nothing to compare to
                continue
            mode_scores = _NO_REFERENCE  # a record without GT: its verdicts kept, every reference null
        record, difficulty = data.locate(key.record_id)
        result: dict[str, Any] = unit.result or _NO_RESULT
        ok = unit.status == "done" and bool(result)
        rationales = result.get("rationales") or {}
        error = None if ok else (unit.error or result.get("error") or "failed")
        parse_ok = bool(ok and result.get("parse_ok"))
        variant = variants[key.variant]
        temp = temperature_value(key.temperature)
        if temp is None and key.judge in judges:
            temp = judges[key.judge].temperature
        temperature = math.nan if temp is None else float(temp)
        values = (
            key.record_id,
            record.id,
            record.domain,
            record.topology,
            difficulty,
            key.generator,
            key.generator_trial,
            key.judge,
            key.condition,
            variant.prompt_format,
            variant.cot,
            variant.default_mode,
            temperature,
            key.trial,
            parse_ok,
            record.source,
            error,
            rationales.get("_structured_output") == "1",
        )
        unit_values.append(values)
        if mode_scores is not last_scores:  # a prediction's judge units are adjacent in coordinate order
            last_scores = mode_scores
            if mode_scores is _NO_REFERENCE:  # a record without GT: every reference null
                unit_modes = tuple(sorted(modes))
                refs = (None,) * (len(METRICS) * len(unit_modes))
                outcome_refs = (None,) * len(unit_modes)
            else:
                unit_modes = tuple(sorted(mode_scores))
                state = mode_scores[unit_modes[0]].state_match
                refs = tuple(
                    float(getattr(mode_scores[mode], fields[m])) for m in METRICS for mode in unit_modes
                )
                # trajectory conditions: a fifth row per mode, the outcome verdict against state_match
                outcome_refs = (float(bool(state)),) * len(unit_modes) if state is not None else None
            shape, shape_outcome = _shape(METRICS, unit_modes), _shape((*METRICS, "outcome"), unit_modes)
        with_outcome = outcome_refs is not None and key.condition in TRAJECTORY_CONDITIONS
        metrics, (metric_names, mode_names) = (
            ((*METRICS, "outcome"), shape_outcome) if with_outcome else (METRICS, shape)
        )
        repeats.append(len(metric_names))
        metric_col.extend(metric_names)
        mode_col.extend(mode_names)
        reference_col.extend(refs)
        if with_outcome:
            reference_col.extend(outcome_refs)  # type: ignore[arg-type]
        # a unit's verdicts and rationales in row order, worked out once per decoded result (the constant
        # baselines repeat one result; condition-blind ones one per prediction)
        verdict_rows, rationale_rows = remembered(
            row_values,
            (id(result), ok, metrics, unit_modes),
            _DECODED_HELD,
            partial(_row_values, result, ok, metrics, unit_modes),
        )
        verdict_col.extend(verdict_rows)
        rationale_col.extend(rationale_rows)
    if unit_rows is not None:
        unit_rows.extend(repeats)
    transposed = zip(*unit_values, strict=True) if unit_values else ([] for _ in _UNIT_COLUMNS)
    per_unit = dict(zip(_UNIT_COLUMNS, map(list, transposed), strict=True))
    if sum(repeats) <= SMALL_TABLE_ROWS:
        columns = {
            name: pa.array(
                list(chain.from_iterable(map(repeat, values, repeats))), JUDGMENT_SCHEMA.field(name).type
            )
            for name, values in per_unit.items()
        }
    else:
        # Python ints, not numpy: the export runs without numpy (fastpaths/lean_export.py)
        each_row = pa.array(list(chain.from_iterable(map(repeat, range(len(repeats)), repeats))), pa.int64())
        columns = {
            name: pa.array(values, type=JUDGMENT_SCHEMA.field(name).type).take(each_row)
            for name, values in per_unit.items()
        }
    columns.update(
        (name, pa.array(values, type=JUDGMENT_SCHEMA.field(name).type)) for name, values in per_row.items()
    )
    return pa.Table.from_arrays([columns[name] for name in JUDGMENT_SCHEMA.names], schema=JUDGMENT_SCHEMA)


_NO_RESULT: dict[str, Any] = {}
_NO_REFERENCE: dict[ScoringMode, Score] = {}  # the scores of a record without GT (identity-compared)


def _shape(metrics: tuple[str, ...], modes: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The metric and scoring-mode columns of a unit's rows: every mode of a metric, metric by metric."""
    return tuple(m for m in metrics for _ in modes), modes * len(metrics)


def _row_values(
    result: dict[str, Any], ok: bool, metrics: tuple[str, ...], modes: tuple[str, ...]
) -> tuple[tuple[float | None, ...], tuple[str, ...]]:
    """A unit's verdicts and rationales in the row order of ``_shape``: a failed or empty result has no
    verdicts; a mode without verdicts of its own takes the result's (only oracles have per-mode ones)."""
    verdicts = result.get("verdicts") or {}
    mode_verdicts = result.get("mode_verdicts") or {}
    rationales = result.get("rationales") or {}
    rows: list[float | None] = []
    for metric in metrics:
        for mode in modes:
            if not ok:
                verdict = None
            elif metric == "outcome":
                verdict = result.get("outcome")
            else:
                verdict = mode_verdicts.get(mode, verdicts).get(metric)
            rows.append(None if verdict is None else float(verdict))
    return tuple(rows), tuple(rationales.get(m, "") for m in metrics for _ in modes)


class _Meanwhile:
    """``work`` on a thread while this process waits for the export's children (their tables arrive
    pickled; the wait releases the interpreter lock), or inline: at most once either way. ``join`` waits
    for it and raises what it raised. The thread starts only after the children are forked (``in_chunks``'
    ``forked``): a thread running across a fork could leave a lock held in a child."""

    def __init__(self, work: Callable[[], None] | None) -> None:
        self.work = work
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        work, self.work = self.work, None
        if work is None:
            return
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to join, which raises it in the caller
            self.error = exc

    def start(self) -> None:
        if self.work is not None and self.thread is None:
            self.thread = threading.Thread(target=self.run, name="agentjudge-export", daemon=False)
            self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()
        else:
            self.run()  # never started (no child was forked): here, now
        if self.error is not None:
            error, self.error = self.error, None
            raise error


def write_judgments(
    path: Path,
    batches: Iterable[Any],
    wanted: set[UnitKey] | None,
    data: Dataset,
    scores: dict[ScoreKey, dict[ScoringMode, Score]],
    variants: dict[str, PromptVariant],
    judges: dict[str, ModelSettings],
    chunk: int = EXPORT_ROW_GROUP,
    workers: int = 1,
    read: Callable[[Any], list[tuple[Any, ...]]] | None = None,
    meanwhile: Callable[[], None] | None = None,
    modes: tuple[ScoringMode, ...] = ("paper", "strict"),
) -> None:
    """Stream the store's raw judge rows in coordinate order into judgments.parquet, ``chunk`` wanted units
    per row group (``wanted`` None: every stored unit is wanted; the caller counted them). ``batches``
    are lists of raw rows (as ``store.RangeReader`` returns them), or, with ``read``, what ``read`` turns into
    them (``store.RangeReader``: ranges of coordinates, read where they are turned into tables).

    The batches are read, decoded and turned into Arrow tables by ``workers`` forked processes
    (``offline.in_chunks``: they inherit the dataset and the scores; a table comes back as an Arrow file
    this process maps, ``spill_table``), and this process writes them in order. The file does not depend
    on ``workers`` or on the batches: the row groups are cut at the same units (every ``chunk`` wanted
    units, then the rest, possibly none).
    """
    from agentjudge.runner.offline import in_chunks

    decoded: dict[str, Any] = {}  # result text -> its JSON: the constant baselines repeat theirs verbatim

    def build(batch: Any) -> tuple[pa.Table, list[int]]:
        raw: list[tuple[Any, ...]] = batch if read is None else read(batch)
        units = []
        for row in raw:
            key = UnitKey(*row[:10])
            if wanted is None or key in wanted:
                status, text, error, attempts = row[10:]
                # decoded once per distinct text; the result is read only by judgment_table
                result = remembered(decoded, text, _DECODED_HELD, partial(json.loads, text)) if text else None
                units.append(UnitRow(key, status, result, error, attempts))
        counts: list[int] = []
        return judgment_table(data, units, scores, variants, judges, counts, modes), counts

    def build_spilled(spill: Path, batch: Any) -> tuple[str, list[int]]:  # in a forked child
        table, counts = build(batch)
        return spill_table(spill, table), counts

    def write(tmp: Path) -> None:
        tables: list[pa.Table] = []
        counts: list[int] = []  # rows per buffered unit
        spill = tmp.with_name(tmp.name + SPILL_SUFFIX) if workers > 1 else None
        with pq.ParquetWriter(tmp, JUDGMENT_SCHEMA) as writer:

            def cut(units: int) -> None:  # write the first `units` buffered units as one row group
                nonlocal tables, counts
                table = tables[0] if len(tables) == 1 else pa.concat_tables(tables).combine_chunks()
                rows = sum(counts[:units])
                writer.write_table(table if rows == table.num_rows else table.slice(0, rows))
                rest = table.slice(rows)
                tables, counts = ([rest] if rest.num_rows else []), counts[units:]

            side = _Meanwhile(meanwhile)
            if workers <= 1:
                side.run()  # no children: first, in this process (as before there was a `meanwhile`)
            if spill is not None:
                spill.mkdir(exist_ok=True)
            compute = build if spill is None else partial(build_spilled, spill)
            answers = in_chunks(workers, compute, batches, small_payloads=read is not None, forked=side.start)
            try:
                for answer, unit_counts in answers:
                    table = answer if spill is None else read_spilled(answer)
                    if unit_counts:
                        tables.append(table)
                        counts.extend(unit_counts)
                    while len(counts) >= chunk:
                        cut(chunk)
            finally:
                answers.close()
                if spill is not None:
                    shutil.rmtree(spill, ignore_errors=True)  # a table sent but not read (an error)
                side.join()  # raises what `meanwhile` raised (after the children are ended)
            if not tables:
                tables = [JUDGMENT_SCHEMA.empty_table()]
            cut(len(counts))

    with replacing(path) as tmp:  # a killed export's temporary file and spill folder are removed first
        write(tmp)


# A forked child of write_judgments hands its table over as an Arrow IPC file in a folder beside the
# file being written, which this process maps without copying, instead of pickling it through a pipe: a
# row group's table is ~45 MB, and pickling, piping and unpickling it took ~0.2 s of CPU against ~0.03 s
# (~6 s of CPU over the paper-shaped grid's 35 row groups; bench/bench_grid.py). Each file is unlinked
# as soon as it is mapped; the folder is removed when the export ends, and a folder left by a killed
# export (its process gone) is removed by the next one.
SPILL_SUFFIX = ".tables"
_SPILLED = 0  # tables this process has spilled: numbers its files


def spill_table(folder: Path, table: pa.Table) -> str:
    """Write ``table`` to a new IPC file in ``folder`` (named by this process and a count); its path."""
    global _SPILLED
    _SPILLED += 1
    path = folder / f"{os.getpid()}-{_SPILLED}.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return str(path)


def read_spilled(path: str) -> pa.Table:
    """The table of a ``spill_table`` file, memory-mapped (its buffers keep the mapping alive); the file is
    unlinked at once, so its pages go when the table does."""
    try:
        table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    finally:
        os.unlink(path)
    return table


def _state(path: Path) -> str | None:
    """The sha256 of the file's bytes (None when it cannot be read): a file changed since it was written is
    never taken for it, whatever its size and times say (predictions and scores are small beside the
    judgments, which are never kept)."""
    try:
        return sha256_file(path)
    except OSError:
        return None


def file_stamps(
    predictions: Iterable[tuple[Any, ...]],
    simulated: dict[str, bool],
    config_hash: str,
    dataset_sha256: str,
    code: str,
) -> dict[str, str]:
    """The stamps of predictions.parquet and scores.parquet: digests of everything they are built from.
    ``predictions``: the stored predict rows the export reads (key columns, status, result text, error), in
    coordinate order; scores are a function of the done ones, the dataset, the configuration (scoring modes,
    ``lenient``) and the code (``code``: ``resume_cache.code_fingerprint``); pyarrow's version writes the
    bytes."""
    rows = hashlib.sha256()
    for row in predictions:  # repr: unambiguous for str/int/None, ~2.5x faster than json.dumps (57,120
        rows.update(repr(row).encode("utf-8"))  # predictions of a paper grid: ~0.3 s)
    common = [code, pa.__version__, config_hash, rows.hexdigest()]
    return {
        "predictions.parquet": _digest(
            ["predictions.parquet", *common, json.dumps(simulated, sort_keys=True)]
        ),
        "scores.parquet": _digest(["scores.parquet", *common, dataset_sha256]),
    }


def _digest(parts: list[str]) -> str:
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def current_files(rundir: Path, stamps: dict[str, str], recorded: str | None) -> frozenset[str]:
    """The files of ``stamps`` an earlier export wrote from the same inputs and nobody changed since:
    ``recorded`` (``recorded_files`` of that export) holds the same stamp and the file's digest then."""
    try:
        earlier = json.loads(recorded) if recorded else {}
    except ValueError:
        return frozenset()
    if not isinstance(earlier, dict):
        return frozenset()
    return frozenset(
        name for name, stamp in stamps.items() if earlier.get(name) == [stamp, _state(rundir / name)]
    )


def recorded_files(rundir: Path, stamps: dict[str, str]) -> str:
    """What ``current_files`` compares with next time: each file's stamp and digest after this export."""
    return json.dumps({name: [stamp, _state(rundir / name)] for name, stamp in sorted(stamps.items())})


def export_run(
    rundir: Path,
    data: Dataset,
    predict_units: dict[UnitKey, UnitRow],
    judge_batches: Iterable[Any],
    judge_wanted: set[UnitKey] | None,
    scores: dict[ScoreKey, dict[ScoringMode, Score]],
    variants: dict[str, PromptVariant],
    judges: dict[str, ModelSettings],
    simulated: dict[str, bool],
    meta: dict[str, Any],
    workers: int = 1,
    row_group: int = EXPORT_ROW_GROUP,
    read: Callable[[Any], list[tuple[Any, ...]]] | None = None,
    keep: frozenset[str] = frozenset(),
    modes: tuple[ScoringMode, ...] = ("paper", "strict"),
) -> None:
    """Write the three parquet files and meta.json (each atomically); ``judge_batches`` and ``read`` are
    those of ``write_judgments``, turned into tables by ``workers`` processes. A file named in ``keep``
    (``current_files``) is left as it is."""

    def small_files() -> None:  # while the judgments' children work (write_judgments' `meanwhile`)
        if "predictions.parquet" not in keep:
            rows = prediction_rows(predict_units, simulated)
            write_table(rundir / "predictions.parquet", rows, PREDICTION_SCHEMA)
        if "scores.parquet" not in keep:
            write_table(rundir / "scores.parquet", score_rows(data, scores), SCORE_SCHEMA)

    write_judgments(
        rundir / "judgments.parquet",
        judge_batches,
        judge_wanted,
        data,
        scores,
        variants,
        judges,
        chunk=row_group,
        workers=workers,
        read=read,
        meanwhile=small_files,
        modes=modes,
    )
    write_json(rundir / "meta.json", meta)
