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

from agentjudge.errors import InputError
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
    target.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(target, index=False, quoting=csv.QUOTE_MINIMAL)
    return Sample(target, tuple(rows), mode, difficulty)


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
            for lineno, row in enumerate(reader, start=2):
                if None in row:
                    raise HumanInputError(f"{path}, row {lineno}: more fields than the header has")
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
    long = read_labels(Path(labels))
    if long["agree"].notna().sum() == 0:
        raise HumanInputError(f"{labels}: every agree_* cell is blank; nothing to compare")
    table = agreement_tables(long, resamples, seed)
    out = Path(rundir) / "human" / "agreement.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    return table, out
