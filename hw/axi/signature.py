"""Amaranth signatures of AXI4 (full, memory-mapped) and AXI4-Lite.

Member names are the AXI channel signal names in upper case (``AWVALID``, ``RDATA`` ...), so that a
flattened port ``m_axi_<bundle>_<NAME>`` has exactly the name Vitis expects.  Both signatures are
written from the *master's* point of view: ``Out`` members are driven by the master.  A slave port
is ``In(sig)`` (or ``sig.flip()``).

AXI4 widths (ARM IHI 0022): LEN 8, SIZE 3, BURST 2, LOCK 1 (AXI4, not the AXI3 2-bit form),
CACHE 4, PROT 3, QOS 4, REGION 4, RESP 2.  ID width is a parameter (>= 1, because cocotbext-axi and
Vitis both want the ID ports present).
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Axi4Signature", "AxiLiteSignature", "AXI_BURST_INCR", "AXI_RESP_OKAY"]

AXI_BURST_INCR = 0b01
AXI_RESP_OKAY = 0b00

_POW2_WIDTHS = (8, 16, 32, 64, 128, 256, 512, 1024)


class Axi4Signature(wiring.Signature):
    """AXI4 master signature.

    Parameters
    ----------
    addr_width : int
        Address bits (Vitis requires 64).
    data_width : int
        Data bits, a power of two from 8 to 1024 (512 is the DDR controller's native width).
    id_width : int
        ID bits of AW/B/AR/R (>= 1).
    """

    def __init__(self, *, addr_width=64, data_width=512, id_width=1):
        if data_width not in _POW2_WIDTHS:
            raise ValueError(f"AXI4 data width must be one of {_POW2_WIDTHS}, not {data_width}")
        if id_width < 1:
            raise ValueError("AXI4 ID width must be at least 1")
        if not 12 <= addr_width <= 64:
            raise ValueError("AXI4 address width must be 12..64")
        self.addr_width = addr_width
        self.data_width = data_width
        self.id_width = id_width
        members = {}
        for ch in ("AW", "AR"):
            members.update({
                f"{ch}VALID": Out(1),
                f"{ch}READY": In(1),
                f"{ch}ADDR": Out(addr_width),
                f"{ch}ID": Out(id_width),
                f"{ch}LEN": Out(8),
                f"{ch}SIZE": Out(3),
                f"{ch}BURST": Out(2),
                f"{ch}LOCK": Out(1),
                f"{ch}CACHE": Out(4),
                f"{ch}PROT": Out(3),
                f"{ch}QOS": Out(4),
                f"{ch}REGION": Out(4),
            })
        members.update({
            "WVALID": Out(1),
            "WREADY": In(1),
            "WDATA": Out(data_width),
            "WSTRB": Out(data_width // 8),
            "WLAST": Out(1),
            "BVALID": In(1),
            "BREADY": Out(1),
            "BRESP": In(2),
            "BID": In(id_width),
            "RVALID": In(1),
            "RREADY": Out(1),
            "RDATA": In(data_width),
            "RLAST": In(1),
            "RID": In(id_width),
            "RRESP": In(2),
        })
        super().__init__(members)

    @property
    def data_bytes(self):
        return self.data_width // 8

    def __eq__(self, other):
        return (isinstance(other, Axi4Signature) and
                (self.addr_width, self.data_width, self.id_width) ==
                (other.addr_width, other.data_width, other.id_width))

    def __hash__(self):
        return hash((Axi4Signature, self.addr_width, self.data_width, self.id_width))

    def __repr__(self):
        return (f"Axi4Signature(addr_width={self.addr_width}, data_width={self.data_width}, "
                f"id_width={self.id_width})")


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite master signature (no PROT, as in the Vitis ``s_axi_control`` port list)."""

    def __init__(self, *, addr_width=12, data_width=32):
        if data_width not in (32, 64):
            raise ValueError("AXI4-Lite data width must be 32 or 64")
        self.addr_width = addr_width
        self.data_width = data_width
        super().__init__({
            "AWVALID": Out(1),
            "AWREADY": In(1),
            "AWADDR": Out(addr_width),
            "WVALID": Out(1),
            "WREADY": In(1),
            "WDATA": Out(data_width),
            "WSTRB": Out(data_width // 8),
            "BVALID": In(1),
            "BREADY": Out(1),
            "BRESP": In(2),
            "ARVALID": Out(1),
            "ARREADY": In(1),
            "ARADDR": Out(addr_width),
            "RVALID": In(1),
            "RREADY": Out(1),
            "RDATA": In(data_width),
            "RRESP": In(2),
        })

    def __eq__(self, other):
        return (isinstance(other, AxiLiteSignature) and
                (self.addr_width, self.data_width) == (other.addr_width, other.data_width))

    def __hash__(self):
        return hash((AxiLiteSignature, self.addr_width, self.data_width))

    def __repr__(self):
        return f"AxiLiteSignature(addr_width={self.addr_width}, data_width={self.data_width})"
