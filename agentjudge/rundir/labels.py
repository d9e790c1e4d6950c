"""RUNDIR/labels/NAME.jsonl: people's verdicts on a run's items, one file per annotator.

A person labelling a run is one more judge, named ``human/NAME``. Each save appends one JSON line to the
annotator's file (``append_label``: written whole, flushed and fsynced before the page says saved); nothing
is rewritten, so the file is the whole history. An item is one generator output: (record id at a
difficulty, generator, generator trial). A later line for the same item supersedes the earlier one: "later"
is the line's place in the file, not its ``at`` (a clock may be set back). A line without verdicts is a
skip, its reason in ``note``.

A line counts once its newline is written: the last line of a file without one is a save torn by a crash
(the page never said saved) and is skipped with a warning, whatever it holds; the next save cuts it off
before appending (it never counted). Any other line that does not read as a label is an error naming the
file, the line and the field. This module is the one reader and the one writer of the format.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import warnings
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, Field, ValidationError, field_validator, model_validator

from agentjudge.atomic import fsync_folder
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


ANNOTATOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # NAME is a file name: labels/NAME.jsonl


class Shown(Strict):
    """What the labelling page showed the person beside the query, the tools and the generator's calls.

    ``gt``: the GT calls with their outputs (the paper's annotators saw them; false where the record has no
    GT). ``scores``: the programmatic scores; ``verdicts``: the judges' verdicts (both only with
    ``agentjudge label --show-reference``, the paper's non-blind protocol). A label is blind when it saw
    neither. Lines written before the two were told apart carry one ``reference`` key for both."""

    gt: bool
    scores: bool
    verdicts: bool

    @model_validator(mode="before")
    @classmethod
    def _one_reference_key(cls, value: Any) -> Any:
        if isinstance(value, dict) and "reference" in value and not {"scores", "verdicts"} & set(value):
            rest = {k: v for k, v in value.items() if k != "reference"}
            return {**rest, "scores": value["reference"], "verdicts": value["reference"]}
        return value

    @property
    def blind(self) -> bool:
        """Neither the reference's scores nor any judge's verdict was on the page."""
        return not (self.scores or self.verdicts)


class SamplePlace(Strict):
    """Where a labelled item stands in the designed sample it was drawn for (``agentjudge label``'s queue:
    the stratified sample of ``human-sample`` with these ``n``, ``seed`` and ``difficulty``), ``position``
    1-based in the queue's order. The estimators weight such labels by their inclusion probability; a label
    without one (an item opened outside the sample) has no known probability."""

    n: int = Field(ge=1)
    seed: int = Field(ge=0)
    difficulty: Difficulty
    position: int = Field(ge=1)


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
    # added with the label server (optional: readers cope with their absence)
    sample: SamplePlace | None = None  # the designed sample the item belongs to; None: labelled outside it
    seconds: float | None = Field(default=None, ge=0)  # time the page was open on the item before the save

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

    @field_validator("annotator")
    @classmethod
    def _a_file_name(cls, value: str) -> str:
        if not ANNOTATOR_NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a name of letters, digits, '.', '_' or '-' (at most 64)")
        return value

    @property
    def skipped(self) -> bool:
        """A skip: no verdict, the reason in ``note``."""
        return not self.verdicts

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


def label_path(rundir: Path, annotator: str) -> Path:
    """RUNDIR/labels/NAME.jsonl (NAME checked: it becomes a file name)."""
    if not ANNOTATOR_NAME.fullmatch(annotator):
        raise RunFolderError(
            f"annotator {annotator!r}: use letters, digits, '.', '_' or '-' (at most 64, no leading '.')"
        )
    return Path(rundir) / LABELS_DIR / f"{annotator}.jsonl"


def append_label(rundir: Path, label: LabelLine) -> int:
    """Append one line to the annotator's file and return its line number once it is on disk.

    Why each step: the line is one ``write`` of the whole JSON text and its newline under an exclusive
    ``flock`` (two pages of the same annotator never interleave); a torn last line left by a crash is cut off
    first (else the new line would be glued to it and the file would stop reading); ``fsync`` of the file
    (and of the folder when the file is new) before returning, so "saved" on the page survives a power cut.
    Nothing else in the run folder is touched."""
    path = label_path(rundir, label.annotator)
    text = label.model_dump_json(exclude_none=True) + "\n"
    if "\n" in text[:-1]:  # model_dump_json escapes newlines in strings; a raw one would split the line
        raise ValueError("a label line must be one line")
    folder = path.parent
    new_folder = not folder.is_dir()
    folder.mkdir(exist_ok=True)
    if new_folder:
        fsync_folder(folder.parent)
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            _cut_torn_tail(fd, size, path)
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock
    if created:
        fsync_folder(folder)
    return data.count(b"\n") + 1


def _cut_torn_tail(fd: int, size: int, path: Path) -> None:
    """Truncate the file after its last newline: the tail is a save a crash tore (never reported saved)."""
    data = os.pread(fd, size, 0)
    keep = data.rfind(b"\n") + 1
    torn_line = data.count(b"\n") + 1
    warnings.warn(
        f"{path}, line {torn_line}: cut off before saving: a line torn by a crash "
        f"({size - keep} bytes, never reported saved)",
        TornLabelWarning,
        stacklevel=3,
    )
    os.ftruncate(fd, keep)
