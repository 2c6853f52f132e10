"""Run a function over items with a bounded thread pool and a progress bar, keeping input order.

Each item yields one :class:`Outcome` (its value, or its error as ``"ExcType: message"``); an error of a type in
``stop_on`` stops the run instead. This module does not retry, cache or rate-limit: the LLM call inside ``fn`` does.
"""

from __future__ import annotations

import functools
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
    failed = 0
    stop: tuple[int, Exception] | None = None
    with tqdm(total=len(items), desc=desc, disable=not progress, leave=False) as bar:
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpa-llm") if workers > 1 else None
        try:
            if pool is None:  # one at a time, in this thread
                runs = ((i, functools.partial(_run_one, fn, item, stop_on)) for i, item in enumerate(items))
            else:
                futures = {pool.submit(_run_one, fn, item, stop_on): i for i, item in enumerate(items)}
                runs = ((futures[future], future.result) for future in as_completed(futures))
            for i, run in runs:
                try:
                    outcomes[i] = outcome = run()
                except stop_on as exc:
                    stop = (i, exc)
                    break
                failed += not outcome.ok
                if failed:
                    bar.set_postfix(failed=failed, refresh=False)
                bar.update()
        finally:  # on a stop or Ctrl-C, drop the queued items instead of running them all first
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
    if stop is not None:  # raised here, outside any handler: the new error carries no chain
        index, exc = stop
        finished = sum(o is not None for o in outcomes)
        raise type(exc)(f"{desc}: stopped at item {index + 1} of {len(items)} ({finished} finished, the rest not run): "
                        f"{exc}")
    return outcomes  # type: ignore[return-value]
