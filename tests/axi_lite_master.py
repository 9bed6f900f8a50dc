"""The master side of an AXI4-Lite port in the Amaranth simulator (the host on a kernel's
``s_axi_control``), for tests/test_axi_lite_control.py, checked cycle by cycle by the rules the
cocotb benches use (:class:`sim.axi_monitor.ProtocolRules` with ``lite``): a broken rule raises
:class:`~sim.axi_monitor.AxiProtocolError` from the simulation at once, naming it.

Writes are posted (:meth:`LiteMaster.write` queues one; AW and W go as soon as their channel is
free, each on its own, so W may lead AW, and several writes are issued before any B is taken) and
reads overlap (the next AR is offered while an R waits for RREADY). Every channel stalls at
random: a VALID waits ``pause``-random cycles before it rises (then holds until READY, A3.2.1),
BREADY and RREADY are low in random cycles; seeded. While ``rst_n`` is low the model offers
nothing (and forgets what it offered) and the rules of reset apply, the slave's READYs included
(``reset_readies``); ``waits``: the firewall's wait rules (:data:`sim.axi_checker.FIREWALL_WAITS`).
"""

import random
from collections import deque

from sim.axi_monitor import ProtocolRules

__all__ = ["LiteMaster"]


class LiteMaster:
    def __init__(self, lite, rst_n=None, *, seed=0, pause=0.3, name="s_axi_control",
                 reset_readies=("AR", "AW", "W"), waits=None):
        self.lite, self.rst_n = lite, rst_n
        self.rng = random.Random(seed)
        self.pause = pause
        self.rules = ProtocolRules(len(lite.WDATA) // 8, name, lite=True,
                                   reset_readies=reset_readies, waits=waits)
        self._queues = {"AW": deque(), "W": deque(), "AR": deque()}
        self._offer = {}          # channel -> payload on offer (held until READY)
        self.issued_writes = 0
        self.responses = []       # BRESP of each B, in order
        self.reads = []           # (address, RDATA, RRESP) of each R, in order
        self._read_addresses = deque()
        #: the most writes whose AW was taken and whose B was not; the cycles an AR was offered
        #: while an R waited for RREADY (what the tests post and overlap)
        self.most_writes_outstanding = 0
        self.ar_beside_a_waiting_r = 0

    def write(self, address, data, strobe=0xF):
        """Queue a write (posted: it does not wait for the B of the one before)."""
        self._queues["AW"].append({"ADDR": address})
        self._queues["W"].append({"DATA": data, "STRB": strobe})
        self.issued_writes += 1

    def read(self, address):
        """Queue a read; its value comes in :attr:`reads`."""
        self._queues["AR"].append({"ADDR": address})

    @property
    def busy(self):
        """Some queued write has no B yet, or some queued read no R."""
        return (len(self.responses) < self.issued_writes or any(self._queues.values())
                or bool(self._offer) or bool(self._read_addresses))

    def settled(self, label=""):
        self.rules.settled(label)

    async def run(self, ctx):
        lite = self.lite
        outputs = [lite.AWREADY, lite.WREADY, lite.ARREADY, lite.BVALID, lite.BRESP, lite.RVALID,
                   lite.RDATA, lite.RRESP]
        while True:
            in_reset = self.rst_n is not None and not ctx.get(self.rst_n)
            for channel, queue in self._queues.items():
                if (channel not in self._offer and queue and not in_reset
                        and self.rng.random() >= self.pause):
                    self._offer[channel] = queue.popleft()
                offer = None if in_reset else self._offer.get(channel)
                ctx.set(getattr(lite, f"{channel}VALID"), offer is not None)
                for field, value in (offer or {}).items():
                    ctx.set(getattr(lite, f"{channel}{field}"), value)
            ready = {"B": self.rng.random() >= self.pause, "R": self.rng.random() >= self.pause}
            ctx.set(lite.BREADY, ready["B"])
            ctx.set(lite.RREADY, ready["R"])
            signals = outputs + ([self.rst_n] if self.rst_n is not None else [])
            _, _, *values = await ctx.tick().sample(*signals)
            awready, wready, arready, bvalid, bresp, rvalid, rdata, rresp = values[:8]
            in_reset = self.rst_n is not None and not values[8]
            valid = {ch: ch in self._offer and not in_reset for ch in ("AW", "W", "AR")}
            valid.update(B=bool(bvalid), R=bool(rvalid))
            ready.update(AW=bool(awready), W=bool(wready), AR=bool(arready))
            if in_reset:
                # (a reset forgets the offers as a master reset with the port does)
                self.rules.reset_cycle(valid, ready)
                self._offer.clear()
                continue
            payload = {ch: self._offer.get(ch) if valid[ch] else None for ch in ("AW", "W", "AR")}
            payload["B"] = {"RESP": bresp} if bvalid else None
            payload["R"] = {"DATA": rdata, "RESP": rresp} if rvalid else None
            self.rules.step(valid, ready, payload)
            handshakes = self.rules.handshakes
            self.most_writes_outstanding = max(self.most_writes_outstanding,
                                               handshakes["AW"] - handshakes["B"])
            self.ar_beside_a_waiting_r += valid["AR"] and valid["R"] and not ready["R"]
            for channel in ("AW", "W", "AR"):
                if valid[channel] and ready[channel]:
                    taken = self._offer.pop(channel)
                    if channel == "AR":
                        self._read_addresses.append(taken["ADDR"])
            if bvalid and ready["B"]:
                self.responses.append(bresp)
            if rvalid and ready["R"] and self._read_addresses:
                self.reads.append((self._read_addresses.popleft(), rdata, rresp))
