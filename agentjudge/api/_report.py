"""``report``, ``compare`` and ``view``: what a run folder says, across runs, and item by item."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentjudge.errors import InputError


@dataclass(frozen=True)
class ReportResult:
    """The report written to ``out``: report.html and report.md (tables/, figures/ beside them); the
    analysis sections that failed (each says why in the report) and one line per record source whose own
    report could not be written."""

    out: Path
    sections_failed: int
    missing: tuple[str, ...] = ()
    unfinished: tuple[str, ...] = ()  # the run is unfinished: the report's first line, which says so

    @property
    def html(self) -> Path:
        return self.out / "report.html"

    @property
    def markdown(self) -> Path:
        return self.out / "report.md"

    @property
    def exit_code(self) -> int:
        """The command line's: 0 written, 1 written but some section or source failed."""
        return 1 if self.sections_failed or self.missing else 0


def report(rundir: Path | str, *, resamples: int = 1000, seed: int = 0, ci: str = "expanded") -> ReportResult:
    """Write RUNDIR/report/ (``agentjudge report``): report.md, report.html, tables/*.csv, figures/*.png;
    one report per record source when the run mixes them. ``resamples``: bootstrap resamples (>= 1000 for
    publication); ``ci``: ``expanded`` percentile (default) or ``percentile`` (the paper's). Raises
    ``InputError`` (``RunFolderError``) for a run folder that cannot be reported on."""
    from agentjudge.report.write import write_run_report

    _check(seed)
    written = write_run_report(Path(rundir), resamples, seed, ci)
    return ReportResult(written.out, written.failed, written.missing, written.unfinished)


@dataclass(frozen=True)
class CompareResult:
    """The joined report of several runs in ``out``; judge pairs across runs that share verdict rows."""

    out: Path
    labels: tuple[str, ...]
    sections_failed: int
    overlapping_pairs: int
    unfinished: tuple[str, ...] = ()  # one line per unfinished run (the report's first lines)

    @property
    def exit_code(self) -> int:
        return 1 if self.sections_failed else 0


def compare(
    rundirs: Sequence[Path | str],
    *,
    out: Path | str = "compare",
    resamples: int = 1000,
    seed: int = 0,
    ci: str = "expanded",
) -> CompareResult:
    """One first screen across two or more runs (judges labelled by run), with paired deltas where their
    records overlap (``agentjudge compare``). Raises ``InputError`` for fewer than two runs, a sampled run,
    runs of different record sources, or a folder that cannot be reported on."""
    from agentjudge.report.compare import compare_runs

    _check(seed)
    done = compare_runs([Path(r) for r in rundirs], Path(out), resamples, seed, ci)
    return CompareResult(done.out, done.labels, done.failed, done.overlapping_pairs, done.unfinished)


def _check(seed: int) -> None:
    """The bootstrap's seed (its resamples are checked where they are used)."""
    if seed < 0:
        raise InputError(f"--seed {seed}: must be >= 0")


@dataclass(frozen=True)
class Viewing:
    """A viewer serving a run folder on its own thread until ``close``: its ``url``, the verdict rows it
    indexed, the seconds opening took, and ``warning`` when it listens beyond this machine."""

    url: str
    rows: int
    open_seconds: float
    server: Any
    warning: str | None = None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def view(rundir: Path | str, *, host: str = "127.0.0.1", port: int = 0) -> Viewing:
    """Serve the run folder's item viewer (``agentjudge view``; read, never written); ``port`` 0 picks a free
    one. Raises ``InputError`` for a folder that cannot be opened or an address that cannot be listened on.
    Beyond loopback the server warns (``ExposedServerWarning``; also in ``warning``)."""
    import warnings

    from agentjudge.viewer.server import start
    from agentjudge.viewer.serving import ExposedServerWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ExposedServerWarning)
        try:
            server, viewer = start(Path(rundir), host, port)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    warning = next((str(w.message) for w in caught if issubclass(w.category, ExposedServerWarning)), None)
    if warning is not None:  # said once more, to whoever watches this process's warnings
        warnings.warn(warning, ExposedServerWarning, stacklevel=2)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{server.server_address[1]}/"
    return Viewing(url, viewer.index.rows, viewer.open_s, server, warning)
