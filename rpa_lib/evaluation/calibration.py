"""A judge's constrained choice with contextual calibration (Zhao et al. 2021, "Calibrate Before Use").

A small model scoring options by likelihood tends to prefer one option whatever it reads (SmolLM2-135M picks
"1", or "0", for everything). Calibration subtracts each option's score for a *content-free* prompt (the same
template with :data:`CONTENT_FREE` in every slot) from its score for the real prompt, then takes the best option.

- :data:`CONTENT_FREE`: the content-free input, the one constant every prompt module fills its slots with;
- :func:`baseline_scores`: the option scores of the content-free prompt (one call per prompt template);
- :func:`template_baselines`: those of several templates at once, a failed one kept as its error;
- :func:`best_option`: the option with the best calibrated score;
- :func:`calibrated_verdict`: the calibrated choice as a :class:`~rpa_lib.evaluation.judges.Verdict`, or, with
  no baseline, :func:`~rpa_lib.evaluation.judges.choose_verdict` itself.

Used by the CharacterCraft judge, the Table 2 rater panel and the personality evaluator's option scoring.
Calibration needs a backend that returns option scores (the embedded model, or an OpenAI-compatible server with
logprobs); a backend without them is a ValueError, never a silent uncalibrated verdict. This module builds no
prompt and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence

from rpa_lib.evaluation.judges import OK, Verdict, choose_or_unparsed, choose_verdict

CONTENT_FREE = "N/A"


def baseline_scores(judge, messages: list[dict], options: Sequence[str] | dict[str, object]) -> dict[str, float]:
    """The judge's score of every option for a content-free prompt; ValueError when the backend gives none."""
    reply = judge.choose(messages, list(options), name="calibration baseline")
    if not reply.scores:
        raise ValueError(f"calibration needs option scores, which {judge.label} does not return; "
                         "run without calibration")
    return dict(reply.scores)


def template_baselines(judge, keys: Iterable[Hashable], messages: Callable[[Hashable], list[dict]],
                       options: Callable[[Hashable], Sequence[str] | dict[str, object]]
                       ) -> tuple[dict, dict[Hashable, str]]:
    """:func:`baseline_scores` of each prompt template ``key`` (``messages(key)``: its content-free prompt):
    ``(baselines, broken)``, ``broken`` mapping a template whose baseline failed to why. A caller fails every
    verdict of a broken template with that error (recorded on each, raised at the end of the run)."""
    baselines, broken = {}, {}
    for key in dict.fromkeys(keys):
        try:
            baselines[key] = baseline_scores(judge, messages(key), options(key))
        except Exception as exc:  # noqa: BLE001  (recorded on every verdict of this template, raised at the end)
            broken[key] = f"calibration baseline failed: {type(exc).__name__}: {exc}"
    return baselines, broken


def best_option(scores: dict[str, float], baseline: dict[str, float], options: Iterable[str]) -> str:
    """The option with the best ``scores[o] - baseline[o]``. ``best_option({"1": -1, "2": -2}, {"1": 0, "2": -3},
    ["1", "2"]) == "2"``"""
    return max(options, key=lambda o: scores[o] - baseline[o])


def calibrated_verdict(judge, metric: str, messages: list[dict], options: dict[str, object],
                       baseline: dict[str, float] | None = None) -> Verdict:
    """The option with the best ``score - baseline[option]`` (``options``: option -> its number), as a
    :class:`Verdict`; ``baseline`` None: the plain constrained choice. Unparseable: status ``"unparsed"``; a
    fault is raised. ``answer`` is the calibrated option."""
    if baseline is None:
        return choose_verdict(judge, metric, messages, options)
    reply = choose_or_unparsed(judge, metric, messages, options)
    if isinstance(reply, Verdict):
        return reply
    if not reply.scores:
        raise ValueError(f"calibration needs option scores, which {judge.label} did not return")
    best = best_option(reply.scores, baseline, options)
    return Verdict(metric, best, float(options[best]), OK, coerced=getattr(reply, "coerced", False))  # matched none
