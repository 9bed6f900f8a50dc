# amaranth: UnusedElaboratable=no
"""The minimum-count prefilter inside the sketch kernel (SPEC 7) in the Amaranth simulator.

* :class:`MinCountStage` alone: beats of up to B k-mers in (the source holds them while
  ``full``), the k-mers that pass, in order, and every Count-Min counter of every row after each
  genome, against kmerspec.golden.mincount; a wire with m = 1.
* :class:`SketchCore` built with the prefilter: chunks in, records out, every register equal to
  the golden model for m = 2 and 3 on reads with errors, N runs and one k-mer repeated every
  cycle, genomes spanning calls, idle input and output backpressure; the Count-Min counters of
  each lane after the run; with m = 1 the records and the beat rate of the plain core; with
  m = 2 the double-buffered genome ends (short genomes, ends while the other bank is pending).
"""

import random

import pytest

from hw.sketch.core import SketchCore
from hw.sketch.lane import SketchLane
from hw.sketch.min_count_stage import MinCountStage
from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.golden.mincount import MinCountParams, min_count_counter, passing_kmers
from kmerspec.kernels.jacc_sketch import Params, run_genomes
from sim.sketch.golden import compare_records, expected_record
from tests.genomes import random_sequence
from tests.simulation import simulate
from tests.test_fast_mincount import reads_text
from tests.test_sketch_core import simulate_calls
from tests.test_sketch_min_count import runs_of



def reads_genomes(seed: int) -> list[list[bytes]]:
    """Adversarial genomes for the prefilter: reads with substitution errors and N (FASTQ and
    FASTA, two files), one k-mer repeated at every position (poly-A), N runs, an empty genome."""
    rng = random.Random(seed)
    genome = random_sequence(rng, 120)
    return [[reads_text(rng, genome, 8, 40, 0.03, fastq=True)],
            [reads_text(rng, genome, 4, 40, 0.03, fastq=False),
             reads_text(rng, genome, 3, 30, 0.0, fastq=True)],
            [b">poly-A, then N runs\n" + b"A" * 90 + b"\n" + b"NNNN".join([genome[:30]] * 4)
             + b"\n"],
            []]


# -- the stage alone ------------------------------------------------------------------------

def stage_run(stage: MinCountStage, m: int, genomes, rng, idle=0.3):
    """Feed each genome's beats (lists of B (word, valid)), honouring ``full`` within the stage's
    reaction budget, wait until ``settled``, read the counters, clear; returns per genome the
    words out of slot 0 and the counters, and whether any other slot ever carried a k-mer."""
    results = []
    stray = []

    async def testbench(ctx):
        ctx.set(stage.min_count, m)
        for beats in genomes:
            out = []
            pending = list(beats)
            full_seen = 0
            while pending or not ctx.get(stage.settled):
                offer = bool(pending) and full_seen == 0 and rng.random() >= idle
                ctx.set(stage.i.valid, offer)
                if offer:
                    beat = pending.pop(0)
                    for slot, (word, valid) in enumerate(beat):
                        ctx.set(stage.i.payload[slot].word, word)
                        ctx.set(stage.i.payload[slot].valid, valid)
                _, _, full, valid, payload = await ctx.tick().sample(stage.full, stage.o.valid,
                                                                      stage.o.payload)
                # the lane's owner reacts within the budget: hold for a while once full is seen
                full_seen = 6 if full else max(0, full_seen - 1)
                if valid and payload[0].valid:
                    out.append(payload[0].word)
                stray.extend(s for s in range(1, len(payload)) if valid and payload[s].valid)
            ctx.set(stage.i.valid, 0)
            counters = [[ctx.get(row.data[i]) for i in range(1 << stage.filter.width_bits)]
                        for row in stage.filter.rows]
            results.append((out, counters))
            ctx.set(stage.clear, 1)
            await ctx.tick()
            ctx.set(stage.clear, 0)
            await ctx.tick().until(stage.settled)

    simulate(stage, testbench)
    return results, stray


def beats_of(words, B, rng):
    """The words in beats of up to B k-mers at random slots (stream order = slot order)."""
    beats, index = [], 0
    while index < len(words):
        valid = [rng.random() < 0.7 for _ in range(B)]
        beat = []
        for slot in range(B):
            if valid[slot] and index < len(words):
                beat.append((words[index], 1))
                index += 1
            else:
                beat.append((rng.getrandbits(62), 0))
        beats.append(beat)
    return beats


@pytest.mark.parametrize("m", [2, 3])
def test_stage_counters_and_order_match_golden(m):
    """Colliding words (16 counters per row), runs of one word (every forwarding distance),
    8-bit saturation not reached, two genomes with the clear between them."""
    B = 4
    params = MinCountParams(min_count=m, mc_depth=2, mc_width_bits=4, mc_counter_bits=3,
                            mc_seed=7)
    rng = random.Random(m)
    pool = [rng.getrandbits(62) for _ in range(30)]
    genomes_words = [runs_of(rng, pool, 300, [1, 1, 2, 5]) for _ in range(2)]
    stage = MinCountStage(params, bytes_per_lane=B, in_flight=8, tail_latency=0)
    got, stray = stage_run(stage, m, [beats_of(w, B, rng) for w in genomes_words], rng)
    assert not stray, "with m > 1 only pipeline 0 gets k-mers"
    for (out, counters), words in zip(got, genomes_words):
        counter = min_count_counter(params)
        assert out == list(passing_kmers(words, params, counter))
        assert counters == counter.counters
    assert max(v for row in got[0][1] for v in row) == 7, "the premise: counters saturate"


def test_stage_is_a_wire_with_m_1():
    B = 3
    stage = MinCountStage(MinCountParams(mc_depth=1, mc_width_bits=3), bytes_per_lane=B,
                          in_flight=4, tail_latency=0)
    rng = random.Random(3)
    beats = beats_of([rng.getrandbits(62) for _ in range(40)], B, rng)

    async def testbench(ctx):
        ctx.set(stage.min_count, 1)
        for beat in beats:
            ctx.set(stage.i.valid, 1)
            for slot, (word, valid) in enumerate(beat):
                ctx.set(stage.i.payload[slot].word, word)
                ctx.set(stage.i.payload[slot].valid, valid)
            # same cycle, unchanged, never full
            assert ctx.get(stage.o.valid) and not ctx.get(stage.full) and ctx.get(stage.settled)
            assert [(ctx.get(stage.o.payload[s].word), ctx.get(stage.o.payload[s].valid))
                    for s in range(B)] == beat
            await ctx.tick()

    simulate(stage, testbench)


# -- the core with the prefilter -------------------------------------------------------------

def filtered_core_run(genomes, geometry, m, seed, idle=0.2, backpressure=0.2):
    core = SketchCore(lanes=geometry.lanes, bytes_per_lane=geometry.bytes_per_lane, k=geometry.k,
                      p=geometry.p, w=geometry.w, prefilter=geometry.prefilter)
    limits = {"max_block_beats": 6, "max_chunk_bytes": 400}
    calls = [(chunk, len(tags)) for chunk, tags in pack_chunks(
        plan_blocks(genomes, geometry, max_block_beats=6), geometry, max_chunk_bytes=400)]
    outputs, stats = simulate_calls(core, calls, geometry.record_bytes, seed=seed, idle=idle,
                                    backpressure=backpressure, settings=[(core.min_count, m)])
    replies = iter(outputs)
    records = run_genomes(genomes, geometry, lambda chunk, count: next(replies), **limits)
    return records, stats, len(calls)


@pytest.mark.parametrize("m", [2, 3])
def test_filtered_core_matches_golden(m):
    geometry = Params(lanes=2, bytes_per_lane=4, k=11, p=8, w=4, mc_depth=2, mc_width_bits=6,
                      mc_counter_bits=3, mc_seed=5)
    genomes = reads_genomes(m) + reads_genomes(m + 10)[:2]
    records, stats, calls = filtered_core_run(genomes, geometry, m, seed=m)
    expected = [expected_record(tag, files, geometry.k, geometry, min_count=m)
                for tag, files in enumerate(genomes)]
    assert expected[0].registers != expected_record(0, genomes[0], geometry.k, geometry).registers
    compare_records(records, expected)
    assert calls > 1, "genomes should span calls"
    # sequence beats carry up to B k-mers, the filter takes one per cycle: the input waits
    assert stats["taken"] < stats["offered_streaming"]


def test_filtered_core_with_m_1_is_the_plain_core():
    """A kernel built with the prefilter and run with m = 1: the same records, one beat per
    cycle while no genome ends (the stage is a wire)."""
    geometry = Params(lanes=2, bytes_per_lane=4, k=11, p=8, w=4, mc_depth=2, mc_width_bits=6)
    genomes = reads_genomes(1)
    records, stats, _ = filtered_core_run(genomes, geometry, 1, seed=1, backpressure=0.0)
    compare_records(records, [expected_record(tag, files, geometry.k, geometry)
                              for tag, files in enumerate(genomes)])
    assert stats["taken"] == stats["offered_streaming"]


def test_lane_reaction_budget():
    """The FIFO has room for the beats the front end still delivers after ``full``."""
    lane = SketchLane(bytes_per_lane=8, k=31, p=8, w=4, prefilter=MinCountParams(mc_depth=1))
    stage = lane.stage
    assert stage.fifo_depth - stage._in_flight >= 4


@pytest.mark.parametrize("built,message", [
    (Params(), "jacc_sketch: built without the minimum-count prefilter (mc_depth=0), asked for "
               "mc_depth=4 (--min-count above 1)"),
    (Params(mc_depth=4, mc_width_bits=16, mc_counter_bits=8),
     "jacc_sketch: built with mc_width_bits=16, asked for 20"),
])
def test_host_refuses_a_kernel_built_otherwise(built, message):
    """host/control.py's identity check, as a card's driver runs it before the first call, for
    --min-count 2 with the CLI's Count-Min (4 x 2^20 x 8 bits)."""
    from host.control import KernelError, check_identity
    asked = Params().with_prefilter(MinCountParams(min_count=2))
    registers = dict(zip(built.desc.status_map().identity_offsets, built.identity_words()))
    with pytest.raises(KernelError) as error:
        check_identity(asked, lambda offset: registers.get(offset, 0))
    assert str(error.value) == message
    assert Params().with_prefilter(MinCountParams()) == Params(), "m = 1 asks for no filter"


def test_filtered_core_genome_ends_with_double_buffering():
    """m = 2 on one lane with genomes of 0, 1 and a few beats and of about the bank turnaround
    (ends on consecutive beats of the lane, ends while the other bank is still pending): every
    register equals the golden model, so no k-mer of a genome reached the other bank and the
    Count-Min was cleared between genomes (each genome's second half repeats its first). Every
    genome end stops the input until its lane has settled: at least ``insert_latency`` + 1
    cycles, once per genome."""
    geometry = Params(lanes=1, bytes_per_lane=8, k=11, p=8, w=4, mc_depth=2, mc_width_bits=5,
                      mc_counter_bits=3, mc_seed=9)
    core = SketchCore(lanes=1, bytes_per_lane=8, k=11, p=8, w=4, prefilter=geometry.prefilter)
    turnaround = core.bank_turnaround
    rng = random.Random(12)

    def genome(data_beats):
        if not data_beats:
            return [b""]
        half = random_sequence(rng, (8 * data_beats - 3) // 2)
        return [b">g\n" + (half + half + b"A")[:8 * data_beats - 3]]

    genomes = [genome(n) for n in [12, 0, 0, 1, 1, 5, turnaround - 2, turnaround, 2, 0]]
    calls = [(chunk, len(tags)) for chunk, tags in pack_chunks(
        plan_blocks(genomes, geometry, max_block_beats=1024), geometry, max_chunk_bytes=1 << 20)]
    assert len(calls) == 1
    outputs, stats = simulate_calls(core, calls, geometry.record_bytes, seed=2, idle=0.0,
                                    backpressure=0.0, settings=[(core.min_count, 2)])
    replies = iter(outputs)
    records = run_genomes(genomes, geometry, lambda chunk, count: next(replies),
                          max_block_beats=1024, max_chunk_bytes=1 << 20)
    compare_records(records, [expected_record(tag, files, geometry.k, geometry, min_count=2)
                              for tag, files in enumerate(genomes)])
    _, *stops = stats["stops"]   # the first stop is the clear after reset
    assert len(stops) == len(genomes), stops
    assert min(stops) >= core.insert_latency + 1, stops
