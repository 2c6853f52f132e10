"""RAGEval's generation metrics (Zhu et al., section 3.5.2, equations 3-5): Completeness, Hallucination and
Irrelevance of a response from its key-point labels (``"covered"``, ``"contradicted"``, ``"not_covered"``; ``None``
for a label nobody could parse, left out of the denominator). It only counts labels: it calls no judge.
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
    """One response's scores; NaN without a parsed label. ValueError for an unknown label, TypeError for a string.
    ``keypoint_scores(["covered", "contradicted", "not_covered", None])`` -> 1/3, 1/3, 1/3 with 1 unparsed"""
    if isinstance(labels, str):
        raise TypeError("labels is a sequence of labels, one per key point, not a single string")
    labels = list(labels)
    unknown = sorted({repr(x) for x in labels if x is not None and x not in LABELS})
    if unknown:
        raise ValueError(f"unknown key-point label(s) {', '.join(unknown)}; valid: {LABELS} or None (unparseable)")
    unparsed = sum(x is None for x in labels)
    judged = len(labels) - unparsed
    shares = [sum(x == label for x in labels) / judged if judged else float("nan")
              for label in ("covered", "contradicted", "not_covered")]
    return KeypointScores(*shares, len(labels), unparsed)


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
    """The mean of each score over responses with a judged key point (each response weighs the same); items are
    :class:`KeypointScores` or label sequences."""
    scores = [r if isinstance(r, KeypointScores) else keypoint_scores(r) for r in responses]
    scored = [s for s in scores if s.judged > 0]
    means = [float(np.mean([getattr(s, m) for s in scored])) if scored else float("nan")
             for m in ("completeness", "hallucination", "irrelevance")]
    return KeypointAverage(*means, responses=len(scores), scored=len(scored), unparsed=sum(s.unparsed for s in scores))
