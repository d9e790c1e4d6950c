"""Judges against people, and people against each other (§11): tables over long DataFrames.

``ppi_table``: per group (e.g. judge × condition × metric, plus the metrics pooled), the direct estimate of
the mean of a label over the labelled items with its cluster-bootstrap interval, the prediction-powered
estimate over every item with its t interval and effective sample size (``stats.ppi``), and the labels each
needs for a target half-width. ``annotator_agreement``: per pair of annotators and metric, raw agreement and
Cohen's κ with cluster-bootstrap intervals. Both resample base scenarios (``ClusterBootstrap``): the metrics,
difficulties and generators of one scenario are correlated, so rows are not independent.

Nothing here reads files; the caller joins labels, verdicts and references into one row per (group, item).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from agentjudge.stats.agreement import kappa_from_confusion
from agentjudge.stats.bootstrap import ClusterBootstrap, percentile_ci
from agentjudge.stats.codes import group_codes
from agentjudge.stats.ppi import label_budget, ppi_mean

#: the columns of ``ppi_table`` after the group keys
PPI_COLUMNS: tuple[str, ...] = (
    "n_labelled",
    "n_items",
    "direct",
    "direct_lo",
    "direct_hi",
    "ppi",
    "ppi_lo",
    "ppi_hi",
    "effective_n",
    "lam",
    "labels_direct",
    "labels_ppi",
)
#: the columns of ``annotator_agreement``
ANNOTATOR_COLUMNS: tuple[str, ...] = (
    "annotator_a",
    "annotator_b",
    "metric",
    "n_items",
    "agreement",
    "agreement_lo",
    "agreement_hi",
    "kappa",
    "kappa_lo",
    "kappa_hi",
)
#: the value of the pooled column in a pooled row
POOLED = "all"
LEVELS = (0.0, 0.5, 1.0)


def _scopes(by: Sequence[str], pool: str | None) -> list[tuple[list[str], str | None]]:
    """(grouping columns, pooled column or None): the groups of ``by``, then ``by`` without ``pool``."""
    scopes: list[tuple[list[str], str | None]] = [(list(by), None)]
    if pool is not None:
        if pool not in by:
            raise ValueError(f"pool column {pool!r} is not one of the groups {list(by)}")
        scopes.append(([c for c in by if c != pool], pool))
    return scopes


def _keys(keys: pd.DataFrame, by: Sequence[str], pooled: str | None) -> pd.DataFrame:
    """Group keys in ``by`` order as plain objects, the pooled column filled with ``POOLED``."""
    out = pd.DataFrame(index=range(len(keys)))
    for col in by:
        out[col] = POOLED if col == pooled else keys[col].astype(object).to_numpy()
    return out


def ppi_table(
    items: pd.DataFrame,
    by: Sequence[str],
    *,
    label: str = "y",
    proxy: str = "f",
    cluster: str = "base_id",
    inclusion: str | None = None,
    pool: str | None = None,
    unit: Sequence[str] | None = None,
    target: float = 0.03,
    boot: ClusterBootstrap | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Direct and PPI++ estimates of the mean of ``label`` per ``by`` group, plus the label budget.

    ``items``: one row per (group, item) of the population: ``label`` NaN where nobody labelled the item,
    ``proxy`` on every item (a row without it is outside the population: the judge gave no verdict),
    ``cluster`` the base scenario. For a judge against people: label = 1 − |h − v|, proxy = 1 − |p − v|
    (``stats.mu``); for an agent's score without a reference: label = h, proxy = a judge's verdict.
    ``inclusion``: the column of each labelled row's inclusion probability; given, every labelled mean is
    weighted by 1/π so the figures describe the population, not a sample richer in errors
    (``stratum_inclusion`` computes π for a stratified sample). ``pool``: a ``by`` column whose values are
    also pooled, in rows where it reads ``"all"``. ``unit``: the columns naming one labelled thing to count
    (e.g. record, generator, trial, whose four metric verdicts are four rows); ``n_labelled``,
    ``effective_n`` and the budgets count units, rows without it. ``target``: the half-width of the budget
    (0.03 = ±3 pp). ``boot``: a resampling plan to share (paired with other tables); by default one of
    ``resamples`` over the labelled scenarios, seeded.

    Columns: the ``by`` keys, then ``PPI_COLUMNS``: ``direct`` with its cluster-bootstrap interval (the
    plan's, expanded percentile by default), ``ppi`` with its t interval (``stats.ppi_mean``),
    ``effective_n`` (labels the direct estimate would need for PPI's variance), ``lam`` (λ), and
    ``labels_direct`` / ``labels_ppi`` (``stats.label_budget``; inf when out of reach). NaN where a group
    has no label (never a default figure)."""
    by = list(by)
    cols = [*by, label, proxy, cluster] + ([inclusion] if inclusion else []) + list(unit or [])
    missing = [c for c in dict.fromkeys(cols) if c not in items.columns]
    if missing:
        raise KeyError(f"items lack column(s) {missing}")
    pop = items[items[proxy].notna()].reset_index(drop=True)
    y = pop[label].to_numpy(dtype=float, na_value=np.nan)
    f = pop[proxy].to_numpy(dtype=float, na_value=np.nan)
    clusters = pop[cluster].astype(str)
    cl_codes = np.unique(clusters.to_numpy(), return_inverse=True)[1].ravel()
    labelled = ~np.isnan(y)
    pi = pop[inclusion].to_numpy(dtype=float, na_value=np.nan) if inclusion else None
    weight = np.ones(len(pop)) if pi is None else np.where(labelled, 1.0 / np.where(labelled, pi, 1.0), 0.0)
    unit_codes = group_codes(pop, list(unit))[0] if unit else np.arange(len(pop))
    lab = pop[labelled].assign(**{cluster: clusters[labelled].to_numpy()})
    if boot is None:
        boot = ClusterBootstrap(lab[cluster].unique(), resamples=resamples, seed=seed)

    parts = []
    for cols_g, pooled in _scopes(by, pool):
        gcodes, keys = group_codes(pop, cols_g)
        table = _keys(keys, by, pooled)
        direct = boot.ratio(lab, cols_g, label, weight=weight[labelled], cluster_col=cluster).table("direct")
        dkeys = _keys(direct, by, pooled)
        table = table.merge(
            dkeys.assign(direct_lo=direct["ci_lo"].to_numpy(), direct_hi=direct["ci_hi"].to_numpy()),
            on=by,
            how="left",
        )
        rows = []
        order = np.argsort(gcodes, kind="stable")
        bounds = np.searchsorted(gcodes[order], np.arange(len(keys) + 1))
        for g in range(len(keys)):
            idx = order[bounds[g] : bounds[g + 1]]
            est = ppi_mean(y[idx], f[idx], cl_codes[idx], None if pi is None else pi[idx])
            rows_lab = int(labelled[idx].sum())
            units = len(np.unique(unit_codes[idx][labelled[idx]]))
            per_row = units / rows_lab if rows_lab else np.nan
            n_items = len(np.unique(unit_codes[idx]))
            budget = label_budget(est, target, n=units, population=n_items)
            rows.append(
                {
                    "n_labelled": units,
                    "n_items": n_items,
                    "direct": float(est.direct),
                    "ppi": float(est.estimate),
                    "ppi_lo": float(est.lo),
                    "ppi_hi": float(est.hi),
                    "effective_n": float(est.effective_n) * per_row,
                    "lam": float(est.lam),
                    "labels_direct": budget.direct,
                    "labels_ppi": budget.ppi,
                }
            )
        parts.append(pd.concat([table, pd.DataFrame(rows)], axis=1))
    out = pd.concat(parts, ignore_index=True)
    return out[[*by, *PPI_COLUMNS]]


def annotator_agreement(
    labels: pd.DataFrame,
    *,
    annotator: str = "annotator",
    item: Sequence[str] = ("record_id", "generator", "generator_trial"),
    metric: str = "metric",
    verdict: str = "verdict",
    cluster: str = "base_id",
    pool: bool = True,
    boot: ClusterBootstrap | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Raw agreement and Cohen's κ (three categories 0 / 0.5 / 1) per pair of annotators and metric, on
    the items both labelled, with cluster-bootstrap intervals (the plan's; by default ``resamples`` over
    the labelled scenarios). ``pool``: also a row per pair with every metric pooled (metric ``"all"``).

    ``labels``: one row per (annotator, item, metric) with the verdict; a verdict outside {0, 0.5, 1} is
    an error, NaN a missing label. Why a bootstrap over per-scenario confusion matrices: κ is not a mean,
    but the confusion matrix is additive over scenarios, so B resampled matrices (multiplicities × per-
    scenario counts) give B κ's in one product. Columns ``ANNOTATOR_COLUMNS``; κ NaN where undefined."""
    cols = [annotator, *item, metric, verdict, cluster]
    missing = [c for c in dict.fromkeys(cols) if c not in labels.columns]
    if missing:
        raise KeyError(f"labels lack column(s) {missing}")
    df = labels[labels[verdict].notna()]
    dup = df.duplicated([annotator, *item, metric])
    if dup.any():
        first = df[dup].iloc[0]
        raise ValueError(
            f"annotator {first[annotator]!r} has two labels for {first[[*item, metric]].to_dict()}"
        )
    v = df[verdict].to_numpy(dtype=float)
    bad = ~np.isin(v, LEVELS)
    if bad.any():
        raise ValueError(f"verdict {v[np.flatnonzero(bad)[0]]!r} is not one of {LEVELS}")
    if boot is None:
        boot = ClusterBootstrap(df[cluster].astype(str).unique(), resamples=resamples, seed=seed)
    names = sorted(str(a) for a in df[annotator].unique())
    coord, coord_keys = group_codes(df, [*item, metric])
    per_coord_cluster = np.full(len(coord_keys), -1, dtype=np.int64)
    per_coord_cluster[coord] = boot.cluster_codes(df[cluster].astype(str))
    metric_of = coord_keys[metric].astype(object).to_numpy()
    mat = np.full((len(coord_keys), len(names)), -1, dtype=np.int64)
    mat[coord, np.searchsorted(names, df[annotator].astype(str).to_numpy())] = np.rint(2 * v).astype(np.int64)
    metrics = [m for m in pd.unique(coord_keys[metric].astype(object))]
    scopes: list[tuple[object, np.ndarray]] = [(m, metric_of == m) for m in metrics]
    if pool:
        scopes.append((POOLED, np.ones(len(metric_of), dtype=bool)))
    n_clusters = len(boot.clusters)
    rows = []
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        for m, in_scope in scopes:
            both = in_scope & (mat[:, i] >= 0) & (mat[:, j] >= 0)
            cells = per_coord_cluster[both] * 9 + mat[both, i] * 3 + mat[both, j]
            conf = np.bincount(cells, minlength=n_clusters * 9).reshape(n_clusters, 9).astype(float)
            total = conf.sum(axis=0).reshape(3, 3)
            draws = (boot.weights @ conf).reshape(-1, 3, 3)
            with np.errstate(invalid="ignore", divide="ignore"):
                agree = np.trace(draws, axis1=-2, axis2=-1) / draws.sum(axis=(-2, -1))
                point = float(np.trace(total) / total.sum()) if total.sum() else float("nan")
            a_lo, a_hi = percentile_ci(agree, boot.alpha)
            kappas = kappa_from_confusion(draws)
            k_lo, k_hi = percentile_ci(kappas, boot.alpha)
            rows.append(
                {
                    "annotator_a": a,
                    "annotator_b": b,
                    "metric": m,
                    "n_items": int(both.sum()),
                    "agreement": point,
                    "agreement_lo": float(a_lo[0]),
                    "agreement_hi": float(a_hi[0]),
                    "kappa": float(kappa_from_confusion(total)),
                    "kappa_lo": float(k_lo[0]),
                    "kappa_hi": float(k_hi[0]),
                }
            )
    return pd.DataFrame(rows, columns=list(ANNOTATOR_COLUMNS))
