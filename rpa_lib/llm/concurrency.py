"""Run a function over items with a bounded thread pool and a progress bar, keeping input order.

Each item yields one :class:`Outcome` (its value, or its error as ``"ExcType: message"``); an error of a type in
``stop_on`` stops the run instead. This module does not retry, cache or rate-limit: the LLM call inside ``fn`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from rpa_lib.llm.reply import Outcome, Pending

Stop = tuple[type[Exception], ...]


def _run_one(fn: Callable[[Any], Any], item: Any, stop_on: Stop) -> Outcome:
    try:
        return Outcome(item, value=fn(item))
    except stop_on:
        raise
    except Exception as exc:  # recorded, never raised: one failed item must not stop the others
        return Outcome(item, error=f"{type(exc).__name__}: {exc}", pending=isinstance(exc, Pending))


def run_map(
    fn: Callable[[Any], Any], items: Iterable[Any], *, workers: int = 1, desc: str = "llm", progress: bool = True,
    stop_on: Stop = (),
) -> list[Outcome]:
    """``[Outcome(item, fn(item)) ...]`` in input order, at most ``workers`` at a time. ``run_map(len, ["ab"])``

    An exception of a type in ``stop_on`` (constructible from one message) cancels the queued items, lets those in
    flight finish and is raised again naming the item.
    """
    from tqdm.auto import tqdm  # a widget bar in JupyterLab (ipywidgets), text in a terminal

    items = list(items)
    outcomes: list[Outcome | None] = [None] * len(items)
    failed = finished = 0
    stop: tuple[int, Exception] | None = None
    with tqdm(total=len(items), desc=desc, disable=not progress, leave=False) as bar:

        def done(i: int, outcome: Outcome) -> None:
            nonlocal failed, finished
            outcomes[i] = outcome
            failed += not outcome.ok
            finished += 1
            if failed:
                bar.set_postfix(failed=failed, refresh=False)
            bar.update()

        if workers <= 1:
            for i, item in enumerate(items):
                try:
                    done(i, _run_one(fn, item, stop_on))
                except stop_on as exc:
                    stop = (i, exc)
                    break
        else:
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpa-llm")
            try:
                futures = {pool.submit(_run_one, fn, item, stop_on): i for i, item in enumerate(items)}
                for future in as_completed(futures):
                    try:
                        done(futures[future], future.result())
                    except stop_on as exc:
                        stop = (futures[future], exc)
                        break
            finally:  # on a stop or Ctrl-C, drop the queued items instead of running them all first
                pool.shutdown(wait=True, cancel_futures=True)
    if stop is not None:  # raised here, outside any handler: the new error carries no chain
        index, exc = stop
        raise type(exc)(f"{desc}: stopped at item {index + 1} of {len(items)} ({finished} finished, the rest not run): "
                        f"{exc}")
    return outcomes  # type: ignore[return-value]
