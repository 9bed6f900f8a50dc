"""Joining a reader and a writer onto one AXI4 master port."""

from amaranth import *
from amaranth.lib.wiring import Out

__all__ = ["connect_axi_rw", "READ_CHANNELS", "WRITE_CHANNELS"]

READ_CHANNELS = ("AR", "R")
WRITE_CHANNELS = ("AW", "W", "B")


def _channel(name):
    for ch in ("AW", "AR", "W", "B", "R"):
        if name.startswith(ch):
            return ch
    raise ValueError(name)


def connect_axi_rw(m, port, *, reader=None, writer=None):
    """Drive master ``port`` (an ``Out(Axi4Signature)`` member, seen from inside the component
    that owns it) with the AR/R channels of ``reader`` and the AW/W/B channels of ``writer``
    (each an ``Axi4Signature`` master interface, e.g. ``AxiBurstReader().axi``, or None to tie
    that direction off).  Member directions come from the signature, so nothing is missed."""
    for name, member in port.signature.members.items():
        ch = _channel(name)
        src = reader if ch in READ_CHANNELS else writer
        outer = getattr(port, name)
        if member.flow == Out:        # master-driven
            m.d.comb += outer.eq(getattr(src, name) if src is not None else 0)
        elif src is not None:
            m.d.comb += getattr(src, name).eq(outer)
