"""ChunkGenerator: the self-test's on-chip input, the chunk beats of kmerspec/selftest.py."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import Out

from kmerspec.chunks import EOF_BIT, EOG_BIT, TAG_LSB
from kmerspec.selftest import HEADER, LINE, SelfTestParams, lane_seed, xorshift32

__all__ = ["ChunkGenerator"]


def _xorshift32(s):
    """The combinational xorshift32 step (three shift-XORs: wiring and one XOR level each)."""
    s = s ^ (s << 13)[:32]
    s = s ^ (s >> 17)
    return s ^ (s << 5)[:32]


class ChunkGenerator(wiring.Component):
    """Emit the self-test's chunk beats (kmerspec/selftest.py), then stop.

    Throughput: one beat per cycle whenever ``o.ready`` is high (control beats included).
    Latency: the payload is decoded from registers in the cycle it is offered.
    Backpressure: holds the beat while ``o.ready`` is low; nothing else depends on the sink.

    Members
    -------
    o : Out(stream.Signature(8 T B))
        Chunk beats.
    done : Out(1)
        Every beat has been taken.
    """

    def __init__(self, params: SelfTestParams):
        self._params = params
        super().__init__({"o": Out(stream.Signature(params.sketch.data_width)),
                          "done": Out(1)})

    def elaborate(self, platform):
        m = Module()
        params = self._params
        sketch = params.sketch
        lanes, b, bus = sketch.lanes, sketch.bytes_per_lane, sketch.data_width
        step = params.block_beats * b
        control_beats = sketch.control_beats
        # HEADER[9] is the newline of position 9 mod LINE, so one test covers both; B divides LINE
        assert (len(HEADER) + LINE - 1) % LINE == len(HEADER) - 1 and HEADER[-1:] == b"\n"
        assert LINE == 64 and LINE % b == 0

        round_ = Signal(range(params.rounds))
        genome_beat = Signal(range(params.genome_beats))
        genome_byte = genome_beat * b    # a shift: B is a power of two
        remaining = params.genome_bytes - genome_byte
        block_left = Signal(range(params.block_beats + 1))
        control_beat = Signal(range(max(control_beats, 2)))
        in_data = Signal()
        done = Signal()
        # each lane's state already advanced for the beat being offered
        states = [Signal(32, name=f"state{t}", init=xorshift32(lane_seed(params, t)))
                  for t in range(lanes)]

        last_block = remaining <= step
        count = Signal(EOF_BIT)
        m.d.comb += count.eq(Mux(last_block, remaining, step))
        tags = [Signal(32, name=f"tag{t}") for t in range(lanes)]
        m.d.comb += [tag.eq(round_ * lanes + t) for t, tag in enumerate(tags)]
        words = [Cat(count, last_block, last_block, Const(0, TAG_LSB - EOG_BIT - 1), tag)
                 for tag in tags]
        control = Cat(*words, Const(0, control_beats * bus - 64 * lanes))
        take = self.o.valid & self.o.ready

        slots = []
        for t in range(lanes):
            for q in range(b):
                base = Const(int.from_bytes(b"ACGT", "little"), 32).word_select(
                    states[t][2 * q:2 * q + 2], 8)
                byte = Signal(8, name=f"byte{t}_{q}")
                with m.If((genome_byte + q)[:6] == (len(HEADER) + LINE - 1) % LINE):
                    m.d.comb += byte.eq(ord("\n"))
                with m.Elif(genome_byte + q < len(HEADER)):
                    m.d.comb += byte.eq(Const(int.from_bytes(HEADER, "little"),
                                              8 * len(HEADER)).word_select(
                                                  (genome_byte + q)[:4], 8))
                with m.Else():
                    m.d.comb += byte.eq(base)
                slots.append(byte)
        m.d.comb += [
            self.o.valid.eq(~done),
            self.o.payload.eq(Mux(in_data, Cat(*slots),
                                  control.word_select(control_beat, bus))),
            self.done.eq(done),
        ]
        with m.If(take & ~in_data):
            m.d.sync += control_beat.eq(control_beat + 1)
            with m.If(control_beat == control_beats - 1):
                m.d.sync += [control_beat.eq(0), in_data.eq(1),
                             block_left.eq(count // b)]
        with m.If(take & in_data):
            m.d.sync += [s.eq(_xorshift32(s)) for s in states]
            m.d.sync += [genome_beat.eq(genome_beat + 1), block_left.eq(block_left - 1)]
            with m.If(block_left == 1):
                m.d.sync += in_data.eq(0)
                with m.If(genome_beat == params.genome_beats - 1):
                    m.d.sync += [genome_beat.eq(0), round_.eq(round_ + 1)]
                    with m.If(round_ == params.rounds - 1):
                        m.d.sync += done.eq(1)
        return m
