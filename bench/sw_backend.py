"""Throughput of the fast software backend: sketching (bases/s) and all-pairs Jaccard (pairs/s).

    python bench/sw_backend.py [--quick]

Synthetic genomes (uniform random bases, 80-column FASTA) are written to a temporary directory
and sketched through the same path as ``python -m host sketch`` (file read + parse + hash +
HLL), single-threaded. Prints a table; asserts nothing.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from host.backends import get_backend
from host.cli import _sketch_sequences
from host.fast.hll import insert_kmers
from kmerspec.golden.hll import HllParams
from host.similarity import all_pairs

PARAMS = {"k": 31, "p": 14, "w": 4, "canonical": True, "hash": "fmix64"}


def write_genome(path: Path, bases: int, rng: np.random.Generator) -> None:
    sequence = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, bases)].tobytes()
    body = b"\n".join(sequence[i:i + 80] for i in range(0, len(sequence), 80))
    path.write_bytes(b">synthetic genome\n" + body + b"\n")


def time_sketch(paths: list[Path], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        _sketch_sequences([str(p) for p in paths], PARAMS, get_backend("sw"))
        best = min(best, time.perf_counter() - start)
    return best


def time_all_pairs(genomes: int, params: HllParams, rng: np.random.Generator) -> tuple[int, float]:
    registers = np.zeros((genomes, params.m), dtype=np.uint8)
    for row in registers:
        insert_kmers(row, rng.integers(0, 2**64, int(rng.integers(10**4, 10**6)),
                                       dtype=np.uint64), params)
    start = time.perf_counter()
    pairs = sum(js.size for _, js, _ in all_pairs(registers, params))
    return pairs, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (20 Mbase set)")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "genome_5M.fa"
        write_genome(one, 5_000_000, rng)
        seconds = time_sketch([one], repeats=3)
        rows.append(("sketch, 1 genome x 5 Mbase", 5e6, seconds))
        set_genomes = 4 if args.quick else 20
        paths = []
        for i in range(set_genomes):
            paths.append(Path(tmp) / f"set_{i}.fa")
            write_genome(paths[-1], 5_000_000, rng)
        seconds = time_sketch(paths, repeats=1)
        rows.append((f"sketch, {set_genomes} genomes x 5 Mbase", set_genomes * 5e6, seconds))
    print(f"{'workload':<34} {'bases':>12} {'seconds':>9} {'Mbases/s':>9}")
    for name, bases, seconds in rows:
        print(f"{name:<34} {bases:>12.3g} {seconds:>9.3f} {bases / seconds / 1e6:>9.1f}")
    print("target: >= 20 Mbases/s single-thread")
    print()
    genomes = 100 if args.quick else 300
    pairs, seconds = time_all_pairs(genomes, HllParams(), rng)
    print(f"{'all-pairs Jaccard (p=14, w=4)':<34} {'pairs':>12} {'seconds':>9} {'pairs/s':>9}")
    print(f"{f'{genomes} genomes':<34} {pairs:>12} {seconds:>9.3f} {pairs / seconds:>9.0f}")


if __name__ == "__main__":
    main()
