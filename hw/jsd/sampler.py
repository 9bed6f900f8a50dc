"""k-mer sampler: keeps a k-mer iff murmur3_32(x, sample_seed) has its low s bits zero (SPEC 4).

Works on beats of up to B k-mers (one k-mer buffer beat): B hash pipelines in parallel, so the
sampler never limits the front end. Each k-mer's murmur3 block mixing (seed-independent) is
passed on in place of the k-mer: the lane's Count-Min hashes start from it. Only the low s bits
of the sampling hash are computed. With s = 0 every k-mer is kept and there is no sampling hash.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from kmerspec.golden.jsd import SAMPLE_SEED
from kmerspec.params import check_int

from .murmur3 import Murmur3Blocks, Murmur3Seeds

__all__ = ["kmer_beat_layout", "Sampler"]


def kmer_beat_layout(kmers_per_beat: int) -> data.StructLayout:
    """Up to ``kmers_per_beat`` k-mer words in stream order, a valid flag per word, and ``last``
    (this beat ends the genome; it may hold no k-mer)."""
    return data.StructLayout({
        "words": data.ArrayLayout(64, kmers_per_beat),
        "valid": kmers_per_beat,
        "last": 1,
    })


class Sampler(wiring.Component):
    """Clears the valid flag of every k-mer that is not sampled.

    Parameters
    ----------
    kmers_per_beat : int
        B, 1 to 64.
    s : int
        Sampling bits, 0 to 32: one k-mer in 2^s is kept on average.
    sample_seed : int
        32-bit seed of the sampling hash.

    Members
    -------
    i : In(stream.Signature(kmer_beat_layout(B), always_ready=True))
    o : Out(stream.Signature(kmer_beat_layout(B), always_ready=True))
        The same beat ``latency`` cycles later, each word replaced by its murmur3 mixed blocks
        (``kmerspec.golden.hashes.murmur3_mixed_blocks``), ``valid`` flags of dropped k-mers
        cleared.

    Latency :attr:`latency` = 12 cycles, one beat per cycle, no backpressure.
    """

    latency = Murmur3Blocks.latency + Murmur3Seeds.latency

    def __init__(self, kmers_per_beat: int = 8, s: int = 10, sample_seed: int = SAMPLE_SEED):
        check_int("kmers_per_beat", kmers_per_beat, 1, 64)
        check_int("s", s, 0, 32)
        check_int("sample_seed", sample_seed, 0, (1 << 32) - 1)
        self._kmers_per_beat = kmers_per_beat
        self._s = s
        self._sample_seed = sample_seed
        super().__init__({
            "i": In(stream.Signature(kmer_beat_layout(kmers_per_beat), always_ready=True)),
            "o": Out(stream.Signature(kmer_beat_layout(kmers_per_beat), always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        keep = []
        for slot in range(self._kmers_per_beat):
            blocks = Murmur3Blocks()
            m.submodules[f"blocks{slot}"] = blocks
            m.d.comb += [
                blocks.i.valid.eq(self.i.valid & self.i.payload.valid[slot]),
                blocks.i.payload.eq(self.i.payload.words[slot]),
            ]
            if self._s:
                hasher = Murmur3Seeds([self._sample_seed], hash_bits=self._s)
                m.submodules[f"hash{slot}"] = hasher
                wiring.connect(m, blocks.o, hasher.i)
                keep.append(hasher.o.valid & (hasher.o.payload.hashes[0][:self._s] == 0))
                m.d.comb += self.o.payload.words[slot].eq(hasher.o.payload.word)
            else:
                word, kept = blocks.o.payload, blocks.o.valid
                for stage in range(Murmur3Seeds.latency):
                    next_word = Signal(64, name=f"word{slot}_{stage}")
                    next_kept = Signal(name=f"kept{slot}_{stage}")
                    m.d.sync += [next_word.eq(word), next_kept.eq(kept)]
                    word, kept = next_word, next_kept
                keep.append(kept)
                m.d.comb += self.o.payload.words[slot].eq(word)
        valid, last = self.i.valid, self.i.payload.last
        for index in range(self.latency):
            delayed_valid = Signal(name=f"valid{index}")
            delayed_last = Signal(name=f"last{index}")
            m.d.sync += [delayed_valid.eq(valid), delayed_last.eq(last)]
            valid, last = delayed_valid, delayed_last
        m.d.comb += [
            self.o.valid.eq(valid),
            self.o.payload.last.eq(last),
            self.o.payload.valid.eq(Cat(*keep)),
        ]
        return m
