"""PPI++ (``stats.ppi``): hand-computed values, the PPI authors' ``ppi_py``, and planted populations.

The planted checks run on thousands of populations at once (``planted_people``, vectorised, ~10 s): the
interval's coverage, no bias when the proxy is biased, never wider than the direct interval, and the
inverse-inclusion weights removing the bias of ``human-sample``'s oversampling of imperfect items.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import ppi_py
import pytest
from planted_people import plant, random_sample, scenario_sums, stratified_sample, superpopulation_means
from scipy import stats as sps

from agentjudge.stats import (
    ClusterBootstrap,
    PPIEstimate,
    cluster_sums,
    label_budget,
    ppi_from_sums,
    ppi_mean,
    stratum_inclusion,
)

NAN = float("nan")


# --- hand-computed ------------------------------------------------------------------------------------


def test_hand_computed_tuned_lambda_estimate_and_variance() -> None:
    # two labelled items (Y = 1, 0; f = 1, 0.5) and two unlabelled (f = 1, 0), each its own cluster.
    # mean_n Y = 1/2, mean_n f = 3/4, mean_N f = 5/8. u = (Y − 1/2)/2 = (1/4, −1/4, 0, 0);
    # v = (f − 5/8)/4 − [labelled](f − 3/4)/2 = (−1/32, 3/32, 3/32, −5/32).
    # Σuv = −1/32, Σv² = 11/256 → λ = 8/11; θ = 1/2 + (8/11)(5/8 − 3/4) = 9/22;
    # Var = 2·(Σu² − (Σuv)²/Σv²) = 2·(1/8 − 1/44) = 9/44 (k = C/(C − 1) = 2); direct Var = 2·1/8 = 1/4.
    y = np.array([1.0, 0.0, NAN, NAN])
    f = np.array([1.0, 0.5, 1.0, 0.0])
    est = ppi_mean(y, f)
    assert float(est.lam) == pytest.approx(8 / 11, abs=1e-12)
    assert float(est.estimate) == pytest.approx(9 / 22, abs=1e-12)
    assert float(est.variance) == pytest.approx(9 / 44, abs=1e-12)
    assert float(est.direct) == 0.5
    assert float(est.direct_variance) == pytest.approx(1 / 4, abs=1e-12)
    assert float(est.effective_n) == pytest.approx(2 * (1 / 4) / (9 / 44), abs=1e-12)  # 22/9
    assert float(est.df) == 1.0  # two labelled clusters: at most C − 1
    assert float(est.half_width) == pytest.approx(12.706204736 * math.sqrt(9 / 44), rel=1e-9)
    assert float(est.n_labelled) == 2 and float(est.n_items) == 4


def test_fixed_lambda_is_the_formula() -> None:
    y = np.array([1.0, 0.0, NAN, NAN])
    f = np.array([1.0, 0.5, 1.0, 0.0])
    # λ = 1: mean_n(Y − f) + mean_N(f) = (0 + (−0.5))/2 + 5/8 = 3/8; λ = 0: the mean of the labels
    assert float(ppi_mean(y, f, lam=1.0).estimate) == pytest.approx(3 / 8, abs=1e-12)
    direct = ppi_mean(y, f, lam=0.0)
    assert float(direct.estimate) == 0.5
    assert float(direct.variance) == pytest.approx(float(direct.direct_variance), abs=1e-15)


def test_inverse_inclusion_weights_by_hand() -> None:
    # labelled Y = 1 (π = 1/2, weight 2) and Y = 0 (π = 1/4, weight 4): the weighted mean is 2/6
    y = np.array([1.0, 0.0, NAN])
    f = np.array([1.0, 1.0, 1.0])
    est = ppi_mean(y, f, inclusion=np.array([0.5, 0.25, NAN]))
    assert float(est.direct) == pytest.approx(1 / 3, abs=1e-12)
    # the proxy is constant: no information in it, λ = 0 and PPI is the direct estimate
    assert float(est.lam) == 0.0 and float(est.estimate) == pytest.approx(1 / 3, abs=1e-12)
    # Hájek linearisation: z = w(Y − 1/3)/Σw = (2·2/3, 4·(−1/3))/6 → Σz² = 8/81; k = 2
    assert float(est.variance) == pytest.approx(2 * 8 / 81, abs=1e-12)


def test_items_without_proxy_leave_the_population_and_clusters_sum() -> None:
    y = np.array([1.0, NAN, 0.0, NAN, 1.0])
    f = np.array([1.0, 0.5, NAN, 1.0, 0.5])
    sums = cluster_sums(y, f, cluster=np.array(["a", "a", "b", "c", "c"]))
    # the only item of b has no proxy: b is not in the population; rows a and c, columns SUM_COLUMNS
    assert sums.tolist() == [[1.0, 1.0, 1.0, 2.0, 1.5, 1.0], [1.0, 1.0, 0.5, 2.0, 1.5, 1.0]]
    est = ppi_mean(y, f, cluster=np.array(["a", "a", "b", "c", "c"]))
    assert float(est.n_labelled) == 2 and float(est.n_items) == 4 and float(est.clusters) == 2


def test_undefined_results_are_nan_not_defaults() -> None:
    none = ppi_mean(np.array([NAN, NAN]), np.array([1.0, 0.0]))
    assert np.isnan(float(none.estimate)) and np.isnan(float(none.lo))
    one = ppi_mean(np.array([1.0, NAN]), np.array([1.0, 0.0]))
    assert float(one.estimate) == pytest.approx(1.0 + float(one.lam) * (0.5 - 1.0))
    assert np.isnan(float(one.lo)) and np.isnan(float(one.hi))  # one labelled cluster: no interval


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="not in \\(0, 1\\]"):
        ppi_mean(np.array([1.0, NAN]), np.array([1.0, 0.0]), inclusion=np.array([0.0, NAN]))
    with pytest.raises(ValueError, match="same length"):
        ppi_mean(np.array([1.0]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="one id per item"):
        ppi_mean(np.array([1.0, 0.0]), np.array([1.0, 0.0]), cluster=np.array(["a"]))


def test_stratum_inclusion() -> None:
    strata = np.array(["imp", "imp", "imp", "imp", "perf", "perf", "none"])
    labelled = np.array([True, True, True, False, True, False, False])
    pi = stratum_inclusion(strata, labelled)
    assert pi[:6].tolist() == [0.75, 0.75, 0.75, 0.75, 0.5, 0.5]
    assert np.isnan(pi[6])


def test_label_budget_by_hand() -> None:
    def estimate(**values: float) -> PPIEstimate:
        fields = {name: np.asarray(NAN) for name in PPIEstimate.__dataclass_fields__ if name != "alpha"}
        fields.update({k: np.asarray(v) for k, v in values.items()})
        return PPIEstimate(alpha=0.05, **fields)

    est = estimate(variance=0.0004, labelled_variance=0.0003, direct_variance=0.001, n_labelled=100)
    budget = label_budget(est, target=0.03)
    # room = (0.03 / 1.959964)² = 2.34286e−4; direct 100·0.001/room = 426.83;
    # PPI 100·0.0003/(room − 1e−4) = 223.40
    assert (budget.direct, budget.ppi) == (427, 224)
    assert label_budget(est, 0.03, n=25).direct == 107  # counted in records of four verdicts each
    assert label_budget(est, 0.03, population=300).direct == math.inf  # more than there is to label
    floor = estimate(variance=0.0003, labelled_variance=0.0, direct_variance=0.001, n_labelled=100)
    assert label_budget(floor, 0.03).ppi == math.inf  # the proxy's own variance is above the target's


# --- the PPI authors' package ------------------------------------------------------------------------


def _iid(n: int, big_n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = rng.choice([0.0, 0.5, 1.0], p=[0.1, 0.1, 0.8], size=n + big_n)
    y = np.where(rng.random(n + big_n) < 0.85, f, rng.choice([0.0, 0.5, 1.0], size=n + big_n))
    return y[:n], f[:n], f[n:]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_ppi_py_on_iid_items(seed: int) -> None:
    """Unclustered, unweighted: ppi_py's PPI++ mean has the mean of f over the N' unlabelled items, ours
    over all N = n + N' (module docstring): the same estimator with λ' = λ·N'/N."""
    y_lab, f_lab, f_unl = _iid(2000, 20000, seed)
    n, n_unl = len(y_lab), len(f_unl)
    y = np.r_[y_lab, np.full(n_unl, NAN)]
    f = np.r_[f_lab, f_unl]
    ours = ppi_mean(y, f)
    lam_theirs_form = float(ours.lam) * n_unl / (n + n_unl)
    # given the same λ: the same point, and the interval within 1 % of its half-width (t vs z, ddof)
    point = float(ppi_py.ppi_mean_pointestimate(y_lab, f_lab, f_unl, lam=lam_theirs_form)[0])
    assert float(ours.estimate) == pytest.approx(point, abs=1e-12)
    lo, hi = ppi_py.ppi_mean_ci(y_lab, f_lab, f_unl, alpha=0.05, lam=lam_theirs_form)
    assert float(ours.lo) == pytest.approx(float(lo[0]), abs=0.01 * float(ours.half_width))
    assert float(ours.hi) == pytest.approx(float(hi[0]), abs=0.01 * float(ours.half_width))
    # each tuning λ itself: both estimate λ* = Cov(Y, f)/((1 + n/N')·Var f), ppi_py with Var f pooled over
    # both parts, ours with each part's own (the minimiser of the variance it reports); they differ by
    # the noise of a variance estimate on 2,000 items, and the intervals hardly at all
    theirs = float(ppi_py.ppi_mean_pointestimate(y_lab, f_lab, f_unl)[0])
    lam_theirs = (theirs - y_lab.mean()) / (f_unl.mean() - f_lab.mean())
    assert lam_theirs_form == pytest.approx(lam_theirs, rel=0.08)
    assert float(ours.estimate) == pytest.approx(theirs, abs=0.05 * float(ours.half_width))
    lo_t, hi_t = ppi_py.ppi_mean_ci(y_lab, f_lab, f_unl, alpha=0.05)
    assert float(ours.half_width) == pytest.approx((float(hi_t[0]) - float(lo_t[0])) / 2, rel=0.01)
    # λ = 0 is the classical interval
    c_lo, c_hi = ppi_py.classical_mean_ci(y_lab, alpha=0.05)
    direct = ppi_mean(y, f, lam=0.0)
    assert float(direct.lo) == pytest.approx(float(c_lo), abs=0.01 * float(direct.half_width))
    assert float(direct.hi) == pytest.approx(float(c_hi), abs=0.01 * float(direct.half_width))


def test_same_lambda_as_ppi_py_when_the_parts_share_their_proxy_variance() -> None:
    """With the unlabelled proxies the labelled ones repeated ten times, both parts have one variance of
    f, and the two tunings are the same formula: λ equal (up to ppi_py's n − 1 in one variance)."""
    y_lab, f_lab, _ = _iid(1000, 0, 4)
    f_unl = np.tile(f_lab, 10)
    ours = ppi_mean(np.r_[y_lab, np.full(len(f_unl), NAN)], np.r_[f_lab, f_unl])
    lam_ours = float(ours.lam) * len(f_unl) / (len(f_lab) + len(f_unl))
    # ppi_py's tuned point is λ·mean(f_unl) + mean(Y − λ f_lab); with mean(f_unl) = mean(f_lab) λ cancels
    # out of it, so read its λ from its own tuning routine
    theirs = ppi_py.ppi._calc_lam_glm(
        y_lab - y_lab.mean(), f_lab - f_lab.mean(), f_unl - f_lab.mean(), np.eye(1), clip=True
    )
    assert lam_ours == pytest.approx(float(theirs), rel=2e-3)


# --- planted populations -----------------------------------------------------------------------------

REPS, CHUNK, SCENARIOS, LABELS = 4000, 500, 480, 240


@pytest.fixture(scope="module")
def planted() -> dict[str, np.ndarray | float]:
    """One pass over REPS populations of SCENARIOS scenarios (3 difficulties, 4 metrics), LABELS outputs
    labelled by the human-sample design (per topology 70 % imperfect); every variant computed on them."""
    out: dict[str, list[np.ndarray]] = {}

    def keep(name: str, est: PPIEstimate) -> None:
        out.setdefault(name, []).append(np.stack([est.estimate, est.half_width, est.lam]))

    for k in range(REPS // CHUNK):
        pl = plant(CHUNK, SCENARIOS, seed=k)
        labelled, pi = stratified_sample(pl, LABELS, seed=1000 + k)
        y, f = pl.y, pl.f
        keep("weighted", ppi_from_sums(scenario_sums(y, f, labelled, pi)))
        keep("weighted_direct", ppi_from_sums(scenario_sums(y, f, labelled, pi), lam=0.0))
        keep("unweighted", ppi_from_sums(scenario_sums(y, f, labelled)))
        keep("unweighted_direct", ppi_from_sums(scenario_sums(y, f, labelled), lam=0.0))
        # a proxy 5 pp too lenient: f raised to 1 on a random share of the items where it is below 1
        rng = np.random.default_rng(2000 + k)
        below = f < 1
        share = 0.05 / float(((1 - f) * below).mean())
        f_biased = np.where(below & (rng.random(f.shape) < share), 1.0, f)
        keep("biased", ppi_from_sums(scenario_sums(y, f_biased, labelled, pi)))
        out.setdefault("biased_proxy_mean", []).append(f_biased.mean(axis=(1, 2, 3, 4))[None, :])
        # a useless proxy: another population's judge, independent of this one's labels
        f_useless = np.roll(f, 1, axis=0)
        keep("useless", ppi_from_sums(scenario_sums(y, f_useless, labelled, pi)))
        keep("useless_direct", ppi_from_sums(scenario_sums(y, f_useless, labelled, pi), lam=0.0))
        # an agent's score without a reference: Y = the person's verdict, proxy = the judge's
        lab_random = random_sample(pl, LABELS, seed=3000 + k)
        keep("agent_score", ppi_from_sums(scenario_sums(pl.h, pl.v, lab_random)))
    res: dict[str, np.ndarray | float] = {k: np.concatenate(v, axis=1) for k, v in out.items()}
    truth = superpopulation_means()
    res.update(truth=truth["y"], truth_f=truth["f"], truth_h=truth["h"])
    return res


def _coverage(run: np.ndarray, truth: float) -> float:
    return float((np.abs(run[0] - truth) <= run[1]).mean())


def test_ppi_interval_covers_95_percent(planted: dict[str, np.ndarray | float]) -> None:
    truth = float(planted["truth"])  # type: ignore[arg-type]
    run = np.asarray(planted["weighted"])
    assert 0.94 <= _coverage(run, truth) <= 0.96
    agent = np.asarray(planted["agent_score"])
    assert 0.94 <= _coverage(agent, float(planted["truth_h"])) <= 0.96  # type: ignore[arg-type]


def test_ppi_is_unbiased_when_the_proxy_is_biased(planted: dict[str, np.ndarray | float]) -> None:
    truth = float(planted["truth"])  # type: ignore[arg-type]
    proxy_bias = float(np.asarray(planted["biased_proxy_mean"]).mean()) - float(planted["truth_f"])  # type: ignore[arg-type]
    assert proxy_bias == pytest.approx(0.05, abs=0.002)  # the plant: the proxy alone is 5 pp off
    run = np.asarray(planted["biased"])
    err = run[0] - truth
    assert abs(err.mean()) < max(0.002, 3 * err.std() / math.sqrt(len(err)))
    assert 0.94 <= _coverage(run, truth) <= 0.96
    # a worse proxy costs width, not validity
    assert run[1].mean() > np.asarray(planted["weighted"])[1].mean()


def test_ppi_falls_back_to_direct_and_is_never_wider(planted: dict[str, np.ndarray | float]) -> None:
    truth = float(planted["truth"])  # type: ignore[arg-type]
    for name in ("weighted", "useless"):
        ppi, direct = np.asarray(planted[name]), np.asarray(planted[f"{name}_direct"])
        # λ minimises the variance both report, so PPI is never wider than λ = 0 computed the same way
        # (1 % slack: the two t quantiles have their own degrees of freedom)
        assert (ppi[1] <= direct[1] * 1.01).all()
    useless, useless_direct = np.asarray(planted["useless"]), np.asarray(planted["useless_direct"])
    assert useless[2].mean() < 0.1  # λ ≈ 0: the estimate falls back to the direct one
    assert useless[1].mean() / useless_direct[1].mean() == pytest.approx(1.0, abs=0.01)
    assert 0.94 <= _coverage(useless, truth) <= 0.96
    good, good_direct = np.asarray(planted["weighted"]), np.asarray(planted["weighted_direct"])
    assert good[2].mean() > 0.9 and good[1].mean() < 0.7 * good_direct[1].mean()


def test_inverse_inclusion_weights_remove_the_oversampling_bias(
    planted: dict[str, np.ndarray | float],
) -> None:
    truth = float(planted["truth"])  # type: ignore[arg-type]
    for name in ("unweighted", "unweighted_direct"):
        err = np.asarray(planted[name])[0] - truth
        assert err.mean() < -0.005  # a sample richer in errors: agreement looks lower than it is
    assert np.asarray(planted["unweighted_direct"])[0].mean() - truth < -0.04
    for name in ("weighted", "weighted_direct"):
        err = np.asarray(planted[name])[0] - truth
        assert abs(err.mean()) < max(0.002, 3 * err.std() / math.sqrt(len(err)))


def test_ppi_interval_is_no_wider_than_the_cluster_bootstrap_direct_one() -> None:
    """The reported direct interval is the cluster bootstrap's; PPI's t interval must not exceed it by
    more than noise, with a good proxy and with a useless one."""
    pl = plant(20, SCENARIOS, seed=77)
    useless = np.roll(pl.f, 1, axis=0)
    labelled, pi = stratified_sample(pl, LABELS, seed=79)
    ratios: dict[str, list[float]] = {"good": [], "useless": []}
    for r in range(20):
        lab = np.broadcast_to(labelled[r][..., None], pl.y[r].shape)
        base = np.broadcast_to(np.arange(SCENARIOS)[:, None, None, None], lab.shape).ravel()
        w = 1 / np.broadcast_to(pi[r][..., None], lab.shape).ravel()
        y = np.where(lab, pl.y[r], NAN).ravel()
        frame = pd.DataFrame({"base_id": base.astype(str), "y": y, "w": w})[lab.ravel()]
        boot = ClusterBootstrap(frame["base_id"].unique(), resamples=1000, seed=r)
        draws = boot.ratio(frame, [], "y", weight=frame["w"].to_numpy())
        t = draws.table()
        direct_hw = float(t["ci_hi"].iloc[0] - t["ci_lo"].iloc[0]) / 2
        for name, f in (("good", pl.f[r]), ("useless", useless[r])):
            est = ppi_mean(y, f.ravel(), cluster=base, inclusion=np.where(lab.ravel(), 1 / w, NAN))
            assert float(est.direct) == pytest.approx(float(t["align"].iloc[0]), abs=1e-12)
            ratios[name].append(float(est.half_width) / direct_hw)
    assert np.mean(ratios["useless"]) < 1.05 and max(ratios["useless"]) < 1.15
    assert np.mean(ratios["good"]) < 0.7


def test_label_budget_reaches_its_target_on_a_planted_population() -> None:
    """From a pilot of 60 labels, the budget for ±2 pp; then labelling that many gives ±2 pp on average."""
    pl = plant(400, 480, seed=11)
    lab = random_sample(pl, 60, seed=12)
    pilots = ppi_from_sums(scenario_sums(pl.y, pl.f, lab))
    needs: dict[str, list[float]] = {"direct": [], "ppi": []}
    fields = [k for k in PPIEstimate.__dataclass_fields__ if k != "alpha"]
    for r in range(400):
        one = PPIEstimate(alpha=pilots.alpha, **{k: getattr(pilots, k)[r] for k in fields})
        b = label_budget(one, target=0.02, n=60)  # counted in outputs (four metric rows each)
        needs["direct"].append(b.direct)
        needs["ppi"].append(b.ppi)
    for name, lam in (("direct", 0.0), ("ppi", None)):
        n = int(np.median(needs[name]))
        lab_n = random_sample(pl, n, seed=13)
        achieved = ppi_from_sums(scenario_sums(pl.y, pl.f, lab_n), lam=lam).half_width.mean()
        z_over_t = sps.norm.ppf(0.975) / sps.t.ppf(0.975, n)  # the budget reads z; the interval t
        assert achieved * z_over_t == pytest.approx(0.02, rel=0.12), (name, n, achieved)
    assert np.median(needs["ppi"]) < 0.6 * np.median(needs["direct"])
