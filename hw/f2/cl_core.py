"""The logic of the F2 CL between the shell's ports and the kernels: the OCL decoder, the PCIS
port and every kernel's m_axi ports onto the card memory, and the kernels themselves (each the
Vitis kernel's Verilog top, instanced by name, so that the register map, the reset gating and
the identity words are the ones the Vitis flow builds).

``ClCore(units, memory_bytes)``: ``units`` is ``[(kernel name, KernelDesc)]``, one entry per
compute unit, in unit order (kmerspec.f2: unit u's control registers are OCL window u + 1).

Ports (flat, named for the generated CL top, hw/f2/top.py, to connect by name)::

    clk, rst_n                 clk_main_a0 and rst_main_n (synchronous, active low)
    ocl_*                      AXI4-Lite slave, 32-bit address (the shell's OCL port)
    pcis_*                     AXI4 slave, 512-bit data, 16-bit ID (the shell's PCIS port)
    ddr_*                      AXI4 master, 512-bit data, 16-bit ID: the card memory (sh_ddr's
                               AXI4 port, 64 GiB at address 0)
    ddr_ready                  the memory is calibrated (sh_ddr's sh_cl_ddr_is_ready)
    flr_assert, flr_done       the shell's function-level reset request and its acknowledgement
    vled                       the virtual LEDs: bit 0 = ddr_ready

Inside: reset passes two register stages (rst_main_n fans out to everything) and reaches each
kernel as its ap_rst_n; neither the OCL decoder nor the PCIS port takes anything (their READYs
low) until 8 cycles after the core left reset (a kernel's own reset pipeline is 2 stages:
hw.vitis.top), so no transaction is taken by logic still in reset. Every master -- PCIS first, then each
unit's bundles in unit order -- reaches the memory through its own :class:`AxiMemoryPort` (range
checked against ``memory_bytes``, IDs kept aside, narrow buses on their lanes) and one
:class:`AxiMux`; a burst goes to the memory with ID ``{master index, 0}``.

FLR: ``flr_done`` pulses one cycle after each rising edge of ``flr_assert``. The kernels are not
reset by it (a reset of a kernel while the memory still owes it responses would break AXI; the
host asks each unit for a clean start, FRESH, before its first call: docs/kernel_interface.md).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kmerspec.f2 import DDR_BYTES, STATUS_MEMORY_READY

from ..axi.memory_port import MEMORY_DATA_WIDTH, AxiMemoryPort
from ..axi.mux import AxiMux
from ..axi.signature import Axi4Signature, AxiLiteSignature
from ..vitis.top import top_port_names
from .ocl import OclDecoder

__all__ = ["ClCore", "CORE_MODULE", "SHELL_ID_WIDTH", "core_port_names", "READY_DELAY"]

CORE_MODULE = "kmer_cl_core"
#: ID width of the shell's AXI4 ports and of sh_ddr's
SHELL_ID_WIDTH = 16
#: cycles after the core leaves reset before the OCL decoder takes a transaction
READY_DELAY = 8
#: bursts outstanding per direction through the PCIS port (the shell issues at most 32)
PCIS_DEPTH = 32
KERNEL_DEPTH = 16


def _flat(prefix, signature, flip):
    out = {}
    for name, member in signature.members.items():
        flow = member.flow.flip() if flip else member.flow
        out[f"{prefix}_{name}"] = (flow, member.shape)
    return out


def _members():
    members = {"clk": (In, 1), "rst_n": (In, 1), "ddr_ready": (In, 1), "flr_assert": (In, 1),
               "flr_done": (Out, 1), "vled": (Out, 16)}
    members.update(_flat("ocl", AxiLiteSignature(addr_width=32, data_width=32), flip=True))
    members.update(_flat("pcis", Axi4Signature(data_width=MEMORY_DATA_WIDTH,
                                               id_width=SHELL_ID_WIDTH), flip=True))
    members.update(_flat("ddr", Axi4Signature(data_width=MEMORY_DATA_WIDTH,
                                              id_width=SHELL_ID_WIDTH), flip=False))
    return members


def core_port_names():
    """``{port: ("in"|"out", width)}`` of the core."""
    from amaranth.hdl import Shape
    return {k: ("in" if f is In else "out", Shape.cast(s).width) for k, (f, s) in
            _members().items()}


class ClCore(wiring.Component):
    #: the shell's offers on PCIS, and the CL's acceptances, gated until the core is ready
    OFFERS = ("AWVALID", "WVALID", "ARVALID")
    ACCEPTS = ("AWREADY", "WREADY", "ARREADY")

    def __init__(self, units, *, memory_bytes=DDR_BYTES):
        self.units = list(units)
        self.memory_bytes = memory_bytes
        if not self.units:
            raise ValueError("a CL needs at least one compute unit")
        super().__init__({k: f(s) for k, (f, s) in _members().items()})

    def _wire(self, m, prefix, interface):
        """Connect the flat ports ``<prefix>_<NAME>`` with ``interface`` (a member of a
        submodule, of the same signature): what the submodule takes comes from the port."""
        for name, member in interface.signature.members.items():
            port, inner = getattr(self, f"{prefix}_{name}"), getattr(interface, name)
            m.d.comb += inner.eq(port) if member.flow == In else port.eq(inner)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.domains.raw = raw = ClockDomain("raw", reset_less=True)
        m.d.comb += [sync.clk.eq(self.clk), raw.clk.eq(self.clk)]
        resetting = Signal(2, init=0b11)
        m.d.raw += resetting.eq(Cat(~self.rst_n, resetting[0]))
        m.d.comb += sync.rst.eq(resetting[1])

        settle = Signal(range(READY_DELAY + 1))
        ready = Signal()
        with m.If(settle == READY_DELAY):
            m.d.sync += ready.eq(1)
        with m.Else():
            m.d.sync += settle.eq(settle + 1)

        # ---- OCL ------------------------------------------------------------------------------
        names = [name for name, _ in self.units]
        m.submodules.ocl = ocl = OclDecoder(names, memory_bytes=self.memory_bytes)
        self._wire(m, "ocl", ocl.bus)
        m.d.comb += [ocl.ready.eq(ready),
                     ocl.status.eq(Mux(self.ddr_ready, STATUS_MEMORY_READY, 0))]

        # ---- memory ---------------------------------------------------------------------------
        masters = 1 + sum(len(desc.bundles) for _, desc in self.units)
        m.submodules.mux = mux = AxiMux(masters, data_width=MEMORY_DATA_WIDTH, id_width=1)
        m.submodules.pcis = pcis = AxiMemoryPort(data_width=MEMORY_DATA_WIDTH,
                                                 id_width=SHELL_ID_WIDTH,
                                                 limit=self.memory_bytes, depth=PCIS_DEPTH)
        # the shell's master sees AWREADY, WREADY and ARREADY low, and offers nothing inside,
        # until the logic behind the port is out of reset (AXI: READY low at the first edge
        # after ARESETn rises; the core's reset lags rst_main_n by two stages)
        for name, member in pcis.up.signature.members.items():
            port, inner = getattr(self, f"pcis_{name}"), getattr(pcis.up, name)
            if member.flow == In:
                m.d.comb += inner.eq(port & ready if name in self.OFFERS else port)
            else:
                m.d.comb += port.eq(inner & ready if name in self.ACCEPTS else inner)
        wiring.connect(m, pcis.down, mux.up0)
        for name, member in mux.down.signature.members.items():
            port, inner = getattr(self, f"ddr_{name}"), getattr(mux.down, name)
            if member.flow == Out:
                m.d.comb += port.eq(inner)          # the ID zero-extended to 16 bits
            else:
                m.d.comb += inner.eq(port)
        assert mux.down.signature.id_width <= SHELL_ID_WIDTH

        # ---- kernels --------------------------------------------------------------------------
        # every kernel's ap_rst_n: the core's own reset, registered (its fan-out is the
        # kernels' own pipeline's to deal with)
        kernel_rst_n = Signal(init=0)
        m.d.sync += kernel_rst_n.eq(1)
        master = 1
        for u, (name, desc) in enumerate(self.units):
            unit = getattr(ocl, f"unit{u}")
            ports = {"i_ap_clk": self.clk, "i_ap_rst_n": kernel_rst_n,
                     "o_interrupt": Signal(name=f"unit{u}_interrupt")}
            for member, flow in unit.signature.members.items():
                signal = getattr(unit, member)
                into_kernel = flow.flow == Out          # the decoder drives it
                ports[("i_" if into_kernel else "o_") + f"s_axi_control_{member}"] = signal
            for bundle in desc.bundles:
                port = AxiMemoryPort(data_width=bundle.data_width, id_width=bundle.id_width,
                                     limit=self.memory_bytes, depth=KERNEL_DEPTH)
                m.submodules[f"unit{u}_{bundle.name}"] = port
                wiring.connect(m, port.down, getattr(mux, f"up{master}"))
                master += 1
                for member, flow in port.up.signature.members.items():
                    signal = getattr(port.up, member)
                    into_kernel = flow.flow == Out      # the memory port drives it
                    ports[("i_" if into_kernel else "o_") + f"{bundle.port}_{member}"] = signal
            wanted = {("i_" if d == "in" else "o_") + n for n, (d, _) in
                      top_port_names(desc).items()}
            if wanted != set(ports):
                raise ValueError(f"unit {u} ({name}): the kernel's ports and the core's "
                                 f"differ: {sorted(wanted ^ set(ports))}")
            m.submodules[f"unit{u}"] = Instance(desc.name, **ports)

        m.d.comb += self.vled.eq(self.ddr_ready)
        flr_seen = Signal()
        m.d.sync += [flr_seen.eq(self.flr_assert),
                     self.flr_done.eq(self.flr_assert & ~flr_seen)]
        return m
