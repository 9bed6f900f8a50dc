"""The ``sim`` backend of the JSD engine: the RTL kernels simulated with cocotb on Verilator.

:func:`build_pqas_sim` packs genomes into chunks with :mod:`kmerspec.chunks` (as the FPGA driver
does), runs the queue-builder kernel once per chunk and returns one :class:`PqaRecord` (PQA,
Q5.24 entropy, total) per genome. :func:`jsd_rows_sim` runs the similarity kernel: the JSD
(signed Q5.24) of each of up to V pivots with every record. Both build the kernel for the
geometry of ``params`` (k, s, d, cw, R, n; update and mode are runtime) on a 128-bit bus (2 lanes
x 8 bytes) unless told otherwise. Simulation is slow (about 10^4 cycles per second and 2^R x n x
8 bytes of record per genome): use small genomes and a small R.
"""

import pathlib
import tempfile

from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.golden.jsd import JsdParams
from kmerspec.kernels import jsd_builder, jsd_similarity
from kmerspec.kernels.jsd_builder import PqaRecord, pack_record, run_genomes
from kmerspec.kernels.jsd_similarity import unpack_results

__all__ = ["build_pqas_sim", "jsd_rows_sim", "builder_kernel", "similarity_kernel"]


def builder_kernel(params: JsdParams, lanes: int = 2, bytes_per_lane: int = 8):
    """(QueueBuilderKernel, its Verilog module name) for the geometry of ``params``."""
    from hw.jsd.kernel import QueueBuilderKernel

    kernel = QueueBuilderKernel(jsd_builder.Params.for_algorithm(
        params, lanes=lanes, bytes_per_lane=bytes_per_lane))
    return kernel, kernel.desc.name


def similarity_kernel(units: int, R: int, n: int, data_width: int = 128):
    """(JsdSimilarityKernel, its Verilog module name) for V = ``units`` pivots."""
    from hw.jsd.kernel import JsdSimilarityKernel

    kernel = JsdSimilarityKernel(jsd_similarity.Params(pivots=units, R=R, n=n,
                                                       data_width=data_width))
    return kernel, kernel.desc.name


def build_pqas_sim(genomes: list[list[bytes]], params: JsdParams = JsdParams(), *,
                   lanes: int = 2, bytes_per_lane: int = 8, max_chunk_bytes: int = 1 << 20,
                   simulator: str | None = None) -> list[PqaRecord]:
    """The queue-builder kernel's record of every genome (each a list of file contents)."""
    from sim.runner import run_cocotb

    kernel, name = builder_kernel(params, lanes, bytes_per_lane)
    geometry = kernel.params
    blocks = plan_blocks(genomes, geometry)
    chunks = pack_chunks(blocks, geometry, max_chunk_bytes=max_chunk_bytes)
    with tempfile.TemporaryDirectory(prefix="jsd-sim-") as directory:
        calls = []
        for index, (chunk, tags) in enumerate(chunks):
            path = pathlib.Path(directory) / f"chunk{index}"
            path.write_bytes(chunk)
            calls.append({"chunk": str(path), "n_records": len(tags),
                          "record_bytes": geometry.record_bytes,
                          "update": int(params.update == "cm"), "out": str(path) + ".out"})
        run_cocotb(kernel, "sim.jsd.tb_run", toplevel=name, simulator=simulator,
                   parameters={"kernel": "build", "params": geometry.to_dict(),
                               "calls": calls})
        outputs = iter(pathlib.Path(call["out"]).read_bytes() for call in calls)
        return run_genomes(genomes, geometry, lambda chunk, count: next(outputs),
                           max_chunk_bytes=max_chunk_bytes)


def jsd_rows_sim(pivots: list[PqaRecord], records: list[PqaRecord], R: int, n: int,
                 mode: str = "textbook", *, pivot_units: int | None = None,
                 data_width: int = 128, simulator: str | None = None) -> list[list[int]]:
    """``rows[i][v]``: the similarity kernel's JSD (signed Q5.24) of record i with pivot v."""
    from sim.runner import run_cocotb

    if mode not in ("textbook", "counts"):
        raise ValueError(f"mode must be 'textbook' or 'counts', not {mode!r}")
    units = pivot_units or len(pivots)
    if not 1 <= len(pivots) <= units:
        raise ValueError(f"between 1 and {units} pivots per call, not {len(pivots)}")
    kernel, name = similarity_kernel(units, R, n, data_width)
    geometry = kernel.params
    with tempfile.TemporaryDirectory(prefix="jsd-sim-") as directory:
        base = pathlib.Path(directory)
        (base / "pivots").write_bytes(b"".join(pack_record(r, geometry) for r in pivots))
        (base / "pqas").write_bytes(b"".join(pack_record(r, geometry) for r in records))
        call = {"pivots": str(base / "pivots"), "n_pivots": len(pivots),
                "pqas": str(base / "pqas"), "n_pqas": len(records),
                "mode": int(mode == "counts"), "out_bytes": len(records) * geometry.bus_bytes,
                "out": str(base / "out")}
        run_cocotb(kernel, "sim.jsd.tb_run", toplevel=name, simulator=simulator,
                   parameters={"kernel": "similarity", "params": geometry.to_dict(),
                               "calls": [call]})
        rows = unpack_results((base / "out").read_bytes(), len(records), units, geometry)
    return [row[:len(pivots)] for row in rows]
