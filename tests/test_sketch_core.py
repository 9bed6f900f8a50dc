# amaranth: UnusedElaboratable=no
"""SketchCore in the Amaranth simulator: chunks in, records out, against the golden model."""

import random

import pytest

from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels.jacc_sketch import Params, run_genomes
from hw.sketch.core import SketchCore
from sim.sketch.golden import compare_records, expected_record, regression_genomes
from tests.simulation import simulate



def simulate_calls(core: SketchCore, calls, record_bytes, seed, idle=0.2, backpressure=0.2,
                   settings=(), at_end=None, background=()):
    """Run kernel calls ``(chunk bytes, record count)`` one after the other through one core
    (its state persists between calls, as between kernel runs), with the inputs ``settings``
    ((signal, value) pairs, such as the prefilter's min_count) set first; return each call's
    output bytes and throughput counters. ``at_end(ctx)``, if given, runs after the last call's
    records; ``background`` testbenches run beside it."""
    rng = random.Random(seed)
    bus_bytes = core.bus_bits // 8
    outputs = []
    stats = {"offered_streaming": 0, "taken": 0, "ending_cycles": 0, "stops": []}

    async def testbench(ctx):
        for signal, value in settings:
            ctx.set(signal, value)
        for chunk, records in calls:
            beats = [int.from_bytes(chunk[i:i + bus_bytes], "little")
                     for i in range(0, len(chunk), bus_bytes)]
            out = bytearray()
            index = 0
            while index < len(beats) or len(out) < records * record_bytes:
                offer = index < len(beats) and rng.random() >= idle
                ctx.set(core.i.valid, offer)
                ctx.set(core.i.payload, beats[index] if offer else 0)
                ctx.set(core.o.ready, rng.random() >= backpressure)
                _, _, taken, out_valid, out_ready, payload, ending = await ctx.tick().sample(
                    core.i.ready, core.o.valid, core.o.ready, core.o.payload, core.stalled)
                taken = taken and offer
                if ending and not stats["ending_cycles"]:
                    stats["stops"].append(0)
                if ending:
                    stats["stops"][-1] += 1
                stats["ending_cycles"] = ending
                stats["offered_streaming"] += offer and not ending
                stats["taken"] += taken
                index += taken
                if out_valid and out_ready:
                    out += payload.to_bytes(bus_bytes, "little")
            ctx.set(core.i.valid, 0)
            outputs.append(bytes(out))
        if at_end:
            await at_end(ctx)

    simulate(core, testbench, background=background)
    return outputs, stats


def sketch_with_core(genomes, geometry, k, seed, max_block_beats=6, max_chunk_bytes=400,
                     idle=0.2, backpressure=0.2, at_end=None, watch=None):
    """Sketch ``genomes`` through :func:`run_genomes` with the simulated core as the kernel.

    The simulator cannot be called back from ``run_genomes``, so the calls are simulated first
    (on one core instance, in order) and their outputs replayed to ``run_genomes``. ``watch(ctx,
    core)``, if given, runs beside them (a background testbench)."""
    core = SketchCore(lanes=geometry.lanes, bytes_per_lane=geometry.bytes_per_lane, k=k,
                      p=geometry.p, w=geometry.w)
    calls = [(chunk, len(tags)) for chunk, tags in pack_chunks(
        plan_blocks(genomes, geometry, max_block_beats=max_block_beats), geometry,
        max_chunk_bytes=max_chunk_bytes)]
    async def watching(ctx):
        await watch(ctx, core)

    outputs, stats = simulate_calls(core, calls, geometry.record_bytes, seed, idle, backpressure,
                                    at_end=at_end and (lambda ctx: at_end(ctx, core)),
                                    background=[watching] if watch else ())
    replies = iter(outputs)
    records = run_genomes(genomes, geometry, lambda chunk, count: next(replies),
                          max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes)
    stats["insert_latency"] = core.insert_latency
    return records, stats, len(calls)


@pytest.mark.parametrize("lanes,bytes_per_lane,k", [(2, 4, 7), (1, 8, 31)])
def test_core_matches_golden(lanes, bytes_per_lane, k):
    geometry = Params(lanes=lanes, bytes_per_lane=bytes_per_lane, p=8, w=4)
    genomes = regression_genomes(seed=lanes, count=6, scale=150)
    records, stats, calls = sketch_with_core(genomes, geometry, k, seed=lanes)
    assert calls > 1, "the genomes should span several kernel calls"
    compare_records(records, [expected_record(tag, files, k, geometry)
                              for tag, files in enumerate(genomes)])
    # the input stops only while a genome ends: every beat offered otherwise is taken
    assert stats["taken"] == stats["offered_streaming"] > 0


def genome_of_beats(data_beats, bytes_per_lane=8):
    """A one-file genome that fills exactly ``data_beats`` beats of its lane (0: empty)."""
    if not data_beats:
        return [b""]
    return [b">g\n" + b"ACGTTGCA"[:bytes_per_lane - 3] + b"ACGTTGCA" * (data_beats - 1)]


def test_core_genome_end_stalls_only_until_the_other_bank_is_drained():
    """One lane, no output backpressure: a genome end takes no cycle of the input, unless the
    lane's other bank still holds the previous genome, waiting for or in its drain; then the
    input stops until that drain has been issued, exactly ``bank_turnaround`` cycles after the
    previous end. Covers empty genomes and one-beat genomes (ends on consecutive beats of the
    same lane: a block is one control beat, then the data beats)."""
    geometry = Params(lanes=1, bytes_per_lane=8, p=8, w=4)
    core = SketchCore(lanes=1, bytes_per_lane=8, k=31, p=8, w=4)
    turnaround = core.bank_turnaround
    data_beats = [40, 0, 0, 1, 1, 10, turnaround - 2, turnaround - 1, turnaround, 3 * turnaround,
                  turnaround - 1, 0]
    genomes = [genome_of_beats(n) for n in data_beats]
    records, stats, calls = sketch_with_core(genomes, geometry, 31, seed=0, max_block_beats=1024,
                                             max_chunk_bytes=1 << 20, idle=0.0,
                                             backpressure=0.0)
    assert calls == 1
    compare_records(records, [expected_record(tag, files, 31, geometry)
                              for tag, files in enumerate(genomes)])
    words = geometry.registers // 16
    # the first stop is the clear after reset (every sketch word once, plus the drain latency)
    clear, *stops = stats["stops"]
    assert words <= clear <= words + 8, clear
    # a genome's block is its control beat and its data beats; its end waits for the previous
    # genome's bank for the rest of the turnaround
    expected = [turnaround - (1 + n) for n in data_beats[1:] if 1 + n < turnaround]
    assert stops == expected, (stops, expected)


def bank_words(ctx, core):
    """Every word of both banks of every partial sketch of every lane."""
    return [ctx.get(bank.data[address]) for lane in core._lane_units for sketch in lane._sketches
            for bank in sketch.banks for address in range(bank.depth)]


def test_core_bank_switches_in_every_lane():
    """Short, one-beat and empty genomes in two lanes (ends on the same beat and on different
    beats, ends while the other bank waits for or is in its drain), idle input and output
    backpressure: every record equals the golden model, and once the last record is out both
    banks of every partial sketch are clear."""
    geometry = Params(lanes=2, bytes_per_lane=4, p=8, w=4)
    seed = 1
    rng = random.Random(seed)
    genomes = []
    for _ in range(20):
        data_beats = rng.choice([0, 0, 1, 1, 2, 3, 8, 20, 60])
        genomes.append(genome_of_beats(data_beats, 4) if data_beats < 3 else
                       [b">r\n" + bytes(rng.choice(b"ACGT") for _ in range(4 * data_beats - 3))])
    genomes.append([b">polyA\n" + b"A" * 300])   # the same k-mer every cycle ...
    genomes.append([b">polyA again\n" + b"A" * 30])   # ... in the next genome, the other bank
    clean = []

    async def at_end(ctx, core):
        await ctx.tick().repeat(4)
        clean.append(not any(bank_words(ctx, core)) and not ctx.get(core.ending_genome))

    records, stats, _ = sketch_with_core(genomes, geometry, 7, seed=seed, max_block_beats=4,
                                         max_chunk_bytes=1 << 20, at_end=at_end)
    compare_records(records, [expected_record(tag, files, 7, geometry)
                              for tag, files in enumerate(genomes)])
    assert clean == [True]
    assert stats["taken"] == stats["offered_streaming"] > 0
    assert len(stats["stops"]) > 1, "some genome end should wait for a drain"


def test_drain_last_is_the_address_compare_in_every_cycle(seed=0):
    """``drain_last``, the register that replaced the drain's ``drain_addr == 2^(p-4) - 1``
    (the compare was the JACC sketch kernel's longest path, docs/timing.md), equals that compare
    in every cycle: through the clear after reset, drains in both lanes one after the other,
    genome ends that wait for a drain, idle input and output backpressure. So the core runs cycle
    for cycle as with the compare. Fails on the compare registered naively (one cycle late: the
    drain reads one word more, 'drain_last 0 at address 15')."""
    geometry = Params(lanes=2, bytes_per_lane=4, p=8, w=4)
    rng = random.Random(seed)
    genomes = [[b">r\n" + bytes(rng.choice(b"ACGT") for _ in range(rng.choice([1, 5, 30, 200])))]
               for _ in range(48)]
    last_word = geometry.registers // 16 - 1
    seen = {"cycles": 0, "last": 0}

    async def watch(ctx, core):
        async for _, _, address, last in ctx.tick().sample(core._drain_addr, core._drain_last):
            assert last == (address == last_word), \
                f"cycle {seen['cycles']}: drain_last {last} at address {address}"
            seen["cycles"] += 1
            seen["last"] += last

    records, stats, _ = sketch_with_core(genomes, geometry, 7, seed=seed, max_block_beats=4,
                                         max_chunk_bytes=1 << 20, watch=watch)
    compare_records(records, [expected_record(tag, files, 7, geometry)
                              for tag, files in enumerate(genomes)])
    # the clear after reset and one drain per genome each end on the last word
    assert seen["last"] >= 1 + len(genomes) and seen["cycles"] > 2000, seen


@pytest.mark.parametrize("both_banks", [False, True])
def test_reset_forgets_a_cut_off_genome(both_banks):
    """A reset in the middle of a genome (an aborted call, ap_rst_n, a FRESH start) leaves
    nothing behind: after the core's clear every word of both banks of every partial sketch of
    every lane is 0 and the record counter is back at 0, and the next genomes give the golden
    records. ``both_banks``: the reset comes while a lane's ended genome is still in one bank
    (waiting for or in its drain) and its next genome has begun in the other."""
    from amaranth.hdl import Module, ResetInserter, Signal

    if both_banks:
        geometry = Params(lanes=1, bytes_per_lane=8, p=10, w=4)
        first_bases, bases, max_block_beats, max_chunk_bytes = 45, 240, 4, 15 * 8
    else:
        geometry = Params(lanes=2, bytes_per_lane=4, p=8, w=4)
        first_bases, bases, max_block_beats, max_chunk_bytes = 600, 600, 32, 300
    k = 21
    core = SketchCore(lanes=geometry.lanes, bytes_per_lane=geometry.bytes_per_lane, k=k,
                      p=geometry.p, w=geometry.w)
    reset = Signal()
    top = Module()
    top.submodules.core = ResetInserter({"sync": reset})(core)
    bus_bytes = core.bus_bits // 8
    rng = random.Random(9)
    genomes = [[b">g%d\n" % index + bytes(rng.choice(b"ACGT")
                                           for _ in range(bases if index else first_bases))]
               for index in range(3)]
    calls = list(pack_chunks(plan_blocks(genomes, geometry, max_block_beats=max_block_beats),
                             geometry, max_chunk_bytes=max_chunk_bytes))
    cut, cut_tags = calls[0]
    assert cut_tags == ([0] if both_banks else []), "the first chunk is cut off"
    sketches = [sketch for lane in core._lane_units for sketch in lane._sketches]
    outputs = []

    async def run_chunk(ctx, chunk, records):
        beats = [int.from_bytes(chunk[i:i + bus_bytes], "little")
                 for i in range(0, len(chunk), bus_bytes)]
        out, index = bytearray(), 0
        ctx.set(core.o.ready, 1)
        while index < len(beats) or len(out) < records * geometry.record_bytes:
            ctx.set(core.i.valid, index < len(beats))
            ctx.set(core.i.payload, beats[index] if index < len(beats) else 0)
            _, _, taken, valid, payload = await ctx.tick().sample(
                core.i.ready, core.o.valid, core.o.payload)
            index += taken and index < len(beats)
            if valid:
                out += payload.to_bytes(bus_bytes, "little")
        ctx.set(core.i.valid, 0)
        return bytes(out)

    def words(ctx, banks=(0, 1)):
        return [ctx.get(sketch.banks[bank].data[i]) for sketch in sketches for bank in banks
                for i in range(geometry.registers // 16)]

    async def testbench(ctx):
        await run_chunk(ctx, cut, 0)
        if both_banks:
            # the next genome's first k-mers reach bank 1 while bank 0 is still being drained
            for _ in range(2 * core.insert_latency):
                if any(words(ctx, [0])) and any(words(ctx, [1])):
                    break
                await ctx.tick()
            assert any(words(ctx, [0])) and any(words(ctx, [1])), "both banks should hold data"
        else:
            await ctx.tick().repeat(core.insert_latency + 4)
        assert any(words(ctx)), "the cut-off genome should be in the partial sketches"
        ctx.set(reset, 1)
        await ctx.tick()
        ctx.set(reset, 0)
        await ctx.tick().repeat(geometry.registers // 16 + 16)
        assert not any(words(ctx)), "a partial sketch survived the reset"
        assert ctx.get(core.records) == 0 and not ctx.get(core.ending_genome)
        for chunk, tags in calls:
            outputs.append(await run_chunk(ctx, chunk, len(tags)))

    simulate(top, testbench)
    replies = iter(outputs)
    records = run_genomes(genomes, geometry, lambda chunk, count: next(replies),
                          max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes)
    compare_records(records, [expected_record(tag, files, k, geometry)
                              for tag, files in enumerate(genomes)])
