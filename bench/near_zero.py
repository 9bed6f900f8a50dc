"""Values near zero: unrelated genomes against the detection rule, and the estimators' Jaccard
error on every pair of 20 real bacterial genomes, beside Mash (SPEC 3 "Estimators",
"Detection"; docs/accuracy.md).

    python bench/near_zero.py [--p 14] [--k 31] [--mash-size 10000] [--speed-genomes 300]
                              [--null-sketches 40] [--record]

Genomes (Debian packages; apt-get install ragout-examples kaptive-example mash):
/usr/share/doc/ragout/examples/*/references: E. coli DH1 and MG1655, H. pylori ELS37, G27,
Gambia94/24, Puno120 and SJM180, S. aureus COL, JKD6008, N315, RF122 and USA300_FPR3757,
V. cholerae H1, O1 Inaba, O1 biovar and O395 (complete genomes; the two chromosomes of
V. cholerae are one genome); /usr/share/doc/kaptive/examples: four Klebsiella assemblies
(64-119 contigs, one genome each). 20 genomes, 5 genera, 190 pairs.

"exact" is |A n B| / |A u B| over the full sets of canonical k-mers (host.fast.kmers, the
parser of SPEC 1; every distinct k-mer of the 20 genomes is tagged with the bit mask of the
genomes holding it). "hll" and "mle" (dist's default) are the estimators of SPEC 3 at p
(w = 4) computed as dist computes them (the native pair loops of host.similarity), "raw"
before and "printed" after the detection rule at Z = 3. Mash: ``mash sketch -k K -s S`` and
``mash dist``, its Jaccard the shared hashes over S. "unrelated": exact J < 0.001. Then the
speed of the all-pairs matrix by both estimators and the null calibration of both detection
rules on random disjoint sets. Asserts nothing; --record writes bench/results/near_zero.json.
"""

import argparse
import gzip
import math
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.estimators import hll_detected as detected_by_hll  # noqa: E402
from host.estimators import hll_floor, mle_pairs  # noqa: E402
from host.fast.hll import sketch_genomes  # noqa: E402
from host.fast.kmers import kmer_array  # noqa: E402
from host.metrics import pair_similarity  # noqa: E402
from host.similarity import PackedSketches, mash_distance, union_rows  # noqa: E402
from kmerspec.golden.hll import HllParams  # noqa: E402
from kmerspec.golden.hll_joint import HLL_RELATIVE_ERROR  # noqa: E402

RAGOUT = Path("/usr/share/doc/ragout/examples")
KAPTIVE = Path("/usr/share/doc/kaptive/examples")


def genome_files() -> list[tuple[str, str, Path]]:
    """(genus, name, path) of the 20 genomes."""
    if not RAGOUT.is_dir() or not KAPTIVE.is_dir():
        raise SystemExit("the genomes are missing: apt-get install ragout-examples kaptive-example")
    genera = {"E.Coli": "Escherichia", "H.Pylori": "Helicobacter", "S.Aureus": "Staphylococcus",
              "V.Cholerae": "Vibrio"}
    files = [(genus, f"{folder[0]}.{folder.split('.')[1].lower()}_{path.name.split('.')[0]}",
              path)
             for folder, genus in genera.items()
             for path in sorted((RAGOUT / folder / "references").glob("*.fasta.gz"))]
    files += [("Klebsiella", f"Kp_{path.name.split('.')[0]}", path)
              for path in sorted(KAPTIVE.glob("*.fasta.gz"))]
    return files


def distinct_kmers(text: bytes, k: int) -> np.ndarray:
    words = np.sort(kmer_array(text, k, True))
    return words[np.concatenate([[True], words[1:] != words[:-1]])] if words.size else words


def exact_intersections(sets: list[np.ndarray], parts: int = 16) -> np.ndarray:
    """|A n B| of every pair: each distinct k-mer's genome mask (a bit per genome), counted
    per mask, range by range of k-mer values so memory stays a sixteenth of the k-mers."""
    n = len(sets)
    shared = np.zeros((n, n), dtype=np.int64)
    top = max(int(s[-1]) for s in sets if s.size) + 1
    bounds = [top * i // parts for i in range(parts + 1)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        chunks, tags = [], []
        for g, s in enumerate(sets):
            a, b = np.searchsorted(s, [lo, hi])
            chunks.append(s[a:b])
            tags.append(np.full(b - a, 1 << g, dtype=np.int64))
        words, masks = np.concatenate(chunks), np.concatenate(tags)
        order = np.argsort(words, kind="stable")
        words, masks = words[order], masks[order]
        starts = np.flatnonzero(np.concatenate([[True], words[1:] != words[:-1]]))
        per_kmer = np.bitwise_or.reduceat(masks, starts) if starts.size else masks[:0]
        values, counts = np.unique(per_kmer, return_counts=True)
        for mask, count in zip(values.tolist(), counts.tolist()):
            members = [g for g in range(n) if mask >> g & 1]
            for i in members:
                for j in members:
                    shared[i, j] += count
    return shared


def run_mash(paths: list[Path], k: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Jaccard = shared hashes / size, distance, p-value) matrices from mash dist."""
    if shutil.which("mash") is None:
        raise SystemExit("mash not found: apt-get install mash")
    n = len(paths)
    with tempfile.TemporaryDirectory() as tmp:
        links = []
        for i, path in enumerate(paths):  # mash names genomes by file: distinct names
            link = Path(tmp) / f"g{i:02d}.fasta.gz"
            link.symlink_to(path)
            links.append(str(link))
        sketch = Path(tmp) / "all"
        subprocess.run(["mash", "sketch", "-k", str(k), "-s", str(size), "-o", str(sketch),
                        *links], check=True, capture_output=True)
        out = subprocess.run(["mash", "dist", f"{sketch}.msh", f"{sketch}.msh"], check=True,
                             capture_output=True, text=True).stdout
    jac, dist, pval = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    for line in out.splitlines():
        a, b, d, p, hashes = line.split("\t")
        i, j = (int(re.search(r"g(\d+)\.fasta", x).group(1)) for x in (a, b))
        found, total = map(int, hashes.split("/"))
        jac[i, j], dist[i, j], pval[i, j] = found / total, float(d), float(p)
    return jac, dist, pval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, default=14)
    parser.add_argument("--k", type=int, default=31)
    parser.add_argument("--mash-size", type=int, default=10000)
    parser.add_argument("--speed-genomes", type=int, default=300,
                        help="time the all-pairs mle matrix of this many sketches: each real "
                             "sketch united with random sets of 50,000 k-mers (0: skip)")
    parser.add_argument("--null-sketches", type=int, default=40,
                        help="calibrate the detection rules on all pairs of this many random "
                             "disjoint sets at p = 12 (0: skip)")
    parser.add_argument("--record", action="store_true",
                        help="also write bench/results/near_zero.json (docs/benchmarks.md and "
                             "the README's headline row are made from it)")
    args = parser.parse_args()
    params, k = HllParams(args.p, 4), args.k
    files = genome_files()
    names = [name for _, name, _ in files]
    genera = [genus for genus, _, _ in files]
    n = len(files)
    texts = [gzip.decompress(path.read_bytes()) for _, _, path in files]

    started = time.time()
    sets = [distinct_kmers(text, k) for text in texts]
    sizes = np.array([s.size for s in sets], dtype=np.float64)
    shared = exact_intersections(sets)
    del sets
    exact_j = shared / (sizes[:, None] + sizes[None, :] - shared)
    exact_c = shared / sizes[:, None]
    exact_seconds = time.time() - started

    registers = np.array(list(sketch_genomes([[t] for t in texts], k, params)))
    packed = PackedSketches(registers, params)
    cards = packed.cards
    unions = union_rows(packed, params, np.arange(n))
    hll_j = pair_similarity("jaccard", cards[:, None], cards[None, :], unions)
    hll_c = pair_similarity("containment", cards[:, None], cards[None, :], unions)
    floor = hll_floor(params)
    hll_detected = detected_by_hll(cards[:, None], cards[None, :], unions, params)
    hll_z = (cards[:, None] + cards[None, :] - unions) / (
        HLL_RELATIVE_ERROR / math.sqrt(params.m) * unions)

    left, right = np.triu_indices(n, 1)
    cpu, wall = time.process_time(), time.time()
    mle = mle_pairs(registers, params, left, right)
    mle_cpu, mle_wall = time.process_time() - cpu, time.time() - wall
    cpu = time.process_time()
    for i in range(n):
        union_rows(packed, params, [i], np.arange(i + 1, n))
    hll_cpu = time.process_time() - cpu
    mle_j, mle_c, mle_cr = (np.zeros((n, n)) for _ in range(3))
    mle_j[left, right] = mle_j[right, left] = mle.similarity("jaccard")
    mle_c[left, right] = mle.similarity("containment")
    swapped_c = np.where(mle.y_only + mle.shared > 0,
                         mle.shared / np.maximum(mle.y_only + mle.shared, 1e-300), 0.0)
    mle_c[right, left] = swapped_c
    mle_det = np.zeros((n, n), dtype=bool)
    mle_det[left, right] = mle_det[right, left] = mle.detected()
    mle_lr = np.zeros((n, n))
    mle_lr[left, right] = mle_lr[right, left] = mle.likelihood_ratio

    mash_j, mash_d, mash_p = run_mash([path for _, _, path in files], k, args.mash_size)

    pair = (left, right)
    unrelated = exact_j[pair] < 0.001
    same_genus = np.array([genera[i] == genera[j] for i, j in zip(left, right)])
    ordered = ~np.eye(n, dtype=bool)
    unrelated_ordered = ordered & (exact_j < 0.001)

    def ani(j):
        return 100 * (1 - mash_distance(j, k))

    print(f"# near_zero: {n} genomes, {left.size} pairs, k={k}, p={args.p} (m={params.m}), w=4, "
          f"Z=3 (hll floor J >= {floor:.4f}), Mash s={args.mash_size}")
    print(f"# exact k-mer sets: {exact_seconds:.0f} s")
    print("\n| genome | genus | distinct 31-mers |\n| --- | --- | --- |")
    for name, genus, size in zip(names, genera, sizes):
        print(f"| {name} | {genus} | {int(size):,} |")

    print(f"\nUnrelated pairs (exact J < 0.001): {unrelated.sum()} of {left.size} "
          f"({(unrelated & same_genus).sum()} within a genus); exact J of them at most "
          f"{exact_j[pair][unrelated].max():.2e}; the other pairs' exact J at least "
          f"{exact_j[pair][~unrelated].min():.4f}\n")
    print("| on unrelated pairs | hll raw | hll printed | mle raw | mle printed | Mash |")
    print("| --- | --- | --- | --- | --- | --- |")
    ju = unrelated
    print(f"| max J | {hll_j[pair][ju].max():.4f} | "
          f"{np.where(hll_detected, hll_j, 0)[pair][ju].max():.4f} | {mle_j[pair][ju].max():.4f} "
          f"| {np.where(mle_det, mle_j, 0)[pair][ju].max():.4f} | {mash_j[pair][ju].max():.4f} |")
    print(f"| max containment (both directions) | {hll_c[unrelated_ordered].max():.4f} | "
          f"{np.where(hll_detected, hll_c, 0)[unrelated_ordered].max():.4f} | "
          f"{mle_c[unrelated_ordered].max():.4f} | "
          f"{np.where(mle_det, mle_c, 0)[unrelated_ordered].max():.4f} | - |")
    print(f"| max ANI (%) | {ani(hll_j[pair][ju]).max():.2f} | "
          f"{ani(np.where(hll_detected, hll_j, 0)[pair][ju]).max():.2f} | "
          f"{ani(mle_j[pair][ju]).max():.2f} | "
          f"{ani(np.where(mle_det, mle_j, 0)[pair][ju]).max():.2f} | "
          f"{100 * (1 - mash_d[pair][ju].min()):.2f} |")
    print(f"| reported below detection | - | {(~hll_detected[pair][ju]).sum()} of {ju.sum()} | - | "
          f"{(~mle_det[pair][ju]).sum()} of {ju.sum()} | distance 1: "
          f"{(mash_d[pair][ju] >= 1).sum()} of {ju.sum()} |")
    print(f"| largest significance | - | I / sigma = {hll_z[pair][ju].max():.2f} | - | "
          f"sqrt(LR) = {math.sqrt(max(mle_lr[pair][ju].max(), 0)):.2f} | smallest p-value "
          f"{mash_p[pair][ju].min():.3g} |")

    rel = ~unrelated
    print(f"\nRelated pairs (exact J >= 0.001): {rel.sum()}; detected: hll "
          f"{hll_detected[pair][rel].sum()}, mle {mle_det[pair][rel].sum()}; the related pairs "
          f"below detection (exact J): hll "
          f"{sorted(np.round(exact_j[pair][rel & ~hll_detected[pair]], 4).tolist())}, mle "
          f"{sorted(np.round(exact_j[pair][rel & ~mle_det[pair]], 4).tolist())}\n")

    print("| error against exact, all pairs | hll raw | hll printed | mle raw | mle printed | "
          "Mash |")
    print("| --- | --- | --- | --- | --- | --- |")
    errors = {
        "hll raw": hll_j, "hll printed": np.where(hll_detected, hll_j, 0),
        "mle raw": mle_j, "mle printed": np.where(mle_det, mle_j, 0), "Mash": mash_j}
    print("| max abs J error | " + " | ".join(
        f"{np.abs(v[pair] - exact_j[pair]).max():.4f}" for v in errors.values()) + " |")
    print("| mean abs J error | " + " | ".join(
        f"{np.abs(v[pair] - exact_j[pair]).mean():.4f}" for v in errors.values()) + " |")
    print("| max abs J error, unrelated | " + " | ".join(
        f"{np.abs(v[pair] - exact_j[pair])[ju].max():.4f}" for v in errors.values()) + " |")
    print("| max abs J error, related | " + " | ".join(
        f"{np.abs(v[pair] - exact_j[pair])[rel].max():.4f}" for v in errors.values()) + " |")
    containment = {"hll raw": hll_c, "hll printed": np.where(hll_detected, hll_c, 0),
                   "mle raw": mle_c, "mle printed": np.where(mle_det, mle_c, 0)}
    print("| max abs containment error (ordered pairs) | " + " | ".join(
        f"{np.abs(v[ordered] - exact_c[ordered]).max():.4f}" for v in containment.values())
        + " | - |")

    print(f"\nSpeed (this machine as loaded): mle {left.size} pairs in "
          f"{mle_cpu:.3f} CPU s ({left.size / mle_cpu:.0f} pairs per CPU second; wall "
          f"{mle_wall:.3f} s); hll unions of the same pairs {hll_cpu:.3f} CPU s")
    speed_figures = speed(registers, params, args.speed_genomes) if args.speed_genomes else {}
    if args.null_sketches:
        calibration(args.null_sketches)
    if args.record:  # bench/record.py, beside this script
        from bench import record
        printed = {"hll": np.where(hll_detected, hll_j, 0), "mle": np.where(mle_det, mle_j, 0),
                   "mash": mash_j}
        record.write("near_zero", {
            "command": "python bench/near_zero.py --record",
            "input": f"{n} real bacterial genomes of 5 genera (the 16 references of Debian's "
                     f"ragout-examples, the 4 Klebsiella assemblies of kaptive-example), "
                     f"{left.size} pairs, {int(unrelated.sum())} of them unrelated (exact J < "
                     f"0.001)",
            "geometry": f"canonical {k}-mers, p={args.p}, w=4; Mash -k {k} -s {args.mash_size}; "
                        "exact Jaccard from the full k-mer sets",
            "default_estimator": "mle",
            "unrelated_pairs": int(unrelated.sum()),
            "related_pairs": int(rel.sum()),
            "below_detection": {"hll": int((~hll_detected[pair][ju]).sum()),
                                "mle": int((~mle_det[pair][ju]).sum())},
            "related_detected": {"hll": int(hll_detected[pair][rel].sum()),
                                 "mle": int(mle_det[pair][rel].sum())},
            "mash_distance_1": int((mash_d[pair][ju] >= 1).sum()),
            "max_abs_jaccard_error": {name: round(float(np.abs(v[pair] - exact_j[pair]).max()), 4)
                                      for name, v in printed.items()},
            "max_abs_containment_error": {
                "hll": round(float(np.abs(np.where(hll_detected, hll_c, 0)[ordered]
                                          - exact_c[ordered]).max()), 4),
                "mle": round(float(np.abs(np.where(mle_det, mle_c, 0)[ordered]
                                          - exact_c[ordered]).max()), 4)},
            "speed": speed_figures})


def calibration(count: int, p: int = 12) -> None:
    """The detection rules under the null: ``count`` sketches of disjoint random sets of
    100,000 to 1,000,000 k-mers at p (every pair unrelated); the fraction of pairs past
    1.645 (5 % one-sided) and 3 standard deviations."""
    from host.fast.hll import insert_kmers
    from host.similarity import cardinalities
    params = HllParams(p, 4)
    rng = np.random.default_rng(5)
    registers = np.zeros((count, params.m), np.uint8)
    for row in registers:
        size = int(rng.integers(100_000, 1_000_000))
        insert_kmers(row, rng.integers(0, 1 << 62, size, dtype=np.uint64), params)
    left, right = np.triu_indices(count, 1)
    root = np.sqrt(mle_pairs(registers, params, left, right).likelihood_ratio)
    cards = cardinalities(registers, params)
    unions = np.concatenate([union_rows(registers, params, [i], np.arange(i + 1, count),
                                        cards=cards)[0] for i in range(count)])
    z = (cards[left] + cards[right] - unions) / (
        HLL_RELATIVE_ERROR / math.sqrt(params.m) * unions)
    print(f"\nNull calibration: {left.size} pairs of {count} random disjoint sets at p={p}: "
          f"mle sqrt(LR) > 1.645 in {np.mean(root > 1.645):.3f} (expected 0.05), > 3 in "
          f"{np.sum(root >= 3)} pairs (expected {left.size * 0.00135:.1f}), x = 0 in "
          f"{np.mean(root == 0):.3f} (expected 0.5); hll I / sigma: standard deviation "
          f"{z.std():.2f}, > 1.645 in {np.mean(z > 1.645):.3f}, >= 3 in {np.sum(z >= 3)} pairs")


def speed(registers: np.ndarray, params: HllParams, count: int) -> dict:
    """The all-pairs matrix (dist's default, the "mle" estimator, one thread) of ``count``
    sketches, and the "hll" estimator's of the same: the real ones each united with a different
    random set of 50,000 k-mers (variants of one genome share about 98 % of their k-mers; the
    rest are the real pairs)."""
    from host.estimators import mle_matrix
    from host.fast.hll import insert_kmers
    from host.similarity import similarity_row_tiles
    rng = np.random.default_rng(1)
    variants = np.repeat(registers, -(-count // len(registers)), axis=0)[:count].copy()
    for row in variants:
        insert_kmers(row, rng.integers(0, 1 << 62, 50_000, dtype=np.uint64), params)
    packed = PackedSketches(variants, params)
    cpu, wall = time.process_time(), time.time()
    mle_matrix(packed, params, "jaccard", threads=1)
    cpu, wall = time.process_time() - cpu, time.time() - wall
    hll_cpu = time.process_time()
    list(similarity_row_tiles(packed, params, [range(count)], threads=1))
    hll_cpu = time.process_time() - hll_cpu
    pairs = count * (count - 1) // 2
    print(f"All-pairs matrix of {count} sketches ({pairs:,} pairs), one thread: mle {cpu:.2f} "
          f"CPU s ({pairs / cpu:.0f} pairs per CPU second), wall {wall:.2f} s; hll "
          f"{hll_cpu:.3f} CPU s ({pairs / hll_cpu:.0f} pairs per CPU second)")
    return {"sketches": count, "pairs": pairs, "mle_pairs_per_cpu_s": round(pairs / cpu),
            "hll_pairs_per_cpu_s": round(pairs / hll_cpu)}


if __name__ == "__main__":
    main()
