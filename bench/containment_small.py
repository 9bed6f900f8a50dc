"""Small genomes inside large ones, and cardinality at metagenome scale (docs/accuracy.md).

    python bench/containment_small.py [--repeats 3] [--sets 20] [--record]

Part 1, containment of pieces. Real genomes from Debian's example packages (apt-get install
ragout-examples kaptive-example; the lambda phage of examples/): five hosts of five genera,
E. coli MG1655 (4.6 Mb), a Klebsiella assembly (5.3 Mb, 119 contigs), V. cholerae O395,
S. aureus COL and H. pylori G27. For each host and each size of 5, 10, 20, 50, 100 and 200 kb,
``--repeats`` times at random places:

* a piece of the host itself (a query; its containment in the host is 1, exactly as counted);
* a piece of a genome of another genus, inserted into the host at a random place (the query
  is the piece, the reference the host with it: containment 1), and the same piece against the
  host without it and against every other host (unrelated: nothing shared).

Every query is compared with every reference as ``search --metric containment`` compares them
(host.estimators.block_values, the native pair loops, canonical 31-mers, p = 14, w = 4): by the
default estimator (the joint MLE) and by ``--estimator hll``, each as printed (detection at
Z = 3) and raw; "exact" from the full k-mer sets. A pair is a positive where the query is
inside the reference (exact containment 1) and a negative where it is from another genus (exact
containment below 0.01). Printed: per size, the positives detected and their containment; the
negatives detected (the false-positive rate; the rule's nominal one is 0.00135 a pair); the
smallest size from which every positive is detected. Then the CLI as a user runs it: lambda
against E. coli with lambda inserted, a 100 kb piece of E. coli and an unrelated 100 kb piece.

Part 2, cardinality at metagenome scale. ``--sets`` sets each of 1e6 .. 1e9 distinct k-mers at
p = 14 and w = 4, 5, 6: the mean and spread of the relative error of the "hll" estimate with
saturated registers censored (SPEC 3) and without (as before), and the joint MLE's J of two
sets of 7.5e7 sharing 5e7 (J = 0.5). The registers are drawn from the distribution the sets'
hashes give (:func:`simulated_registers`), not by hashing 1e9 k-mers.

Asserts nothing; --record writes bench/results/containment_small.json.
"""

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kmerspec.golden.hll import HllParams, top_rank  # noqa: E402

RAGOUT = Path("/usr/share/doc/ragout/examples")
KAPTIVE = Path("/usr/share/doc/kaptive/examples")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SIZES_KB = (5, 10, 20, 50, 100, 200)
K, P = 31, 14
#: a pair is "unrelated" below this exact containment, "inside" at 1
UNRELATED_BELOW = 0.01


def simulated_registers(n: int, params: HllParams, rng: np.random.Generator) -> np.ndarray:
    """The registers of a set of ``n`` distinct k-mers, drawn from the distribution their
    hashes give instead of hashing n k-mers: the set's hashes are n independent uniform 64-bit
    words (fmix64 is a bijection, so distinct k-mers hash to distinct words), so the number
    falling in each register is multinomial(n, 1/m), and a register receiving c of them holds
    the largest of c ranks, P(rank <= k) = (1 - 2^-k)^c, drawn by inverting that with one
    uniform number, then capped at the top value R as SPEC 3 caps the rank."""
    m = params.m
    counts = rng.multinomial(n, np.full(m, 1.0 / m))
    registers = np.zeros(m, dtype=np.uint8)
    hit = counts > 0
    uniform = rng.random(int(hit.sum()))
    # smallest k with (1 - 2^-k)^c >= U: k >= -log2(1 - U^(1/c))
    ranks = np.ceil(-np.log2(-np.expm1(np.log(uniform) / counts[hit])))
    registers[hit] = np.minimum(np.maximum(ranks, 1), top_rank(params)).astype(np.uint8)
    return registers


def simulated_pairs(count: int, sizes: tuple[int, int, int], params: HllParams,
                    rng: np.random.Generator) -> np.ndarray:
    """``count`` pairs of sets (X only, Y only, shared of ``sizes`` distinct k-mers), their
    registers drawn as :func:`simulated_registers` does: rows 2i and 2i + 1 are X and Y."""
    rows = []
    for _ in range(count):
        own_x, own_y, shared = (simulated_registers(n, params, rng) for n in sizes)
        rows += [np.maximum(own_x, shared), np.maximum(own_y, shared)]
    return np.array(rows)


# -- genomes and pieces -----------------------------------------------------------------------

def records(path: Path) -> list[tuple[bytes, bytes]]:
    """(header, sequence) of each record of a FASTA file, the sequence's lines joined."""
    out = []
    for chunk in gzip.decompress(path.read_bytes()).split(b">")[1:]:
        header, _, body = chunk.partition(b"\n")
        out.append((header, body.replace(b"\n", b"").replace(b"\r", b"")))
    return out


def fasta(named: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(b">" + header + b"\n" + sequence + b"\n" for header, sequence in named)


def hosts() -> list[tuple[str, str, list[tuple[bytes, bytes]]]]:
    """(name, genus, records) of the five hosts."""
    if not RAGOUT.is_dir() or not KAPTIVE.is_dir():
        raise SystemExit("the genomes are missing: apt-get install ragout-examples "
                         "kaptive-example")
    chosen = [("E. coli MG1655", "Escherichia", RAGOUT / "E.Coli/references/MG1655-K12.fasta.gz"),
              ("Klebsiella (kaptive)", "Klebsiella", KAPTIVE / "fragmented_assembly.fasta.gz"),
              ("V. cholerae O395", "Vibrio", RAGOUT / "V.Cholerae/references/O395.fasta.gz"),
              ("S. aureus COL", "Staphylococcus", RAGOUT / "S.Aureus/references/COL.fasta.gz"),
              ("H. pylori G27", "Helicobacter", RAGOUT / "H.Pylori/references/G27.fasta.gz")]
    return [(name, genus, records(path)) for name, genus, path in chosen]


def piece(named: list[tuple[bytes, bytes]], size: int, rng: np.random.Generator) -> bytes:
    """``size`` bases from a random place of a record long enough (the longest otherwise)."""
    long_enough = [s for _, s in named if len(s) >= size] or [max((s for _, s in named), key=len)]
    sequence = long_enough[int(rng.integers(len(long_enough)))]
    start = int(rng.integers(0, len(sequence) - size + 1))
    return sequence[start:start + size]


def inserted(named: list[tuple[bytes, bytes]], extra: bytes,
             rng: np.random.Generator) -> list[tuple[bytes, bytes]]:
    """The genome with ``extra`` inserted at a random place of its longest record."""
    longest = max(range(len(named)), key=lambda i: len(named[i][1]))
    header, sequence = named[longest]
    at = int(rng.integers(0, len(sequence) + 1))
    return (named[:longest] + [(header, sequence[:at] + extra + sequence[at:])]
            + named[longest + 1:])


def distinct_kmers(text: bytes) -> np.ndarray:
    from host.fast.kmers import kmer_array
    words = np.sort(kmer_array(text, K, True))
    return words[np.concatenate([[True], words[1:] != words[:-1]])] if words.size else words


# -- part 1 -------------------------------------------------------------------------------------

def containment_of_pieces(repeats: int, seed: int = 2026) -> dict:
    from host.estimators import block_values
    from host.fast.hll import sketch_genomes
    from host.similarity import PackedSketches
    params = HllParams(P, 4)
    rng = np.random.default_rng(seed)
    host_list = hosts()
    references = [(name, fasta(named)) for name, _, named in host_list]
    queries = []  # (label, text, host, size, kind, index of the reference it is inside)
    for h, (name, genus, named) in enumerate(host_list):
        donors = [other for other in range(len(host_list)) if other != h]
        for size in SIZES_KB:
            for repeat in range(repeats):
                own = piece(named, 1000 * size, rng)
                queries.append((f"{name} {size} kb", own, h, size, "self", h))
                donor = donors[(size + repeat) % len(donors)]
                foreign = piece(host_list[donor][2], 1000 * size, rng)
                references.append((f"{name} + {size} kb of {host_list[donor][0]}",
                                   fasta(inserted(named, foreign, rng))))
                queries.append((f"{host_list[donor][0]} {size} kb", foreign, h, size, "foreign",
                                len(references) - 1))
    texts = [text for _, text in references] + [b">q\n" + text + b"\n"
                                                for _, text, *_ in queries]
    registers = np.stack(list(sketch_genomes([[t] for t in texts], K, params, True)))
    packed = PackedSketches(registers, params)
    n_ref = len(references)
    rows, columns = np.arange(len(queries)) + n_ref, np.arange(n_ref)
    values = {(estimator, printed): block_values(packed, params, rows, columns, "containment",
                                                 estimator, 3.0 if printed else None)
              for estimator in ("mle", "hll") for printed in (True, False)}
    # exact containment of every query in every host (the pairs below), and in the reference
    # it was inserted into
    host_sets = [distinct_kmers(text) for _, text in references[:len(host_list)]]
    pairs = []  # (query, reference, exact, positive)
    for q, (label, text, h, size, kind, inside) in enumerate(queries):
        kmers = distinct_kmers(text)
        for other in range(len(host_list)):
            exact = np.intersect1d(kmers, host_sets[other], assume_unique=True).size / kmers.size
            if other == h and kind == "self":
                pairs.append((q, other, exact, True))
            elif exact < UNRELATED_BELOW:
                pairs.append((q, other, exact, False))
        if kind == "foreign":
            reference = distinct_kmers(references[inside][1])
            exact = np.intersect1d(kmers, reference, assume_unique=True).size / kmers.size
            pairs.append((q, inside, exact, True))
    return {"queries": queries, "references": [name for name, _ in references],
            "values": values, "pairs": pairs, "hosts": host_list}


def report_pieces(found: dict) -> dict:
    queries, values, pairs = found["queries"], found["values"], found["pairs"]
    positives = [(q, r, e) for q, r, e, positive in pairs if positive]
    negatives = [(q, r, e) for q, r, e, positive in pairs if not positive]
    print("# Part 1: pieces of 5-200 kb, canonical 31-mers, p = 14, w = 4, detection Z = 3")
    print(f"hosts: {', '.join(f'{name} ({sum(len(s) for _, s in named) / 1e6:.1f} Mb)' for name, _, named in found['hosts'])}")
    print(f"{len(queries)} queries, {len(found['references'])} references; {len(positives)} "
          f"pairs with the query inside the reference (exact containment >= "
          f"{min(e for *_, e in positives):.4f}), {len(negatives)} unrelated pairs (exact < "
          f"{UNRELATED_BELOW})")
    print()
    print("| piece | inside | exact C (min) | mle: detected | mle C (min, mean) | hll: detected "
          "| hll C (min, mean) | hll raw C (mean) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for size in SIZES_KB:
        for kind, where in (("self", "its own genome"), ("foreign", "host + the piece")):
            chosen = [(q, r, e) for q, r, e in positives
                      if queries[q][3] == size and queries[q][4] == kind]
            cell = {}
            for estimator in ("mle", "hll"):
                printed = np.array([values[estimator, True][q, r] for q, r, _ in chosen])
                raw = np.array([values[estimator, False][q, r] for q, r, _ in chosen])
                cell[estimator] = (int((printed > 0).sum()), float(printed.min()),
                                   float(printed.mean()), float(raw.mean()))
            exact = min(e for *_, e in chosen)
            print(f"| {size} kb, {kind} | {where} | {exact:.4f} | {cell['mle'][0]} of "
                  f"{len(chosen)} | {cell['mle'][1]:.3f}, {cell['mle'][2]:.3f} | {cell['hll'][0]} "
                  f"of {len(chosen)} | {cell['hll'][1]:.3f}, {cell['hll'][2]:.3f} | "
                  f"{cell['hll'][3]:.3f} |")
            rows.append({"size_kb": size, "kind": kind, "pairs": len(chosen),
                         "exact_min": round(exact, 4),
                         **{f"{e}_detected": cell[e][0] for e in ("mle", "hll")},
                         **{f"{e}_min": round(cell[e][1], 3) for e in ("mle", "hll")},
                         **{f"{e}_mean": round(cell[e][2], 3) for e in ("mle", "hll")}})
    print()
    summary = {}
    for estimator in ("mle", "hll"):
        false = sum(values[estimator, True][q, r] > 0 for q, r, _ in negatives)
        missed = sorted({queries[q][3] for q, r, _ in positives
                         if values[estimator, True][q, r] <= 0})
        smallest = next((size for size in SIZES_KB if all(m < size for m in missed)), None)
        errors = [abs(values[estimator, True][q, r] - e) for q, r, e in positives + negatives]
        summary[estimator] = {"false_positives": int(false), "negatives": len(negatives),
                              "smallest_detected_kb": smallest,
                              "max_abs_error": round(float(max(errors)), 4)}
        print(f"{estimator}: unrelated pairs detected {false} of {len(negatives)} (rate "
              f"{false / len(negatives):.4f}; the rule's nominal rate 0.00135); every piece "
              f"detected from {smallest} kb on" + (f" (missed some of {missed} kb)" if missed
                                                   else "")
              + f"; max |C - exact| as printed {max(errors):.4f}")
    return {"rows": rows, "summary": summary}


def cli_examples() -> list[str]:
    """search --metric containment with the defaults, as in the issue: lambda against E. coli
    with lambda inserted, a 100 kb piece of E. coli and a 100 kb piece of S. aureus."""
    rng = np.random.default_rng(7)
    ecoli = records(RAGOUT / "E.Coli/references/MG1655-K12.fasta.gz")
    lam = records(EXAMPLES / "lambda_virus.fa.gz")
    aureus = records(RAGOUT / "S.Aureus/references/COL.fasta.gz")
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "ecoli.fa").write_bytes(fasta(ecoli))
        (tmp / "ecoli_lambda.fa").write_bytes(fasta(inserted(ecoli, lam[0][1], rng)))
        (tmp / "lambda.fa").write_bytes(fasta(lam))
        (tmp / "chunk100k.fa").write_bytes(b">chunk\n" + piece(ecoli, 100_000, rng) + b"\n")
        (tmp / "unrelated100k.fa").write_bytes(b">unrelated\n" + piece(aureus, 100_000, rng)
                                               + b"\n")
        host = [sys.executable, "-m", "host"]
        root = Path(__file__).resolve().parent.parent
        environment = {**os.environ, "PYTHONPATH": str(root)}
        subprocess.run([*host, "sketch", "ecoli.fa", "ecoli_lambda.fa", "-o", "big.sketch"],
                       cwd=tmp, check=True, env=environment)
        for query in ("chunk100k.fa", "unrelated100k.fa", "lambda.fa"):
            for extra in ([], ["--estimator", "hll"]):
                command = ["search", query, "--db", "big.sketch", "--metric", "containment",
                           "--pvalue", *extra]
                done = subprocess.run([*host, *command], cwd=tmp, check=True, text=True,
                                      capture_output=True, env=environment)
                shown = "python -m host " + " ".join(command)
                lines.append(f"$ {shown}")
                lines += [line for line in done.stdout.splitlines() if not line.startswith("#")]
    return lines


# -- part 2 -------------------------------------------------------------------------------------

def cardinality_bias(sets: int, seed: int = 14) -> list[dict]:
    from host.similarity import cardinalities
    from kmerspec.golden.hll import estimate_from_features
    rng = np.random.default_rng(seed)
    rows = []
    print(f"# Part 2: relative error of the cardinality, {sets} sets each, p = 14 (registers "
          "drawn from the hashes' distribution)")
    print()
    print("| w | distinct k-mers | registers at the top value | censored (now): mean, sd | "
          "uncensored (before): mean, sd |")
    print("| --- | --- | --- | --- | --- |")
    for w in (4, 5, 6):
        params = HllParams(P, w)
        for n in (10**6, 10**7, 10**8, 10**9):
            registers = np.array([simulated_registers(n, params, rng) for _ in range(sets)])
            now = cardinalities(registers, params) / n - 1
            weights = 2.0 ** (params.max_rank - registers.astype(np.int64))
            z = weights.sum(axis=1)
            nz = (registers == 0).sum(axis=1)
            before = np.array([estimate_from_features(int(zi), int(ni), params)
                               for zi, ni in zip(z, nz)]) / n - 1
            top = (registers == top_rank(params)).mean()
            print(f"| {w} | {n:.0e} | {top:.1%} | {100 * now.mean():+.2f} %, {100 * now.std():.2f} % "
                  f"| {100 * before.mean():+.2f} %, {100 * before.std():.2f} % |")
            rows.append({"w": w, "n": n, "top_share": round(float(top), 4),
                         "censored_mean_pct": round(100 * float(now.mean()), 2),
                         "censored_sd_pct": round(100 * float(now.std()), 2),
                         "uncensored_mean_pct": round(100 * float(before.mean()), 2)})
    return rows


def metagenome_jaccard(sets: int, seed: int = 75) -> dict:
    """J of two sets of 7.5e7 sharing 5e7 (J = 0.5), w = 4 and 6, by each estimator."""
    from host.estimators import mle_pairs
    from host.similarity import PackedSketches, union_rows
    from host.metrics import pair_similarity
    rng = np.random.default_rng(seed)
    out = {}
    print()
    print(f"J of two sets of 7.5e7 distinct k-mers sharing 5e7 (J = 0.5), {sets} draws, p = 14")
    for w in (4, 6):
        params = HllParams(P, w)
        registers = simulated_pairs(sets, (25_000_000, 25_000_000, 50_000_000), params, rng)
        left, right = np.arange(0, 2 * sets, 2), np.arange(1, 2 * sets, 2)
        mle = mle_pairs(registers, params, left, right).similarity("jaccard")
        packed = PackedSketches(registers, params)
        unions = np.array([union_rows(packed, params, [i], [j])[0, 0] for i, j in zip(left, right)])
        hll = pair_similarity("jaccard", packed.cards[left], packed.cards[right], unions)
        print(f"w = {w}: mle {mle.mean():.4f} (sd {mle.std():.4f}), hll {hll.mean():.4f} "
              f"(sd {hll.std():.4f})")
        out[f"w{w}"] = {"mle": round(float(mle.mean()), 4), "hll": round(float(hll.mean()), 4)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3,
                        help="pieces of each size and kind per host (default 3)")
    parser.add_argument("--sets", type=int, default=20,
                        help="random sets per cardinality (default 20)")
    parser.add_argument("--record", action="store_true",
                        help="also write bench/results/containment_small.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    found = containment_of_pieces(args.repeats)
    pieces = report_pieces(found)
    print()
    print("The command line, with the defaults (and --estimator hll):")
    examples = cli_examples()
    print("\n".join(examples))
    print()
    bias = cardinality_bias(args.sets)
    jaccard = metagenome_jaccard(args.sets)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.record:
        from bench import record
        record.write("containment_small", {
            "command": "python bench/containment_small.py --record",
            "input": "5 real genomes of 5 genera (E. coli MG1655, a Klebsiella assembly, "
                     "V. cholerae O395, S. aureus COL, H. pylori G27; Debian's ragout-examples "
                     f"and kaptive-example), {args.repeats} pieces of each size and kind each; "
                     f"{args.sets} random sets per cardinality",
            "geometry": "canonical 31-mers, p=14, w=4 (cardinality: w=4, 5, 6); detection Z=3",
            "pieces": pieces, "cli": examples, "cardinality": bias,
            "metagenome_jaccard": jaccard})
    return 0


if __name__ == "__main__":
    sys.exit(main())
