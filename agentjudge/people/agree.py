"""``agentjudge human-agree RUNDIR`` without a CSV: people's labels (RUNDIR/labels/*.jsonl, written by
``agentjudge label``) against the reference and against every judge, written to RUNDIR/human/.

The tables are ``analysis._people``'s (the report's section "Against people" prints the same): beside
``agreement.csv`` (the reference against people, per metric and topology) come ``judges_vs_people.csv``
(each judge against people: direct and prediction-powered, with CIs and effective sample size),
``annotators.csv`` (people against each other) and, where outputs have no reference, ``agent_score.csv``
(the agent's score as people give it, by PPI with the judges as the proxy). Every table is computed before
the first file is written, and each file is written whole (a temporary file renamed into place).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from agentjudge.analysis import _people
from agentjudge.errors import InputError

FILES = ("agreement.csv", "judges_vs_people.csv", "annotators.csv", "agent_score.csv")


@dataclass(frozen=True)
class PeopleTables:
    """What ``write_people_tables`` computed and where it wrote it."""

    folder: Path
    written: tuple[Path, ...]
    agreement: pd.DataFrame  # the reference against people (empty: no labelled output has a reference)
    judges: pd.DataFrame  # judges_vs_people.csv
    budget: pd.DataFrame  # labels for ±target per judge and condition (printed)
    annotators: pd.DataFrame  # annotators.csv (empty with one annotator)
    agent: pd.DataFrame  # agent_score.csv (empty when every labelled output has a reference)
    about: tuple[str, ...]  # who labelled what, blind or not, what was left out
    target: float


def write_people_tables(
    rundir: Path, resamples: int = 1000, seed: int = 0, target_ci: float = 3.0, weighted: bool = True
) -> PeopleTables:
    """Compute every table from the run's labels, then write them to RUNDIR/human/. ``target_ci``: the
    half-width in percentage points the label budget aims at. ``InputError`` when the folder has no labels
    or a labels file does not read (nothing written)."""
    if not target_ci > 0:
        raise InputError(f"--target-ci {target_ci}: must be > 0 (percentage points, e.g. 3 for ±3 pp)")
    data = _people.load(Path(rundir), weighted=weighted)
    if data is None:
        raise InputError(
            f"{Path(rundir) / 'labels'}: no labels (label the run with `agentjudge label {rundir} "
            "--annotator NAME`, or give the annotated sample CSV)"
        )
    target = target_ci / 100
    agreement = _people.reference_vs_people(data, resamples, seed)
    judges, budget = _people.judges_vs_people(data, resamples, seed, target)
    pairs = _people.annotators(data, resamples, seed)
    agent = _people.agent_vs_people(data, resamples, seed, target)
    folder = Path(rundir) / "human"
    folder.mkdir(exist_ok=True)
    written = []
    for name, table, keep in (
        ("agreement.csv", agreement, not agreement.empty),
        ("judges_vs_people.csv", judges, True),
        ("annotators.csv", pairs, True),
        ("agent_score.csv", agent, not agent.empty),
    ):
        if keep:
            written.append(_write_csv(table, folder / name))
    return PeopleTables(
        folder=folder,
        written=tuple(written),
        agreement=agreement,
        judges=judges,
        budget=budget,
        annotators=pairs,
        agent=agent,
        about=tuple(_people.describe(data)),
        target=target,
    )


def _write_csv(table: pd.DataFrame, path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            table.to_csv(handle, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
