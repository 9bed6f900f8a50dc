"""The JSD queue-builder Vitis kernel under cocotb on its generated Verilog (small geometry):
every PQA entry, entropy and total equal to the golden model over several chunks, with random
AXI backpressure; the default geometry converts to Verilog."""

import random

import pytest

from hw.jsd.kernel import QueueBuilderKernel
from sim.runner import available_simulators, run_cocotb
from tests.genomes import random_genome_bytes

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

SMALL = dict(lanes=2, bytes_per_lane=8, k=7, s=1, d=3, cw=4, R=3, n=2)


def genomes():
    rng = random.Random(17)
    out = [[random_genome_bytes(rng, records=2, length=200, fastq=rng.random() < 0.3)
            .decode("latin-1")] for _ in range(4)]
    out.append([">r\n" + "ACGTTGCA" * 50 + "\n", ">second file\nACGTTGCAAC\n"])
    out.append([""])
    return out


@pytest.mark.parametrize("update,pause", [("cu", 0.0), ("cm", 0.3)])
def test_builder_kernel_matches_golden(update, pause):
    run_cocotb(QueueBuilderKernel(**SMALL, name="jsd_build_small"), "sim.jsd.tb_builder_kernel",
               toplevel="jsd_build_small",
               parameters={"params": SMALL, "genomes": genomes(), "update": update,
                           "pause": pause, "seed": 5, "max_chunk_bytes": 1024,
                           "max_block_beats": 8, "data_width": 128})


def test_default_builder_converts_to_verilog():
    """T = 8 lanes x 8 bytes, k = 31, s = 10, 5 x 2^14 Count-Min, 2^12 x 8 PQA, 512-bit bus."""
    from hw.vitis.top import to_verilog

    text = to_verilog(QueueBuilderKernel())
    assert "module jsd_build(" in text
    for port in ("ap_clk", "ap_rst_n", "interrupt", "s_axi_control_AWADDR",
                 "m_axi_gmem0_ARADDR", "m_axi_gmem1_WDATA"):
        assert port in text


def test_builder_kernel_rejects_bad_parameters():
    with pytest.raises(ValueError, match="cw"):
        QueueBuilderKernel(cw=0)
    with pytest.raises(ValueError, match="queue"):
        QueueBuilderKernel(n=4)  # 256-bit queues on a 512-bit bus


SIMILARITY = dict(pivots=3, R=3, n=2, data_width=128)


def test_similarity_kernel_matches_golden():
    from hw.jsd.kernel import JsdSimilarityKernel

    runs = [{"pivots": [0, 1, 6], "pqas": [0, 1, 2, 3, 4, 5, 6], "mode": "textbook"},
            {"pivots": [2, 3], "pqas": [5, 2, 6, 0], "mode": "counts"}]
    run_cocotb(JsdSimilarityKernel(**SIMILARITY, name="jsd_similarity_small"),
               "sim.jsd.tb_similarity_kernel", toplevel="jsd_similarity_small",
               parameters={"params": SIMILARITY, "runs": runs, "records": 6, "pause": 0.3,
                           "seed": 2, "data_width": 128})


def test_default_similarity_kernel_converts_to_verilog():
    from hw.jsd.kernel import JsdSimilarityKernel
    from hw.vitis.top import to_verilog

    text = to_verilog(JsdSimilarityKernel(pivots=2))
    assert "module jsd_similarity(" in text
