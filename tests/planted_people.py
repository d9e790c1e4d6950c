"""Planted populations of reference scores, a judge's verdicts and a person's labels (tests and bench).

Shaped like the paper's human check: base scenarios of six topologies, each with three difficulties (and
``generators`` outputs per difficulty) and four metric verdicts per output. A scenario's latent effects are
shared by all its outputs (so its rows are correlated, as real ones are): ``a`` makes its outputs imperfect
more often, ``b`` makes the person disagree with the reference more, ``c`` makes the judge err more.

* reference p: 1 on every metric of a perfect output; on an imperfect one each metric is 1, 0.5 or 0
  (0.45 / 0.30 / 0.25), at least one below 1. About 30 % of the outputs are imperfect (more when hard).
* person h: the reference's level, except with a probability that is small on perfect outputs and larger
  on imperfect ones, largest for parameter structure (the paper: 92.7 % overall, 82.5 % on parameters, on
  a sample of 14 imperfect / 6 perfect per topology); then one of the two other levels.
* judge v: the reference's level, except with probability ~8 % on perfect outputs and ~30 % on imperfect
  ones (about 85 % agreement over the population); an erring judge sides with the person half the time
  when the person differs from the reference, else picks one of the two other levels.

Everything is vectorised over a leading replicate axis R, so thousands of populations are planted at once.
Arrays are (R, S, D, G, M): replicate, scenario, difficulty, generator, metric.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentjudge.types import DIFFICULTIES, METRICS, TOPOLOGIES

LEVELS = np.array([0.0, 0.5, 1.0])
IMPERFECT_LOGIT = np.array([-1.6, -0.9, -0.2])  # easy, medium, hard
P_LEVELS_IMPERFECT = np.array([0.25, 0.30, 0.45])  # P(0), P(0.5), P(1) of a metric of an imperfect output
PERSON_ERR_PERFECT = 0.012
PERSON_ERR_IMPERFECT = np.array([0.035, 0.20, 0.05, 0.035])  # tool, param, seq, cov
JUDGE_ERR = (0.07, 0.27)  # perfect, imperfect
SIDE_WITH_PERSON = 0.5


def _logit(p: float | np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return np.asarray(np.log(p / (1 - p)))


def _expit(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def _other_level(level: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One of the two levels other than ``level``, uniformly, read from ``u`` uniform on [0, 1)."""
    return np.asarray(((level * 2 + 1 + (u < 0.5)) % 3) * 0.5)


@dataclass
class Planted:
    p: np.ndarray  # (R, S, D, G, M) reference
    h: np.ndarray  # person
    v: np.ndarray  # judge
    topology: np.ndarray  # (S,) index into TOPOLOGIES

    @property
    def imperfect(self) -> np.ndarray:
        """(R, S, D, G): some reference score below 1."""
        return np.asarray((self.p < 1).any(axis=-1))

    @property
    def y(self) -> np.ndarray:
        """The judge's agreement with the person, 1 − |h − v|."""
        return np.asarray(1.0 - np.abs(self.h - self.v))

    @property
    def f(self) -> np.ndarray:
        """The judge's agreement with the reference (the proxy), 1 − |p − v|."""
        return np.asarray(1.0 - np.abs(self.p - self.v))


def plant(
    replicates: int,
    scenarios: int,
    seed: int,
    generators: int = 1,
    sd: float = 0.8,
    judge_err: tuple[float, float] = JUDGE_ERR,
) -> Planted:
    """``replicates`` independent populations of ``scenarios`` base scenarios (topologies in turn)."""
    rng = np.random.default_rng(seed)
    r, s, d, g, m = replicates, scenarios, len(DIFFICULTIES), generators, len(METRICS)
    shape = (r, s, d, g, m)
    a, b, c = (rng.normal(0.0, sd, size=(r, s, 1, 1, 1)) for _ in range(3))
    imperfect = rng.random((r, s, d, g, 1)) < _expit(IMPERFECT_LOGIT[None, None, :, None, None] + a)
    cum = np.cumsum(P_LEVELS_IMPERFECT)
    u = rng.random(shape, dtype=np.float32)
    draw = (u >= cum[0]).astype(np.int64) + (u >= cum[1])
    none_below = (draw == 2).all(axis=-1, keepdims=True)
    forced = rng.integers(0, m, size=(r, s, d, g, 1)) == np.arange(m)
    draw = np.where(none_below & forced, (u < 0.5 * (1 + cum[1])).astype(np.int64), draw)
    p = np.where(imperfect, LEVELS[draw], 1.0)
    # one uniform per decision; where it falls below the probability, u / probability is uniform again
    # and picks which other level
    person_err = _expit(np.where(imperfect, _logit(PERSON_ERR_IMPERFECT), _logit(PERSON_ERR_PERFECT)) + b)
    u = rng.random(shape, dtype=np.float32)
    h = np.where(u < person_err, _other_level(p, u / person_err), p)
    judge_err_p = _expit(np.where(imperfect, _logit(judge_err[1]), _logit(judge_err[0])) + c)
    u = rng.random(shape, dtype=np.float32)
    sides = (u < SIDE_WITH_PERSON * judge_err_p) & (h != p)
    v = np.where(u < judge_err_p, np.where(sides, h, _other_level(p, u / judge_err_p)), p)
    topology = np.arange(s) % len(TOPOLOGIES)
    return Planted(p=p, h=h, v=v, topology=topology)


def stratified_sample(
    planted: Planted, n: int, seed: int, imperfect_share: float = 14 / 20
) -> tuple[np.ndarray, np.ndarray]:
    """``human-sample``'s design, vectorised: n outputs per replicate, n/6 per topology, of which
    round(share·n/6) imperfect and the rest perfect, each drawn uniformly within its stratum (the pools
    must be large enough: no top-up). Returns (labelled (R, S, D, G) bool, π (R, S, D, G): the stratum's
    n_h/N_h of each output)."""
    rng = np.random.default_rng(seed)
    imp = planted.imperfect  # (R, S, D, G)
    r = imp.shape[0]
    topo = np.broadcast_to(planted.topology[None, :, None, None], imp.shape)
    stratum = (topo * 2 + imp).reshape(r, -1)  # (R, items)
    n_topo = len(TOPOLOGIES)
    quota_t = n // n_topo
    if quota_t * n_topo != n:
        raise ValueError("n must be a multiple of the six topologies")
    want = np.tile([quota_t - round(quota_t * imperfect_share), round(quota_t * imperfect_share)], n_topo)
    key = stratum + rng.random(stratum.shape)
    order = np.argsort(key, axis=1)
    sorted_stratum = np.take_along_axis(stratum, order, axis=1)
    sizes = np.stack([(stratum == h).sum(axis=1) for h in range(2 * n_topo)], axis=1)  # (R, H)
    if (sizes < want).any():
        raise ValueError("a stratum has fewer outputs than its quota; plant more scenarios")
    starts = np.cumsum(sizes, axis=1) - sizes
    rank = np.arange(stratum.shape[1])[None, :] - np.take_along_axis(starts, sorted_stratum, axis=1)
    chosen_sorted = rank < want[sorted_stratum]
    labelled = np.zeros_like(chosen_sorted)
    np.put_along_axis(labelled, order, chosen_sorted, axis=1)
    pi = want[stratum] / np.take_along_axis(sizes, stratum, axis=1)
    return labelled.reshape(imp.shape), pi.reshape(imp.shape)


def random_sample(planted: Planted, n: int, seed: int) -> np.ndarray:
    """n outputs per replicate, uniformly (equal inclusion probabilities). (R, S, D, G) bool."""
    rng = np.random.default_rng(seed)
    shape = planted.imperfect.shape
    r = shape[0]
    order = np.argsort(rng.random((r, int(np.prod(shape[1:])))), axis=1)
    labelled = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(labelled, order[:, :n], True, axis=1)
    return labelled.reshape(shape)


def scenario_sums(
    y: np.ndarray, f: np.ndarray, labelled: np.ndarray, pi: np.ndarray | None = None
) -> np.ndarray:
    """(R, S, 6) per-scenario sums (``stats.ppi.SUM_COLUMNS``) of (R, S, D, G, M) labels y and proxies f
    (every metric of a labelled output is labelled), π per output or None (unweighted)."""
    lab = np.broadcast_to(labelled[..., None], y.shape)
    w = lab / (1.0 if pi is None else np.broadcast_to(pi[..., None], y.shape))
    w = np.where(lab, w, 0.0)
    axes = (2, 3, 4)
    return np.stack(
        [
            w.sum(axis=axes),
            (w * y).sum(axis=axes),
            (w * f).sum(axis=axes),
            np.full(y.shape[:2], float(np.prod(y.shape[2:]))),
            f.sum(axis=axes),
            lab.sum(axis=axes).astype(float),
        ],
        axis=-1,
    )


def superpopulation_means(seed: int = 99, scenarios: int = 200_000) -> dict[str, float]:
    """The means of y, f, h and v over a very large population: the estimands of the intervals (each
    replicate is a fresh draw from the same process)."""
    totals = dict.fromkeys(("y", "f", "h", "v"), 0.0)
    count = 0
    for chunk in range(scenarios // 50_000):
        pl = plant(1, 50_000, seed + chunk)
        for name in totals:
            totals[name] += float(getattr(pl, name).sum())
        count += pl.p.size
    return {name: total / count for name, total in totals.items()}
