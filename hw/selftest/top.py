"""SketchSelfTest: the JACC sketch core on generated input, judged on chip (kmerspec/selftest.py).

The top of the standalone bitstream (``python -m hw.build --board rfsoc4x2``): no host, no AXI.
After reset a :class:`ChunkGenerator` feeds the :class:`SketchCore` the self-test's genomes, a
:class:`RecordChecksum` folds every record the core writes, and when the last record is in the
result is compared with the one the golden model predicted when the bitstream was generated.

LEDs (when the platform has them): ``led 0`` heartbeat (0.5 to 1 Hz at any clock), ``led 1``
done, ``led 2`` pass, ``led 3`` fail; RGB LED 0, where the board has one, green on pass, red on
fail. Fail is also raised when the
run has not finished within ``timeout_cycles`` (a stuck core must not look like a running one).
"""

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import io

from kmerspec.selftest import SelfTestParams, expected_result

from ..sketch.core import SketchCore
from .checksum import RecordChecksum
from .generator import ChunkGenerator

__all__ = ["SketchSelfTest"]


class SketchSelfTest(Elaboratable):
    """Parameters
    ----------
    params : SelfTestParams
        Core geometry and generated input.
    expected : (checksum, records), optional
        The result that passes; default: the golden model's (:func:`expected_result`, computed
        here: seconds for the default input).

    Attributes (signals, for simulation)
    ----------
    done, passed, failed, timed_out : 1 bit
    checksum, records : 32 bits, what the core produced
    cycles : cycles from reset to done (stops counting at done)
    """

    def __init__(self, params: SelfTestParams = SelfTestParams(), expected=None):
        self.params = params
        self.expected = expected if expected is not None else expected_result(params)
        sketch = params.sketch
        self.generator = ChunkGenerator(params)
        self.core = SketchCore(lanes=sketch.lanes, bytes_per_lane=sketch.bytes_per_lane,
                               k=sketch.k, p=sketch.p, w=sketch.w)
        self.checker = RecordChecksum(sketch.data_width, params.record_beats)
        # every beat once, every genome end's drain (2^(p-4) words per lane) and record, x 4
        self.timeout_cycles = 4 * (params.input_beats + params.records
                                   * ((1 << (sketch.p - 4)) + 64 + params.record_beats)) + 10_000
        self.done = Signal()
        self.passed = Signal()
        self.failed = Signal()
        self.timed_out = Signal()
        self.checksum = Signal(32)
        self.records = Signal(32)
        self.cycles = Signal(range(self.timeout_cycles + 1))

    def elaborate(self, platform):
        m = Module()
        m.submodules.generator = gen = self.generator
        m.submodules.core = core = self.core
        m.submodules.checker = checker = self.checker
        m.d.comb += [gen.o.ready.eq(core.i.ready), core.i.valid.eq(gen.o.valid),
                     core.i.payload.eq(gen.o.payload),
                     checker.i.valid.eq(core.o.valid), checker.i.payload.eq(core.o.payload),
                     core.o.ready.eq(checker.i.ready)]
        checksum, records = self.expected
        m.d.comb += [self.checksum.eq(checker.checksum), self.records.eq(checker.records),
                     self.done.eq(checker.records == records)]
        with m.If(~self.done & ~self.timed_out):
            m.d.sync += self.cycles.eq(self.cycles + 1)
            with m.If(self.cycles == self.timeout_cycles - 1):
                m.d.sync += self.timed_out.eq(1)
        m.d.comb += [self.passed.eq(self.done & (checker.checksum == checksum)),
                     self.failed.eq((self.done & (checker.checksum != checksum))
                                    | self.timed_out)]

        if platform is not None:
            # 0.5 to 1 Hz at any clock f: the top bit toggles every 2^floor(log2 f) cycles
            heartbeat = Signal(int(platform.default_clk_frequency).bit_length())
            m.d.sync += heartbeat.eq(heartbeat + 1)
            outputs = [(platform.request("led", 0, dir="-"), heartbeat[-1]),
                       (platform.request("led", 1, dir="-"), self.done),
                       (platform.request("led", 2, dir="-"), self.passed),
                       (platform.request("led", 3, dir="-"), self.failed)]
            if ("rgb_led", 0) in platform.resources:      # rfsoc4x2 has one, ULX3S has none
                rgb = platform.request("rgb_led", 0, dir="-")
                outputs += [(rgb.g, self.passed), (rgb.r, self.failed), (rgb.b, 0)]
            for j, (port, value) in enumerate(outputs):
                m.submodules[f"light{j}"] = light = io.Buffer("o", port)
                m.d.comb += light.o.eq(value)
        return m
