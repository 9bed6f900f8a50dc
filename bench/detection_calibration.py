"""The detection rules' false-positive rate per genome size (SPEC 3 "Detection";
docs/accuracy.md "Calibration by genome size").

    python bench/detection_calibration.py [--sketches 100] [--pieces 13] [--record]

Simulated: for each size band (in units of m = 2^p registers) and p in 12, 14, 16, all pairs of
``--sketches`` sketches of unrelated random sets, sizes log-uniform in the band, registers drawn
from the hashes' distribution (bench/containment_small.simulated_registers). Real:
``--pieces`` pieces of 46 kb from each of the 20 genomes of bench/near_zero.py (Debian's
ragout-examples and kaptive-example; 5 genera), cut end to end from each genome's start, k = 31,
p = 14, w = 4, every pair of pieces of different genera (taken as unrelated: the exact Jaccard
of whole genomes of different genera is below 0.001). Per band: the fraction of pairs reported
related at Z = 3 (nominal 0.00135) by the `mle` rule, the `hll` rule of SPEC 3 and the `hll`
rule before issue 53 (I >= 3 (1.04 / sqrt(m)) |X u Y| on the estimates as they are). The
pairs of one band share sketches, so a band's figure is a mean over dependent pairs. Asserts
nothing; --record writes bench/results/detection_calibration.json.
"""

import argparse
import gzip
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.containment_small import simulated_registers  # noqa: E402
from bench.near_zero import genome_files  # noqa: E402
from host.estimators import hll_detected, hll_floor, mle_pairs  # noqa: E402
from host.fast.hll import sketch_genomes  # noqa: E402
from host.similarity import PackedSketches, union_rows  # noqa: E402
from kmerspec.golden.hll import HllParams  # noqa: E402

BANDS = [(0.05, 0.5), (0.5, 2.0), (2.0, 2.5), (2.5, 3.5), (3.5, 5.0), (5.0, 10.0), (10, 100),
         (100, 1000)]
LEVEL = 0.5 * math.erfc(3 / math.sqrt(2))
PIECE = 46_000


def rates(registers: np.ndarray, params: HllParams, left: np.ndarray, right: np.ndarray):
    """(mle, hll, hll before issue 53) fractions of the pairs (left, right) detected at Z = 3."""
    packed = PackedSketches(registers, params)
    cards = packed.cards
    unions = union_rows(packed, params, range(len(registers)), np.arange(len(registers)))
    unions = unions[left, right]
    mle = mle_pairs(packed, params, left, right).detected(3.0)
    hll = hll_detected(cards[left], cards[right], unions, params)
    shared = cards[left] + cards[right] - unions
    old = (shared > 0) & (shared >= hll_floor(params) * unions)
    return float(mle.mean()), float(hll.mean()), float(old.mean())


def simulated(count: int) -> list[dict]:
    rows = []
    for p in (12, 14, 16):
        params = HllParams(p, 4)
        rng = np.random.default_rng(p)
        for low, high in BANDS:
            sizes = np.exp(rng.uniform(math.log(low), math.log(high), count)) * params.m
            registers = np.array([simulated_registers(int(n), params, rng) for n in sizes])
            left, right = np.triu_indices(count, 1)
            mle, hll, old = rates(registers, params, left, right)
            rows.append({"p": p, "band_m": [low, high],
                         "kmers": [round(low * params.m), round(high * params.m)],
                         "pairs": int(left.size), "mle": mle, "hll": hll, "hll_before": old})
            print(f"p = {p}, {low}-{high} m ({low * params.m:,.0f}-{high * params.m:,.0f} "
                  f"k-mers), {left.size} pairs: mle {mle:.5f}, hll {hll:.5f} (before issue "
                  f"53: {old:.5f}); nominal {LEVEL:.5f}", flush=True)
    return rows


def pieces(count: int) -> dict:
    """Pieces of PIECE bases, ``count`` a genome, and the genus of each."""
    texts, genera = [], []
    for genus, _name, path in genome_files():
        sequence = b"".join(line.strip() for line in gzip.decompress(path.read_bytes())
                            .splitlines() if not line.startswith(b">"))
        for i in range(count):
            texts.append([b">piece\n" + sequence[i * PIECE:(i + 1) * PIECE] + b"\n"])
            genera.append(genus)
    params = HllParams(14, 4)
    registers = np.array(list(sketch_genomes(texts, 31, params)))
    genera = np.array(genera)
    left, right = np.triu_indices(len(texts), 1)
    unrelated = genera[left] != genera[right]
    left, right = left[unrelated], right[unrelated]
    mle, hll, old = rates(registers, params, left, right)
    cards = PackedSketches(registers, params).cards
    row = {"pieces": len(texts), "pairs": int(left.size), "kmers_per_piece":
           [round(float(cards.min())), round(float(cards.max()))],
           "mle": mle, "hll": hll, "hll_before": old}
    print(f"real: {len(texts)} pieces of {PIECE:,} bases ({row['kmers_per_piece'][0]:,}-"
          f"{row['kmers_per_piece'][1]:,} k-mers, {cards.min() / params.m:.2f}-"
          f"{cards.max() / params.m:.2f} m), {left.size} pairs across genera: mle {mle:.5f} "
          f"({round(mle * left.size)}), hll {hll:.5f} ({round(hll * left.size)}), before issue "
          f"53 {old:.5f} ({round(old * left.size)})")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sketches", type=int, default=100)
    parser.add_argument("--pieces", type=int, default=13)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    start = time.time()
    bands = simulated(args.sketches)
    real = pieces(args.pieces)
    print(f"{time.time() - start:.0f} s")
    if args.record:
        from bench import record
        record.write("detection_calibration", {
            "command": "python bench/detection_calibration.py"
                       + (f" --sketches {args.sketches}" if args.sketches != 100 else "")
                       + (f" --pieces {args.pieces}" if args.pieces != 13 else "")
                       + " --record",
            "nominal": LEVEL, "bands": bands, "real_pieces": real})


if __name__ == "__main__":
    main()
