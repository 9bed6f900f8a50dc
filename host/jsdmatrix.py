"""Jensen-Shannon divergence between many genomes' PQAs (SPEC section 4), vectorised.

The float64 path follows kmerspec.golden.entropy's definitions with numpy sums (equal to the golden
float64 JSD to ~1e-12); the ``fixed`` path calls the bit-exact model of the hardware JSD unit,
pair by pair, and reports its Q5.24 result in bits.
"""

import numpy as np

from kmerspec.golden.entropy import FIXED_ONE, jsd_fixed, pqa_entropy_fixed
from kmerspec.golden.pqa import Pqa

__all__ = ["PqaArrays", "entropies", "jsd_row_tile", "ARITHMETICS"]

ARITHMETICS = ("float", "fixed")


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

    def __len__(self) -> int:
        return self.tags.shape[0]

    def entries(self, genome: int) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys queue << 32 | tag, counts as float64) of the non-empty entries."""
        return self._keys[genome], self._counts[genome]

    def pqa(self, genome: int) -> Pqa:
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


def _jsd_float(pqas: PqaArrays, entropy: np.ndarray, a: int, b: int, mode: str) -> float:
    keys_p, counts_p = pqas.entries(a)
    keys_q, counts_q = pqas.entries(b)
    if mode == "textbook" and (counts_p.size == 0 or counts_q.size == 0):
        return 0.0 if counts_p.size == counts_q.size == 0 else 1.0
    united, position = np.unique(np.concatenate([keys_p, keys_q]), return_inverse=True)
    p = np.bincount(position[:keys_p.size], weights=counts_p, minlength=united.size)
    q = np.bincount(position[keys_p.size:], weights=counts_q, minlength=united.size)
    if mode == "counts":
        mixture = p + q
    else:  # equal-weight mixture; entropy is invariant to the scale M_P * M_Q of the SPEC form
        mixture = p / counts_p.sum() + q / counts_q.sum()
    mixture = mixture[mixture > 0]
    return _entropy(mixture) - (entropy[a] + entropy[b]) / 2


def jsd_row_tile(rows: range, pqas: PqaArrays, entropy: np.ndarray, mode: str,
                 arithmetic: str) -> np.ndarray:
    """Full rows of the JSD matrix (diagonal 0): a task of a (possibly distributed) run."""
    n = len(pqas)
    out = np.zeros((len(rows), n))
    fixed_entropy = None
    if arithmetic == "fixed":
        fixed_entropy = [pqa_entropy_fixed(pqas.pqa(g)) for g in range(n)]
    for row, a in enumerate(rows):
        for b in range(n):
            if a == b:
                continue
            if arithmetic == "fixed":
                value = jsd_fixed(pqas.pqa(a), pqas.pqa(b), mode, fixed_entropy[a],
                                  fixed_entropy[b]) / FIXED_ONE
            else:
                value = _jsd_float(pqas, entropy, a, b, mode)
            out[row, b] = value
    return out
