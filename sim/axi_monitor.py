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
  boundary (AXI4_ERRM_AxADDR_BOUNDARY; the rest are the rules of :mod:`hw.axi.burst`);
* the bytes written (``KERNEL_WSTRB``, with :meth:`ProtocolRules.expect_writes`): each W beat's
  strobes are the bytes of the expected writes at the beat's address (``exact``: a writer's
  commands, the unit tests), or lie within them and are all ones but on a burst's last beat,
  where they may end early (the output buffers of a kernel bench);
* READY in reset (``reset_readies``, the READYs of the side under test): low in every cycle
  ARESETn is low (``KERNEL_xREADY_RESET``: the Vitis top drives every READY low from the first
  reset cycle) and in the first clock edge at which it is high again (``XILINX_xREADY_RESET``,
  AMD's protocol checker, PG101: an access taken there by a slave still in reset is lost);
* the waits an AXI firewall times (``waits``: rule -> limit in cycles, AMD PG293 "Timeout
  Faults"; the limits XRT's firewalls enforce are :data:`sim.axi_checker.FIREWALL_WAITS`): a
  slave's AWREADY/WREADY/ARREADY after VALID, its first RVALID after an AR or R transfer while R
  beats are owed (``RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT``), its BVALID while a B is owed
  (``RECS_WRITE_TO_BVALID_MAX_WAIT``); a master's RREADY/BREADY after VALID, its WVALID while an
  AW is on offer or owed W beats (``RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT``), its AWVALID while W
  beats wait for their AW (``RECM_WVALID_TO_AWVALID_MAX_WAIT``).

AXI4-Lite (``lite``): the same rules with one beat per transfer (no LEN, LAST or burst fields).

Every finding is fatal: it raises :class:`AxiProtocolError` at once (in a cocotb monitor's task
this fails the test) and is kept in ``errors``.

The rule checking is :class:`ProtocolRules` (plain Python, one call per clock cycle with the
sampled values), so that it is tested without a simulator (tests/test_axi_monitor.py) and shared
with the Amaranth simulations; the cocotb part only samples the signals after each rising edge,
and, given the kernel's ``ap_done``, checks that nothing is owed in the clock edge at which it
rises (``settle_at_done``; not after the host's next poll, which may come after a late B).
"""

from collections import deque
from typing import NamedTuple

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

__all__ = ["AxiProtocolError", "ProtocolRules", "AxiProtocolMonitor", "Owed", "PAYLOADS",
           "LITE_PAYLOADS", "MASTER_CHANNELS", "SLAVE_CHANNELS", "WAIT_RULES"]

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
#: AXI4-Lite (as the Vitis control port has it: no PROT; a port with PROT keeps it held too)
LITE_PAYLOADS = {"AR": ("ADDR", "PROT"), "AW": ("ADDR", "PROT"), "W": ("DATA", "STRB"),
                 "R": ("DATA", "RESP"), "B": ("RESP",)}
CHANNELS = tuple(PAYLOADS)
#: The channels whose VALID the master drives, and those the slave drives
MASTER_CHANNELS = ("AR", "AW", "W")
SLAVE_CHANNELS = ("R", "B")
#: The fields a handshake needs (the accounting and the burst rules)
HANDSHAKE_FIELDS = {"AR": ("ADDR", "LEN", "SIZE", "BURST"), "AW": ("ADDR", "LEN", "SIZE", "BURST"),
                    "W": ("LAST", "STRB"), "R": ("LAST",), "B": ()}
#: The waits an AXI firewall times (PG293), each on (the channel whose VALID waits for READY)
#: or None for the waits of the other kind (see :meth:`ProtocolRules._timers`)
WAIT_RULES = {"RECS_AWREADY_MAX_WAIT": "AW", "RECS_WREADY_MAX_WAIT": "W",
              "RECS_ARREADY_MAX_WAIT": "AR", "RECM_RREADY_MAX_WAIT": "R",
              "RECM_BREADY_MAX_WAIT": "B", "RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT": None,
              "RECS_WRITE_TO_BVALID_MAX_WAIT": None, "RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT": None,
              "RECM_WVALID_TO_AWVALID_MAX_WAIT": None}


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
    (``stale``).

    ``lite``: an AXI4-Lite port (payloads :data:`LITE_PAYLOADS`, one beat per transfer).
    ``reset_readies``: the channels whose READY must be low in reset and in the first edge after
    it (those the side under test drives); ``needs_ready_levels`` says when a caller must give
    those READYs' levels (``ready`` is otherwise read only beside VALID). ``waits``: firewall
    wait rules of :data:`WAIT_RULES` with their limits in cycles. ``expect_writes``: the bytes W
    beats must write (module docstring). ``kernel_rules``: also the kernels' burst rules (INCR,
    full width, aligned); without them (a shell's port), only ARM's."""

    def __init__(self, beat_bytes, name="axi", slave_reset=True, *, lite=False,
                 reset_readies=(), waits=None, kernel_rules=True):
        self.beat_bytes, self.name = beat_bytes, name
        self.slave_reset = slave_reset
        self.lite = lite
        self.kernel_rules = kernel_rules
        self.reset_readies = tuple(reset_readies)
        unknown = set(waits or {}) - set(WAIT_RULES)
        if unknown:
            raise ValueError(f"unknown wait rules {sorted(unknown)} (known: {list(WAIT_RULES)})")
        self.waits = dict(waits or {})
        self._timer = dict.fromkeys(self.waits, 0)
        self.errors = []
        #: raise at each finding (else only keep it in ``errors``, for a bench that fails on
        #: them at its end: to let AMD's checker name a fault first, sim.tb_common)
        self.fatal = True
        self.cycle = 0
        self._held = {}           # channel -> payload that must be offered again
        self._reads = []          # [beats left] of every accepted AR burst, oldest first
        self._writes = []         # [beats, beats left, address] of each AW burst owed W beats
        self._early_w = deque()   # (WLAST, WSTRB) of each W beat that came before its AW
        self._responses = 0       # B responses owed (bursts whose AW and W beats all came)
        self._after_reset = False     # the last cycle was in reset
        self._write_ranges = None     # [(first byte, end)] W beats must write (expect_writes)
        self._exact_writes = True
        #: what the slave still owed when only the master was reset: (R beats, B responses, W
        #: beats it waits for or holds without their AW)
        self.stale = (0, 0, 0)
        self.handshakes = dict.fromkeys(CHANNELS, 0)    # per channel, since the start

    @property
    def needs_ready_levels(self) -> bool:
        """The next cycle checks the levels of ``reset_readies`` (in reset, or the first edge
        after it): give ``ready`` for those channels whether their VALID is high or not."""
        return bool(self.reset_readies) and self._after_reset

    def expect_writes(self, ranges, exact=True):
        """The byte ranges ``[(address, length)]`` the W beats from now on must write (None:
        no check of WSTRB values). ``exact``: every beat's strobes are exactly the bytes of the
        ranges at its address (a writer's commands); else they lie within them and are all ones
        except on a burst's last beat, which may end early (a kernel's output buffers, which it
        may not fill)."""
        self._write_ranges = None if ranges is None else [(start, start + length)
                                                          for start, length in ranges]
        self._exact_writes = exact

    def add_expected_write(self, address, length):
        """One more range for :meth:`expect_writes` (not exact, started if none)."""
        if self._write_ranges is None:
            self.expect_writes([], exact=False)
        self._write_ranges.append((address, address + length))

    def reset(self, keep_stale=False):
        """Forget every burst and offer (both sides were reset, unless ``keep_stale``)."""
        self._held.clear()
        self._reads.clear()
        self._writes.clear()
        self._early_w.clear()
        self._responses = 0
        self._timer = dict.fromkeys(self.waits, 0)
        if not keep_stale:
            self.stale = (0, 0, 0)

    def owed(self) -> Owed:
        """(R beats, W beats, B responses) still owed by the bursts issued so far, and the W
        beats that came before any AW claimed them."""
        return Owed(sum(left for left, in self._reads),
                    sum(burst[1] for burst in self._writes), self._responses, len(self._early_w))

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
        if self.fatal:
            raise AxiProtocolError("; ".join(found))

    def _burst_rules(self, channel, fields):
        if self.lite:
            return []
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

    def _w_beat(self, burst, last, strobe, found, early=False):
        """One W beat of ``burst`` ([beats, left, address]); True if it completed the burst."""
        beats, left, address = burst
        if bool(last) != (left == 1):
            found.append(f"AXI4_ERRM_WDATA_NUM (A3.4.1): WLAST={int(bool(last))} on beat "
                         f"{beats - left + 1} of a {beats}-beat AW burst"
                         + (" (a W beat that came before its AW)" if early else ""))
        if self._write_ranges is not None and strobe is not None:
            found += self._strobe_rules(address + (beats - left) * self.beat_bytes, strobe,
                                        left == 1)
        burst[1] -= 1
        return burst[1] == 0

    def _strobe_rules(self, address, strobe, burst_end):
        """``KERNEL_WSTRB``: the beat at ``address`` (aligned down to the bus) writes the bytes
        :meth:`expect_writes` gave."""
        base = address - address % self.beat_bytes
        expected = 0
        for start, end in self._write_ranges:
            for byte in range(max(start, base), min(end, base + self.beat_bytes)):
                expected |= 1 << (byte - base)
        full = (1 << self.beat_bytes) - 1
        if self._exact_writes:
            wrong = strobe != expected
            what = f"the bytes it should write are 0x{expected:x}"
        else:
            prefix = strobe & (strobe + 1) == 0     # ones from the lowest byte up, then zeros
            wrong = (strobe & ~expected or (strobe != full and not (burst_end and prefix))
                     or not strobe)
            what = (f"the bytes of the outputs there are 0x{expected:x}; a beat writes all of "
                    f"its bytes, but the last of a burst, which may end early")
        if not wrong:
            return []
        return [f"KERNEL_WSTRB (the bytes the writes should write): WSTRB 0x{strobe:x} on the "
                f"beat at 0x{base:x}; {what}"]

    def _timers(self, valid, ready, fire):
        """The firewall's waits (``waits``), from the state before this cycle's handshakes."""
        found = []
        owed_r = any(self._reads)
        owing_w = bool(self._writes) or valid["AW"]
        early_w = bool(self._early_w) or (valid["W"] and not self._writes)
        for rule, limit in self.waits.items():
            channel = WAIT_RULES[rule]
            if channel is not None:
                waiting = valid[channel] and not ready[channel]
                what = f"{channel}VALID has waited {{}} cycles for {channel}READY"
            elif rule == "RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT":
                waiting = owed_r and not valid["R"] and not fire["AR"]
                what = "R beats owed and no RVALID for {} cycles since the last AR or R transfer"
            elif rule == "RECS_WRITE_TO_BVALID_MAX_WAIT":
                waiting = self._responses > 0 and not valid["B"]
                what = "a B response owed and no BVALID for {} cycles"
            elif rule == "RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT":
                waiting = owing_w and not valid["W"]
                what = "an AW on offer or owed W beats and no WVALID for {} cycles"
            else:   # RECM_WVALID_TO_AWVALID_MAX_WAIT
                waiting = early_w and not valid["AW"]
                what = "W beats ahead of their AW and no AWVALID for {} cycles"
            self._timer[rule] = self._timer[rule] + 1 if waiting else 0
            if self._timer[rule] > limit:
                found.append(f"{rule} (AXI firewall, PG293; limit {limit}): "
                             + what.format(self._timer[rule]))
        return found

    def _reset_ready_rules(self, ready, in_reset):
        rule = "KERNEL_{0}READY_RESET (the kernel drives every READY low from the first reset " \
               "cycle): {0}READY high while ARESETn is low" if in_reset else \
               "XILINX_{0}READY_RESET (PG101): {0}READY high in the first clock edge after " \
               "ARESETn rose (a transfer taken there by a slave still in reset is lost)"
        return [rule.format(channel) for channel in self.reset_readies if ready.get(channel)]

    def reset_cycle(self, valid, ready=None):
        """A cycle with ARESETn low (A3.1.2): the master's VALIDs low (and the slave's, when it
        shares the reset), no handshake, the READYs of ``reset_readies`` low (``ready`` gives
        their levels); then every offer and burst is forgotten (what the slave still owes is
        kept as ``stale`` when it was not reset)."""
        ready = ready or dict.fromkeys(CHANNELS, False)
        found = [f"AXI4_ERRM_{channel}VALID_RESET (A3.1.2): {channel}VALID high while "
                 f"ARESETn is low" for channel in MASTER_CHANNELS if valid[channel]]
        found += self._reset_ready_rules(ready, in_reset=True)
        self._after_reset = True
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

    def idle_cycle(self):
        """A cycle with every VALID low and nothing held (a shortcut of :meth:`step`: the
        benches' monitors spend most cycles here)."""
        if self._after_reset:
            idle = dict.fromkeys(CHANNELS, False)
            self.step(idle, idle, dict.fromkeys(CHANNELS))
            return
        if self.waits:
            # no VALID: the handshake waits end; the waits for a VALID go on while owed
            found = []
            for rule, limit in self.waits.items():
                if rule == "RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT":
                    waiting = bool(self._reads)
                elif rule == "RECS_WRITE_TO_BVALID_MAX_WAIT":
                    waiting = self._responses > 0
                elif rule == "RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT":
                    waiting = bool(self._writes)
                elif rule == "RECM_WVALID_TO_AWVALID_MAX_WAIT":
                    waiting = bool(self._early_w)
                else:
                    waiting = False
                self._timer[rule] = self._timer[rule] + 1 if waiting else 0
                if self._timer[rule] > limit:
                    found.append(f"{rule} (AXI firewall, PG293; limit {limit}): "
                                 f"{self._timer[rule]} cycles without the VALID owed")
            self._report(found)
        self.cycle += 1

    def step(self, valid, ready, payload):
        """One cycle with ARESETn high: ``valid`` and ``ready`` of each channel (``ready`` may be
        False where VALID is low, but for ``reset_readies`` when :attr:`needs_ready_levels`),
        ``payload`` of each channel whose VALID is high."""
        found = []
        if self._after_reset:
            found += self._reset_ready_rules(ready, in_reset=False)
            self._after_reset = False
        self._handshake_rules(valid, payload, found)
        for channel in CHANNELS:
            if valid[channel] and not ready[channel]:
                self._held[channel] = payload[channel]
        fire = {channel: valid[channel] and ready[channel] for channel in CHANNELS}
        if self.waits:
            found += self._timers(valid, ready, fire)
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
        beats = (lambda fields: 1) if self.lite else (lambda fields: fields["LEN"] + 1)
        last = (lambda fields: 1) if self.lite else (lambda fields: fields["LAST"])
        if fire["AR"]:
            found += self._burst_rules("AR", payload["AR"])
            self._reads.append([beats(payload["AR"])])
        if fire["AW"]:
            found += self._burst_rules("AW", payload["AW"])
            burst = [beats(payload["AW"])] * 2 + [payload["AW"]["ADDR"]]
            complete = False
            while self._early_w and not complete:
                complete = self._w_beat(burst, *self._early_w.popleft(), found, early=True)
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
                if last(payload["R"]) != (burst[0] == 1):
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
            beat = (last(payload["W"]), payload["W"].get("STRB"))
            if not self._writes:
                self._early_w.append(beat)
            elif self._w_beat(self._writes[0], *beat, found):
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
    """Samples the AXI port ``prefix`` of ``dut`` after every rising edge of ``clk`` and feeds
    :class:`ProtocolRules` (:meth:`ProtocolRules.reset_cycle` while the reset is asserted:
    ``rst_n``, active low unless ``reset_active_level``; the master's VALIDs must be low from the
    first cycle of a reset). ``lite``, ``reset_readies`` and ``waits`` as for
    :class:`ProtocolRules` (an AXI4-Lite port: also when it has no ``AWLEN``). ``done`` (a
    handle, the kernel's ``ap_done``): in the clock edge at which it rises nothing may be owed
    (:meth:`settled`). ``r_cycles`` and ``w_cycles`` are the cycles of the R and W data
    handshakes (for the throughput figures), ``errors`` every finding; :meth:`settled` raises
    unless every burst is complete (a bench calls it after every ap_done too)."""

    def __init__(self, dut, prefix, clk, data_width, rst_n=None, *, reset_active_level=False,
                 lite=None, reset_readies=(), waits=None, done=None, names=None,
                 kernel_rules=True):
        """``names``: a function from a signal's AXI name (``ARVALID``) to the DUT's signal name
        (default ``<prefix>_<NAME>``), for a port whose signals are named otherwise (the F2
        shell's: hw.f2.shell). ``kernel_rules`` as for :class:`ProtocolRules`."""
        self.dut, self.prefix, self.clk, self.rst_n = dut, prefix, clk, rst_n
        self._names = names or (lambda name: f"{prefix}_{name}")
        self.reset_active_level = int(bool(reset_active_level))
        if lite is None:
            lite = self._signal("AWLEN", optional=True) is None
        payloads = LITE_PAYLOADS if lite else PAYLOADS
        self.rules = ProtocolRules(data_width // 8, prefix, lite=lite,
                                   reset_readies=reset_readies, waits=waits,
                                   kernel_rules=kernel_rules)
        self.done = done
        self.settled_at_done = 0      # the ap_done rises at which nothing was owed
        self.r_cycles, self.w_cycles = [], []
        self._valid = {ch: self._signal(f"{ch}VALID") for ch in CHANNELS}
        self._ready = {ch: self._signal(f"{ch}READY") for ch in CHANNELS}
        self._fields = {ch: {field: handle for field in payloads[ch]
                             if (handle := self._signal(f"{ch}{field}", optional=True)) is not None}
                        for ch in CHANNELS}
        self._handshake_fields = {ch: tuple(f for f in HANDSHAKE_FIELDS[ch]
                                            if f in self._fields[ch]) for ch in CHANNELS}
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

    def _done_rose(self, was_done):
        """(ap_done now, whether it rose in this edge): the settle check at its rising edge."""
        try:
            done = bool(int(self.done.value))
        except ValueError:
            return was_done, False
        return done, done and not was_done

    async def _run(self):
        rules = self.rules
        # before its first reset a master's outputs are undefined (a garbage start of
        # sim.runner randomises them): the rules hold from the first reset cycle on
        reset_seen = self.rst_n is None
        was_done = True     # (a rise from the first reset on)
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if self.rst_n is not None and self._high(self.rst_n) == self.reset_active_level:
                reset_seen = True
                was_done = True
                valid = {ch: self._high(handle) for ch, handle in self._valid.items()}
                ready = {ch: (valid[ch] or ch in rules.reset_readies) and
                         self._high(self._ready[ch]) for ch in CHANNELS}
                rules.reset_cycle(valid, ready)
                continue
            if not reset_seen:
                rules.cycle += 1
                continue
            rose = False
            if self.done is not None:
                was_done, rose = self._done_rose(was_done)
            valid = {ch: bool(int(handle.value)) for ch, handle in self._valid.items()}
            if not any(valid.values()) and not rules._held and not rules.needs_ready_levels:
                rules.idle_cycle()        # an idle cycle: nothing to check or count
            else:
                self._step(valid)
            if rose:
                rules.settled("in the clock edge ap_done rose")
                self.settled_at_done += 1

    def _step(self, valid):
        rules = self.rules
        # READY matters only beside VALID (and the Python per cycle is the benches' cost), but
        # in the first edge after a reset, where the READYs under test must be low
        levels = rules.reset_readies if rules.needs_ready_levels else ()
        ready = {ch: (valid[ch] or ch in levels) and bool(int(self._ready[ch].value))
                 for ch in CHANNELS}
        payload = {}
        for ch in CHANNELS:
            if not valid[ch]:
                payload[ch] = None
                continue
            # the whole payload where it must be held or compared (a 512-bit WDATA read
            # every cycle would slow the benches), else what the accounting needs
            fields = self._fields[ch]
            if ready[ch] and ch not in rules._held:
                fields = {field: fields[field] for field in self._handshake_fields[ch]}
            payload[ch] = {field: int(handle.value) for field, handle in fields.items()}
        if valid["R"] and ready["R"]:
            self.r_cycles.append(rules.cycle + 1)
        if valid["W"] and ready["W"]:
            self.w_cycles.append(rules.cycle + 1)
        rules.step(valid, ready, payload)
