"""Work spread over threads, results in input order: the compiled loops release the GIL, so
Python threads run them on every core, and results never depend on the thread count."""

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

__all__ = ["thread_count", "map_in_threads"]


def thread_count(threads: int | None = None) -> int:
    """``threads`` if given (>= 1), else every core this process may run on."""
    if threads is None or threads == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            return max(1, os.cpu_count() or 1)
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    return threads


def map_in_threads(function: Callable, items: Iterable, threads: int | None = None,
                   window: int | None = None) -> Iterator:
    """``function(item)`` for every item, yielded in the order of ``items``.

    At most ``window`` items (default twice the threads) are taken from ``items`` ahead of the
    consumer, so a lazy ``items`` is never read further ahead than that. One thread runs
    everything in the calling thread, with no pool.
    """
    threads = thread_count(threads)
    if threads == 1:
        yield from map(function, items)
        return
    window = window or 2 * threads
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fast") as pool:
        pending: deque = deque()
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
