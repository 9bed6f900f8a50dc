"""Peak memory and time of ``sketch`` and ``cluster --ani 95`` on a collection of 100,000
generated genomes (issue 52 item 2: 100,000 genomes sketched, stored and clustered within 2 GB).

    python bench/collection_scale.py [--genomes 100000] [--families 500] [--length 5000]
                                     [--rate 0.01] [--seed 52] [--keep DIR]

The genomes are families of mutated random genomes: each family has a random base genome of
--length uniform random bases (A, C, G, T), and each of its --genomes / --families members is
the base with every base substituted (by one of the three others, uniformly) with probability
--rate, independently; so two members of a family are about 100 (1 - 2 rate) % ANI apart (98 %
at the default) and two families share no 31-mer but by chance. Each genome is a FASTA file of
its own (1,000 files a directory), listed in a file given to ``sketch -l``.

Two commands, each in a fresh process, one thread, at the default parameters (k = 31, p = 14,
w = 4):

    python -m host sketch -l LIST -p 1 -o all.sketch
    python -m host cluster all.sketch --ani 95 -p 1 -o clusters.tsv

For each: wall seconds, CPU seconds (user + system of the process, from its rusage) and peak
resident memory (its ru_maxrss), with the load average before it (a shared machine's wall times
are noise; CPU seconds and memory are not). Then: how many distinct sketches the file holds
(rows compared byte for byte), the sketch file's size, and whether the clusters are exactly
the families. Prints a table; asserts nothing.
"""

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cluster_scale import run  # noqa: E402
from bench.options import bench_parser  # noqa: E402
from host.sketchfile import read_sketches  # noqa: E402

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def write_genomes(directory: Path, genomes: int, families: int, length: int, rate: float,
                  seed: int) -> tuple[Path, np.ndarray]:
    """Write the genomes' FASTA files and their list; (the list, each genome's family)."""
    rng = np.random.default_rng(seed)
    family = np.arange(genomes) * families // genomes     # families of equal size, in order
    paths = []
    base = None
    for index in range(genomes):
        if index == 0 or family[index] != family[index - 1]:
            base = rng.integers(0, 4, length, dtype=np.uint8)
        genome = base.copy()
        changed = np.flatnonzero(rng.random(length) < rate)
        genome[changed] = (genome[changed] + rng.integers(1, 4, changed.size, dtype=np.uint8)) % 4
        folder = directory / f"d{index // 1000:03d}"
        if index % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"g{index:06d}.fa"
        path.write_bytes(b">g%06d family %d\n" % (index, family[index]) + BASES[genome].tobytes()
                         + b"\n")
        paths.append(str(path))
    listing = directory / "genomes.txt"
    listing.write_text("\n".join(paths) + "\n")
    return listing, family


def distinct_sketches(path: Path) -> int:
    sketches = read_sketches(path)
    rows = sketches.packed_registers()
    return len({hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in rows})


def clusters_are_families(path: Path, family: np.ndarray) -> tuple[int, bool]:
    rows = [line.split("\t") for line in path.read_text().splitlines()
            if line and not line.startswith("#")]
    cluster = np.array([int(row[1]) for row in rows])
    pairs = {(int(c), int(f)) for c, f in zip(cluster, family)}
    count = len(set(cluster.tolist()))
    return count, len(pairs) == count == len(set(family.tolist()))


def main() -> None:
    parser = bench_parser(__doc__, genomes=100_000, families=500, length=5000, rate=0.01, seed=52)
    parser.add_argument("--keep", type=Path, default=None,
                        help="make the genomes and outputs in this directory and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="collection-scale-") as scratch:
        directory = args.keep or Path(scratch)
        started = time.perf_counter()
        listing, family = write_genomes(directory, args.genomes, args.families, args.length,
                                        args.rate, args.seed)
        made = time.perf_counter() - started
        sketch, clusters = directory / "all.sketch", directory / "clusters.tsv"
        steps = [("sketch -l LIST -p 1", run(["sketch", "-l", str(listing), "-p", "1",
                                                "-o", str(sketch)]))]
        steps.append(("cluster --ani 95 -p 1", run(["cluster", str(sketch), "--ani", "95",
                                                     "-p", "1", "-o", str(clusters)])))
        distinct = distinct_sketches(sketch)
        found, exact = clusters_are_families(clusters, family)
        print(f"# collection_scale: {args.genomes:,} genomes in {args.families:,} families of "
              f"random {args.length:,}-base genomes, substitutions at rate {args.rate:g} "
              f"(written in {made:.0f} s); k=31, p=14, w=4, one thread; {os.cpu_count()} cores")
        print("| step | CPU (s) | wall (s) | load before | peak RSS (MiB) |")
        print("| --- | --- | --- | --- | --- |")
        for name, step in steps:
            print(f"| {name} | {step['cpu_s']:.1f} | {step['wall_s']:.1f} | {step['load']:.2f} | "
                  f"{step['peak_mib']:,.0f} |")
        print(f"\nsketch file: {sketch.stat().st_size / 2**20:,.0f} MiB, {distinct:,} distinct "
              f"sketches of {args.genomes:,}; clusters: {found:,} "
              f"({'exactly the families' if exact else 'NOT the families'})")


if __name__ == "__main__":
    main()
