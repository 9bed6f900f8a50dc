"""The JSD queue-builder Vitis kernel under cocotb on its generated Verilog (small geometry):
every PQA entry, entropy and total equal to the golden model over several chunks, with random
AXI backpressure; the default geometry converts to Verilog."""

import random

import pytest

from kmerspec.golden.entropy import jsd_fixed
from kmerspec.golden.jsd import JsdParams
from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels import jsd_builder, jsd_similarity
from kmerspec.kernels.jsd_builder import pack_record, run_genomes
from kmerspec.kernels.jsd_similarity import unpack_results
from host.device import Output, SimDevice
from hw.jsd.kernel import JsdSimilarityKernel, QueueBuilderKernel
from sim.jsd.golden import compare_records, expected_record, random_records
from sim.runner import available_simulators, run_kernel_bench
from tests.genomes import random_genome_bytes
from tests.kernel_checks import assert_vitis_kernel_verilog

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

SMALL_PARAMS = JsdParams(k=7, s=1, d=3, cw=4, R=3, n=2)
SMALL = jsd_builder.Params.for_algorithm(SMALL_PARAMS, lanes=2, bytes_per_lane=8)


def genomes():
    rng = random.Random(17)
    out = [[random_genome_bytes(rng, records=2, length=200, fastq=rng.random() < 0.3)
            .decode("latin-1")] for _ in range(4)]
    out.append([">r\n" + "ACGTTGCA" * 50 + "\n", ">second file\nACGTTGCAAC\n"])
    out.append([""])
    return out


# This geometry is 1.7 MB of Verilog (LaneParser is compact again): the Count-Min run with
# stalls, Verilator build included, took 5 min 17 s (348 MB peak) on the 2-core machine at a
# load of ~10, so it runs in CI; the CU run without stalls reuses the build under -m slow.
@pytest.mark.parametrize("update,pause", [pytest.param("cu", 0.0, marks=pytest.mark.slow),
                                          ("cm", 0.3)])
def test_builder_kernel_matches_golden(update, pause):
    run_kernel_bench(SMALL, "sim.jsd.tb_builder_kernel",
                     {"genomes": genomes(), "update": update, "pause": pause, "seed": 5,
                      "max_chunk_bytes": 1024, "max_block_beats": 8})


def test_default_geometry_converts_to_verilog():
    """The SPEC defaults (k = 31, s = 10, 5 x 2^14 Count-Min, 2^12 x 8 PQA): every JSD part of a
    builder lane and a one-pivot similarity kernel with the Vitis port names. (The whole build
    kernel, whose lane parsers come from hw/sketch, is converted by the slow test below.)"""
    from amaranth.back import verilog
    from amaranth.hdl import Signal
    from amaranth.lib import data

    from hw.common.countmin import CountMinUnit
    from hw.jsd.entropy import EntropyUnit
    from hw.jsd.murmur3 import Murmur3Hashes
    from hw.jsd.pqa import PqaInsert
    from hw.jsd.sampler import Sampler
    from hw.vitis.top import to_verilog

    for part in (Sampler(8, 10), Murmur3Hashes(range(5)),
                 CountMinUnit(5, 14, 32, 32, stall_while_clearing=True), PqaInsert(12, 8),
                 EntropyUnit(32, 8, 12)):
        ports = [value.as_value() if isinstance(value, data.View) else value
                 for _, _, value in part.signature.flatten(part)
                 if isinstance(value, (Signal, data.View))]
        assert "module part(" in verilog.convert(part, name="part", ports=ports)
    assert_vitis_kernel_verilog(to_verilog(JsdSimilarityKernel(jsd_similarity.Params(pivots=1))),
                                "jsd_similarity")


@pytest.mark.slow
def test_full_default_kernels_convert_to_verilog():
    """T = 8 lanes x 8 bytes (512-bit bus) and 8 pivots: slow (eight lane parsers)."""
    from hw.vitis.top import to_verilog

    assert "module jsd_builder(" in to_verilog(QueueBuilderKernel())
    assert "module jsd_similarity(" in to_verilog(JsdSimilarityKernel())


def test_builder_kernel_rejects_bad_parameters():
    with pytest.raises(ValueError, match="cw"):
        jsd_builder.Params(cw=0)
    with pytest.raises(ValueError, match="queue"):
        jsd_builder.Params(n=4)  # 256-bit queues on a 512-bit bus


SIMILARITY = jsd_similarity.Params(pivots=3, R=3, n=2, data_width=128)


def test_similarity_kernel_matches_golden():
    runs = [{"pivots": [0, 1, 6], "pqas": [0, 1, 2, 3, 4, 5, 6], "mode": "textbook"},
            {"pivots": [2, 3], "pqas": [5, 2, 6, 0], "mode": "counts"}]
    run_kernel_bench(SIMILARITY, "sim.jsd.tb_similarity_kernel",
                     {"runs": runs, "records": 6, "pause": 0.3, "seed": 2,
                      # the first buffer from 256 bytes below 2^32: its record addresses carry
                      # into the upper half (SplitAddress)
                      "address_base": (1 << 32) - 0x1100, "memory_bytes": (1 << 22) + 4096})


@pytest.mark.slow  # a second simulation of the builder kernel
def test_sim_device_runs_the_builder_kernel():
    """host.device.SimDevice (the sim backend's device; the same Verilator build as the bench
    above): the PQA records of three genomes over several chunks, equal to the golden model."""
    files = [[text.encode("latin-1") for text in genome] for genome in genomes()[:2]]
    files.append([b">x\nACGTTGCA\n"])
    kernel = QueueBuilderKernel(SMALL)
    layout = SMALL
    chunks = pack_chunks(plan_blocks(files, layout), layout, max_chunk_bytes=1024)
    results = SimDevice().run_many(kernel, [
        {"src": chunk, "n_bytes": len(chunk), "n_records": len(tags), "update": 0,
         "dst": Output(max(1, len(tags)) * layout.record_bytes)} for chunk, tags in chunks])
    outputs = iter(result.outputs["dst"] for result in results)
    records = run_genomes(files, layout, lambda chunk, count: next(outputs), max_chunk_bytes=1024)
    compare_records(records, [expected_record(tag, genome, SMALL_PARAMS)
                              for tag, genome in enumerate(files)])


def test_sim_device_runs_the_similarity_kernel():
    """host.device.SimDevice on the similarity kernel (the build of the bench above): the JSD of
    every record with two pivots, in both modes, equal to the golden model."""
    kernel = JsdSimilarityKernel(SIMILARITY)
    layout = SIMILARITY
    records = random_records(SIMILARITY.R, SIMILARITY.n, 5, seed=9)
    pivots = records[:2]
    modes = ("textbook", "counts")
    results = SimDevice().run_many(kernel, [
        {"pivots": b"".join(pack_record(r, layout) for r in pivots), "n_pivots": len(pivots),
         "pqas": b"".join(pack_record(r, layout) for r in records), "n_pqas": len(records),
         "out": Output(len(records) * layout.bus_bytes), "mode": int(mode == "counts")}
        for mode in modes])
    for mode, result in zip(modes, results):
        rows = unpack_results(result.outputs["out"], len(records), SIMILARITY.pivots, layout)
        assert [row[:len(pivots)] for row in rows] == [
            [jsd_fixed(p.pqa, r.pqa, mode, p.entropy, r.entropy) for p in pivots]
            for r in records], mode
