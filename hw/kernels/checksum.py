"""``checksum``: the example Vitis RTL kernel that tests the shared infrastructure end to end.

Host arguments (index: name, kind, bundle)::

    0 src      pointer  m_axi_gmem0   input buffer, 64-byte aligned
    1 n_bytes  scalar   -             bytes to process (any value, 0 allowed)
    2 dst      pointer  m_axi_gmem1   receives a copy of src[0:n_bytes] (bytes past n untouched)
    3 res      pointer  m_axi_gmem1   receives the 64-byte result record below

Result record (little-endian), written after the copy::

    0x00 u64 bytes    bytes read (popcount of the reader's keep masks; equals n_bytes)
    0x08 u64 beats    bus beats read (ceil(n_bytes / (data_width/8)))
    0x10 u32 xor32    XOR of every 32-bit little-endian word of src[0:n], zero padded
    0x14 u32 sum32    sum mod 2^32 of the same words
    0x18 u32 magic    0x314B5343 ("CSK1")
    0x1C..           zero

The record needs ``data_width >= 256``.  :func:`checksum_model` is the reference.
"""

import struct
from dataclasses import dataclass

from amaranth import *

from kmerspec.interface import Arg
from kmerspec.kernels import KernelParams

from ..vitis.chunk_kernel import StreamKernel, issue_once

__all__ = ["ChecksumKernel", "ChecksumParams", "checksum_model", "RESULT_MAGIC"]

RESULT_MAGIC = 0x314B5343


@dataclass(frozen=True)
class ChecksumParams(KernelParams):
    """The infrastructure example's one build parameter: the bus width (>= 256 bits)."""

    KERNEL = "checksum"

    data_width: int = 512

    def __post_init__(self):
        if self.data_width < 256:
            raise ValueError("checksum needs data_width >= 256")

    def host_args(self) -> list[Arg]:
        return [Arg("src", "pointer", "gmem0"), Arg("n_bytes", "scalar"),
                Arg("dst", "pointer", "gmem1"), Arg("res", "pointer", "gmem1")]


def checksum_model(data: bytes, data_width=512):
    """The 64-byte result record for input ``data``."""
    nb = data_width // 8
    padded = data + bytes(-len(data) % 4)
    words = struct.unpack(f"<{len(padded) // 4}I", padded)
    x = 0
    for w in words:
        x ^= w
    s = sum(words) & 0xFFFFFFFF
    beats = -(-len(data) // nb)
    rec = struct.pack("<QQIII", len(data), beats, x, s, RESULT_MAGIC)
    return rec + bytes(64 - len(rec))


class ChecksumKernel(StreamKernel):
    """Reads ``n_bytes`` from ``src``, copies them to ``dst`` and writes a result record to ``res``."""

    Params = ChecksumParams

    def __init__(self, params: ChecksumParams = ChecksumParams()):
        super().__init__(params)

    def elaborate_body(self, m, reader, writer, call):
        dw = self.data_width
        nb = dw // 8
        nwords = dw // 32

        # ---- statistics pipeline: s1 registers the beat, s2 folds it, then accumulate -------
        beat = reader.data.payload
        rfire = reader.data.valid & reader.data.ready
        s1_valid = Signal()
        s1_data = Signal(dw)
        s1_keep = Signal(nb)
        m.d.sync += s1_valid.eq(rfire)
        with m.If(rfire):
            m.d.sync += [s1_data.eq(beat.data), s1_keep.eq(beat.keep)]
        masked = Cat(Mux(s1_keep[i], s1_data[8 * i:8 * i + 8], 0) for i in range(nb))
        words = [masked[32 * i:32 * i + 32] for i in range(nwords)]
        fold_xor = words[0]
        for w in words[1:]:
            fold_xor = fold_xor ^ w
        s2_valid = Signal()
        s2_bytes = Signal(range(nb + 1))
        s2_xor = Signal(32)
        s2_sum = Signal(32)
        m.d.sync += [
            s2_valid.eq(s1_valid),
            s2_bytes.eq(sum(s1_keep[i] for i in range(nb))),
            s2_xor.eq(fold_xor),
            s2_sum.eq(sum(words)),
        ]

        acc_bytes = Signal(64)
        acc_beats = Signal(64)
        acc_xor = Signal(32)
        acc_sum = Signal(32)
        with m.If(s2_valid):
            m.d.sync += [
                acc_bytes.eq(acc_bytes + s2_bytes),
                acc_beats.eq(acc_beats + 1),
                acc_xor.eq(acc_xor ^ s2_xor),
                acc_sum.eq(acc_sum + s2_sum),
            ]

        record = Cat(acc_bytes, acc_beats, acc_xor, acc_sum, C(RESULT_MAGIC, 32), C(0, dw - 224))

        # ---- control FSM --------------------------------------------------------------------
        # the copy: one read and one write command of n_bytes, issued in the first cycles
        issue_once(m, call, reader.cmd, self.args.src, self.args.n_bytes)
        issue_once(m, call, writer.cmd, self.args.dst, self.args.n_bytes)
        finished = Signal()
        with m.FSM():
            with m.State("IDLE"):
                with m.If(call.starting):
                    m.d.sync += [acc_bytes.eq(0), acc_beats.eq(0), acc_xor.eq(0), acc_sum.eq(0)]
                    with m.If(self.args.n_bytes == 0):
                        m.next = "RES_CMD"
                    with m.Else():
                        m.next = "COPY"
            with m.State("COPY"):
                # data: reader -> writer, tapped by the statistics pipeline
                m.d.comb += [
                    writer.data.valid.eq(reader.data.valid),
                    writer.data.payload.eq(beat.data),
                    reader.data.ready.eq(writer.data.ready),
                ]
                with m.If(rfire & beat.last):
                    m.next = "DRAIN"
            with m.State("DRAIN"):          # let the statistics pipeline empty (s1, s2, acc)
                with m.If(~s1_valid & ~s2_valid):
                    m.next = "RES_CMD"
            with m.State("RES_CMD"):
                m.d.comb += [
                    writer.cmd.valid.eq(1),
                    writer.cmd.payload.addr.eq(self.args.res),
                    writer.cmd.payload.length.eq(64),
                ]
                with m.If(writer.cmd.ready):
                    m.next = "RES_DATA"
            with m.State("RES_DATA"):
                m.d.comb += [writer.data.valid.eq(1), writer.data.payload.eq(record)]
                with m.If(writer.data.ready):
                    m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(reader.idle):
                    m.d.comb += finished.eq(1)
                    m.next = "IDLE"
        return finished
