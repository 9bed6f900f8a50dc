"""Jensen-Shannon divergence between many genomes' PQAs (SPEC section 4).

The float64 path follows kmerspec.golden.entropy's definitions in compiled code
(host/fast/_jsd.c: one merge walk of two sorted key lists per pair, no Python per pair, the GIL
released so row tiles run on every core; equal to the golden float64 JSD to ~1e-12); the
``fixed`` path calls the bit-exact model of the hardware JSD unit, pair by pair, and reports its
Q5.24 result in bits.
"""

from typing import TYPE_CHECKING

import numpy as np

from .choices import ARITHMETICS
from .fast.native import native

# The bit-exact fixed-point models (their lookup tables are computed on import) are imported by
# the ``fixed`` path only.
if TYPE_CHECKING:
    from kmerspec.golden.pqa import Pqa

__all__ = ["PqaArrays", "entropies", "jsd_row_tile", "kernel_row_tiles", "fixed_jsd_to_float",
           "ARITHMETICS"]



class PqaArrays:
    """The PQAs of N genomes as uint32 arrays ``tags``, ``values`` of shape (N, 2^R, n)."""

    def __init__(self, tags: np.ndarray, values: np.ndarray):
        self.tags, self.values = tags, values
        queues = tags.shape[1]
        self.R = queues.bit_length() - 1
        self.n = tags.shape[2]
        queue_of_entry = np.repeat(np.arange(queues, dtype=np.uint64), self.n)
        self._keys, self._counts = [], []
        for genome in range(tags.shape[0]):
            flat_values = values[genome].reshape(-1)
            used = flat_values > 0
            keys = (queue_of_entry[used] << np.uint64(32)) | tags[genome].reshape(-1)[used]
            order = np.argsort(keys)
            self._keys.append(keys[order])
            self._counts.append(flat_values[used][order].astype(np.float64))
        self._compiled = {}
        self._same, seen = np.empty(len(self._keys), np.int64), {}
        for genome, (keys, counts) in enumerate(zip(self._keys, self._counts)):
            self._same[genome] = seen.setdefault((keys.tobytes(), counts.tobytes()), genome)

    def __len__(self) -> int:
        return self.tags.shape[0]

    def entries(self, genome: int) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys queue << 32 | tag, counts as float64) of the non-empty entries."""
        return self._keys[genome], self._counts[genome]

    def compiled_input(self, mode: str) -> tuple:
        """The arrays host/fast/_jsd.c takes for ``mode``: every genome's sorted keys and
        counts end to end, each entry's term c/s log2(c/s), the offsets of each genome's
        stretch (N + 1), and per genome its sum of terms, scale s (its count total in textbook
        mode, 1 in counts mode) and mass (its counts over s)."""
        if mode not in self._compiled:
            sizes = [keys.size for keys in self._keys]
            offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            keys = np.concatenate([np.zeros(0, np.uint64), *self._keys]).astype(np.uint64)
            counts = np.concatenate([np.zeros(0), *self._counts])
            totals = np.array([c.sum() for c in self._counts], dtype=np.float64)
            scales = totals.copy() if mode == "textbook" else np.ones(len(sizes))
            scales[scales == 0] = 1.0  # an empty genome has no entry to scale
            shares = counts / np.repeat(scales, sizes)
            terms = shares * np.log2(shares)
            term_sums = np.array([terms[offsets[g]:offsets[g + 1]].sum()
                                  for g in range(len(sizes))], dtype=np.float64)
            masses = totals / scales
            self._compiled[mode] = (keys, counts, terms, offsets, term_sums, scales, masses)
        return self._compiled[mode]

    def same_entries(self) -> np.ndarray:
        """A label per genome, equal for genomes holding the same entries."""
        return self._same

    def pqa(self, genome: int) -> "Pqa":
        from kmerspec.golden.pqa import Pqa
        queues = [list(zip(t, v)) for t, v in zip(self.tags[genome].tolist(),
                                                   self.values[genome].tolist())]
        return Pqa(self.R, self.n, queues)


def _entropy(counts: np.ndarray) -> float:
    total = counts.sum()
    if total == 0:
        return 0.0
    return float(np.log2(total) - np.sum(counts * np.log2(counts)) / total)


def entropies(pqas: PqaArrays) -> np.ndarray:
    return np.array([_entropy(pqas.entries(g)[1]) for g in range(len(pqas))])


_MODE_CODES = {"counts": 0, "textbook": 1}  # host/fast/_jsd.c


def fixed_jsd_to_float(rows: range, block: np.ndarray, pqas: PqaArrays) -> np.ndarray:
    """The float JSD of rows of fixed-point JSD / 2^24 (the hardware's, bit for bit): never
    below 0, and exactly 0 between genomes holding the same entries (SPEC 4; the float
    arithmetic's rule, kmerspec.golden.entropy.jsd_from_pqas)."""
    block = np.maximum(block, 0.0)
    same = pqas.same_entries()
    block[same[np.asarray(rows)][:, None] == same[None, :]] = 0.0
    return block


def jsd_row_tile(rows: range, pqas: PqaArrays, entropy: np.ndarray, mode: str,
                 arithmetic: str) -> np.ndarray:
    """Full rows of the JSD matrix (diagonal 0): a task of a (possibly distributed) run."""
    n = len(pqas)
    out = np.zeros((len(rows), n))
    if arithmetic == "fixed":
        from kmerspec.golden.entropy import FIXED_ONE, jsd_fixed, pqa_entropy_fixed
        fixed_entropy = [pqa_entropy_fixed(pqas.pqa(g)) for g in range(n)]
        for row, a in enumerate(rows):
            for b in range(n):
                if a != b:
                    out[row, b] = jsd_fixed(pqas.pqa(a), pqas.pqa(b), mode, fixed_entropy[a],
                                            fixed_entropy[b]) / FIXED_ONE
        return fixed_jsd_to_float(rows, out, pqas)
    native.jsd_rows(*pqas.compiled_input(mode), np.ascontiguousarray(entropy, dtype=np.float64),
                    _MODE_CODES[mode], np.array(rows, dtype=np.int64), out)
    return out


def kernel_row_tiles(backend, pqas: PqaArrays, tiles: list[range], mode: str, arithmetic: str):
    """The row tiles of the JSD matrix from ``backend``'s JSD similarity kernel (a kernel
    backend: ``sim``, ``xrt``), or None for a software backend. The kernel computes the
    fixed-point JSD, the ``fixed`` arithmetic of :func:`jsd_row_tile`, bit for bit."""
    if not hasattr(backend, "jsd_rows"):
        return None
    if arithmetic != "fixed":
        raise ValueError(f"--backend {backend.name}: the JSD similarity kernel computes the "
                         "fixed-point JSD; add --arithmetic fixed (float64 is --backend sw)")
    rows = backend.jsd_rows([pqas.pqa(genome) for genome in range(len(pqas))], tiles, mode)
    return (fixed_jsd_to_float(tile, block, pqas) for tile, block in zip(tiles, rows))
