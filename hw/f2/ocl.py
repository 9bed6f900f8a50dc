"""The F2 shell's OCL port (AXI4-Lite, AppPF BAR0) decoded into the CL directory and the control
registers of every compute unit (kmerspec.f2: 4 KiB windows, window 0 the directory, window
u + 1 unit u's s_axi_control with the Vitis kernel's register map).

``bus``    : In(AxiLiteSignature(addr_width=32))   the shell's OCL port
``unit<u>``: Out(AxiLiteSignature(addr_width=12))  unit u's s_axi_control
``status`` : In(32)   the directory's live STATUS word
``ready``  : In(1)    everything behind the decoder is out of reset

One write and one read at a time, each in its own path (AXI4-Lite has no IDs: one outstanding
transaction per direction keeps them in order). A write takes its AW and W (in either order or
together), then offers both to its unit until each is taken, then returns the unit's B; a read
likewise with AR and R. The directory answers a read in the next cycle; a write to it is
refused with SLVERR (it is read-only), an address past the last unit's window with DECERR (read
data 0).

Reset: AWREADY, WREADY and ARREADY stay low until ``ready``, so no transaction is taken while the
logic behind (a kernel's control block, two register stages behind its ap_rst_n) is still in
reset; every VALID this block drives is a register cleared by reset.

Latency: the directory 2 cycles from AR to RVALID; a unit's registers 2 cycles plus the unit's
own. Throughput: one transaction per direction in flight.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kmerspec.f2 import STATUS, WINDOW_BYTES, directory_words

from ..axi.signature import AxiLiteSignature

__all__ = ["OclDecoder", "OKAY", "SLVERR", "DECERR"]

OKAY, SLVERR, DECERR = 0b00, 0b10, 0b11
_WINDOW_BITS = (WINDOW_BYTES - 1).bit_length()


class OclDecoder(wiring.Component):
    def __init__(self, units: list, *, memory_bytes: int):
        """``units``: the kernel name of every compute unit, in unit order."""
        self.unit_names = list(units)
        self.directory = directory_words(self.unit_names, memory_bytes)
        members = {"bus": In(AxiLiteSignature(addr_width=32, data_width=32)),
                   "status": In(32), "ready": In(1)}
        for u in range(len(self.unit_names)):
            members[f"unit{u}"] = Out(AxiLiteSignature(addr_width=_WINDOW_BITS, data_width=32))
        super().__init__(members)

    @property
    def units(self):
        return [getattr(self, f"unit{u}") for u in range(len(self.unit_names))]

    def elaborate(self, platform):
        m = Module()
        bus, units = self.bus, self.units
        windows = len(units) + 1
        window_bits = max(1, (windows - 1).bit_length())

        def window_of(address):
            """(window index, in range) of a byte address."""
            high = address[_WINDOW_BITS:]
            return high[:window_bits], (high < windows)

        # ---- writes -------------------------------------------------------------------------
        aw_held, w_held = Signal(), Signal()
        aw_addr = Signal(32)
        w_data, w_strb = Signal(32), Signal(4)
        forwarding = Signal()           # the unit's AW/W are on offer or its B is awaited
        aw_offer, w_offer = Signal(), Signal()
        bvalid, bresp = Signal(), Signal(2)
        m.d.comb += [bus.AWREADY.eq(self.ready & ~aw_held), bus.WREADY.eq(self.ready & ~w_held),
                     bus.BVALID.eq(bvalid), bus.BRESP.eq(bresp)]
        with m.If(bus.AWVALID & bus.AWREADY):
            m.d.sync += [aw_held.eq(1), aw_addr.eq(bus.AWADDR)]
        with m.If(bus.WVALID & bus.WREADY):
            m.d.sync += [w_held.eq(1), w_data.eq(bus.WDATA), w_strb.eq(bus.WSTRB)]
        w_window, w_in_range = window_of(aw_addr)

        def finish_write(response):
            m.d.sync += [bvalid.eq(1), bresp.eq(response)]

        with m.If(aw_held & w_held & ~forwarding & ~bvalid):
            with m.If(~w_in_range):
                finish_write(DECERR)
            with m.Elif(w_window == 0):
                finish_write(SLVERR)
            with m.Else():
                m.d.sync += [forwarding.eq(1), aw_offer.eq(1), w_offer.eq(1)]
        with m.If(bvalid & bus.BREADY):
            m.d.sync += [bvalid.eq(0), aw_held.eq(0), w_held.eq(0)]

        for u, unit in enumerate(units):
            mine = Signal(name=f"write_to_unit{u}")
            m.d.comb += [mine.eq(forwarding & (w_window == u + 1)),
                         unit.AWADDR.eq(aw_addr[:_WINDOW_BITS]), unit.WDATA.eq(w_data),
                         unit.WSTRB.eq(w_strb),
                         unit.AWVALID.eq(mine & aw_offer), unit.WVALID.eq(mine & w_offer),
                         unit.BREADY.eq(mine & ~aw_offer & ~w_offer)]
            with m.If(unit.AWVALID & unit.AWREADY):
                m.d.sync += aw_offer.eq(0)
            with m.If(unit.WVALID & unit.WREADY):
                m.d.sync += w_offer.eq(0)
            with m.If(unit.BVALID & unit.BREADY):
                m.d.sync += forwarding.eq(0)
                finish_write(unit.BRESP)

        # ---- reads --------------------------------------------------------------------------
        ar_held = Signal()
        ar_addr = Signal(32)
        reading = Signal()              # the unit's AR is on offer or its R is awaited
        ar_offer = Signal()
        rvalid, rresp, rdata = Signal(), Signal(2), Signal(32)
        m.d.comb += [bus.ARREADY.eq(self.ready & ~ar_held), bus.RVALID.eq(rvalid),
                     bus.RRESP.eq(rresp), bus.RDATA.eq(rdata)]
        with m.If(bus.ARVALID & bus.ARREADY):
            m.d.sync += [ar_held.eq(1), ar_addr.eq(bus.ARADDR)]
        r_window, r_in_range = window_of(ar_addr)

        def finish_read(response, value):
            m.d.sync += [rvalid.eq(1), rresp.eq(response), rdata.eq(value)]

        with m.If(ar_held & ~reading & ~rvalid):
            with m.If(~r_in_range):
                finish_read(DECERR, 0)
            with m.Elif(r_window == 0):
                word = Signal(32)
                with m.Switch(ar_addr[2:_WINDOW_BITS]):
                    for offset, value in self.directory.items():
                        with m.Case(offset // 4):
                            m.d.comb += word.eq(value)
                    with m.Case(STATUS // 4):
                        m.d.comb += word.eq(self.status)
                finish_read(OKAY, word)
            with m.Else():
                m.d.sync += [reading.eq(1), ar_offer.eq(1)]
        with m.If(rvalid & bus.RREADY):
            m.d.sync += [rvalid.eq(0), ar_held.eq(0)]

        for u, unit in enumerate(units):
            mine = Signal(name=f"read_from_unit{u}")
            m.d.comb += [mine.eq(reading & (r_window == u + 1)),
                         unit.ARADDR.eq(ar_addr[:_WINDOW_BITS]),
                         unit.ARVALID.eq(mine & ar_offer), unit.RREADY.eq(mine & ~ar_offer)]
            with m.If(unit.ARVALID & unit.ARREADY):
                m.d.sync += ar_offer.eq(0)
            with m.If(unit.RVALID & unit.RREADY):
                m.d.sync += reading.eq(0)
                finish_read(unit.RRESP, unit.RDATA)
        return m
