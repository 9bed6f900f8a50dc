"""Splitting a (byte address, byte length) command into legal AXI4 INCR bursts.

A burst never crosses a 4 KiB boundary and has at most 256 beats (with a 512-bit bus the 4 KiB rule
gives at most 64 beats).  The address is rounded down to the bus width: commands must start on a
beat boundary (the host allocates 4 KiB-aligned buffers).  The length is in bytes and need not be
a multiple of the bus width; the last beat of a command is then partial and ``tail`` gives its
byte count (0 = full beat).  A zero-length command is dropped.

The splitter emits one burst per cycle and accepts the next command in the cycle its last burst
leaves, so back-to-back one-beat commands run at one beat per cycle.
"""

from amaranth import *
from amaranth.utils import exact_log2
from amaranth.lib import wiring, data, stream
from amaranth.lib.wiring import In, Out

__all__ = ["CommandLayout", "BurstLayout", "BurstSplitter"]


def CommandLayout(addr_width=64, len_width=32):
    """Payload of a reader/writer command: ``addr`` (bytes) and ``length`` (bytes)."""
    return data.StructLayout({"addr": addr_width, "length": len_width})


def BurstLayout(addr_width, data_bytes):
    return data.StructLayout({
        "addr": addr_width,
        "beats_m1": 8,                              # AxLEN
        "last": 1,                                  # last burst of its command
        "tail": max(1, exact_log2(data_bytes)),     # bytes on the final beat (0 = full)
    })


class BurstSplitter(wiring.Component):
    """``cmd`` (CommandLayout stream) in, ``burst`` (BurstLayout stream) out.  ``busy`` while a
    command is being split."""

    def __init__(self, *, addr_width=64, data_bytes=64, len_width=32, max_beats=256):
        if data_bytes & (data_bytes - 1) or not 1 <= data_bytes <= 128:
            raise ValueError("data_bytes must be a power of two <= 128")
        if not 1 <= max_beats <= 256:
            raise ValueError("max_beats must be 1..256")
        self.addr_width = addr_width
        self.data_bytes = data_bytes
        self.len_width = len_width
        self.max_beats = min(max_beats, 4096 // data_bytes)
        super().__init__({
            "cmd": In(stream.Signature(CommandLayout(addr_width, len_width))),
            "burst": Out(stream.Signature(BurstLayout(addr_width, data_bytes))),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lb = exact_log2(self.data_bytes)
        beats_per_4k = 4096 // self.data_bytes

        busy = Signal()
        addr = Signal(self.addr_width)
        remaining = Signal(self.len_width - lb + 1)  # beats still to issue
        tail = Signal(max(1, lb))

        # beats up to the next 4 KiB boundary (1..beats_per_4k)
        to_boundary = Signal(range(beats_per_4k + 1))
        if lb < 12:
            m.d.comb += to_boundary.eq(beats_per_4k - addr[lb:12])
        else:
            m.d.comb += to_boundary.eq(1)
        limit = Signal(range(beats_per_4k + 1))
        m.d.comb += limit.eq(Mux(to_boundary > self.max_beats, self.max_beats, to_boundary))
        final = Signal()
        m.d.comb += final.eq(remaining <= limit)
        n = Signal(range(beats_per_4k + 1))
        m.d.comb += n.eq(Mux(final, remaining, limit))

        m.d.comb += [
            self.busy.eq(busy),
            self.burst.valid.eq(busy),
            self.burst.payload.addr.eq(addr),
            self.burst.payload.beats_m1.eq(n - 1),
            self.burst.payload.last.eq(final),
            self.burst.payload.tail.eq(tail),
        ]

        fire = self.burst.valid & self.burst.ready
        with m.If(fire):
            # After a non-final burst of ``limit`` beats; after a final one nothing matters.
            # (Keeping ``n`` out of these adders keeps the timing path short.)
            if self.max_beats >= beats_per_4k:
                # a non-final burst always ends on the 4 KiB boundary
                m.d.sync += addr.eq(Cat(C(0, 12), addr[12:] + 1))
            else:
                m.d.sync += addr.eq(addr + (limit << lb))
            m.d.sync += remaining.eq(remaining - limit)
            with m.If(final):
                m.d.sync += busy.eq(0)

        m.d.comb += self.cmd.ready.eq(~busy | (fire & final))
        with m.If(self.cmd.valid & self.cmd.ready):
            length = self.cmd.payload.length
            beats = (length + (self.data_bytes - 1)) >> lb
            m.d.sync += [
                addr.eq(Cat(C(0, lb), self.cmd.payload.addr[lb:])),
                remaining.eq(beats),
                tail.eq(length[:lb] if lb else 0),
                busy.eq(length != 0),
            ]
        return m
