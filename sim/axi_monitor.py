"""A checker of one AXI4 port, attached to every m_axi port of every kernel bench
(:func:`sim.tb_common.make_axi_ram` starts one beside each memory model), and fed by the
Amaranth-level slave models of the unit tests (tests/axi_slave.py).

The rules (ARM IHI 0022; each finding names its rule as ARM's AXI4 protocol assertions do,
``AXI4_ERRM_*`` for the master, ``AXI4_ERRS_*`` for the slave, with the section of the
specification; ``KERNEL_*`` are this project's stricter rules of :mod:`hw.axi.burst`):

* handshakes (A3.2.1): once a source asserts VALID it holds VALID and the channel's payload
  unchanged until the cycle of READY, on every channel: the master's AR, AW and W and the
  slave's R and B;
* reset (A3.1.2): while ARESETn is low the master drives ARVALID, AWVALID and WVALID low, and a
  slave reset by the same signal RVALID and BVALID; no handshake happens in reset;
* burst contents (A3.4.1): RLAST exactly on the last beat of each AR burst, and each AW burst
  gets exactly AWLEN + 1 W beats with WLAST on the last, in either order (W beats may come
  before their AW: they are matched to the AWs in order when these come); no R beat, and no B
  response, that no burst owes (a B only in a cycle after its AW and its last W beat, A3.3.1);
  W beats that no AW ever claims (a surplus beat after a burst's WLAST) show in :meth:`owed`
  and fail :meth:`settled`;
* the bursts the kernels issue: INCR, SIZE = the bus width, aligned, never across a 4 KiB
  boundary (AXI4_ERRM_AxADDR_BOUNDARY; the rest are the rules of :mod:`hw.axi.burst`).

Every finding is fatal: it raises :class:`AxiProtocolError` at once (in a cocotb monitor's task
this fails the test) and is kept in ``errors``.

The rule checking is :class:`ProtocolRules` (plain Python, one call per clock cycle with the
sampled values), so that it is tested without a simulator (tests/test_axi_monitor.py) and shared
with the Amaranth simulations; the cocotb part only samples the signals after each rising edge.
"""

from collections import deque
from typing import NamedTuple

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

__all__ = ["AxiProtocolError", "ProtocolRules", "AxiProtocolMonitor", "Owed", "PAYLOADS",
           "MASTER_CHANNELS", "SLAVE_CHANNELS"]

ADDRESS_FIELDS = ("ADDR", "LEN", "SIZE", "BURST", "ID", "LOCK", "CACHE", "PROT", "QOS", "REGION")
#: The payload each channel must hold while VALID waits for READY (fields the port lacks, e.g. a
#: port without QOS, are left out by the monitor).
PAYLOADS = {
    "AR": ADDRESS_FIELDS,
    "AW": ADDRESS_FIELDS,
    "W": ("DATA", "STRB", "LAST"),
    "R": ("DATA", "RESP", "LAST", "ID"),
    "B": ("RESP", "ID"),
}
CHANNELS = tuple(PAYLOADS)
#: The channels whose VALID the master drives, and those the slave drives
MASTER_CHANNELS = ("AR", "AW", "W")
SLAVE_CHANNELS = ("R", "B")
#: The fields a handshake needs (the accounting and the burst rules)
HANDSHAKE_FIELDS = {"AR": ("ADDR", "LEN", "SIZE", "BURST"), "AW": ("ADDR", "LEN", "SIZE", "BURST"),
                    "W": ("LAST",), "R": ("LAST",), "B": ()}


def _side(channel):
    return "ERRM" if channel in MASTER_CHANNELS else "ERRS"


class AxiProtocolError(AssertionError):
    pass


class Owed(NamedTuple):
    """What the bursts issued so far still owe, and W beats no AW has claimed yet."""

    r_beats: int
    w_beats: int
    b_responses: int
    unclaimed_w_beats: int = 0


class ProtocolRules:
    """The rules of one port, fed one cycle at a time.

    ``step(valid, ready, payload)``: ``valid``/``ready`` map each channel to a bool, ``payload``
    maps a channel to a dict of its fields; it needs the payload of a channel in every cycle in
    which VALID is high (the monitor reads it only then). ``reset_cycle(valid, ready)`` instead
    for a cycle in which ARESETn is low. Each raises :class:`AxiProtocolError` on a finding
    (appended to ``errors`` too); ``owed()`` is what the bursts issued so far still owe.

    ``slave_reset``: the slave is reset by the same ARESETn (its RVALID/BVALID are checked in
    reset and what it owes is forgotten there). Set it False where only the master is reset:
    the slave then still owes what it owed, and the master must take none of it
    (``stale``)."""

    def __init__(self, beat_bytes, name="axi", slave_reset=True, kernel_rules=True):
        self.beat_bytes, self.name = beat_bytes, name
        self.slave_reset = slave_reset
        self.kernel_rules = kernel_rules
        self.errors = []
        self.cycle = 0
        self._held = {}           # channel -> payload that must be offered again
        self._reads = []          # [beats left] of every accepted AR burst, oldest first
        self._writes = []         # [beats, beats left] of every accepted AW burst owed W beats
        self._early_w = deque()   # WLAST of each W beat that came before its AW (legal AXI)
        self._responses = 0       # B responses owed (bursts whose AW and W beats all came)
        #: what the slave still owed when only the master was reset: (R beats, B responses, W
        #: beats it waits for or holds without their AW)
        self.stale = (0, 0, 0)
        self.handshakes = dict.fromkeys(CHANNELS, 0)    # per channel, since the start

    def reset(self, keep_stale=False):
        """Forget every burst and offer (both sides were reset, unless ``keep_stale``)."""
        self._held.clear()
        self._reads.clear()
        self._writes.clear()
        self._early_w.clear()
        self._responses = 0
        if not keep_stale:
            self.stale = (0, 0, 0)

    def owed(self) -> Owed:
        """(R beats, W beats, B responses) still owed by the bursts issued so far, and the W
        beats that came before any AW claimed them."""
        return Owed(sum(left for left, in self._reads),
                    sum(left for _, left in self._writes), self._responses, len(self._early_w))

    def settled(self, label=""):
        """Raise unless nothing is owed: every burst complete, no W beat without its AW (a
        surplus beat after WLAST shows here, as ARM's end-of-simulation checks do)."""
        owed = self.owed()
        found = []
        if owed.unclaimed_w_beats:
            beats = owed.unclaimed_w_beats
            found.append(f"AXI4_ERRM_WDATA_NUM (A3.4.1): {beats} W beat{'s' * (beats > 1)} that "
                         f"no AW burst claims (a surplus beat after WLAST)")
        if owed.w_beats:
            found.append(f"AXI4_ERRM_WDATA_NUM (A3.4.1): AW bursts still owed {owed.w_beats} "
                         f"W beats")
        if owed.r_beats:
            found.append(f"AXI4_ERRS_RLAST_ALL_DONE_EOS: AR bursts still owed {owed.r_beats} "
                         f"R beats")
        if owed.b_responses:
            found.append(f"AXI4_ERRS_BRESP_ALL_DONE_EOS: {owed.b_responses} write bursts "
                         f"without their B response")
        self._report(found, label)

    def _report(self, found, label=""):
        if not found:
            return
        where = f"{self.name} cycle {self.cycle}" + (f" ({label})" if label else "")
        found = [f"{where}: {text}" for text in found]
        self.errors += found
        raise AxiProtocolError("; ".join(found))

    def _burst_rules(self, channel, fields):
        address, beats = fields["ADDR"], fields["LEN"] + 1
        found = []
        if not self.kernel_rules:       # a port the kernels' burst rules do not bind
            if 1 << fields["SIZE"] > self.beat_bytes:
                found.append(f"AXI4_ERRM_{channel}SIZE (A3.4.1): {channel}SIZE {fields['SIZE']} "
                             f"wider than the {self.beat_bytes}-byte bus")
            start = address & ~((1 << fields["SIZE"]) - 1)
            if fields["BURST"] == 1 and (start & 0xFFF) + (beats << fields["SIZE"]) > 0x1000:
                found.append(f"AXI4_ERRM_{channel}ADDR_BOUNDARY (A3.4.1): {channel} "
                             f"0x{address:x} len {beats} crosses 4 KiB")
            return found
        if fields["BURST"] != 1:
            found.append(f"KERNEL_{channel}BURST (hw.axi.burst: INCR only): {channel} burst "
                         f"type {fields['BURST']}")
        if 1 << fields["SIZE"] > self.beat_bytes:
            found.append(f"AXI4_ERRM_{channel}SIZE (A3.4.1): {channel}SIZE {fields['SIZE']} "
                         f"wider than the {self.beat_bytes}-byte bus")
        elif 1 << fields["SIZE"] != self.beat_bytes:
            found.append(f"KERNEL_{channel}SIZE (hw.axi.burst: full-width beats): "
                         f"{channel}SIZE {fields['SIZE']} on a {self.beat_bytes}-byte bus")
        if address % self.beat_bytes:
            found.append(f"KERNEL_{channel}ADDR_ALIGN (hw.axi.burst: bus-aligned): {channel} "
                         f"unaligned 0x{address:x}")
        if (address & 0xFFF) + beats * self.beat_bytes > 0x1000:
            found.append(f"AXI4_ERRM_{channel}ADDR_BOUNDARY (A3.4.1): {channel} 0x{address:x} "
                         f"len {beats} crosses 4 KiB")
        return found

    def _handshake_rules(self, valid, payload, found):
        """A3.2.1: a VALID that waited for READY is offered again, with the same payload."""
        for channel in CHANNELS:
            held = self._held.pop(channel, None)
            if held is None:
                continue
            rule = f"AXI4_{_side(channel)}_{channel}VALID_STABLE (A3.2.1)"
            if not valid[channel]:
                found.append(f"{rule}: {channel}VALID fell before {channel}READY")
            elif payload[channel] != held:
                changed = sorted(key for key in held if held[key] != payload[channel][key])
                found.append(f"AXI4_{_side(channel)}_{channel}{changed[0]}_STABLE (A3.2.1): "
                             f"{channel} payload changed before {channel}READY: "
                             + ", ".join(f"{key} 0x{held[key]:x} -> 0x{payload[channel][key]:x}"
                                         for key in changed))

    def _w_beat(self, burst, last, found, early=False):
        """One W beat of ``burst`` ([beats, left]); True if it completed the burst."""
        beats, left = burst
        if bool(last) != (left == 1):
            found.append(f"AXI4_ERRM_WDATA_NUM (A3.4.1): WLAST={int(bool(last))} on beat "
                         f"{beats - left + 1} of a {beats}-beat AW burst"
                         + (" (a W beat that came before its AW)" if early else ""))
        burst[1] -= 1
        return burst[1] == 0

    def reset_cycle(self, valid, ready=None):
        """A cycle with ARESETn low (A3.1.2): the master's VALIDs low (and the slave's, when it
        shares the reset), no handshake; then every offer and burst is forgotten (what the slave
        still owes is kept as ``stale`` when it was not reset)."""
        ready = ready or dict.fromkeys(CHANNELS, False)
        found = [f"AXI4_ERRM_{channel}VALID_RESET (A3.1.2): {channel}VALID high while "
                 f"ARESETn is low" for channel in MASTER_CHANNELS if valid[channel]]
        if self.slave_reset:
            found += [f"AXI4_ERRS_{channel}VALID_RESET (A3.1.2): {channel}VALID high while "
                      f"ARESETn is low" for channel in SLAVE_CHANNELS if valid[channel]]
        found += [f"A3.1.2: {'an' if channel == 'R' else 'a'} {channel} handshake while ARESETn "
                  f"is low (the master takes nothing in reset)" for channel in SLAVE_CHANNELS
                  if valid[channel] and ready[channel]]
        if not self.slave_reset:
            # the slave still sends what it owes and waits for the W beats of its AW bursts
            owed = self.owed()
            self.stale = (self.stale[0] + owed.r_beats, self.stale[1] + owed.b_responses,
                          self.stale[2] + owed.w_beats + owed.unclaimed_w_beats)
        self.reset(keep_stale=not self.slave_reset)
        self._report(found)
        self.cycle += 1

    def step(self, valid, ready, payload):
        found = []
        self._handshake_rules(valid, payload, found)
        for channel in CHANNELS:
            if valid[channel] and not ready[channel]:
                self._held[channel] = payload[channel]
        fire = {channel: valid[channel] and ready[channel] for channel in CHANNELS}
        for channel in CHANNELS:
            self.handshakes[channel] += fire[channel]
        # B first: a response is owed only by a burst whose AW and last W beat were taken in an
        # earlier cycle (A3.3.1: BVALID after the handshakes, not with them)
        if fire["B"]:
            if self.stale[1]:
                found.append("A3.1.2: a B response taken that the slave owed a burst issued "
                             "before the master's reset (the interconnect was not reset)")
            elif not self._responses:
                found.append("AXI4_ERRS_BRESP_WLAST (A3.3.1): a B response before, or in the "
                             "cycle of, its burst's AW and last W beat (no completed burst owes "
                             "one)")
            else:
                self._responses -= 1
        if fire["AR"]:
            found += self._burst_rules("AR", payload["AR"])
            self._reads.append([payload["AR"]["LEN"] + 1])
        if fire["AW"]:
            found += self._burst_rules("AW", payload["AW"])
            burst = [payload["AW"]["LEN"] + 1] * 2
            complete = False
            while self._early_w and not complete:
                complete = self._w_beat(burst, self._early_w.popleft(), found, early=True)
            if complete:
                self._responses += 1
            else:
                self._writes.append(burst)
        if fire["R"]:
            if self.stale[0]:
                found.append("A3.1.2: an R beat taken that the slave owed a burst issued "
                             "before the master's reset (the interconnect was not reset)")
            elif not self._reads:
                found.append("AXI4_ERRS_RID (A5.3.1): an R beat no outstanding AR burst owes")
            else:
                burst = self._reads[0]
                if payload["R"]["LAST"] != (burst[0] == 1):
                    found.append(f"AXI4_ERRS_RDATA_NUM (A3.4.1): RLAST={payload['R']['LAST']} "
                                 f"with {burst[0]} beats of the burst left")
                burst[0] -= 1
                if not burst[0]:
                    self._reads.pop(0)
        for channel in ("AW", "W"):
            if fire[channel] and self.stale[2]:
                found.append(f"A3.1.2: a {channel} handshake while the slave's write channels "
                             f"are out of step by a burst of before the master's reset (the "
                             f"interconnect was not reset)")
        if fire["W"]:
            if not self._writes:
                self._early_w.append(payload["W"]["LAST"])
            elif self._w_beat(self._writes[0], payload["W"]["LAST"], found):
                self._writes.pop(0)
                self._responses += 1
        self._report(found)
        self.cycle += 1
        return found

    def slave_was_reset(self):
        """The slave alone was reset (after a reset of the master alone): what it owed is gone,
        and so is any offer it held."""
        self.stale = (0, 0, 0)
        for channel in SLAVE_CHANNELS:
            self._held.pop(channel, None)


class AxiProtocolMonitor:
    """Samples the AXI4 port ``prefix`` of ``dut`` after every rising edge of ``clk`` and feeds
    :class:`ProtocolRules` (:meth:`ProtocolRules.reset_cycle` while ``rst_n`` is low: the
    master's VALIDs must be low from the first cycle of a reset). ``r_cycles`` and ``w_cycles``
    are the cycles of the R and W data handshakes (for the throughput figures), ``errors`` every
    finding; :meth:`settled` raises unless every burst is complete (a bench calls it after every
    ap_done)."""

    def __init__(self, dut, prefix, clk, data_width, rst_n=None, names=None, lite=False,
                 kernel_rules=True):
        """``names``: a function from a signal's AXI name (``ARVALID``) to the DUT's signal name
        (default ``<prefix>_<NAME>``), for a port whose signals are named otherwise (the F2
        shell's: hw.f2.shell). ``lite``: an AXI4-Lite port (single beats of the bus width:
        LEN 0, LAST 1). ``kernel_rules``: also the kernels' burst rules (INCR, full width,
        aligned); without them, only ARM's."""
        self.dut, self.prefix, self.clk, self.rst_n = dut, prefix, clk, rst_n
        self._names = names or (lambda name: f"{prefix}_{name}")
        self.rules = ProtocolRules(data_width // 8, prefix, kernel_rules=kernel_rules)
        self.r_cycles, self.w_cycles = [], []
        self._valid = {ch: self._signal(f"{ch}VALID") for ch in CHANNELS}
        self._ready = {ch: self._signal(f"{ch}READY") for ch in CHANNELS}
        self._fields = {ch: {field: handle for field in PAYLOADS[ch]
                             if (handle := self._signal(f"{ch}{field}", optional=True)) is not None}
                        for ch in CHANNELS}
        size = (data_width // 8).bit_length() - 1
        #: the fields an AXI4-Lite port lacks, as AXI4 would carry its transfers
        self._constants = ({"AR": {"LEN": 0, "SIZE": size, "BURST": 1},
                            "AW": {"LEN": 0, "SIZE": size, "BURST": 1},
                            "W": {"LAST": 1}, "R": {"LAST": 1}, "B": {}} if lite
                           else dict.fromkeys(CHANNELS, {}))
        self._task = cocotb.start_soon(self._run())

    def _signal(self, name, optional=False):
        full = self._names(name)
        if full is None or (optional and not hasattr(self.dut, full)):
            return None
        return getattr(self.dut, full)

    @property
    def errors(self):
        return self.rules.errors

    @property
    def cycle(self):
        return self.rules.cycle

    def owed(self):
        return self.rules.owed()

    def settled(self, label=""):
        self.rules.settled(label)

    @staticmethod
    def _high(handle):
        """A 1-bit signal's value; an unresolved one (X/Z) counts as high, so that it fails a
        rule that wants it low."""
        try:
            return bool(int(handle.value))
        except ValueError:
            return True

    async def _run(self):
        rules = self.rules
        # before its first reset a master's outputs are undefined (a garbage start of
        # sim.runner randomises them): the rules hold from the first reset cycle on
        reset_seen = self.rst_n is None
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if self.rst_n is not None and not int(self.rst_n.value):
                reset_seen = True
                valid = {ch: self._high(handle) for ch, handle in self._valid.items()}
                ready = {ch: valid[ch] and self._high(self._ready[ch]) for ch in CHANNELS}
                rules.reset_cycle(valid, ready)
                continue
            if not reset_seen:
                rules.cycle += 1
                continue
            valid = {ch: bool(int(handle.value)) for ch, handle in self._valid.items()}
            if not any(valid.values()) and not rules._held:
                rules.cycle += 1          # an idle cycle: nothing to check or count
                continue
            # READY matters only beside VALID (and the Python per cycle is the benches' cost)
            ready = {ch: valid[ch] and bool(int(self._ready[ch].value)) for ch in CHANNELS}
            payload = {}
            for ch in CHANNELS:
                if not valid[ch]:
                    payload[ch] = None
                    continue
                # the whole payload where it must be held or compared (a 512-bit WDATA read
                # every cycle would slow the benches), else what the accounting needs
                fields = self._fields[ch]
                if ready[ch] and ch not in rules._held:
                    fields = {field: fields[field] for field in HANDSHAKE_FIELDS[ch]
                              if field in fields}
                payload[ch] = {**self._constants[ch],
                               **{field: int(handle.value) for field, handle in fields.items()}}
            if valid["R"] and ready["R"]:
                self.r_cycles.append(rules.cycle + 1)
            if valid["W"] and ready["W"]:
                self.w_cycles.append(rules.cycle + 1)
            rules.step(valid, ready, payload)
