"""One item of a run folder with everything said about it: the record (query at that difficulty, tools,
GT calls with their outputs), the generator's output (calls, trajectory), the programmatic scores in each
scoring mode, every judge's verdicts, rationales and raw answers, the reference beside each, and people's
labels (``human/NAME``). ``output`` is the record and the generator's output alone, which the labelling page
(``people.label``) shows a person without the scores and verdicts.

An item is one generator output: (record id at a difficulty, generator, generator trial). Everything is
read for that item alone, through ``rundir.RunFolder``: judgments.parquet, predictions.parquet and
scores.parquet with pyarrow filters (the files are written in record order, so the row groups' statistics
skip all but one or two), the dataset's one line (found through an index of line offsets built on first
use) and the store's judge units (``RunFolder.units``: a connection that writes nothing). Nothing is
written: the viewer works on a folder it cannot write and while a run is writing it.
"""

from __future__ import annotations

import json
import math
import re
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agentjudge.rundir import RunFolder, RunFolderError
from agentjudge.rundir.columns import JUDGMENT_COLUMNS, SCORE_COLUMNS
from agentjudge.rundir.folder import Table
from agentjudge.rundir.records import LayoutError, parse_line
from agentjudge.viewer.index import QueryError, StateMatch, temperature_label, variant_label

# the columns one item shows: every judgment / score column but the keys the read filters on (and the
# judgments' ``source``), from the column contract so a column added there is shown here too
_JUDGMENT_FIELDS = [
    c for c in JUDGMENT_COLUMNS if c not in ("record_id", "generator", "generator_trial", "source")
]
_SCORE_FIELDS = [
    c
    for c in SCORE_COLUMNS
    if c not in ("record_id", "base_id", "domain", "topology", "difficulty", "generator", "trial", "source")
]
_ID = re.compile(rb'"id"\s*:\s*"((?:[^"\\]|\\.)*)"')


class Items:
    """The items of one run folder, each read on demand (the folder opened by ``RunFolder.open``)."""

    def __init__(self, folder: RunFolder) -> None:
        self.folder = folder
        self.dataset = folder.dataset_path
        self._offsets: dict[str, int] | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ kinds, scores

    def kinds(self) -> dict[str, str]:
        """Each judge's and generator's kind as meta.json records it (simulated, baseline, litellm...)."""
        meta = self.folder.meta
        return {name: info.kind for role in (meta.judges, meta.generators) for name, info in role.items()}

    def state_match(self) -> StateMatch | None:
        """The predictions' state_match from scores.parquet, in the file's first scoring mode (it is the
        same in both). Read with ``ParquetFile`` (``read_table`` would import pyarrow.dataset and pandas,
        ~0.7 s of the viewer's start) and kept as columns, never as Python objects per row."""
        import pyarrow.compute as pc

        if not self.folder.has("scores"):
            return None
        table = self.folder.parquet_file("scores").read(
            columns=["record_id", "generator", "trial", "scoring_mode", "state_match"]
        )
        if table.num_rows == 0:
            return None
        first = table.column("scoring_mode")[0].as_py()
        table = table.filter(pc.equal(table.column("scoring_mode"), first))
        return StateMatch(
            record_id=table.column("record_id").combine_chunks().cast("string"),
            generator=table.column("generator").combine_chunks().cast("string"),
            trial=table.column("trial").to_numpy().astype(np.int64),
            value=table.column("state_match").to_numpy().astype(np.float64),
        )

    # ------------------------------------------------------------------ one item

    def item(self, record_id: str, generator: str, generator_trial: int) -> dict[str, Any]:
        verdict_rows = self._rows(
            "judgments",
            record_id,
            generator,
            ("generator_trial", generator_trial),
            _JUDGMENT_FIELDS,
        )
        if not verdict_rows:
            raise QueryError(
                f"no verdict rows for record {record_id!r}, generator {generator!r}, trial {generator_trial}"
            )
        first = verdict_rows[0]
        prediction = self._rows(
            "predictions",
            record_id,
            generator,
            ("trial", generator_trial),
            ["calls_json", "raw_output", "error", "trajectory_json", "stop_reason", "turns", "generation"],
        )
        scores = self._rows(
            "scores",
            record_id,
            generator,
            ("trial", generator_trial),
            _SCORE_FIELDS,
        )
        return {
            "record_id": record_id,
            "base_id": first["base_id"],
            "difficulty": first["difficulty"],
            "topology": first["topology"],
            "domain": first["domain"],
            "generator": generator,
            "generator_trial": generator_trial,
            "kinds": self.kinds(),
            "record": self.record(first["base_id"], first["difficulty"]),
            "prediction": _prediction(prediction[0]) if prediction else None,
            "scores": [_clean(s) for s in scores],
            "judges": self._judges(verdict_rows, record_id, generator, generator_trial),
            "people": self.people(record_id, generator, generator_trial),
        }

    def scores(self, record_id: str, generator: str, generator_trial: int) -> list[dict[str, Any]]:
        """The output's programmatic scores, one entry per scoring mode (empty without scores)."""
        rows = self._rows("scores", record_id, generator, ("trial", generator_trial), _SCORE_FIELDS)
        return [_clean(s) for s in rows]

    def output(self, record_id: str, generator: str, generator_trial: int) -> dict[str, Any]:
        """The record and the generator's output alone, no score and no verdict: what the labelling page
        shows a person (``people.label``). ``QueryError`` when the run has no such output."""
        rows = self._rows(
            "predictions",
            record_id,
            generator,
            ("trial", generator_trial),
            ["base_id", "difficulty", "calls_json", "raw_output", "error", "trajectory_json", "stop_reason",
             "turns", "generation"],
        )  # fmt: skip
        if not rows:
            raise QueryError(
                f"no output of generator {generator!r} (trial {generator_trial}) on record {record_id!r}"
            )
        row = rows[0]
        base_id, difficulty = str(row.pop("base_id")), str(row.pop("difficulty"))
        return {
            "record_id": record_id,
            "base_id": base_id,
            "difficulty": difficulty,
            "generator": generator,
            "generator_trial": generator_trial,
            "record": self.record(base_id, difficulty),
            "prediction": _prediction(row),
        }

    def people(self, record_id: str, generator: str, generator_trial: int) -> list[dict[str, Any]]:
        """People's latest labels of this item (``human/NAME``, labels/NAME.jsonl), read afresh on every call
        so the page shows labels saved while it is open; a labels file that does not read is one entry
        with its error."""
        try:
            with warnings.catch_warnings():  # a torn last line: the reader skips it, and so do we, quietly
                warnings.simplefilter("ignore")
                labels = self.folder.labels()
        except RunFolderError as exc:
            return [{"judge": "human/?", "error": str(exc)}]
        return [
            {
                "judge": label.judge,
                "verdicts": dict(label.verdicts),
                "note": label.note,
                "at": label.at.isoformat(),
                "blind": label.shown.blind,
                "skipped": label.skipped,
                "in_sample": label.sample is not None,
            }
            for label in labels
            if label.item == (record_id, generator, generator_trial)
        ]

    def _rows(
        self, name: Table, record_id: str, generator: str, trial: tuple[str, int], columns: list[str]
    ) -> list[dict[str, Any]]:
        if not self.folder.has(name):
            return []
        present = set(self.folder.columns(name))
        wanted = [c for c in columns if c in present]
        filters: list[tuple[str, str, Any]] = [("record_id", "==", record_id), ("generator", "==", generator)]
        if trial[0] in present:
            filters.append((trial[0], "==", trial[1]))
        rows: list[dict[str, Any]] = self.folder.arrow(name, columns=wanted, filters=filters).to_pylist()
        return rows

    def _judges(
        self, rows: list[dict[str, Any]], record_id: str, generator: str, generator_trial: int
    ) -> list[dict[str, Any]]:
        """One entry per judge × condition × prompt variant × temperature × trial: per metric the verdict
        and the reference in each scoring mode, the rationales, the error and the raw answer."""
        groups: dict[tuple[Any, ...], dict[str, Any]] = {}
        for row in rows:
            temp = row["temperature"]
            temp = float("nan") if temp is None else float(temp)
            key: tuple[Any, ...] = (row["judge"], row["condition"], row["prompt_format"], row["cot"])
            key += (row["default_mode"], temperature_label(temp), row["trial"])
            entry = groups.setdefault(
                key,
                {
                    "judge": row["judge"],
                    "condition": row["condition"],
                    "variant": variant_label(row["prompt_format"], bool(row["cot"]), row["default_mode"]),
                    "temperature": temperature_label(temp),
                    "trial": row["trial"],
                    "metrics": {},
                    "error": row.get("judge_error"),
                    "_store_key": (
                        row["judge"],
                        row["condition"],
                        f"{row['prompt_format']}-cot{int(bool(row['cot']))}-d{row['default_mode']}",
                        "default" if math.isnan(temp) else repr(temp),
                        row["trial"],
                    ),
                },
            )
            metric = entry["metrics"].setdefault(
                row["metric"],
                {
                    "verdict": _num(row["verdict"]),
                    "parse_ok": row["parse_ok"],
                    "rationale": row.get("rationale"),
                },
            )
            metric.setdefault("reference", {})[row["scoring_mode"]] = _num(row["reference"])
        stored = self._stored(record_id, generator, generator_trial)
        out = []
        for entry in groups.values():
            unit = stored.get(entry.pop("_store_key"))
            entry["raw_output"] = unit.get("raw_output") if unit else None
            entry["rationales"] = unit.get("rationales") if unit else None
            out.append(entry)
        out.sort(key=lambda e: (e["judge"], e["condition"], e["variant"], e["temperature"], e["trial"]))
        return out

    def _stored(self, record_id: str, generator: str, generator_trial: int) -> dict[tuple[Any, ...], Any]:
        """The judge units of this item in run.sqlite (raw answers, rationales), read without writing;
        empty when the folder has no store or it cannot be read."""
        try:
            units = self.folder.units(
                columns=["judge", "condition", "variant", "temperature", "trial", "result"],
                filters=[
                    ("stage", "==", "judge"),
                    ("record_id", "==", record_id),
                    ("generator", "==", generator),
                    ("generator_trial", "==", generator_trial),
                ],
            )
        except RunFolderError:
            return {}
        out: dict[tuple[Any, ...], Any] = {}
        for judge, condition, variant, temperature, trial, result in units.itertuples(index=False):
            try:
                decoded = json.loads(result) if result else {}
            except ValueError:
                decoded = {}
            out[(judge, condition, variant, temperature, int(trial))] = (
                decoded if isinstance(decoded, dict) else {}
            )
        return out

    # ------------------------------------------------------------------ the record

    def record(self, base_id: str, difficulty: str) -> dict[str, Any]:
        """The record's query at ``difficulty``, its tools and its GT, or why they cannot be shown."""
        if self.dataset is None or not self.dataset.is_file():
            return {"missing": f"the dataset file {self.dataset} is not there (moved or deleted)"}
        offset = self._line_offsets().get(base_id)
        if offset is None:
            return {"missing": f"record {base_id!r} is not in {self.dataset}"}
        with self.dataset.open("rb") as handle:
            handle.seek(offset)
            line = handle.readline().decode("utf-8", errors="replace").rstrip("\r\n")
        try:
            record = parse_line(line, self.dataset, 0, None)
        except LayoutError as exc:
            return {"missing": str(exc)}
        return {
            "topology": record.topology,
            "domain": record.domain,
            "query": record.queries.get(difficulty),  # type: ignore[call-overload]
            "queries": dict(record.queries),
            "system_prompt": record.system_prompt,
            "scenario": record.scenario,
            "source": record.source,
            "gt_known": record.gt_known,  # false: no expected calls were given (no GT, no reference)
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in record.tools
            ],
            "gt": [
                {
                    "name": s.call.name,
                    "arguments": s.call.arguments,
                    "output": s.output,
                    "depends_on": s.depends_on,
                }
                for s in record.gt
            ],
        }

    def _line_offsets(self) -> dict[str, int]:
        with self._lock:
            if self._offsets is None:
                self._offsets = _index_lines(self.dataset) if self.dataset else {}
            return self._offsets


def _index_lines(path: Path) -> dict[str, int]:
    """Record id -> byte offset of its line (the id read from the line's head; a line whose head does not
    name it is parsed whole)."""
    out: dict[str, int] = {}
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            match = _ID.search(line, 0, 400)
            if match:
                out.setdefault(json.loads(b'"' + match.group(1) + b'"'), offset)
            elif line.strip():
                try:
                    value = json.loads(line)
                except ValueError:
                    value = None
                if isinstance(value, dict) and isinstance(value.get("id"), str):
                    out.setdefault(value["id"], offset)
            offset += len(line)
    return out


def _prediction(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("calls_json", "trajectory_json"):
        text = out.pop(key, None)
        name = key.removesuffix("_json")
        try:
            out[name] = json.loads(text) if text else None
        except ValueError:
            out[name] = text
    return out


def _num(value: Any) -> float | None:
    if value is None:
        return None
    v = float(value)
    return None if math.isnan(v) else v


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (_num(v) if isinstance(v, float) else v) for k, v in row.items()}
