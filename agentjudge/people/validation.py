"""Human validation of the programmatic reference (§8): a stratified sample for annotators, and the
agreement of the reference with their labels, per metric and per topology, with cluster-bootstrap CIs.

Published protocol: 120 hard records, 20 per topology (14 with some score below 1, 6 perfect); annotators
see the query, the tools, the generated calls, the GT calls and the four scores and agree or disagree per
metric. A judge's alignment is best read against this human ceiling, not against 100 %.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentjudge.atomic import replacing
from agentjudge.errors import InputError
from agentjudge.limits import MAX_RESAMPLES, check_range
from agentjudge.rundir import RunFolder
from agentjudge.stats import ClusterBootstrap
from agentjudge.stats.label_sample import select_sample
from agentjudge.types import METRICS, Record

AGREE_COLUMNS = tuple(f"agree_{m}" for m in METRICS)
YES = {"yes", "y", "1", "true", "agree"}
NO = {"no", "n", "0", "false", "disagree"}


class HumanInputError(InputError):
    """Bad input for the human-validation verbs; the message names file, row and column."""


def _tools_compact(record: Record) -> str:
    """'name(req*, opt); …' — enough for an annotator to judge parameter structure."""
    out = []
    for t in record.tools:
        props = t.parameters.get("properties", {}) or {}
        req = set(t.parameters.get("required", []) or [])
        out.append(f"{t.name}(" + ", ".join(f"{k}*" if k in req else k for k in props) + ")")
    return "; ".join(out)


def _calls_compact(calls: list[dict[str, Any]]) -> str:
    return json.dumps(calls, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class Sample:
    """The annotators' CSV ``out``: its rows, the scoring mode the scores are from, the difficulty."""

    out: Path
    rows: tuple[dict[str, Any], ...]
    mode: str
    difficulty: str

    @property
    def per_topology(self) -> dict[str, int]:
        return dict(pd.Series([r["topology"] for r in self.rows]).value_counts().to_dict())


def write_sample(rundir: Path, n: int, seed: int, out: Path | None, difficulty: str = "hard") -> Sample:
    """Write the annotators' CSV (default RUNDIR/human/sample.csv); an unusable run folder or output path
    raises ``HumanInputError`` before anything is written."""
    from agentjudge.fserrors import out_path_problem

    rundir = Path(rundir)
    target = Path(out) if out is not None else rundir / "human" / "sample.csv"
    if (problem := out_path_problem(target, "file")) is not None:
        raise HumanInputError(f"--out {problem}")
    try:
        folder = RunFolder.open(rundir)
        outputs, mode = folder.outputs()
        if mode is None:
            raise HumanInputError(
                f"{folder.table_path('scores')}: not found: the CSV asks people to agree with the "
                "reference's scores, and this run has none (label it in the browser: `agentjudge label`)"
            )
        scored = outputs.dropna(subset=[f"p_{m}" for m in METRICS])
        sample = select_sample(scored, n, seed, difficulty)
        calls = folder.predictions(columns=["record_id", "generator", "trial", "calls_json"])
        sample = sample.merge(calls, on=["record_id", "generator", "trial"], how="left")
        records = {r.id: r for r in folder.records()}
    except InputError:  # RunFolderError and HumanInputError among them
        raise
    except (ValueError, OSError) as exc:
        raise HumanInputError(str(exc)) from exc
    rows = []
    for i, r in enumerate(sample.itertuples(index=False)):
        rec = records.get(str(r.base_id))
        if rec is None:
            raise HumanInputError(f"record {r.base_id!r} (from scores.parquet) is not in the records file")
        rows.append(
            {
                "sample_id": i + 1,
                "record_id": r.record_id,
                "base_id": r.base_id,
                "domain": rec.domain,
                "topology": r.topology,
                "difficulty": r.difficulty,
                "generator": r.generator,
                "trial": r.trial,
                "scoring_mode": mode,
                "query": rec.queries[r.difficulty],
                "tools": _tools_compact(rec),
                "generated_calls": _calls_compact(json.loads(r.calls_json)),
                "gt_calls": _calls_compact([s.call.model_dump() for s in rec.gt]),
                **{f"p_{m}": round(float(getattr(r, f"p_{m}")), 4) for m in METRICS},
                **{c: "" for c in AGREE_COLUMNS},
            }
        )
    cells = [{k: inert(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    with replacing(target) as tmp:
        pd.DataFrame(cells).to_csv(tmp, index=False, quoting=csv.QUOTE_MINIMAL)
    return Sample(target, tuple(rows), mode, difficulty)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(text: str) -> str:
    """A cell a spreadsheet shows as text: one that starts like a formula (``= + - @``, or a tab or carriage
    return before one) gets a leading ``'``, so record text such as ``=HYPERLINK(…)`` in a query is never
    run when an annotator opens the CSV (OWASP's CSV injection advice). The text itself is kept after it."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def parse_label(value: str, where: str) -> float:
    """yes/no, y/n, 1/0, true/false → 1.0/0.0; blank → NaN (missing); anything else is an error."""
    v = value.strip().lower()
    if v == "":
        return float("nan")
    if v in YES:
        return 1.0
    if v in NO:
        return 0.0
    raise HumanInputError(
        f"{where}: {value!r} is not a label (use yes/no, y/n or 1/0; leave blank if unsure)"
    )


def read_labels(path: Path) -> pd.DataFrame:
    """Long table (sample row, metric, topology, base_id, agree) from an annotated sample CSV."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            needed = ["base_id", "topology", *AGREE_COLUMNS]
            missing = [c for c in needed if c not in header]
            if missing:
                raise HumanInputError(f"{path}: missing column(s) {missing}")
            rows = []
            key_columns = next(
                (k for k in (["sample_id"], ["record_id", "generator", "trial"]) if set(k) <= set(header)), []
            )
            first: dict[tuple[str, ...], int] = {}
            for lineno, row in enumerate(reader, start=2):
                if None in row:
                    raise HumanInputError(f"{path}, row {lineno}: more fields than the header has")
                key = tuple(row[c] or "" for c in key_columns)
                if key_columns and key in first:  # each item labelled once: a repeated row counts twice
                    named = ", ".join(f"{c} {v}" for c, v in zip(key_columns, key, strict=True))
                    raise HumanInputError(
                        f"{path}, row {lineno}: repeats row {first[key]} ({named}); label each sampled "
                        "item once (remove the repeated row)"
                    )
                first[key] = lineno
                for m in METRICS:
                    col = f"agree_{m}"
                    if row[col] is None:
                        raise HumanInputError(f"{path}, row {lineno}, column {col}: missing field")
                    rows.append(
                        {
                            "row": lineno,
                            "base_id": row["base_id"],
                            "topology": row["topology"],
                            "metric": m,
                            "agree": parse_label(row[col], f"{path}, row {lineno}, column {col}"),
                        }
                    )
    except (OSError, UnicodeDecodeError) as exc:
        raise HumanInputError(f"{path}: cannot read ({exc})") from None
    except csv.Error as exc:
        raise HumanInputError(f"{path}: not a CSV file ({exc})") from None
    if not rows:
        raise HumanInputError(f"{path}: no data rows")
    out = pd.DataFrame(rows)
    out["metric"] = pd.Categorical(out["metric"], categories=list(METRICS))
    return out


def agreement_tables(labels: pd.DataFrame, resamples: int, seed: int) -> pd.DataFrame:
    """Agreement overall, per metric and per topology with 95 % CIs resampling base scenarios."""
    boot = ClusterBootstrap(labels["base_id"].astype(str).unique(), resamples=resamples, seed=seed)
    df = labels.assign(base_id=labels["base_id"].astype(str))
    parts = []
    for scope, by in (("overall", []), ("metric", ["metric"]), ("topology", ["topology"])):
        t = boot.ratio(df, by, "agree").table("agreement")
        t.insert(0, "scope", scope)
        t["group"] = t[by[0]].astype(str) if by else "all"
        t["missing"] = t["n_failed"]  # blank cells: rows of the group whose label is NaN
        parts.append(t[["scope", "group", "agreement", "ci_lo", "ci_hi", "n_verdicts", "missing"]])
    return pd.concat(parts, ignore_index=True).rename(columns={"n_verdicts": "n_labels"})


def write_agreement(rundir: Path, labels: Path, resamples: int, seed: int) -> tuple[pd.DataFrame, Path]:
    """RUNDIR/human/agreement.csv from the labels file; returns the table and its path. A bad labels file
    raises ``HumanInputError``."""
    check_range("--resamples", resamples, 1, MAX_RESAMPLES)
    long = read_labels(Path(labels))
    if long["agree"].notna().sum() == 0:
        raise HumanInputError(f"{labels}: every agree_* cell is blank; nothing to compare")
    table = agreement_tables(long, resamples, seed)
    out = Path(rundir) / "human" / "agreement.csv"
    with replacing(out) as tmp:
        table.to_csv(tmp, index=False)
    return table, out
