"""``imported/<key>`` generators: outputs released by a publication, replayed from ``imported.sqlite``.

``agentjudge import agentjudgebench`` writes, next to the run folder's ``pipeline.yaml``, an SQLite file
holding every generator output and every judge verdict of the publication it read (``ImportedSource``
defines its tables); ``agentjudge import traces`` writes one holding an agent's recorded conversations: its
calls, and for a conversation with tool outputs the episode (``trajectories``), with where each came from
(``traces``). A run of that pipeline then goes through the ordinary grid: an imported generator
answers each task with the calls the publication released for it, or, where it released none (the
generator's output could not be parsed there, or the task was left out), a prediction marked ``absent``
with the reason — never an invented call. Like the simulated models they answer in microseconds, so they
run in the grid's offline path; unlike them they are real models' outputs (``kind: imported``).

The file is found through the folders registered by ``model_strings.add_import_folders`` (the pipeline
file's folder, registered when the pipeline is read).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from agentjudge.types import ModelSettings, Prediction, Task, ToolCall, Trajectory

SOURCE_FILE = "imported.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (
    generator TEXT NOT NULL,      -- the generator's display name in the run
    record_id TEXT NOT NULL,      -- <base id>:<difficulty>
    calls TEXT,                   -- JSON list of {name, arguments}; NULL when absent
    absent TEXT,                  -- why the source has no output for this task
    PRIMARY KEY (generator, record_id)
);
CREATE TABLE IF NOT EXISTS verdicts (
    judge TEXT NOT NULL,          -- the judge's display name in the run
    generator TEXT NOT NULL,
    record_id TEXT NOT NULL,
    condition TEXT NOT NULL,      -- with_gt / without_gt
    verdicts TEXT,                -- JSON {metric: value or null}; NULL when the judgment failed
    rationale TEXT NOT NULL DEFAULT '',
    raw TEXT NOT NULL DEFAULT '',
    failure TEXT,                 -- why the source has no verdict, or why a metric has none; else NULL
    overall REAL,                 -- the source's own alignment figure for this row (%), when it gives one
    PRIMARY KEY (judge, generator, record_id, condition)
);
CREATE TABLE IF NOT EXISTS trajectories (
    generator TEXT NOT NULL,      -- a recorded conversation with tool outputs (agentjudge import traces)
    record_id TEXT NOT NULL,
    trajectory TEXT NOT NULL,     -- JSON of types.Trajectory: the messages, each call with its output
    PRIMARY KEY (generator, record_id)
);
CREATE TABLE IF NOT EXISTS traces (
    record_id TEXT PRIMARY KEY,   -- where each imported conversation came from
    file TEXT NOT NULL,
    line INTEGER NOT NULL,        -- its line (JSONL) or sample number (an Inspect log), from 1
    format TEXT NOT NULL,         -- openai / inspect / taubench
    metadata TEXT NOT NULL        -- the conversation's own metadata, as JSON
);
CREATE TABLE IF NOT EXISTS reference (
    generator TEXT NOT NULL,      -- the publication's programmatic scores of one output, as a file has them
    record_id TEXT NOT NULL,
    copy TEXT NOT NULL,           -- '' for the output's own row; a judge's name for that judge file's copy
    tool REAL NOT NULL, param REAL NOT NULL, seq REAL NOT NULL, cov REAL NOT NULL,
    PRIMARY KEY (generator, record_id, copy)
);
"""


class ImportedSource:
    """Read access to one ``imported.sqlite``; a connection per process (the grid forks workers)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def prediction(self, generator: str, record_id: str) -> tuple[list[dict[str, Any]] | None, str | None]:
        row = (
            self._conn()
            .execute(
                "SELECT calls, absent FROM predictions WHERE generator = ? AND record_id = ?",
                (generator, record_id),
            )
            .fetchone()
        )
        if row is None:
            return None, "the source released no output of this generator for this task"
        calls, absent = row
        return (json.loads(calls) if calls is not None else None), absent

    def trajectory(self, generator: str, record_id: str) -> Trajectory | None:
        """The recorded episode of this output (a trace with tool outputs), or None (a file written before
        the table existed has none)."""
        if getattr(self._local, "no_trajectories", False):
            return None
        try:
            row = (
                self._conn()
                .execute(
                    "SELECT trajectory FROM trajectories WHERE generator = ? AND record_id = ?",
                    (generator, record_id),
                )
                .fetchone()
            )
        except sqlite3.OperationalError:  # no such table: written by an import that had none
            self._local.no_trajectories = True
            return None
        return Trajectory.model_validate_json(row[0]) if row is not None else None

    def verdict(self, judge: str, generator: str, record_id: str, condition: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = (
            self._conn()
            .execute(
                "SELECT verdicts, rationale, raw, failure FROM verdicts "
                "WHERE judge = ? AND generator = ? AND record_id = ? AND condition = ?",
                (judge, generator, record_id, condition),
            )
            .fetchone()
        )
        return row


_SOURCES: dict[Path, ImportedSource] = {}


def source_for(folders: list[Path]) -> ImportedSource:
    """The ``imported.sqlite`` of the first registered folder that has one."""
    for folder in folders:
        path = (folder / SOURCE_FILE).resolve()
        if path.is_file():
            return _SOURCES.setdefault(path, ImportedSource(path))
    raise FileNotFoundError(
        f"no {SOURCE_FILE} next to the pipeline (looked in: {', '.join(map(str, folders)) or 'nowhere'}); "
        "imported/ models replay a folder written by `agentjudge import`"
    )


class ImportedGenerator:
    def __init__(self, settings: ModelSettings, source: ImportedSource) -> None:
        self.name = settings.display_name
        self.source = source

    async def __call__(self, task: Task, trial: int) -> Prediction:
        calls, absent = self.source.prediction(self.name, task.record_id)
        if calls is None or trial != 0:
            why = absent or "the source released one output per task (trial 0 only)"
            return Prediction.for_task(task, self.name, trial, calls=None, absent=why)
        return Prediction.for_task(
            task,
            self.name,
            trial,
            calls=[ToolCall(name=c["name"], arguments=c.get("arguments") or {}) for c in calls],
            trajectory=self.source.trajectory(self.name, task.record_id),
        )
