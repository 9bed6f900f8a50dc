"""MurmurHash3_x86_32 of a 64-bit key for several seeds at once, one key per cycle (SPEC 2).

The key is hashed as its 8 little-endian bytes: body blocks k1 = key[31:0], k2 = key[63:32],
no tail, length 8. The block mixing ``k = rotl(k * c1, 15) * c2`` does not depend on the seed,
so it is computed once for both blocks and shared by every seed; each seed then costs the two
``h * 5 + n`` steps (shift-add, no multiplier) and the two multiplications of the finaliser.
Every multiplication by a constant gets its own pipeline stage.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.params import check_int


__all__ = ["MURMUR3_C1", "MURMUR3_C2", "Murmur3Hashes", "hashes_layout"]

MURMUR3_C1 = 0xCC9E2D51
MURMUR3_C2 = 0x1B873593
_ROUND_ADD = 0xE6546B64
_FINAL_C1 = 0x85EBCA6B
_FINAL_C2 = 0xC2B2AE35
_KEY_BYTES = 8


def _rotl32(value, amount):
    return Cat(value[32 - amount:32], value[:32 - amount])


def hashes_layout(count: int) -> data.StructLayout:
    """The key and its ``count`` 32-bit hashes, in the order of the seeds."""
    return data.StructLayout({"word": 64, "hashes": data.ArrayLayout(32, count)})


class Murmur3Hashes(wiring.Component):
    """``murmur3_32(word, seed)`` for every seed of ``seeds``.

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

    Latency :attr:`latency` = 7 cycles, one key per cycle, no backpressure.
    """

    latency = 7

    def __init__(self, seeds):
        seeds = tuple(seeds)
        if not seeds:
            raise ValueError("seeds must name at least one seed, not an empty sequence")
        for seed in seeds:
            check_int("seed", seed, 0, (1 << 32) - 1)
        self._seeds = seeds
        super().__init__({
            "i": In(stream.Signature(64, always_ready=True)),
            "o": Out(stream.Signature(hashes_layout(len(seeds)), always_ready=True)),
        })

    @property
    def seeds(self) -> tuple[int, ...]:
        return self._seeds

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

        blocks = [word[:32], word[32:]]
        blocks = [stage((block * MURMUR3_C1)[:32], f"k{j}_c1") for j, block in enumerate(blocks)]
        advance()
        blocks = [stage((_rotl32(block, 15) * MURMUR3_C2)[:32], f"k{j}_c2")
                  for j, block in enumerate(blocks)]
        advance()
        hashes = []
        for index, seed in enumerate(self._seeds):
            h = stage((_rotl32(seed ^ blocks[0], 13) * 5 + _ROUND_ADD)[:32], f"h{index}_b0")
            hashes.append(h)
        blocks = [stage(blocks[1], "k1_held")]
        advance()
        for index, h in enumerate(hashes):
            h = (_rotl32(h ^ blocks[0], 13) * 5 + _ROUND_ADD)[:32] ^ _KEY_BYTES
            hashes[index] = stage(h ^ (h >> 16), f"h{index}_b1")
        advance()
        hashes = [stage((h * _FINAL_C1)[:32], f"h{index}_f1") for index, h in enumerate(hashes)]
        advance()
        hashes = [stage(((h ^ (h >> 13)) * _FINAL_C2)[:32], f"h{index}_f2")
                  for index, h in enumerate(hashes)]
        advance()
        hashes = [stage(h ^ (h >> 16), f"h{index}") for index, h in enumerate(hashes)]
        advance()
        assert stage_count == self.latency
        m.d.comb += [
            self.o.valid.eq(valid),
            self.o.payload.word.eq(word),
            self.o.payload.hashes.eq(Cat(*hashes)),
        ]
        return m
