"""Text helpers that several layers share: the one sentence segmenter (pysbd, a maintained rule-based one) and the
cut of ranked texts to a length budget. Pure functions; no model, no retrieval.

- :func:`segmenter`: the process's pysbd segmenter for a language, with or without character spans (CRAG's
  knowledge strips need spans; RAGEval's metrics need sentences). Built once per setting.
- :func:`within_budget`: the top-ranked texts until a budget of characters or tokens is spent, the last one cut.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

_LOCAL = threading.local()  # a pysbd segmenter keeps the text it segments on itself: one per thread


def segmenter(language: str = "en", spans: bool = False):
    """This thread's pysbd segmenter for ``language`` (no cleaning; ``spans``: ``segment`` returns character spans)."""
    made = getattr(_LOCAL, "segmenters", None)
    if made is None:
        made = _LOCAL.segmenters = {}
    if (language, spans) not in made:
        import pysbd

        made[language, spans] = pysbd.Segmenter(language=language, clean=False, char_span=spans)
    return made[language, spans]


def within_budget(ranked: Sequence[str], budget: int, length: Callable[[str], int] = len,
                  prefix: Callable[[str, int], str] | None = None) -> list[str]:
    """The top-ranked texts until ``budget`` is spent, **the last one counted in part**: whole texts while they
    fit, then the first one that does not fit cut to its first ``budget - spent`` units (characters by default;
    pass ``length`` and ``prefix`` to count tokens or cut at a word), and nothing after it. So every splitter is
    given exactly ``min(budget, total length)`` units. Overlapping chunks spend the budget on their shared text
    twice, as a prompt would. ``within_budget(["abcd", "efgh", "ij"], 6)`` -> ``["abcd", "ef"]``"""
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    prefix = prefix or (lambda text, n: text[:n])
    out, spent = [], 0
    for text in ranked:
        if not isinstance(text, str):
            raise TypeError(f"retrieved chunks must be strings, got {type(text).__name__}")
        if spent >= budget:
            break
        size = length(text)
        if spent + size <= budget:
            out.append(text)
            spent += size
        else:
            out.append(prefix(text, budget - spent))
            break
    return out
