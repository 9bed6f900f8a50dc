"""MurmurHash3_x86_32 of a 64-bit key for several seeds at once, one key per cycle (SPEC 2).

The key is hashed as its 8 little-endian bytes: body blocks k1 = key[31:0], k2 = key[63:32],
no tail, length 8. The block mixing ``k = rotl(k * c1, 15) * c2`` does not depend on the seed:
:class:`Murmur3Blocks` computes it, :class:`Murmur3Seeds` finishes the hash of the mixed blocks
for each seed (the two ``h * 5 + n`` steps as shift-adds, the two multiplications of the
finaliser), and :class:`Murmur3Hashes` is the two in a row. A unit that already holds the mixed
blocks of a key (the JSD lane, whose sampler mixed them) feeds them to :class:`Murmur3Seeds`
directly and saves the four block multiplications.

Every multiplication is by a 32-bit constant modulo 2^32 (or fewer bits, see ``hash_bits``) and
is built by :func:`pipelined_times_constant` from 26 x 17-bit partial products (one DSP48E2
each) plus shift-adds for the few-bit corner products, so it takes 2 DSPs where Yosys's own
mapping of ``x * c`` takes 3. Every multiplication takes two pipeline stages: the partial
products are registered (the DSP48E2's own output register in Vivado), then summed, so no path runs from a multiplier through the fabric
adders (a DSP used combinationally, then a 32-bit sum: 5.6 ns in the estimate of
hw/vitis/timing.py, over the F1 clock).
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common.pipeline import delayed
from kmerspec.params import check_int


__all__ = ["MURMUR3_C1", "MURMUR3_C2", "pipelined_times_constant", "Murmur3Blocks",
           "Murmur3Seeds", "Murmur3Hashes", "hashes_layout"]

MURMUR3_C1 = 0xCC9E2D51
MURMUR3_C2 = 0x1B873593
_ROUND_ADD = 0xE6546B64
_FINAL_C1 = 0x85EBCA6B
_FINAL_C2 = 0xC2B2AE35
_KEY_BYTES = 8

# DSP48E2 multiplier ports as unsigned operands (27 x 18 signed)
_DSP_A_BITS = 26
_DSP_B_BITS = 17
# partial products of at most this many result bits are shift-adds: cheaper than a DSP
_SHIFT_ADD_BITS = 9


def _rotl32(value, amount):
    return Cat(value[32 - amount:32], value[:32 - amount])


def _partial_products(value, constant: int, width: int) -> list:
    """The terms of ``(value * constant) mod 2^width``: a ``_DSP_A_BITS`` slice of ``value``
    times a ``_DSP_B_BITS`` slice of ``constant``, each one DSP48E2, unless the partial product
    contributes at most ``_SHIFT_ADD_BITS`` bits, which are summed from shifted copies of
    ``value`` instead; each term is ``width`` bits, shifted into place."""
    constant %= 1 << width
    terms = []
    for a_low in range(0, width, _DSP_A_BITS):
        for b_low in range(0, width - a_low, _DSP_B_BITS):
            keep = width - a_low - b_low
            factor = (constant >> b_low) % (1 << min(_DSP_B_BITS, keep))
            if factor == 0:
                continue
            operand = value[a_low:a_low + min(_DSP_A_BITS, keep)]
            if keep <= _SHIFT_ADD_BITS:
                product = sum(Cat(Const(0, bit), operand[:keep - bit])
                              for bit in range(keep) if factor >> bit & 1)
            else:
                product = operand * factor
            terms.append(Cat(Const(0, a_low + b_low), product[:keep])[:width])
    return terms


def pipelined_times_constant(m, value, constant: int, width: int, name: str) -> Signal:
    """``(value * constant) mod 2^width`` two cycles after ``value``: each partial product in a
    register, then their sum in another."""
    registered = []
    for index, term in enumerate(_partial_products(value, constant, width)):
        product = Signal(width, name=f"{name}_product{index}")
        m.d.sync += product.eq(term)
        registered.append(product)
    total = Signal(width, name=name)
    m.d.sync += total.eq(sum(registered, Const(0, width))[:width])
    return total


def _times_five(value):
    return (value << 2) + value


def hashes_layout(count: int) -> data.StructLayout:
    """The key and its ``count`` 32-bit hashes, in the order of the seeds."""
    return data.StructLayout({"word": 64, "hashes": data.ArrayLayout(32, count)})


class Murmur3Blocks(wiring.Component):
    """The seed-independent block mixing of murmur3_32 of a 64-bit key:
    ``Cat(mix(key[:32]), mix(key[32:]))`` with ``mix(k) = rotl(k * c1 mod 2^32, 15) * c2 mod 2^32``
    (``kmerspec.golden.hashes.murmur3_mixed_blocks``).

    Members
    -------
    i : In(stream.Signature(64, always_ready=True))
    o : Out(stream.Signature(64, always_ready=True))
        The mixed blocks, :attr:`latency` = 4 cycles later; one key per cycle, no backpressure.
    """

    latency = 4

    i: In(stream.Signature(64, always_ready=True))
    o: Out(stream.Signature(64, always_ready=True))

    def elaborate(self, platform):
        m = Module()
        blocks = [self.i.payload[:32], self.i.payload[32:]]
        for stage, constant in enumerate((MURMUR3_C1, MURMUR3_C2)):
            blocks = [pipelined_times_constant(m, block if stage == 0 else _rotl32(block, 15),
                                               constant, 32, f"k{j}_stage{stage}")
                      for j, block in enumerate(blocks)]
        valid = delayed(m, self.i.valid, self.latency, "valid")
        m.d.comb += [self.o.valid.eq(valid), self.o.payload.eq(Cat(*blocks))]
        return m


class Murmur3Seeds(wiring.Component):
    """``murmur3_32(key, seed)`` for every seed of ``seeds``, from the key's mixed blocks.

    Parameters
    ----------
    seeds : sequence of int
        The 32-bit seeds, fixed at build time (one output hash per seed, same order).
    hash_bits : int
        Low bits of each hash that are needed, 1 to 32 (the others are output as 0): below 17,
        the last multiplication is only ``hash_bits + 16`` bits wide (the final ``h ^= h >> 16``
        reads bits up to there).

    Members
    -------
    i : In(stream.Signature(64, always_ready=True))
        The mixed blocks of the key (:class:`Murmur3Blocks`); ``valid`` marks a real key.
    o : Out(stream.Signature(hashes_layout(len(seeds)), always_ready=True))
        The mixed blocks as ``word`` and the hashes, :attr:`latency` = 8 cycles later: the
        input register (the lane feeds the unit from its serializer's select), the two rounds,
        the two multiplications of the finaliser (two cycles each), the last shift.

    One key per cycle, no backpressure.
    """

    latency = 8

    @staticmethod
    def checked_seeds(seeds) -> tuple[int, ...]:
        seeds = tuple(seeds)
        if not seeds:
            raise ValueError("seeds must name at least one seed, not an empty sequence")
        for seed in seeds:
            check_int("seed", seed, 0, (1 << 32) - 1)
        return seeds

    def __init__(self, seeds, hash_bits: int = 32):
        seeds = self.checked_seeds(seeds)
        check_int("hash_bits", hash_bits, 1, 32)
        self._seeds = seeds
        self._hash_bits = hash_bits
        super().__init__({
            "i": In(stream.Signature(64, always_ready=True)),
            "o": Out(stream.Signature(hashes_layout(len(seeds)), always_ready=True)),
        })

    @property
    def seeds(self) -> tuple[int, ...]:
        return self._seeds

    @property
    def hash_bits(self) -> int:
        return self._hash_bits

    def elaborate(self, platform):
        m = Module()
        stage_count = 0

        def stage(value, name, width=32):
            registered = Signal(width, name=name)
            m.d.sync += registered.eq(value)
            return registered

        word, valid = self.i.payload, self.i.valid

        def advance():
            nonlocal word, valid, stage_count
            word = stage(word, f"word{stage_count}", 64)
            valid = stage(valid, f"valid{stage_count}", 1)
            stage_count += 1

        advance()       # the input register
        blocks = [word[:32], word[32:]]
        hashes = []
        for index, seed in enumerate(self._seeds):
            h = stage((_times_five(_rotl32(seed ^ blocks[0], 13)) + _ROUND_ADD)[:32],
                      f"h{index}_b0")
            hashes.append(h)
        second_block = stage(blocks[1], "k1_held")
        advance()
        for index, h in enumerate(hashes):
            h = (_times_five(_rotl32(h ^ second_block, 13)) + _ROUND_ADD)[:32] ^ _KEY_BYTES
            hashes[index] = stage(h ^ (h >> 16), f"h{index}_b1")
        advance()
        hashes = [pipelined_times_constant(m, h, _FINAL_C1, 32, f"h{index}_f1")
                  for index, h in enumerate(hashes)]
        advance()
        advance()
        final_bits = min(32, self._hash_bits + 16)
        hashes = [pipelined_times_constant(m, h ^ (h >> 13), _FINAL_C2, final_bits,
                                           f"h{index}_f2")
                  for index, h in enumerate(hashes)]
        advance()
        advance()
        hashes = [stage((h ^ (h >> 16))[:self._hash_bits], f"h{index}", self._hash_bits)
                  for index, h in enumerate(hashes)]
        advance()
        assert stage_count == self.latency
        m.d.comb += [self.o.valid.eq(valid), self.o.payload.word.eq(word)]
        for index, h in enumerate(hashes):
            m.d.comb += self.o.payload.hashes[index].eq(h)
        return m


class Murmur3Hashes(wiring.Component):
    """``murmur3_32(word, seed)`` for every seed of ``seeds``: :class:`Murmur3Blocks` then
    :class:`Murmur3Seeds`.

    Parameters
    ----------
    seeds : sequence of int
        The 32-bit seeds, fixed at build time (one output hash per seed, same order).

    Members
    -------
    i : In(stream.Signature(64, always_ready=True))
        The key; ``valid`` marks a real key.
    o : Out(stream.Signature(hashes_layout(len(seeds)), always_ready=True))
        The key and its hashes, ``latency`` cycles later.

    Latency :attr:`latency` = 12 cycles, one key per cycle, no backpressure.
    """

    latency = Murmur3Blocks.latency + Murmur3Seeds.latency

    def __init__(self, seeds):
        # the seeds are checked now; their unit is made when this one is elaborated, so a
        # hasher built only for its interface leaves no unit that is never elaborated
        self._seeds = Murmur3Seeds.checked_seeds(seeds)
        super().__init__({
            "i": In(stream.Signature(64, always_ready=True)),
            "o": Out(stream.Signature(hashes_layout(len(self._seeds)), always_ready=True)),
        })

    @property
    def seeds(self) -> tuple[int, ...]:
        return self._seeds

    def elaborate(self, platform):
        m = Module()
        m.submodules.blocks = blocks = Murmur3Blocks()
        m.submodules.finish = finish = Murmur3Seeds(self._seeds)
        wiring.connect(m, wiring.flipped(self.i), blocks.i)
        wiring.connect(m, blocks.o, finish.i)
        word = self.i.payload
        for stage in range(self.latency):
            delayed = Signal(64, name=f"word{stage}")
            m.d.sync += delayed.eq(word)
            word = delayed
        m.d.comb += [
            self.o.valid.eq(finish.o.valid),
            self.o.payload.word.eq(word),
            self.o.payload.hashes.eq(finish.o.payload.hashes),
        ]
        return m
