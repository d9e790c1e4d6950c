"""``human_sample``, ``label`` and ``human_agree``: people check the reference and the judges."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentjudge.errors import InputError

if TYPE_CHECKING:
    from agentjudge.people.agree import PeopleTables
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
class Labelling:
    """A label server on its own thread until ``close``: its ``url``, the queue's size, the labels
    ``annotator`` already saved in it (``labelled``, ``skipped``), where they go (``labels_file``), and
    ``warning`` when it listens beyond this machine."""

    url: str
    queue: int
    labelled: int
    skipped: int
    labels_file: Path
    difficulty: str
    warning: str | None
    server: Any

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def label(
    rundir: Path | str,
    *,
    annotator: str,
    n: int = 120,
    seed: int = 0,
    difficulty: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    show_reference: bool = False,
) -> Labelling:
    """Serve the labelling page of a run for ``annotator`` (``agentjudge label``): the stratified sample of
    ``n`` outputs at ``difficulty`` (hard; a run with one difficulty: that one) in a seeded order, resuming
    where the annotator stopped; labels go to RUNDIR/labels/NAME.jsonl and nowhere else. Raises
    ``InputError`` for a folder, name or design that cannot be used or an address that cannot be listened
    on. Beyond loopback the server warns (``ExposedServerWarning``; also in ``warning``)."""
    import warnings

    from agentjudge.people.server import start
    from agentjudge.viewer.serving import ExposedServerWarning

    if n < 1:
        raise InputError(f"--n {n}: must be >= 1")
    if seed < 0:
        raise InputError(f"--seed {seed}: must be >= 0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ExposedServerWarning)
        try:
            server, session = start(
                Path(rundir),
                annotator,
                n=n,
                seed=seed,
                difficulty=difficulty,
                show_reference=show_reference,
                host=host,
                port=port,
            )
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    warning = next((str(w.message) for w in caught if issubclass(w.category, ExposedServerWarning)), None)
    if warning is not None:  # said once more, to whoever watches this process's warnings
        warnings.warn(warning, ExposedServerWarning, stacklevel=2)
    state = session.queue_state()
    shown = f"[{host}]" if ":" in host else host
    return Labelling(
        url=f"http://{shown}:{server.server_address[1]}/",
        queue=len(state["queue"]),
        labelled=int(state["labelled"]),
        skipped=int(state["skipped"]),
        labels_file=session.path,
        difficulty=session.design.difficulty,
        warning=warning,
        server=server,
    )


@dataclass(frozen=True)
class Agreement:
    """The reference's agreement with people (RUNDIR/human/agreement.csv): one row per scope (overall,
    metric, topology) and group, with a cluster-bootstrap 95 % CI. From the labels of ``agentjudge label``
    (``labels`` None) also ``people``: every judge against people, people against each other, the label
    budget (``agentjudge.people.agree.PeopleTables``); None on the CSV path."""

    out: Path
    table: Any  # pandas.DataFrame: scope, group, agreement, ci_lo, ci_hi, n_labels, missing
    people: PeopleTables | None = None


def human_agree(
    rundir: Path | str,
    labels: Path | str | None = None,
    *,
    resamples: int = 1000,
    seed: int = 0,
    target_ci: float = 3.0,
    unweighted: bool = False,
) -> Agreement:
    """People against the programmatic reference and against every judge (``agentjudge human-agree``).
    ``labels``: an annotated sample CSV (the reference's agreement only); None: the run's labels
    (RUNDIR/labels/*.jsonl), which also writes judges_vs_people.csv, annotators.csv and, where outputs have
    no reference, agent_score.csv; ``target_ci``: the label budget's half-width in percentage points;
    ``unweighted``: no inverse-inclusion weights (the published check's treatment). Raises ``InputError``
    (``HumanInputError``) for a bad labels file or a folder without labels."""
    if resamples < 1:
        raise InputError(f"--resamples {resamples}: must be >= 1")
    if seed < 0:
        raise InputError(f"--seed {seed}: must be >= 0")
    if labels is not None:
        from agentjudge.people.validation import write_agreement

        table, out = write_agreement(Path(rundir), Path(labels), resamples, seed)
        return Agreement(out, table)
    from agentjudge.people.agree import write_people_tables

    tables = write_people_tables(Path(rundir), resamples, seed, target_ci, weighted=not unweighted)
    return Agreement(tables.folder / "agreement.csv", tables.agreement, tables)
