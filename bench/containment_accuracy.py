"""Accuracy of HLL containment (``dist/search --metric containment``) against exact containment
on real genome pairs.

    python bench/containment_accuracy.py [--p 10,12,14] [--k 31]

Genomes: the real bacterial genomes of Debian's ``sibelia-examples``
(/usr/share/doc/sibelia/examples: S. aureus NCTC8325, its draft derivative RN4220 in 179
contigs, JH1, N315, TW20, MSSA476; H. pylori F32 and Gambia94/24; multi-genome files split one
genome per record) and the bee-virus and phage genomes of examples/. Every ordered pair within
a group (the 6 S. aureus, the 2 H. pylori, the 5 viruses) and, as unrelated controls, each
H. pylori against each S. aureus.

"exact" is |A and B| / |A| over the full sets of canonical k-mers (host.fast.kmers, the
parser of SPEC 1, then numpy set operations); "HLL" is the containment of SPEC 3 computed the
way dist and search compute it (native union estimates, host.metrics), with w=4. Prints the
pair table for the largest p and the max and mean |error| for every p; asserts nothing.
"""

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.fast.hll import sketch_genomes  # noqa: E402
from host.fast.kmers import kmer_array  # noqa: E402
from host.metrics import metric_values  # noqa: E402
from host.similarity import PackedSketches, union_rows  # noqa: E402
from kmerspec.golden.hll import HllParams  # noqa: E402


SIBELIA = Path("/usr/share/doc/sibelia/examples")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def fasta_records(path: Path) -> list[tuple[str, bytes]]:
    """(name, FASTA text) per record of a (gzip) FASTA file."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    records = []
    for chunk in data.split(b"\n>"):
        chunk = chunk.lstrip(b">")
        header, _, body = chunk.partition(b"\n")
        records.append((header.decode(errors="replace"), b">" + header + b"\n" + body))
    return records


def _strain(header: str) -> str:
    """'S. aureus N315' from an NCBI header."""
    words = header.replace(",", " ").split()
    for genus, short in (("Staphylococcus", "S. aureus"), ("Helicobacter", "H. pylori")):
        if genus in words:
            rest = words[words.index(genus) + 2:]
            if rest[:2] == ["subsp.", "aureus"]:
                rest = rest[2:]
            strain = " ".join(w for w in rest[:2] if w not in ("chromosome", "complete"))
            return f"{short} {strain}"
    return header.split()[0]


def nctc8325_and_rn4220() -> list[tuple[str, bytes]]:
    """S. aureus NCTC8325 (complete) and RN4220, derived from it (a draft: its contigs form
    one genome)."""
    if not SIBELIA.is_dir():
        raise SystemExit(f"{SIBELIA}: not found; apt-get install sibelia-examples")
    complete = fasta_records(SIBELIA / "C-Sibelia/Staphylococcus_aureus/NCTC8325.fasta.gz")
    contigs = fasta_records(SIBELIA / "C-Sibelia/Staphylococcus_aureus/RN4220.fasta.gz")
    return [("S. aureus NCTC8325", complete[0][1]),
            (f"S. aureus RN4220 ({len(contigs)} contigs)",
             b"".join(text + b"\n" for _, text in contigs))]


def sibelia_genomes() -> dict[str, list[tuple[str, bytes]]]:
    """Groups of real bacterial genomes: {"S. aureus": [(name, FASTA)], "H. pylori": [...]}."""
    aureus = nctc8325_and_rn4220()
    aureus += [(_strain(h), text) for h, text in
               fasta_records(SIBELIA / "Sibelia/Staphylococcus_aureus/Staphylococcus.fasta.gz")]
    pylori = [(_strain(h), text) for h, text in
              fasta_records(SIBELIA / "Sibelia/Helicobacter_pylori/Helicobacter_pylori.fasta.gz")]
    return {"S. aureus": aureus, "H. pylori": pylori}


def example_genomes() -> list[tuple[str, bytes]]:
    paths = sorted((EXAMPLES / "genomes").glob("*.fa.gz")) + [EXAMPLES / "lambda_virus.fa.gz"]
    return [(p.name.removesuffix(".fa.gz"), gzip.decompress(p.read_bytes())) for p in paths]


def exact_sets(texts: list[bytes], k: int) -> list[np.ndarray]:
    """The sorted distinct canonical k-mers of each text."""
    sets = []
    for text in texts:
        # sort, then drop repeats: np.unique's hash path is far slower on millions of words
        words = np.sort(kmer_array(text, k, True))
        sets.append(words[np.concatenate([[True], words[1:] != words[:-1]])] if words.size
                    else words)
    return sets


def exact_containment(sets: list[np.ndarray], pairs: list[tuple[int, int]]) -> np.ndarray:
    return np.array([np.intersect1d(sets[a], sets[b], assume_unique=True).size / sets[a].size
                     if sets[a].size else 0.0 for a, b in pairs])


def hll_containment(texts: list[bytes], pairs: list[tuple[int, int]], k: int, p: int,
                    threads: int | None = None) -> np.ndarray:
    """C(A, B) of each pair as dist --metric containment computes it."""
    params = HllParams(p, 4)
    registers = np.stack(list(sketch_genomes([[t] for t in texts], k, params, True, threads)))
    packed = PackedSketches(registers, params)
    unions = union_rows(packed, params, range(len(texts)), threads=threads)
    a, b = np.array(pairs).T
    return metric_values("containment", packed.cards[a], packed.cards[b], unions[a, b], k)


def pairs_of(groups: list[list[int]], controls: list[tuple[list[int], list[int]]]
             ) -> list[tuple[int, int]]:
    pairs = [(a, b) for group in groups for a in group for b in group if a != b]
    for left, right in controls:
        pairs += [(a, b) for a in left for b in right] + [(b, a) for a in left for b in right]
    return pairs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--p", default="10,12,14", help="HLL index bits to measure")
    parser.add_argument("--k", type=int, default=31)
    parser.add_argument("--record", action="store_true",
                        help="also write bench/results/containment_accuracy.json "
                             "(docs/benchmarks.md is made from it)")
    args = parser.parse_args(argv)
    ps = [int(v) for v in args.p.split(",")]
    started = time.perf_counter()
    bacteria = sibelia_genomes()
    named = bacteria["S. aureus"] + bacteria["H. pylori"] + example_genomes()
    names, texts = [n for n, _ in named], [t for _, t in named]
    n_aureus, n_pylori = len(bacteria["S. aureus"]), len(bacteria["H. pylori"])
    aureus = list(range(n_aureus))
    pylori = list(range(n_aureus, n_aureus + n_pylori))
    viruses = list(range(n_aureus + n_pylori, len(names)))
    pairs = pairs_of([aureus, pylori, viruses], [(pylori, aureus)])
    sets = exact_sets(texts, args.k)
    exact = exact_containment(sets, pairs)
    estimated = {p: hll_containment(texts, pairs, args.k, p) for p in ps}
    top = max(ps)
    print(f"HLL containment C(A, B) = |A and B| / |A| vs exact, canonical {args.k}-mers, "
          f"w=4, p={top}")
    print()
    print("| A | B | exact distinct k-mers of A | exact C | HLL C | abs error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (a, b), e, h in zip(pairs, exact, estimated[top]):
        print(f"| {names[a]} | {names[b]} | {sets[a].size:,} | {e:.4f} | {h:.4f} | "
              f"{abs(h - e):.4f} |")
    print()
    print("| p | pairs | max abs error | mean abs error | max abs error where exact C >= 0.5 |")
    print("| --- | --- | --- | --- | --- |")
    summary = []
    for p in ps:
        error = np.abs(estimated[p] - exact)
        high = error[exact >= 0.5]
        print(f"| {p} | {len(pairs)} | {error.max():.4f} | {error.mean():.4f} | "
              f"{high.max() if high.size else float('nan'):.4f} |")
        summary.append({"p": p, "max_abs_error": round(float(error.max()), 4),
                        "mean_abs_error": round(float(error.mean()), 4)})
    print()
    if args.record:  # bench/record.py, beside this script (also when it is imported)
        from bench import record
        record.write("containment_accuracy", {
            "command": "python bench/containment_accuracy.py --record",
            "input": f"{len(pairs)} ordered pairs of real genomes: {n_aureus} S. aureus and "
                     f"{n_pylori} H. pylori of Debian's sibelia-examples, the "
                     f"{len(viruses)} genomes of examples/",
            "geometry": f"canonical {args.k}-mers, w=4; exact containment from the full "
                        "k-mer sets",
            "rows": sorted(summary, key=lambda row: -row["p"])})
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
