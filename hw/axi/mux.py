"""N AXI4 masters onto one AXI4 slave port (an N:1 interconnect).

``ups[i]`` : In(Axi4Signature(id_width=I))   master i
``down``   : Out(Axi4Signature(id_width=I + index bits))   the slave; a burst of master i goes
             down with ID ``{i, its own ID}`` (the index in the high bits), and every R beat and
             B response goes back to the master its ID names, with the master's own ID

Arbitration: AR and AW each round-robin among the masters offering, one burst at a time. Once a
master's AR (or AW) is on offer it stays granted until the slave takes it (A3.2.1: an offered
VALID and its payload hold until READY), so the next master waits at most one burst per master.

Write data: the W beats go down in the order of the AW grants, a FIFO of master indices pushed
the cycle an AW is first offered down (not when it is taken), so a slave that waits for a burst's
W beats before taking its address (A3.3.1 allows it) is served. A master's W beats wait until its
AW is granted (a master must not wait for WREADY before offering AW, A3.3.1). At most
``w_bursts`` bursts may be granted and owe W beats; an AW is not offered down without room for
its entry, so nothing is lost.

Responses: routed by the ID's index bits, combinationally; the slave may interleave masters
(different IDs) as AXI allows. Latency: none added on any channel (address, data and response
paths are multiplexers; the grant and the W FIFO are the only state). Throughput: one beat per
cycle on every channel; AR and AW each one burst per cycle.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from .signature import Axi4Signature

__all__ = ["AxiMux", "index_bits"]

ADDRESS_FIELDS = ("ADDR", "LEN", "SIZE", "BURST", "LOCK", "CACHE", "PROT", "QOS", "REGION")


def index_bits(masters):
    """ID bits the mux adds for ``masters`` masters (at least 1)."""
    return max(1, ceil_log2(masters))


class AxiMux(wiring.Component):
    def __init__(self, masters, *, data_width=512, id_width=1, addr_width=64, w_bursts=16):
        if masters < 1:
            raise ValueError("an AXI mux needs at least one master")
        self.masters, self.id_width, self.w_bursts = masters, id_width, w_bursts
        self.index_bits = index_bits(masters)
        up = Axi4Signature(addr_width=addr_width, data_width=data_width, id_width=id_width)
        members = {f"up{i}": In(up) for i in range(masters)}
        members["down"] = Out(Axi4Signature(addr_width=addr_width, data_width=data_width,
                                            id_width=id_width + self.index_bits))
        super().__init__(members)

    @property
    def ups(self):
        return [getattr(self, f"up{i}") for i in range(self.masters)]

    def _round_robin(self, m, name, valids, last):
        """The index of the first master offering after ``last`` (in turn), and whether any
        offers."""
        n = self.masters
        pick = Signal(self.index_bits, name=f"{name}_pick")
        with m.Switch(last):
            for previous in range(n):
                with m.Case(previous):
                    order = [(previous + k) % n for k in range(1, n + 1)]
                    for candidate in reversed(order):     # the first in turn wins
                        with m.If(valids[candidate]):
                            m.d.comb += pick.eq(candidate)
        return pick

    def _arbiter(self, m, channel, room=C(1)):
        """Grant of ``channel`` (AR/AW): the selected master, whether it is offered down and
        whether the offer is new this cycle. ``room``: an offer may start (the W FIFO)."""
        ups, down = self.ups, self.down
        valids = [getattr(u, f"{channel}VALID") for u in ups]
        locked = Signal(name=f"{channel.lower()}_locked")
        held = Signal(self.index_bits, name=f"{channel.lower()}_held")
        last = Signal(self.index_bits, name=f"{channel.lower()}_last", init=self.masters - 1)
        pick = self._round_robin(m, channel.lower(), valids, last)
        sel = Signal(self.index_bits, name=f"{channel.lower()}_sel")
        m.d.comb += sel.eq(Mux(locked, held, pick))
        offer = Signal(name=f"{channel.lower()}_offer")
        fresh = Signal(name=f"{channel.lower()}_fresh")
        with m.Switch(sel):
            for i, u in enumerate(ups):
                with m.Case(i):
                    m.d.comb += offer.eq(getattr(u, f"{channel}VALID") & (locked | room))
                    for f in ADDRESS_FIELDS:
                        m.d.comb += getattr(down, f"{channel}{f}").eq(getattr(u, f"{channel}{f}"))
                    m.d.comb += getattr(down, f"{channel}ID").eq(
                        Cat(getattr(u, f"{channel}ID"), C(i, self.index_bits)))
        ready = getattr(down, f"{channel}READY")
        m.d.comb += [getattr(down, f"{channel}VALID").eq(offer), fresh.eq(offer & ~locked)]
        for i, u in enumerate(ups):
            m.d.comb += getattr(u, f"{channel}READY").eq(ready & offer & (sel == i))
        with m.If(offer & ready):
            m.d.sync += [locked.eq(0), last.eq(sel)]
        with m.Elif(offer):
            m.d.sync += [locked.eq(1), held.eq(sel)]
        return sel, fresh

    def _responses(self, m, channel, fields):
        """R or B back to the master named by the ID's index bits."""
        ups, down = self.ups, self.down
        rid = getattr(down, f"{channel}ID")
        target = rid[self.id_width:]
        for i, u in enumerate(ups):
            m.d.comb += [getattr(u, f"{channel}VALID").eq(getattr(down, f"{channel}VALID")
                                                         & (target == i)),
                         getattr(u, f"{channel}ID").eq(rid[:self.id_width])]
            for f in fields:
                m.d.comb += getattr(u, f"{channel}{f}").eq(getattr(down, f"{channel}{f}"))
        with m.Switch(target):
            for i, u in enumerate(ups):
                with m.Case(i):
                    m.d.comb += getattr(down, f"{channel}READY").eq(
                        getattr(u, f"{channel}READY"))

    def elaborate(self, platform):
        m = Module()
        ups, down = self.ups, self.down

        self._arbiter(m, "AR")
        self._responses(m, "R", ("DATA", "RESP", "LAST"))

        m.submodules.w_order = order = SyncFIFO(width=self.index_bits,
                                                depth=self.w_bursts)
        aw_sel, aw_fresh = self._arbiter(m, "AW", room=order.w_rdy)
        m.d.comb += [order.w_en.eq(aw_fresh), order.w_data.eq(aw_sel)]
        with m.Switch(order.r_data):
            for i, u in enumerate(ups):
                with m.Case(i):
                    m.d.comb += [down.WVALID.eq(order.r_rdy & u.WVALID),
                                 down.WDATA.eq(u.WDATA), down.WSTRB.eq(u.WSTRB),
                                 down.WLAST.eq(u.WLAST)]
        for i, u in enumerate(ups):
            m.d.comb += u.WREADY.eq(order.r_rdy & (order.r_data == i) & down.WREADY)
        m.d.comb += order.r_en.eq(down.WVALID & down.WREADY & down.WLAST)

        self._responses(m, "B", ("RESP",))
        return m
