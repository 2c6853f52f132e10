"""Agreement between raters and between rankings: AMADEUS Table 2 (human evaluation) and CharacterCraft Table 6.

- :func:`cronbach_alpha`: internal consistency of raters, with Feldt's confidence interval;
- :func:`krippendorff_alpha`: Krippendorff's alpha, computed by the maintained ``krippendorff`` package;
- :func:`kendall_tau`: Kendall's rank correlation, variants a, b and c;
- :func:`likert_summary`: the mu, sigma and Mdn of AMADEUS Table 2, exactly as its caption defines them.

Every rating table has one row per rated sample and one column per rater (a DataFrame or a 2-D array), the
orientation :func:`rpa_lib.evaluation.sheets.merge_sheets` returns; a missing rating is NaN.

These are pure functions of their inputs: no LLM, no file, no plot. They do not collect ratings (see
:mod:`rpa_lib.evaluation.sheets`) and do not round: the paper's three decimals are for the caller to print.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

NAN_POLICIES = ("pairwise", "listwise")
KRIPPENDORFF_LEVELS = ("nominal", "ordinal", "interval", "ratio")
TAU_VARIANTS = ("a", "b", "c")


def _ratings(table) -> pd.DataFrame:
    """``table`` as a float DataFrame (samples x raters); a clear error for anything else."""
    frame = table.copy() if isinstance(table, pd.DataFrame) else pd.DataFrame(np.asarray(table, dtype=object))
    if frame.ndim != 2:
        raise ValueError(f"a rating table is 2-D (samples x raters), got shape {frame.shape}")
    try:
        return frame.apply(pd.to_numeric, errors="raise").astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a rating table holds numbers or NaN only: {exc}") from None


def _check_shape(frame: pd.DataFrame, what: str) -> None:
    n, k = frame.shape
    if k < 2:
        raise ValueError(f"{what} needs at least 2 raters (columns), got {k}")
    if n < 2:
        raise ValueError(f"{what} needs at least 2 rated samples (rows), got {n}")


# ---- Cronbach's alpha ------------------------------------------------------------------------------------------


def feldt_interval(alpha: float, n: int, k: int, ci: float = 0.95) -> tuple[float, float]:
    """Feldt's confidence interval for Cronbach's alpha of ``n`` samples and ``k`` raters.

    ``1 - (1 - alpha) * F`` at the upper and lower ``(1 - ci) / 2`` points of the F distribution with
    ``n - 1`` and ``(n - 1)(k - 1)`` degrees of freedom (Feldt, Woodruff and Salih 1987).
    ``feldt_interval(0.8, 30, 11)`` -> ``(0.674..., 0.891...)``
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci is a confidence level between 0 and 1, got {ci}")
    if np.isnan(alpha):
        return float("nan"), float("nan")
    # imported here, not at the top: scipy.stats takes a second to import, and every kernel imports rpa_lib
    from scipy import stats

    tail = (1 - ci) / 2
    df1, df2 = n - 1, (n - 1) * (k - 1)
    low = 1 - (1 - alpha) * stats.f.isf(tail, df1, df2)
    high = 1 - (1 - alpha) * stats.f.isf(1 - tail, df1, df2)
    return float(low), float(high)


def cronbach_alpha(table, *, nan_policy: str = "pairwise", ci: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Cronbach's alpha of the raters of ``table`` (samples x raters) and its Feldt interval: ``(alpha, (low, high))``.

    ``alpha = k / (k - 1) * (1 - trace(C) / sum(C))`` with ``C`` the raters' covariance matrix (ddof 1): the trace
    is the sum of the raters' variances and the sum of all entries the variance of the per-sample total.

    ``nan_policy``: ``"pairwise"`` computes each covariance over the samples both raters rated (as
    ``DataFrame.cov``); ``"listwise"`` first drops every sample with a missing rating. The interval's ``n`` is the
    number of samples that enter the computation: for ``"listwise"`` the complete samples, for ``"pairwise"`` the
    samples with at least one rating. (pingouin keeps the ``n`` from before listwise deletion; see the tests.)

    A ValueError for fewer than 2 raters or samples, or a rater without a single rating. NaN, with a warning, when
    the total variance is zero (every sample has the same total) or a pair of raters shares fewer than 2 samples.
    """
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    frame = _ratings(table)
    empty = [str(c) for c in frame.columns[frame.isna().all()]]
    if empty and frame.shape[0]:
        raise ValueError(f"rater(s) without a single rating: {', '.join(empty)}")
    frame = frame.dropna(how="all") if nan_policy == "pairwise" else frame.dropna(how="any")
    _check_shape(frame, f"Cronbach's alpha ({nan_policy})")
    n, k = frame.shape
    cov = frame.cov(ddof=1).to_numpy()
    if np.isnan(cov).any():
        i, j = np.argwhere(np.isnan(cov))[0]
        warnings.warn(f"Cronbach's alpha is undefined: raters {frame.columns[i]!r} and {frame.columns[j]!r} share "
                      f"fewer than 2 rated samples; returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan"), (float("nan"), float("nan"))
    total = cov.sum()
    if total <= 0 or np.isclose(total, 0.0):
        warnings.warn(f"Cronbach's alpha is undefined: the variance of the per-sample totals is {total:.3g} "
                      "(every sample got the same total); returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan"), (float("nan"), float("nan"))
    alpha = float(k / (k - 1) * (1 - np.trace(cov) / total))
    return alpha, feldt_interval(alpha, n, k, ci)


# ---- Krippendorff's alpha --------------------------------------------------------------------------------------


def krippendorff_alpha(table, level: str = "ordinal", *, value_domain=None) -> float:
    """Krippendorff's alpha of ``table`` (samples x raters, NaN for a missing rating) at a level of measurement.

    A thin wrapper over ``krippendorff.alpha``, which expects raters x units: the table is transposed here.
    ``value_domain`` (the ordered possible values, e.g. ``[1, 2, 3, 4, 5]``) defaults to the values that occur.
    """
    import krippendorff

    if level not in KRIPPENDORFF_LEVELS:
        raise ValueError(f"level must be one of {KRIPPENDORFF_LEVELS}, got {level!r}")
    frame = _ratings(table)
    _check_shape(frame, "Krippendorff's alpha")
    return float(krippendorff.alpha(reliability_data=frame.to_numpy().T, level_of_measurement=level,
                                    value_domain=value_domain))


# ---- Kendall's tau ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KendallTau:
    """Kendall's tau of ``n`` complete pairs; ``pvalue`` is scipy's (None for variant a, which scipy lacks)."""

    tau: float
    pvalue: float | None
    n: int
    variant: str


def _tau_a(x: np.ndarray, y: np.ndarray) -> float:
    """(concordant - discordant) / (n(n-1)/2); a pair tied in x or y counts as neither. O(n^2), fine for ratings."""
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(len(x), k=1)
    s = float((dx * dy)[upper].sum())
    n = len(x)
    return s / (n * (n - 1) / 2)


def kendall_tau(x, y, variant: str = "b") -> KendallTau:
    """Kendall's tau between two paired sequences; a pair with a missing value (NaN or None) on either side is dropped.

    Variants: ``"a"`` (ours: (concordant - discordant) / (n(n-1)/2), ties count as neither), ``"b"`` (ties
    corrected, scipy) and ``"c"`` (Stuart's, for rectangular tables, scipy). NaN with a warning when fewer than
    2 pairs remain or either side is constant (no ranking to compare; tau-a would be 0, reported as NaN too).
    """
    if variant not in TAU_VARIANTS:
        raise ValueError(f"variant must be one of {TAU_VARIANTS}, got {variant!r}")
    xs = pd.to_numeric(pd.Series(list(x), dtype=object), errors="raise").astype(float).to_numpy()
    ys = pd.to_numeric(pd.Series(list(y), dtype=object), errors="raise").astype(float).to_numpy()
    if len(xs) != len(ys):
        raise ValueError(f"x and y must be paired: {len(xs)} vs {len(ys)} values")
    keep = ~(np.isnan(xs) | np.isnan(ys))
    xs, ys = xs[keep], ys[keep]
    n = int(len(xs))
    if n < 2:
        warnings.warn(f"Kendall's tau is undefined for {n} complete pair(s); returning NaN", RuntimeWarning,
                      stacklevel=2)
        return KendallTau(float("nan"), float("nan") if variant != "a" else None, n, variant)
    constant = [name for name, v in (("x", xs), ("y", ys)) if np.all(v == v[0])]
    if constant:
        warnings.warn(f"Kendall's tau is undefined: {' and '.join(constant)} is constant over the {n} complete "
                      "pairs; returning NaN", RuntimeWarning, stacklevel=2)
        return KendallTau(float("nan"), float("nan") if variant != "a" else None, n, variant)
    if variant == "a":
        return KendallTau(_tau_a(xs, ys), None, n, variant)
    from scipy import stats

    result = stats.kendalltau(xs, ys, variant=variant)
    return KendallTau(float(result.statistic), float(result.pvalue), n, variant)


# ---- AMADEUS Table 2 summaries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LikertSummary:
    """AMADEUS Table 2's summaries of one task's ratings; ``samples``/``raters``/``ratings`` count what entered."""

    mu: float
    sigma: float
    median: float
    samples: int
    raters: int
    ratings: int
    ddof: int


def likert_summary(table, *, ddof: int = 1) -> LikertSummary:
    """mu, sigma and Mdn of AMADEUS Table 2, as its caption defines them (S: all raters' ratings of a sample):

    - ``mu = E(E(S))``: each sample's mean over its raters, then the mean over samples;
    - ``sigma = E(sigma(S))``: each sample's standard deviation over its raters, then the mean over samples;
    - ``Mdn = E(Mdn(S))``: each sample's median over its raters, then the mean over samples.

    Missing ratings are skipped within a sample; a sample with no rating (or, for sigma, fewer than
    ``ddof + 1``) is left out of that mean.

    ``ddof=1`` (the sample standard deviation): the raters are a sample of possible raters, and it is the
    estimator of the variances inside :func:`cronbach_alpha`, so one table's sigma and alpha agree. The paper
    does not say which it used; with 11 raters ``ddof=0`` gives ``sqrt(10/11) = 0.953`` times the value. What
    the printed values imply about the paper's raters: ``data/paper_results/README.md``.
    """
    if ddof < 0:
        raise ValueError(f"ddof must be >= 0, got {ddof}")
    frame = _ratings(table)
    _check_shape(frame, "likert_summary")
    rated = frame.dropna(how="all")
    means = rated.mean(axis=1, skipna=True)
    sds = rated.std(axis=1, ddof=ddof, skipna=True)
    medians = rated.median(axis=1, skipna=True)
    return LikertSummary(mu=float(means.mean()), sigma=float(sds.mean(skipna=True)), median=float(medians.mean()),
                         samples=int(len(rated)), raters=int(frame.notna().any().sum()),
                         ratings=int(frame.notna().sum().sum()), ddof=ddof)
