"""Jaccard(reads, reference) with the minimum-count prefilter (SPEC 7) against exact counting,
and the Count-Min's false-pass rate, on reads simulated from a real genome by ART.

    python bench/reads_min_count.py [--genome FASTA[.gz]] [--coverage 27] [--length 125]
                                    [--widths 12,14,16,18,20] [--p 14] [--seed 1]

Reads: ART (art_illumina, Debian package art-nextgen-simulation-tools; Huang et al. 2012), the
HiSeq 2500 built-in error profile (-ss HS25), single-end, ``--coverage``-fold, ``--length`` bases,
seed ``--seed``, from ``--genome`` (default examples/lambda_virus.fa.gz, phage lambda, RefSeq
NC_001416.1, 48,502 bases). Canonical 31-mers throughout.

Per m = 1, 2, 3 and per Count-Min width 2^cw (depth 4, 8-bit counters):

* ``exact J``: Jaccard of the exact k-mer sets, {read k-mers seen >= m times} vs the reference's
  (counts from the native k-mer stream, numpy);
* ``HLL J``: the sketches' Jaccard (p, w = 4; SPEC 3), reads sketched by host.fast with
  ``--min-count m``, the reference with m = 1;
* ``false pass``: read k-mers with a true count < m that the Count-Min let through, as a share of
  all k-mers with a count < m (the Count-Min insertions of host.fast._native.cm_insert, in
  stream order, which the bench checks against the sketch: same registers);
* ``CM memory``: the counters of one lane, d x 2^cw x counter bits (the RTL stores
  mc_counter_bits = 8 bits; 2 bits would do for m <= 3).

The bench asserts that no k-mer with a true count >= m is dropped (Count-Min overestimates only)
and prints the table.

A real read set instead (nothing is downloaded; Debian's ``gasic-examples`` ships one)::

    python bench/reads_min_count.py --reads READS.fq[.gz] --reference REF.fa[.gz] [...]
                                    [--widths 20,24] [--p 14]

runs, per reference, per m = 2, 3 and per Count-Min width, the command a user types,
``python -m host dist READS REF --min-count m --mc-width-bits cw`` (host.cli.main, sw backend:
the reads filtered, the reference sketched in full), and prints its Jaccard beside the exact
one ({read k-mers seen >= m times} vs the reference's k-mers) and beside the same command with
``--min-count-fasta`` (the filter on the reference too: what ``--min-count`` did before).
"""

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host.fast.hashing import murmur3_32_array  # noqa: E402
from host.fast.hll import insert_kmers, sketch_files  # noqa: E402
from host.fast.kmers import genome_kmer_array  # noqa: E402
from host.fast.native import native  # noqa: E402
from kmerspec.golden.hll import HllParams, estimate, jaccard  # noqa: E402
from kmerspec.golden.mincount import MinCountParams  # noqa: E402

K = 31
NEWLINE = b"\n"   # an f-string may not hold a backslash before Python 3.12
DEPTH = 4
CHUNK = 1 << 20


def simulate_reads(genome: bytes, directory: Path, coverage: float, length: int,
                   seed: int) -> bytes:
    if shutil.which("art_illumina") is None:
        sys.exit("error: art_illumina not found; apt-get install art-nextgen-simulation-tools")
    reference = directory / "reference.fa"
    reference.write_bytes(genome)
    prefix = directory / "reads"
    done = subprocess.run(["art_illumina", "-ss", "HS25", "-i", str(reference), "-l",
                           str(length), "-f", str(coverage), "-rs", str(seed), "-na", "-q",
                           "-o", str(prefix)], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"error: art_illumina failed: {done.stderr.strip() or done.stdout.strip()}")
    return (directory / "reads.fq").read_bytes()


def passed_by_count_min(words: np.ndarray, params: MinCountParams) -> np.ndarray:
    """The insertions (positions in ``words``) whose conservative Count-Min estimate is >= m."""
    width = 1 << params.mc_width_bits
    counters = np.zeros(params.mc_depth * width, dtype=np.uint32)
    passed = np.zeros(words.size, dtype=bool)
    for start in range(0, words.size, CHUNK):
        chunk = words[start:start + CHUNK]
        indices = np.stack([murmur3_32_array(chunk, params.mc_seed + row) & np.uint32(width - 1)
                            for row in range(params.mc_depth)], axis=1)
        estimates = np.empty(chunk.size, dtype=np.uint32)
        native.cm_insert(counters, width, np.ascontiguousarray(indices, dtype=np.uint32),
                         estimates, params.max_count, True)
        passed[start:start + chunk.size] = estimates >= params.min_count
    return passed


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    both = np.intersect1d(a, b, assume_unique=True).size
    return both / (a.size + b.size - both)


def dist_jaccard(reads: str, reference: str, options: list[str], directory: Path) -> float:
    """Jaccard(reads, reference) as ``python -m host dist`` prints it."""
    from host.cli import main as host_main
    out = directory / "dist.tsv"
    if host_main(["dist", reads, reference, *options, "-o", str(out)]) != 0:
        sys.exit(f"error: python -m host dist {reads} {reference} {' '.join(options)} failed")
    rows = [line.split("\t") for line in out.read_text().splitlines()
            if not line.startswith("#")]
    return float(rows[0][2])


def real_reads(args, widths: list[int]) -> None:
    from host.io import read_sequence_file
    reads = read_sequence_file(args.reads)
    read_words = genome_kmer_array([reads], K)
    distinct, counts = np.unique(read_words, return_counts=True)
    print(f"reads {args.reads}: {len(reads):,} bytes, {reads.count(NEWLINE) // 4:,} reads, "
          f"{read_words.size:,} {K}-mers, {distinct.size:,} distinct; HLL p={args.p} w=4, "
          f"Count-Min depth {DEPTH} x 2^cw x 8 bits, sw backend")
    print()
    print("| reference | distinct k-mers | m | cw | exact J | `dist --min-count m` J | "
          "difference | with `--min-count-fasta` (old) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as directory:
        for reference in args.reference:
            genome = np.unique(genome_kmer_array([read_sequence_file(reference)], K))
            for m in (2, 3):
                solid = distinct[counts >= m]
                exact = exact_jaccard(solid, genome)
                for cw in widths:
                    options = ["--min-count", str(m), "--mc-width-bits", str(cw), "--index-bits",
                               str(args.p), "--backend", "sw"]
                    estimated = dist_jaccard(args.reads, reference, options, Path(directory))
                    old = dist_jaccard(args.reads, reference, [*options, "--min-count-fasta"],
                                       Path(directory))
                    print(f"| {Path(reference).name} | {genome.size:,} | {m} | {cw} | "
                          f"{exact:.4f} | {estimated:.4f} | {estimated - exact:+.4f} | "
                          f"{old:.4f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--genome", default=str(ROOT / "examples" / "lambda_virus.fa.gz"))
    parser.add_argument("--reads", help="a real read set (FASTQ): run `dist --min-count` on it")
    parser.add_argument("--reference", action="append", default=[],
                        help="with --reads: a reference genome (FASTA); repeat for several")
    parser.add_argument("--coverage", type=float, default=27)
    parser.add_argument("--length", type=int, default=125)
    parser.add_argument("--widths", default="12,14,16,18,20",
                        help="log2 Count-Min counters per row, comma-separated")
    parser.add_argument("--counter-bits", type=int, default=8,
                        help="mc_counter_bits (2: the jacc_sketch kernel's prefilter, m <= 3)")
    parser.add_argument("--p", type=int, default=14)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    if args.reads:
        if not args.reference:
            parser.error("--reads needs --reference")
        real_reads(args, widths)
        return

    raw = Path(args.genome).read_bytes()
    genome = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    with tempfile.TemporaryDirectory() as directory:
        reads = simulate_reads(genome, Path(directory), args.coverage, args.length, args.seed)

    hll = HllParams(args.p, 4)
    reference_kmers = np.unique(genome_kmer_array([genome], K))
    read_words = genome_kmer_array([reads], K)  # in stream order: the Count-Min's input
    distinct, counts = np.unique(read_words, return_counts=True)
    reference_registers = sketch_files([genome], K, hll)
    print(f"genome {Path(args.genome).name}: {len(genome):,} bytes, {reference_kmers.size:,} "
          f"distinct {K}-mers; ART HS25 reads: {args.coverage:g}x {args.length} bp, "
          f"{reads.count(NEWLINE) // 4:,} reads (seed {args.seed}), {read_words.size:,} k-mers, "
          f"{distinct.size:,} distinct; HLL p={args.p} w=4")
    print()
    print("| m | Count-Min d x 2^cw | CM memory per lane | exact J | HLL J | false pass | "
          "k-mers kept (exact) | kept by CM | sketch s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in (1, 2, 3):
        solid = distinct[counts >= m]
        exact = exact_jaccard(solid, reference_kmers)
        for cw in (widths if m > 1 else [None]):
            params = MinCountParams(min_count=m, mc_depth=DEPTH, mc_width_bits=cw or 1,
                                    mc_counter_bits=args.counter_bits)
            started = time.perf_counter()
            registers = sketch_files([reads], K, hll, min_count=params)
            seconds = time.perf_counter() - started
            union = np.maximum(registers, reference_registers)
            estimated = jaccard(estimate(registers.tolist(), hll),
                                estimate(reference_registers.tolist(), hll),
                                estimate(union.tolist(), hll))
            if m == 1:
                kept, false_pass, geometry, memory = distinct, 0.0, "none", "0"
            else:
                kept = np.unique(read_words[passed_by_count_min(read_words, params)])
                rare = distinct[counts < m]
                if np.setdiff1d(solid, kept, assume_unique=True).size:
                    sys.exit(f"error: m={m} cw={cw}: the Count-Min dropped a k-mer seen "
                             f"{m} times")
                false_pass = np.intersect1d(kept, rare, assume_unique=True).size / rare.size
                geometry = f"{DEPTH} x 2^{cw} x {params.mc_counter_bits} bit"
                memory = f"{DEPTH * (1 << cw) * params.mc_counter_bits / 8 / 1024:,.0f} KiB"
            check = np.zeros(hll.m, dtype=np.uint8)
            insert_kmers(check, kept, hll)
            if not np.array_equal(check, registers):
                sys.exit(f"error: m={m} cw={cw}: the sketch is not the HLL of the k-mers the "
                         f"Count-Min passed")
            print(f"| {m} | {geometry} | {memory} | {exact:.4f} | {estimated:.4f} | "
                  f"{false_pass:.4f} | {solid.size:,} | {kept.size:,} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
