# amaranth: UnusedElaboratable=no
"""The ``motif`` Vitis kernel under cocotb on its generated Verilog (small geometry): store
contents, estimates, control counts and emerging flags equal to the golden model over several
runs, random AXI backpressure, and the test/control pass throughput (one byte, so at most one
window per k, per cycle)."""

import random

import pytest

from hw.motif.kernel import MotifKernel
from kmerspec.golden.motif import MotifParams
from kmerspec.kernels.motif import Params
from sim.runner import available_simulators, run_kernel_bench
from tests.kernel_checks import assert_vitis_kernel_verilog

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

GEOMETRY = dict(kmin=4, kmax=7, d=3, cw=6, counter_bits=8, store_sets=8, store_ways=3)


def chip_like(rng, sequences, length, motif, planted_fraction, mutation_rate=0.1):
    """FASTA of random sequences, a fraction carrying ``motif`` with point mutations."""
    out = []
    for number in range(sequences):
        sequence = [rng.choice("ACGT") for _ in range(length)]
        if rng.random() < planted_fraction:
            start = rng.randrange(length - len(motif) + 1)
            for offset, base in enumerate(motif):
                sequence[start + offset] = (rng.choice("ACGT") if rng.random() < mutation_rate
                                            else base)
        out.append(f">seq{number}\n{''.join(sequence)}\n")
    return "".join(out)


def runs():
    rng = random.Random(8)
    test = [chip_like(rng, 12, 60, "GATTACAG", 0.7), "ACGTNacgt\n>x\n" + "A" * 300 + "\n"]
    control = [chip_like(rng, 10, 60, "GATTACAG", 0.1)]
    second_test = [chip_like(rng, 8, 50, "CCGGTTA", 0.8)]
    return [
        {"test": test, "control": control, "thresholds": [4, 3, 3, 2], "growth": 2},
        # a second run on the same kernel: everything must have been cleared
        {"test": second_test, "control": [""], "thresholds": [2, 2, 2, 2], "growth": 1.5},
        # one long sequence line: the passes run at one base, so one window per k, per cycle
        # (here and below both passes as long: the rate counts the pipeline fill, 22 cycles since
        # the Count-Min unit's stage P, which 1,000 bases no longer hide at 0.98)
        {"test": [">long\n" + "".join(rng.choice("ACGT") for _ in range(3000)) + "\n"],
         "control": [">c\n" + "".join(rng.choice("ACGT") for _ in range(3000)) + "\n"],
         "thresholds": [3, 2, 2, 2], "growth": 2, "min_windows_per_cycle": 0.98},
        # 200 bp records with headers: the two-byte front end hides the non-base bytes
        {"test": [chip_like(rng, 15, 200, "GATTACAG", 0.5)],
         "control": [chip_like(rng, 15, 200, "GATTACAG", 0.1)],
         "thresholds": [5, 4, 3, 3], "growth": 2, "min_windows_per_cycle": 0.98},
    ]


@pytest.mark.parametrize("pause", [0.0, 0.3])
def test_motif_kernel_matches_golden(pause):
    run_kernel_bench(Params(**GEOMETRY), "sim.motif.tb_motif_kernel",
                     {"runs": runs(), "pause": pause, "seed": 3, "max_overhead_cycles": 64})


def test_default_kernel_converts_to_verilog():
    """The default build (k = 10..20, 4 x 2^14 CM-CU, 64 x 4 store, 512-bit bus) elaborates and
    converts with the Vitis port names."""
    from hw.vitis.top import to_verilog

    assert_vitis_kernel_verilog(to_verilog(MotifKernel()), "motif")


def test_kernel_rejects_bad_parameters():
    with pytest.raises(ValueError, match="counter_bits"):
        Params(counter_bits=20)
    with pytest.raises(ValueError, match="data_width"):
        Params(data_width=256)
    with pytest.raises(ValueError, match="canonical"):
        Params.for_algorithm(MotifParams(canonical=True))
