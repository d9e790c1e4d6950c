"""The predictions file format (``predictions.parquet`` of a run folder, ``infer --out``, ``score``'s input):
one row per (record at a difficulty, generator trial), the columns of ``columns.PREDICTION_COLUMNS``.

One reader and one writer for every verb: ``infer`` writes and resumes these files, ``score`` reads them, a
run folder's export writes the same columns. A row a person wrote by hand needs only the columns scoring
reads (``REQUIRED_PREDICTION_COLUMNS``); the others default to "unknown" (no tokens, no price). Every error
names the file, the line (JSONL) or row (Parquet) and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentjudge import strict_json
from agentjudge.errors import InputError
from agentjudge.rundir.columns import PREDICTION_COLUMNS
from agentjudge.types import DIFFICULTIES, Prediction, ToolCall, Trajectory, Usage

# the subset of a predictions row that scoring needs; the rest (tokens, price, trajectory) is optional
REQUIRED_PREDICTION_COLUMNS = (
    "record_id",
    "base_id",
    "difficulty",
    "generator",
    "trial",
    "calls_json",
    "error",
)


class PredictionsFileError(InputError):
    """A predictions file that cannot be read; the message names the file, the line or row and the field."""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def trajectory_fields(prediction: Prediction | None) -> dict[str, Any]:
    """The predictions table's interactive columns (null for single-shot predictions)."""
    traj = prediction.trajectory if prediction is not None else None
    if traj is None:
        generation = "single_shot" if prediction is not None and prediction.calls is not None else None
        return {"generation": generation, "turns": None, "stop_reason": None, "trajectory_json": None}
    return {
        "generation": "interactive",
        "turns": traj.turns,
        "stop_reason": traj.stop_reason,
        "trajectory_json": traj.model_dump_json(),
    }


def read_trajectory(row: dict[str, Any], where: str) -> Trajectory | None:
    """A predictions row's trajectory (None for single-shot rows and files without the column)."""
    text: Any = row.get("trajectory_json")
    if _missing(text):
        return None
    try:
        return Trajectory.model_validate_json(text)
    except ValueError as exc:
        raise PredictionsFileError(f"{where}: field trajectory_json is not a trajectory: {exc}") from None


def prediction_row(pred: Prediction) -> dict[str, Any]:
    """One Prediction → one flat row, in ``PREDICTION_COLUMNS`` order."""
    calls = (
        None
        if pred.calls is None
        else strict_json.dumps([c.model_dump() for c in pred.calls], ensure_ascii=False)
    )
    return {
        "record_id": pred.record_id,
        "base_id": pred.base_id,
        "difficulty": pred.difficulty,
        "generator": pred.generator,
        "trial": pred.trial,
        "calls_json": calls,
        "raw_output": pred.raw_output,
        "error": pred.error,
        "simulated": pred.simulated,
        "prompt_tokens": pred.usage.prompt_tokens,
        "completion_tokens": pred.usage.completion_tokens,
        "cost_usd": pred.usage.known_cost_usd,  # null: some call had no known price
        "cached": pred.usage.cached,
        **trajectory_fields(pred),
        "cached_prompt_tokens": pred.usage.cached_prompt_tokens,
    }


def _int(row: dict[str, Any], column: str, where: str, default: int | None = None) -> int:
    value: Any = row.get(column)
    if _missing(value):
        if default is None:
            raise PredictionsFileError(f"{where}: field {column} is empty")
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise PredictionsFileError(f"{where}: field {column}: {value!r} is not an integer") from None
    if number != value and not isinstance(value, str):
        raise PredictionsFileError(f"{where}: field {column}: {value!r} is not an integer")
    return number


def row_to_prediction(row: dict[str, Any], where: str) -> Prediction:
    """A row back to a Prediction; ``where`` ("FILE, line N" / "FILE, row N") names the row in errors.

    A row holds either calls or an error, never both, never neither (a failure is not an empty call list).
    """
    missing = [c for c in REQUIRED_PREDICTION_COLUMNS if c not in row]
    if missing:
        raise PredictionsFileError(f"{where}: missing field(s) {', '.join(missing)}")
    error = None if _missing(row["error"]) else str(row["error"])
    calls: list[ToolCall] | None = None
    if _missing(row["calls_json"]):
        if error is None:
            raise PredictionsFileError(f"{where}: field calls_json is empty but error is not set")
    else:
        if error is not None:
            raise PredictionsFileError(f"{where}: both calls_json and error are set")
        try:
            decoded = json.loads(row["calls_json"])
            if not isinstance(decoded, list):
                raise ValueError(f"a JSON {type(decoded).__name__}, not a list")
            calls = [ToolCall.model_validate(c) for c in decoded]
        except (TypeError, ValueError) as exc:
            reason = str(exc).splitlines()[0]
            raise PredictionsFileError(
                f"{where}: field calls_json is not a JSON list of calls: {reason}"
            ) from None
    if row["difficulty"] not in DIFFICULTIES:
        raise PredictionsFileError(
            f"{where}: field difficulty: {row['difficulty']!r} is not one of {', '.join(DIFFICULTIES)}"
        )
    cost: Any = row.get("cost_usd")
    raw = row.get("raw_output")
    return Prediction(
        record_id=str(row["record_id"]),
        base_id=str(row["base_id"]),
        difficulty=row["difficulty"],
        generator=str(row["generator"]),
        trial=_int(row, "trial", where),
        calls=calls,
        raw_output="" if _missing(raw) else str(raw),
        error=error,
        simulated=bool(row.get("simulated") or False),
        trajectory=read_trajectory(row, where),
        usage=Usage(
            prompt_tokens=_int(row, "prompt_tokens", where, default=0),
            completion_tokens=_int(row, "completion_tokens", where, default=0),
            cost_usd=0.0 if _missing(cost) else float(cost),
            cost_known=not _missing(cost),  # null: unknown (the priced part is not kept in the file)
            cached=bool(row.get("cached") or False),
            cached_prompt_tokens=_int(row, "cached_prompt_tokens", where, default=0),
        ),
    )


def torn_last_line(path: Path) -> int | None:
    """The number of a JSON-lines file's last line when a write was cut off in it (no line end after it and
    not JSON: ``infer`` appends each prediction as it finishes, and a full disk or a killed process can stop
    one half way), else None. What a line end closes was written whole."""
    path = Path(path)
    if path.suffix != ".jsonl" or not path.is_file():
        return None
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return None
    last = data.rsplit(b"\n", 1)[-1]
    try:
        json.loads(last)
    except ValueError:  # also not UTF-8: cut inside a character
        return data.count(b"\n") + 1
    return None


def read_predictions(path: Path, drop_torn_line: bool = False) -> list[Prediction]:
    """Predictions from a ``.jsonl`` or ``.parquet`` file. ``drop_torn_line``: a JSON-lines file's last line
    that a write was cut off in (``torn_last_line``) is left out instead of refused (a resumed ``infer``
    runs its unit again)."""
    return [p for _, p in read_placed_predictions(path, drop_torn_line)]


def read_placed_predictions(path: Path, drop_torn_line: bool = False) -> list[tuple[str, Prediction]]:
    """``read_predictions`` with where each prediction is ("FILE, line N" / "FILE, row N"), for the
    messages of a verb that checks them further (``score``)."""
    path = Path(path)
    if not path.is_file():
        raise PredictionsFileError(f"{path}: no such file")
    if path.suffix == ".parquet":
        import pandas as pd

        try:
            rows = pd.read_parquet(path).to_dict("records")
        except Exception as exc:  # pyarrow's own errors: a truncated or foreign file
            raise PredictionsFileError(f"{path}: not a readable Parquet file ({exc})") from None
        where = [f"{path}, row {i}" for i in range(1, len(rows) + 1)]
        return _unique([(w, row_to_prediction(r, w)) for w, r in zip(where, rows, strict=True)])
    if path.suffix not in (".jsonl", ".json"):
        raise PredictionsFileError(f"{path}: predictions must be .jsonl or .parquet")
    out: list[tuple[str, Prediction]] = []
    torn = torn_last_line(path) if drop_torn_line else None
    try:
        raw = path.read_bytes()
        if torn is not None:
            raw = raw[: raw.rfind(b"\n") + 1]
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PredictionsFileError(f"{path}: not a text file (predictions are JSON lines)") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise PredictionsFileError(f"{path}, line {lineno}: not valid JSON ({exc})") from None
        if not isinstance(row, dict):
            raise PredictionsFileError(f"{path}, line {lineno}: not a JSON object")
        out.append((f"{path}, line {lineno}", row_to_prediction(row, f"{path}, line {lineno}")))
    return _unique(out)


def _unique(rows: list[tuple[str, Prediction]]) -> list[tuple[str, Prediction]]:
    """The predictions, refused when one (record at a difficulty, generator, trial) is there twice: it would
    be scored and counted twice (a file joined from two, a line pasted again)."""
    first: dict[tuple[str, str, int], str] = {}
    for where, p in rows:
        key = (p.record_id, p.generator, p.trial)
        if key in first:
            raise PredictionsFileError(
                f"{where}: prediction {p.record_id} of {p.generator} (trial {p.trial}) is there twice, first "
                f"at {first[key].rsplit(', ', 1)[1]}; keep one of them"
            )
        first[key] = where
    return rows


def write_predictions(path: Path, predictions: Iterable[Prediction]) -> None:
    """Write all predictions, replacing the file whole (``atomic.replacing``); format by suffix."""
    from agentjudge.atomic import replacing

    rows = [prediction_row(p) for p in predictions]
    with replacing(path) as tmp:
        if path.suffix == ".parquet":
            import pandas as pd

            frame = pd.DataFrame(rows, columns=list(PREDICTION_COLUMNS))
            frame["cost_usd"] = frame["cost_usd"].astype("float64")  # nullable double, also when all null
            frame.to_parquet(tmp, index=False)
        else:
            with tmp.open("w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(strict_json.dumps(row, ensure_ascii=False) + "\n")
