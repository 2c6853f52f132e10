"""Contextual calibration of a judge's constrained choice (Zhao et al. 2021, "Calibrate Before Use").

Each option's score for a content-free prompt (the template with :data:`CONTENT_FREE` in every slot) is subtracted
from its score for the real prompt before the best option is taken. Used by the CharacterCraft judge, the Table 2
rater panel and the personality evaluator. A backend without option scores is a ValueError, never a silent
uncalibrated verdict. An option outside the backend's top logprobs (score -inf) gets the lowest score of the options
listed for that prompt, an upper bound on its own, so no difference of two -infs decides a choice. Builds no prompt
and writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence

from rpa_lib.evaluation.judges import Verdict, choose_verdict

CONTENT_FREE = "N/A"


def option_scores(judge, reply, what: str = "") -> dict[str, float]:
    """``reply``'s score of every option; ValueError naming ``judge`` (and ``what`` it answered, e.g. an item) when
    the reply has none. ``option_scores(judge, reply)`` -> ``{"1": -0.2, "2": -1.7, ...}``"""
    if not reply.scores:
        raise ValueError(f"calibration needs option scores, which {judge.label} did not return"
                         f"{f' for {what}' if what else ''}: a server gives them in the logprobs choose mode (the role's "
                         "*_CHOOSE_MODE=logprobs, e.g. RPA_JUDGE_CHOOSE_MODE), else run without calibration "
                         "(calibrate: false)")
    return dict(reply.scores)


def baseline_scores(judge, messages: list[dict], options: Sequence[str] | dict[str, object]) -> dict[str, float]:
    """The judge's score of every option for a content-free prompt."""
    return option_scores(judge, judge.choose(messages, list(options), name="calibration baseline"))


def template_baselines(judge, keys: Iterable[Hashable], messages: Callable[[Hashable], list[dict]],
                       options: Callable[[Hashable], Sequence[str] | dict[str, object]]
                       ) -> tuple[dict, dict[Hashable, str]]:
    """``(baselines, broken)`` per prompt template ``key``; ``broken`` maps a template whose baseline failed to
    why (a caller fails every verdict of that template with it)."""
    baselines, broken = {}, {}
    for key in dict.fromkeys(keys):
        try:
            baselines[key] = baseline_scores(judge, messages(key), options(key))
        except Exception as exc:  # noqa: BLE001  (recorded on every verdict of this template, raised at the end)
            broken[key] = f"calibration baseline failed: {type(exc).__name__}: {exc}"
    return baselines, broken


def _floored(scores: dict[str, float], options: list[str]) -> dict[str, float]:
    # an option outside the backend's top logprobs scores -inf, and -inf minus -inf is NaN, which max() mishandles;
    # such an option is no likelier than the least likely option listed, so that score is its (upper) bound
    listed = [scores[o] for o in options if scores[o] > -math.inf]
    if not listed:
        raise ValueError(f"calibration needs a score for some option of {options}; every score is -inf or NaN")
    return {o: scores[o] if scores[o] > -math.inf else min(listed) for o in options}


def best_option(scores: dict[str, float], baseline: dict[str, float], options: Iterable[str]) -> str:
    """The option with the best ``scores[o] - baseline[o]``, a score of -inf (an option outside the top logprobs)
    raised to the lowest other score of its prompt. ``best_option({"1": -1, "2": -2}, {"1": 0, "2": -3}, ["1", "2"])
    == "2"``"""
    options = list(options)
    s, b = _floored(scores, options), _floored(baseline, options)
    return max(options, key=lambda o: s[o] - b[o])


def calibrated_verdict(judge, metric: str, messages: list[dict], options: dict[str, object],
                       baseline: dict[str, float] | None = None) -> Verdict:
    """The calibrated choice as a :class:`Verdict` (``options``: option -> its number); ``baseline`` None: the
    plain constrained choice."""
    if baseline is None:
        return choose_verdict(judge, metric, messages, options)
    return choose_verdict(judge, metric, messages, options,
                          lambda reply: best_option(option_scores(judge, reply), baseline, options))
