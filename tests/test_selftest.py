"""The standalone self-test (kmerspec/selftest.py, hw/selftest/): its generator emits exactly the
contract's chunk beats, its checksum is the contract's, the whole self-test passes on the sketch
core in the Amaranth simulator (and fails with a wrong expectation or a stuck core), and
``python -m hw.build --board rfsoc4x2`` writes the Vivado build of it."""

import random

import pytest

from kmerspec.golden.hll import Hll
from kmerspec.golden.parse import genome_kmers
from kmerspec.kernels.jacc_sketch import Params, SketchRecord, pack_record, unpack_records
from kmerspec.selftest import (SelfTestParams, blocks, chunk_bytes, expected_result, genomes,
                               record_checksum)
from hw.selftest.checksum import RecordChecksum
from hw.selftest.generator import ChunkGenerator
from hw.selftest.top import SketchSelfTest
from tests.simulation import simulate

SMALL = Params(lanes=2, bytes_per_lane=4, k=21, p=8, w=4)


def small(**kw):
    return SelfTestParams(sketch=SMALL, **{"genome_bytes": 200, "rounds": 2, "block_beats": 16,
                                           "seed": 7, **kw})


def test_pack_record_inverts_unpack():
    rng = random.Random(1)
    for params in (SMALL, Params()):
        record = SketchRecord(tag=rng.getrandbits(32), z=rng.getrandbits(8 * params.z_bytes - 1),
                              nz=rng.getrandbits(20),
                              registers=[rng.getrandbits(params.w) for _ in range(params.registers)])
        data = pack_record(record, params)
        assert len(data) == params.record_bytes
        assert unpack_records(data, 1, params) == [record]


def test_contract_input_keeps_the_lanes_in_step():
    """The host's own planner schedules the self-test's genomes as the generator emits them:
    round r of lane t is genome r T + t, and every block carries the same bytes count in every
    lane, at most block_beats beats, the ends of file and genome only in a genome's last block."""
    params = small()
    data = [g for _, g in genomes(params)]
    assert all(g.startswith(b">selftest\n") and len(g) == 200 for g in data)
    assert set(b"".join(data)) == set(b">selftest\nACGT")
    assert data[0] != data[1] and data[0] != data[2]
    planned = blocks(params)
    for block in planned:
        counts = {len(piece) for piece, *_ in block.lanes}
        assert len(counts) == 1 and 0 < counts.pop() <= 16 * SMALL.bytes_per_lane
        assert len({(eof, eog) for _, eof, eog, _ in block.lanes}) == 1
    tags = [tuple(tag for *_, tag in block.lanes) for block in planned]
    assert [t for t in dict.fromkeys(tags)] == [(0, 1), (2, 3)]
    for lane in range(2):
        for tag in (lane, 2 + lane):
            pieces = [block.lanes[lane] for block in planned if block.lanes[lane][3] == tag]
            assert b"".join(p for p, *_ in pieces) == data[tag]
            assert [eog for _, _, eog, _ in pieces] == [False] * (len(pieces) - 1) + [True]
    assert len(chunk_bytes(params)) == params.input_beats * SMALL.bus_bytes


@pytest.mark.parametrize("geometry", [SMALL, Params(lanes=8, bytes_per_lane=8, k=31, p=14)])
def test_generator_emits_the_contract_beats(geometry):
    params = SelfTestParams(sketch=geometry, genome_bytes=geometry.bytes_per_lane * 40,
                            rounds=2, block_beats=16, seed=3)
    expected = chunk_bytes(params)
    bus = geometry.bus_bytes
    dut = ChunkGenerator(params)
    beats = []

    async def testbench(ctx):
        rng = random.Random(5)
        while not ctx.get(dut.done):
            ready = rng.random() < 0.7
            ctx.set(dut.o.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid and ready:
                beats.append(payload.to_bytes(bus, "little"))
        for _ in range(5):
            _, _, valid = await ctx.tick().sample(dut.o.valid)
            assert not valid

    simulate(dut, testbench)
    assert len(beats) == params.input_beats == len(expected) // bus
    assert b"".join(beats) == expected


def test_checksum_unit_matches_contract():
    params = small()
    rng = random.Random(2)
    bus_bits = SMALL.data_width
    records = [bytes(rng.getrandbits(8) for _ in range(SMALL.record_bytes)) for _ in range(5)]
    dut = RecordChecksum(bus_bits, params.record_beats)
    beats = [int.from_bytes(r[j:j + SMALL.bus_bytes], "little")
             for r in records for j in range(0, len(r), SMALL.bus_bytes)]

    async def testbench(ctx):
        from tests.simulation import with_idle_cycles
        for beat in with_idle_cycles(beats, 0.3, rng):
            ctx.set(dut.i.valid, beat is not None)
            ctx.set(dut.i.payload, beat or 0)
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.records) == 5
        assert ctx.get(dut.checksum) == sum(record_checksum(r, SMALL.bus_bytes)
                                            for r in records) % (1 << 32)

    simulate(dut, testbench)


def run_selftest(top, max_cycles=200_000):
    result = {}

    async def testbench(ctx):
        for _ in range(max_cycles):
            await ctx.tick()
            if ctx.get(top.done) or ctx.get(top.timed_out):
                break
        await ctx.tick()
        result.update(done=ctx.get(top.done), passed=ctx.get(top.passed),
                      failed=ctx.get(top.failed), timed_out=ctx.get(top.timed_out),
                      checksum=ctx.get(top.checksum), records=ctx.get(top.records),
                      cycles=ctx.get(top.cycles))

    simulate(top, testbench)
    return result


def test_selftest_passes_on_the_sketch_core():
    params = small()
    checksum, records = expected_result(params)
    # the expectation is the golden model's records, independently re-derived here
    again = 0
    for tag, data in genomes(params):
        hll = Hll(SMALL.hll).update(genome_kmers([data], SMALL.k))
        z, nz = hll.features()
        again += record_checksum(pack_record(SketchRecord(tag, hll.registers, z, nz), SMALL),
                                 SMALL.bus_bytes)
    assert (again % (1 << 32), params.records) == (checksum, records)

    result = run_selftest(SketchSelfTest(params))
    assert result["records"] == records == 4
    assert result["checksum"] == checksum
    assert result["done"] and result["passed"] and not result["failed"]
    assert result["cycles"] > params.input_beats


def test_selftest_fails_on_a_wrong_expectation():
    params = small()
    checksum, records = expected_result(params)
    result = run_selftest(SketchSelfTest(params, expected=(checksum ^ 1, records)))
    assert result["done"] and result["failed"] and not result["passed"]


def test_selftest_times_out_when_records_are_missing():
    params = small(rounds=1)
    checksum, records = expected_result(params)
    top = SketchSelfTest(params, expected=(checksum, records + 1))
    result = run_selftest(top, max_cycles=top.timeout_cycles + 10)
    assert result["timed_out"] and result["failed"] and not result["done"]


def test_params_are_checked():
    with pytest.raises(ValueError, match="genome_bytes must be a multiple of bytes_per_lane"):
        SelfTestParams(sketch=SMALL, genome_bytes=201)
    with pytest.raises(ValueError, match="rounds must be an integer from 1 to 65535"):
        SelfTestParams(sketch=SMALL, rounds=0)


SMALL_BUILD = ["-P", "jacc_sketch.lanes=2", "-P", "jacc_sketch.bytes_per_lane=4",
               "-P", "jacc_sketch.k=21", "-P", "jacc_sketch.p=8",
               "-P", "selftest.genome_bytes=200", "-P", "selftest.block_beats=16",
               "-P", "selftest.seed=7"]


def test_hw_build_writes_the_rfsoc4x2_bitstream_build(tmp_path, capsys, monkeypatch):
    import json
    from hw.build import main
    monkeypatch.setenv("PATH", "/usr/bin:/bin")   # no vivado: generation only
    assert main(["--board", "rfsoc4x2", "-o", str(tmp_path)] + SMALL_BUILD) == 0
    out = capsys.readouterr().out
    assert "not on PATH: vivado -- generation only" in out
    bdir = tmp_path / "rfsoc4x2"
    info = json.loads((bdir / "selftest.json").read_text())
    checksum, records = expected_result(small())
    assert info["expected"] == {"checksum": f"0x{checksum:08x}", "records": records}
    assert info["part"] == "xczu48dr-ffvg1517-2-e" and info["clock_hz"] == 100_000_000
    xdc = (bdir / "sketch_selftest.xdc").read_text()
    # the board's own pins and clock (amaranth-boards' RFSoC4x2Platform)
    for pin in ("G13", "AN12", "AR11", "AW10", "AT11", "AU10"):
        assert f"LOC {pin} " in xdc
    assert "create_clock -name clk_0__p -period 10.0" in xdc
    tcl = (bdir / "sketch_selftest.tcl").read_text()
    assert "-part xczu48dr-ffvg1517-2-e" in tcl and "write_bitstream" in tcl
    assert "module sketch_selftest" in (bdir / "sketch_selftest.v").read_text()
    assert main(["--board", "rfsoc4x2", "-o", str(tmp_path / "again"), "--require-tools"]
                + SMALL_BUILD) == 3


def test_hw_build_refuses_other_kernels_parameters_for_a_standalone_board(tmp_path, capsys):
    from hw.build import main
    assert main(["--board", "rfsoc4x2", "-o", str(tmp_path), "-P", "motif.kmin=5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: a standalone board builds the jacc_sketch self-test: parameters for "
                   "motif do not apply"]
    assert main(["--board", "rfsoc4x2", "-o", str(tmp_path), "-P", "selftest.rounds=x"]) == 2
    assert capsys.readouterr().err.strip() == "error: selftest.rounds must be an integer, not 'x'"
    assert not (tmp_path / "rfsoc4x2").exists()
