"""A judge's constrained choice with contextual calibration (Zhao et al. 2021, "Calibrate Before Use").

A small model scoring options by likelihood tends to prefer one option whatever it reads (SmolLM2-135M picks
"1", or "0", for everything). Calibration subtracts each option's score for a *content-free* prompt (the same
template with "N/A" in every slot) from its score for the real prompt, then takes the best option.

- :func:`baseline_scores`: the option scores of the content-free prompt (one call per prompt template);
- :func:`calibrated_verdict`: the calibrated choice as a :class:`~rpa_lib.evaluation.judges.Verdict`, or, with
  no baseline, :func:`~rpa_lib.evaluation.judges.choose_verdict` itself.

Calibration needs a backend that returns option scores (the embedded model, or an OpenAI-compatible server with
logprobs); a backend without them is a ValueError, never a silent uncalibrated verdict. This module builds no
prompt and writes nothing.
"""

from __future__ import annotations

from rpa_lib.evaluation.judges import OK, Verdict, choose_or_unparsed, choose_verdict


def baseline_scores(judge, messages: list[dict], options: dict[str, object]) -> dict[str, float]:
    """The judge's score of every option for a content-free prompt; ValueError when the backend gives none."""
    reply = judge.choose(messages, list(options), name="calibration baseline")
    if not reply.scores:
        raise ValueError(f"calibration needs option scores, which {judge.label} does not return; "
                         "run without calibration")
    return dict(reply.scores)


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
    best = max(options, key=lambda o: reply.scores[o] - baseline[o])
    return Verdict(metric, best, float(options[best]), OK)
