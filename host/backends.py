"""Compute backends behind the command line.

``sw`` is the fast vectorised model (host.fast), ``golden`` the pure-Python reference
(host.golden; slow, for cross-checks). Both give identical sketches. Hardware backends (``sim``
for RTL simulation, ``xrt`` for a card) plug in here with the same methods.
"""

import numpy as np

from .golden.hll import Hll, HllParams
from .golden.parse import genome_kmers

__all__ = ["BACKENDS", "get_backend"]


class SoftwareBackend:
    """The fast numpy model."""

    name = "sw"

    def sketch_hll(self, files: list[bytes], k: int, params: HllParams,
                   canonical: bool) -> tuple[np.ndarray, int]:
        """(registers, number of k-mers) of one genome."""
        from .fast.hll import insert_kmers
        from .fast.kmers import kmer_array
        registers = np.zeros(params.m, dtype=np.uint8)
        count = 0
        for data in files:
            words = kmer_array(data, k, canonical)
            insert_kmers(registers, words, params)
            count += words.size
        return registers, count

    def build_pqa(self, files: list[bytes], params):
        from .fast.jsd import build_pqa_fast
        return build_pqa_fast(files, params)

    def find_motifs(self, test_files: list[bytes], control_files: list[bytes], params):
        from .fast.motif import find_motifs_fast
        return find_motifs_fast(test_files, control_files, params)


class GoldenBackend:
    """The pure-Python reference model."""

    name = "golden"

    def sketch_hll(self, files, k, params, canonical):
        sketch = Hll(params)
        count = 0
        for kmer in genome_kmers(files, k, canonical_form=canonical):
            sketch.insert_kmer(kmer)
            count += 1
        return np.array(sketch.registers, dtype=np.uint8), count

    def build_pqa(self, files, params):
        from .golden.jsd import build_pqa
        return build_pqa(genome_kmers(files, params.k, canonical_form=params.canonical), params)

    def find_motifs(self, test_files, control_files, params):
        from .golden.motif import find_motifs
        return find_motifs(test_files, control_files, params)


BACKENDS = {"sw": SoftwareBackend, "golden": GoldenBackend}


def get_backend(name: str):
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}") from None
