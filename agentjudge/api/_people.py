"""``human_sample`` and ``human_agree``: people check the programmatic reference."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentjudge.people.validation import Sample


def human_sample(
    rundir: Path | str,
    *,
    n: int = 120,
    seed: int = 0,
    out: Path | str | None = None,
    difficulty: str = "hard",
) -> Sample:
    """Write a stratified sample of a run's scored predictions for annotators (``agentjudge human-sample``;
    default RUNDIR/human/sample.csv): equal shares per topology, ~70 % with some score below 1. Raises
    ``InputError`` (``HumanInputError``) for an unusable run folder or output path."""
    from agentjudge.people.validation import write_sample

    return write_sample(Path(rundir), n, seed, None if out is None else Path(out), difficulty)


@dataclass(frozen=True)
class Agreement:
    """The reference's agreement with the annotators' labels (RUNDIR/human/agreement.csv): one row per
    scope (overall, metric, topology) and group, with a cluster-bootstrap 95 % CI."""

    out: Path
    table: Any  # pandas.DataFrame: scope, group, agreement, ci_lo, ci_hi, n_labels, missing


def human_agree(rundir: Path | str, labels: Path | str, *, resamples: int = 1000, seed: int = 0) -> Agreement:
    """Agreement of the programmatic reference with human labels, per metric and topology, with CIs
    (``agentjudge human-agree``). Raises ``InputError`` (``HumanInputError``) for a bad labels file."""
    from agentjudge.people.validation import write_agreement

    table, out = write_agreement(Path(rundir), Path(labels), resamples, seed)
    return Agreement(out, table)
