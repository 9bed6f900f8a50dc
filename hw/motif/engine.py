"""The all-k emerging-motif engine: a base stream in, one window per cycle into every k's lane.

Input is a stream of bases (2-bit code A=0 C=1 G=2 T=3) each with ``restart``: the base begins
a new run (first base of a record, or after a break; SPEC section 1). A shift register holds
the last ``kmax`` bases and a run length saturating at ``kmax``; the window of k is its low 2k
bits, valid when the run is >= k. So every base yields, in the same cycle, the windows of every
k in [kmin, kmax], each into its own :class:`~hw.motif.lane.MotifLane`; the lanes run in lock
step, one window per cycle per k, for every input.

Latency: 1 cycle from a base to the lanes, then the lane latency; :attr:`idle` is high when no
window is in flight and no lane is clearing. No backpressure: ``bases`` is always ready.
``control_pass`` and ``thresholds`` may change only while :attr:`idle`.

Readback: ``readback_lane`` (0 for kmin) and ``readback_address`` select a store row; one cycle
later ``readback_row`` holds it with every k-mer zero-extended to 64 bits.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.motif import MotifParams

from .lane import MotifLane, check_rtl_params
from .store import set_layout

__all__ = ["base_layout", "MotifEngine"]


def base_layout() -> data.StructLayout:
    return data.StructLayout({"code": 2, "restart": 1})


class MotifEngine(wiring.Component):
    """Lanes for k = ``params.kmin`` .. ``params.kmax`` behind one window shift register.

    Members
    -------
    bases : In(stream.Signature(base_layout(), always_ready=True))
    control_pass : In(1)
    thresholds : In(ArrayLayout(counter_bits, number of k))   T_k, index 0 is kmin
    clear : In(1)    pulse: empty every sketch and store
    idle : Out(1)
    readback_lane : In, readback_address : In, readback_row : Out(set_layout(64, ...))

    :attr:`lanes` exposes each k's lane (and through it the sketch and store state).
    """

    def __init__(self, params: MotifParams = MotifParams(), *, read_latency: int = 1):
        check_rtl_params(params, read_latency)
        self._params = params
        self.lanes = [MotifLane(k, params, read_latency=read_latency) for k in params.ks]
        self.row_layout = set_layout(64, params.counter_bits, params.store_ways)
        super().__init__({
            "bases": In(stream.Signature(base_layout(), always_ready=True)),
            "control_pass": In(1),
            "thresholds": In(data.ArrayLayout(params.counter_bits, len(self.lanes))),
            "clear": In(1),
            "idle": Out(1),
            "readback_lane": In(range(len(self.lanes))),
            "readback_address": In(max(1, params.set_bits)),
            "readback_row": Out(self.row_layout),
        })

    @property
    def params(self) -> MotifParams:
        return self._params

    @property
    def latency(self) -> int:
        """Cycles from a base to the last store write it causes."""
        return 1 + max(lane.test_latency for lane in self.lanes)

    def elaborate(self, platform):
        m = Module()
        kmax = self._params.kmax
        window = Signal(2 * kmax)
        run = Signal(range(kmax + 1))
        window_valid = Signal()
        with m.If(self.bases.valid):
            base = self.bases.payload
            m.d.sync += [
                window.eq(Cat(base.code, window[:-2])),
                run.eq(Mux(base.restart, 1, Mux(run == kmax, kmax, run + 1))),
            ]
        m.d.sync += window_valid.eq(self.bases.valid)

        # a window in flight keeps the engine busy for ``latency`` cycles after its base
        in_flight = Signal(range(self.latency + 1))
        with m.If(self.bases.valid):
            m.d.sync += in_flight.eq(self.latency)
        with m.Elif(in_flight != 0):
            m.d.sync += in_flight.eq(in_flight - 1)

        busy = Signal()
        clearing = Signal()
        rows = []
        for index, lane in enumerate(self.lanes):
            m.submodules[f"lane_k{lane.k}"] = lane
            m.d.comb += [
                lane.window.valid.eq(window_valid & (run >= lane.k)),
                lane.window.payload.eq(window[:2 * lane.k]),
                lane.control_pass.eq(self.control_pass),
                lane.threshold.eq(self.thresholds[index]),
                lane.clear.eq(self.clear),
                lane.readback_address.eq(self.readback_address),
            ]
            clearing = clearing | lane.busy
            rows.append(lane.readback_row)
        m.d.comb += busy.eq(clearing | self.clear)
        m.d.comb += self.idle.eq(~busy & (in_flight == 0) & ~window_valid)

        lane_selected = Signal.like(self.readback_lane)
        m.d.sync += lane_selected.eq(self.readback_lane)
        with m.Switch(lane_selected):
            for index, row in enumerate(rows):
                with m.Case(index):
                    m.d.comb += self.readback_row.next_victim.eq(row.next_victim)
                    for way in range(self._params.store_ways):
                        source, target = row.ways[way], self.readback_row.ways[way]
                        m.d.comb += [target.valid.eq(source.valid), target.kmer.eq(source.kmer),
                                     target.value.eq(source.value),
                                     target.control_count.eq(source.control_count)]
        return m
