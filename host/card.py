"""What the card drivers (host.xrt.XrtDevice over XRT, host.f2.F2Device over AWS's FPGA SDK)
share, and nothing else: the calls' order and overlap, and the compute unit a call starts on."""

from collections.abc import Iterable, Iterator

from .calls import DeviceError, RunResult, check_arguments, stream_calls
from .control import check_identity, request_clean_start

__all__ = ["CardDevice"]


class CardDevice:
    """What the card drivers (host.xrt.XrtDevice, host.f2.F2Device) share: ``run``,
    ``run_many`` and ``run_stream`` over the driver's ``_start(kernel, arguments)`` (a started
    call), ``_finish(started)`` (its RunResult) and ``_settle(started)`` (an interrupted call
    released or abandoned); the compute unit a call starts on (:meth:`_next_unit`), over the
    driver's ``_kernel_units(kernel)``, ``_turns`` (kernel name -> a cycle over its units) and
    ``_registers(unit)``; and the ``with`` block that ends in ``close()``."""

    def _next_unit(self, kernel, arguments: dict):
        """The compute unit of ``kernel`` whose turn it is, for a call of ``arguments``
        (checked): the unit's identity words checked at its first call of ``kernel``, a clean
        start requested where the unit may hold an abandoned call's state."""
        if self._unusable:
            raise DeviceError(self._unusable)
        check_arguments(kernel.desc, arguments)
        units = self._kernel_units(kernel)
        unit = units[next(self._turns[kernel.desc.name])]
        read, write = self._registers(unit)
        if kernel not in unit.checked:
            check_identity(kernel, read)
            unit.checked.add(kernel)
        if unit.needs_clean_start:
            request_clean_start(kernel, write)
            unit.needs_clean_start = False
        return unit

    def run(self, kernel, arguments: dict) -> RunResult:
        return self._finish(self._start(kernel, arguments))

    def run_many(self, kernel, calls: list[dict]) -> list[RunResult]:
        return list(self.run_stream(kernel, calls))

    def run_stream(self, kernel, calls: Iterable[dict]) -> Iterator[RunResult]:
        """Each call as it comes, one in flight per compute unit, results in order. While a call
        runs, the driver waits without the GIL (ctypes calls and sleeps release it), so
        host.drivers.prefetched packs the next chunk meanwhile. When the stream ends early, the
        calls still in flight are waited for (a failure of one call, or the consumer stopping),
        or, on an interrupt, settled at once: those whose unit may still run are abandoned
        (host.calls.stream_calls)."""
        return stream_calls(lambda arguments: self._start(kernel, arguments), self._finish,
                            calls, lambda: len(self._kernel_units(kernel)), self._settle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
