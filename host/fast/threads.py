"""Work spread over threads, results in input order: the compiled loops release the GIL, so
Python threads run them on every core, and results never depend on the thread count."""

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator

__all__ = ["thread_count", "map_in_threads", "map_largest_first"]


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
    from concurrent.futures import ThreadPoolExecutor  # here: one thread does without its import
    window = window or 2 * threads
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fast")
    pending: deque = deque()
    try:
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except KeyboardInterrupt:
        # a signal ends the command (host.interrupts): the items under way are not waited for
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)


def map_largest_first(function: Callable, items: Iterable, cost: Callable,
                      threads: int | None = None) -> Iterator:
    """``function(item)`` for every item, yielded in the order of ``items``, computed in the
    order of decreasing ``cost(item)``.

    The threads take the next item whenever they finish one (a dynamic queue), and the run ends
    on the cheapest items, so no thread waits long for another to finish a big one. Every item
    is taken at once, and a result is held until those before it in ``items`` are yielded: meant
    for cheap items such as file handles, whose cost is known before they are read. Ties keep
    the order of ``items``. An exception is raised when its item's turn comes; the threads then
    finish the item they hold and stop. One thread runs everything in the calling thread, in
    input order.

    Plain threads rather than concurrent.futures, whose import (with logging) would add about
    4% to the start-up of ``python -m host sketch``, a serial cost of every run.
    """
    threads = thread_count(threads)
    if threads == 1:
        yield from map(function, items)
        return
    items = list(items)
    costs = [cost(item) for item in items]
    work = iter(sorted(range(len(items)), key=lambda i: -costs[i]))
    outcomes: dict[int, tuple[bool, object]] = {}  # index: (succeeded, result or exception)
    finished = threading.Condition()
    stopped = False

    def take_and_run() -> None:
        while True:
            with finished:
                index = None if stopped else next(work, None)
            if index is None:
                return
            try:
                outcome = (True, function(items[index]))
            except BaseException as error:  # raised in the consumer, at its turn
                outcome = (False, error)
            with finished:
                outcomes[index] = outcome
                finished.notify_all()

    workers = [threading.Thread(target=take_and_run, name=f"fast-{n}", daemon=True)
               for n in range(min(threads, len(items)))]
    for worker in workers:
        worker.start()
    interrupted = False
    try:
        for index in range(len(items)):
            with finished:
                finished.wait_for(lambda: index in outcomes)
                succeeded, result = outcomes.pop(index)
            if not succeeded:
                raise result
            yield result
    except KeyboardInterrupt:
        interrupted = True      # a signal ends the command: the genomes under way are left
        raise
    finally:
        with finished:
            stopped = True
        for worker in workers if not interrupted else ():
            worker.join()
