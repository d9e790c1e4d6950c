"""One person labelling one run: the queue, what the page shows of an item, and the checked save.

The queue is the stratified sample ``human-sample`` draws (``stats.label_sample``: per topology, imperfect
and perfect outputs in the published 14 : 6) in a seeded order; the page starts at the first item the
annotator has not labelled or skipped, so a restart resumes where they stopped. Any output of the run may
be labelled (the page opens one from its URL); a label records whether its item belongs to the designed
sample (``LabelLine.sample``), which is what lets the estimators weight it by 1/π, and leave out of the
weighted figures the labels that do not.

What the page shows is what a judge with the GT sees: the query, the tools, the generator's calls (and its
trajectory when it acted), the GT calls with their outputs. The programmatic scores and the judges'
verdicts are left out of the answers entirely unless ``show_reference`` (the paper's non-blind protocol,
recorded in every line's ``shown``): a blind page must not carry them where a person could find them.

The state is re-read from the labels file on every request, so two pages of one annotator, or a second
server, stay consistent; the only write is ``rundir.labels.append_label``.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from agentjudge.errors import InputError
from agentjudge.rundir import LabelLine, RunFolder, Shown
from agentjudge.rundir.labels import SamplePlace, append_label, label_path, read_label_file
from agentjudge.stats.label_sample import queue_order, select_sample
from agentjudge.types import DIFFICULTIES, METRICS
from agentjudge.viewer.index import QueryError
from agentjudge.viewer.item import Items

METRIC_NAMES = {
    "tool": "Tool selection",
    "param": "Parameter structure",
    "seq": "Sequence accuracy",
    "cov": "Query coverage",
}
BODY_FIELDS = ("record_id", "generator", "generator_trial", "verdicts", "note")
OPTIONAL_FIELDS = ("seconds",)
MAX_NOTE = 4000


class LabelError(InputError):
    """A request to save a label that names no item, metric or value of the scale: the 400's message."""


def rubric() -> list[dict[str, Any]]:
    """Per metric its name and the judges' one-line anchors for 1, 0.5 and 0 (the judges' own rubric,
    ``prompts/rubric_three_level.md``, so a person and a judge read the same scale)."""
    from agentjudge.judges.prompts import load_template

    text = load_template("rubric_three_level.md")
    out = []
    for key, name in METRIC_NAMES.items():
        block = text.split(name, 1)[1] if name in text else ""
        levels = {}
        for level in ("1.0", "0.5", "0.0"):
            found = re.search(rf"^- {re.escape(level)}: (.+)$", block, flags=re.MULTILINE)
            levels[level.rstrip("0").rstrip(".") or "0"] = found.group(1).strip() if found else ""
        out.append({"key": key, "name": name, "levels": levels})
    return out


@dataclass(frozen=True)
class Design:
    """The queue's design: ``n`` outputs at ``difficulty`` drawn with ``seed``."""

    n: int
    seed: int
    difficulty: str


def default_difficulty(outputs: pd.DataFrame) -> str:
    """hard (the published protocol), or the run's one difficulty when it has only one (imported tasks
    with a single query)."""
    present = [d for d in DIFFICULTIES if (outputs["difficulty"] == d).any()]
    return present[0] if len(present) == 1 else "hard"


class Labelling:
    """The session of annotator NAME on a run folder (checked on open: ``InputError`` names what is wrong)."""

    def __init__(
        self,
        rundir: Path,
        annotator: str,
        n: int = 120,
        seed: int = 0,
        difficulty: str | None = None,
        show_reference: bool = False,
    ) -> None:
        self.rundir = Path(rundir)
        self.path = label_path(self.rundir, annotator)  # RunFolderError for a name that is no file name
        self.annotator = annotator
        self.folder = RunFolder.open(self.rundir)
        if not self.folder.has("predictions"):
            raise InputError(f"{self.folder.table_path('predictions')}: not found (nothing to label yet)")
        self.outputs, self.mode = self.folder.outputs()
        if self.outputs.empty:
            raise InputError(f"{self.folder.table_path('predictions')}: no generator output without an error")
        chosen = difficulty or default_difficulty(self.outputs)
        if chosen not in DIFFICULTIES:
            raise InputError(f"--difficulty {chosen!r}: one of {', '.join(DIFFICULTIES)}")
        self.design = Design(n, seed, chosen)
        try:
            sample = select_sample(self.outputs, n, seed, chosen)
        except ValueError as exc:
            raise InputError(f"{self.rundir}: {exc}") from None
        self.queue = queue_order(sample, seed)[["record_id", "generator", "trial", "difficulty"]]
        self.position = {
            (r.record_id, r.generator, int(r.trial)): i + 1 for i, r in enumerate(self.queue.itertuples())
        }
        self.known = {  # every output of the run: (record id, generator, trial) -> (base id, difficulty)
            (r.record_id, r.generator, int(r.trial)): (r.base_id, r.difficulty)
            for r in self.outputs.itertuples()
        }
        self.items = Items(self.folder)
        self.show_reference = show_reference
        self._labels()  # a labels file that does not read stops the start, not the first save

    # ------------------------------------------------------------------ state

    def _labels(self) -> dict[tuple[str, str, int], LabelLine]:
        """NAME's latest line per item (a torn last line skipped: it was never reported saved)."""
        if not self.path.is_file():
            return {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lines = read_label_file(self.path)
        return {line.item: line for line in lines}

    def queue_state(self) -> dict[str, Any]:
        """``GET /api/queue``: the queue in order with each item labelled, skipped or neither, and where to
        go on (the first item neither labelled nor skipped; None when the queue is done)."""
        latest = self._labels()
        rows, first_open = [], None
        for i, r in enumerate(self.queue.itertuples()):
            line = latest.get((r.record_id, r.generator, int(r.trial)))
            if line is None and first_open is None:
                first_open = i
            rows.append(
                {
                    "position": i + 1,
                    "record_id": r.record_id,
                    "generator": r.generator,
                    "generator_trial": int(r.trial),
                    "difficulty": r.difficulty,
                    "labelled": line is not None and not line.skipped,
                    "skipped": line is not None and line.skipped,
                }
            )
        seconds = [x.seconds for x in latest.values() if x.seconds is not None and not x.skipped]
        return {
            "annotator": self.annotator,
            "judge": f"human/{self.annotator}",
            "labels_file": str(self.path),
            "sample": {"n": self.design.n, "seed": self.design.seed, "difficulty": self.design.difficulty},
            "show_reference": self.show_reference,
            "metrics": rubric(),
            "queue": rows,
            "next": first_open,
            "labelled": sum(r["labelled"] for r in rows),
            "skipped": sum(r["skipped"] for r in rows),
            "outside": sum(1 for item in latest if item not in self.position),
            "seconds_mean": sum(seconds) / len(seconds) if seconds else None,
        }

    # ------------------------------------------------------------------ one item

    def item(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """``GET /api/item?record=&generator=&gtrial=``: what the page shows of one output, the annotator's
        latest label of it, and (only with ``show_reference``) its scores and the judges' verdicts."""
        params = {k: v[-1] for k, v in query.items() if v}
        for name in ("record", "generator"):
            if not params.get(name):
                raise QueryError(f"{name}: required (an item is a record at a difficulty and a generator)")
        try:
            trial = int(params.get("gtrial", "0"))
        except ValueError:
            raise QueryError(f"gtrial: not a whole number: {params['gtrial']!r}") from None
        key = (params["record"], params["generator"], trial)
        if key not in self.known:
            raise QueryError(_not_an_item(*key))
        out = self.items.output(*key)
        label = self._labels().get(key)
        out["position"] = self.position.get(key)
        out["label"] = (
            None
            if label is None
            else {"verdicts": dict(label.verdicts), "note": label.note, "at": label.at.isoformat()}
        )
        if self.show_reference:
            out["scores"] = self.items.scores(*key)
            try:
                out["judges"] = self.items.item(*key)["judges"]
            except QueryError:  # no judge graded this output
                out["judges"] = []
        return out

    # ------------------------------------------------------------------ saving

    def save(self, body: Any) -> dict[str, Any]:
        """``POST /api/labels``: check the body (``LabelError`` naming the field, the item, the metric or the
        value), append the line, and say where it is once it is on disk."""
        line = self.line(body)
        number = append_label(self.rundir, line)
        state = self.queue_state()
        return {
            "saved": True,
            "line": number,
            "at": line.model_dump(mode="json")["at"],
            "labelled": state["labelled"],
            "next": state["next"],
        }

    def line(self, body: Any) -> LabelLine:
        if not isinstance(body, dict):
            raise LabelError("body: not a JSON object")
        unknown = [k for k in body if k not in BODY_FIELDS + OPTIONAL_FIELDS]
        if unknown:
            raise LabelError(f"{unknown[0]}: not a field of a label (send {', '.join(BODY_FIELDS)})")
        missing = [k for k in BODY_FIELDS if k not in body]
        if missing:
            raise LabelError(f"{missing[0]}: required")
        record_id, generator, trial = body["record_id"], body["generator"], body["generator_trial"]
        if not isinstance(record_id, str) or not isinstance(generator, str):
            raise LabelError("record_id and generator: text")
        if isinstance(trial, bool) or not isinstance(trial, int):
            raise LabelError(f"generator_trial: {trial!r} is not a whole number")
        key = (record_id, generator, trial)
        if key not in self.known:
            raise LabelError(_not_an_item(*key))
        verdicts = body["verdicts"]
        if not isinstance(verdicts, dict):
            raise LabelError("verdicts: not an object of metric: 0, 0.5 or 1")
        for metric, value in verdicts.items():
            if metric not in METRICS:
                raise LabelError(f"verdicts: {metric!r} is not a metric ({', '.join(METRICS)})")
            if isinstance(value, bool) or value not in (0, 0.5, 1):
                raise LabelError(f"verdicts.{metric}: {value!r} is not 0, 0.5 or 1")
        note = body["note"]
        if not isinstance(note, str) or len(note) > MAX_NOTE:
            raise LabelError(f"note: text of at most {MAX_NOTE} characters")
        if not verdicts and not note.strip():
            raise LabelError("verdicts: empty, and a skip needs its reason in note")
        seconds = body.get("seconds")
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise LabelError(f"seconds: {seconds!r} is not a number of seconds")
        position = self.position.get(key)
        base_id, difficulty = self.known[key]
        record = self.items.record(base_id, difficulty)
        return LabelLine(
            record_id=record_id,
            generator=generator,
            generator_trial=trial,
            difficulty=difficulty,
            verdicts={m: float(v) for m, v in verdicts.items()},
            note=note,
            annotator=self.annotator,
            shown=Shown(
                gt=bool(record.get("gt")),
                scores=self.show_reference,
                verdicts=self.show_reference,
            ),
            at=datetime.now(UTC),
            sample=None
            if position is None
            else SamplePlace(
                n=self.design.n,
                seed=self.design.seed,
                difficulty=self.design.difficulty,  # type: ignore[arg-type]
                position=position,
            ),
            seconds=None if seconds is None else round(float(seconds), 1),
        )


def _not_an_item(record_id: str, generator: str, trial: int) -> str:
    return (
        f"record_id {record_id!r}, generator {generator!r}, generator_trial {trial}: not an output of this "
        "run (a generator output without an error)"
    )
