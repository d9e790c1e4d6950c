"""What every analysis receives (``Context``) and returns (``Section``).

The context loads a run folder once, validates it, adds the per-row alignment columns, fixes the
"main" slice (the baseline prompt variant, first trial) and builds ONE cluster-bootstrap plan shared by
every analysis, so that all differences in the report are paired over the same resampled scenarios.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from agentjudge.rundir import RunFolder, RunFolderError, RunStatus, SamplingRecord
from agentjudge.rundir.meta import Units
from agentjudge.stats import ClusterBootstrap, add_alignment_columns
from agentjudge.stats.codes import group_codes, values_of
from agentjudge.stats.design import Design, fpc_scale
from agentjudge.types import CONDITIONS, DIFFICULTIES, METRICS, TOPOLOGIES

CANONICAL_ORDER: dict[str, tuple[str, ...]] = {
    "metric": METRICS,
    "difficulty": DIFFICULTIES,
    "topology": TOPOLOGIES,
    "condition": CONDITIONS,
}

MAIN_CONDITIONS = ("with_gt", "without_gt")
VARIANT_FACTORS = ("prompt_format", "cot", "default_mode", "temperature")
PREFERRED = {"prompt_format": "json", "cot": False, "default_mode": "1.0"}


@dataclass
class Section:
    """One part of the report: markdown paragraphs, named tables and named figures."""

    key: str
    title: str
    text: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    lacking: str | None = None  # the one line shown instead of tables when the run lacks the data


def same(series: pd.Series, value: Any) -> np.ndarray:
    """Equality that treats NaN == NaN (temperature NaN means 'model default')."""
    if isinstance(value, float) and math.isnan(value):
        return series.isna().to_numpy()
    return (series == value).to_numpy()


# judgments.parquet's text columns with few distinct values: read straight into categoricals
_CATEGORY_COLUMNS = (
    "judge",
    "generator",
    "condition",
    "prompt_format",
    "default_mode",
    "scoring_mode",
    "metric",
    "difficulty",
    "topology",
    "domain",
    "base_id",
    "record_id",
    "source",
)


def _arrow_pool_that_returns_memory() -> None:
    """Read Arrow data through jemalloc where pyarrow has it. Measured on the paper-shaped grid's report
    (5.5 M judgment rows): pyarrow's default pool on Linux (mimalloc) peaked at 1.70 or 2.39 GiB from one run
    to the next, jemalloc at 1.52-1.70 GiB (bench/bench_grid.py). Builds without jemalloc keep their
    default."""
    import pyarrow as pa

    try:
        pool = pa.jemalloc_memory_pool()
    except (NotImplementedError, AttributeError):  # not compiled into this pyarrow build
        return
    pa.set_memory_pool(pool)


def read_judgments(folder: RunFolder) -> pd.DataFrame:
    """judgments.parquet without its free text: ``rationale`` is not read and ``judge_error`` becomes the
    boolean ``has_error``; text coordinates arrive as categoricals (dictionary-decoded by Arrow, never
    as millions of Python strings). A paper-shaped grid's 5.5 M rows peaked at 3.4 GB the plain way."""
    _arrow_pool_that_returns_memory()
    names = folder.columns("judgments")
    columns = [c for c in names if c not in ("rationale", "judge_error")]
    table = folder.arrow("judgments", columns=columns, read_dictionary=_CATEGORY_COLUMNS)
    has_error = folder.arrow("judgments", columns=["judge_error"]).column(0).is_valid()
    df = table.to_pandas()
    del table
    df["has_error"] = has_error.to_numpy(zero_copy_only=False)
    return df


@dataclass(frozen=True)
class JudgeUnits:
    """One judge's units as the run folder counts them: planned, done, failed (the rest not run yet), and
    its failed units by reason (``models.failures.REASONS``: connection, auth, ..., from run_summary.json)."""

    planned: int
    done: int
    failed: int
    reasons: tuple[tuple[str, int], ...] = ()

    @property
    def finished(self) -> bool:
        return self.done + self.failed >= self.planned

    def reasons_text(self) -> str:
        """``connection 8, server 2`` (empty when no unit failed)."""
        return ", ".join(f"{reason} {n:,}" for reason, n in self.reasons)


@dataclass(frozen=True)
class Progress:
    """How far the run (or, in a ``compare`` join, each run) got: ``status`` of a single run folder (None in
    a join), ``unfinished`` one line per unfinished run (empty: every run is complete), ``judge_units`` per
    judge of the pipeline (a judge that has no verdict yet is here, not in the judgments)."""

    status: RunStatus | None = None
    unfinished: tuple[str, ...] = ()
    judge_units: dict[str, JudgeUnits] = field(default_factory=dict)


def unfinished_line(status: RunStatus, units: Units | None = None, where: str = "") -> str:
    """The report's first line for an unfinished run: units done of planned (per stage with ``units``,
    meta.json's), why it stopped, and the command that resumes it."""
    if units is not None:
        p, j = units.predict, units.judge
        done = f"{p.done:,} of {p.planned:,} predictions and {j.done:,} of {j.planned:,} judge units done"
    elif status.planned is not None:
        done = f"{status.done:,} of {status.planned:,} units done"
    else:
        done = "unfinished"
    failed = f", {status.failed:,} failed" if status.failed else ""
    not_run = f", {status.not_run:,} not run" if status.not_run else ""
    why = f" It stopped because {'; '.join(status.why)}." if status.why else ""
    resume = (
        f" Resume it with `{status.resume_command}`."
        if status.resume_command
        else " Re-run the command that made it to continue."
    )
    state = "IN PROGRESS" if status.state == "in_progress" else "UNFINISHED"
    return (
        f"{state} RUN{where}: {done}{failed}{not_run}.{why}{resume} Every figure below covers only the "
        "units done so far."
    )


def read_progress(folder: RunFolder) -> Progress:
    """The run folder's progress: its status, and each planned judge's units (meta.json's ``by_judge``,
    with the failed units' reasons from run_summary.json)."""
    status = folder.status
    units = folder.meta.units
    by_judge = (units.by_judge if units is not None else None) or {}
    reasons: dict[str, dict[str, int]] = {}
    summary = folder.summary() if by_judge else None
    for unit in summary.failed_units if summary is not None else ():
        if unit.judge is not None:
            per = reasons.setdefault(unit.judge, {})
            per[unit.reason] = per.get(unit.reason, 0) + 1
    judge_units = {
        judge: JudgeUnits(
            c.planned,
            c.done,
            c.failed,
            tuple(sorted(reasons.get(judge, {}).items(), key=lambda kv: (-kv[1], kv[0]))),
        )
        for judge, c in by_judge.items()
    }
    lines = (unfinished_line(status, units),) if status.state != "complete" else ()
    return Progress(status, lines, judge_units)


@dataclass
class Context:
    rundir: Path
    data: pd.DataFrame  # all judgments, all scoring modes, with mu / ok / mu_ceiling
    meta: dict[str, Any]
    scores: pd.DataFrame | None
    predictions: pd.DataFrame | None
    boot: ClusterBootstrap
    scoring_mode: str  # the mode every RQ uses (strict when present)
    baseline_variant: dict[str, Any]
    judges: list[str]
    generators: list[str]
    colors: dict[str, tuple[float, float, float, float]]
    # a sampled run's design (RUNDIR/sampling.json; None when every scenario was judged): rows carry
    # ``_rank`` and ``design_weight`` (stats.design), and paired deltas use ``paired_rows`` of _common
    design: Design | None = None
    sampling: SamplingRecord | None = None
    progress: Progress = field(default_factory=Progress)
    # the verdicts on records without GT (``Record.gt_known`` false): no reference, so none of the
    # alignment figures; ``referenced`` False: the run has no other rows (``data`` is these rows then, and
    # only the sections that need no reference run)
    unreferenced: pd.DataFrame | None = None
    referenced: bool = True

    @property
    def df(self) -> pd.DataFrame:
        """All judgments of the primary scoring mode."""
        return self._cache("df", lambda: self.data[self.data["scoring_mode"] == self.scoring_mode])

    @property
    def main(self) -> pd.DataFrame:
        """Primary mode, baseline variant, first trials, with/without GT: the slice of the headline."""
        return self._cache("main", lambda: self.vary(None))

    def vary(
        self, factor: str | None, conditions: tuple[str, ...] = MAIN_CONDITIONS, mode: str | None = None
    ) -> pd.DataFrame:
        """Main slice with ``factor`` free (all other variant factors at their baseline values)."""
        df = (
            self.df
            if mode is None or mode == self.scoring_mode
            else self.data[self.data["scoring_mode"] == mode]
        )
        mask = np.array(df["condition"].isin(list(conditions)).to_numpy(), dtype=bool)
        mask &= (df["trial"] == df["trial"].min()).to_numpy()
        mask &= (df["generator_trial"] == df["generator_trial"].min()).to_numpy()
        for f in VARIANT_FACTORS:
            if f != factor:
                mask &= same(df[f], self.baseline_variant[f])
        return df[mask]

    def _cache(self, name: str, make: Any) -> pd.DataFrame:
        store = self.__dict__.setdefault("_store", {})
        if name not in store:
            store[name] = make()
        return store[name]

    def is_baseline(self, judge: str) -> bool:
        info = self.meta.get("judges", {}).get(judge, {})
        return judge.startswith("baseline/") or info.get("kind") == "baseline"

    def is_oracle(self, judge: str) -> bool:
        """``baseline/ceiling`` reads the reference: a bound to compare with, never ranked or pooled."""
        return judge.startswith("baseline/ceiling")

    def is_constant(self, judge: str) -> bool:
        """``baseline/always-*`` says the same thing whatever it sees: a calibration point, not a judge."""
        return judge.startswith("baseline/always-")

    def is_simulated_judge(self, judge: str) -> bool:
        info = self.meta.get("judges", {}).get(judge, {})
        return judge.startswith("simjudge/") or info.get("kind") == "simjudge"

    def is_imported_baseline(self, judge: str) -> bool:
        """A publication's judge-specific baseline (Prometheus-2 of AgentJudgeBench): shown beside the
        ranking like a calibration point, never ranked or pooled with the judges it was a baseline for."""
        return self.meta.get("judges", {}).get(judge, {}).get("kind") == "imported-baseline"

    def rankable_judges(self) -> list[str]:
        """Judges that may be ranked, pooled, put on a jury or in κ: all but the oracle, constants and
        imported baselines."""
        return [j for j in self.judges if j not in self.calibration_judges()]

    def calibration_judges(self) -> list[str]:
        return [
            j for j in self.judges if self.is_oracle(j) or self.is_constant(j) or self.is_imported_baseline(j)
        ]

    def is_simulated(self, generator: str) -> bool:
        info = self.meta.get("generators", {}).get(generator, {})
        return generator.startswith("sim/") or bool(info.get("simulated"))

    def is_simulated_agent(self, generator: str) -> bool:
        """``sim/agent-*``: a simulated agent acting in the interactive environment, not a GT perturbation."""
        info = self.meta.get("generators", {}).get(generator, {})
        return generator.startswith("sim/agent-") or str(info.get("model", "")).startswith("sim/agent-")

    def judge_label(self, judge: str) -> str:
        """The name prose, legends and axes print: marked when it is not a model (one wording for all)."""
        if self.is_oracle(judge):
            return f"{judge} (oracle, calibration)"
        if self.is_constant(judge):
            return f"{judge} (constant, calibration)"
        if self.is_baseline(judge):
            return f"{judge} (baseline)"
        if self.is_imported_baseline(judge):
            return f"{judge} (judge-specific baseline)"
        return f"{judge} (simulated)" if self.is_simulated_judge(judge) else judge

    def generator_label(self, generator: str) -> str:
        return f"{generator} (simulated)" if self.is_simulated(generator) else generator

    def planned_judges(self) -> list[str]:
        """Every judge of the run: those with rows in the judgments, then the pipeline's judges that have
        none yet (an unfinished run's)."""
        missing = [j for j in self.progress.judge_units if j not in set(self.judges)]
        return [*self.judges, *sorted(missing)]

    def unfinished_judges(self) -> list[str]:
        """Judges with units not run yet: their figures cover part of the grid, so they are not ranked."""
        return [j for j, u in self.progress.judge_units.items() if not u.finished]

    def tiers(self) -> dict[str, float]:
        out = {}
        for name, info in self.meta.get("judges", {}).items():
            tier = info.get("tier") if isinstance(info, dict) else None
            if isinstance(tier, int | float) and not isinstance(tier, bool):
                out[name] = float(tier)
        return out


def _baseline_variant(df: pd.DataFrame) -> dict[str, Any]:
    """The reference prompt variant: the published defaults when present, else the most frequent value."""
    out: dict[str, Any] = {}
    for f in VARIANT_FACTORS:
        values = df[f]
        if f in PREFERRED and (values == PREFERRED[f]).any():
            out[f] = PREFERRED[f]
        elif f == "temperature" and values.isna().any():
            out[f] = float("nan")  # the model's default temperature: how the published main runs asked
        else:
            counts = values.value_counts(dropna=False)
            v = counts.index[0]
            out[f] = float("nan") if (isinstance(v, float) and math.isnan(v)) else v
    return out


def as_str_category(series: pd.Series, order: tuple[str, ...] | None = None) -> pd.Series:
    """Categorical with string categories, converting only the (few) categories, never the 1 M values;
    known vocabularies (metrics, difficulties, …) keep their natural order so tables read easy→hard."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype("category")
    cats = series.cat.categories
    if cats.dtype != object and not pd.api.types.is_string_dtype(cats.dtype):
        series = series.cat.rename_categories([str(c) for c in cats])
        cats = series.cat.categories
    if order is not None and set(cats) <= set(order):
        series = series.cat.reorder_categories([c for c in order if c in set(cats)])
    elif list(cats) != sorted(cats):  # Arrow's dictionaries come in order of appearance
        series = series.cat.reorder_categories(sorted(cats))
    return series


def load_context(
    rundir: Path, resamples: int, seed: int, ci: str = "expanded", source: str | None = None
) -> Context:
    """Read and validate a run folder through ``RunFolder`` (meta.json and judgments required; scores and
    predictions optional). ``source`` keeps only the records of one source ("synthetic" / "imported")."""
    folder = RunFolder.open(rundir)
    judgments = folder.table_path("judgments")
    jd = read_judgments(folder)
    if "source" not in jd.columns:  # run folders written before imported records existed
        jd["source"] = "synthetic"
    if source is not None:
        jd = jd[(jd["source"] == source).to_numpy()].reset_index(drop=True)
    if jd.empty:
        raise RunFolderError(f"{judgments}: no rows")
    for col in _CATEGORY_COLUMNS:
        jd[col] = as_str_category(jd[col], CANONICAL_ORDER.get(col))
    for col in ("verdict", "reference", "temperature"):
        try:
            jd[col] = pd.to_numeric(jd[col], errors="raise").astype(float)
        except (ValueError, TypeError) as exc:
            raise RunFolderError(f"{judgments}: column {col}: not numeric ({exc})") from exc
    # a record without GT has no reference: its verdicts are kept apart (``Context.unreferenced``), never
    # compared with a reference that does not exist; a run of only such records reports them alone
    unreferenced = jd["reference"].isna().to_numpy()
    apart = None
    if unreferenced.any():
        apart = jd[unreferenced].reset_index(drop=True)
        if not unreferenced.all():
            jd = jd[~unreferenced].reset_index(drop=True)
    if not jd["condition"].isin(list(MAIN_CONDITIONS)).any():
        raise RunFolderError(f"{judgments}: no with_gt or without_gt rows to report on")
    # the base scenarios judged so far: scores and predictions of others (an unfinished run's, or another
    # source's) are left out, so that every analysis stands on the scenarios its bootstrap resamples
    kept = set(jd["base_id"].cat.categories[np.unique(jd["base_id"].cat.codes)])
    data = add_alignment_columns(jd, inplace=True)  # no second copy of the frame
    del jd
    # the file as written (keys it lacks stay absent: what the analyses have always been given)
    meta = folder.meta.model_dump(mode="json", exclude_unset=True)
    scores = folder.scores() if folder.has("scores") else None
    predictions = folder.predictions() if folder.has("predictions") else None
    if scores is not None:
        scores = scores[scores["base_id"].astype(str).isin(kept)].reset_index(drop=True)
    if predictions is not None:
        predictions = predictions[predictions["base_id"].astype(str).isin(kept)].reset_index(drop=True)
    record = folder.sampling()
    ctx = make_context(rundir, data, meta, scores, predictions, resamples, seed, ci, record)
    ctx.progress = read_progress(folder)
    if apart is not None:
        ctx.unreferenced = data if unreferenced.all() else add_alignment_columns(apart)
        ctx.referenced = not unreferenced.all()
    return ctx


def make_context(
    rundir: Path,
    data: pd.DataFrame,
    meta: dict[str, Any],
    scores: pd.DataFrame | None,
    predictions: pd.DataFrame | None,
    resamples: int,
    seed: int,
    ci: str = "expanded",
    record: SamplingRecord | None = None,
) -> Context:
    """A context over judgments that already carry the alignment columns (one run, or several joined).
    ``record``: a sampled run's design (``sampling.json``): the rows get their design weights and the
    bootstrap its finite-population correction (``stats.design``)."""
    modes = values_of(data["scoring_mode"])
    mode = "strict" if "strict" in modes else modes[0]
    judges = values_of(data["judge"])
    generators = values_of(data["generator"])
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    colors = {j: cmap(i % 10) for i, j in enumerate([*judges, "jury"])}
    if ci not in ("expanded", "percentile"):
        raise RunFolderError(f"--ci must be 'expanded' or 'percentile', not {ci!r}")
    design = record.design() if record is not None else None
    extra: dict[str, Any] = {}
    if design is not None:
        add_design_columns(data, design)
        for frame, cols in (
            (scores, ("generator", "difficulty")),
            (predictions, ("generator", "difficulty")),
        ):
            if frame is not None and len(frame):
                add_design_columns(frame, design, cols)
        clusters = data["base_id"].cat.categories
        ranks = design.ranks_of(pd.Series(clusters.astype(str)))
        if (ranks < 0).any():
            bad = str(clusters[int(np.flatnonzero(ranks < 0)[0])])
            raise RunFolderError(f"{rundir / 'sampling.json'}: base scenario {bad} is not in the order")
        if design.fpc:
            extra["scale"] = dict(zip(clusters.astype(str), fpc_scale(ranks, design.population), strict=True))
        extra["alpha_clusters"] = design.smallest_cell()
        extra["weight_col"] = "design_weight"
    boot = ClusterBootstrap(
        data["base_id"].cat.categories,
        resamples=resamples,
        seed=seed,
        interval="percentile" if ci == "percentile" else "expanded",
        **extra,
    )
    return Context(
        rundir=rundir,
        data=data,
        meta=meta,
        scores=scores,
        predictions=predictions,
        boot=boot,
        scoring_mode=mode,
        baseline_variant=_baseline_variant(data[data["scoring_mode"] == mode]),
        judges=judges,
        generators=generators,
        colors=colors,
        design=design,
        sampling=record,
    )


def add_design_columns(frame: pd.DataFrame, design: Design, cols: tuple[str, ...] | None = None) -> None:
    """``_rank`` (the scenario's place in the order) and ``design_weight`` (N_h / n_h of the row's cell
    prefix; ``cols`` names the prefix's columns when they are not the judge cell's, e.g. a prediction's
    generator and difficulty) in place."""
    ranks = design.ranks_of(frame["base_id"])
    if cols is None:
        lengths = design.cell_lengths(frame)
    else:
        codes, keys = group_codes(frame, list(cols))
        per = [
            design.predictions.get(tuple(str(v) for v in row), design.population)  # type: ignore[arg-type]
            for row in keys.itertuples(index=False)
        ]
        lengths = np.asarray(per, dtype=np.int64)[codes]
    frame["_rank"] = ranks
    frame["design_weight"] = design.weight(ranks, lengths)


def fmt_pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f} %"


def fmt_ci(est: float, lo: float, hi: float) -> str:
    """'81.2 % [80.1, 82.3]' — the form every alignment takes in the prose."""
    if any(isinstance(v, float) and math.isnan(v) for v in (est, lo, hi)):
        return fmt_pct(est)
    return f"{100 * est:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def fmt_pp(est: float, lo: float, hi: float) -> str:
    if any(isinstance(v, float) and math.isnan(v) for v in (est, lo, hi)):
        return "n/a"
    return f"{100 * est:+.1f} pp [{100 * lo:+.1f}, {100 * hi:+.1f}]"
