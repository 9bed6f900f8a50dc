# amaranth: UnusedElaboratable=no
"""Sketch kernel: cocotb regression on the generated Verilog (small configuration), conversion of
the default configuration, parameter checks."""

import random

import pytest

from hw.sketch.kernel import JaccSketchKernel
from kmerspec.kernels.jacc_sketch import Params
from sim.runner import run_kernel_bench
from sim.sketch.golden import regression_genomes
from tests.kernel_checks import assert_vitis_kernel_verilog

SMALL = Params(lanes=2, bytes_per_lane=4, k=21, p=10, w=4)   # 64-bit bus, 2 control beats


def adversarial_genomes():
    rng = random.Random(17)
    return [
        [b">poly-A: one register, every k-mer, every cycle\n" + b"A" * 700],
        [b">all bases, no line breaks\n" + bytes(rng.choice(b"ACGT") for _ in range(900))],
    ]


def genomes():
    return regression_genomes(seed=23, count=10, scale=400) + adversarial_genomes()


@pytest.mark.parametrize("pause", [0.0, 0.3])
def test_sketch_kernel_matches_golden(pause):
    run_kernel_bench(SMALL, "sim.sketch.tb_sketch_kernel",
                     {"genomes": [[f.decode("latin-1") for f in files] for files in genomes()],
                      "pause": pause, "seed": 5, "max_chunk_bytes": 2048, "max_block_beats": 16})


#: the kernel `python -m host sketch --index-bits 10 --k 21 --min-count 2 --mc-depth 2 --mc-width-bits 8
#: --backend sim` builds (host.drivers.SIM_GEOMETRY, the CLI's 8-bit counters), so the CLI test
#: reuses this Verilog
FILTERED = Params(lanes=2, bytes_per_lane=4, k=21, p=10, w=4, mc_depth=2, mc_width_bits=8,
                  mc_counter_bits=8)


@pytest.mark.parametrize("m", [2, 3])
def test_filtered_sketch_kernel_matches_golden(m):
    """The minimum-count prefilter (SPEC 7): reads with errors and N, poly-A (the same Count-Min
    counters every cycle), N runs, genomes spanning calls, random stalls on every AXI channel."""
    from tests.test_sketch_min_count_lane import reads_genomes
    chosen = reads_genomes(m) + adversarial_genomes()[:1] + regression_genomes(seed=4, count=3,
                                                                                scale=150)
    run_kernel_bench(FILTERED, "sim.sketch.tb_sketch_kernel",
                     {"genomes": [[f.decode("latin-1") for f in files] for files in chosen],
                      "pause": 0.3, "seed": 6 + m, "max_chunk_bytes": 1024,
                      "max_block_beats": 16, "min_count": m})


def test_default_kernel_converts_to_verilog():
    """T = 8 lanes x 8 bytes (512-bit bus), k = 31, p = 14, w = 4."""
    from hw.vitis.top import to_verilog

    assert_vitis_kernel_verilog(to_verilog(JaccSketchKernel()), "jacc_sketch")


def test_kernel_rejects_bad_parameters():
    with pytest.raises(ValueError, match=r"^k must be an integer from 1 to 32, not 0$"):
        Params(k=0)
    with pytest.raises(ValueError, match=r"must be a power of two from 32 to 1024$"):
        Params(lanes=3)
    with pytest.raises(ValueError, match=r"^p must be an integer from 8 to 18, not 19$"):
        Params(p=19)
