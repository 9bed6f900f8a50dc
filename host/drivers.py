"""Kernel drivers: pack inputs, call a kernel on a host.device device, unpack the outputs.

The packing, call sequence and unpacking are the layout modules' (kmerspec.layout.*), which the
cocotb kernel tests use too; the device (SimDevice or XrtDevice) only moves bytes. Geometry
(lanes, bus width, pivots) does not change results, only speed: simulation uses narrow kernels
so that it stays quick, a card uses the geometry it was built with (hw.build defaults).
"""

import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from .device import Output
from kmerspec.golden.hll import HllParams

__all__ = ["KernelGeometry", "sketch_genomes", "all_pairs", "build_pqas", "find_motifs"]


@dataclass(frozen=True)
class KernelGeometry:
    """Build parameters of the kernels that do not change results."""

    sketch_lanes: int = 8
    sketch_bytes_per_lane: int = 8
    pivots: int = 80
    streams: int = 4
    jsd_lanes: int = 8
    jsd_bytes_per_lane: int = 8
    similarity_data_width: int = 512
    motif_data_width: int = 512


#: Small kernels for RTL simulation (a 64- or 128-bit bus, few pivots): quick to build and run.
SIM_GEOMETRY = KernelGeometry(sketch_lanes=2, sketch_bytes_per_lane=4, pivots=4, streams=2,
                              jsd_lanes=2, jsd_bytes_per_lane=8, similarity_data_width=128)


def _geometry(device) -> KernelGeometry:
    return getattr(device, "geometry", None) or (
        SIM_GEOMETRY if device.name == "sim" else KernelGeometry())


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


def sketch_genomes(device, genomes: list[list[bytes]], k: int,
                   params: HllParams) -> list[np.ndarray]:
    """HLL registers of every genome from the sketch-construction kernel."""
    from hw.sketch.kernel import SketchKernel

    from kmerspec.layout.sketch import iter_chunks, plan_blocks, unpack_records
    geometry = _geometry(device)
    kernel = SketchKernel(lanes=geometry.sketch_lanes,
                          bytes_per_lane=geometry.sketch_bytes_per_lane, k=k, p=params.p,
                          w=params.w)
    layout = kernel.geometry
    records = _chunked_records(device, kernel, iter_chunks(plan_blocks(genomes, layout), layout),
                               layout.record_bytes,
                               lambda data, count: unpack_records(data, count, layout))
    return [np.array(records[tag].registers, dtype=np.uint8) for tag in range(len(genomes))]


def all_pairs(device, registers: np.ndarray, params: HllParams, threshold: float | None):
    """host.similarity.all_pairs, computed by the similarity kernel's calls (host.allpairs)."""
    from hw.similarity.kernel import SimilarityKernel

    from .allpairs import device_executor, run_all_pairs
    geometry = _geometry(device)
    kernel = SimilarityKernel(geometry.pivots, geometry.streams, params.p, params.w,
                              geometry.similarity_data_width)
    return run_all_pairs(registers, params, kernel.geometry, threshold,
                         device_executor(device, kernel))


def build_pqas(device, genomes: list[list[bytes]], params) -> list:
    """The PQA of every genome from the queue-builder kernel (kmerspec.golden.pqa.Pqa objects)."""
    from hw.jsd.kernel import QueueBuilderKernel

    from kmerspec.layout.jsd import unpack_records
    from kmerspec.layout.sketch import iter_chunks, plan_blocks
    if not params.canonical:
        raise ValueError("the queue-builder kernel uses canonical k-mers; drop --no-canonical "
                         "or use --backend sw")
    geometry = _geometry(device)
    kernel = QueueBuilderKernel(lanes=geometry.jsd_lanes, bytes_per_lane=geometry.jsd_bytes_per_lane,
                                k=params.k, s=params.s, sample_seed=params.sample_seed,
                                d=params.d, cw=params.cw, R=params.R, n=params.n)
    layout = kernel.geometry
    chunks = iter_chunks(plan_blocks(genomes, layout.chunk_geometry), layout.chunk_geometry)
    records = _chunked_records(device, kernel, chunks, layout.record_bytes,
                               lambda data, count: unpack_records(data, count, layout),
                               {"update": int(params.update == "cm")})
    return [records[tag].pqa for tag in range(len(genomes))]


def find_motifs(device, test_files: list[bytes], control_files: list[bytes], params) -> list:
    """Emerging k-mers (kmerspec.golden.motif.MotifRow) from the motif kernel."""
    from hw.motif.kernel import MotifKernel

    from kmerspec.layout.motif import (emerging_rows_from, pack_files, pack_thresholds, result_bytes,
                               unpack_result)
    width = _geometry(device).motif_data_width
    kernel = MotifKernel(params, width)
    test, control = pack_files(test_files), pack_files(control_files)
    result = device.run(kernel, {
        "test": test, "test_bytes": len(test), "control": control,
        "control_bytes": len(control), "thresholds": pack_thresholds(params),
        "growth_q8": params.growth_q8, "result": Output(result_bytes(params, width))})
    return emerging_rows_from(unpack_result(result.outputs["result"], params, width))
