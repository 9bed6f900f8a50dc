# amaranth: UnusedElaboratable=no
"""Queue-builder core (chunk beats -> PQA records) in the Amaranth simulator vs the golden model,
including the Count-Min counters of every lane at every genome end."""

import dataclasses
import random

import pytest

from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels.jsd_builder import Params, unpack_records
from hw.jsd.builder import QueueBuilderCore, entropy_unit_args
from hw.jsd.entropy import entropy_finish_cycles
from sim.jsd.golden import compare_records, expected_record, expected_state
from tests.genomes import random_genome_bytes
from tests.simulation import collect_beats, send_beats, simulate



def run_core(params: Params, genomes, update="cu", stall_probability=0.2, seed=0,
             max_block_beats=6, probes=()):
    """Run every genome through the core; return (records, Count-Min snapshots per tag,
    input beats, cycles). ``probes``: functions of the core returning more background
    processes."""
    rng = random.Random(seed)
    geometry = params
    blocks = plan_blocks(genomes, geometry, max_block_beats=max_block_beats)
    chunks = pack_chunks(blocks, geometry)
    dut = QueueBuilderCore(params)
    bus_bytes = geometry.bus_bytes
    output = []
    snapshots = []
    stats = {}

    async def feeder(ctx):
        ctx.set(dut.plain_update, update == "cm")
        beats = [chunk[i:i + bus_bytes] for chunk, _ in chunks
                 for i in range(0, len(chunk), bus_bytes)]
        stats["beats"] = len(beats)
        stats["input_cycles"] = await send_beats(
            ctx, dut.i, [int.from_bytes(beat, "little") for beat in beats])
        while not ctx.get(dut.idle):
            await ctx.tick()

    async def collector(ctx):
        await collect_beats(ctx, dut.o, output, stall_probability, rng)

    async def countmin_probe(ctx):
        # at each genome end the retiring bank's counters are complete until its clear starts;
        # the clear of every bank in the first cycle is the reset's (no genome ended)
        countmin = dut.countmin
        first = True
        async for _, _, clearing in ctx.tick().sample(countmin.clear):
            if first:
                assert clearing == (1 << countmin.banks) - 1, "the reset must clear every bank"
                first = False
                continue
            for bank in range(countmin.banks):
                if clearing >> bank & 1:
                    snapshots.append([[ctx.get(row.data[i]) for i in range(1 << params.cw)]
                                      for row in countmin.bank_rows[bank]])

    simulate(dut, feeder,
             background=(collector, countmin_probe, *(probe(dut) for probe in probes)))
    output = b"".join(payload.to_bytes(bus_bytes, "little") for payload in output)
    count = len(output) // geometry.record_bytes
    assert len(output) == count * geometry.record_bytes
    return unpack_records(bytes(output), count, geometry), snapshots, stats


def check_core(params: Params, genomes, update="cu", **kwargs):
    records, snapshots, stats = run_core(params, genomes, update, **kwargs)
    golden = dataclasses.replace(params.algorithm, update=update)
    by_tag = {record.tag: record for record in records}
    assert sorted(by_tag) == list(range(len(genomes)))
    compare_records([by_tag[t] for t in range(len(genomes))],
                    [expected_record(t, files, golden) for t, files in enumerate(genomes)])
    # snapshots are in record order (one per genome end, same lane order as the records)
    expected_counters = sorted(expected_state(files, golden).countmin.counters
                               for files in genomes)
    assert sorted(snapshots) == expected_counters
    return stats


def small_genomes(seed, count, length):
    rng = random.Random(seed)
    genomes = [[random_genome_bytes(rng, records=2, length=length, fastq=rng.random() < 0.3)]
               for _ in range(count)]
    genomes.append([b">repeat\n" + b"ACGTTGCA" * 40 + b"\n", b">second file\nACGTTGCAAC\n"])
    genomes.append([b""])
    return genomes


@pytest.mark.parametrize("update,banks", [("cu", 1), ("cm", 1), ("cu", 2)])
def test_builder_core_sampled(update, banks):
    params = Params(lanes=2, bytes_per_lane=8, k=7, s=1, d=3, cw=4, R=3, n=2, fifo_depth=40,
                    record_banks=banks)
    check_core(params, small_genomes(1, 4, 150), update)


def test_builder_core_every_kmer_with_backpressure():
    """s = 0: up to 8 k-mers per beat per lane against one insertion per cycle: the FIFO and
    the hold must lose nothing; 4 entries per queue, a queue spans two 128-bit beats."""
    params = Params(lanes=2, bytes_per_lane=8, k=5, s=0, d=2, cw=3, R=2, n=4, fifo_depth=40)
    check_core(params, small_genomes(2, 3, 120), stall_probability=0.4)


def test_output_fifo_full_under_backpressure(monkeypatch):
    """A 4-beat output FIFO against an output that stalls 80 % of cycles: the FIFO fills, its
    registered "room" holds the records (and the PQA drain behind them) and no beat is lost or
    doubled."""
    monkeypatch.setattr(QueueBuilderCore, "OUTPUT_FIFO_DEPTH", 4)
    params = Params(lanes=2, bytes_per_lane=8, k=7, s=1, d=3, cw=4, R=3, n=2, fifo_depth=40,
                    record_banks=2)
    check_core(params, small_genomes(3, 3, 150), stall_probability=0.8)


@pytest.mark.parametrize("banks", [1, 2])
def test_lanes_share_the_back_end(banks):
    """Four lanes (4 or 8 banks behind one Count-Min pipeline and one PQA network) fed the same
    genomes at once: the round-robin serializer interleaves the same k-mers of different lanes
    cycle by cycle, so a forward across banks would merge their counters or queues."""
    params = Params(lanes=4, bytes_per_lane=4, k=7, s=0, d=3, cw=4, R=3, n=2, fifo_depth=40,
                    record_banks=banks)
    repeat = [b">r\n" + b"ACGTTGCA" * 12 + b"\n"]
    check_core(params, [repeat] * 8 + small_genomes(5, 3, 60), stall_probability=0.3)


def test_builder_rejects_a_fifo_shallower_than_the_front_end():
    with pytest.raises(ValueError, match="fifo_depth"):
        QueueBuilderCore(Params(lanes=2, bytes_per_lane=8, fifo_depth=8))


@pytest.mark.parametrize("banks", [1, 2])
def test_builder_core_one_beat_per_cycle_when_sampling_is_sparse(banks):
    """s = 6: about one sampled k-mer in 8 beats per lane, so the lanes never fill their FIFOs
    and the core takes one chunk beat per cycle; with two banks the genomes are longer than a
    bank's retire time, so their ends cost nothing; with one each costs its lane the pipeline
    flush, 2^R queue beats and the trailer. The FIFO holds 11 beats beyond the front end's beats
    in flight, so with one bank the stops reach the input."""
    params = Params(lanes=2, bytes_per_lane=8, k=11, s=6, d=2, cw=4, R=2, n=2, fifo_depth=64,
                    record_banks=banks)
    core = QueueBuilderCore(params)
    lane = core.lane_units[0]
    params = dataclasses.replace(params, fifo_depth=lane.in_flight + 11)
    genomes = short_genomes(4, 1500, seed=6)
    stats = check_core(params, genomes, stall_probability=0.0, max_block_beats=64)
    if banks == 2:
        assert stats["input_cycles"] == stats["beats"], stats
    else:
        per_genome_end = lane.flush_cycles + (1 << params.R) + 1 + 8
        assert stats["beats"] < stats["input_cycles"], stats
        assert stats["input_cycles"] <= stats["beats"] + len(genomes) * per_genome_end, stats


@pytest.mark.parametrize("banks", [1, 2])
def test_reset_forgets_a_cut_off_genome(banks):
    """A reset in the middle of a genome (an aborted call, ap_rst_n, a FRESH start) leaves
    nothing behind: every bank of every lane drains and clears, the lanes take no k-mer until
    their active bank is clean (``reset_clear_cycles`` after the reset, exactly), the core is idle
    within its quiet count meanwhile, every Count-Min counter and every PQA entry of every lane is
    0 when the lanes accept again, and the next genomes give the golden records."""
    from amaranth.hdl import Module, ResetInserter, Signal

    params = Params(lanes=2, bytes_per_lane=8, k=7, s=1, d=3, cw=4, R=3, n=2, fifo_depth=40,
                    record_banks=banks)
    genomes = small_genomes(3, 3, 400)[:3]
    dut = QueueBuilderCore(params)
    reset = Signal()
    top = Module()
    top.submodules.core = ResetInserter({"sync": reset})(dut)
    chunks = list(pack_chunks(plan_blocks(genomes, params, max_block_beats=6), params,
                              max_chunk_bytes=128))
    cut, cut_tags = chunks[0]
    assert not cut_tags, "the first chunk must end no genome (it is cut off)"
    bus_bytes = params.bus_bytes
    output = []

    def memories(ctx):
        values = []
        for rows, slots in zip(dut.countmin.bank_rows, dut.pqa.bank_slots):
            for row in rows:
                values += [ctx.get(row.data[i]) for i in range(1 << params.cw)]
            for slot in slots:   # an entry is empty when not occupied (its tag, value stale)
                values += [ctx.get(slot.data[i]).occupied for i in range(1 << params.R)]
        return values

    def beats(chunk):
        return [int.from_bytes(chunk[i:i + bus_bytes], "little")
                for i in range(0, len(chunk), bus_bytes)]

    async def feeder(ctx):
        await send_beats(ctx, dut.i, beats(cut))
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(64)
        assert any(memories(ctx)), "the cut-off genome should be in the lane memories"
        ctx.set(reset, 1)
        await ctx.tick()
        ctx.set(reset, 0)
        bound = dut.lane_units[0].front_latency + 8
        clear_cycles = dut.lane_units[0].reset_clear_cycles
        idle_at = None
        for cycle in range(1, max(bound, clear_cycles) + 1):
            await ctx.tick()
            if idle_at is None and ctx.get(dut.idle):
                idle_at = cycle
            accepting = [ctx.get(lane.accepting) for lane in dut.lane_units]
            if cycle < clear_cycles:
                assert accepting == [0, 0], f"a lane accepts {cycle} cycles after the reset"
            elif cycle == clear_cycles:
                assert accepting == [1, 1], \
                    f"the lanes do not accept {clear_cycles} cycles after the reset"
                assert not any(memories(ctx)), "a lane memory survived the reset"
        assert idle_at is not None and idle_at <= bound, f"not idle {bound} cycles after reset"
        assert ctx.get(dut.records) == 0
        await send_beats(ctx, dut.i, [beat for chunk, _ in chunks for beat in beats(chunk)])
        ctx.set(dut.i.valid, 0)
        while not ctx.get(dut.idle):
            await ctx.tick()

    async def collector(ctx):
        await collect_beats(ctx, dut.o, output, 0.0, random.Random(0))

    simulate(top, feeder, background=(collector,))
    data = b"".join(payload.to_bytes(bus_bytes, "little") for payload in output)
    records = unpack_records(data, len(data) // params.record_bytes, params)
    by_tag = {record.tag: record for record in records}
    golden = params.algorithm
    compare_records([by_tag[t] for t in range(len(genomes))],
                    [expected_record(t, files, golden) for t, files in enumerate(genomes)])


def bank_events(params: Params, genomes, stall_probability=0.0):
    """Run the core (records and counters checked against golden); per lane the cycles of its
    genome end tokens and of its bank switches, the cycles it waited, and the run's stats."""
    events = [{"end": [], "switch": [], "waiting": 0} for _ in range(params.lanes)]
    lanes = []

    def event_probe(dut):
        lanes.extend(dut.lane_units)

        async def probe(ctx):
            signals = [signal for lane in lanes
                       for signal in (lane.genome_end, lane.bank_switch, lane.waiting)]
            cycle = 0
            async for values in ctx.tick().sample(*signals):
                cycle += 1
                for lane_events, (end, switch, waiting) in zip(
                        events, zip(*[iter(values[2:])] * 3)):
                    if end:
                        lane_events["end"].append(cycle)
                    if switch:
                        lane_events["switch"].append(cycle)
                    lane_events["waiting"] += waiting
        return probe

    stats = check_core(params, genomes, stall_probability=stall_probability, max_block_beats=64,
                       probes=(event_probe,))
    return lanes[0], events, stats


def short_genomes(count, length, seed=1):
    rng = random.Random(seed)
    return [[b">g\n" + bytes(rng.choice(b"ACGT") for _ in range(length)) + b"\n"]
            for _ in range(count)]


def test_genome_end_stall_rule_clear_bound():
    """The stall rule: a lane whose genome ends switches banks in that cycle if the other bank is
    clean, else it stops (takes no k-mer) until it is; a bank is clean again
    ``lane.retire_cycles`` = flush + 3 + max(2^cw, queue beats + 4 + the entropy finish) cycles
    after its switch.
    Here 2^cw = 256 > 2 records' output, so the rule is exact for every genome of both lanes."""
    params = Params(lanes=2, bytes_per_lane=8, k=7, s=1, d=2, cw=8, R=2, n=2, fifo_depth=40,
                    record_banks=2)
    lane, events, _ = bank_events(params, short_genomes(8, 100))
    assert lane.retire_cycles == lane.flush_cycles + 3 + 256
    for lane_events in events:
        ends, switches = lane_events["end"], lane_events["switch"]
        assert len(ends) == len(switches) == 4
        expected, clean = [], 0
        for end in ends:
            expected.append(max(end, clean))
            clean = expected[-1] + lane.retire_cycles
        assert switches == expected, lane_events
        waits = sum(switch - end for end, switch in zip(ends, switches))
        assert waits > 0 and lane_events["waiting"] == waits


def test_genome_end_stall_rule_record_bound():
    """2^R = 64 queue beats > 2^cw = 16: the record decides. The first record (of the lane
    that switched first; the lower lane if both did at once) has the output to itself (exact);
    later ones may wait for the other lane's record (never earlier than the rule)."""
    params = Params(lanes=2, bytes_per_lane=8, k=7, s=1, d=2, cw=4, R=6, n=2, fifo_depth=40,
                    record_banks=2)
    lane, events, _ = bank_events(params, short_genomes(8, 100))
    finish = entropy_finish_cycles(*entropy_unit_args(params))
    assert lane.retire_cycles == lane.flush_cycles + 3 + 64 + 4 + finish
    first = min(events, key=lambda lane_events: lane_events["switch"][0])
    switches = first["switch"]
    assert switches[1] == max(first["end"][1], switches[0] + lane.retire_cycles)
    for lane_events in events:
        ends, switches = lane_events["end"], lane_events["switch"]
        for previous, end, switch in zip(switches, ends[1:], switches[1:]):
            assert switch >= max(end, previous + lane.retire_cycles)


def test_long_genomes_never_wait():
    """Genomes longer than the retire time per lane: every genome end switches banks at once, so
    the core takes one chunk beat per cycle over the whole run, genome ends included."""
    params = Params(lanes=2, bytes_per_lane=8, k=7, s=6, d=2, cw=6, R=3, n=2, fifo_depth=40,
                    record_banks=2)
    lane, events, stats = bank_events(params, short_genomes(6, 2000, seed=4))
    assert 2000 // 8 > lane.retire_cycles
    for lane_events in events:
        assert lane_events["end"] == lane_events["switch"] and lane_events["waiting"] == 0
    assert stats["input_cycles"] == stats["beats"], stats
