"""`agentjudge score`: the programmatic scorer (§6) over a records file and a predictions file.

Failed predictions (``error`` set, no calls) are not scored — a failure is not a zero — but they are counted
and printed, so a generator that fails often cannot look better than it is by having fewer rows.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from agentjudge import strict_json
from agentjudge.errors import InputError
from agentjudge.rundir.columns import SCORE_COLUMNS
from agentjudge.rundir.predictions import read_predictions
from agentjudge.types import Prediction, Record, ScoringMode


class ScoreInputError(InputError):
    """Bad predictions input; the message names the file, the row and the field."""


def score_rows(
    records: list[Record], predictions: list[Prediction], modes: list[ScoringMode], lenient: bool
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """One row per (successful prediction, mode) and the count of failed predictions per generator."""
    from agentjudge.scoring.scorer import prepare, score_prediction, score_row

    by_id = {r.id: r for r in records}
    prepared: dict[str, Any] = {}
    failed: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    for p in predictions:
        record = by_id.get(p.base_id)
        if record is None:
            raise ScoreInputError(
                f"prediction {p.record_id} ({p.generator}): base_id {p.base_id!r} not in records"
            )
        if p.record_id != record.record_id(p.difficulty):
            raise ScoreInputError(f"prediction {p.record_id}: record_id disagrees with base_id/difficulty")
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


def write_scores(rows: list[dict[str, Any]], out: Path) -> None:
    frame = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    frame["state_match"] = frame["state_match"].astype("boolean")  # nullable: None = no environment
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".parquet":
        frame.to_parquet(out, index=False)
    elif out.suffix == ".csv":
        frame.to_csv(out, index=False)
    else:
        raise ScoreInputError(f"{out}: output must end in .parquet or .csv")


def score_cli(
    data: Path, predictions: Path, out: Path, mode: str, lenient: bool, value_matches_out: Path | None = None
) -> int:
    """Read, score, write, print a summary; 0 on success, 2 on bad input (message on stderr)."""
    from agentjudge.rundir.records import read_records

    modes: list[ScoringMode]
    if mode == "both":
        modes = ["paper", "strict"]
    elif mode in ("paper", "strict"):
        modes = [mode]  # type: ignore[list-item]
    else:
        print(f"error: --mode must be paper, strict or both, not {mode!r}", file=sys.stderr)
        return 2
    if out.suffix not in (".parquet", ".csv"):
        print(f"error: {out}: output must end in .parquet or .csv", file=sys.stderr)
        return 2
    from agentjudge.fserrors import out_path_problem

    if (problem := out_path_problem(out, "file")) is not None:
        print(f"error: --out {problem}", file=sys.stderr)
        return 2
    if value_matches_out is not None:
        if value_matches_out.suffix != ".jsonl":
            print(f"error: {value_matches_out}: --value-matches must end in .jsonl", file=sys.stderr)
            return 2
        if (problem := out_path_problem(value_matches_out, "file")) is not None:
            print(f"error: --value-matches {problem}", file=sys.stderr)
            return 2
    try:
        records = read_records(data)
        preds = read_predictions(predictions)
        if not preds:
            raise ValueError(f"{predictions}: no predictions")
        rows, failed = score_rows(records, preds, modes, lenient)
        matches = value_match_lines(records, preds) if value_matches_out is not None else []
        write_scores(rows, out)
        if value_matches_out is not None:
            value_matches_out.parent.mkdir(parents=True, exist_ok=True)
            text = "".join(
                strict_json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in matches
            )
            value_matches_out.write_text(text, encoding="utf-8")
    except ValueError as exc:  # LayoutError, ScoreInputError, a broken GT trace
        print(f"error: {exc}", file=sys.stderr)
        return 2
    n_scored = len(preds) - sum(failed.values())
    print(f"scored {n_scored} of {len(preds)} predictions ({', '.join(modes)}"
          f"{', lenient' if lenient else ''}) -> {out}")  # fmt: skip
    if value_matches_out is not None:
        print(
            f"which accepted value each argument matched: {len(matches)} predictions -> {value_matches_out}"
        )
    for gen in sorted({p.generator for p in preds}):
        if failed[gen]:
            total = sum(1 for p in preds if p.generator == gen)
            print(f"  {gen}: {failed[gen]} of {total} predictions failed (not scored)")
    if rows:
        frame = pd.DataFrame(rows)
        metrics = ["p_tool", "p_param", "p_seq", "p_cov", "p_value", "p_seq_dag"]
        summary = frame.groupby(["scoring_mode", "generator"])[metrics].mean()
        print(summary.round(3).to_string())
        per_prediction = frame.loc[frame["scoring_mode"] == modes[0], "state_match"]  # one row per prediction
        known = per_prediction.dropna()
        if len(known):
            matched = int(known.astype(bool).sum())
            without = len(per_prediction) - len(known)
            pct = 100 * matched / len(known)
            print(
                f"state_match: {matched} of {len(known)} scored predictions ({pct:.1f} %) "
                "end in the GT's end state when their calls are run in the record's environment"
                + (f"; {without} on records without an environment are not counted" if without else "")
            )
    return 0
