"""Compute backends behind the command line; all give identical sketches and results.

* ``sw``: the fast native/vectorised model (host.fast), the default, on every core;
* ``golden``: the pure-Python reference (kmerspec.golden; slow, for cross-checks);
* ``sim``: the RTL kernels, generated Verilog simulated under cocotb (host.device.SimDevice);
* ``xrt``: the kernels on a card through XRT (host.xrt.XrtDevice, XRT's C API; needs ``--xclbin``);
* ``f2``: the kernels on an AWS EC2 F2 FPGA slot through AWS's SDK (host.f2.F2Device; ``--slot``);
* ``auto``: ``xrt`` where XRT and an xclbin are available, else ``sw`` (for cluster workers).

Every backend takes whole genomes (each a list of file contents) and yields one result per
genome in order: software backends genome by genome (``threads`` of them at a time),
hardware backends after packing many genomes into the lanes of each kernel call (``threads``
is accepted and ignored).
"""

from __future__ import annotations  # numpy's types named below, imported where used

import os
from collections.abc import Iterable, Iterator

from .calls import F2_STAND_IN_ENV, STAND_IN_ENV
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.mincount import MinCountParams, passing_kmers
from kmerspec.golden.parse import genome_kmers

__all__ = ["BACKENDS", "KERNEL_BACKENDS", "get_backend", "STAND_IN_ENV", "F2_STAND_IN_ENV"]


class SoftwareBackend:
    """The fast native/numpy model; ``threads`` genomes (or values of k) at a time, default all
    cores. It reads files itself, block by block, when given host.reader.SequenceFile handles."""

    name = "sw"
    streams_files = True

    def sketch_hll(self, genomes: Iterable[list], k: int, params: HllParams,
                   canonical: bool, threads: int | None = None,
                   min_count: MinCountParams = MinCountParams()) -> Iterator[np.ndarray]:
        from .fast.hll import sketch_genomes
        return sketch_genomes(genomes, k, params, canonical, threads, min_count)

    def sketch_hll_registers(self, genomes: Iterable[list], k: int, params: HllParams,
                             canonical: bool, threads: int | None = None,
                             min_count: MinCountParams = MinCountParams()) -> Iterator[bytearray]:
        """:meth:`sketch_hll`'s registers as bytearrays (one a byte), without numpy: the
        sketch command's path (host.api.sketching.sketch_files)."""
        from .fast.sketch import genome_registers
        return genome_registers(genomes, k, params, canonical, threads, min_count)

    def build_pqa(self, genomes: Iterable[list], params, threads: int | None = None) -> Iterator:
        from .fast.jsd import build_pqas
        return build_pqas(genomes, params, threads)

    def find_motifs(self, test_files: list, control_files: list, params,
                    threads: int | None = None, kmers_of_files: list | None = None):
        from .fast.motif import find_motifs_fast
        return find_motifs_fast(test_files, control_files, params, threads, kmers_of_files)


class GoldenBackend:
    """The pure-Python reference model."""

    name = "golden"

    def sketch_hll(self, genomes, k, params, canonical, threads=None,
                   min_count: MinCountParams = MinCountParams()):
        import numpy as np
        for files in genomes:
            kmers = genome_kmers(files, k, canonical_form=canonical)
            sketch = Hll(params).update(passing_kmers(kmers, min_count))
            yield np.array(sketch.registers, dtype=np.uint8)

    def build_pqa(self, genomes, params, threads=None):
        from kmerspec.golden.jsd import build_pqa_files
        for files in genomes:
            yield build_pqa_files(files, params)

    def find_motifs(self, test_files, control_files, params, threads=None):
        from kmerspec.golden.motif import find_motifs
        return find_motifs(test_files, control_files, params)


class KernelBackend:
    """The hardware kernels on a host.device device, driven by host.drivers."""

    def __init__(self, device, name: str):
        self.device = device
        self.name = name

    def sketch_hll(self, genomes, k, params, canonical, threads=None,
                   min_count: MinCountParams = MinCountParams()):
        from .drivers import sketch_genomes
        if not canonical:
            raise ValueError("the sketch kernel hashes canonical k-mers; drop --no-canonical "
                             "or use --backend sw")
        yield from sketch_genomes(self.device, list(genomes), k, params, min_count)

    def build_pqa(self, genomes, params, threads=None):
        from .drivers import build_pqas
        yield from build_pqas(self.device, list(genomes), params)

    def find_motifs(self, test_files, control_files, params, threads=None):
        from .drivers import find_motifs
        return find_motifs(self.device, test_files, control_files, params)

    def close(self):
        """Release the device (an XrtDevice closes its compute units and the card)."""
        close = getattr(self.device, "close", None)
        if close is not None:
            close()

    def jsd_rows(self, pqas: list, tiles: list, mode: str):
        """Row tiles of the fixed-point JSD matrix from the JSD similarity kernel."""
        from .drivers import jsd_matrix
        return jsd_matrix(self.device, pqas, tiles, mode)

    def all_pairs(self, registers, params, threshold):
        from .drivers import all_pairs
        return all_pairs(self.device, registers, params, threshold)

    def union_calls(self, registers, params):
        from .drivers import union_calls
        return union_calls(self.device, registers, params)


def _sim_backend(geometry: str = "small") -> KernelBackend:
    from .device import SimDevice
    return KernelBackend(SimDevice(geometry=geometry), "sim")


def _xrt_backend(xclbin: str | None = None) -> KernelBackend:
    from .device import xrt_stand_in
    from .xrt import XrtDevice
    xclbin = xclbin or os.environ.get("KMER_SKETCH_XCLBIN")
    if not xclbin:
        raise ValueError("the xrt backend needs the FPGA binary: --xclbin FILE (or "
                         "KMER_SKETCH_XCLBIN); build it with python -m hw.build and v++")
    return KernelBackend(XrtDevice(xclbin, api=xrt_stand_in()), "xrt")


def _f2_backend(slot: int = 0) -> KernelBackend:
    from .device import f2_stand_in
    from .f2 import F2Device
    return KernelBackend(F2Device(slot, api=f2_stand_in()), "f2")


def _auto_backend(xclbin: str | None = None):
    """The card if one is usable, else the software backend; says which on stderr (a card is
    never picked silently, nor silently passed over)."""
    import sys
    from .calls import DeviceError
    try:
        backend = _xrt_backend(xclbin)
    except (DeviceError, ValueError) as error:
        print(f"backend auto: sw (no card: {error})", file=sys.stderr)
        return SoftwareBackend()
    print(f"backend auto: xrt ({backend.device.xclbin_path})", file=sys.stderr)
    return backend


#: the backends that run the kernels (host.drivers on a device): their all-pairs and union
#: calls come from the JACC similarity kernel
KERNEL_BACKENDS = ("sim", "xrt", "f2")

BACKENDS = {"sw": SoftwareBackend, "golden": GoldenBackend, "sim": _sim_backend,
            "xrt": _xrt_backend, "f2": _f2_backend, "auto": _auto_backend}


def get_backend(name: str, xclbin: str | None = None, sim_geometry: str = "small",
                slot: int = 0):
    """The backend called ``name``; device errors surface as host.device.DeviceError.
    ``sim_geometry`` is the kernel geometry of ``sim`` (host.drivers.SIM_GEOMETRIES), ``slot``
    the FPGA slot of ``f2``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name in ("xrt", "auto"):
        return BACKENDS[name](xclbin)
    if name == "sim":
        return BACKENDS[name](sim_geometry)
    if name == "f2":
        return BACKENDS[name](slot)
    return BACKENDS[name]()
