"""Intervals, paired tests and sample sizes for scores that are means over items grouped by character.

Pure and deterministic (a fixed seed); scipy.stats where scipy has the procedure. It does not choose a table's
comparisons (:mod:`rpa_lib.evaluation.outcomes`) and reads no file. An undefined interval or test returns NaN
with a ``reason``, never raises.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

CONFIDENCE = 0.95
ALPHA = 0.05
POWER = 0.80
N_RESAMPLES = 2000
SEED = 0
BOOTSTRAP = "cluster bootstrap over characters (percentile, 2000 resamples)"
EXACT = "Clopper-Pearson exact binomial over items"
FEW_CLUSTERS = 10  # fewer characters than this: a percentile cluster interval under-covers (its note says so)
SIGN_FLIP_MAX_N = 13  # scipy.stats.wilcoxon's choice: with zeros or ties and at most this many differences, every flip


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval, how it was computed, why it is NaN (or a caveat) and what it rests on."""

    estimate: float
    low: float
    high: float
    method: str
    n_items: int
    n_clusters: int
    reason: str = ""


def cluster_bootstrap(values, clusters=None, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                      seed: int = SEED) -> Interval:
    """The mean over items with a percentile interval from resampling whole clusters (characters); ``clusters=None``:
    each item its own. ``cluster_bootstrap([1, 0, 1, 1], ["a", "a", "b", "b"]).estimate == 0.75``"""
    values = np.asarray(values, dtype=float)
    clusters = np.asarray(clusters if clusters is not None else np.arange(len(values)), dtype=object)
    keep = ~np.isnan(values)
    values = values[keep]
    idx, names = pd.factorize(clusters[keep].astype(str))  # clusters in order of first appearance
    sums = np.bincount(idx, weights=values, minlength=len(names))
    counts = np.bincount(idx, minlength=len(names)).astype(float)
    n, k = len(values), len(names)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, BOOTSTRAP, 0, 0, "no items")
    estimate = float(values.mean())
    if k < 2:
        return Interval(estimate, math.nan, math.nan, BOOTSTRAP, n, k, "1 character: no cluster interval")
    if np.allclose(sums / counts, sums[0] / counts[0]):  # every resample gives the estimate: a width of 0 is no 95%
        return Interval(estimate, math.nan, math.nan, BOOTSTRAP, n, k,
                        "every character has the same mean: no spread between characters to resample")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((sums, counts), lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis), paired=True,
                              vectorized=True, n_resamples=n_resamples, confidence_level=confidence,
                              method="percentile", rng=np.random.default_rng(seed))
    reason = f"{k} characters: a percentile interval under-covers with few clusters" if k < FEW_CLUSTERS else ""
    ci = res.confidence_interval
    return Interval(estimate, float(ci.low), float(ci.high), BOOTSTRAP, n, k, reason)


def clopper_pearson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """The exact interval of a binomial proportion (items as independent units).
    ``clopper_pearson(0, 10).high`` is 1 - 0.025 ** (1 / 10) = 0.3085"""
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, EXACT, 0, 0, "no items")
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return Interval(successes / n, float(ci.low), float(ci.high), EXACT, int(n), int(n))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p of ``b`` pairs where only the first is right and ``c`` where only the second is.
    ``mcnemar_exact(16, 5)`` = 2 P(X <= 5 | 21, 1/2) = 0.0266"""
    return 1.0 if b + c == 0 else float(stats.binomtest(int(b), int(b + c), 0.5).pvalue)


def sign_test(differences) -> tuple[int, int, float]:
    """Sign test of paired differences, ties dropped: ``(better, worse, p)``.
    ``sign_test([1]*7 + [-1]*3)`` is ``(7, 3, 0.34375)``"""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    better, worse = int((d > 0).sum()), int((d < 0).sum())
    return better, worse, mcnemar_exact(better, worse)


def wilcoxon_signed_rank(x, y) -> float:
    """Two-sided Wilcoxon signed-rank p of paired ``x - y``, zero differences dropped (1.0 when all are; NaN with no
    pair)."""
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) == 0:
        return math.nan
    nonzero = np.abs(d[d != 0])
    if len(nonzero) == 0:
        return 1.0
    if len(d) <= SIGN_FLIP_MAX_N and (len(nonzero) < len(d) or len(np.unique(nonzero)) < len(nonzero)):
        return _signed_rank_sign_flips(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def _signed_rank_sign_flips(d: np.ndarray) -> float:
    """scipy.stats.wilcoxon's p for a small ``d`` with zeros or ties, every sign flip at once (bit-identical).
    ``_signed_rank_sign_flips(np.array([1.0, 1.0, 2.0, 0.0]))`` is 0.25"""
    ranks = np.zeros(len(d))
    ranks[d != 0] = stats.rankdata(np.abs(d[d != 0]))
    res = stats.permutation_test((d,), lambda flipped, axis=-1: np.sum(np.where(flipped > 0, ranks, 0.0), axis=axis),
                                 permutation_type="samples", vectorized=True)
    return float(res.pvalue)


def paired_permutation_test(x, y, n_resamples: int = 9999, seed: int = SEED) -> float:
    """Two-sided p of the mean paired difference under random sign flips within pairs (exact when 2^n <=
    ``n_resamples``; 1.0 when every difference is zero or with one pair, NaN with no pair)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) == 0:
        return math.nan
    if np.all(x == y) or len(x) == 1:  # one pair: its two sign flips are as extreme as each other
        return 1.0
    res = stats.permutation_test((x, y), lambda a, b, axis=-1: np.mean(a - b, axis=axis), permutation_type="samples",
                                 vectorized=True, n_resamples=n_resamples, rng=np.random.default_rng(seed))
    return float(res.pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p values (NaN kept, and left out of the count).
    ``holm([0.01, 0.04, 0.03])`` is ``[0.03, 0.06, 0.06]``"""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    order = ok[np.argsort(p[ok], kind="stable")]
    out[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    return out


def two_proportion_test(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p of the unpaired pooled two-proportion z test (what printed proportions allow without the pairs);
    NaN when a group is empty."""
    if n1 == 0 or n2 == 0:
        return math.nan
    p1, p2, pooled = k1 / n1, k2 / n2, (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return 1.0 if se == 0 else float(2 * stats.norm.sf(abs(p1 - p2) / se))


def smallest_exact_p(discordant: int) -> float:
    """The smallest two-sided exact McNemar (or sign test) p that ``discordant`` pairs can give.
    ``smallest_exact_p(5)`` is 0.0625"""
    return min(1.0, 2 * 0.5 ** int(discordant))


def _z(alpha: float, power: float) -> tuple[float, float]:
    return float(stats.norm.ppf(1 - alpha / 2)), float(stats.norm.ppf(power))


def n_paired_binary(delta: float, discordant: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Pairs a two-sided McNemar test needs to detect ``delta`` = p10 - p01 when a share ``discordant`` = p10 + p01
    of pairs disagree (Connor 1987); inf for ``delta == 0``, NaN for ``discordant < |delta|``."""
    za, zb = _z(alpha, power)
    if delta == 0 or discordant < abs(delta):
        return math.inf if delta == 0 else math.nan
    return math.ceil((za * math.sqrt(discordant) + zb * math.sqrt(discordant - delta ** 2)) ** 2 / delta ** 2)


def mde_paired_binary(n: int, discordant: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest |p10 - p01| that ``n`` pairs detect (:func:`n_paired_binary` solved for delta); NaN with no
    pairs."""
    if n <= 0 or discordant <= 0:
        return math.nan
    za, zb = _z(alpha, power)

    def gap(d):
        return (za * math.sqrt(discordant) + zb * math.sqrt(max(discordant - d * d, 0.0))) / math.sqrt(n) - d

    if gap(discordant) > 0:
        return math.nan  # not even a difference as large as every discordant pair
    return float(optimize.brentq(gap, 1e-12, discordant))


def n_paired_continuous(delta: float, sd_difference: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Pairs needed to detect a mean paired difference ``delta`` (normal approximation of the paired t test)."""
    za, zb = _z(alpha, power)
    return math.ceil(((za + zb) * sd_difference / delta) ** 2) if delta else math.inf


def mde_paired_continuous(n: int, sd_difference: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest mean paired difference ``n`` pairs detect (normal approximation of the paired t test)."""
    za, zb = _z(alpha, power)
    return (za + zb) * sd_difference / math.sqrt(n) if n > 0 else math.nan
