"""Hand-made tests of RAGEval's key-point metrics (rpa_lib.evaluation.metrics.keypoints)."""

from __future__ import annotations

import math

import pytest

from rpa_lib.evaluation.metrics import KeypointScores, average_keypoint_scores, keypoint_scores


def test_scores_of_one_response():
    s = keypoint_scores(["covered", "covered", "contradicted", "not_covered", "covered"])
    assert (s.completeness, s.hallucination, s.irrelevance) == pytest.approx((3 / 5, 1 / 5, 1 / 5))
    assert (s.keypoints, s.unparsed, s.judged) == (5, 0, 5)
    assert s.irrelevance == pytest.approx(1 - s.completeness - s.hallucination)  # RAGEval equation 5


def test_unparsed_labels_are_counted_apart_and_left_out_of_the_denominator():
    s = keypoint_scores(["covered", None, "contradicted", None])
    assert (s.completeness, s.hallucination, s.irrelevance) == pytest.approx((1 / 2, 1 / 2, 0.0))
    assert (s.keypoints, s.unparsed, s.judged) == (4, 2, 2)


def test_no_judged_keypoint_gives_nan():
    for labels in ([None, None], []):
        s = keypoint_scores(labels)
        assert math.isnan(s.completeness) and math.isnan(s.hallucination) and math.isnan(s.irrelevance)


def test_unknown_labels_are_errors():
    with pytest.raises(ValueError, match="unknown key-point label.*'Relevant'"):
        keypoint_scores(["covered", "Relevant"])
    with pytest.raises(TypeError, match="sequence of labels"):
        keypoint_scores("covered")


def test_average_over_responses():
    avg = average_keypoint_scores([
        ["covered", "covered", "not_covered", "contradicted"],  # 1/2, 1/4, 1/4
        keypoint_scores(["covered", None]),  # 1, 0, 0 (1 unparsed)
        [None, None],  # nothing judged: left out of the means
    ])
    assert (avg.completeness, avg.hallucination, avg.irrelevance) == pytest.approx((3 / 4, 1 / 8, 1 / 8))
    assert (avg.responses, avg.scored, avg.unparsed) == (3, 2, 3)


def test_average_of_nothing_is_nan():
    avg = average_keypoint_scores([])
    assert math.isnan(avg.completeness) and (avg.responses, avg.scored) == (0, 0)
    assert isinstance(keypoint_scores(["covered"]), KeypointScores)
