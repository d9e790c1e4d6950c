"""People's labels against the run: the tables ``agentjudge human-agree`` writes and the report's section
"Against people" shows (one implementation, so the two always print the same figures).

``load`` reads a run folder's labels (``RUNDIR/labels/*.jsonl``), the outputs a person could label with the
reference's scores (``RunFolder.outputs``) and the judges' verdicts on them (the main slice: the baseline
prompt variant, each judge's first trial; every condition; the report's scoring mode). The tables:

- ``reference_vs_people``: the programmatic reference against people, μ = 1 − |h − p|, overall, per metric
  and per topology — on the labelled outputs (unweighted: the published protocol's figure) and over the run
  (the designed labels weighted by 1/π);
- ``judges_vs_people``: per judge × condition × metric and pooled (``all``), the judge's agreement with
  people, Y = 1 − |h − v|, over every output of the frame it graded, two ways: the direct estimate (the
  mean of Y over the labelled outputs, each weighted by 1/π) with its cluster-bootstrap CI, and the
  prediction-powered estimate (PPI++, the judge's agreement with the reference f = 1 − |p − v| as the
  proxy on every output, cluster sums by base scenario: ``stats.ppi_table``) with its CI and effective
  sample size. Both estimate the same figure, so PPI's interval reads against the direct one; ``budget``
  holds the labels each needs for ±X pp;
- ``annotators``: agreement and κ per pair of annotators and metric;
- ``agent_vs_people``: where an output has no reference (a run imported without expected calls), the
  agent's own score as people give it, h, by PPI with a judge's verdict (or the judges' mean) as the proxy.

Who is "people" on an output several annotators labelled: the mean of their verdicts (a soft verdict, like
the judges' soft jury). The frame is the set of outputs the designed sample was drawn from (its
difficulties); a label on an output outside the designed sample (an item opened from its URL) has no known
inclusion probability: it counts in the figures on the labelled outputs (the reference's ``agreement``)
and is left out of every weighted one. ``weighted=False`` reproduces the published, unweighted treatment:
every label, no weights, in every figure (the estimates then describe the labelled outputs, a sample
richer in imperfect ones than the run).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from agentjudge.analysis._context import PREFERRED, VARIANT_FACTORS, same

from agentjudge.rundir import LabelLine, RunFolder, RunFolderError
from agentjudge.stats import ClusterBootstrap, mu, ppi_table
from agentjudge.stats.label_sample import inclusion, stratum_of
from agentjudge.stats.people import POOLED, annotator_agreement
from agentjudge.types import METRICS, TOPOLOGIES

ITEM = ["record_id", "generator", "generator_trial"]
#: human/judges_vs_people.csv, in this order
JUDGE_COLUMNS = (
    "judge",
    "condition",
    "metric",
    "n_labelled",
    "direct",
    "direct_lo",
    "direct_hi",
    "ppi",
    "ppi_lo",
    "ppi_hi",
    "effective_n",
)
AGREEMENT_COLUMNS = (
    "scope",
    "group",
    "agreement",
    "ci_lo",
    "ci_hi",
    "n_labels",
    "missing",
    "population",
    "population_lo",
    "population_hi",
)
#: human/agent_score.csv, in this order
AGENT_COLUMNS = (
    "generator",
    "proxy",
    "condition",
    "metric",
    "n_labelled",
    "n_items",
    "proxy_mean",
    "direct",
    "direct_lo",
    "direct_hi",
    "ppi",
    "ppi_lo",
    "ppi_hi",
    "effective_n",
    "labels_direct",
    "labels_ppi",
)
BUDGET_COLUMNS = (
    "judge",
    "condition",
    "n_labelled",
    "direct_half_width",
    "ppi_half_width",
    "labels_direct",
    "labels_ppi",
)


@dataclass
class PeopleData:
    """A run's labels joined to its outputs and its judges' verdicts (``load``)."""

    rundir: Path
    lines: list[LabelLine]  # every annotator's latest line per item
    labels: pd.DataFrame  # one row per (annotator, output, metric) labelled: h, designed, blind, base_id, …
    outputs: pd.DataFrame  # the frame's outputs: keys, base_id, topology, difficulty, p_*, stratum, pi
    verdicts: pd.DataFrame  # the judges' verdicts on the frame's outputs: judge, condition, metric, v, keys
    mode: str | None  # the scoring mode of the reference (None: the run has no scores)
    weighted: bool
    difficulties: list[str]
    notes: list[str] = field(default_factory=list)  # what a reader must know (left-out labels, …)

    @property
    def annotators(self) -> list[str]:
        return sorted({line.annotator for line in self.lines})

    @property
    def has_reference(self) -> bool:
        """Some labelled output has a reference score."""
        return bool(self.labels["p"].notna().any())

    @property
    def blind(self) -> str:
        """ "blind", "not blind" or "mixed (k of n labels saw the reference)"."""
        seen = [not line.shown.blind for line in self.lines if not line.skipped]
        if not any(seen):
            return "blind"
        if all(seen):
            return "not blind (the reference and the judges' verdicts were on the page)"
        return f"mixed ({sum(seen)} of {len(seen)} labels saw the reference and the judges' verdicts)"


# ---------------------------------------------------------------------------------------------- loading


def load(rundir: Path, weighted: bool = True) -> PeopleData | None:
    """The run's labels joined to its outputs and verdicts; None when nobody has labelled it. A labels file
    that does not read raises ``RunFolderError`` (file, line and field)."""
    folder = RunFolder.open(rundir)
    with warnings.catch_warnings(record=True) as torn:
        warnings.simplefilter("always")
        lines = [line for line in folder.labels() if not line.skipped]
    if not lines:
        return None
    outputs, mode = folder.outputs()
    notes = [str(w.message) for w in torn]
    designed_days: list[str] = sorted({line.sample.difficulty for line in lines if line.sample is not None})
    difficulties: list[str] = (
        designed_days if weighted and designed_days else sorted({line.difficulty for line in lines})
    )
    keys = outputs.set_index(["record_id", "generator", "trial"])
    rows, unknown = [], 0
    for line in lines:
        key = (line.record_id, line.generator, line.generator_trial)
        if key not in keys.index:
            unknown += 1
            continue
        out = keys.loc[key]
        for metric, h in line.verdicts.items():
            rows.append(
                {
                    "annotator": line.annotator,
                    "record_id": line.record_id,
                    "generator": line.generator,
                    "generator_trial": line.generator_trial,
                    "base_id": out["base_id"],
                    "topology": out["topology"],
                    "difficulty": out["difficulty"],
                    "metric": metric,
                    "h": float(h),
                    "p": float(out[f"p_{metric}"]),
                    "designed": line.sample is not None,
                    "blind": line.shown.blind,
                }
            )
    if unknown:
        notes.append(f"{unknown} label(s) name an output the run does not have (left out)")
    labels = pd.DataFrame(rows)
    if labels.empty:
        return None
    frame = outputs[outputs["difficulty"].isin(difficulties)].rename(columns={"trial": "generator_trial"})
    frame = frame.reset_index(drop=True)
    frame["stratum"] = stratum_of(frame).to_numpy()
    designed_items = set(map(tuple, labels.loc[labels["designed"], ITEM].to_numpy().tolist()))
    is_designed = np.array([tuple(k) in designed_items for k in frame[ITEM].to_numpy().tolist()], dtype=bool)
    frame["pi"] = inclusion(frame, is_designed)
    frame.loc[~is_designed, "pi"] = np.nan
    outside = labels.loc[~labels["designed"], ITEM].drop_duplicates()
    if weighted and len(outside):
        notes.append(
            f"{len(outside)} labelled output(s) are outside the designed sample (opened from their URL): "
            "they count in the reference's agreement on the labelled outputs and are left out of the "
            "weighted figures (no inclusion probability); `--unweighted` counts them everywhere"
        )
    verdicts = _verdicts(folder, difficulties, mode)
    return PeopleData(
        rundir=Path(rundir),
        lines=lines,
        labels=labels,
        outputs=frame,
        verdicts=verdicts,
        mode=mode,
        weighted=weighted,
        difficulties=difficulties,
        notes=notes,
    )


def _verdicts(folder: RunFolder, difficulties: list[str], mode: str | None) -> pd.DataFrame:
    """The main slice of the judges' verdicts on the frame: the baseline prompt variant (the published
    defaults when present, as the report's), each judge's first trial, every condition, the scoring mode of
    the reference; a failed verdict is NaN."""
    columns = ["judge", "condition", "metric", "verdict", *ITEM, "trial", *VARIANT_FACTORS]
    empty = pd.DataFrame(columns=["judge", "condition", "metric", "v", *ITEM])
    if not folder.has("judgments"):
        return empty
    filters: list[tuple[str, str, object]] = [("difficulty", "in", list(difficulties))]
    modes = folder.arrow("judgments", columns=["scoring_mode"]).column(0).unique().to_pylist()
    present = [m for m in modes if m is not None]
    if present:
        use = mode if mode in present else ("strict" if "strict" in present else sorted(present)[0])
        filters.append(("scoring_mode", "==", use))
    df = folder.judgments(columns=columns, filters=filters)
    df = df[df["metric"].astype(str).isin(METRICS)]
    if df.empty:
        return empty
    keep = np.ones(len(df), dtype=bool)
    for factor in VARIANT_FACTORS:
        values = df[factor]
        if factor in PREFERRED and (values == PREFERRED[factor]).any():
            base: object = PREFERRED[factor]
        elif factor == "temperature" and values.isna().any():
            base = float("nan")
        else:
            base = values.value_counts(dropna=False).index[0]
        keep &= same(values, base)
    first = df.groupby(["judge", "condition"], observed=True)["trial"].transform("min")
    keep &= (df["trial"] == first).to_numpy()
    out = df[keep]
    return pd.DataFrame(
        {
            "judge": out["judge"].astype(str).to_numpy(),
            "condition": out["condition"].astype(str).to_numpy(),
            "metric": out["metric"].astype(str).to_numpy(),
            "v": pd.to_numeric(out["verdict"], errors="coerce").to_numpy(dtype=float),
            "record_id": out["record_id"].astype(str).to_numpy(),
            "generator": out["generator"].astype(str).to_numpy(),
            "generator_trial": out["generator_trial"].astype(int).to_numpy(),
        }
    )


# ---------------------------------------------------------------------------------------------- tables


def _reference_of(rows: pd.DataFrame) -> np.ndarray:
    """The reference's score of each row's metric (from the row's ``p_tool`` … ``p_cov``)."""
    where = rows["metric"].map({m: i for i, m in enumerate(METRICS)}).to_numpy(dtype=int)
    scores = rows[[f"p_{m}" for m in METRICS]].to_numpy(dtype=float, na_value=np.nan)
    return np.asarray(scores[np.arange(len(rows)), where]) if len(rows) else np.zeros(0)


def people_verdicts(data: PeopleData) -> pd.DataFrame:
    """One row per labelled (output, metric): h, the mean of the annotators' verdicts, and whether a
    designed label is among them."""
    return (
        data.labels.groupby([*ITEM, "metric"], observed=True)
        .agg(
            h=("h", "mean"),
            annotators=("annotator", "nunique"),
            designed=("designed", "any"),
            base_id=("base_id", "first"),
        )
        .reset_index()
    )


def _direct(
    rows: pd.DataFrame, by: list[str], value: str, weighted: bool, resamples: int, seed: int
) -> pd.DataFrame:
    """The direct estimate: the mean of ``value`` over the labelled rows per ``by`` group (and with the
    metrics pooled, as ``all``), each weighted by 1/π when ``weighted`` (a Hájek mean: the figure describes
    the frame, not the sample), with its cluster-bootstrap CI (1,000 resamples of base scenarios by default,
    expanded percentile) and the labelled outputs counted. The same figure as ``stats.ppi_table``'s
    ``direct``; computed here also where no proxy exists."""
    rows = rows[rows[value].notna()].assign(base_id=lambda f: f["base_id"].astype(str))
    weight = 1.0 / rows["pi"].to_numpy(dtype=float) if weighted else None
    boot = ClusterBootstrap(rows["base_id"].unique(), resamples=resamples, seed=seed)
    parts = []
    for cols in (by, [c for c in by if c != "metric"]):
        t = boot.ratio(rows, cols, value, weight=weight).table("direct")
        counts = rows.drop_duplicates([*cols, *ITEM]).groupby(cols, observed=True).size()
        t = t.merge(counts.rename("n_labelled").reset_index(), on=cols)
        if "metric" not in cols:
            t["metric"] = POOLED
        parts.append(t.rename(columns={"ci_lo": "direct_lo", "ci_hi": "direct_hi"}))
    return pd.concat(parts, ignore_index=True)[[*by, "n_labelled", "direct", "direct_lo", "direct_hi"]]


def _in_order(table: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by their keys, metrics in their canonical order and the pooled row last."""
    order = {m: i for i, m in enumerate([*METRICS, POOLED])}
    keys = [c for c in ("judge", "generator", "proxy", "condition", "metric") if c in table.columns]

    def key(col: pd.Series) -> pd.Series:
        return col.map(order) if col.name == "metric" else col.astype(str)

    return table.sort_values(keys, key=key).reset_index(drop=True)


def judge_items(data: PeopleData) -> pd.DataFrame:
    """One row per (judge, condition, metric, output of the frame it graded): y = 1 − |h − v| where people
    labelled it and the label may be used (weighted: only the designed sample's), f = 1 − |p − v| (NaN
    where the output has no reference), π of the output's stratum."""
    people = people_verdicts(data)
    v = data.verdicts[data.verdicts["v"].notna()]
    items = v.merge(data.outputs, on=ITEM, how="inner")
    items["p"] = _reference_of(items)
    items = items.merge(people[[*ITEM, "metric", "h", "designed"]], on=[*ITEM, "metric"], how="left")
    items["designed"] = items["designed"].fillna(False).astype(bool)
    y = mu(items["h"].to_numpy(dtype=float), items["v"].to_numpy(dtype=float))
    items["y"] = np.where(items["designed"], y, np.nan) if data.weighted else y
    items["f"] = mu(items["p"].to_numpy(dtype=float), items["v"].to_numpy(dtype=float))
    return items


def judges_vs_people(
    data: PeopleData, resamples: int = 1000, seed: int = 0, target: float = 0.03
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``human/judges_vs_people.csv`` (``JUDGE_COLUMNS``) and the label budget per judge and condition
    (``BUDGET_COLUMNS``, metrics pooled; ``target`` the half-width, 0.03 = ±3 pp). PPI's columns are NaN
    where the labelled outputs have no reference (no proxy)."""
    items = judge_items(data)
    by = ["judge", "condition", "metric"]
    if items["y"].notna().sum() == 0:
        return pd.DataFrame(columns=list(JUDGE_COLUMNS)), pd.DataFrame(columns=list(BUDGET_COLUMNS))
    table = _direct(items, by, "y", data.weighted, resamples, seed)
    with_proxy = items[items["f"].notna()]
    ppi_cols = ["ppi", "ppi_lo", "ppi_hi", "effective_n", "labels_direct", "labels_ppi"]
    if with_proxy["y"].notna().any():
        ppi = ppi_table(
            with_proxy,
            by,
            label="y",
            proxy="f",
            inclusion="pi" if data.weighted else None,
            pool="metric",
            unit=ITEM,
            target=target,
            resamples=resamples,
            seed=seed,
        )
        table = table.merge(ppi[[*by, *ppi_cols]], on=by, how="left")
    else:  # no labelled output has a reference: no proxy, the direct estimate alone
        table = table.assign(**{c: np.nan for c in ppi_cols})
    table = _in_order(table)
    pooled = table[table["metric"] == POOLED]
    budget = pd.DataFrame(
        {
            "judge": pooled["judge"],
            "condition": pooled["condition"],
            "n_labelled": pooled["n_labelled"],
            "direct_half_width": (pooled["direct_hi"] - pooled["direct_lo"]) / 2,
            "ppi_half_width": (pooled["ppi_hi"] - pooled["ppi_lo"]) / 2,
            "labels_direct": pooled["labels_direct"],
            "labels_ppi": pooled["labels_ppi"],
        }
    ).reset_index(drop=True)
    return table[list(JUDGE_COLUMNS)], budget[list(BUDGET_COLUMNS)]


def against_reference(data: PeopleData) -> pd.DataFrame:
    """Each judge's agreement with the reference, mean of f = 1 − |p − v| over the outputs of the frame it
    graded that have a reference (per judge × condition × metric and pooled): the figure every other
    section reports, on the outputs the people figures describe."""
    items = judge_items(data)
    items = items[items["f"].notna()]
    by = ["judge", "condition", "metric"]
    per = items.groupby(by, observed=True)["f"].mean().rename("reference").reset_index()
    pooled = items.groupby(by[:-1], observed=True)["f"].mean().rename("reference").reset_index()
    return pd.concat([per, pooled.assign(metric=POOLED)], ignore_index=True)


def reference_vs_people(data: PeopleData, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The reference against people (μ = 1 − |h − p|) overall, per metric and per topology: ``agreement``
    on the labelled outputs (every label, unweighted: the published protocol's figure) with its CI,
    ``population`` over the frame (the designed labels weighted by 1/π; NaN unweighted). ``missing``:
    labelled outputs whose labels left the metric out. Empty when no labelled output has a reference."""
    people = people_verdicts(data)
    labelled = data.labels.drop_duplicates(ITEM)[[*ITEM, "base_id", "topology"]]
    grid = labelled.merge(pd.DataFrame({"metric": list(METRICS)}), how="cross")
    grid = grid.merge(people[[*ITEM, "metric", "h", "designed"]], on=[*ITEM, "metric"], how="left")
    p_cols = [f"p_{m}" for m in METRICS]
    grid = grid.merge(data.outputs[[*ITEM, "pi", *p_cols]], on=ITEM, how="left")
    has_reference = grid[p_cols].notna().any(axis=1).to_numpy()
    grid = grid[has_reference].reset_index(drop=True)
    if grid.empty:
        return pd.DataFrame(columns=list(AGREEMENT_COLUMNS))
    grid["p"] = _reference_of(grid)
    grid["agree"] = mu(grid["h"].to_numpy(dtype=float), grid["p"].to_numpy(dtype=float))
    grid["base_id"] = grid["base_id"].astype(str)
    designed = grid["designed"].fillna(False).astype(bool) & grid["pi"].notna()
    weight = np.where(designed, 1.0 / grid["pi"].where(designed, 1.0), 0.0)
    boot = ClusterBootstrap(grid["base_id"].unique(), resamples=resamples, seed=seed)
    parts = []
    for scope, by in (("overall", []), ("metric", ["metric"]), ("topology", ["topology"])):
        t = boot.ratio(grid, by, "agree").table("agreement")
        if data.weighted and designed.any():
            w = boot.ratio(grid, by, "agree", weight=weight).table("population")
            t["population"], t["population_lo"], t["population_hi"] = w["population"], w["ci_lo"], w["ci_hi"]
        else:
            t["population"] = t["population_lo"] = t["population_hi"] = np.nan
        t.insert(0, "scope", scope)
        t["group"] = t[by[0]].astype(str) if by else "all"
        t["n_labels"] = t["n_verdicts"]
        t["missing"] = t["n_failed"]  # labelled outputs whose labels left the metric out
        parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    rank = {g: i for i, g in enumerate(["all", *METRICS, *TOPOLOGIES])}
    table = table.sort_values(
        ["scope", "group"],
        key=lambda c: c.map(rank) if c.name == "group" else c.map({"overall": 0, "metric": 1, "topology": 2}),
    )
    return table.reset_index(drop=True)[list(AGREEMENT_COLUMNS)]


def annotators(data: PeopleData, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Agreement and κ per pair of annotators and metric (and pooled) on the outputs both labelled."""
    from agentjudge.stats.people import ANNOTATOR_COLUMNS

    if len(data.annotators) < 2:
        return pd.DataFrame(columns=list(ANNOTATOR_COLUMNS))
    long = data.labels.rename(columns={"h": "verdict"})
    return annotator_agreement(long, resamples=resamples, seed=seed)


def agent_vs_people(
    data: PeopleData, resamples: int = 1000, seed: int = 0, target: float = 0.03
) -> pd.DataFrame:
    """Where outputs have no reference: each generator's score as people give it (h), per metric and pooled,
    by PPI with a judge's verdict as the proxy (each judge and condition, and ``jury``: the judges' mean
    in the condition), beside ``proxy_mean``, the judge's own mean verdict over the frame. Empty when every
    labelled output has a reference."""
    people = people_verdicts(data)
    unscored = data.outputs[data.outputs[[f"p_{m}" for m in METRICS]].isna().all(axis=1)]
    if unscored.empty or people.merge(unscored[ITEM], on=ITEM).empty:
        return pd.DataFrame()
    v = data.verdicts[data.verdicts["v"].notna()].merge(unscored[[*ITEM, "base_id", "pi"]], on=ITEM)
    if v.empty:
        return pd.DataFrame()
    jury = v.groupby(["condition", "metric", *ITEM, "base_id"], observed=True).agg(
        v=("v", "mean"), pi=("pi", "first")
    )
    jury = jury.reset_index().assign(judge="jury")
    items = pd.concat([v, jury], ignore_index=True).rename(columns={"judge": "proxy"})
    items = items.merge(people[[*ITEM, "metric", "h", "designed"]], on=[*ITEM, "metric"], how="left")
    items["designed"] = items["designed"].fillna(False).astype(bool)
    items["y"] = items["h"].where(items["designed"]) if data.weighted else items["h"]
    by = ["generator", "proxy", "condition", "metric"]
    table = ppi_table(
        items.rename(columns={"v": "f"}),
        by,
        label="y",
        proxy="f",
        inclusion="pi" if data.weighted else None,
        pool="metric",
        unit=ITEM,
        target=target,
        resamples=resamples,
        seed=seed,
    )
    means = items.groupby(["generator", "proxy", "condition", "metric"], observed=True)["v"].mean()
    pooled = items.groupby(["generator", "proxy", "condition"], observed=True)["v"].mean()
    table["proxy_mean"] = [
        pooled.get((g, p, c), math.nan) if m == POOLED else means.get((g, p, c, m), math.nan)
        for g, p, c, m in table[by].itertuples(index=False)
    ]
    return _in_order(table)[list(AGENT_COLUMNS)]


def describe(data: PeopleData) -> list[str]:
    """Who labelled what, how, and what a reader must know, as sentences."""
    per = pd.Series([line.annotator for line in data.lines]).value_counts()
    designed = sum(line.sample is not None for line in data.lines)
    outputs = data.labels.drop_duplicates(ITEM)
    who = ", ".join(f"human/{a}: {n}" for a, n in per.sort_index().items())
    text = [
        f"{len(outputs)} labelled outputs ({who}); "
        f"{designed} of the {len(data.lines)} labels came from the designed sample (difficulty "
        f"{', '.join(data.difficulties)}); the labels were {data.blind}.",
    ]
    if not data.weighted:
        text.append(
            "Unweighted (`--unweighted`): every label counts as if the sample were representative, as the "
            "published check did; the figures describe a sample richer in imperfect outputs than the run."
        )
    return text + data.notes


__all__ = [
    "AGREEMENT_COLUMNS",
    "BUDGET_COLUMNS",
    "JUDGE_COLUMNS",
    "PeopleData",
    "RunFolderError",
    "agent_vs_people",
    "against_reference",
    "annotators",
    "describe",
    "judges_vs_people",
    "load",
    "people_verdicts",
    "reference_vs_people",
]
