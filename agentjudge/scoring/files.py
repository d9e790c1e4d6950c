"""`agentjudge score`: the programmatic scorer (§6) over a records file and a predictions file.

Failed predictions (``error`` set, no calls) are not scored — a failure is not a zero — but they are counted
and printed, so a generator that fails often cannot look better than it is by having fewer rows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentjudge import strict_json
from agentjudge.errors import InputError
from agentjudge.rundir.columns import SCORE_COLUMNS
from agentjudge.rundir.predictions import read_placed_predictions
from agentjudge.types import Prediction, Record, ScoringMode


class ScoreInputError(InputError):
    """Bad predictions input; the message names the file, the row and the field."""


def score_rows(
    records: list[Record],
    predictions: list[Prediction],
    modes: list[ScoringMode],
    lenient: bool,
    places: list[str] | None = None,
    data: Path | None = None,
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """One row per (successful prediction, mode) and the count of failed predictions per generator.
    ``places``: where each prediction is ("FILE, line N"), and ``data`` the records file, for the message
    of a prediction that does not fit the records."""
    from agentjudge.scoring.scorer import prepare, score_prediction, score_row

    by_id = {r.id: r for r in records}
    prepared: dict[str, Any] = {}
    failed: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    for i, p in enumerate(predictions):
        where = f"{places[i]}: " if places is not None else ""
        record = by_id.get(p.base_id)
        if record is None:
            raise ScoreInputError(
                f"{where}prediction {p.record_id} ({p.generator}): field base_id: {p.base_id!r} not in "
                f"records{f' ({data})' if data is not None else ''}"
            )
        if p.record_id != record.record_id(p.difficulty):
            raise ScoreInputError(
                f"{where}prediction {p.record_id}: field record_id disagrees with base_id and difficulty"
            )
        if p.calls is None:
            failed[p.generator] += 1
            continue
        if record.id not in prepared:
            prepared[record.id] = prepare(record)
        state: tuple[bool | None, float | None] | None = None
        for i, mode in enumerate(modes):
            s = score_prediction(record, p, mode, lenient=lenient, prepared=prepared[record.id],
                                 state=state, with_state=i == 0)  # fmt: skip
            state = (s.state_match, s.writes_done)
            rows.append(score_row(record, p.difficulty, s))
    return rows, failed


def value_match_lines(records: list[Record], predictions: list[Prediction]) -> list[dict[str, Any]]:
    """Per scored prediction, which accepted value each GT argument's generated value matched (for p_value):
    the index in the record's accepted list ("accepted_values" in the layout; 0 for a record without
    one) and that value itself, "omitted" when the answer allows leaving it out, or null when nothing
    matched. One line per prediction, for reading which of several right answers a generator gave."""
    from agentjudge.scoring.scorer import value_matches

    by_id = {r.id: r for r in records}
    lines: list[dict[str, Any]] = []
    for p in predictions:
        record = by_id[p.base_id]
        if p.calls is None:
            continue
        calls = []
        for pair in value_matches(record, p.calls):
            step = record.gt[pair["expected"]]
            accepted = step.accepted or {}
            arguments = {}
            for key, which in pair["arguments"].items():
                alts = accepted.get(key, [step.call.arguments.get(key)])
                value = alts[which] if isinstance(which, int) and which < len(alts) else None
                arguments[key] = {"matched": which, "value": value}
            calls.append({**pair, "arguments": arguments})
        lines.append({"record_id": p.record_id, "generator": p.generator, "trial": p.trial, "calls": calls})
    return lines


def write_scores(rows: list[dict[str, Any]], out: Path, tmp: Path | None = None) -> None:
    """The scores table as ``out``'s suffix says, written to ``tmp`` (the temporary file of
    ``atomic.replacing``) or, when none is given, to ``out`` whole."""
    if out.suffix not in (".parquet", ".csv"):
        raise ScoreInputError(f"{out}: output must end in .parquet or .csv")
    if tmp is None:
        from agentjudge.atomic import replacing

        with replacing(out) as written:
            write_scores(rows, out, written)
        return
    frame = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    frame["state_match"] = frame["state_match"].astype("boolean")  # nullable: None = no environment
    if out.suffix == ".parquet":
        frame.to_parquet(tmp, index=False)
    else:
        frame.to_csv(tmp, index=False)


@dataclass(frozen=True)
class Scored:
    """What ``score_files`` wrote: the scores file (one row per successful prediction and mode), and the
    value-matches file when asked; the predictions read, and the failed ones per generator (not scored)."""

    out: Path
    modes: tuple[ScoringMode, ...]
    lenient: bool
    predictions: int
    failed: dict[str, int]
    generators: dict[str, int]  # predictions per generator
    rows: list[dict[str, Any]]
    value_matches: Path | None
    value_match_lines: int

    @property
    def scored(self) -> int:
        return self.predictions - sum(self.failed.values())

    def means(self) -> pd.DataFrame:
        """Each metric's mean per scoring mode and generator."""
        metrics = ["p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag"]
        return pd.DataFrame(self.rows).groupby(["scoring_mode", "generator"])[metrics].mean()

    def state_match(self) -> tuple[int, int, int] | None:
        """(predictions ending in the GT's end state, predictions with an environment, those without);
        None when no record has an environment."""
        frame = pd.DataFrame(self.rows)
        per_prediction = frame.loc[
            frame["scoring_mode"] == self.modes[0], "state_match"
        ]  # one per prediction
        known = per_prediction.dropna()
        if not len(known):
            return None
        return int(known.astype(bool).sum()), len(known), len(per_prediction) - len(known)


def scoring_modes(mode: str) -> list[ScoringMode]:
    """``--mode``: paper, strict or both."""
    if mode == "both":
        return ["paper", "strict"]
    if mode in ("paper", "strict"):
        return [mode]  # type: ignore[list-item]
    raise ScoreInputError(f"--mode must be paper, strict or both, not {mode!r}")


def score_files(
    data: Path, predictions: Path, out: Path, mode: str, lenient: bool, value_matches_out: Path | None = None
) -> Scored:
    """Read, score, write; bad input (flags, paths, files) raises ``ScoreInputError`` (or the reader's
    ``LayoutError``) before anything is written."""
    from agentjudge.atomic import replacing_files
    from agentjudge.fserrors import out_path_problem
    from agentjudge.rundir.records import read_records

    modes = scoring_modes(mode)
    if out.suffix not in (".parquet", ".csv"):
        raise ScoreInputError(f"{out}: output must end in .parquet or .csv")
    if (problem := out_path_problem(out, "file")) is not None:
        raise ScoreInputError(f"--out {problem}")
    if value_matches_out is not None:
        if value_matches_out.suffix != ".jsonl":
            raise ScoreInputError(f"{value_matches_out}: --value-matches must end in .jsonl")
        if (problem := out_path_problem(value_matches_out, "file")) is not None:
            raise ScoreInputError(f"--value-matches {problem}")
    try:
        records = read_records(data)
        placed = read_placed_predictions(predictions)
        if not placed:
            raise ScoreInputError(f"{predictions}: no predictions")
        preds = [p for _, p in placed]
        rows, failed = score_rows(records, preds, modes, lenient, [w for w, _ in placed], data)
        matches = value_match_lines(records, preds) if value_matches_out is not None else []
        targets = [out] if value_matches_out is None else [out, value_matches_out]
        with replacing_files(targets) as temps:  # both files, or neither
            write_scores(rows, out, temps[0])
            if value_matches_out is not None:
                text = "".join(
                    strict_json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in matches
                )
                temps[1].write_text(text, encoding="utf-8")
    except InputError:
        raise
    except ValueError as exc:  # a broken GT trace
        raise ScoreInputError(str(exc)) from exc
    return Scored(
        out=out,
        modes=tuple(modes),
        lenient=lenient,
        predictions=len(preds),
        failed=dict(failed),
        generators=dict(Counter(p.generator for p in preds)),
        rows=rows,
        value_matches=value_matches_out,
        value_match_lines=len(matches),
    )
