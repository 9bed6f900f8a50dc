"""Accuracy of the sketch JSD (sampling + Count-Min + PQA + fixed-point entropy) against the exact
JSD over all k-mers (float64), on synthetic genome families, for s in {0, 6, 10}.

    python bench/jsd_accuracy.py [--quick] [--bases N] [--seed S]

A family: one random ancestor with repeat families (elements copied 2..200 times, so k-mer
counts are not all 1), descendants with point-mutation rates 0.1 % .. 20 % (each also carrying
its own repeat copies), and an unrelated genome. Each descendant is compared with the ancestor.
"exact" is the textbook JSD (base 2, equal-weight mixture) of the full canonical 31-mer count
distributions; "sketch" is kmerspec.golden.jsd_between on the PQAs (float64 entropy) and "fixed" is
the hardware unit's signed Q5.24 result (kmerspec.golden.entropy.jsd_fixed), i.e. what the RTL
outputs. Prints a table and the RMSE per s; asserts nothing.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.fast.jsd import build_pqa_fast  # noqa: E402
from host.fast.kmers import genome_kmer_array  # noqa: E402
from kmerspec.golden.entropy import fixed_to_float, jsd_fixed  # noqa: E402
from kmerspec.golden.jsd import JsdParams, jsd_between  # noqa: E402

RATES = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2]


def random_bases(rng, length):
    return np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, length)]


def with_repeats(rng, sequence, families=30):
    """Insert copies of ``families`` repeat elements (300..2000 bp, 2..200 copies each)."""
    pieces = [sequence]
    for _ in range(families):
        element = random_bases(rng, int(rng.integers(300, 2000)))
        pieces += [element] * int(rng.integers(2, 200))
    order = rng.permutation(len(pieces))
    return np.concatenate([pieces[i] for i in order])


def mutate(rng, sequence, rate):
    out = sequence.copy()
    where = rng.random(out.size) < rate
    out[where] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, int(where.sum()))]
    return out


def fasta(sequence):
    body = sequence.tobytes()
    return b">g\n" + b"\n".join(body[i:i + 80] for i in range(0, len(body), 80)) + b"\n"


def exact_jsd(data_p, data_q, k):
    """Textbook JSD in bits over the full k-mer count distributions (float64)."""
    words_p = genome_kmer_array([data_p], k)
    words_q = genome_kmer_array([data_q], k)
    keys, inverse = np.unique(np.concatenate([words_p, words_q]), return_inverse=True)
    p = np.bincount(inverse[:words_p.size], minlength=keys.size).astype(np.float64)
    q = np.bincount(inverse[words_p.size:], minlength=keys.size).astype(np.float64)
    p /= p.sum()
    q /= q.sum()
    mix = (p + q) / 2

    def entropy(x):
        x = x[x > 0]
        return float(-(x * np.log2(x)).sum())

    return entropy(mix) - (entropy(p) + entropy(q)) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 kbp genomes, 3 rates")
    parser.add_argument("--bases", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    bases = 300_000 if args.quick else args.bases
    rates = [0.01, 0.05, 0.2] if args.quick else RATES
    rng = np.random.default_rng(args.seed)
    start = time.time()

    ancestor = with_repeats(rng, random_bases(rng, bases))
    genomes = {"ancestor": fasta(ancestor)}
    for rate in rates:
        genomes[f"mut {rate:.1%}"] = fasta(with_repeats(rng, mutate(rng, ancestor, rate), 5))
    genomes["unrelated"] = fasta(with_repeats(rng, random_bases(rng, bases)))
    k = 31
    exact = {name: exact_jsd(genomes["ancestor"], data, k)
             for name, data in genomes.items() if name != "ancestor"}

    print(f"synthetic family: ancestor {len(genomes['ancestor']) // 1024} KiB FASTA "
          f"({bases} random bases + repeats), k = {k}, CM 5 x 2^14 cu, PQA 2^12 x 8")
    print(f"{'s':>3} {'genome':>12} {'exact JSD':>10} {'sketch':>10} {'fixed':>10} "
          f"{'|sketch-exact|':>15} {'|fixed-sketch|':>15} {'PQA total M':>15}")
    for s in (0, 6, 10):
        params = JsdParams(k=k, s=s)
        pqas = {name: build_pqa_fast([data], params) for name, data in genomes.items()}
        errors = []
        for name, reference in exact.items():
            sketch = jsd_between(pqas["ancestor"], pqas[name])
            fixed = fixed_to_float(jsd_fixed(pqas["ancestor"], pqas[name]))
            errors.append(sketch - reference)
            sampled = pqas[name].total()
            print(f"{s:>3} {name:>12} {reference:>10.5f} {sketch:>10.5f} {fixed:>10.5f} "
                  f"{abs(sketch - reference):>15.5f} {abs(fixed - sketch):>15.2e} "
                  f"{sampled:>15}")
        rmse = math.sqrt(sum(e * e for e in errors) / len(errors))
        print(f"{s:>3} {'RMSE':>12} {'':>10} {rmse:>10.5f}")
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
