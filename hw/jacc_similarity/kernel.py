"""``jacc_similarity``: the all-pairs HyperLogLog similarity kernel of JACC-FPGA (SPEC 3, 6;
docs/jacc_similarity_kernel.md).

Host arguments and layouts: kmerspec/kernels/jacc_similarity.py.

A call reads groups ``first_group .. first_group + pivot_groups + stream_groups - 1`` in one
sequence, one ``group_bytes`` read command per group. The first ``pivot_groups`` groups are also
written into the on-chip pivot memories (pivot slot j = group j // D, slot j % D). For every group
q read, the ``V x D`` union + feature units produce record (j, s) = features of the union of pivot
slot j with sketch s of the group, where pivot slot j counts as loaded from the group in which it
arrives onwards (the arriving slice bypasses its memory) and as an empty sketch before that or if
its group is not loaded in this call. So the pivot-to-pivot pairs come out of the loading groups
and the pivot x streamed pairs out of the others. The records of group q go to
``features + q * record_block_bytes`` (layout: kmerspec.kernels.jacc_similarity.pack_features,
docs/jacc_similarity_kernel.md).

Throughput: one sketch beat per cycle (D slices of D sketches, each against every pivot) while
``beats_per_group > drain_cycles`` (unit latency + 1 + record beats), true for p = 14; otherwise
the end of a group waits until the record snapshot of the previous group has been written
(``group_period``). Backpressure: the reader's ready falls only at such a group end; a stalled
writer holds the snapshot and so, one group later, the stream. A call takes the memory round trip,
then :func:`call_cycles_model` cycles from its first beat to its last record beat.
"""

from amaranth.hdl import C, Cat, Mux, Signal
from amaranth.lib.memory import Memory
from amaranth.utils import exact_log2

from kmerspec.kernels.jacc_similarity import NZ_BITS, Params
from kmerspec.regmap import ERROR_ARGUMENT

from ..axi.writer import write_tail_cycles
from ..common.feature_unit import FeatureUnit, feature_unit_latency
from ..vitis.chunk_kernel import Countdown, SplitAddress, StreamKernel, error_word

__all__ = ["JaccSimilarityKernel", "call_cycles_model", "drain_cycles", "group_period",
           "write_tail"]


class JaccSimilarityKernel(StreamKernel):
    """The similarity kernel core for ``V`` pivots, ``D`` streamed sketches per beat, HLL p, w.

    Parameters
    ----------
    params : kmerspec.kernels.jacc_similarity.Params
        pivots V (a multiple of D), streams D (a power of two), p, w, and data_width, the bus
        width of both m_axi ports.
    """

    # synth_xilinx's own LUT mapping: for this kernel better than the mapping for the clock on
    # both counts (V = 80, docs/timing.md: 348,441 LUT / 3.61 ns against 395,818 / 3.93 ns;
    # abc9 given a target recovers less area in the 320 feature units, 939 -> 1,099 LUT each)
    lut_mapping = "abc9"

    Params = Params

    def __init__(self, params: Params = Params()):
        super().__init__(params)

    @property
    def unit_latency(self) -> int:
        return feature_unit_latency(self.params.registers_per_slot)

    @property
    def drain_cycles(self) -> int:
        return drain_cycles(self.params)

    @property
    def group_period(self) -> int:
        return group_period(self.params)

    def argument_checks(self):
        """The pointers, and ``pivot_groups`` within 1 .. V / D (the groups the pivot memories
        hold; none loaded would leave every record a union with empty pivots)."""
        count = self.args.pivot_groups
        return [*super().argument_checks(),
                ((count == 0) | (count > self.params.pivot_groups),
                 error_word(ERROR_ARGUMENT, self.argument_index("pivot_groups")))]

    def elaborate_body(self, m, reader, writer, call):
        g = self.params
        args = self.args
        beats, slot_bits, nstreams = g.beats_per_group, g.slot_bits, g.streams
        record_bits = g.record_bytes * 8

        running = call.running
        # -- commands: one read and one write command per group ----------------------------
        # Per stream: the commands still due (:class:`Countdown`, whose "due" is a register
        # bit) and the group's address, stepped in two 32-bit halves (:class:`SplitAddress`);
        # a command waits a cycle after each one and after the start for its address to settle
        # (the count's adjustment after its load falls in that cycle).
        def command_stream(command, name, base, offset, length):
            address = SplitAddress(m, f"{name}_addr")
            left = Countdown(m, f"{name}s_left", 33)
            m.d.comb += [
                command.valid.eq(running & left.due & address.settled),
                command.payload.addr.eq(address.value),
                command.payload.length.eq(length),
            ]
            with m.If(call.starting):
                left.load(args.pivot_groups + args.stream_groups)
                address.load(base, offset)
            with m.Elif(command.valid & command.ready):
                left.step()
                address.step(length)
            return left.due

        command_stream(reader.cmd, "read", args.sketches,
                       args.first_group << exact_log2(g.group_bytes), g.group_bytes)
        writes_due = command_stream(writer.cmd, "write", args.features, 0, g.record_block_bytes)

        # -- input beats: chunk c of group q -------------------------------------------------
        chunk = Signal(range(beats))
        end_in_flight = Signal()        # the last beat of a group is in the pipeline
        snapshot_left = Signal(range(g.record_beats + 1))
        # snapshot_left == 0, as a register: the reader's ready, the pivot memories' write
        # enables and the reader's FIFOs follow it (its compare in front was 4.11 ns)
        snapshot_empty = Signal(init=1)
        # chunk == beats - 1, as a register beside chunk (in front of the reader's ready)
        last_chunk = Signal(init=int(beats == 1))
        # The last beat of a group may enter only if the record snapshot will be free when its
        # features arrive: nothing else can fill the snapshot before them.
        can_end = snapshot_empty & ~end_in_flight
        m.d.comb += reader.data.ready.eq(running & (~last_chunk | can_end))
        fire = reader.data.valid & reader.data.ready
        beat = reader.data.payload.data
        # the current group q as a thermometer over the pivot groups (bit pg: q >= pg; the one
        # bit above them: q >= V / D), and "pivot group pg is loaded in this call", set at the
        # start: the pivot memories' write enables and visibility from registers, no compares
        reached = Signal(g.pivot_groups + 1)
        group_is = [reached[pg] & ~reached[pg + 1] for pg in range(g.pivot_groups)]
        loads = Signal(g.pivot_groups)
        with m.If(fire):
            m.d.sync += [chunk.eq(Mux(last_chunk, 0, chunk + 1)),
                         last_chunk.eq(Mux(last_chunk, beats == 1,
                                            (chunk == beats - 2) if beats > 1 else 1))]
            with m.If(last_chunk):
                m.d.sync += [end_in_flight.eq(1), reached.eq(Cat(C(1, 1), reached[:-1]))]

        # -- stage 1: pivot memory read, arriving slices, pivot visibility --------------------
        beat_1 = Signal(self.data_width)
        valid_1, first_1, last_1 = Signal(), Signal(), Signal()
        m.d.sync += [valid_1.eq(fire), first_1.eq(chunk == 0), last_1.eq(last_chunk)]
        with m.If(fire):
            m.d.sync += beat_1.eq(beat)
        visible_1 = Signal(g.pivot_groups)
        bypass_1 = Signal(g.pivot_groups)
        for pg in range(g.pivot_groups):
            m.d.sync += [visible_1[pg].eq(reached[pg] & loads[pg]),
                         bypass_1[pg].eq(group_is[pg])]

        def slot(word, s):
            return word[s * slot_bits:(s + 1) * slot_bits]

        pivot_words = []
        for j in range(g.pivots):
            pg, s = divmod(j, nstreams)
            mem = Memory(shape=slot_bits, depth=beats, init=[])
            m.submodules[f"pivot_{j}"] = mem
            write = mem.write_port()
            read = mem.read_port()
            m.d.comb += [
                write.addr.eq(chunk), write.data.eq(slot(beat, s)),
                write.en.eq(fire & group_is[pg] & loads[pg]),
                read.addr.eq(chunk), read.en.eq(fire),
            ]
            word = Signal(slot_bits, name=f"pivot_word_{j}")
            m.d.comb += word.eq(Mux(visible_1[pg],
                                    Mux(bypass_1[pg], slot(beat_1, s), read.data), 0))
            pivot_words.append(word)

        # -- union + feature units, V x D ----------------------------------------------------
        units = {}
        for j in range(g.pivots):
            for s in range(nstreams):
                unit = FeatureUnit(g.registers_per_slot, g.w, g.field_bits)
                m.submodules[f"unit_{j}_{s}"] = unit
                m.d.comb += [unit.slot.eq(pivot_words[j]), unit.other.eq(slot(beat_1, s))]
                units[j, s] = unit
        latency = units[0, 0].latency
        valid_a, first_a, last_a = valid_1, first_1, last_1
        for stage in range(latency):
            nv, nf, nl = Signal(name=f"valid_p{stage}"), Signal(name=f"first_p{stage}"), \
                Signal(name=f"last_p{stage}")
            m.d.sync += [nv.eq(valid_a), nf.eq(first_a), nl.eq(last_a)]
            valid_a, first_a, last_a = nv, nf, nl

        # -- accumulation over the beats of a group, then the record snapshot ---------------
        records = []
        for (j, s), unit in units.items():
            acc_z = Signal(g.z_bits, name=f"acc_z_{j}_{s}")
            acc_nz = Signal(g.p + 1, name=f"acc_nz_{j}_{s}")
            sum_z = Mux(first_a, 0, acc_z) + unit.z
            sum_nz = Mux(first_a, 0, acc_nz) + unit.nz
            with m.If(valid_a):
                m.d.sync += [acc_z.eq(sum_z), acc_nz.eq(sum_nz)]
            records.append(Cat(sum_nz[:g.p + 1].as_unsigned(), C(0, NZ_BITS - g.p - 1),
                               sum_z[:g.z_bits], C(0, record_bits - NZ_BITS - g.z_bits)))
        snapshot_bits = g.record_beats * self.data_width
        snapshot = Signal(snapshot_bits)
        packed = Cat(*records)
        # the groups whose records are still to come (no group's records end in the cycle
        # after the start, the count's adjustment)
        groups_left = Countdown(m, "groups_left", 33)
        with m.If(valid_a & last_a):
            # the snapshot is empty here (``can_end``), so no record beat leaves in this cycle
            m.d.sync += [snapshot.eq(Cat(packed, C(0, snapshot_bits - len(packed)))),
                         snapshot_left.eq(g.record_beats), snapshot_empty.eq(0),
                         end_in_flight.eq(0)]
            groups_left.step()
        m.d.comb += [writer.data.valid.eq(~snapshot_empty),
                     writer.data.payload.eq(snapshot[:self.data_width])]
        with m.If(writer.data.valid & writer.data.ready):
            m.d.sync += [snapshot.eq(snapshot >> self.data_width),
                         snapshot_left.eq(snapshot_left - 1),
                         snapshot_empty.eq(snapshot_left == 1)]

        # -- control -------------------------------------------------------------------------
        with m.If(call.starting):
            groups_left.load(args.pivot_groups + args.stream_groups)
            m.d.sync += [chunk.eq(0), last_chunk.eq(int(beats == 1)), reached.eq(1),
                         end_in_flight.eq(0)]
            m.d.sync += [loads[pg].eq(args.pivot_groups > pg) for pg in range(g.pivot_groups)]
        return ~groups_left.due & snapshot_empty & ~writes_due & writer.idle & reader.idle


def drain_cycles(params: Params) -> int:
    """Cycles from the last beat of a group to the last beat of its records handed to the
    writer (writer never stalled): the memory/visibility stage, the unit, the snapshot, the
    record beats."""
    return feature_unit_latency(params.registers_per_slot) + 1 + params.record_beats


def write_tail(params: Params) -> int:
    """Cycles from the last record beat handed to the writer to its W beat: the writer offers a
    burst's AW only once the burst's data are in its buffer (:func:`hw.axi.writer
    .write_tail_cycles` of a group's record beats)."""
    return write_tail_cycles(params.record_beats)


def group_period(params: Params) -> int:
    """Cycles between the ends of consecutive groups when the memory never stalls."""
    return max(params.beats_per_group, drain_cycles(params) + 1)


def call_cycles_model(params: Params, groups: int, start_latency: int = 0) -> int:
    """Cycles of a call of ``groups`` groups: ``start_latency`` (ap_start to the first read beat:
    command, address and memory latency), then the stream, then the drain of the last group and
    the writer's tail."""
    if groups == 0:
        return start_latency
    beats = params.beats_per_group + (groups - 1) * group_period(params)
    return start_latency + beats + drain_cycles(params) + write_tail(params)
