"""Guided Selection (AMADEUS Algorithm 1) with any judge, optionally judging upcoming chunks concurrently ahead of
the walk (``window``) while returning exactly what the sequential algorithm returns; every call sent runs to its
end and is counted. How the look-ahead works and why: ``docs/design/methods.md``. Not here: LLMs or prompts
(:mod:`rpa_lib.methods.amadeus` builds the judge).
"""

from __future__ import annotations

import contextvars
import logging
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger("rpa_lib.methods")
MAX_THREADS = 32  # judge calls in flight at once, at most, per walk
MARGIN = 0.8  # look-ahead as a share of the expected need (AdaptiveWindow); see `python -m benchmarks gs`


@dataclass
class Selection(Generic[T]):
    selected: list[T]
    failed: bool  # the slot stayed empty: ``selected`` is the top K+1 by similarity
    examined: int  # chunks the sequential algorithm asked the judge about (t in Algorithm 1)
    verdicts: list[bool] = field(default_factory=list)  # the judge's answers, in order, for those chunks
    speculative: int = 0  # extra judge calls made ahead and discarded (spent all the same)
    round_trips: int = 0  # rounds of concurrent calls, each one latency (the sequential walk: one per chunk)
    speculative_errors: int = 0  # speculative calls that raised (logged; their verdicts were not needed)


class AdaptiveWindow:
    """The look-ahead from the judge's running yes-rate (one object per judge learns across walks).

    >>> AdaptiveWindow(margin=1).ahead(slots_left=2)  # nothing seen yet: yes-rate 0.25, so 2 / 0.25 chunks
    8
    >>> AdaptiveWindow().ahead(slots_left=2)  # the default margin 0.8: ceil(0.8 x 8)
    7
    """

    def __init__(self, prior_yes_rate: float = 0.25, prior_weight: float = 4.0, history_weight: float = 8.0,
                 margin: float = MARGIN):
        if not (0 < prior_yes_rate <= 1 and prior_weight > 0 and history_weight > 0 and margin > 0):
            raise ValueError("need 0 < prior_yes_rate <= 1, prior_weight > 0, history_weight > 0 and margin > 0 "
                             f"(got {prior_yes_rate}, {prior_weight}, {history_weight}, {margin})")
        self.prior_yes_rate, self.prior_weight, self.history_weight = prior_yes_rate, prior_weight, history_weight
        self.margin = margin
        self.yes = self.judged = 0  # verdicts of finished walks
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AdaptiveWindow(judge_yes_rate={self.judge_yes_rate():.3f}, judged={self.judged})"

    def judge_yes_rate(self) -> float:
        """The prior plus the verdicts of the finished walks."""
        with self._lock:
            return (self.yes + self.prior_yes_rate * self.prior_weight) / (self.judged + self.prior_weight)

    def yes_rate(self, yes: int = 0, judged: int = 0) -> float:
        return (yes + self.history_weight * self.judge_yes_rate()) / (judged + self.history_weight)

    def ahead(self, slots_left: int, yes: int = 0, judged: int = 0) -> int:
        """Chunks past the walk's position to have judged or in flight: ``ceil(margin * slots_left / yes_rate)``."""
        return max(1, math.ceil(self.margin * slots_left / self.yes_rate(yes, judged) - 1e-9))

    def observe(self, verdicts: Sequence[bool]) -> None:
        with self._lock:
            self.yes += sum(map(bool, verdicts))
            self.judged += len(verdicts)


Window = int | str | AdaptiveWindow


def parse_window(window: Window) -> int | AdaptiveWindow:
    """A policy from an int >= 1 (also as text), ``"adaptive"``, ``"adaptive:M"`` (margin M) or an AdaptiveWindow.

    >>> parse_window("adaptive:1.2").margin
    1.2
    """
    if isinstance(window, AdaptiveWindow):
        return window
    if isinstance(window, str):
        name, _, margin = window.partition(":")
        try:
            if name == "adaptive":
                return AdaptiveWindow(margin=float(margin)) if margin else AdaptiveWindow()
            if not margin and int(name) >= 1:
                return int(name)
        except ValueError:
            pass
    elif isinstance(window, int) and not isinstance(window, bool) and window >= 1:
        return window
    raise ValueError(f"window must be an int >= 1, 'adaptive', 'adaptive:M' (M > 0) or an AdaptiveWindow "
                     f"(got {window!r})")


def guided_selection(ranked_chunks: Sequence[T], judge: Callable[[T], bool], max_iterations: int = 30,
                     slot_size: int = 2, window: Window = 1) -> Selection[T]:
    """Algorithm 1 over chunks sorted by similarity (best first); ``window`` says how far ahead to judge.

    >>> guided_selection(["a", "b", "c", "d"], judge=lambda c: c in "bd", slot_size=2).selected
    ['b', 'd']
    """
    if max_iterations < 0 or slot_size < 1:
        raise ValueError(f"need max_iterations >= 0, slot_size >= 1 (got {max_iterations}, {slot_size})")
    policy = parse_window(window)
    if max_iterations == 0:  # GS off: no walk, so no failure and no fallback
        return Selection([], False, 0)
    limit = min(max_iterations, len(ranked_chunks))
    slot: list[T] = []
    verdicts: list[bool] = []
    speculative = round_trips = speculative_errors = 0
    if isinstance(policy, int) and policy == 1:
        for chunk in ranked_chunks[:limit]:
            if len(slot) >= slot_size:
                break
            verdicts.append(bool(judge(chunk)))
            round_trips += 1
            if verdicts[-1]:
                slot.append(chunk)
    else:
        width = policy if isinstance(policy, int) else MAX_THREADS
        pool = ThreadPoolExecutor(max_workers=max(1, min(width, limit, MAX_THREADS)), thread_name_prefix="gs")
        futures: dict[int, Future] = {}
        t = launched = 0
        try:
            while t < limit and len(slot) < slot_size:  # one round: send the calls the policy asks for, then ...
                ahead = (policy.ahead(slot_size - len(slot), len(slot), t) if isinstance(policy, AdaptiveWindow)
                         else policy)
                for j in range(launched, min(limit, max(t + 1, t + ahead))):
                    # in a copy of this thread's context: the call is for the walk's character (replicas)
                    futures[j] = pool.submit(contextvars.copy_context().run, judge, ranked_chunks[j])
                    launched = j + 1
                round_trips += 1
                while t < launched and len(slot) < slot_size:  # ... take their verdicts in order, until the stop
                    verdicts.append(bool(futures[t].result()))  # an error on a chunk the walk asks about propagates
                    if verdicts[-1]:
                        slot.append(ranked_chunks[t])
                    t += 1
        finally:
            # Calls past the stop run to their end (a re-run finds them cached) and are in the caller's trace.
            speculative = launched - t
            pool.shutdown(wait=True)
        for j in range(t, launched):  # (an error on a chunk the walk asked about was raised above)
            if (error := futures[j].exception()) is not None:
                speculative_errors += 1
                log.warning("Guided Selection: a speculative judge call (chunk %d) raised %s: %s; its verdict was "
                            "not needed", j, type(error).__name__, error)
        if isinstance(policy, AdaptiveWindow):
            policy.observe(verdicts)
    return Selection(slot or list(ranked_chunks[:slot_size + 1]), not slot, len(verdicts), verdicts, speculative,
                     round_trips, speculative_errors)
