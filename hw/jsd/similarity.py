"""JSD similarity core: V pivot PQAs on chip, every streamed PQA united with all of them at once.

Per pivot: the pivot's queues (n memories of 2^R entries, like :class:`PqaInsert`), a union
network and an :class:`EntropyUnit` of 2n counts per beat. A streamed queue q meets pivot queue
q: pivot entry i gets ``p_i * M_Q + q_j * M_P`` where q_j is the streamed entry of equal tag
(0 if none); each streamed entry that matches no pivot entry gets ``q_j * M_P``. These are the
textbook mixture counts of ``kmerspec.golden.entropy.mixture_counts`` (runtime mode "counts" uses
multipliers 1, i.e. pooled counts). After the last queue, per pivot,
``JSD = H_mix - ((H_P + H_Q) >> 1)``, clamped to [0, 1] in textbook mode, 1 if exactly one
PQA is empty and 0 if both are, exactly ``kmerspec.golden.entropy.jsd_fixed``. H_P and H_Q are the
entropies stored in the records' trailers by the queue builder.

Pipeline per pivot, for the board clock (``python bench/timing_parts.py --parts
similarity_pivot``): the pivot queue's words into the memories' output registers; the n x n tag
matches (one cycle) beside the products p_i M_Q and q_j M_P (each a
:func:`hw.common.pipeline.pipelined_product`: 16 products per pivot, every q_j M_P computed once
and chosen by the match as pivot entry i's partner term); then the partner choice and the
unmatched streamed entries (one cycle), the sums in 32-bit chunks, the entropy unit. After the
entropies: the differences (one cycle), the clamps into the result beat (one cycle).

Input: records as written by the queue builder but with the trailer beat first (the kernel reads
it first), the ``n_pivots`` pivot records and then the ``n_pqas`` streamed records.
Throughput: one queue per cycle per pivot set (when a queue is one bus beat); per streamed record
the union pipeline, the entropy unit's ``finish_cycles`` (100 at the defaults) and the result
beat's 3 cycles. Output: one bus beat per streamed record, u32 JSD of pivot v (signed Q5.24) at
bits [32 v, 32 v + 32), zero for v >= n_pivots.
"""

import functools
import operator

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kmerspec.golden.entropy import FIXED_ONE
from kmerspec.kernels.jsd_similarity import Params

from hw.common.pipeline import delayed, pipelined_add, pipelined_product

from .entropy import ENTROPY_BITS, EntropyUnit
from .pqa import VALUE_BITS, entry_layout, slot_memory_attrs

__all__ = ["JsdSimilarityCore", "mixture_entropy_args"]

ENTRY_BITS = 64


def _total_bits(p: Params) -> int:
    """Width of a PQA total M."""
    return VALUE_BITS + p.R + max(0, (p.n - 1).bit_length())


def mixture_entropy_args(p: Params) -> tuple[int, int, int]:
    """(count_bits, counts_per_beat, max_beats_bits) of a pivot's entropy unit: the textbook
    mixture counts ``p_i M_Q + q_j M_P`` of the 2n entries of a united queue, 2^R queues."""
    return VALUE_BITS + _total_bits(p) + 1, 2 * p.n, p.R


class JsdSimilarityCore(wiring.Component):
    """Members
    -------
    start : In(1)
        Pulse with ``n_pivots``, ``n_pqas`` and ``counts_mode`` valid (held until ``busy`` falls).
    n_pivots : In(range(V + 1)),  n_pqas : In(32),  counts_mode : In(1)
    i : In(stream.Signature(bus_bits))
        Records, trailer beat first: the pivots, then the streamed PQAs.
    o : Out(stream.Signature(bus_bits))
        One result beat per streamed PQA.
    busy : Out(1)
    """

    def __init__(self, params: Params):
        self.params = params
        p = params
        #: widths of a PQA total M and of a textbook mixture count p_i M_Q + q_j M_P
        self.total_bits = _total_bits(p)
        self.mixture_bits = mixture_entropy_args(p)[0]
        self.pivot_slots = [[Memory(shape=entry_layout(p.R), depth=1 << p.R, init=[],
                                    attrs=slot_memory_attrs(p.R))
                             for _ in range(p.n)] for _ in range(p.pivots)]
        self.entropy_units = [EntropyUnit(*mixture_entropy_args(p)) for _ in range(p.pivots)]
        super().__init__({
            "start": In(1),
            "n_pivots": In(range(p.pivots + 1)),
            "n_pqas": In(32),
            "counts_mode": In(1),
            "i": In(stream.Signature(p.data_width)),
            "o": Out(stream.Signature(p.data_width)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        V, n, R = p.pivots, p.n, p.R
        queue_bits = n * ENTRY_BITS

        # gearbox: bus beats -> whole queues; header beats pass through on their own
        header = Signal()          # the next beat is a record's trailer
        piece = Signal(range(max(2, p.beats_per_queue)))
        assembled = Signal(queue_bits)
        queue_valid = Signal()
        queue_address = Signal(R + 1)
        record_done = Signal()
        pivot = Signal(range(V + 1))
        records_left = Signal(32)
        loading = Signal()
        header_entropy = Signal(ENTROPY_BITS)
        header_total = Signal(64)
        pivot_entropy = Signal(data.ArrayLayout(ENTROPY_BITS, V))
        pivot_total = Signal(data.ArrayLayout(self.total_bits, V))
        waiting = Signal()         # the streamed record's entropies are being finished

        accept = self.i.valid & self.i.ready
        m.d.comb += self.i.ready.eq(self.busy & ~waiting
                                    & Cat(*(u.i.ready for u in self.entropy_units)).all())
        pieces = [Signal(self.params.data_width, name=f"piece{j}")
                  for j in range(p.beats_per_queue - 1)]
        m.d.comb += assembled.eq(Cat(*pieces, self.i.payload))
        m.d.sync += [queue_valid.eq(0), record_done.eq(0)]
        with m.If(self.start & ~self.busy):
            m.d.sync += [self.busy.eq(1), header.eq(1), piece.eq(0), pivot.eq(0),
                         loading.eq(self.n_pivots != 0), records_left.eq(self.n_pqas)]
            with m.If((self.n_pivots == 0) & (self.n_pqas == 0)):
                m.d.sync += self.busy.eq(0)
        with m.If(accept):
            with m.If(header):
                m.d.sync += [header.eq(0), queue_address.eq(0),
                             header_entropy.eq(self.i.payload[32:64]),
                             header_total.eq(self.i.payload[64:128])]
            with m.Elif(piece == p.beats_per_queue - 1):
                m.d.sync += [piece.eq(0), queue_valid.eq(1)]
                with m.If(queue_address == (1 << R) - 1):
                    m.d.sync += [header.eq(1), record_done.eq(1)]
                    # the header of the next record must wait until this one's results are out
                    with m.If(~loading):
                        m.d.sync += waiting.eq(1)
            with m.Else():
                m.d.sync += piece.eq(piece + 1)
            for j, register in enumerate(pieces):
                with m.If(piece == j):
                    m.d.sync += register.eq(self.i.payload)

        queue_word = Signal(queue_bits)
        queue_index = Signal(R)
        queue_last = Signal()
        with m.If(accept & ~header & (piece == p.beats_per_queue - 1)):
            m.d.sync += [queue_word.eq(assembled), queue_index.eq(queue_address[:R]),
                         queue_last.eq(queue_address == (1 << R) - 1),
                         queue_address.eq(queue_address + 1)]
        streamed = [Signal(entry_layout(R), name=f"streamed{j}") for j in range(n)]
        for j, entry in enumerate(streamed):
            word = queue_word[ENTRY_BITS * j:ENTRY_BITS * (j + 1)]
            m.d.comb += [entry.value.eq(word[:32]), entry.tag.eq(word[32:32 + 32 - R])]

        # loading a pivot: write queue `queue_index` of pivot `pivot`
        for v, slots in enumerate(self.pivot_slots):
            for j, memory in enumerate(slots):
                m.submodules[f"pivot{v}_slot{j}"] = memory
                write = memory.write_port()
                m.d.comb += [write.addr.eq(queue_index), write.data.eq(streamed[j]),
                             write.en.eq(queue_valid & loading & (pivot == v))]
        with m.If(record_done & loading):
            m.d.sync += [pivot_entropy[pivot].eq(header_entropy),
                         pivot_total[pivot].eq(header_total), pivot.eq(pivot + 1)]
            with m.If(pivot + 1 == self.n_pivots):
                m.d.sync += loading.eq(0)
                with m.If(self.n_pqas == 0):
                    m.d.sync += self.busy.eq(0)

        # streaming: read pivot queue `queue_index` (arrives next cycle into the memories'
        # output registers), then per pivot in parallel: the tag matches, the products
        # p_i M_Q and q_j M_P (pipelined DSP tiles), each pivot entry's partner product chosen by
        # its match, the sums, the entropy unit
        compare = queue_valid & ~loading
        compare1, last1 = Signal(), Signal()
        m.d.sync += [compare1.eq(compare), last1.eq(queue_last)]
        streamed_e = [delayed(m, entry, 2, f"streamed{j}", reset_less=True)
                      for j, entry in enumerate(streamed)]
        valid_e, last_e = delayed(m, compare1, 1, "valid_e"), delayed(m, last1, 1, "last_e")
        stream_total = Signal(self.total_bits)
        m.d.comb += stream_total.eq(header_total)
        # the multipliers of a record: static while its queues pass (the next header waits for
        # its results), so registered
        scale_pivot = Signal(self.total_bits)    # multiplies p_i
        m.d.sync += scale_pivot.eq(Mux(self.counts_mode, 1, stream_total))
        results = []
        for v in range(V):
            reads = [memory.read_port(transparent_for=()) for memory in self.pivot_slots[v]]
            pivot_e = []
            for j, read in enumerate(reads):
                m.d.comb += [read.addr.eq(queue_index), read.en.eq(compare)]
                entry = Signal(entry_layout(R), name=f"pivot{v}_entry{j}", reset_less=True)
                m.d.sync += entry.eq(read.data)
                pivot_e.append(entry)
            scale_stream = Signal(self.total_bits, name=f"scale_stream{v}")  # multiplies q_j
            m.d.sync += scale_stream.eq(Mux(self.counts_mode, 1, pivot_total[v]))

            # matches (one cycle): pivot entry i and streamed entry j hold the same k-mer
            match = [[Signal(name=f"match{v}_{i}_{j}") for j in range(n)] for i in range(n)]
            for i, pe in enumerate(pivot_e):
                for j, se in enumerate(streamed_e):
                    m.d.sync += match[i][j].eq(pe.value.any() & se.value.any()
                                               & (pe.tag == se.tag))
            # products (the same start, a longer pipeline)
            pivot_products, stream_products = [], []
            for i, pe in enumerate(pivot_e):
                product, product_cycles = pipelined_product(m, scale_pivot, pe.value,
                                                            f"p_m{v}_{i}")
                pivot_products.append(product)
            for j, se in enumerate(streamed_e):
                product, _ = pipelined_product(m, scale_stream, se.value, f"q_m{v}_{j}")
                stream_products.append(product)
            match = [[delayed(m, bit, product_cycles - 1, f"match{v}_{i}_{j}")
                      for j, bit in enumerate(row)] for i, row in enumerate(match)]
            # each pivot entry's partner product (at most one match), and the streamed entries
            # that match none
            partners, stream_only, pivot_held = [], [], []
            for i in range(n):
                partner = Signal(len(stream_products[0]), name=f"partner{v}_{i}",
                                 reset_less=True)
                m.d.sync += partner.eq(functools.reduce(
                    operator.or_, (Mux(match[i][j], stream_products[j], 0) for j in range(n))))
                partners.append(partner)
                pivot_held.append(delayed(m, pivot_products[i], 1, f"p_m{v}_{i}_held",
                                          reset_less=True))
            for j in range(n):
                alone = Signal(self.mixture_bits, name=f"alone{v}_{j}", reset_less=True)
                matched = Cat(*(match[i][j] for i in range(n))).any()
                m.d.sync += alone.eq(Mux(matched, 0, stream_products[j]))
                stream_only.append(alone)
            counts = []
            for i in range(n):
                total, add_cycles = pipelined_add(m, pivot_held[i], partners[i],
                                                  f"mix{v}_{i}", self.mixture_bits)
                counts.append(total)
            counts += [delayed(m, alone, add_cycles, f"alone{v}_{j}", reset_less=True)
                       for j, alone in enumerate(stream_only)]
            cycles = product_cycles + 1 + add_cycles
            unit = self.entropy_units[v]
            m.submodules[f"entropy{v}"] = unit
            m.d.comb += [unit.i.valid.eq(delayed(m, valid_e, cycles, f"mix_valid{v}")),
                         unit.i.payload.last.eq(delayed(m, last_e, cycles, f"mix_last{v}"))]
            m.d.comb += [unit.i.payload.counts[c].eq(count) for c, count in enumerate(counts)]
            results.append(unit)

        # finish, when every pivot's entropy is ready: the differences (one cycle), then the
        # clamps and special cases into the result beat (one cycle)
        capture, differenced, result_valid = Signal(), Signal(), Signal()
        all_ready = Cat(*(unit.o.valid for unit in results)).all()
        m.d.comb += capture.eq(waiting & all_ready & ~differenced & ~result_valid)
        m.d.sync += differenced.eq(capture)
        empty_q = Signal()
        m.d.sync += empty_q.eq(stream_total == 0)
        result_words = Signal(p.data_width)
        for v, unit in enumerate(results):
            average = Signal(ENTROPY_BITS + 1, name=f"average{v}")
            m.d.sync += average.eq((pivot_entropy[v] + header_entropy) >> 1)
            empty_p = Signal(name=f"empty_p{v}")
            m.d.sync += empty_p.eq(pivot_total[v] == 0)
            difference = Signal(signed(ENTROPY_BITS + 2), name=f"jsd{v}")
            with m.If(capture):
                m.d.sync += difference.eq(unit.o.payload.entropy - average)
            m.d.comb += unit.o.ready.eq(capture)
            clamped = Mux(difference < 0, 0, Mux(difference > FIXED_ONE, FIXED_ONE, difference))
            special = Mux(empty_p & empty_q, 0, FIXED_ONE)
            value = Mux(self.counts_mode, difference,
                        Mux(empty_p | empty_q, special, clamped))
            with m.If(differenced):
                m.d.sync += result_words[32 * v:32 * v + 32].eq(
                    Mux(v < self.n_pivots, value[:32], 0))
        with m.If(differenced):
            m.d.sync += result_valid.eq(1)
        m.d.comb += [self.o.valid.eq(result_valid), self.o.payload.eq(result_words)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [result_valid.eq(0), waiting.eq(0), records_left.eq(records_left - 1)]
            with m.If(records_left == 1):
                m.d.sync += self.busy.eq(0)
        return m
