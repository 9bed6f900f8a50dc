"""HLL containment (p=14, w=4, k=31) within 0.02 of exact containment on real genome pairs, both
directions: S. aureus NCTC8325 and its draft derivative RN4220 (Debian's sibelia-examples), and
two bee-virus genomes of examples/. The full table of 76 pairs: bench/containment_accuracy.py."""

import numpy as np

from bench.containment_accuracy import (exact_containment, exact_sets, example_genomes,
                                        hll_containment, nctc8325_and_rn4220)


def test_containment_is_within_0_02_of_exact_on_real_pairs():
    viruses = dict(example_genomes())
    texts = [text for _, text in nctc8325_and_rn4220()] + [viruses["dwv"], viruses["vdv1dwv5"]]
    pairs = [(0, 1), (1, 0), (2, 3), (3, 2)]
    exact = exact_containment(exact_sets(texts, 31), pairs)
    estimated = hll_containment(texts, pairs, 31, 14, threads=1)
    # the pairs span near containment (RN4220 in NCTC8325) and partial overlap (recombinant)
    assert exact[1] > 0.99 and 0.2 < exact[2] < 0.4, exact
    assert np.all(np.abs(estimated - exact) <= 0.02), (estimated, exact)
