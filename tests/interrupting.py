"""A card API (the XRT or F2 SDK stand-in) with SIGINT raised at a chosen call, for the tests
that interrupt a driver at every point of a call (tests/test_xrt_interrupts.py,
tests/test_f2_cl.py)."""

import signal

__all__ = ["Interrupting"]


class Interrupting:
    """``api``, with SIGINT raised once, just after the ``at``-th call of a function of
    ``prototypes`` (counted from when it is armed) returns (``at`` = -1: just before the
    first): Python's handler then raises KeyboardInterrupt where the driver is, unless a block
    of it defers signals (host.interrupts.uninterrupted), exactly as a Ctrl-C there would.
    ``calls`` lists (name, arguments) of the calls made since it was armed, ``names`` their
    names."""

    def __init__(self, api, prototypes):
        self._api, self._prototypes = api, prototypes
        self.calls: list[tuple] = []
        self.at: int | None = None

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def arm(self, at: int | None) -> None:
        self.calls, self.at = [], at

    def __getattr__(self, name):
        target = getattr(self._api, name)
        if name not in self._prototypes:
            return target

        def call(*args):
            if self.at == -1:
                self.at = None
                signal.raise_signal(signal.SIGINT)
            result = target(*args)
            self.calls.append((name, args))
            if self.at is not None and len(self.calls) == self.at:
                self.at = None
                signal.raise_signal(signal.SIGINT)
            return result
        return call
