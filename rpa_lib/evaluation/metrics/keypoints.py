"""RAGEval's generation metrics (Zhu et al., section 3.5.2): Completeness, Hallucination and Irrelevance.

A judge labels each key point of the ground-truth answer against one response: ``"covered"`` (the response
states it correctly), ``"contradicted"`` (the response states something that contradicts it) or
``"not_covered"`` (neither); ``None`` marks a label the judge gave but nobody could parse. For one response,

- Completeness = share of key points covered (equation 3),
- Hallucination = share contradicted (equation 4),
- Irrelevance = share neither covered nor contradicted = 1 - Completeness - Hallucination (equation 5).

Unparseable labels are counted apart and left out of the denominator, so the three shares always sum to 1 over
the key points that were judged. (RAGEval's released code keeps an unknown label in the denominator, where it
lowers all three shares; leaving it out reports the failure instead of scoring it.) A response with no parsed
label has NaN scores. :func:`average_keypoint_scores` takes the mean over responses, as RAGEval's tables do.

This module only counts labels: it calls no judge, parses no judge output and extracts no key points.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

LABELS = ("covered", "not_covered", "contradicted")


@dataclass(frozen=True)
class KeypointScores:
    """One response's scores; ``keypoints`` = all labels, ``unparsed`` = the ``None`` ones (not in the denominator)."""

    completeness: float
    hallucination: float
    irrelevance: float
    keypoints: int
    unparsed: int

    @property
    def judged(self) -> int:
        return self.keypoints - self.unparsed


def keypoint_scores(labels: Sequence[str | None]) -> KeypointScores:
    """Completeness, Hallucination and Irrelevance of one response from its key-point labels.

    ``keypoint_scores(["covered", "contradicted", "not_covered", None])`` -> 1/3, 1/3, 1/3 with 1 unparsed.
    A label outside :data:`LABELS` (other than ``None``) is a ValueError: map the judge's words first.
    """
    if isinstance(labels, str):
        raise TypeError("labels is a sequence of labels, one per key point, not a single string")
    labels = list(labels)
    unknown = sorted({repr(x) for x in labels if x is not None and x not in LABELS})
    if unknown:
        raise ValueError(f"unknown key-point label(s) {', '.join(unknown)}; valid: {LABELS} or None (unparseable)")
    unparsed = sum(x is None for x in labels)
    judged = len(labels) - unparsed
    if judged == 0:
        nan = float("nan")
        return KeypointScores(nan, nan, nan, len(labels), unparsed)
    covered = sum(x == "covered" for x in labels) / judged
    contradicted = sum(x == "contradicted" for x in labels) / judged
    neither = sum(x == "not_covered" for x in labels) / judged
    return KeypointScores(covered, contradicted, neither, len(labels), unparsed)


@dataclass(frozen=True)
class KeypointAverage:
    """Mean scores over the ``scored`` responses (those with a judged key point) out of ``responses``."""

    completeness: float
    hallucination: float
    irrelevance: float
    responses: int
    scored: int
    unparsed: int


def average_keypoint_scores(responses: Iterable[KeypointScores | Sequence[str | None]]) -> KeypointAverage:
    """The mean of each score over responses (each response weighs the same, whatever its number of key points).

    Items are :class:`KeypointScores` or label sequences. Responses without a judged key point are left out of
    the means and reported by ``responses - scored``; ``unparsed`` totals the unparseable labels.
    """
    scores = [r if isinstance(r, KeypointScores) else keypoint_scores(r) for r in responses]
    scored = [s for s in scores if s.judged > 0]

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else float("nan")

    return KeypointAverage(completeness=mean([s.completeness for s in scored]),
                           hallucination=mean([s.hallucination for s in scored]),
                           irrelevance=mean([s.irrelevance for s in scored]),
                           responses=len(scores), scored=len(scored), unparsed=sum(s.unparsed for s in scores))
