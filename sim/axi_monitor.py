"""A checker of one AXI4 port, attached to every m_axi port of every kernel bench
(:func:`sim.tb_common.make_axi_ram` starts one beside each memory model).

The rules (ARM IHI 0022, A3.2.1 and A3.4): once a source asserts VALID it holds VALID and the
channel's payload unchanged until the cycle of READY, on every channel -- the master's AR, AW and
W, and (checked as well, it costs nothing more) the slave's R and B; RLAST comes exactly on the
last beat of each AR burst and WLAST on the last beat of each AW burst; no R beat, W beat or B
response arrives that no burst owes; and the bursts the kernel issues are INCR of full-width
beats, aligned, at most 256 beats and never across a 4 KiB boundary (the rules of
:mod:`hw.axi.burst`). A broken handshake rule raises :class:`AxiProtocolError` at once in the
monitor's task, which fails the cocotb test; every finding is also kept in ``errors`` (the burst
rules are only collected there, for ``KernelBench.check_bursts``).

The rule checking is :class:`ProtocolRules` (plain Python, one call per clock cycle with the
sampled values), so that it is tested without a simulator (tests/test_axi_monitor.py); the
cocotb part only samples the signals after each rising edge.
"""

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

__all__ = ["AxiProtocolError", "ProtocolRules", "AxiProtocolMonitor", "PAYLOADS"]

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
#: The fields a handshake needs (the accounting and the burst rules)
HANDSHAKE_FIELDS = {"AR": ("ADDR", "LEN", "SIZE", "BURST"), "AW": ("ADDR", "LEN", "SIZE", "BURST"),
                    "W": ("LAST",), "R": ("LAST",), "B": ()}


class AxiProtocolError(AssertionError):
    pass


class ProtocolRules:
    """The rules of one port, fed one cycle at a time.

    ``step(valid, ready, payload)``: ``valid``/``ready`` map each channel to a bool, ``payload``
    maps a channel to a dict of its fields; it needs the payload of a channel in every cycle in
    which VALID is high (the monitor reads it only then). Returns the findings of this cycle
    (also appended to ``errors``); ``owed()`` is what the bursts issued so far still owe."""

    def __init__(self, beat_bytes, name="axi"):
        self.beat_bytes, self.name = beat_bytes, name
        self.errors = []
        self.cycle = 0
        self._held = {}           # channel -> payload that must be offered again
        self._reads = []          # [beats left] of every accepted AR burst, oldest first
        self._writes = []         # [beats left] of every accepted AW burst still owed W beats
        self._early_w = 0         # W beats before their AW (legal AXI; counted, and owed AWs)
        self._responses = 0       # B responses owed (bursts whose W beats all came)
        self.handshakes = dict.fromkeys(CHANNELS, 0)    # per channel, since the start

    def reset(self):
        self._held.clear()
        self._reads.clear()
        self._writes.clear()
        self._early_w = self._responses = 0

    def owed(self):
        """(R beats, W beats, B responses) still owed by the bursts issued so far."""
        return (sum(left for left, in self._reads),
                sum(left for left, in self._writes), self._responses)

    def _burst_rules(self, channel, fields):
        address, beats = fields["ADDR"], fields["LEN"] + 1
        found = []
        if fields["BURST"] != 1:
            found.append(f"{channel} burst type {fields['BURST']}")
        if 1 << fields["SIZE"] != self.beat_bytes:
            found.append(f"{channel} size {fields['SIZE']}")
        if address % self.beat_bytes:
            found.append(f"{channel} unaligned 0x{address:x}")
        if (address & 0xFFF) + beats * self.beat_bytes > 0x1000:
            found.append(f"{channel} 0x{address:x} len {beats} crosses 4 KiB")
        return found

    def step(self, valid, ready, payload):
        found, fatal = [], []
        for channel in CHANNELS:
            held = self._held.pop(channel, None)
            if held is not None:
                if not valid[channel]:
                    fatal.append(f"{channel}VALID fell before {channel}READY")
                elif payload[channel] != held:
                    changed = sorted(key for key in held if held[key] != payload[channel][key])
                    fatal.append(f"{channel} payload changed before {channel}READY: "
                                 + ", ".join(f"{key} 0x{held[key]:x} -> "
                                             f"0x{payload[channel][key]:x}" for key in changed))
            if valid[channel] and not ready[channel]:
                self._held[channel] = payload[channel]
        fire = {channel: valid[channel] and ready[channel] for channel in CHANNELS}
        for channel in CHANNELS:
            self.handshakes[channel] += fire[channel]
        if fire["AR"]:
            found += self._burst_rules("AR", payload["AR"])
            self._reads.append([payload["AR"]["LEN"] + 1])
        if fire["AW"]:
            found += self._burst_rules("AW", payload["AW"])
            beats = payload["AW"]["LEN"] + 1
            early = min(beats, self._early_w)
            self._early_w -= early
            if early == beats:
                self._responses += 1
            else:
                self._writes.append([beats - early])
        if fire["R"]:
            if not self._reads:
                fatal.append("an R beat no AR burst owes")
            else:
                burst = self._reads[0]
                if payload["R"]["LAST"] != (burst[0] == 1):
                    fatal.append(f"RLAST={payload['R']['LAST']} with {burst[0]} beats of the "
                                 f"burst left")
                burst[0] -= 1
                if not burst[0]:
                    self._reads.pop(0)
        if fire["W"]:
            if not self._writes:
                self._early_w += 1
            else:
                burst = self._writes[0]
                if payload["W"]["LAST"] != (burst[0] == 1):
                    fatal.append(f"WLAST={payload['W']['LAST']} with {burst[0]} beats of the "
                                 f"burst left")
                burst[0] -= 1
                if not burst[0]:
                    self._writes.pop(0)
                    self._responses += 1
        if fire["B"]:
            if not self._responses:
                fatal.append("a B response no completed burst owes")
            else:
                self._responses -= 1
        found = [f"{self.name} cycle {self.cycle}: {text}" for text in found + fatal]
        self.errors += found
        self.cycle += 1
        if fatal:
            raise AxiProtocolError("; ".join(found))
        return found


class AxiProtocolMonitor:
    """Samples the AXI4 port ``prefix`` of ``dut`` after every rising edge of ``clk`` and feeds
    :class:`ProtocolRules` (forgetting everything while ``rst_n`` is low). ``r_cycles`` and
    ``w_cycles`` are the cycles of the R and W data handshakes (for the throughput figures),
    ``errors`` every finding."""

    def __init__(self, dut, prefix, clk, data_width, rst_n=None):
        self.dut, self.prefix, self.clk, self.rst_n = dut, prefix, clk, rst_n
        self.rules = ProtocolRules(data_width // 8, prefix)
        self.r_cycles, self.w_cycles = [], []
        self._valid = {ch: self._signal(f"{ch}VALID") for ch in CHANNELS}
        self._ready = {ch: self._signal(f"{ch}READY") for ch in CHANNELS}
        self._fields = {ch: {field: handle for field in PAYLOADS[ch]
                             if (handle := self._signal(f"{ch}{field}", optional=True)) is not None}
                        for ch in CHANNELS}
        self._task = cocotb.start_soon(self._run())

    def _signal(self, name, optional=False):
        full = f"{self.prefix}_{name}"
        if optional and not hasattr(self.dut, full):
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
                rules.reset()
                rules.cycle += 1
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
                    fields = {field: fields[field] for field in HANDSHAKE_FIELDS[ch]}
                payload[ch] = {field: int(handle.value) for field, handle in fields.items()}
            if valid["R"] and ready["R"]:
                self.r_cycles.append(rules.cycle + 1)
            if valid["W"] and ready["W"]:
                self.w_cycles.append(rules.cycle + 1)
            rules.step(valid, ready, payload)
