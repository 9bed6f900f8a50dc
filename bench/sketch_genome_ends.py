"""Cycles per input beat of the jacc_sketch kernel over whole calls, on genomes shorter and longer
than the length that double-buffered genome ends hide completely.

    python bench/sketch_genome_ends.py [--memory ddr|ideal] [--short 300] [--long 3000]
                                       [--genomes 8] [--chunk-genomes 4]

Runs the bit-exact cocotb bench ``sim.sketch.tb_sketch_kernel`` (every register, Z and nz of
every record against the golden model) on the generated Verilog of the CI geometry of
``tests/test_sketch_kernel.py`` (T = 2 lanes x B = 4 bytes, 64-bit bus, k = 21, p = 10, w = 4;
Verilator, the build shared with that test), under the DDR-like memory (sim.ddr_memory, its
defaults) or the ideal AxiRam, once per genome set: ``--genomes`` fragments of real genomes and
reads (sim.real_data.genome_fragments) of at most ``--short`` and of at most ``--long`` bytes,
in kernel calls of at most ``--chunk-genomes`` times that many bytes (so both sets take a few
calls: the bench checks genomes spanning calls).

Figures per set: cycles per 64-bit input beat from ap_start to ap_done summed over the calls
(memory latency, stops and record writes included) and its share of what the memory can give;
the core's stops of the input (``stalled``: the clear after reset, then the genome ends that
wait for the lane's other bank to be drained) and the beats offered / taken outside them.
"""

import argparse
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from sim.ddr_memory import DdrTiming  # noqa: E402
from sim.real_data import genome_fragments  # noqa: E402
from sim.runner import run_kernel_bench  # noqa: E402
from tests.test_sketch_kernel import SMALL  # noqa: E402


def run_set(genomes, args, directory: pathlib.Path, name: str, chunk_bytes: int) -> dict:
    report = directory / f"{name}.json"
    genomes_file = directory / f"{name}-genomes.json"
    genomes_file.write_text(json.dumps([[f.decode("latin-1") for f in files]
                                        for files in genomes]))
    memory = {"memory": "ideal"} if args.memory == "ideal" else {"memory": "ddr", "ddr": {}}
    started = time.time()
    run_kernel_bench(SMALL, "sim.sketch.tb_sketch_kernel", {
        "genomes_file": str(genomes_file), "seed": 5, "max_chunk_bytes": chunk_bytes,
        "max_block_beats": args.block_beats, "report": str(report),
        "pause": 0.0, "response_latency": [0, 0], **memory})    # no random stalls: cycles
    result = json.loads(report.read_text())
    result["seconds"] = time.time() - started
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memory", choices=("ddr", "ideal"), default="ddr")
    parser.add_argument("--short", type=int, default=300, help="bytes per short genome (at most)")
    parser.add_argument("--long", type=int, default=3000, help="bytes per long genome (at most)")
    parser.add_argument("--genomes", type=int, default=8)
    parser.add_argument("--chunk-genomes", type=int, default=4,
                        help="kernel calls of at most this many times a genome's bytes")
    parser.add_argument("--block-beats", type=int, default=64)
    args = parser.parse_args(argv)
    peak = 1.0 if args.memory == "ideal" else DdrTiming().peak_beats_per_cycle
    memory = "ideal AxiRam" if args.memory == "ideal" else \
        f"DDR-like (sim.ddr_memory defaults, at most {peak:.3f} beats per cycle)"
    print(f"jacc_sketch T={SMALL.lanes} x B={SMALL.bytes_per_lane} ({SMALL.data_width}-bit bus), "
          f"k={SMALL.k}, p={SMALL.p}, w={SMALL.w}; memory: {memory}; input: "
          f"{args.genomes} real fragments per set (sim.real_data), chunks of <= "
          f"{args.chunk_genomes} x the genome size\n")
    print("| genomes | bytes | beats | calls | cycles | cycles/beat | vs memory | stops (clear "
          "first) | stop cycles | taken/offered outside stops | sim s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="sketch-genome-ends-") as directory:
        for label, size in (("short", args.short), ("long", args.long)):
            genomes = genome_fragments(args.genomes, size)
            result = run_set(genomes, args, pathlib.Path(directory), label,
                             args.chunk_genomes * size)
            beats = sum(b for b, _ in result["calls"])
            cycles = sum(c for _, c in result["calls"])
            stops = result["stops"]
            print(f"| {args.genomes} {label} (<= {size} B) | {sum(map(len, sum(genomes, [])))} "
                  f"| {beats} | {len(result['calls'])} | {cycles} | {cycles / beats:.3f} "
                  f"| {beats / cycles / peak:.3f} | {len(stops)}: {', '.join(map(str, stops))} "
                  f"| {sum(stops)} | {result['taken']}/{result['offered']} "
                  f"| {result['seconds']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
