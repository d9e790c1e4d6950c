"""``RunFolder``: a run folder opened once, checked, and read through typed readers.

Every reader of a run folder's files goes through here (the report, the viewer, ``human-sample``,
``compare``, the importer's scorer comparison, the tests), so a file's contract is checked in one place and
a format change is made in one place (docs/formats.md, ``meta.FORMAT_VERSION``). ``open`` refuses what it
cannot read with one line that names the file and says what to do: a missing folder, a folder that holds
no run, a run still being written or stopped before its first export, a damaged ``meta.json``, a format
this code does not read.

A folder is readable while a run works in it (its files are those of the run's last export, each written
whole by a rename); ``status`` says whether one is at work. Nothing here writes: the store is opened so that
it changes nothing (``units.open_store``), and the run's lock is never taken (``lock.py``).

The tables come three ways, for three kinds of reader: ``predictions()`` / ``scores()`` / ``judgments()``
as pandas DataFrames (with pyarrow ``columns`` and ``filters``, so a big run's judgments stay cheap to
query), ``arrow(...)`` as an Arrow table (``read_dictionary`` for categorical columns: the report's
millions of rows), and ``parquet_file(...)`` for readers that go row group by row group without pandas
(the viewer's index). pandas and pyarrow are imported on use: the run's lean export imports this package
and must not pay for them.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from agentjudge.rundir.columns import REQUIRED_COLUMNS, TABLE_FILES
from agentjudge.rundir.errors import RunFolderError, first_line, validation_problem
from agentjudge.rundir.labels import LabelLine, read_labels
from agentjudge.rundir.lock import describe_holder, running_holder
from agentjudge.rundir.meta import META_FILE, RunMeta, read_meta
from agentjudge.rundir.records import LayoutError, read_records
from agentjudge.rundir.sampling import SamplingRecord, read_sampling
from agentjudge.rundir.summary import SUMMARY_FILE, RunSummary
from agentjudge.rundir.units import STORE_FILE, store_meta, store_units
from agentjudge.types import Record

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

Table = Literal["predictions", "scores", "judgments"]
Filters = Sequence[tuple[str, str, Any]]  # pyarrow's form: [("judge", "==", "j"), ("trial", "in", [0, 1])]
RECORDS_FILE = "records.jsonl"  # a records file kept in the folder (read when the pipeline's is not there)
M = TypeVar("M", bound=BaseModel)
_WRITTEN_BY_RUN = "give a run folder written by `agentjudge run PIPELINE --out FOLDER`"


@dataclass(frozen=True)
class RunStatus:
    """Where the run of a folder stands. ``state``: ``complete`` (every planned unit done at the last
    export), ``unfinished`` (some failed or not run: a re-run of the same command continues it) or
    ``in_progress`` (an ``agentjudge run`` holds the folder now; the counts are its last export's).
    The counts add both stages (predict + judge); None where meta.json records none (synthetic folders,
    which are written whole and count as complete)."""

    state: Literal["complete", "unfinished", "in_progress"]
    planned: int | None = None
    done: int | None = None
    failed: int | None = None
    holder: dict[str, Any] | None = field(default=None, compare=False)  # in_progress: run.lock's details
    # why the last invocation stopped short (``stop_reasons``), and the command line that continues the run;
    # empty / None in folders written before meta.json kept them
    why: tuple[str, ...] = field(default=(), compare=False)
    resume_command: str | None = field(default=None, compare=False)

    @property
    def not_run(self) -> int | None:
        """Planned units with no stored outcome (a cost cap, a stopped model, an interruption)."""
        if self.planned is None or self.done is None or self.failed is None:
            return None
        return self.planned - self.done - self.failed

    def __str__(self) -> str:
        counts = (
            f"{self.done:,} of {self.planned:,} units done, {self.failed:,} failed"
            if self.planned is not None and self.done is not None and self.failed is not None
            else "units not recorded"
        )
        if self.state == "in_progress":
            return f"in progress ({describe_holder(self.holder or {})}); at its last export {counts}"
        return f"{self.state}: {counts}"


def stop_reasons(meta: RunMeta) -> tuple[str, ...]:
    """Why the last invocation left units undone, one phrase each, from meta.json: the cost cap, the
    models a fatal failure stopped, units that failed (a re-run retries them), units never reached (an
    interruption). Empty for a complete run."""
    units, last = meta.units, meta.last_invocation
    if units is None or last is None:
        return ()
    out = []
    if last.units_not_run_at_cost_cap:
        cap = f" (--max-cost {last.cost_cap_usd:g})" if last.cost_cap_usd is not None else ""
        out.append(f"the cost cap{cap} was reached: {last.units_not_run_at_cost_cap:,} unit(s) not run")
    for model, why in (last.stopped_models or {}).items():
        out.append(f"{model} was stopped ({why.reason} failure; no further call of it was made)")
    failed = units.predict.failed + units.judge.failed
    if failed:
        out.append(f"{failed:,} unit(s) failed (a re-run retries them)")
    not_run = (units.predict.planned + units.judge.planned) - (units.predict.done + units.judge.done) - failed
    if not_run and not last.units_not_run_at_cost_cap and not last.stopped_models:
        # a folder written before the stopped models were kept (None) cannot say more than the count
        cause = " (the run was interrupted)" if last.stopped_models is not None else ""
        out.append(f"{not_run:,} unit(s) were not run{cause}")
    return tuple(out)


class RunFolder:
    """One run folder, opened with ``RunFolder.open(path)``."""

    def __init__(self, path: Path, meta: RunMeta) -> None:
        self.path = path
        self.meta = meta

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunFolder:
        """The folder at ``path``, its meta.json read and checked (``RunFolderError`` otherwise)."""
        folder = Path(path)
        if not folder.exists():
            raise RunFolderError(f"{folder}: no such folder ({_WRITTEN_BY_RUN})")
        if not folder.is_dir():
            raise RunFolderError(f"{folder}: not a folder ({_WRITTEN_BY_RUN})")
        meta_path = folder / META_FILE
        if not meta_path.is_file():
            raise RunFolderError(_without_meta(folder))
        return cls(folder, read_meta(meta_path))

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r}, format_version={self.format_version})"

    @property
    def format_version(self) -> int:
        """The version of the folder's file contracts (0: written before versions; read as 1)."""
        return self.meta.format_version

    @property
    def status(self) -> RunStatus:
        """Complete, unfinished (units done / planned) or in progress (``RunStatus``), read now."""
        units = self.meta.units
        holder = running_holder(self.path)
        if units is None:  # a synthetic folder: written whole
            return RunStatus("in_progress", holder=holder) if holder is not None else RunStatus("complete")
        planned = units.predict.planned + units.judge.planned
        done = units.predict.done + units.judge.done
        failed = units.predict.failed + units.judge.failed
        if holder is not None:
            state: Literal["complete", "unfinished", "in_progress"] = "in_progress"
        else:
            state = "complete" if done == planned else "unfinished"
        last = self.meta.last_invocation
        why = stop_reasons(self.meta) if state != "complete" else ()
        resume = last.resume_command if last is not None else None
        return RunStatus(state, planned, done, failed, holder, why, resume or None)

    # ------------------------------------------------------------------ the records

    @property
    def dataset_path(self) -> Path | None:
        """The run's records file: the pipeline's ``dataset`` (a path relative to the folder is taken from
        it) when it is there, else ``RUNDIR/records.jsonl`` when that is; the named path when neither is
        (so an error can name it); None when nothing is named and the folder keeps no records."""
        named = self.meta.dataset
        path = None
        if named:
            path = Path(named) if Path(named).is_absolute() else self.path / named
            if path.is_file():
                return path
        local = self.path / RECORDS_FILE
        return local if local.is_file() else path

    def records(self, limit: int | None = None) -> list[Record]:
        """The run's dataset as ``Record``s, in file order (``limit``: the first ones only)."""
        path = self.dataset_path
        if path is None:
            raise RunFolderError(
                f"{self.path / META_FILE}: names no records file (pipeline.dataset), and "
                f"{self.path / RECORDS_FILE} does not exist"
            )
        if not path.is_file():
            raise RunFolderError(
                f"{path}: the run's records file (pipeline.dataset in {self.path / META_FILE}) is not there "
                f"(moved or deleted?); put it back, or a copy at {self.path / RECORDS_FILE}"
            )
        try:
            return read_records(path, limit=limit)
        except LayoutError as exc:
            raise RunFolderError(str(exc)) from None

    # ------------------------------------------------------------------ the tables

    def table_path(self, table: Table) -> Path:
        """Where a table's file is (whether or not it exists)."""
        return self.path / TABLE_FILES[table]

    def has(self, table: Table) -> bool:
        """Whether the folder holds the table (a synthetic or hand-made folder may lack some)."""
        return self.table_path(table).is_file()

    def columns(self, table: Table) -> list[str]:
        """The table's columns as the file has them (its schema alone is read)."""
        import pyarrow.parquet as pq

        path = self._existing(table)
        try:
            names = list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise RunFolderError(f"{path}: unreadable parquet ({first_line(exc)})") from None
        _check_columns(path, table, names)
        return names

    def arrow(
        self,
        table: Table,
        columns: Sequence[str] | None = None,
        filters: Filters | None = None,
        read_dictionary: Iterable[str] | None = None,
    ) -> pa.Table:
        """The table as Arrow: only ``columns`` (all when None), only the rows ``filters`` keep (pyarrow's
        list of (column, op, value), all of which must hold), ``read_dictionary`` columns as dictionaries
        (categoricals in pandas: few distinct values, never millions of Python strings)."""
        import pyarrow.parquet as pq

        names = self.columns(table)
        path = self.table_path(table)
        try:
            return pq.read_table(
                path,
                columns=None if columns is None else list(columns),
                filters=None if filters is None else list(filters),
                read_dictionary=[c for c in read_dictionary or () if c in names] or None,
            )
        except Exception as exc:  # pyarrow raises several unrelated types
            raise RunFolderError(f"{path}: unreadable parquet ({first_line(exc)})") from None

    def parquet_file(self, table: Table, read_dictionary: Iterable[str] | None = None) -> pq.ParquetFile:
        """The table's file opened for reading row group by row group (no pandas; the footer alone read)."""
        import pyarrow.parquet as pq

        path = self._existing(table)
        try:
            handle = pq.ParquetFile(path, read_dictionary=list(read_dictionary or ()) or None)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise RunFolderError(f"{path}: unreadable parquet ({first_line(exc)})") from None
        _check_columns(path, table, handle.schema_arrow.names)
        return handle

    def predictions(
        self, columns: Sequence[str] | None = None, filters: Filters | None = None
    ) -> pd.DataFrame:
        """predictions.parquet: one row per (record at a difficulty, generator, trial)."""
        return self._frame("predictions", columns, filters)

    def scores(self, columns: Sequence[str] | None = None, filters: Filters | None = None) -> pd.DataFrame:
        """scores.parquet: the programmatic reference of every prediction, per scoring mode."""
        return self._frame("scores", columns, filters)

    def judgments(self, columns: Sequence[str] | None = None, filters: Filters | None = None) -> pd.DataFrame:
        """judgments.parquet, long form: one row per verdict (… × metric × scoring mode). On a big run ask
        for the ``columns`` and ``filters`` needed: the file is read in row groups and only those."""
        return self._frame("judgments", columns, filters)

    def outputs(self) -> tuple[pd.DataFrame, str | None]:
        """The generator outputs a person can label, with what the reference says of each: one row per
        prediction without a generator error (``record_id``, ``base_id``, ``difficulty``, ``generator``,
        ``trial``, ``topology``) and the reference's ``p_tool`` … ``p_cov`` in the scoring mode returned
        (strict when the scores have it), NaN where the output has no score (a run without a GT).
        The mode is None when the folder has no scores at all."""
        keys = ["record_id", "generator", "trial"]
        preds = self.predictions(columns=[*keys, "base_id", "difficulty", "error"])
        preds = preds[preds["error"].isna()].drop(columns=["error"]).reset_index(drop=True)
        metrics = ("p_tool", "p_param", "p_seq", "p_cov")
        mode = None
        if self.has("scores"):
            scores = self.scores(columns=[*keys, "scoring_mode", "topology", *metrics])
            modes = sorted(scores["scoring_mode"].astype(str).unique())
            if modes:
                mode = "strict" if "strict" in modes else modes[0]
                scores = scores[scores["scoring_mode"].astype(str) == mode].drop(columns=["scoring_mode"])
                preds = preds.merge(scores, on=keys, how="left")
        for col in metrics:
            if col not in preds:
                preds[col] = float("nan")
        if "topology" not in preds or preds["topology"].isna().any():  # unscored outputs: the records say
            topology = {r.id: r.topology for r in self.records()}
            mapped = preds["base_id"].astype(str).map(topology).astype(object)
            if "topology" in preds:
                known = preds["topology"].astype(object)
                mapped = known.where(known.notna(), mapped)
            preds["topology"] = mapped
            if preds["topology"].isna().any():
                lost = preds.loc[preds["topology"].isna(), "base_id"].iloc[0]
                raise RunFolderError(
                    f"{self.table_path('predictions')}: record {lost!r} is in no scores row and not in the "
                    f"records file {self.dataset_path}"
                )
        for col in ("record_id", "base_id", "difficulty", "generator", "topology"):
            preds[col] = preds[col].astype(str)
        preds["trial"] = preds["trial"].astype(int)
        return preds, mode

    def _frame(self, table: Table, columns: Sequence[str] | None, filters: Filters | None) -> pd.DataFrame:
        import pandas as pd

        self.columns(table)
        path = self.table_path(table)
        try:
            return pd.read_parquet(
                path,
                columns=None if columns is None else list(columns),
                filters=None if filters is None else list(filters),
            )
        except Exception as exc:  # pyarrow raises several unrelated types
            raise RunFolderError(f"{path}: unreadable parquet ({first_line(exc)})") from None

    def _existing(self, table: Table) -> Path:
        path = self.table_path(table)
        if not path.is_file():
            raise RunFolderError(
                f"{path}: file not found (the run has not exported it; is this a run folder written by "
                "`agentjudge run`?)"
            )
        return path

    # ------------------------------------------------------------------ the store

    def units(self, columns: Sequence[str] | None = None, filters: Filters | None = None) -> pd.DataFrame:
        """run.sqlite's units table (``units.UNIT_COLUMNS``), read without writing anything, in coordinate
        order; ``filters`` as for the tables (``[("stage", "==", "judge"), ("status", "==", "done")]``).
        ``result`` is the unit's result as JSON text."""
        path = self.path / STORE_FILE
        try:
            units = store_units(path, columns, filters)
        except ValueError as exc:  # a filter or column the table does not have
            raise RunFolderError(f"{path}: {exc}") from None
        except sqlite3.Error as exc:
            raise RunFolderError(f"{path}: cannot be read ({first_line(exc)})") from None
        if units is None:
            raise RunFolderError(self._no_store())
        return units

    def store_meta(self) -> dict[str, str]:
        """run.sqlite's meta table as text (config hash, ``store_version``, ``added_judges``, ...)."""
        path = self.path / STORE_FILE
        try:
            meta = store_meta(path)
        except sqlite3.Error as exc:
            raise RunFolderError(f"{path}: cannot be read ({first_line(exc)})") from None
        if meta is None:
            raise RunFolderError(self._no_store())
        return meta

    def _no_store(self) -> str:
        path = self.path / STORE_FILE
        said = "not found" if not path.is_file() else "not a readable run store"
        return f"{path}: {said} (a run keeps its units there; a synthetic folder has none)"

    # ------------------------------------------------------------------ the JSON files

    def summary(self) -> RunSummary | None:
        """run_summary.json (None when the folder has none: synthetic folders)."""
        path = self.path / SUMMARY_FILE
        if not path.is_file():
            return None
        return _read_json_model(path, RunSummary)

    def sampling(self) -> SamplingRecord | None:
        """sampling.json: a sampled run's design (None for a run that judged every scenario)."""
        return read_sampling(self.path)

    def labels(self, history: bool = False) -> list[LabelLine]:
        """labels/*.jsonl: each annotator's latest label per item (``history``: every line saved)."""
        return read_labels(self.path, history=history)


def _without_meta(folder: Path) -> str:
    """Why a folder without meta.json cannot be read, and what to do."""
    meta = folder / META_FILE
    holder = running_holder(folder)
    if holder is not None:
        return (
            f"{meta}: not written yet: a run is in progress in this folder ({describe_holder(holder)}); "
            "its files appear at its first export: wait for it to end"
        )
    if (folder / STORE_FILE).is_file():
        return (
            f"{meta}: not found: the run in this folder stopped before its first export ({STORE_FILE} holds "
            "its units); re-run the same `agentjudge run PIPELINE --out FOLDER` to go on and write its files"
        )
    return f"{folder}: not a run folder (no {META_FILE}; {_WRITTEN_BY_RUN})"


def _check_columns(path: Path, table: Table, names: Iterable[str]) -> None:
    present = set(names)
    missing = [c for c in REQUIRED_COLUMNS[table] if c not in present]
    if missing:
        raise RunFolderError(f"{path}: missing column(s) {missing}")


def _read_json_model(path: Path, model: type[M]) -> M:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunFolderError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path}: cannot be read ({first_line(exc)})") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise RunFolderError(f"{path}: {validation_problem(exc)}") from None
