"""One k of the emerging-motif engine: its CM-CU sketch and its heavy-hitter store.

Test pass (``control_pass`` low): every window is inserted into the Count-Min; when the
estimate e of the insertion is >= ``threshold`` (T_k, runtime), ``RECORD (x, e)`` goes to the
store. Control pass (``control_pass`` high): every window goes to the store as ``COUNT x``;
the Count-Min is untouched. This is :func:`kmerspec.golden.motif.run_test_pass` and
:func:`~kmerspec.golden.motif.run_control_pass`, window for window.

One window per cycle for every input, no backpressure. Latency to the store's last write:
:attr:`test_latency` (test pass) or :attr:`control_latency` cycles. ``control_pass`` and
``threshold`` may change only while no window is in flight.
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.motif import MotifParams
from kmerspec.params import READ_LATENCY, check_int

from hw.common.countmin import CountMinUnit

from .h3 import H3Hash
from .store import HeavyHitterStore, StoreOp, set_layout

__all__ = ["MotifLane", "check_rtl_params"]


def check_rtl_params(params, read_latency: int) -> None:
    """The parameters the motif RTL implements: a MotifParams, strand-specific k-mers, counter
    read latency 1 or 2."""
    if not isinstance(params, MotifParams):
        raise TypeError(f"params must be a MotifParams, not {params!r}")
    if params.canonical:
        raise ValueError("params.canonical: the motif RTL is strand-specific; "
                         "canonical=True is not implemented")
    READ_LATENCY.check(read_latency)


class MotifLane(wiring.Component):
    """The sketch and store of k-mer length ``k`` with the geometry of ``params``.

    Members
    -------
    window : In(stream.Signature(2k, always_ready=True))
        The forward k-mer word of each window.
    control_pass : In(1)
    threshold : In(counter_bits)
    clear : In(1), busy : Out(1)
        Empty the sketch and the store (2^cw cycles).
    readback_address : In(set bits), readback_row : Out(set_layout(2k, ...))
        The store row of a set, one cycle later, while no window is in flight.

    :attr:`countmin` and :attr:`store` expose the state for tests.
    """

    def __init__(self, k: int, params: MotifParams, *, read_latency: int = 1):
        check_int("k", k, 1, 32)
        check_rtl_params(params, read_latency)
        self._k = k
        self._params = params
        key_bits = 2 * k
        seed_words = params.countmin_seed_words(k)
        self.countmin = CountMinUnit(len(seed_words), params.cw, params.counter_bits, key_bits,
                                     read_latency=read_latency,
                                     hasher=H3Hash(key_bits, params.cw, seed_words))
        self.store = HeavyHitterStore(key_bits, params.counter_bits, params.store_sets,
                                      params.store_ways, params.store_seed_words(k))
        super().__init__({
            "window": In(stream.Signature(key_bits, always_ready=True)),
            "control_pass": In(1),
            "threshold": In(params.counter_bits),
            "clear": In(1),
            "busy": Out(1),
            "readback_address": In(max(1, params.set_bits)),
            "readback_row": Out(set_layout(key_bits, params.counter_bits, params.store_ways)),
        })

    @property
    def k(self) -> int:
        return self._k

    @property
    def test_latency(self) -> int:
        return self.countmin.latency + self.store.latency

    @property
    def control_latency(self) -> int:
        return self.store.latency

    def elaborate(self, platform):
        m = Module()
        m.submodules.countmin = countmin = self.countmin
        m.submodules.store = store = self.store
        m.d.comb += [
            countmin.i.valid.eq(self.window.valid & ~self.control_pass),
            countmin.i.payload.eq(self.window.payload),
            countmin.clear.eq(self.clear),
            store.clear.eq(self.clear),
            self.busy.eq(countmin.busy | store.busy),
            store.readback_address.eq(self.readback_address),
            self.readback_row.eq(store.readback_row),
        ]
        with m.If(self.control_pass):
            m.d.comb += [
                store.i.valid.eq(self.window.valid),
                store.i.payload.op.eq(StoreOp.COUNT),
                store.i.payload.word.eq(self.window.payload),
            ]
        with m.Else():
            estimate = countmin.o.payload.estimate
            m.d.comb += [
                store.i.valid.eq(countmin.o.valid & (estimate >= self.threshold)),
                store.i.payload.op.eq(StoreOp.RECORD),
                store.i.payload.word.eq(countmin.o.payload.key),
                store.i.payload.value.eq(estimate),
            ]
        return m
