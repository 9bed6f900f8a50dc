"""Kernel drivers: pack inputs, call a kernel on a host.device device, unpack the outputs.

A kernel is named by its contract, the Params of kmerspec.kernels.<kernel>: its ``desc`` names
the host arguments, and the layout functions of the same module pack and unpack them (the cocotb
kernel tests use them too); the device (SimDevice or XrtDevice) only moves bytes, so this module
needs no Amaranth. Geometry (lanes, bus width, pivots) does not change results, only speed:
simulation uses narrow kernels so that it stays quick, a card uses the geometry it was built with
(the Params defaults, which hw.build builds, unless the device carries a ``geometry``).
"""

import queue
import threading
from collections.abc import Iterable, Iterator

import numpy as np

from kmerspec.chunks import iter_chunks, plan_blocks
from kmerspec.golden.hll import HllParams
from kmerspec.golden.mincount import MinCountParams
from kmerspec.kernels import jacc_similarity, jacc_sketch, jsd_builder, jsd_similarity, motif

from .calls import SIM_GEOMETRIES, SIM_GEOMETRY, Output

__all__ = ["SIM_GEOMETRY", "SIM_GEOMETRIES", "sketch_genomes", "all_pairs", "union_calls",
           "build_pqas", "jsd_matrix", "find_motifs", "JSD_STREAM_BYTES"]

#: At most this many bytes of streamed PQA records per JSD similarity call
JSD_STREAM_BYTES = 64 << 20


def _geometry(device, kernel: str) -> dict:
    """The geometry fields of ``kernel`` on ``device``: its own ``geometry`` mapping (a card
    built with non-default Params, or a SimDevice's chosen geometry), else SIM_GEOMETRY in
    simulation, else the defaults."""
    geometry = getattr(device, "geometry", None)
    if geometry is None:
        geometry = SIM_GEOMETRY if device.name == "sim" else {}
    return dict(geometry.get(kernel, {}))


def prefetched(items: Iterable, depth: int = 2) -> Iterator:
    """Yield ``items`` while a thread computes up to ``depth`` of the next ones (double
    buffering: the next chunk is packed while the kernel works on this one)."""
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    finished = object()

    def produce():
        try:
            for item in items:
                buffer.put((item, None))
        except BaseException as error:  # re-raised in the consumer
            buffer.put((None, error))
        buffer.put((finished, None))

    thread = threading.Thread(target=produce, name="packer", daemon=True)
    thread.start()
    while True:
        item, error = buffer.get()
        if error is not None:
            raise error
        if item is finished:
            return
        yield item


def _chunked_records(device, kernel, chunks, record_bytes: int, unpack,
                     extra: dict | None = None) -> dict:
    """Run one kernel call per (chunk, tags) as the chunks are packed; records by genome tag."""
    pending_tags: queue.SimpleQueue = queue.SimpleQueue()

    def calls():
        for chunk, tags in chunks:
            pending_tags.put(tags)
            yield {"src": chunk, "n_bytes": len(chunk), "n_records": len(tags),
                   "dst": Output(max(1, len(tags)) * record_bytes), **(extra or {})}
    records = {}
    for result in device.run_stream(kernel, prefetched(calls())):
        tags = pending_tags.get()
        unpacked = unpack(result.outputs["dst"], len(tags))
        if sorted(record.tag for record in unpacked) != sorted(tags):
            raise ValueError(f"kernel {kernel.desc.name} returned records for genomes "
                             f"{sorted(r.tag for r in unpacked)}, expected {sorted(tags)}")
        records.update((record.tag, record) for record in unpacked)
    return records


def sketch_genomes(device, genomes: list[list[bytes]], k: int, params: HllParams,
                   min_count: MinCountParams = MinCountParams()) -> list[np.ndarray]:
    """HLL registers of every genome from the JACC sketch kernel; with ``min_count`` m > 1, a
    kernel built with that prefilter (SPEC 7; a card built otherwise is refused by its identity
    words), given m at each call. A kernel built with a prefilter is given m = 1 otherwise."""
    kernel = jacc_sketch.Params(k=k, p=params.p, w=params.w,
                                **_geometry(device, jacc_sketch.Params.KERNEL))
    kernel = kernel.with_prefilter(min_count)
    records = _chunked_records(device, kernel, iter_chunks(plan_blocks(genomes, kernel), kernel),
                               kernel.record_bytes,
                               lambda data, count: jacc_sketch.unpack_records(data, count, kernel),
                               {"min_count": min_count.min_count} if kernel.mc_depth else None)
    return [np.array(records[tag].registers, dtype=np.uint8) for tag in range(len(genomes))]


def all_pairs(device, registers: np.ndarray, params: HllParams, threshold: float | None):
    """host.similarity.all_pairs, computed by the JACC similarity kernel's calls (host.allpairs)."""
    from .allpairs import device_executor, run_all_pairs
    kernel = jacc_similarity.Params(p=params.p, w=params.w,
                                    **_geometry(device, jacc_similarity.Params.KERNEL))
    return run_all_pairs(registers, params, kernel, threshold, device_executor(device, kernel))


def union_calls(device, registers: np.ndarray, params: HllParams):
    """(i, j, |X_i u X_j|) of every pair, call by call of the JACC similarity kernel
    (host.allpairs.run_union_calls): for the other metrics and nearest neighbours."""
    from .allpairs import device_executor, run_union_calls
    kernel = jacc_similarity.Params(p=params.p, w=params.w,
                                    **_geometry(device, jacc_similarity.Params.KERNEL))
    return run_union_calls(registers, params, kernel, device_executor(device, kernel))


def build_pqas(device, genomes: list[list[bytes]], params) -> list:
    """The PQA of every genome from the JSD queue-builder kernel (kmerspec.golden.pqa.Pqa)."""
    kernel = jsd_builder.Params.for_algorithm(params,
                                              **_geometry(device, jsd_builder.Params.KERNEL))
    chunks = iter_chunks(plan_blocks(genomes, kernel), kernel)
    records = _chunked_records(device, kernel, chunks, kernel.record_bytes,
                               lambda data, count: jsd_builder.unpack_records(data, count, kernel),
                               {"update": int(params.update == "cm")})
    return [records[tag].pqa for tag in range(len(genomes))]


def jsd_matrix(device, pqas: list, tiles: list[range], mode: str) -> Iterator[np.ndarray]:
    """Full rows of the JSD matrix (signed Q5.24 JSD / 2^24, diagonal 0: host.jsdmatrix's
    ``fixed`` arithmetic) from the JSD similarity kernel, one array per tile of rows. Each call
    holds up to V rows' PQAs as pivots and streams the PQAs of every column (in pieces of at most
    JSD_STREAM_BYTES), so row a, column b is the kernel's JSD of pivot a with streamed b, the
    argument order of kmerspec.golden.entropy.jsd_fixed."""
    from kmerspec.golden.entropy import FIXED_ONE, pqa_entropy_fixed
    if not pqas:
        return
    kernel = jsd_similarity.Params(R=pqas[0].R, n=pqas[0].n,
                                   **_geometry(device, jsd_similarity.Params.KERNEL))
    records = [jsd_builder.pack_record(jsd_builder.PqaRecord(
        tag, pqa_entropy_fixed(pqa), pqa.total(), pqa), kernel) for tag, pqa in enumerate(pqas)]
    columns = len(records)
    per_call = max(1, JSD_STREAM_BYTES // kernel.record_bytes)
    pieces = [(start, b"".join(records[start:start + per_call]))
              for start in range(0, columns, per_call)]
    mode_code = {"textbook": 0, "counts": 1}[mode]
    for tile in tiles:
        out = np.zeros((len(tile), columns))
        plan = [(range(first, min(first + kernel.pivots, tile.stop)), start, piece)
                for first in range(tile.start, tile.stop, kernel.pivots)
                for start, piece in pieces]

        def calls():
            for block, _, piece in plan:
                count = len(piece) // kernel.record_bytes
                yield {"pivots": b"".join(records[block.start:block.stop]),
                       "n_pivots": len(block), "pqas": piece, "n_pqas": count,
                       "out": Output(count * kernel.bus_bytes), "mode": mode_code}
        for (block, start, piece), result in zip(plan, device.run_stream(kernel,
                                                                          prefetched(calls()))):
            count = len(piece) // kernel.record_bytes
            values = np.array(jsd_similarity.unpack_results(result.outputs["out"], count,
                                                            len(block), kernel), dtype=np.int64)
            out[block.start - tile.start:block.stop - tile.start, start:start + count] = \
                values.T / FIXED_ONE
        out[np.arange(len(tile)), np.arange(tile.start, tile.stop)] = 0.0
        yield out


def find_motifs(device, test_files: list[bytes], control_files: list[bytes], params) -> list:
    """Emerging k-mers (kmerspec.golden.motif.MotifRow) from the motif kernel."""
    kernel = motif.Params.for_algorithm(params, **_geometry(device, motif.Params.KERNEL))
    test, control = motif.pack_files(test_files), motif.pack_files(control_files)
    result = device.run(kernel, {
        "test": test, "test_bytes": len(test), "control": control,
        "control_bytes": len(control), "thresholds": motif.pack_thresholds(params),
        "growth_q8": params.growth_q8, "result": Output(motif.result_bytes(kernel))})
    return motif.emerging_rows_from(motif.unpack_result(result.outputs["result"], kernel))
