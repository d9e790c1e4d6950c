"""Prediction-powered estimates of a mean from few labels (PPI++; Angelopoulos, Duchi, Zrnic 2023).

The problem. A person labels n items; a proxy f (the programmatic reference, a judge's verdict) is known on
all N items of the population. The mean of the labels Y alone (the direct estimate) has the variance of n
items. Where f tracks Y, the labelled items measure only the proxy's error Y − f, and the mean of f over all
N items carries the rest:

    θ̂(λ) = mean_n(Y − λ·f) + λ·mean_N(f)            (mean_N over every item, the labelled ones included)

For every λ this is consistent for the mean of Y (the labelled term corrects the proxy's bias, whatever it
is); λ = 0 is the direct estimate, λ = 1 classic PPI. PPI++ picks the λ that minimises the estimated
variance, so a poor proxy gets λ ≈ 0 and the estimate falls back to the direct one instead of paying for
the proxy's noise.

Why one overlapping mean_N. The PPI++ paper writes the mean of f over the N' = N − n *unlabelled* items,
with λ'* = Cov(Y, f) / ((1 + n/N')·Var f). Both forms are the same estimator (λ' = λ·N'/N); the form over
every item is the one that stays right under unequal inclusion (below), where the unlabelled items are a
sample poorer in errors and a stratum labelled in full has no unlabelled item at all. Its variance-
minimising λ is Cov(Y, f) / Var(f) — the same λ'* rewritten.

Clusters. Items of one base scenario (its difficulties, metrics, generators) are correlated, and a
scenario can hold labelled and unlabelled items whose two means then covary. The variance is therefore
the delta-method (linearised) variance of θ̂ as a function of per-scenario sums: θ̂ − θ ≈ Σ_c z_c(λ) with

    z_c(λ) = u_c + λ·v_c,   u_c = (ΣY_c − Ā_Y·n_c) / n,
                            v_c = (Σf_c − B̄·N_c) / N − (Σf^lab_c − Ā_f·n_c) / n

(Ā_Y, Ā_f the labelled means, B̄ the mean of f over all items; with weights each labelled sum is a weighted
sum, below), Var θ̂ ≈ k·Σ_c z_c², k = C/(C − 1) with C the labelled scenarios. λ̂ = −Σu v / Σv² (clipped to
[0, 1] as the authors' code does) minimises exactly this estimate, so the PPI interval is never wider than
the direct (λ = 0) one computed the same way (up to the t quantile's degrees of freedom). The interval is
θ̂ ± t·sqrt(Var), t with Satterthwaite's degrees of freedom (``satterthwaite_df``). Why not a bootstrap
here: the sums give the interval in closed form for thousands of replicates at once (the planted-
population coverage checks run vectorised), and a bootstrap would have to re-tune λ in every resample to
be honest about its noise. Each item as its own cluster gives
the i.i.d. PPI++ interval; ``tests/test_ppi.py`` checks it against the authors' ``ppi_py``.

Unequal inclusion. ``human-sample`` labels imperfect items about 14/6 against perfect ones, far above their
share of a run. A labelled item with inclusion probability π stands for 1/π items: every labelled mean
above is the weighted (Hájek) mean with w = 1/π, so the estimate describes the population, not a sample
richer in errors. With π = n_h/N_h per stratum (``stratum_inclusion``) this is stratified PPI with one λ
shared by the strata (StratPPI, Fisch et al. 2024, tunes one per stratum; a dozen strata of ten labels
each would tune twelve noisy λ's). The variance treats each scenario's labelling as independent of the
others' (Poisson sampling); a design that fixes the count per stratum has a little less variance, so the
interval is conservative there.

The target is the mean over the population the items were drawn from (the scenarios a run stands for); over
a fixed set of N items the same interval is a little conservative in its proxy term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from agentjudge.stats.bootstrap import ALPHA

#: columns of the per-cluster sums the estimator reads (``cluster_sums``)
SUM_COLUMNS: tuple[str, ...] = ("w", "wy", "wf", "count", "f", "labelled")


@dataclass(frozen=True)
class PPIEstimate:
    """The direct and prediction-powered estimates of one mean (or of a batch: every field has the
    batch's shape; 0-d for one estimate).

    ``estimate`` ± ``half_width`` is the PPI++ interval [``lo``, ``hi``] (t with ``df`` degrees of freedom,
    cluster-linearised variance ``variance``); ``direct`` is the (weighted) mean of the labels, whose
    variance computed the same way is ``direct_variance``. ``lam`` is λ of the module's form.
    ``effective_n`` is the number of labels the direct estimate would need for PPI's variance,
    n·direct_variance/variance. ``labelled_variance`` is the part of ``variance`` that shrinks as 1/n with
    more labels (the rest, proxy mean and cross term, does not); ``label_budget`` reads them.
    """

    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    half_width: np.ndarray
    variance: np.ndarray
    lam: np.ndarray
    direct: np.ndarray
    direct_variance: np.ndarray
    labelled_variance: np.ndarray
    n_labelled: np.ndarray
    n_items: np.ndarray
    clusters: np.ndarray
    df: np.ndarray
    effective_n: np.ndarray
    alpha: float

    def scalar(self) -> dict[str, float]:
        """The fields of a single estimate as floats (for a table row)."""
        out: dict[str, float] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = float(value) if not isinstance(value, float) else value
        return out


def cluster_sums(
    y: np.ndarray,
    f: np.ndarray,
    cluster: np.ndarray | None = None,
    inclusion: np.ndarray | None = None,
) -> np.ndarray:
    """(C × 6) per-cluster sums over the items of one population, columns ``SUM_COLUMNS``.

    ``y``: the label per item, NaN where unlabelled. ``f``: the proxy on every item; an item without it
    (NaN: the judge gave no verdict) is not in the population and is dropped, label included. ``cluster``:
    any hashable id per item (None: each item its own cluster). ``inclusion``: π of each labelled item, in
    (0, 1] (None: equal probabilities, i.e. unweighted); its value on unlabelled items is ignored.
    """
    y = np.asarray(y, dtype=float)
    f = np.asarray(f, dtype=float)
    if y.shape != f.shape or y.ndim != 1:
        raise ValueError("y and f must be 1-d arrays of the same length")
    keep = ~np.isnan(f)
    labelled = keep & ~np.isnan(y)
    if inclusion is None:
        w = labelled.astype(float)
    else:
        pi = np.asarray(inclusion, dtype=float)
        if pi.shape != y.shape:
            raise ValueError("inclusion must have one probability per item")
        bad = labelled & ~((pi > 0) & (pi <= 1))
        if bad.any():
            raise ValueError(
                f"inclusion probability {pi[np.flatnonzero(bad)[0]]!r} of a labelled item is not in (0, 1]"
            )
        w = np.where(labelled, 1.0 / np.where(labelled, pi, 1.0), 0.0)
    if cluster is None:
        codes = np.arange(int(keep.sum()))
    else:
        cl = np.asarray(cluster)
        if cl.shape != y.shape:
            raise ValueError("cluster must have one id per item")
        codes = np.unique(cl[keep], return_inverse=True)[1].ravel()
    n_clusters = int(codes.max()) + 1 if len(codes) else 0
    yy, ff, ww = np.where(labelled, y, 0.0)[keep], f[keep], w[keep]
    cols = (ww, ww * yy, ww * ff, np.ones(len(ff)), ff, labelled[keep].astype(float))
    return np.stack([np.bincount(codes, weights=c, minlength=n_clusters) for c in cols], axis=-1)


def ppi_from_sums(sums: np.ndarray, alpha: float = ALPHA, lam: float | None = None) -> PPIEstimate:
    """PPI++ estimate from per-cluster sums (``cluster_sums``), vectorised over leading batch axes:
    ``sums`` is (..., C, 6); clusters with no item (all-zero rows) are allowed, so a batch of populations of
    different sizes pads to one C. ``lam``: a fixed λ (0 direct, 1 classic PPI) instead of the tuned one.

    Undefined results are NaN, never a default: no label gives a NaN estimate, fewer than two labelled
    clusters a NaN interval."""
    s = np.asarray(sums, dtype=float)
    if s.shape[-1] != len(SUM_COLUMNS):
        raise ValueError(f"sums must end in {len(SUM_COLUMNS)} columns {SUM_COLUMNS}")
    w, wy, wf, count, fsum, lab = (s[..., i] for i in range(len(SUM_COLUMNS)))
    with np.errstate(invalid="ignore", divide="ignore"):
        sw = w.sum(axis=-1, keepdims=True)
        sm = count.sum(axis=-1, keepdims=True)
        a_y = wy.sum(axis=-1, keepdims=True) / sw
        a_f = wf.sum(axis=-1, keepdims=True) / sw
        b = fsum.sum(axis=-1, keepdims=True) / sm
        u = (wy - a_y * w) / sw
        v_lab = -(wf - a_f * w) / sw
        v = (fsum - b * count) / sm + v_lab
        suu = (u * u).sum(axis=-1)
        suv = (u * v).sum(axis=-1)
        svv = (v * v).sum(axis=-1)
        if lam is None:
            lam_hat = np.where(svv > 0, np.clip(-suv / np.where(svv > 0, svv, 1.0), 0.0, 1.0), 0.0)
        else:
            lam_hat = np.full(suu.shape, float(lam))
        clusters = (lab > 0).sum(axis=-1)
        k = np.where(clusters > 1, clusters / np.maximum(clusters - 1, 1), np.nan)
        variance = k * (suu + 2 * lam_hat * suv + lam_hat**2 * svv)
        direct_variance = k * suu
        ul = u + lam_hat[..., None] * v_lab
        labelled_variance = k * (ul * ul).sum(axis=-1)
        direct = a_y[..., 0]
        estimate = direct + lam_hat * (b[..., 0] - a_f[..., 0])
        z = u + lam_hat[..., None] * v
        df = np.where(clusters > 1, satterthwaite_df(z * z, count > 0, clusters - 1), np.nan)
        t = sps.t.ppf(1 - alpha / 2, df)
        half = t * np.sqrt(np.maximum(variance, 0.0))
        n_lab = lab.sum(axis=-1)
        effective_n = np.where(variance > 0, n_lab * direct_variance / variance, np.nan)
    return PPIEstimate(
        estimate=np.asarray(estimate),
        lo=np.asarray(estimate - half),
        hi=np.asarray(estimate + half),
        half_width=np.asarray(half),
        variance=np.asarray(variance),
        lam=np.asarray(lam_hat),
        direct=np.asarray(direct),
        direct_variance=np.asarray(direct_variance),
        labelled_variance=np.asarray(labelled_variance),
        n_labelled=np.asarray(n_lab),
        n_items=np.asarray(count.sum(axis=-1)),
        clusters=np.asarray(clusters),
        df=np.asarray(df),
        effective_n=np.asarray(effective_n),
        alpha=alpha,
    )


def satterthwaite_df(q: np.ndarray, present: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Degrees of freedom of Σ q_c, the variance estimate (q_c = z_c², last axis the clusters, ``present``
    marks the real ones): 2·(Σq)² / (C·s²_q), Satterthwaite's match of its mean and variance to a scaled
    χ², between 1 and ``cap``. Why: when a few scenarios carry most of the variance (a near-perfect proxy
    leaves only the rare items where the person differs), the estimate is itself noisy and t with C − 1
    degrees of freedom covers too little; for normal z it gives C."""
    c = present.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(present, q, 0.0).sum(axis=-1)
        mean = total / c
        s2 = np.where(present, (q - mean[..., None]) ** 2, 0.0).sum(axis=-1) / (c - 1)
        df = 2.0 * total**2 / (c * s2)
    df = np.where(np.isfinite(df), df, cap)
    return np.asarray(np.clip(df, 1.0, np.maximum(cap, 1.0)))


def ppi_mean(
    y: np.ndarray,
    f: np.ndarray,
    cluster: np.ndarray | None = None,
    inclusion: np.ndarray | None = None,
    alpha: float = ALPHA,
    lam: float | None = None,
) -> PPIEstimate:
    """PPI++ estimate of the population mean of ``y`` with its 95 % t interval (cluster-linearised
    variance; module docstring). ``y`` is the label per item (NaN unlabelled), ``f`` the proxy on every
    item. Two uses: a judge's agreement with people (y = 1 − |h − v|, f = 1 − |p − v|, h the person's
    verdict, v the judge's, p the reference), and an agent's score where no reference exists (y = h, f a
    judge's verdict or the judges' mean). ``inclusion``: each labelled item's inclusion probability, to
    weight by 1/π (give it whenever the labels came from an unequal-probability sample)."""
    return ppi_from_sums(cluster_sums(y, f, cluster, inclusion), alpha=alpha, lam=lam)


def stratum_inclusion(strata: np.ndarray, labelled: np.ndarray) -> np.ndarray:
    """Inclusion probability π = n_h / N_h of each item from its stratum h (n_h labelled of N_h items), NaN
    in a stratum with no label. Why: a stratified sample (``human-sample``: per topology, imperfect and
    perfect items in fixed shares) draws each stratum at its own rate; weighting by N_h/n_h restores the
    population's mix. Strata are any hashable labels, one per item of the population."""
    codes = np.unique(np.asarray(strata), return_inverse=True)[1].ravel()
    lab = np.asarray(labelled, dtype=bool)
    if lab.shape != codes.shape:
        raise ValueError("one stratum and one labelled flag per item")
    big_n = np.bincount(codes).astype(float)
    small_n = np.bincount(codes, weights=lab.astype(float), minlength=len(big_n))
    with np.errstate(invalid="ignore", divide="ignore"):
        pi = np.where(small_n > 0, small_n / big_n, np.nan)
    return np.asarray(pi[codes])


@dataclass(frozen=True)
class LabelBudget:
    """Labels needed for a 95 % half-width of ``target``, from a pilot of ``n`` labels, for the direct
    estimate and for PPI. ``math.inf`` where labels cannot reach the target: more than the population
    holds, the proxy's own variance over the population already above it (PPI), or a pilot without a
    variance (fewer than two labelled scenarios)."""

    target: float
    n: float
    direct: float
    ppi: float


def label_budget(
    est: PPIEstimate, target: float = 0.03, n: float | None = None, population: float | None = None
) -> LabelBudget:
    """The labels each estimator needs for a half-width of ``target`` (0.03 = ±3 pp), from the pilot's
    variances: drawing more labels the same way scales the labelled part of the variance by n/n' and
    leaves the rest (the proxy's mean over the population, the cross term) as it is, λ held at the pilot's
    (re-tuning can only lower the variance, so the figure is conservative in that respect). Normal quantile;
    at least 2 (an interval needs two labelled scenarios), even when the pilot saw no variance at all.

    ``n``: the pilot's size in the unit to count (default its labelled rows; pass the number of labelled
    records when each record carries several rows, e.g. four metric verdicts). ``population``: the items
    there are to label, in the same unit; a need beyond it is ``math.inf`` (out of reach in this
    population). One estimate only."""
    if target <= 0:
        raise ValueError("target must be positive")
    pilot = float(est.n_labelled) if n is None else float(n)
    z = float(sps.norm.ppf(1 - est.alpha / 2))
    room = (target / z) ** 2
    cap = math.inf if population is None else float(population)

    def needed(per_pilot: float, fixed: float) -> float:
        if not np.isfinite(per_pilot) or not np.isfinite(fixed) or pilot <= 0 or room <= fixed:
            return math.inf
        want = max(2.0, float(math.ceil(pilot * max(per_pilot, 0.0) / (room - fixed))))
        return want if want <= cap else math.inf

    var, lab = float(est.variance), float(est.labelled_variance)
    return LabelBudget(
        target=target,
        n=pilot,
        direct=needed(float(est.direct_variance), 0.0),
        ppi=needed(lab, var - lab),
    )
