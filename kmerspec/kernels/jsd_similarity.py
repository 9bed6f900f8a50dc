"""Contract of the JSD similarity kernel ``jsd_similarity`` (SPEC 4 and 6; docs/jsd_kernels.md):
its Params, host arguments and result layout.

Host arguments (index: name, kind, bundle)::

    0 pivots    pointer  m_axi_gmem0  n_pivots records (queue-builder layout, back to back)
    1 n_pivots  scalar                1 .. V
    2 pqas      pointer  m_axi_gmem0  n_pqas records compared with every pivot
    3 n_pqas    scalar
    4 out       pointer  m_axi_gmem1  n_pqas result beats (:func:`unpack_results`)
    5 mode      scalar                0: textbook JSD, 1: "counts" (pooled raw counts)

The records are those of the queue builder (kmerspec.kernels.jsd_builder: queues, then a
one-beat trailer) on this kernel's bus; the kernel reads each trailer first, so the streamed
PQA's total M is known before its queues arrive. Output: one bus beat per streamed PQA, the
signed Q5.24 JSD with pivot v as u32 at byte 4 v (zero for v >= n_pivots).
"""

from dataclasses import dataclass

from ..interface import Arg
from ..params import (DATA_WIDTH, JSD_PIVOTS, KERNEL_QUEUE_BITS, PQA_SLOTS, check_fields,
                      check_int)
from . import KernelParams
from .jsd_builder import ENTRY_BYTES, PqaRecordLayout

__all__ = ["Params", "unpack_results"]


@dataclass(frozen=True)
class Params(PqaRecordLayout, KernelParams):
    """Build parameters: pivots V held on chip (at most data_width / 32: one result beat per
    streamed record), PQA R and n of the records, and the bus width ``data_width`` (128..4096;
    a queue of n entries must be a whole number of beats)."""

    KERNEL = "jsd_similarity"

    pivots: int = JSD_PIVOTS.default
    R: int = KERNEL_QUEUE_BITS.default
    n: int = PQA_SLOTS.default
    data_width: int = DATA_WIDTH.default

    def __post_init__(self):
        check_fields(self, (JSD_PIVOTS, KERNEL_QUEUE_BITS, PQA_SLOTS))
        check_int("data_width", self.data_width, 128, DATA_WIDTH.high)
        if (self.n * ENTRY_BYTES * 8) % self.data_width:
            raise ValueError(f"a queue (n x 64 = {self.n * ENTRY_BYTES * 8} bits) must be a whole "
                             f"number of bus beats ({self.data_width} bits)")
        if 32 * self.pivots > self.data_width:
            raise ValueError(f"pivots must be at most data_width / 32 = {self.data_width // 32} "
                             f"(one result beat per record), not {self.pivots}")

    def host_args(self) -> list[Arg]:
        return [Arg("pivots", "pointer", "gmem0"), Arg("n_pivots", "scalar"),
                Arg("pqas", "pointer", "gmem0"), Arg("n_pqas", "scalar"),
                Arg("out", "pointer", "gmem1"), Arg("mode", "scalar")]

    @property
    def bus_bytes(self) -> int:
        return self.data_width // 8

    @property
    def beats_per_record(self) -> int:
        return 1 + (1 << self.R) * self.beats_per_queue


def unpack_results(data: bytes, count: int, pivots: int, params: Params) -> list[list[int]]:
    """The kernel's output: per streamed PQA one bus beat of signed Q5.24 JSDs, one u32 per
    pivot (pivot v at byte 4 v)."""
    if len(data) < count * params.bus_bytes:
        raise ValueError(f"output holds {len(data)} bytes, {count} results need "
                         f"{count * params.bus_bytes}")
    results = []
    for index in range(count):
        beat = data[index * params.bus_bytes:(index + 1) * params.bus_bytes]
        results.append([int.from_bytes(beat[4 * v:4 * v + 4], "little", signed=True)
                        for v in range(pivots)])
    return results
