"""Cycles per k-mer of the jacc_sketch kernel with the minimum-count prefilter (SPEC 7), measured
in the cocotb bench on the generated Verilog (Verilator), no AXI stall.

    python bench/min_count_kernel.py [--bases N] [--genomes G]

Geometry: T = 2 lanes x B = 4 bytes (64-bit bus), k = 21, p = 10, w = 4, Count-Min 2 x 2^8 x
8 bits (tests/test_sketch_kernel.py::FILTERED, so its Verilog is shared). Input: G genomes of
reads (FASTQ, 100 bp, 1 % substitutions, seed 1) from a random N-base sequence, one genome per
lane at a time. For m = 1, 2, 3: input beats taken, cycles in which the memory offered a beat
outside genome ends (the core held or took it), cycles per beat, cycles per k-mer per lane, and
the cycles of every call from ap_start to ap_done.
"""

import argparse
import json
import pathlib
import random
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.runner import run_kernel_bench  # noqa: E402
from tests.genomes import random_sequence  # noqa: E402
from tests.test_fast_mincount import reads_text  # noqa: E402
from tests.test_sketch_kernel import FILTERED  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bases", type=int, default=2000)
    parser.add_argument("--genomes", type=int, default=2)
    args = parser.parse_args()
    rng = random.Random(1)
    genomes = []
    for _ in range(args.genomes):
        sequence = random_sequence(rng, args.bases)
        genomes.append([reads_text(rng, sequence, 3 * args.bases // 100, 100, 0.01,
                                   fastq=True).decode("latin-1")])
    print(f"geometry T={FILTERED.lanes} B={FILTERED.bytes_per_lane} k={FILTERED.k} "
          f"p={FILTERED.p}, Count-Min {FILTERED.mc_depth} x 2^{FILTERED.mc_width_bits} x "
          f"{FILTERED.mc_counter_bits} bit; {args.genomes} genomes of 3x 100 bp reads of "
          f"{args.bases} bases; no AXI stall")
    print()
    print("| m | beats taken | cycles offered | cycles per beat | cycles per k-mer per lane | "
          "call cycles |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as directory:
        for m in (1, 2, 3):
            report = pathlib.Path(directory) / f"m{m}.json"
            run_kernel_bench(FILTERED, "sim.sketch.tb_sketch_kernel",
                             {"genomes": genomes, "pause": 0.0, "response_latency": [0, 0],
                              "seed": 1,
                              "max_chunk_bytes": 4096, "max_block_beats": 64,
                              "min_count": m, "report": str(report)})
            figures = json.loads(report.read_text())
            taken, offered, kmers = figures["taken"], figures["offered"], figures["kmers"]
            calls = sum(cycles for _, cycles in figures["calls"])
            print(f"| {m} | {taken:,} | {offered:,} | {offered / taken:.2f} | "
                  f"{offered * FILTERED.lanes / kmers:.2f} | {calls:,} |", flush=True)


if __name__ == "__main__":
    main()
