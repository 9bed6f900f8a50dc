"""All-pairs Jaccard through the call plan of the JACC similarity kernel
(docs/jacc_similarity_kernel.md).

A :class:`SimilarityJob` sorts the sketches (by cardinality when pruning), packs the sketch buffer
and plans the kernel calls (kmerspec.kernels.jacc_similarity). Each call is then executed by a
backend, a function ``(sketch buffer, call) -> feature record bytes``: :func:`execute_model` is the
software model (the ``sw`` backend), the cocotb test and the FPGA driver run the RTL kernel. The
job turns the records into Jaccard values, row by row exactly as :func:`host.similarity.all_pairs`
yields them, and :func:`write_similarity` writes full (TSV, PHYLIP) or sparse (edges) output.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

import numpy as np

from kmerspec.golden.hll import HllParams
from kmerspec.kernels.jacc_similarity import (KernelCall, call_pairs, pack_features,
                                              pack_sketches, partner_stops, plan_calls,
                                              unpack_features, unpack_groups)
from kmerspec.kernels.jacc_similarity import Params as JaccSimilarityParams

from .io import phylip_name
from .similarity import PackedSketches, estimates, union_features, union_saturated

__all__ = ["SimilarityJob", "execute_model", "device_executor", "run_all_pairs",
           "run_union_calls", "write_similarity"]

Executor = Callable[[bytes, KernelCall], bytes]


def _visible_pivots(call: KernelCall, group: int, geometry: JaccSimilarityParams) -> np.ndarray:
    """Pivot slots holding a sketch while group ``group`` of the call streams: the slots of pivot
    groups already loaded or loading now; the others count as empty sketches."""
    pivot_group = np.arange(geometry.pivots) // geometry.streams
    return (pivot_group <= group) & (pivot_group < call.pivot_groups)


def execute_model(buffer: bytes, call: KernelCall, geometry: JaccSimilarityParams) -> bytes:
    """The feature records the kernel writes for ``call`` on sketch ``buffer`` (software model)."""
    g = geometry
    params = HllParams(g.p, g.w)
    streamed = unpack_groups(buffer, call.first_group, call.groups, g)
    pivots = np.zeros((g.pivots, g.m), dtype=np.uint8)
    loaded = min(call.pivot_groups, g.pivot_groups) * g.streams
    pivots[:loaded] = streamed[:loaded // g.streams].reshape(loaded, g.m)
    z = np.empty((call.groups, g.pivots, g.streams), dtype=object)
    nz = np.empty((call.groups, g.pivots, g.streams), dtype=np.int64)
    for q in range(call.groups):
        visible = pivots * _visible_pivots(call, q, g)[:, None].astype(np.uint8)
        unions = np.maximum(visible[:, None, :], streamed[q][None, :, :]).reshape(-1, g.m)
        zq, nzq = union_features(None, unions, params)
        z[q] = np.array(zq, dtype=object).reshape(g.pivots, g.streams)
        nz[q] = np.asarray(nzq).reshape(g.pivots, g.streams)
    return pack_features(z, nz, g)


def device_executor(device, kernel) -> Executor:
    """Run calls on a host.device device (SimDevice, XrtDevice) with ``kernel`` (the
    kmerspec.kernels.jacc_similarity.Params of the kernel): the sketch buffer is uploaded with
    every call."""
    from .calls import Output
    geometry = kernel

    def execute(buffer: bytes, call: KernelCall) -> bytes:
        size = call.groups * geometry.record_block_bytes
        result = device.run(kernel, {"sketches": buffer, "features": Output(size),
                                     **call.scalar_arguments()})
        return result.outputs["features"]
    return execute


class SimilarityJob:
    """Sorted sketches, their buffer and the kernel calls of one all-pairs run.

    Parameters
    ----------
    registers : (n, m) uint8 array, one sketch per row
    params : HllParams (must match the geometry's p and w)
    geometry : JaccSimilarityParams of the kernel
    threshold : None for the full upper triangle, else h in (0, 1]: sketches are sorted by
        ascending cardinality (stable) and pruned by |Y| <= |X| / h.
    """

    def __init__(self, registers: np.ndarray, params: HllParams, geometry: JaccSimilarityParams,
                 threshold: float | None = None):
        if (params.p, params.w) != (geometry.p, geometry.w):
            raise ValueError(f"the sketches have p={params.p}, w={params.w} but the kernel "
                             f"geometry has p={geometry.p}, w={geometry.w}")
        registers = np.asarray(registers, dtype=np.uint8)
        self.params, self.geometry, self.threshold = params, geometry, threshold
        self.n = registers.shape[0]
        packed = PackedSketches(registers, params) if self.n else None
        self.cards = packed.cards if self.n else np.empty(0)
        self.order = (np.arange(self.n) if threshold is None
                      else np.argsort(self.cards, kind="stable"))
        self.sorted_cards = self.cards[self.order]
        # the kernel returns (Z, nz) of each union; its saturated registers (C_R) come from
        # the host, counted only for pairs with a saturated sketch
        self.sorted_registers = registers[self.order]
        self.sorted_saturated = (packed.saturated[self.order] if self.n
                                 else np.empty(0, np.uint32))
        self.stops = partner_stops(self.sorted_cards, threshold)
        self.buffer = pack_sketches(registers[self.order], geometry)
        self.calls = plan_calls(self.n, geometry, self.stops)

    def model_features(self, call: KernelCall) -> bytes:
        return execute_model(self.buffer, call, self.geometry)

    def union_features(self, features: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray,
                                                                  list[int], np.ndarray]:
        """(r, t, Z, nz) of every wanted pair, ranks r < t, from the records of every call."""
        if len(features) != len(self.calls):
            raise ValueError(f"{len(features)} feature blocks for {len(self.calls)} calls")
        rs, ts, zs, nzs = [], [], [], []
        for call, records in zip(self.calls, features):
            r, t, q, j, s = call_pairs(call, self.n, self.geometry, self.stops)
            z, nz = unpack_features(records, call.groups, self.geometry)
            rs.append(r)
            ts.append(t)
            zs.extend(z[q, j, s].tolist())
            nzs.append(nz[q, j, s])
        cat = (lambda parts: np.concatenate(parts) if parts else np.empty(0, dtype=np.int64))
        return cat(rs), cat(ts), zs, cat(nzs)

    def call_unions(self, call: KernelCall, records: bytes
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(i, j, |X_i u X_j|) of the wanted pairs of one call, as genome indices (each pair
        once, in no particular order): for consuming the records call by call."""
        r, t, q, j, s = call_pairs(call, self.n, self.geometry, self.stops)
        z, nz = unpack_features(records, call.groups, self.geometry)
        unions = estimates(z[q, j, s].tolist(), nz[q, j, s], self.params,
                           self._union_saturated(r, t))
        return self.order[r], self.order[t], unions

    def _union_saturated(self, r: np.ndarray, t: np.ndarray) -> np.ndarray:
        return union_saturated(self.sorted_registers, self.params, self.sorted_saturated, r, t)

    def rows(self, features: Sequence[bytes]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(i, js, J) per genome, the same rows, partners and values as host.similarity.all_pairs
        (with a threshold, only pairs with J >= h)."""
        r, t, z, nz = self.union_features(features)
        card_union = estimates(z, nz, self.params, self._union_saturated(r, t))
        with np.errstate(divide="ignore", invalid="ignore"):
            j = (self.sorted_cards[r] + self.sorted_cards[t] - card_union) / card_union
        j = np.where(card_union > 0, np.clip(j, 0.0, 1.0), 0.0)
        by_row = np.lexsort((t, r))
        r, t, j = r[by_row], t[by_row], j[by_row]
        bounds = np.searchsorted(r, np.arange(self.n + 1))
        for rank in range(self.n):
            lo, hi = bounds[rank], bounds[rank + 1]
            expected = max(0, int(self.stops[rank]) - rank - 1)
            wanted = np.arange(rank + 1, rank + 1 + expected)
            if hi - lo != expected or not np.array_equal(t[lo:hi], wanted):
                raise RuntimeError(f"the call plan covers {hi - lo} partners of rank {rank}, "
                                   f"not the {expected} it must")
            partners, values = self.order[t[lo:hi]], j[lo:hi]
            if self.threshold is not None:
                keep = values >= self.threshold
                partners, values = partners[keep], values[keep]
            yield int(self.order[rank]), partners, values


def run_all_pairs(registers: np.ndarray, params: HllParams, geometry: JaccSimilarityParams,
                  threshold: float | None = None, execute: Executor | None = None
                  ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """All-pairs Jaccard rows through the kernel plan; ``execute`` runs one call (default: the
    software model)."""
    job = SimilarityJob(registers, params, geometry, threshold)
    run = execute or (lambda buffer, call: execute_model(buffer, call, geometry))
    return job.rows([run(job.buffer, call) for call in job.calls])


def run_union_calls(registers: np.ndarray, params: HllParams, geometry: JaccSimilarityParams,
                    execute: Executor | None = None
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(i, j, |X_i u X_j|) of every pair i != j (each once), one kernel call after another, as
    the records arrive: nothing of the full matrix is held."""
    job = SimilarityJob(registers, params, geometry)
    run = execute or (lambda buffer, call: execute_model(buffer, call, geometry))
    for call in job.calls:
        yield job.call_unions(call, run(job.buffer, call))


def write_similarity(out: TextIO, names: Sequence[str],
                     rows: Iterator[tuple[int, np.ndarray, np.ndarray]], fmt: str) -> None:
    """Write rows from :meth:`SimilarityJob.rows`: ``tsv`` (Jaccard matrix), ``phylip`` (square
    distance matrix, 1 - J) or ``edges`` (one line per yielded pair)."""
    if fmt == "edges":
        out.write("#genome_a\tgenome_b\tjaccard\n")
        for i, js, values in rows:
            for j, v in zip(js.tolist(), values.tolist()):
                out.write(f"{names[i]}\t{names[j]}\t{v:.6g}\n")
        return
    if fmt not in ("tsv", "phylip"):
        raise ValueError(f"format must be 'tsv', 'phylip' or 'edges', not {fmt!r}")
    matrix = np.eye(len(names))
    for i, js, values in rows:
        matrix[i, js] = matrix[js, i] = values
    if fmt == "tsv":
        out.write("#genome\t" + "\t".join(names) + "\n")
        for name, row in zip(names, matrix):
            out.write(name + "\t" + "\t".join(f"{v:.6g}" for v in row) + "\n")
    else:
        out.write(f"{len(names)}\n")
        for name, row in zip(names, 1.0 - matrix):
            out.write(phylip_name(name) + " " + " ".join(f"{v:.6f}" for v in row) + "\n")
