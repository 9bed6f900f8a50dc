# amaranth: UnusedElaboratable=no
"""The all-k engine (window shift register, lanes, both passes, readback) against
kmerspec.golden.motif: Count-Min counters, store ways and pointers, control counts."""

import random

import pytest

from kmerspec.golden.motif import MotifParams, new_sketch, run_control_pass, run_test_pass
from kmerspec.golden.parse import base_runs, genome_kmers
from hw.motif.engine import MotifEngine
from tests.test_motif_store import golden_state, rtl_row_state
from tests.simulation import simulate

SMALL = MotifParams(kmin=3, kmax=6, d=3, cw=5, counter_bits=8, store_sets=4, store_ways=2,
                    thresholds=(6, 4, 3, 2))


def base_events(files):
    """(code, restart) per base of the files, in order."""
    return [(code, index == 0) for data in files for run in base_runs(data)
            for index, code in enumerate(run)]


def random_fasta(rng, records, alphabet="ACGT", motif="ACGTTG"):
    lines = []
    for number in range(records):
        lines.append(f">r{number} some header".encode())
        length = rng.choice([0, 2, 5, 30, 80])
        sequence = "".join(rng.choice(alphabet) for _ in range(length))
        if rng.random() < 0.5:
            sequence += motif
        lines.append(sequence.encode())
    return b"\n".join(lines) + b"\n"


def run_engine(test_files, control_files, params, *, idle_probability=0.0, read_latency=1):
    dut = MotifEngine(params, read_latency=read_latency)
    rng = random.Random(1)
    result = {"latency": dut.latency}

    async def feed(ctx, events):
        """One base per cycle (plus random idle cycles); count each lane's windows and the
        cycles in which they arrived."""
        windows = [0] * len(dut.lanes)
        cycles = 0

        async def tick():
            nonlocal cycles
            await ctx.tick()
            cycles += 1
            for index, lane in enumerate(dut.lanes):
                windows[index] += ctx.get(lane.window.valid)

        for code, restart in events:
            while rng.random() < idle_probability:
                ctx.set(dut.bases.valid, 0)
                await tick()
            ctx.set(dut.bases.valid, 1)
            ctx.set(dut.bases.payload, {"code": code, "restart": restart})
            await tick()
        ctx.set(dut.bases.valid, 0)
        while not ctx.get(dut.idle):
            await tick()
        result.setdefault("windows", []).append(windows)
        result.setdefault("cycles", []).append(cycles)

    async def testbench(ctx):
        ctx.set(dut.thresholds, list(params.thresholds))
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        while not ctx.get(dut.idle):
            await ctx.tick()
        await feed(ctx, base_events(test_files))
        result["counters"] = [[[ctx.get(row.data[i]) for i in range(1 << params.cw)]
                               for row in lane.countmin.rows] for lane in dut.lanes]
        ctx.set(dut.control_pass, 1)
        await feed(ctx, base_events(control_files))
        result["stores"] = [[rtl_row_state(ctx.get(lane.store.memory.data[s]), params.store_ways)
                             for s in range(params.store_sets)] for lane in dut.lanes]
        readback = []
        for lane_index in range(len(dut.lanes)):
            for address in range(params.store_sets):
                ctx.set(dut.readback_lane, lane_index)
                ctx.set(dut.readback_address, address)
                await ctx.tick()
                readback.append(rtl_row_state(ctx.get(dut.readback_row), params.store_ways))
        result["readback"] = readback

    simulate(dut, testbench)
    return result


def golden_run(test_files, control_files, params):
    sketches = [new_sketch(k, params) for k in params.ks]
    for sketch in sketches:
        run_test_pass(sketch, genome_kmers(test_files, sketch.k, canonical_form=False), params)
    counters = [[list(row) for row in sketch.countmin.counters] for sketch in sketches]
    for sketch in sketches:
        run_control_pass(sketch, genome_kmers(control_files, sketch.k, canonical_form=False))
    return counters, [golden_state(sketch.store) for sketch in sketches]


@pytest.mark.parametrize("idle_probability,read_latency", [(0.0, 1), (0.3, 2)])
def test_engine_matches_golden_state(idle_probability, read_latency):
    rng = random.Random(11)
    test_files = [random_fasta(rng, 12), b"ACGTTGNACGTTG\nacgttg\n>x\n" + b"A" * 300 + b"\n"]
    control_files = [random_fasta(rng, 8, motif="ACG")]
    result = run_engine(test_files, control_files, SMALL, idle_probability=idle_probability,
                        read_latency=read_latency)
    counters, stores = golden_run(test_files, control_files, SMALL)
    for files, windows, cycles in zip((test_files, control_files), result["windows"],
                                      result["cycles"]):
        assert windows == [len(list(genome_kmers(files, k, canonical_form=False)))
                           for k in SMALL.ks]
        if not idle_probability:
            # one base, so one window of every k, per cycle: only the pipeline drain is extra
            assert cycles <= len(base_events(files)) + result["latency"] + 2
    assert result["counters"] == counters
    assert result["stores"] == stores
    assert result["readback"] == [row for store in stores for row in store]
    # the data exercised what it should: evictions, control counts, saturated counters
    assert any(pointer for store in stores for _, pointer in store)
    assert any(way[3] for store in stores for ways, _ in store for way in ways)
    assert any(255 in row for lane in counters for row in lane)


def test_engine_rejects_canonical():
    with pytest.raises(ValueError, match="canonical"):
        MotifEngine(MotifParams(canonical=True))
