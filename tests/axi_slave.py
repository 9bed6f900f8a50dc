"""The slave side of one AXI4 port in the Amaranth simulator, for the unit tests of the burst
reader and writer and of the Vitis top (tests/test_axi_protocol.py), checked cycle by cycle by
the protocol rules the cocotb benches use (:class:`sim.axi_monitor.ProtocolRules`): a broken
rule raises :class:`~sim.axi_monitor.AxiProtocolError` from the simulation at once, naming the
rule.

What a slave may do and real ones do (ARM IHI 0022, A3.3.1: a slave may wait for AWVALID or
WVALID, or both, before AWREADY, and before WREADY), each a constructor option:

* ``ready(channel, cycle)``: AR/AW/WREADY each cycle, e.g. :func:`random_ready` (seeded random
  stalls of 1..7 cycles) or :func:`held_low` (a window);
* ``aw_after_w``: AWREADY only once the buffered W beats hold the whole burst on offer (a slave
  that waits for WVALID, and for all of the burst's data, before it takes the address). A master
  that waits for AWREADY before WVALID deadlocks against it: after ``patience`` cycles of an AW
  on offer with no W beat offered, the model raises, naming A3.3.1;
* ``w_after_aw``: WREADY only while an accepted AW burst still owes W beats (a slave that takes
  no data before their address);
* ``response_latency`` (low, high): each B response offered a random number of cycles in that
  range after its burst's AW and last W beat (in order); ``data_rate``: the probability that an
  R beat or B response due is offered in a cycle (RVALID/BVALID random);
* ``rst_n``: a signal sampled every cycle; while it is low the rules of reset apply
  (:meth:`~sim.axi_monitor.ProtocolRules.reset_cycle`), and with ``slave_reset`` the model
  forgets everything as an interconnect reset with the master does.

Faults of the slave for the master's checks: ``read_beat(burst, beat)`` may return ``(RLAST,
RID, RRESP)`` to override the correct values (None: correct, the burst's own ARID); ``bresp``/
``bid`` likewise per burst (default: OKAY, the burst's AWID; the rules then check the master
side only: ``check_slave=False``).

``expected_writes`` ([(address, length)], e.g. the writer's commands): the bytes the W beats
must write, exactly (``exact_writes``) or within them (``KERNEL_WSTRB`` of
:meth:`~sim.axi_monitor.ProtocolRules.expect_writes`).

``watch`` (name: signal) are sampled every cycle into ``watched[name]``. ``max_wait`` (channel:
cycles, e.g. ``{"R": 32}``) raises when that channel's VALID waits longer for READY
(``AXI4_RECM_RREADY_MAX_WAIT``, which the AXI firewall of an Alveo shell reports; set where a
master must not hold READY low, e.g. during an abort). :meth:`settled` raises unless every burst
is complete and no W beat lacks its AW. ``kernel_rules=False``: ARM's rules only, not the
kernels' burst rules (a memory behind an interconnect sees narrow bursts).
"""

import random
from collections import deque

from sim.axi_monitor import CHANNELS, PAYLOADS, AxiProtocolError, ProtocolRules

__all__ = ["AxiSlave", "random_ready", "held_low", "always_ready"]

#: the fields the model reads of each master channel
MASTER_PAYLOAD = {"AR": PAYLOADS["AR"], "AW": PAYLOADS["AW"], "W": ("DATA", "STRB", "LAST")}


def always_ready(channel, cycle):
    return True


def held_low(channel, low_from, low_until):
    """READY of ``channel`` low in cycles [low_from, low_until), else high."""
    return lambda ch, cycle: not (ch == channel and low_from <= cycle < low_until)


def random_ready(seed, probability=0.3, channels=("AR", "AW", "W"), base=always_ready):
    """READY of each of ``channels`` low in random runs of 1..7 cycles (a run starts with
    ``probability`` in a cycle), seeded, one generator per channel; and ``base``'s."""
    rng = random.Random(seed)
    runs = dict.fromkeys(channels, 0)
    seen = {}

    def ready(channel, cycle):
        if channel not in runs:
            return base(channel, cycle)
        # one decision per channel and cycle, however often it is asked
        if seen.get(channel, (None,))[0] != cycle:
            if runs[channel]:
                runs[channel] -= 1
                low = True
            elif rng.random() < probability:
                runs[channel] = rng.choice((1, 1, 1, 2, 3, 7)) - 1
                low = True
            else:
                low = False
            seen[channel] = (cycle, low)
        return not seen[channel][1] and base(channel, cycle)
    return ready


class AxiSlave:
    def __init__(self, axi, *, ready=always_ready, data_rate=1.0, seed=0,
                 read_beat=lambda burst, beat: None, bresp=lambda burst: 0,
                 bid=None, watch=None, aw_after_w=False, w_after_aw=False,
                 response_latency=(0, 0), patience=64, rst_n=None, slave_reset=True,
                 check_slave=True, max_wait=None, name="axi", kernel_rules=True,
                 expected_writes=None, exact_writes=True):
        self.axi, self.ready, self.data_rate = axi, ready, data_rate
        self.watch = watch or {}
        self.watched = {name: [] for name in self.watch}   # their values, cycle by cycle
        self.rng = random.Random(seed)
        self.read_beat, self.bresp, self.bid = read_beat, bresp, bid
        self.aw_after_w, self.w_after_aw = aw_after_w, w_after_aw
        self.response_latency, self.patience = response_latency, patience
        self.rst_n, self.slave_reset = rst_n, slave_reset
        self.check_slave = check_slave
        self.max_wait = dict(max_wait or {})
        self.rules = ProtocolRules(len(axi.WDATA) // 8, name, slave_reset=slave_reset,
                                   kernel_rules=kernel_rules)
        if expected_writes is not None:
            self.rules.expect_writes(expected_writes, exact=exact_writes)
        self.cycle = 0
        self.ar = []            # (cycle, address, beats) of every accepted AR
        self.aw = []            # (cycle, address, beats)
        self.ar_ids, self.aw_ids = [], []      # the ID of every accepted AR and AW
        self.r_beats = []       # (cycle, burst index, beat index)
        self.w_beats = []       # (cycle, data, strobe, last)
        self.b_responses = []   # cycle of every B handshake
        self._forget()

    def _forget(self):
        self._reads = []        # [burst index, beats left]
        self._writes = []       # [burst index, beats left] in AW order
        self._early = 0         # W beats taken before their AW
        self._responses = deque()   # (cycle from which it may be offered, burst index)
        self._aw_waiting = 0    # cycles an AW has waited for its W beats with no WVALID
        self._waits = dict.fromkeys(CHANNELS, 0)
        self._offered = {"R": False, "B": False}    # offered in the cycle before, not taken

    @property
    def violations(self):
        """Every finding (each one raised when found)."""
        return self.rules.errors

    @property
    def owed_reads(self):
        return sum(left for _, left in self._reads)

    @property
    def owed_writes(self):
        return sum(left for _, left in self._writes) + len(self._responses)

    def settled(self, label=""):
        self.rules.settled(label)

    def _fields(self, channel):
        return [getattr(self.axi, f"{channel}{field}") for field in MASTER_PAYLOAD[channel]]

    def _readies(self, ctx):
        readies = {channel: bool(self.ready(channel, self.cycle))
                   for channel in ("AR", "AW", "W")}
        if self.aw_after_w:
            burst_beats = ctx.get(self.axi.AWLEN) + 1
            readies["AW"] &= self._early >= burst_beats
        if self.w_after_aw:
            readies["W"] &= bool(self._writes)
        return readies

    def _respond(self, burst):
        low, high = self.response_latency
        latest = self._responses[-1][0] if self._responses else 0
        self._responses.append((max(latest, self.cycle + 1 + self.rng.randint(low, high)),
                                burst))

    async def run(self, ctx):
        axi = self.axi
        master = ["AR", "AW", "W"]
        while True:
            # (this cycle's reset, as far as it is known before the edge: to idle the slave side)
            in_reset = self.rst_n is not None and not ctx.get(self.rst_n)
            quiet = in_reset and self.slave_reset     # an interconnect reset with the master
            readies = {channel: ready and not quiet
                       for channel, ready in self._readies(ctx).items()}
            for channel, ready in readies.items():
                ctx.set(getattr(axi, f"{channel}READY"), ready)
            # an R beat or B response once offered stays until taken (A3.2.1)
            read = None
            if self._reads and not quiet and (self._offered["R"]
                                              or self.rng.random() < self.data_rate):
                read = self._reads[0]
            ctx.set(axi.RVALID, read is not None)
            if read is not None:
                burst, left = read
                beat = self.ar[burst][2] - left
                rlast, rid, rresp = self.read_beat(burst, beat) or (left == 1,
                                                                    self.ar_ids[burst], 0)
                ctx.set(axi.RLAST, rlast)
                ctx.set(axi.RID, rid)
                ctx.set(axi.RRESP, rresp)
                ctx.set(axi.RDATA, (self.ar[burst][1] >> 2) + beat)
            respond = (bool(self._responses) and self._responses[0][0] <= self.cycle
                       and not quiet and (self._offered["B"]
                                          or self.rng.random() < self.data_rate))
            ctx.set(axi.BVALID, respond)
            if respond:
                ctx.set(axi.BRESP, self.bresp(self._responses[0][1]))
                burst = self._responses[0][1]
                ctx.set(axi.BID, self.aw_ids[burst] if self.bid is None else self.bid(burst))
            signals = [axi.ARVALID, axi.AWVALID, axi.WVALID, axi.RREADY, axi.BREADY,
                       axi.RLAST, axi.RRESP, axi.RID, axi.BRESP, axi.BID, *self.watch.values()]
            for channel in master:
                signals += self._fields(channel)
            if self.rst_n is not None:
                signals.append(self.rst_n)
            _, _, *values = await ctx.tick().sample(*signals)
            if self.rst_n is not None:
                in_reset = not values.pop()
            valid = dict(zip(master, map(bool, values[:3])))
            valid.update(R=read is not None, B=respond)
            ready = {**readies, "R": bool(values[3]), "B": bool(values[4])}
            rlast, rresp, rid, bresp, bid = values[5:10]
            for name, value in zip(self.watch, values[10:]):
                self.watched[name].append(value)
            payload, at = {}, 10 + len(self.watch)
            for channel in master:
                fields = MASTER_PAYLOAD[channel]
                payload[channel] = dict(zip(fields, values[at:at + len(fields)]))
                at += len(fields)
            payload["R"] = {"DATA": 0, "RESP": rresp, "LAST": rlast, "ID": rid}
            payload["B"] = {"RESP": bresp, "ID": bid}
            if in_reset:
                self.rules.reset_cycle(valid, ready)
                if self.slave_reset:
                    self._forget()
                self.cycle += 1
                continue
            taken = {channel: valid[channel] and ready[channel] for channel in CHANNELS}
            self._offered = {channel: valid[channel] and not ready[channel]
                             for channel in ("R", "B")}
            if not self.check_slave:
                for channel in ("R", "B"):
                    valid[channel] = ready[channel] = False
            self._check_waits(valid, ready)
            self.rules.step(valid, ready, payload)
            self._account(taken, payload, read)
            self.cycle += 1

    def _check_waits(self, valid, ready):
        for channel, limit in self.max_wait.items():
            self._waits[channel] = self._waits[channel] + 1 if valid[channel] \
                and not ready[channel] else 0
            if self._waits[channel] > limit:
                side = "M" if channel in ("R", "B") else "S"
                raise AxiProtocolError(
                    f"{self.rules.name} cycle {self.cycle}: AXI4_REC{side}_{channel}READY_MAX_WAIT"
                    f": {channel}VALID has waited {limit} cycles for {channel}READY")
        if self.aw_after_w:
            waiting = valid["AW"] and not ready["AW"] and not valid["W"]
            self._aw_waiting = self._aw_waiting + 1 if waiting else 0
            if self._aw_waiting > self.patience:
                raise AxiProtocolError(
                    f"{self.rules.name} cycle {self.cycle}: A3.3.1 (write dependencies): "
                    f"AWVALID has waited {self.patience} cycles for AWREADY, which this slave "
                    f"gives once the burst's W beats are in, and no WVALID came: the master "
                    f"must not wait for AWREADY before asserting WVALID")

    def _account(self, taken, payload, read):
        if taken["AR"]:
            self.ar.append((self.cycle, payload["AR"]["ADDR"], payload["AR"]["LEN"] + 1))
            self.ar_ids.append(payload["AR"]["ID"])
            self._reads.append([len(self.ar) - 1, payload["AR"]["LEN"] + 1])
        if taken["AW"]:
            beats = payload["AW"]["LEN"] + 1
            self.aw.append((self.cycle, payload["AW"]["ADDR"], beats))
            self.aw_ids.append(payload["AW"]["ID"])
            early = min(beats, self._early)
            self._early -= early
            if early == beats:
                self._respond(len(self.aw) - 1)
            else:
                self._writes.append([len(self.aw) - 1, beats - early])
        if taken["R"]:
            self.r_beats.append((self.cycle, read[0], self.ar[read[0]][2] - read[1]))
            read[1] -= 1
            if not read[1]:
                self._reads.pop(0)
        if taken["W"]:
            w = payload["W"]
            self.w_beats.append((self.cycle, w["DATA"], w["STRB"], w["LAST"]))
            if not self._writes:
                self._early += 1
            else:
                self._writes[0][1] -= 1
                if not self._writes[0][1]:
                    self._respond(self._writes.pop(0)[0])
        if taken["B"]:
            self.b_responses.append(self.cycle)
            self._responses.popleft()
