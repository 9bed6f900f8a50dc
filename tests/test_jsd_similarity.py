# amaranth: UnusedElaboratable=no
"""JSD similarity core in the Amaranth simulator: every pivot x streamed PQA JSD bit-exact to
kmerspec.golden.entropy.jsd_fixed, textbook and counts modes, empty PQAs, shared and disjoint tags."""

import random

import pytest

from kmerspec.golden.entropy import jsd_fixed
from kmerspec.golden.jsd import JsdParams
from kmerspec.kernels.jsd_builder import pack_pqa, pack_trailer
from kmerspec.kernels.jsd_similarity import Params, unpack_results
from hw.jsd.entropy import entropy_finish_cycles
from hw.jsd.similarity import JsdSimilarityCore, mixture_entropy_args
from sim.jsd.golden import random_records
from tests.simulation import collect_beats, send_beats, simulate


def make_records(params: JsdParams, count, seed):
    return random_records(params.R, params.n, count, seed)


def run_similarity(sp: Params, pivots, streamed, counts_mode, stall=0.2, seed=0):
    rng = random.Random(seed)
    geometry = sp
    beats = []
    for record in pivots + streamed:
        data = pack_trailer(record, geometry) + pack_pqa(record.pqa)
        beats += [data[i:i + geometry.bus_bytes] for i in range(0, len(data), geometry.bus_bytes)]
    dut = JsdSimilarityCore(sp)
    output = []
    cycles = {}

    async def feeder(ctx):
        ctx.set(dut.n_pivots, len(pivots))
        ctx.set(dut.n_pqas, len(streamed))
        ctx.set(dut.counts_mode, counts_mode)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        cycles["input"] = await send_beats(
            ctx, dut.i, [int.from_bytes(beat, "little") for beat in beats])
        while ctx.get(dut.busy):
            await ctx.tick()

    async def collector(ctx):
        await collect_beats(ctx, dut.o, output, stall, rng)

    simulate(dut, feeder, background=(collector,))
    output = b"".join(payload.to_bytes(geometry.bus_bytes, "little") for payload in output)
    return unpack_results(output, len(streamed), sp.pivots, geometry), cycles, len(beats)


@pytest.mark.parametrize("mode", ["textbook", "counts"])
def test_similarity_core_matches_jsd_fixed(mode):
    params = JsdParams(k=9, s=0, d=3, cw=5, R=2, n=2)
    records = make_records(params, 6, seed=3)
    sp = Params(pivots=3, R=2, n=2, data_width=128)
    pivots = [records[0], records[1], records[-1]]   # the empty PQA is a pivot too
    streamed = records
    results, _, _ = run_similarity(sp, pivots, streamed, mode == "counts")
    for row, record in zip(results, streamed):
        expected = [jsd_fixed(pivot.pqa, record.pqa, mode, pivot.entropy, record.entropy)
                    for pivot in pivots]
        assert row == expected, record.tag


def test_similarity_core_fewer_pivots_than_units_and_two_beat_queues():
    """n = 4 entries (a queue spans two 128-bit beats), 2 of 4 pivot units used: unused slots
    read 0; one queue per two input beats."""
    params = JsdParams(k=9, s=0, d=3, cw=6, R=3, n=4)
    records = make_records(params, 4, seed=8)
    sp = Params(pivots=4, R=3, n=4, data_width=128)
    pivots = records[:2]
    results, cycles, beat_count = run_similarity(sp, pivots, records, False, stall=0.0)
    for row, record in zip(results, records):
        assert row == [jsd_fixed(p.pqa, record.pqa, "textbook", p.entropy, record.entropy)
                       for p in pivots] + [0, 0]
    # throughput: one beat per cycle except the entropy finish per streamed record
    finish = entropy_finish_cycles(*mixture_entropy_args(sp))
    assert cycles["input"] <= beat_count + (finish + 10) * len(records)


def test_similarity_params_are_checked():
    with pytest.raises(ValueError, match="pivots"):
        Params(pivots=17, data_width=512)
    with pytest.raises(ValueError, match="queue"):
        Params(n=4, data_width=512)
