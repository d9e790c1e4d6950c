"""RUNDIR/labels/NAME.jsonl: people's verdicts on a run's items, one file per annotator.

A person labelling a run is one more judge, named ``human/NAME``. Each save appends one JSON line to the
annotator's file (flushed and fsynced by the writer before the page says saved); nothing is rewritten, so
the file is the whole history. An item is one generator output: (record id at a difficulty, generator,
generator trial). A later line for the same item supersedes the earlier one: "later" is the line's place
in the file, not its ``at`` (a clock may be set back).

A line counts once its newline is written: the last line of a file without one is a save torn by a crash
(the page never said saved) and is skipped with a warning, whatever it holds. Any other line that does not
read as a label is an error naming the file, the line and the field.
"""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, Field, ValidationError, field_validator, model_validator

from agentjudge.rundir.errors import RunFolderError, validation_problem
from agentjudge.types import Difficulty, Metric, Strict

LABELS_DIR = "labels"
SCALE = (0.0, 0.5, 1.0)  # the judges' scale


def _on_the_scale(value: Any) -> Any:
    if isinstance(value, bool) or value not in SCALE:  # JSON true/false would pass as 1/0
        raise ValueError(f"{value!r} is not 0, 0.5 or 1")
    return value


Verdict = Annotated[float, BeforeValidator(_on_the_scale)]


class TornLabelWarning(UserWarning):
    """The last line of a labels file without its newline: a save torn by a crash, skipped."""


class Shown(Strict):
    """What the labelling page showed the person beside the query, the tools and the generator's calls."""

    gt: bool  # the GT calls with their outputs (the paper's annotators saw them)
    reference: bool  # the programmatic scores and the judges' verdicts (``--show-reference``: not blind)


class LabelLine(Strict):
    """One save of one annotator on one item."""

    record_id: str = Field(min_length=1)  # "itsm-0007:hard"
    generator: str = Field(min_length=1)
    generator_trial: int = Field(ge=0)
    difficulty: Difficulty
    verdicts: dict[Metric, Verdict]  # under the metric names of ``types.METRICS``
    note: str
    annotator: str = Field(min_length=1)  # NAME: the judge ``human/NAME``, the file labels/NAME.jsonl
    shown: Shown
    at: AwareDatetime  # when it was saved, UTC

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.utcoffset() != timedelta(0):
            raise ValueError("not a UTC time (give it with Z or +00:00)")
        return value

    @model_validator(mode="after")
    def _difficulty_of_the_record(self) -> LabelLine:
        if self.record_id.rpartition(":")[2] != self.difficulty:
            raise ValueError(f"record_id {self.record_id!r} is not at difficulty {self.difficulty!r}")
        return self

    @property
    def item(self) -> tuple[str, str, int]:
        """The generator output labelled: (record id, generator, generator trial)."""
        return (self.record_id, self.generator, self.generator_trial)

    @property
    def judge(self) -> str:
        """The judge name the labels go by beside the models: ``human/NAME``."""
        return f"human/{self.annotator}"


def read_label_file(path: Path) -> list[LabelLine]:
    """Every line of one annotator's file, in file order (a torn last line skipped with a warning)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunFolderError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    if lines[-1].strip():  # no newline after the last line: torn
        warnings.warn(
            f"{path}, line {len(lines)}: skipped: the line was not finished (a save torn by a crash)",
            TornLabelWarning,
            stacklevel=3,
        )
    out: list[LabelLine] = []
    for number, raw in enumerate(lines[:-1], start=1):
        if not raw.strip():
            continue
        where = f"{path}, line {number}"
        try:
            value: Any = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise RunFolderError(f"{where}: not UTF-8 text") from None
        except ValueError as exc:
            raise RunFolderError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise RunFolderError(f"{where}: not a JSON object")
        try:
            label = LabelLine.model_validate(value)
        except ValidationError as exc:
            raise RunFolderError(f"{where}: {validation_problem(exc)}") from None
        if label.annotator != path.stem:
            raise RunFolderError(
                f"{where}: field annotator: {label.annotator!r} in the file of annotator {path.stem!r}"
            )
        out.append(label)
    return out


def read_labels(rundir: Path, history: bool = False) -> list[LabelLine]:
    """The labels of a run folder: every annotator's latest line per item (``history``: every line), by
    annotator name, then in file order. None written yet: an empty list."""
    folder = Path(rundir) / LABELS_DIR
    if not folder.is_dir():
        return []
    out: list[LabelLine] = []
    for path in sorted(folder.glob("*.jsonl")):
        lines = read_label_file(path)
        if history:
            out.extend(lines)
            continue
        latest: dict[tuple[str, str, int], LabelLine] = {}
        for label in lines:
            latest.pop(label.item, None)  # re-inserted: the item goes where its latest save is
            latest[label.item] = label
        out.extend(latest.values())
    return out
