"""``motif``: the emerging-motif Vitis RTL kernel (SPEC sections 5 and 6; docs/motif_kernel.md).

Host arguments and layouts: kmerspec/kernels/motif.py.

One run: read the thresholds; clear every sketch and store (2^cw cycles); test pass over the
test bytes; control pass over the control bytes; write every store entry of every k with its
emerging flag, then a summary beat with the base and cycle counts of both passes.

Throughput: every base moves all k in [kmin, kmax] one window in the same cycle (one window per
cycle per k). The front end parses ``bytes_per_cycle`` (default 8) bytes per cycle into a base
FIFO, so headers, line ends and FASTQ's '+' and quality lines do not cost engine cycles as long
as the input has fewer than 8 bytes per base (Illumina FASTQ has 2-4; the default kernel
measures 0.97 bases per cycle on SRR059298 reads, docs/default_geometry.md).
"""

from amaranth.hdl import Cat, Const, Signal
from amaranth.lib import data

from kmerspec.kernels.motif import (ENTRY_BYTES, SUMMARY_MAGIC, THRESHOLDS_BYTES, Params,
                                   result_bytes)

from ..common.pipeline import ChunkedAccumulator, pipelined_product
from ..vitis.chunk_kernel import StreamKernel
from .engine import MotifEngine
from .frontend import BaseFrontEnd

__all__ = ["MotifKernel"]


class MotifKernel(StreamKernel):
    """The emerging-motif kernel.

    Parameters
    ----------
    params : kmerspec.kernels.motif.Params
        The SPEC 5 sketch and store geometry, the counter BRAM ``read_latency`` (2 uses its
        output register), the front end's parser width ``bytes_per_cycle``
        (:class:`BaseFrontEnd`) and ``data_width``. Thresholds and growth are runtime arguments.
    """

    Params = Params

    def __init__(self, params: Params = Params()):
        self._engine = MotifEngine(params.algorithm, read_latency=params.read_latency)
        self._front_end = BaseFrontEnd(params.data_width, params.bytes_per_cycle)
        super().__init__(params)

    def elaborate_body(self, m, reader, writer, call):
        params = self.params
        dw = self.data_width
        lanes = len(params.ks)
        ways = params.store_ways
        entries_per_beat = dw // (8 * ENTRY_BYTES)

        m.submodules.engine = engine = self._engine
        m.submodules.front_end = front_end = self._front_end

        thresholds = Signal(data.ArrayLayout(params.counter_bits, lanes))
        control_pass = Signal()
        m.d.comb += [engine.thresholds.eq(thresholds), engine.control_pass.eq(control_pass),
                     engine.bases.valid.eq(front_end.o.valid),
                     engine.bases.payload.eq(front_end.o.payload)]

        # pass statistics for the summary: 64-bit counts in 32-bit chunks with a registered
        # carry (a 64-bit +1 in one cycle was the whole kernel's deepest path: 16 CARRY4,
        # 11 levels); the summary is written long after the last count settles
        in_pass = Signal()
        clear_counters = Signal()
        counters = {name: ChunkedAccumulator(64, name) for name in
                    ("test_bases", "test_cycles", "control_bases", "control_cycles")}
        for name, enable in (("test_cycles", in_pass & ~control_pass),
                             ("control_cycles", in_pass & control_pass),
                             ("test_bases", front_end.o.valid & ~control_pass),
                             ("control_bases", front_end.o.valid & control_pass)):
            counters[name].add(m, enable, Const(1, 1), clear_counters)

        # readback: one entry per cycle into a beat
        lane = Signal(range(lanes))
        set_index = Signal(max(1, params.set_bits))
        way = Signal(range(ways))
        row = Signal(engine.row_layout)
        m.d.comb += [engine.readback_lane.eq(lane), engine.readback_address.eq(set_index)]
        entry = row.ways[way]
        # each way's emerging test from registers: the product growth x control count (DSP48E2
        # tiles with their registers) and the compares, registered while the row stands (the
        # readback waits ``judge_cycles`` after capturing it, so the row and the threshold need
        # no delay beside the product); in one cycle behind the way select it was the whole
        # kernel's longest path (11 levels, 8.62 ns)
        threshold = Signal(params.counter_bits)
        m.d.sync += threshold.eq(thresholds[lane])
        row_emerging = Signal(ways)
        for index in range(ways):
            judged = row.ways[index]
            product, latency = pipelined_product(m, self.args.growth_q8[:16],
                                                 judged.control_count, f"growth_x_count{index}")
            m.d.sync += row_emerging[index].eq((judged.value >= threshold)
                                               & (Cat(Const(0, 8), judged.value) >= product))
        judge_cycles = latency + 1
        emerging = row_emerging.bit_select(way, 1)
        judge_wait = Signal(range(judge_cycles + 1))
        entry_bits = Cat(entry.kmer, entry.value.as_unsigned() | Const(0, 16),
                         entry.valid, emerging & entry.valid, Const(0, 6),
                         row.next_victim | Const(0, 8), entry.control_count)
        fill = Signal(dw)
        slot = Signal(range(entries_per_beat))
        out_beat = Signal(dw)
        out_valid = Signal()
        m.d.comb += [writer.data.valid.eq(out_valid), writer.data.payload.eq(out_beat)]
        with m.If(writer.data.valid & writer.data.ready):
            m.d.sync += out_valid.eq(0)
        can_emit = ~out_valid | writer.data.ready
        emit = Signal()
        filled = Signal(dw)
        m.d.comb += filled.eq(fill)
        for index in range(entries_per_beat):
            with m.If(slot == index):
                m.d.comb += filled[128 * index:128 * (index + 1)].eq(entry_bits)
        flush = Signal()   # push the partial beat in ``fill`` as it is
        with m.If(emit):
            with m.If(slot == entries_per_beat - 1):
                m.d.sync += [out_beat.eq(filled), out_valid.eq(1), fill.eq(0), slot.eq(0)]
            with m.Else():
                m.d.sync += [fill.eq(filled), slot.eq(slot + 1)]
        with m.Elif(flush):
            m.d.sync += [out_beat.eq(fill), out_valid.eq(1), fill.eq(0), slot.eq(0)]

        summary = Cat(Const(SUMMARY_MAGIC, 32), Const(params.kmin, 8), Const(params.kmax, 8),
                      Const(ways, 8), Const(params.set_bits, 8),
                      counters["test_bases"].value, counters["test_cycles"].value,
                      counters["control_bases"].value, counters["control_cycles"].value,
                      self.args.test_bytes | Const(0, 64), self.args.control_bytes | Const(0, 64))

        # control. The reader's command is a register, set on the way into each *_COMMAND
        # state (the pass's address and length selected there by the FSM state and
        # ``control_pass`` ran through the burst splitter's load into its registers: 8 levels)
        command_address = Signal.like(reader.cmd.payload.addr)
        command_length = Signal.like(reader.cmd.payload.length)
        command_empty = Signal()

        def next_command(address, length):
            m.d.sync += [command_address.eq(address), command_length.eq(length),
                         command_empty.eq(length == 0)]

        m.d.comb += [reader.cmd.payload.addr.eq(command_address),
                     reader.cmd.payload.length.eq(command_length),
                     writer.cmd.payload.addr.eq(self.args.result),
                     writer.cmd.payload.length.eq(result_bytes(params))]
        finished = Signal()
        # CLEAR and PASS_DRAIN wait for the engine (and front end) to be idle, as seen one cycle
        # earlier in the same state: in those states nothing new enters, so idle stays idle, and
        # the wait's decision is a register (the idle test behind the FSM's next state was the
        # kernel's longest path, 8 levels, 4.61 ns); cleared in every other state
        settled = Signal()
        m.d.sync += settled.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(call.starting):
                    m.d.sync += [control_pass.eq(0)]
                    next_command(self.args.thresholds, THRESHOLDS_BYTES)
                    m.next = "THRESHOLDS_COMMAND"
            with m.State("THRESHOLDS_COMMAND"):
                # the pass counters are cleared here, a state after the call's start (behind
                # the start's argument checks the clear was 7 levels; nothing counts before a pass)
                m.d.comb += [clear_counters.eq(1), reader.cmd.valid.eq(1)]
                with m.If(reader.cmd.ready):
                    m.next = "THRESHOLDS_DATA"
            with m.State("THRESHOLDS_DATA"):
                m.d.comb += reader.data.ready.eq(1)
                with m.If(reader.data.valid):
                    for index, k in enumerate(params.ks):
                        bits = reader.data.payload.data[16 * (k - 1):16 * (k - 1) + 16]
                        m.d.sync += thresholds[index].eq(bits)
                    with m.If(reader.data.payload.last):
                        m.d.comb += engine.clear.eq(1)
                        m.next = "CLEAR"
            with m.State("CLEAR"):
                m.d.sync += settled.eq(engine.idle)
                with m.If(settled):
                    next_command(self.args.test, self.args.test_bytes)
                    m.next = "PASS_COMMAND"
            with m.State("PASS_COMMAND"):
                m.d.comb += in_pass.eq(1)
                with m.If(command_empty):
                    m.next = "PASS_DRAIN"
                with m.Else():
                    m.d.comb += reader.cmd.valid.eq(1)
                    with m.If(reader.cmd.ready):
                        m.next = "PASS_DATA"
            with m.State("PASS_DATA"):
                m.d.comb += in_pass.eq(1)
                wiring_ready = front_end.i.ready
                m.d.comb += [front_end.i.valid.eq(reader.data.valid),
                             front_end.i.payload.eq(reader.data.payload),
                             reader.data.ready.eq(wiring_ready)]
                with m.If(reader.data.valid & wiring_ready & reader.data.payload.last):
                    m.next = "PASS_DRAIN"
            with m.State("PASS_DRAIN"):
                m.d.comb += in_pass.eq(1)
                m.d.sync += settled.eq(~front_end.busy & ~front_end.o.valid & engine.idle)
                with m.If(settled):
                    with m.If(control_pass):
                        m.next = "RESULT_COMMAND"
                    with m.Else():
                        m.d.sync += control_pass.eq(1)
                        next_command(self.args.control, self.args.control_bytes)
                        m.next = "PASS_COMMAND"
            with m.State("RESULT_COMMAND"):
                m.d.comb += writer.cmd.valid.eq(1)
                m.d.sync += [lane.eq(0), set_index.eq(0), way.eq(0), slot.eq(0), fill.eq(0)]
                with m.If(writer.cmd.ready):
                    m.next = "READ_ROW"
            with m.State("READ_ROW"):
                m.next = "CAPTURE_ROW"   # the address is on the store read port this cycle
            with m.State("CAPTURE_ROW"):
                m.d.sync += [row.eq(engine.readback_row), way.eq(0), judge_wait.eq(judge_cycles)]
                m.next = "JUDGE_ROW"
            with m.State("JUDGE_ROW"):
                m.d.sync += judge_wait.eq(judge_wait - 1)
                with m.If(judge_wait == 1):
                    m.next = "EMIT"
            with m.State("EMIT"):
                with m.If(can_emit):
                    m.d.comb += emit.eq(1)
                    m.d.sync += way.eq(way + 1)
                    with m.If(way == ways - 1):
                        m.d.sync += set_index.eq(set_index + 1)
                        m.next = "READ_ROW"
                        with m.If(set_index == params.store_sets - 1):
                            m.d.sync += [set_index.eq(0), lane.eq(lane + 1)]
                            with m.If(lane == lanes - 1):
                                m.next = "FLUSH"
            with m.State("FLUSH"):
                with m.If(slot == 0):
                    m.next = "SUMMARY"
                with m.Elif(can_emit):
                    m.d.comb += flush.eq(1)
                    m.next = "SUMMARY"
            with m.State("SUMMARY"):
                with m.If(can_emit):
                    m.d.sync += [out_beat.eq(summary), out_valid.eq(1)]
                    m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(~out_valid & reader.idle):
                    m.d.comb += finished.eq(1)
                    m.next = "IDLE"
        return finished
