"""Agreement between raters and between rankings: AMADEUS Table 2 and CharacterCraft Table 6.

A rating table has one row per rated sample and one column per rater (a DataFrame or a 2-D array), NaN for a
missing rating. Pure functions: no LLM, no file, no rounding; collecting ratings is :mod:`rpa_lib.evaluation.sheets`'.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

NAN_POLICIES = ("pairwise", "listwise")
KRIPPENDORFF_LEVELS = ("nominal", "ordinal", "interval", "ratio")
TAU_VARIANTS = ("a", "b", "c")


def _check_choice(name: str, value, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _ratings(table) -> pd.DataFrame:
    """``table`` as a float DataFrame (samples x raters)."""
    frame = table.copy() if isinstance(table, pd.DataFrame) else pd.DataFrame(np.asarray(table, dtype=object))
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


def noted(fn, *args, **kwargs) -> tuple[object, str | None]:
    """``(fn(*args, **kwargs), note)``: ``note`` joins the distinct messages of the warnings it raised (None without
    any), so a table says why a statistic of this module is NaN."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn(*args, **kwargs)
    return value, "; ".join(dict.fromkeys(str(w.message) for w in caught)) or None


def feldt_interval(alpha: float, n: int, k: int, ci: float = 0.95) -> tuple[float, float]:
    """Feldt's interval for Cronbach's alpha of ``n`` samples and ``k`` raters (Feldt, Woodruff and Salih 1987).
    ``feldt_interval(0.8, 30, 11)`` -> ``(0.674..., 0.891...)``"""
    if not 0 < ci < 1:
        raise ValueError(f"ci is a confidence level between 0 and 1, got {ci}")
    if np.isnan(alpha):
        return float("nan"), float("nan")
    tail = (1 - ci) / 2
    df1, df2 = n - 1, (n - 1) * (k - 1)
    low = 1 - (1 - alpha) * stats.f.isf(tail, df1, df2)
    high = 1 - (1 - alpha) * stats.f.isf(1 - tail, df1, df2)
    return float(low), float(high)


def cronbach_alpha(table, *, nan_policy: str = "pairwise", ci: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Cronbach's alpha of the raters of ``table`` and its Feldt interval, ``(alpha, (low, high))``; NaN with a
    warning when undefined. ``nan_policy``: covariances over the samples both raters rated, or complete samples.
    ValueError for an unknown ``nan_policy``, a non-numeric table, a rater without ratings, < 2 raters or samples."""
    _check_choice("nan_policy", nan_policy, NAN_POLICIES)
    frame = _ratings(table)
    empty = [str(c) for c in frame.columns[frame.isna().all()]]
    if empty and frame.shape[0]:
        raise ValueError(f"rater(s) without a single rating: {', '.join(empty)}")
    frame = frame.dropna(how="all") if nan_policy == "pairwise" else frame.dropna(how="any")
    _check_shape(frame, f"Cronbach's alpha ({nan_policy})")
    n, k = frame.shape
    cov = frame.cov(ddof=1).to_numpy()
    total = cov.sum()
    if np.isnan(cov).any():
        i, j = np.argwhere(np.isnan(cov))[0]
        why = f"raters {frame.columns[i]!r} and {frame.columns[j]!r} share fewer than 2 rated samples"
    elif total <= 0 or np.isclose(total, 0.0):
        why = f"the variance of the per-sample totals is {total:.3g} (every sample got the same total)"
    else:
        alpha = float(k / (k - 1) * (1 - np.trace(cov) / total))
        return alpha, feldt_interval(alpha, n, k, ci)
    warnings.warn(f"Cronbach's alpha is undefined: {why}; returning NaN", RuntimeWarning, stacklevel=2)
    return float("nan"), (float("nan"), float("nan"))


def krippendorff_alpha(table, level: str = "ordinal", *, value_domain=None) -> float:
    """Krippendorff's alpha of ``table`` by the ``krippendorff`` package (``value_domain``: the ordered possible
    values, by default those that occur); NaN with a warning when undefined: no sample rated twice, or one value for
    every rating of the samples rated twice (no disagreement expected, so none to measure against)."""
    import krippendorff

    _check_choice("level", level, KRIPPENDORFF_LEVELS)
    frame = _ratings(table)
    _check_shape(frame, "Krippendorff's alpha")
    pairable = frame[frame.notna().sum(axis=1) >= 2]
    values = pd.unique(pairable.to_numpy().ravel())
    values = values[~np.isnan(values)]
    if len(values) < 2:
        why = ("no sample has ratings from 2 raters" if pairable.empty else
               f"every rating of the {len(pairable)} samples rated twice or more is {values[0]:g}")
        warnings.warn(f"Krippendorff's alpha is undefined: {why}; returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan")
    return float(krippendorff.alpha(reliability_data=frame.to_numpy().T, level_of_measurement=level,
                                    value_domain=value_domain))


@dataclass(frozen=True)
class KendallTau:
    """Kendall's tau of ``n`` complete pairs; ``pvalue`` is scipy's (None for variant a, which scipy lacks)."""

    tau: float
    pvalue: float | None
    n: int
    variant: str


def _tau_a(x: np.ndarray, y: np.ndarray) -> float:
    """(concordant - discordant) / (n(n-1)/2); a pair tied in x or y counts as neither."""
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    n = len(x)
    return float((dx * dy)[np.triu_indices(n, k=1)].sum()) / (n * (n - 1) / 2)


def kendall_tau(x, y, variant: str = "b") -> KendallTau:
    """Kendall's tau (``"a"``, ``"b"`` or ``"c"``) between two paired sequences, pairs with a missing value dropped;
    NaN with a warning when fewer than 2 pairs remain or either side is constant."""
    _check_choice("variant", variant, TAU_VARIANTS)
    xs, ys = (pd.to_numeric(pd.Series(list(v), dtype=object), errors="raise").astype(float).to_numpy() for v in (x, y))
    if len(xs) != len(ys):
        raise ValueError(f"x and y must be paired: {len(xs)} vs {len(ys)} values")
    keep = ~(np.isnan(xs) | np.isnan(ys))
    xs, ys = xs[keep], ys[keep]
    n = int(len(xs))
    constant = [name for name, v in (("x", xs), ("y", ys)) if np.all(v == v[0])] if n >= 2 else []
    if n < 2 or constant:
        why = (f"Kendall's tau is undefined for {n} complete pair(s)" if n < 2 else
               f"Kendall's tau is undefined: {' and '.join(constant)} is constant over the {n} complete pairs")
        warnings.warn(f"{why}; returning NaN", RuntimeWarning, stacklevel=2)
        return KendallTau(float("nan"), float("nan") if variant != "a" else None, n, variant)
    if variant == "a":
        return KendallTau(_tau_a(xs, ys), None, n, variant)
    result = stats.kendalltau(xs, ys, variant=variant)
    return KendallTau(float(result.statistic), float(result.pvalue), n, variant)


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
    """AMADEUS Table 2's mu = E(E(S)), sigma = E(sigma(S)) and Mdn = E(Mdn(S)), S a sample's ratings over raters
    (missing ratings skipped)."""
    if ddof < 0:
        raise ValueError(f"ddof must be >= 0, got {ddof}")
    frame = _ratings(table)
    _check_shape(frame, "likert_summary")
    rated = frame.dropna(how="all")
    return LikertSummary(mu=float(rated.mean(axis=1).mean()), sigma=float(rated.std(axis=1, ddof=ddof).mean()),
                         median=float(rated.median(axis=1).mean()), samples=int(len(rated)),
                         raters=int(frame.notna().any().sum()), ratings=int(frame.notna().sum().sum()), ddof=ddof)
