"""Accuracy of the emerging-motif engine against exact counting, next to the thesis's numbers.

    python bench/motif_accuracy.py [--quick] [--sequences N] [--seed S]

Synthetic ChIP-like data: a test set of 200 bp sequences (uniform random background), a
fraction of which carry one of the planted motifs with point mutations, plus a repeat planted
equally often in test and control (frequent but not emerging); a control set of background
sequences with the same repeat and a few motif copies. Thresholds follow the thesis (Table 3.3
scaled: T_k = c_k x number of test sequences), growth g = 2.

Truth: exact counts f_t (test) and f_c (control) of every k-mer, k = 10..20; a k-mer is truly
emerging iff f_t >= T_k and f_t >= g f_c. The engine (host.fast.motif, state-identical to the
golden model and to the RTL) reports its emerging rows; precision = |reported & true| /
|reported|, recall = |reported & true| / |true|, over all k. Prints tables; asserts nothing.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.fast.kmers import genome_kmer_array  # noqa: E402
from host.fast.motif import find_motifs_fast  # noqa: E402
from kmerspec.golden.motif import MotifParams, kmer_string  # noqa: E402

# thesis Table 3.3 divided by the number of test sequences (identical across its datasets)
THESIS_THRESHOLD_FRACTION = {10: 0.0170, 11: 0.0142, 12: 0.0119, 13: 0.0074, 14: 0.0069}
THESIS_THRESHOLD_FRACTION_LONG = 0.0067   # k >= 15

# (name, sequence) planted in the test set; lengths >= 20 so that every k in 10..20 sees them
MOTIFS = [("ctcf-like", "CCACCAGGGGGCGCTAGTGG"), ("esrrb-like", "TTCAAGGTCATGCGATGCAA"),
          ("e2f1-like", "TTTGGCGCGAAAACGTCGAT")]
REPEAT = "GGAATGGAATGGAATGGAAT"

THESIS_ROWS = [("Esrrb (thesis, CM-CU 4x16384)", "1", "1"),
               ("Tcfcp1l (thesis, CM-CU 4x16384)", "1", "1"),
               ("Ctcf (thesis, CM-CU 4x16384)", "0.994", "1")]


def threshold(k: int, sequences: int) -> int:
    fraction = THESIS_THRESHOLD_FRACTION.get(k, THESIS_THRESHOLD_FRACTION_LONG)
    return max(1, round(fraction * sequences))


def make_sets(rng, test_sequences, control_sequences, length=200, planted_fraction=0.3,
              mutation_rate=0.05, repeat_fraction=0.1, control_motif_fraction=0.01):
    """(test FASTA bytes, control FASTA bytes)."""
    alphabet = np.frombuffer(b"ACGT", np.uint8)

    def background(count):
        return alphabet[rng.integers(0, 4, (count, length))]

    def plant(sequences, motif, fraction, mutate):
        word = np.frombuffer(motif.encode(), np.uint8)
        rows = np.flatnonzero(rng.random(len(sequences)) < fraction)
        for row in rows:
            copy = word.copy()
            if mutate:
                hits = rng.random(len(copy)) < mutation_rate
                copy[hits] = alphabet[rng.integers(0, 4, hits.sum())]
            start = rng.integers(0, length - len(copy) + 1)
            sequences[row, start:start + len(copy)] = copy

    test = background(test_sequences)
    for index, (_, motif) in enumerate(MOTIFS):
        plant(test, motif, planted_fraction / (index + 1), True)
    plant(test, REPEAT, repeat_fraction, True)
    control = background(control_sequences)
    plant(control, REPEAT, repeat_fraction, True)
    for _, motif in MOTIFS:
        plant(control, motif, control_motif_fraction, True)

    def fasta(sequences, name):
        return b"".join(b">%s%d\n%s\n" % (name, number, row.tobytes())
                        for number, row in enumerate(sequences))

    return fasta(test, b"t"), fasta(control, b"c")


def exact_emerging(test, control, params):
    truth = set()
    for k in params.ks:
        test_words, test_counts = np.unique(genome_kmer_array([test], k, False),
                                            return_counts=True)
        control_words, control_counts = np.unique(genome_kmer_array([control], k, False),
                                                  return_counts=True)
        positions = np.searchsorted(control_words, test_words)
        positions = np.minimum(positions, max(0, len(control_words) - 1))
        found = (control_words[positions] == test_words) if len(control_words) else \
            np.zeros(len(test_words), bool)
        f_c = np.where(found, control_counts[positions], 0)
        keep = (test_counts >= params.threshold(k)) & \
            (test_counts * 256 >= params.growth_q8 * f_c)
        truth.update((k, kmer_string(int(word), k)) for word in test_words[keep])
    return truth


def evaluate(test, control, params):
    started = time.perf_counter()
    rows = find_motifs_fast([test], [control], params)
    seconds = time.perf_counter() - started
    reported = {(row.k, row.kmer) for row in rows}
    truth = exact_emerging(test, control, params)
    hits = len(reported & truth)
    precision = hits / len(reported) if reported else 1.0
    recall = hits / len(truth) if truth else 1.0
    return len(truth), len(reported), precision, recall, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sets (a few seconds)")
    parser.add_argument("--sequences", type=int, default=None,
                        help="test sequences (default 20000, quick 2000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    test_sequences = args.sequences or (2000 if args.quick else 20000)
    control_sequences = test_sequences * 2
    rng = np.random.default_rng(args.seed)
    test, control = make_sets(rng, test_sequences, control_sequences)
    thresholds = tuple(threshold(k, test_sequences) for k in range(10, 21))
    print(f"synthetic ChIP-like data: {test_sequences} test x 200 bp (motifs "
          f"{', '.join(name for name, _ in MOTIFS)} planted with 5 % point mutations), "
          f"{control_sequences} control x 200 bp; repeat in 10 % of both; k = 10..20, g = 2")
    print(f"thresholds T_10..T_20 = {thresholds}")
    print()
    print(f"| {'configuration':38} | {'true':>5} | {'reported':>8} | {'precision':>9} | "
          f"{'recall':>6} | {'seconds':>7} |")
    print(f"|{'-' * 40}|{'-' * 7}|{'-' * 10}|{'-' * 11}|{'-' * 8}|{'-' * 9}|")
    configurations = [("CM-CU 4x16384, store 64x4 (default)", {}),
                      ("CM-CU 4x16384, store 256x4", {"store_sets": 256}),
                      ("CM-CU 4x16384, store 16x2", {"store_sets": 16, "store_ways": 2}),
                      ("CM-CU 4x4096, store 64x4", {"cw": 12}),
                      ("CM-CU 4x1024, store 64x4", {"cw": 10})]
    for name, overrides in configurations:
        params = MotifParams(kmin=10, kmax=20, thresholds=thresholds, growth=2, **overrides)
        true, reported, precision, recall, seconds = evaluate(test, control, params)
        print(f"| {name:38} | {true:5} | {reported:8} | {precision:9.4f} | {recall:6.4f} | "
              f"{seconds:7.2f} |")
    for name, precision, recall in THESIS_ROWS:
        print(f"| {name:38} | {'':>5} | {'':>8} | {precision:>9} | {recall:>6} | {'':>7} |")


if __name__ == "__main__":
    main()
