"""Contract of the emerging-motif kernel ``motif`` (SPEC 5 and 6; docs/motif_kernel.md): its
Params, host arguments and memory layouts, packed and unpacked here for both the cocotb kernel
test and the host driver.

Host arguments (index: name, kind, bundle)::

    0 test           pointer  m_axi_gmem0  test set bytes (:func:`pack_files`)
    1 test_bytes     scalar
    2 control        pointer  m_axi_gmem0  control set bytes
    3 control_bytes  scalar
    4 thresholds     pointer  m_axi_gmem0  64-byte record: u16 T_k at offset 2 (k - 1)
    5 growth_q8      scalar                g as unsigned Q8.8
    6 result         pointer  m_axi_gmem1  store entries and summary (:func:`unpack_result`)

Inputs (gmem0):

* test and control streams: the files of each set concatenated, with a separator after every
  file that puts the parser back at a record start with the run broken (:func:`pack_files`), so
  that no k-mer spans two files, exactly as :func:`kmerspec.golden.parse.genome_kmers`.
* thresholds record, 64 bytes: ``u16`` T_k for k = 1..32 at offset ``2 (k - 1)`` (little-endian;
  only kmin..kmax are read).

Scalars: ``test_bytes``, ``control_bytes``, ``growth_q8`` (g as unsigned Q8.8).

Result (gmem1): for k = kmin..kmax, for set 0..sets-1, for way 0..ways-1, one 16-byte entry::

    0x00 u64  k-mer word (first base most significant, bits [2k-1:0])
    0x08 u16  test estimate e (the Count-Min estimate at the k-mer's last recorded occurrence)
    0x0A u8   flags: bit 0 valid, bit 1 emerging (e >= T_k and 256 e >= growth_q8 * c)
    0x0B u8   the set's round-robin pointer (same in every way of the set)
    0x0C u32  control count c

padded with zeros to a whole bus beat, then one summary beat (first 64 bytes used)::

    0x00 u32  magic 0x3154_4F4D ("MOT1")
    0x04 u8 kmin, u8 kmax, u8 ways, u8 log2(sets)
    0x08 u64  test bases      0x10 u64 test cycles      (start of the pass to its drain)
    0x18 u64  control bases   0x20 u64 control cycles
    0x28 u64  test bytes      0x30 u64 control bytes
"""

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from .. import params as spec
from ..golden.line_machine import line_step
from ..golden.motif import FIELDS as ALGORITHM_FIELDS
from ..golden.motif import MotifParams, MotifRow, check_geometry, kmer_string
from ..interface import Arg
from . import KernelParams

__all__ = ["Params", "ENTRY_BYTES", "SUMMARY_MAGIC", "THRESHOLDS_BYTES", "pack_files",
           "pack_thresholds", "result_bytes", "StoreEntry", "MotifResult", "unpack_result",
           "emerging_rows_from"]

ENTRY_BYTES = 16
SUMMARY_MAGIC = 0x31544F4D
THRESHOLDS_BYTES = 64
SUMMARY_BYTES = 64

# parser states (kmerspec.golden.line_machine.LineState) at which the next file may start: a record start,
# or a line start in FASTA sequence (which still needs a header line to break the run)
_LS_RECORD = 0
_LS_SEQUENCE = 1


@dataclass(frozen=True)
class Params(KernelParams):
    """Build parameters: the SPEC 5 sketch and store geometry (kmin..kmax, d, cw, counter_bits
    <= 16 for the kernel's u16 fields, h3_seed, store_sets, store_ways), the counter memories'
    ``read_latency`` (2 uses the BRAM output register), the front end's ``bytes_per_cycle`` and
    the bus width ``data_width`` (512 or 1024). Thresholds and growth are runtime arguments."""

    KERNEL = "motif"

    kmin: int = spec.MOTIF_KMIN.default
    kmax: int = spec.MOTIF_KMAX.default
    d: int = spec.MOTIF_DEPTH.default
    cw: int = spec.CM_WIDTH_BITS.default
    counter_bits: int = spec.CM_COUNTER_BITS.default
    h3_seed: int = spec.H3_SEED.default
    store_sets: int = spec.STORE_SETS.default
    store_ways: int = spec.STORE_WAYS.default
    read_latency: int = spec.READ_LATENCY.default
    bytes_per_cycle: int = spec.BYTES_PER_CYCLE.default
    data_width: int = spec.DATA_WIDTH.default

    def __post_init__(self):
        check_geometry(self)
        spec.check_fields(self, (spec.READ_LATENCY, spec.BYTES_PER_CYCLE))
        if self.counter_bits > 16:
            raise ValueError(f"counter_bits must be at most 16 for the kernel's u16 fields, "
                             f"not {self.counter_bits}")
        if self.data_width not in (512, 1024):
            raise ValueError(f"data_width must be 512 or 1024, not {self.data_width!r}")

    @classmethod
    def for_algorithm(cls, algorithm: MotifParams, **hardware) -> "Params":
        """The kernel for the SPEC 5 parameters ``algorithm`` (whose thresholds and growth are
        runtime arguments), with ``hardware`` (read_latency, bytes_per_cycle, data_width) as
        given or default."""
        if algorithm.canonical:
            raise ValueError("canonical: the motif kernel is strand-specific; canonical=True "
                             "is not implemented")
        return cls(**{f.name: getattr(algorithm, f.name) for f in ALGORITHM_FIELDS}, **hardware)

    @property
    def algorithm(self) -> MotifParams:
        """The SPEC 5 parameters of this kernel; thresholds (here 1) and growth are runtime."""
        return MotifParams(**{f.name: getattr(self, f.name) for f in ALGORITHM_FIELDS},
                           thresholds=1)

    def host_args(self) -> list[Arg]:
        return [Arg("test", "pointer", "gmem0"), Arg("test_bytes", "scalar"),
                Arg("control", "pointer", "gmem0"), Arg("control_bytes", "scalar"),
                Arg("thresholds", "pointer", "gmem0"), Arg("growth_q8", "scalar"),
                Arg("result", "pointer", "gmem1")]

    @property
    def ks(self) -> range:
        return range(self.kmin, self.kmax + 1)

    @property
    def set_bits(self) -> int:
        return self.store_sets.bit_length() - 1


def pack_files(files: Sequence[bytes]) -> bytes:
    """One byte stream for a set of files, each followed by the bytes that end its last line and
    record: newlines until the parser is at a line start outside FASTQ, then ``>\\n`` if the
    file ended in FASTA sequence. Empty lines and headers yield no bases, so the k-mers are
    exactly those of the files parsed one by one."""
    chunks = []
    for data in files:
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"files must be bytes, not {type(data).__name__}")
        state = _LS_RECORD
        for byte in data:
            state, _ = line_step(state, byte)
        tail = bytearray()
        while state not in (_LS_RECORD, _LS_SEQUENCE):
            state, _ = line_step(state, 0x0A)
            tail.append(0x0A)
        if state == _LS_SEQUENCE:
            tail += b">\n"
        chunks.append(bytes(data) + bytes(tail))
    return b"".join(chunks)


def pack_thresholds(params: MotifParams) -> bytes:
    if params.counter_bits > 16:
        raise ValueError(f"the kernel needs counter_bits <= 16, not {params.counter_bits}")
    values = [params.threshold(k) if k in params.ks else 0 for k in range(1, 33)]
    return struct.pack("<32H", *values)


def result_bytes(params: Params) -> int:
    """Size of the result buffer: the entries padded to a beat, then the summary beat."""
    beat = params.data_width // 8
    entries = len(params.ks) * params.store_sets * params.store_ways * ENTRY_BYTES
    return -(-entries // beat) * beat + beat


@dataclass(frozen=True)
class StoreEntry:
    k: int
    set_index: int
    way: int
    valid: bool
    emerging: bool
    next_victim: int
    word: int
    estimate: int
    control_count: int


@dataclass(frozen=True)
class MotifResult:
    entries: list[StoreEntry]
    test_bases: int
    test_cycles: int
    control_bases: int
    control_cycles: int
    test_bytes: int
    control_bytes: int


def unpack_result(buffer: bytes, params: Params) -> MotifResult:
    """Decode a result buffer; raise ValueError naming the problem if it is malformed."""
    size = result_bytes(params)
    if len(buffer) < size:
        raise ValueError(f"motif result: {len(buffer)} bytes, expected {size}")
    entries = []
    offset = 0
    for k in params.ks:
        for set_index in range(params.store_sets):
            for way in range(params.store_ways):
                word, estimate, flags, pointer, count = struct.unpack_from(
                    "<QHBBI", buffer, offset)
                entries.append(StoreEntry(k, set_index, way, bool(flags & 1), bool(flags & 2),
                                          pointer, word, estimate, count))
                offset += ENTRY_BYTES
    summary = size - params.data_width // 8
    magic, kmin, kmax, ways, set_bits = struct.unpack_from("<IBBBB", buffer, summary)
    if magic != SUMMARY_MAGIC:
        raise ValueError(f"motif result: bad summary magic {magic:#x}")
    if (kmin, kmax, ways, set_bits) != (params.kmin, params.kmax, params.store_ways,
                                        params.set_bits):
        raise ValueError(f"motif result: built for kmin={kmin} kmax={kmax} ways={ways} "
                         f"set_bits={set_bits}, not {params}")
    counts = struct.unpack_from("<6Q", buffer, summary + 8)
    return MotifResult(entries, *counts)


def emerging_rows_from(result: MotifResult) -> list[MotifRow]:
    """The MotifRows of the entries the kernel flagged emerging, sorted as find_motifs does."""
    rows = [MotifRow(entry.k, kmer_string(entry.word, entry.k), entry.estimate,
                     entry.control_count)
            for entry in result.entries if entry.valid and entry.emerging]
    return sorted(rows, key=lambda row: (row.k, -row.test_estimate, row.kmer))
