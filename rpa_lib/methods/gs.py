"""Guided Selection (AMADEUS Algorithm 1), usable on its own with any judge.

Walk the chunks in descending similarity to the query; ask ``judge(chunk)`` whether the character's attributes
regarding the query can be inferred from it; keep it when yes; stop once the slot holds ``slot_size`` (K)
chunks or ``max_iterations`` (N) chunks were examined. An empty slot is a GS failure: return the top K+1.

``window > 1`` asks the judge about up to ``window`` upcoming chunks at once (threads), which hides the latency
of a remote LLM, and still returns exactly what the sequential algorithm returns: verdicts are consumed in
order and the walk stops at the same place. Answers to chunks past that place are speculative: they are not
counted in ``examined`` (only in ``speculative``) and never affect the result.

This module knows nothing about LLMs or prompts; ``amadeus`` builds the judge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class Selection(Generic[T]):
    selected: list[T]
    failed: bool  # the slot stayed empty: ``selected`` is the top K+1 by similarity
    examined: int  # chunks the sequential algorithm asked the judge about (t in Algorithm 1)
    verdicts: list[bool] = field(default_factory=list)  # the judge's answers, in order, for those chunks
    speculative: int = 0  # extra judge calls made ahead by the window and discarded


def guided_selection(ranked_chunks: Sequence[T], judge: Callable[[T], bool], max_iterations: int = 30,
                     slot_size: int = 2, window: int = 1) -> Selection[T]:
    """Algorithm 1 over chunks already sorted by similarity (best first).

    >>> guided_selection(["a", "b", "c", "d"], judge=lambda c: c in "bd", slot_size=2).selected
    ['b', 'd']
    """
    if max_iterations < 0 or slot_size < 1 or window < 1:
        raise ValueError(f"need max_iterations >= 0, slot_size >= 1, window >= 1 (got {max_iterations}, {slot_size}, {window})")
    limit = min(max_iterations, len(ranked_chunks))
    slot: list[T] = []
    verdicts: list[bool] = []
    speculative = 0
    if window == 1:
        for chunk in ranked_chunks[:limit]:
            if len(slot) >= slot_size:
                break
            verdict = bool(judge(chunk))
            verdicts.append(verdict)
            if verdict:
                slot.append(chunk)
    else:
        pool = ThreadPoolExecutor(max_workers=window, thread_name_prefix="gs")
        futures = {}
        t = 0
        try:
            while t < limit and len(slot) < slot_size:
                for j in range(t, min(t + window, limit)):  # keep the window full
                    if j not in futures:
                        futures[j] = pool.submit(judge, ranked_chunks[j])
                verdict = bool(futures[t].result())  # an error on a chunk the sequential walk asks about propagates
                verdicts.append(verdict)
                if verdict:
                    slot.append(ranked_chunks[t])
                t += 1
        finally:
            # Chunks past the stop: cancel what has not started; what has is spent but never counted.
            speculative = sum(1 for j, f in futures.items() if j >= t and not f.cancel())
            pool.shutdown(wait=False, cancel_futures=True)
    if not slot:
        return Selection(list(ranked_chunks[:slot_size + 1]), True, len(verdicts), verdicts, speculative)
    return Selection(slot, False, len(verdicts), verdicts, speculative)
