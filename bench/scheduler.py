"""Dask scaling on this machine, and a model of a RefSeq run on an F1/Alveo cluster.

    python bench/scheduler.py [--genomes 24] [--bases 4000000] [--dist-genomes 400]

Part 1 measures `sketch` and `dist` (sw backend) in one process and on local Dask clusters of
1 and 2 worker processes. Part 2 models a cluster of FPGA hosts for RefSeq (128,110 genomes,
464.4 GiB gzip, 1.656e12 bases) from the kernels' measured cycles per beat and per call and the
per-file I/O rate measured in the JACC-FPGA paper. Prints tables; asserts nothing.
"""

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.options import bench_parser  # noqa: E402
from host.cli import main as cli  # noqa: E402

# -- RefSeq and the F1 host, as the JACC-FPGA paper reports them (Soto, Hernández, Figueroa,
# 2022; https://github.com/vlsi-udec/jacc-fpga) ------------------------------------------
REFSEQ_GENOMES = 128_110
REFSEQ_BASES = 1_655_908_634_893
REFSEQ_GZIP_BYTES = 464.4 * 2**30
F1_DISK_BYTES_PER_S = 212 * 2**20          # gp3 cap of an f1.2xlarge (the paper's bottleneck)
PAPER_SKETCH_S, PAPER_SIMILARITY_S = 2388, 85

# -- our kernels, measured in simulation (bench/jacc_sketch_kernel.py,
# bench/jacc_similarity_kernel.py) ---------------------------------------------------------
CLOCK_HZ = 250e6
SKETCH_BYTES_PER_CYCLE = 64                # 1.00 cycle per 512-bit beat, all lanes busy
SIMILARITY_PIVOTS, SIMILARITY_STREAMS = 80, 4
SIMILARITY_CYCLES_PER_GROUP = 512          # D=4 sketches of 64 Kibit share the 512-bit beat:
                                           # 9 + 512 g + 9 cycles per call (bench/similarity_kernel)
OUTPUT_BYTES_PER_PAIR = 9                  # TSV text of one matrix entry ("0.123456\t")


def write_genomes(directory: Path, genomes: int, bases: int) -> list[str]:
    rng = np.random.default_rng(7)
    base = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, bases)]
    paths = []
    for i in range(genomes):
        genome = base.copy()
        mutate = rng.random(bases) < 0.002 * (i % 50)
        genome[mutate] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, mutate.sum())]
        path = directory / f"genome{i:03d}.fa"
        text = genome.tobytes()
        path.write_bytes(b">g\n" + b"\n".join(text[j:j + 80] for j in range(0, bases, 80)) + b"\n")
        paths.append(str(path))
    return paths


def timed(arguments: list[str]) -> float:
    start = time.perf_counter()
    assert cli(arguments) == 0
    return time.perf_counter() - start


def many_sketches(path: Path, genomes: int, p: int = 14) -> None:
    """A sketch file of ``genomes`` random sets (10^4..10^6 k-mers) for the dist timing."""
    from host.fast.hll import insert_kmers
    from kmerspec.golden.hll import HllParams
    from host.sketchfile import SketchSet, write_sketches
    params = HllParams(p, 4)
    rng = np.random.default_rng(8)
    registers = np.zeros((genomes, params.m), dtype=np.uint8)
    for row in registers:
        insert_kmers(row, rng.integers(0, 2**64, int(rng.integers(10**4, 10**6)),
                                       dtype=np.uint64), params)
    write_sketches(path, SketchSet(
        kind="hll", params={"k": 31, "p": p, "w": 4, "canonical": True, "hash": "fmix64"},
        names=[f"g{i}" for i in range(genomes)], files=[[f"g{i}.fa"] for i in range(genomes)],
        arrays={"registers": registers}))


def measure(genomes: int, bases: int, dist_genomes: int) -> None:
    from host.scheduler import DaskExecutor
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        paths = write_genomes(directory, genomes, bases)
        sketch = str(directory / "all.sketch")
        big = directory / "many.sketch"
        many_sketches(big, dist_genomes)
        rows = []
        for workers in (None, 1, 2):
            executor = DaskExecutor(workers=workers) if workers else None
            extra = ["--scheduler", executor.client.scheduler.address] if executor else []
            try:
                sketch_s = timed(["sketch", *paths, "-o", sketch, *extra])
                dist_s = timed(["dist", str(big), "-o", str(directory / "d.tsv"), *extra])
            finally:
                if executor:
                    executor.close()
            rows.append((f"Dask, {workers} worker{'s' * (workers > 1)}" if workers
                         else "1 process", sketch_s, dist_s))
    total_bases = genomes * bases
    pairs = dist_genomes * (dist_genomes - 1) // 2
    print(f"sketch: {genomes} genomes x {bases / 1e6:g} Mbase; dist: {dist_genomes} sketches "
          f"(p=14); sw backend on this machine (2 cores); clusters started before timing")
    print(f"{'run':<18} {'sketch s':>9} {'Mbase/s':>8} {'speed-up':>8} {'dist s':>8} "
          f"{'pairs/s':>9} {'speed-up':>8}")
    for label, sketch_s, dist_s in rows:
        print(f"{label:<18} {sketch_s:>9.2f} {total_bases / sketch_s / 1e6:>8.1f} "
              f"{rows[0][1] / sketch_s:>8.2f} {dist_s:>8.2f} {pairs / dist_s:>9.0f} "
              f"{rows[0][2] / dist_s:>8.2f}")


def model() -> None:
    pairs = REFSEQ_GENOMES * (REFSEQ_GENOMES - 1) / 2
    kernel_sketch_s = REFSEQ_BASES * 1.04 / SKETCH_BYTES_PER_CYCLE / CLOCK_HZ  # ~4% headers, EOLs
    io_s = REFSEQ_GZIP_BYTES / F1_DISK_BYTES_PER_S
    # every group period, V pivots meet D streamed sketches
    jaccard_per_s = SIMILARITY_PIVOTS * SIMILARITY_STREAMS * CLOCK_HZ / SIMILARITY_CYCLES_PER_GROUP
    kernel_similarity_s = pairs / jaccard_per_s
    output_s = 2 * pairs * OUTPUT_BYTES_PER_PAIR / F1_DISK_BYTES_PER_S  # full square matrix
    print()
    print("Model: complete RefSeq (128,110 genomes, 464.4 GiB gzip), full matrix")
    print(f"{'hosts':>5} {'sketch s':>9} {'bound':>7} {'similarity s':>13} {'bound':>7} "
          f"{'total s':>8}")
    for hosts in (1, 2, 4, 8, 16):
        sketch_s = max(io_s, kernel_sketch_s) / hosts
        sketch_bound = "disk" if io_s > kernel_sketch_s else "kernel"
        similarity_s = max(kernel_similarity_s, output_s) / hosts
        similarity_bound = "output" if output_s > kernel_similarity_s else "kernel"
        print(f"{hosts:>5} {sketch_s:>9.0f} {sketch_bound:>7} {similarity_s:>13.1f} "
              f"{similarity_bound:>7} {sketch_s + similarity_s:>8.0f}")
    print(f"JACC-FPGA (1 x f1.2xlarge): sketch {PAPER_SKETCH_S} s, similarity {PAPER_SIMILARITY_S} s")
    print(f"assumptions: per-host disk {F1_DISK_BYTES_PER_S / 2**20:.0f} MiB/s (gp3 cap of the "
          f"paper), kernel {SKETCH_BYTES_PER_CYCLE} B/cycle at {CLOCK_HZ / 1e6:.0f} MHz "
          f"(= {kernel_sketch_s:.0f} s of kernel time for all of RefSeq on one card), "
          f"similarity V={SIMILARITY_PIVOTS}, D={SIMILARITY_STREAMS}: "
          f"{jaccard_per_s / 1e6:.0f} M Jaccard/s per card ({kernel_similarity_s:.0f} s), "
          f"full TSV matrix {2 * pairs * OUTPUT_BYTES_PER_PAIR / 2**30:.0f} GiB written at the "
          f"disk rate ({output_s:.0f} s; --format edges --threshold writes far less); row tiles "
          f"split evenly over hosts; the sketches (1 GiB) are broadcast once.")


def main() -> None:
    parser = bench_parser(__doc__, genomes=24, bases=4_000_000, dist_genomes=400)
    args = parser.parse_args()
    measure(args.genomes, args.bases, args.dist_genomes)
    model()


if __name__ == "__main__":
    main()
