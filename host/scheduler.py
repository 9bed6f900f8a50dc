"""Running the per-genome and per-tile work in this process or on a Dask cluster (``--scheduler``,
``--workers``).

Both executors offer the same two calls, so every command has one code path:

* ``share(value)``: make a large read-only value (the sketch matrix) available to tasks;
* ``map_ordered(function, items, *arguments)``: run ``function(item, *arguments)`` for every
  item and yield the results in the order of ``items``.

On Dask, at most ``window`` tasks are in flight and results are yielded strictly in order, so
the client streams output row blocks as they complete while holding only the window in memory.
A worker lost mid-run does not lose or duplicate anything: the scheduler re-runs the tasks it
held (shared values are replicated to every worker), and the client writes each block once,
when its turn comes.
"""

from collections import deque
from collections.abc import Callable, Iterable, Iterator

__all__ = ["LocalExecutor", "DaskExecutor", "make_executor"]


class LocalExecutor:
    """Everything in this process, one item after another."""

    workers = 1

    def share(self, value):
        return value

    def map_ordered(self, function: Callable, items: Iterable, *arguments) -> Iterator:
        for item in items:
            yield function(item, *arguments)

    def close(self) -> None:
        pass


def _check_address(address: str) -> None:
    """The ValueError Dask's Client raises for a scheduler address it cannot parse, raised
    before a Client is made: a Client whose start failed so is left behind, and closing it at
    the interpreter's exit waits out a 60 s timeout, once per such Client
    (tests/test_scheduler.py)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend
    scheme, location = parse_address(address)  # tcp where no scheme is given, as Client does
    get_backend(scheme)  # ValueError: unknown address scheme
    if scheme in ("tcp", "tls"):
        parse_host_port(location)  # ValueError: missing port number


class DaskExecutor:
    """Tasks on a dask.distributed cluster: an existing scheduler, or a local one of processes."""

    def __init__(self, address: str | None = None, workers: int | None = None,
                 threads_per_worker: int = 1):
        import logging  # here, as dask: the command line's start-up does without it
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise RuntimeError("--scheduler/--workers need dask.distributed "
                               "(pip install 'kmer-sketch-accel[cluster]')") from None
        self._cluster = None
        if address is not None:
            _check_address(address)
            self.client = Client(address)
        else:
            # the workers' own log lines at warning level (a task cancelled when the command
            # is interrupted: "Async instruction ... ended with CancelledError") are not the
            # command's; errors still show
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker,
                                         processes=True, dashboard_address=None,
                                         silence_logs=logging.ERROR)
            self.client = Client(self._cluster)
        self.workers = max(1, len(self.client.scheduler_info()["workers"]))

    def share(self, value):
        return self.client.scatter(value, broadcast=True)

    def map_ordered(self, function: Callable, items: Iterable, *arguments,
                    window: int | None = None) -> Iterator:
        window = window or 4 * self.workers
        in_flight: deque = deque()
        try:
            for item in items:
                in_flight.append(self.client.submit(function, item, *arguments, pure=False))
                if len(in_flight) >= window:
                    yield in_flight.popleft().result()
            while in_flight:
                yield in_flight.popleft().result()
        except KeyboardInterrupt:
            # a signal ends the command (host.interrupts): the tasks stop before the cluster
            # closes, so no worker is left computing for a scheduler that has gone
            self.client.cancel(list(in_flight))
            raise

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(scheduler: str | None = None, workers: int | None = None):
    """``--scheduler ADDRESS`` (a Dask scheduler's) or ``--workers N`` (a local Dask cluster);
    neither: this process."""
    if scheduler is not None or workers:
        return DaskExecutor(address=scheduler, workers=workers)
    return LocalExecutor()
