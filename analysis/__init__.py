"""The report's analyses: one module per research question, each with ``analyze(ctx) -> Section``.

``SECTIONS`` is the registry the report runs, in the order it prints them; a new analysis is a module here
and one line below (no string import: the import graph shows who depends on whom). ``_context`` turns a run
folder into the analysis-ready ``Context`` every section reads; ``_figures`` draws; ``first_screen``
summarises the sections into the report's first screen. The package knows nothing of report files: the
report package renders what these return.

In the repository this is the top-level ``analysis/`` folder; an installed wheel carries it as
``agentjudge/analysis`` (setup.py maps it), so it always imports as ``agentjudge.analysis``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import (
    against_people,
    failures,
    guide,
    headline,
    no_reference,
    passk,
    published_grid,
    robustness,
    rq1_metrics_topologies,
    rq2_agreement,
    rq3_convergence,
    rq4_temperature,
    rq5_cot,
    rq6_format,
    rq7_outcome,
    sources,
    taubench,
)
from ._context import (
    CANONICAL_ORDER,
    Context,
    JudgeUnits,
    Progress,
    RunFolderError,
    Section,
    as_str_category,
    fmt_pp,
    load_context,
    make_context,
    unfinished_line,
)
from ._figures import to_png


@dataclass(frozen=True)
class Analysis:
    """One registered section: its key (the module's name, used in tables and anchors), its function, and
    the run-folder file it needs, a glob pattern relative to the folder (``None``: every run has it;
    otherwise the section is left out of the report of a run without such a file, with no "n/a" line), and
    the verdict rows it reads (``rows``)."""

    key: str
    title: str  # what the report calls the section where it cannot run it (the section's own title)
    analyze: Callable[[Context], Section]
    only_when: str | None = None
    # the rows it reads: "referenced" (the verdicts with a reference: not run when the run has none),
    # "unreferenced" (the verdicts on records without GT: run only when there are some), or "any"
    rows: str = "referenced"


SECTIONS: tuple[Analysis, ...] = (
    Analysis("headline", "Headline: judge alignment with the programmatic reference", headline.analyze),
    Analysis("sources", "Record sources: synthetic vs imported", sources.analyze),
    Analysis("guide", "Practitioner decision guide", guide.analyze),
    Analysis(
        "rq1_metrics_topologies",
        "RQ1: hardest metrics and topologies; difficulty curves",
        rq1_metrics_topologies.analyze,
    ),
    Analysis(
        "rq2_agreement",
        "RQ2: inter-judge agreement, κ vs capability-tier gap, soft jury",
        rq2_agreement.analyze,
    ),
    Analysis(
        "rq3_convergence",
        "RQ3: convergence without GT — verdict distributions, default prompts, anchoring",
        rq3_convergence.analyze,
    ),
    Analysis("rq4_temperature", "RQ4: judge temperature", rq4_temperature.analyze),
    Analysis("rq5_cot", "RQ5: chain-of-thought", rq5_cot.analyze),
    Analysis("rq6_format", "RQ6: prompt format (JSON vs free-form)", rq6_format.analyze),
    Analysis(
        "robustness", "Robustness: metric weightings, topology weighting, binary collapse", robustness.analyze
    ),
    Analysis(
        "published_grid",
        "Beside the paper: its main grid recomputed from its released verdicts",
        published_grid.analyze,
        only_when="imported_cells.csv",
    ),
    Analysis("passk", "Consistency: pass^k and pass@k", passk.analyze),
    Analysis(
        "rq7_outcome",
        "RQ7 Outcomes: do judges that see outputs know whether the job got done?",
        rq7_outcome.analyze,
    ),
    Analysis(
        "taubench",
        "τ-bench: the agent's pass^k, and the verdicts against τ-bench's reward",
        taubench.analyze,
        only_when="taubench_episodes.parquet",
    ),
    Analysis(
        "no_reference",
        "Records without GT: the judges' verdicts, no reference",
        no_reference.analyze,
        rows="unreferenced",
    ),
    Analysis(
        "against_people", "Against people", against_people.analyze, only_when="labels/*.jsonl", rows="any"
    ),
    Analysis("failures", "Parse and transport failures", failures.analyze, rows="any"),
)

__all__ = [
    "CANONICAL_ORDER",
    "SECTIONS",
    "Analysis",
    "Context",
    "JudgeUnits",
    "Progress",
    "RunFolderError",
    "Section",
    "as_str_category",
    "fmt_pp",
    "load_context",
    "make_context",
    "to_png",
    "unfinished_line",
]
