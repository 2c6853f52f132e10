"""Intervals, paired tests and sample sizes for scores computed from per-item outcomes.

A score here is a mean over items (questions, questionnaire dimensions, rating units) that belong to characters.
Items of one character are not independent (one persona, one index, one set of GS decisions), so the interval of
a score resamples **characters** (a cluster bootstrap), and a paired comparison is tested twice: at the item level
(exact McNemar for 0/1 outcomes, Wilcoxon signed-rank or a paired permutation test for ratings) and at the
character level (a sign test on per-character mean differences). Holm's correction adjusts the p values of one
table's comparisons. The sample-size functions use the usual normal approximations (formulas in their docstrings).

Every function is pure (numbers in, numbers out) and deterministic (a fixed seed). It calls scipy.stats where scipy
has the procedure. It does not decide which comparisons a table makes (:mod:`rpa_lib.evaluation.outcomes`) and
does not read files. Where an interval or a test is undefined (one character, no discordant pair, no data) it
returns NaN with a ``reason``, never raises.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

CONFIDENCE = 0.95
ALPHA = 0.05
POWER = 0.80
N_RESAMPLES = 2000
SEED = 0
BOOTSTRAP = "cluster bootstrap over characters (percentile, 2000 resamples)"
EXACT = "Clopper-Pearson exact binomial over items"


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval: ``method`` names how it was computed, ``reason`` why it is NaN (or a
    caveat), ``n_items`` and ``n_clusters`` what it rests on."""

    estimate: float
    low: float
    high: float
    method: str
    n_items: int
    n_clusters: int
    reason: str = ""


def _groups(values, clusters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-cluster sums and counts of the non-NaN values (clusters in order of first appearance)."""
    values = np.asarray(values, dtype=float)
    clusters = np.asarray(clusters if clusters is not None else np.arange(len(values)), dtype=object)
    keep = ~np.isnan(values)
    values, clusters = values[keep], clusters[keep]
    _, first, inverse = np.unique(clusters.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    idx = rank[inverse]
    sums = np.bincount(idx, weights=values, minlength=len(order))
    counts = np.bincount(idx, minlength=len(order)).astype(float)
    return values, sums, counts


def cluster_bootstrap(values, clusters=None, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                      seed: int = SEED) -> Interval:
    """The mean of ``values`` over items with a percentile interval from resampling whole clusters (characters)
    with replacement: ``scipy.stats.bootstrap`` on the per-cluster (sum, count) pairs, the statistic
    sum(sums) / sum(counts), so each resample weights a character by its number of items, as the score does.
    One cluster: NaN interval (nothing to resample). ``clusters=None``: each item its own cluster.

    ``cluster_bootstrap([1, 0, 1, 1], ["a", "a", "b", "b"]).estimate == 0.75``
    """
    values, sums, counts = _groups(values, clusters)
    n, k = len(values), len(sums)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, BOOTSTRAP, 0, 0, "no items")
    estimate = float(values.mean())
    if k < 2:
        return Interval(estimate, math.nan, math.nan, BOOTSTRAP, n, k, "1 character: no cluster interval")
    if np.allclose(sums / counts, sums[0] / counts[0]):
        return Interval(estimate, estimate, estimate, BOOTSTRAP, n, k, "every character has the same mean")

    def ratio(s, c, axis=-1):
        return s.sum(axis=axis) / c.sum(axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((sums, counts), ratio, paired=True, vectorized=True, n_resamples=n_resamples,
                              confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    reason = f"{k} characters: a percentile interval under-covers with few clusters" if k < 10 else ""
    return Interval(estimate, float(res.confidence_interval.low), float(res.confidence_interval.high), BOOTSTRAP, n, k,
                    reason)


def clopper_pearson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """The exact (Clopper-Pearson) interval of a binomial proportion, for items that are independent units:
    ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``. ``n == 0``: NaN.

    ``clopper_pearson(0, 10).high`` is 1 - 0.025 ** (1 / 10) = 0.3085
    """
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, EXACT, 0, 0, "no items")
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return Interval(successes / n, float(ci.low), float(ci.high), EXACT, int(n), int(n))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p: ``b`` pairs where only the first is right, ``c`` where only the second is; under
    the null each discordant pair goes either way with probability 1/2, so p = binomtest(b, b + c).pvalue (1.0
    with no discordant pair). ``mcnemar_exact(16, 5)`` = 2 P(X <= 5 | 21, 1/2) = 0.0266."""
    if b + c == 0:
        return 1.0
    return float(stats.binomtest(int(b), int(b + c), 0.5).pvalue)


def sign_test(differences) -> tuple[int, int, float]:
    """Sign test of paired differences (e.g. per-character mean differences): ``(better, worse, p)``, ties
    dropped, p the exact two-sided binomial p of ``better`` of ``better + worse``. ``sign_test([1]*7 + [-1]*3)``
    is ``(7, 3, 0.34375)``."""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    better, worse = int((d > 0).sum()), int((d < 0).sum())
    return better, worse, mcnemar_exact(better, worse)


# scipy.stats.wilcoxon's choice: with zeros or ties and at most this many differences, every sign flip (2^n <= 9999)
SIGN_FLIP_MAX_N = 13


def wilcoxon_signed_rank(x, y) -> float:
    """Two-sided Wilcoxon signed-rank p of paired ``x - y`` (``scipy.stats.wilcoxon``, zero differences dropped,
    exact for small n without ties). 1.0 when every difference is zero, NaN with no pair."""
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) == 0:
        return math.nan
    if not np.any(d != 0):
        return 1.0
    nonzero = np.abs(d[d != 0])
    if len(d) <= SIGN_FLIP_MAX_N and (len(nonzero) < len(d) or len(np.unique(nonzero)) < len(nonzero)):
        return _signed_rank_sign_flips(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def _signed_rank_sign_flips(d: np.ndarray) -> float:
    """The p that ``scipy.stats.wilcoxon(d, zero_method="wilcox")`` gives for a small ``d`` with zeros or ties (a
    permutation test over every sign flip), with W+ computed for all flips at once: flipping signs leaves the ranks
    of |d| as they are, so W+ is the sum of the ranks whose difference is positive. scipy computes W+ one flip at a
    time (8,192 calls for n = 13); the p is the same to the last bit (a test compares them).
    ``_signed_rank_sign_flips(np.array([1.0, 1.0, 2.0, 0.0]))`` is 0.25."""
    ranks = np.zeros(len(d))
    ranks[d != 0] = stats.rankdata(np.abs(d[d != 0]))

    def w_plus(flipped: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(np.where(flipped > 0, ranks, 0.0), axis=axis)

    return float(stats.permutation_test((d,), w_plus, permutation_type="samples", vectorized=True).pvalue)


def paired_permutation_test(x, y, n_resamples: int = 9999, seed: int = SEED) -> float:
    """Two-sided p of the mean paired difference under random sign flips within pairs
    (``scipy.stats.permutation_test`` with ``permutation_type="samples"``; exact when 2^n <= ``n_resamples``).
    1.0 when every difference is zero, NaN with no pair."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) == 0:
        return math.nan
    if np.all(x == y):
        return 1.0

    def mean_diff(a, b, axis=-1):
        return np.mean(a - b, axis=axis)

    res = stats.permutation_test((x, y), mean_diff, permutation_type="samples", vectorized=True,
                                 n_resamples=n_resamples, rng=np.random.default_rng(seed))
    return float(res.pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p values (NaN kept as NaN, left out of the count): sort the m p values,
    multiply the i-th smallest (i from 0) by m - i, take the running maximum, cap at 1.
    ``holm([0.01, 0.04, 0.03])`` is ``[0.03, 0.06, 0.06]``."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adjusted
    return out


def two_proportion_test(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p of the unpaired pooled two-proportion z test (what printed proportions allow without the
    pairs): z = (p1 - p2) / sqrt(p (1 - p) (1/n1 + 1/n2)), p the pooled proportion."""
    p1, p2, pooled = k1 / n1, k2 / n2, (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    return float(2 * stats.norm.sf(abs(p1 - p2) / se))


def smallest_exact_p(discordant: int) -> float:
    """The smallest two-sided exact McNemar (or sign test) p that ``discordant`` pairs can give: all of them one
    way, p = 2 * 0.5 ** d (capped at 1). Two pairs can never give p < 0.05 (0.5); five cannot (0.0625)."""
    return min(1.0, 2 * 0.5 ** int(discordant))


def _z(alpha: float, power: float) -> tuple[float, float]:
    return float(stats.norm.ppf(1 - alpha / 2)), float(stats.norm.ppf(power))


def n_paired_binary(delta: float, discordant: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Pairs needed to detect a difference ``delta`` = p10 - p01 between two paired proportions with a two-sided
    McNemar test, when a share ``discordant`` = p10 + p01 of pairs disagree (Connor 1987, Biometrics 43:207):
    n = (z_{1-a/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2, rounded up. ``delta == 0``: inf;
    ``discordant < |delta|`` (impossible): NaN."""
    za, zb = _z(alpha, power)
    if delta == 0 or discordant < abs(delta):
        return math.inf if delta == 0 else math.nan
    return math.ceil((za * math.sqrt(discordant) + zb * math.sqrt(discordant - delta ** 2)) ** 2 / delta ** 2)


def mde_paired_binary(n: int, discordant: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest |p10 - p01| that ``n`` pairs detect with the given power (Connor's formula of
    :func:`n_paired_binary` solved for delta). ``discordant``: the expected share of disagreeing pairs (for two
    independent answers right with probability p, 2 p (1 - p)). NaN with no pairs."""
    if n <= 0 or discordant <= 0:
        return math.nan
    za, zb = _z(alpha, power)

    def gap(d):
        return (za * math.sqrt(discordant) + zb * math.sqrt(max(discordant - d * d, 0.0))) / math.sqrt(n) - d

    if gap(discordant) > 0:
        return math.nan  # not even a difference as large as every discordant pair is detectable
    return float(optimize.brentq(gap, 1e-12, discordant))


def n_paired_continuous(delta: float, sd_difference: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Pairs needed to detect a mean paired difference ``delta`` of a continuous outcome whose paired differences
    have standard deviation ``sd_difference`` (normal approximation of the paired t test):
    n = ((z_{1-a/2} + z_{power}) sd / delta)^2, rounded up."""
    za, zb = _z(alpha, power)
    return math.ceil(((za + zb) * sd_difference / delta) ** 2) if delta else math.inf


def mde_paired_continuous(n: int, sd_difference: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest mean paired difference ``n`` pairs detect: (z_{1-a/2} + z_{power}) sd / sqrt(n)."""
    if n <= 0:
        return math.nan
    za, zb = _z(alpha, power)
    return (za + zb) * sd_difference / math.sqrt(n)
