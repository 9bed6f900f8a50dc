"""Pre-Vivado timing estimate of a Yosys ``synth_xilinx`` netlist: the worst register-to-register
path in logic levels and in nanoseconds under a stated UltraScale+ delay model.

Every path starts at a clocked output (flip-flop Q, block RAM / UltraRAM data out, a registered
DSP48E2 P, LUT-RAM/SRL data out, a top-level input) and ends at a clocked input (flip-flop D/CE/
reset, block RAM address/data/enable, a registered DSP48E2 input, LUT-RAM write side, a top-level
output).  Block RAMs, DSPs and LUT-RAMs stay in the netlist (Yosys's ``ltp`` only sees what is left
after deleting them), so their clock-to-out and setup are counted; an unregistered DSP48E2 input
is a path *through* the DSP (one level, :data:`DELAY_MODEL` ``dsp_comb``).

Logic levels count, as Vivado does, every LUT, every CARRY8/CARRY4 of a chain, MUXF7/8/9, a
LUT-RAM or SRL read and a combinational DSP.  The delay of a path is

    clock-to-out(start) + sum over its cells of (cell delay + routing allowance) + setup(end)

with no routing allowance on the dedicated connections (carry chain CO -> CI, LUT -> MUXF).

:data:`DELAY_MODEL` values (ns, UltraScale+ -2) and where each comes from:

* sourced: the block RAM clock-to-out (1.5 ns without and 0.4 ns with the output register) is
  AMD UG949 ("Optimizing Paths with Dedicated Blocks and Macro Primitives"); the DSP48E2 figures
  are bounded by DS923 v1.20 Table "DSP48 Slice Switching Characteristics", -2 at 0.85 V: FMAX
  775 MHz with every register (1.29 ns register to register inside the DSP), 544 MHz without
  MREG (1.84 ns), 410 MHz without pipeline registers (2.44 ns; ``dsp_comb`` 2.5 ns covers it);
* estimated (typical values of Vivado timing reports for -2 UltraScale+ parts, not DS923 table
  entries: the current DS923 no longer tabulates CLB LUT/carry delays nor the block RAM
  clock-to-out, and no older revision was reachable): ``lut``, ``muxf``, ``carry_*``, the
  flip-flop clock-to-out and setup, the RAM/DSP setups, LUT-RAM and UltraRAM figures;
* a planning allowance: ``route`` 0.38 ns per level, so a LUT level costs 0.5 ns.

Yosys maps arithmetic to CARRY4 only; Vivado places a CARRY8 on UltraScale(+), so there a CARRY4
counts half a level and half a CARRY8's chain delay (levels rounded up at the end). An estimate to
rank paths and catch deep logic before Vivado, not a sign-off: under this model a register-to-
register path of 7 LUT levels already takes about 4 ns, so it is stricter than the usual "7-8
levels at 250 MHz" rule of thumb, and a path into a block RAM input pays 0.5 ns of setup.
"""

import functools
import math
import re
from collections import defaultdict

__all__ = ["DELAY_MODEL", "estimate_timing"]

DELAY_MODEL = {
    "ff_clk_to_q": 0.10,
    "ff_setup": 0.05,
    "lut": 0.12,
    "route": 0.38,
    "muxf": 0.10,
    "carry_entry": 0.20,          # S / DI / a routed CI -> CO, O of one CARRY8
    "carry_chain": 0.05,          # CI -> CO of each further CARRY8 of a chain
    "bram_clk_to_out": 1.50,      # UG949: no output register
    "bram_clk_to_out_reg": 0.40,  # UG949: with DOA_REG/DOB_REG
    "bram_setup": 0.50,
    "uram_clk_to_out": 1.60,
    "uram_setup": 0.50,
    "dsp_clk_to_out_preg": 0.40,
    "dsp_clk_to_out_mreg": 1.60,  # M register -> ALU -> P
    "dsp_clk_to_out_inreg": 2.30,  # A/B register -> multiplier -> P
    "dsp_comb": 2.50,             # A/B/C/D -> P with no register in the DSP
    "dsp_setup": 0.50,
    "lutram_clk_to_out": 0.90,
    "lutram_setup": 0.40,
    "port_in": 0.10,              # top-level inputs: from a register outside
    "port_out_setup": 0.05,
}

#: Xilinx primitive cell types by kind (the patterns exclude each other)
_CELL_KINDS = [(kind, re.compile(pattern)) for kind, pattern in (
    ("lut", r"^(LUT[1-6]|INV|BUF)$"),
    ("muxf", r"^MUXF[789]$"),
    ("carry", r"^CARRY[48]$"),
    ("ff", r"^(FD[RSCP]E|LD[CP]E|FDRE_1|FDSE_1)$"),
    ("bram", r"^RAMB(18|36)E[12]$"),
    ("uram", r"^URAM288"),
    ("dsp", r"^DSP48E[12]$"),
    ("lutram", r"^(RAM\d+M\d*|RAM\d+X\d[SD])$"),
    ("srl", r"^SRLC?(16|32)E$"),
    ("ignored", r"^(IBUF|OBUF|IBUFG|BUFG|BUFGCE|GND|VCC)$"))]
#: the read-address pins of a LUT RAM and of an SRL: their combinational inputs
_READ_ADDRESS = {"lutram": re.compile(r"^(ADDR[A-H]|A\d?|DPRA\d?|A\d+)$"),
                 "srl": re.compile(r"^A\d?$")}


@functools.cache
def _cell_kind(cell_type: str) -> str | None:
    """The kind of a primitive cell type (None: unknown, timed like a LUT)."""
    return next((kind for kind, pattern in _CELL_KINDS if pattern.match(cell_type)), None)

def _param(cell, name, default=0):
    v = cell.get("parameters", {}).get(name)
    if v is None:
        return default
    try:
        return int(v, 2) if isinstance(v, str) and set(v) <= {"0", "1"} else int(v)
    except (TypeError, ValueError):
        return default


def _dsp_input_registered(cell, pin):
    for prefix, reg in (("A", "AREG"), ("B", "BREG"), ("C", "CREG"), ("D", "DREG")):
        if pin == prefix or (pin.startswith(prefix) and pin[len(prefix):].isdigit()):
            return _param(cell, reg) > 0
    # control pins (OPMODE, ALUMODE, INMODE, CARRYIN, CE*, RST*) are registered by default
    return True


def _dsp_clk_to_out(cell, m):
    if _param(cell, "PREG", 1) > 0:
        return m["dsp_clk_to_out_preg"]
    if _param(cell, "MREG", 1) > 0:
        return m["dsp_clk_to_out_mreg"]
    if _param(cell, "AREG", 1) > 0 or _param(cell, "BREG", 1) > 0:
        return m["dsp_clk_to_out_inreg"]
    return None


def _names(module):
    """bit -> readable net name (a user name if any net carries the bit)."""
    best = {}
    for name, net in module.get("netnames", {}).items():
        hidden = net.get("hide_name", 0) or name.startswith("$")
        for i, bit in enumerate(net["bits"]):
            if isinstance(bit, str):
                continue
            label = name if len(net["bits"]) == 1 else f"{name}[{i}]"
            if bit not in best or (best[bit][0] and not hidden):
                best[bit] = (hidden, label)
    return {b: v[1] for b, v in best.items()}


#: how many of the slowest endpoints a report lists (``worst_endpoints``)
WORST_ENDPOINTS = 8
#: how many groups of failing endpoints (by name, numbers aside) a report lists
FAILING_GROUPS = 24


def estimate_timing(netlist, top, *, clock_hz=None, model=DELAY_MODEL, family="xcup"):
    """``netlist``: Yosys ``write_json`` of a flattened ``synth_xilinx`` design.  Returns
    ``{"logic_levels", "logic_levels_path", "est_delay_ns", "est_delay_path", "clock_period_ns",
    "meets_clock", "delay_model"}``; a path is ``{"start", "end", "levels", "delay_ns"}``."""
    module = netlist["modules"][top]
    m = model
    ultrascale = family in ("xcu", "xcup")
    # Each bit: (arrival ns, levels, start bit) for the worst delay and for the most levels.
    start_delay = {}                  # bit -> clock-to-out of a clocked output
    comb_arcs = defaultdict(list)     # output bit -> [(input bit, arc delay, wire kind, level)]
    cell_of = {}                      # output bit -> cell type, for the path's cell list
    endpoints = []                    # (input bit, setup, where: for naming the end)
    driver = {}

    for port in module.get("ports", {}).values():
        for bit in port["bits"]:
            if isinstance(bit, str):
                continue
            if port["direction"] == "input":
                start_delay[bit] = m["port_in"]
            else:
                endpoints.append((bit, m["port_out_setup"], ("port", bit, None)))

    for cname, cell in module["cells"].items():
        t = cell["type"]
        kind = _cell_kind(t)
        if kind == "ignored":                  # buffers and constants pass through
            ins = [b for p, bs in cell["connections"].items()
                   if cell["port_directions"].get(p) == "input" for b in bs if not isinstance(b, str)]
            outs = [b for p, bs in cell["connections"].items()
                    if cell["port_directions"].get(p) == "output" for b in bs if not isinstance(b, str)]
            for o in outs:
                for i in ins:
                    comb_arcs[o].append((i, 0.0, "none", 0))
            continue
        dirs = cell["port_directions"]
        inputs = [(p, b) for p, bs in cell["connections"].items() if dirs.get(p) == "input"
                  for b in bs if not isinstance(b, str)]
        outputs = [(p, b) for p, bs in cell["connections"].items() if dirs.get(p) == "output"
                   for b in bs if not isinstance(b, str)]
        for p, b in outputs:
            driver[b] = (t, p)
            cell_of[b] = t
        if kind == "ff":
            for p, b in outputs:
                start_delay[b] = m["ff_clk_to_q"]
            q = next((b for p, b in outputs), None)
            endpoints += [(b, m["ff_setup"], ("q", q, p)) for p, b in inputs if p != "C"]
        elif kind in ("bram", "uram"):
            bram = kind == "bram"
            for p, b in outputs:
                reg = _param(cell, "DOA_REG" if "A" in p[:5] else "DOB_REG") if bram else 0
                start_delay[b] = (m["bram_clk_to_out_reg"] if reg else m["bram_clk_to_out"]) \
                    if bram else m["uram_clk_to_out"]
            setup = m["bram_setup"] if bram else m["uram_setup"]
            endpoints += [(b, setup, ("pin", cname, p)) for p, b in inputs if not p.startswith("CLK")]
        elif kind == "dsp":
            c2o = _dsp_clk_to_out(cell, m)
            for p, b in outputs:
                if c2o is not None:
                    start_delay[b] = c2o
            for p, b in inputs:
                if p == "CLK":
                    continue
                if _dsp_input_registered(cell, p) or c2o is not None:
                    endpoints.append((b, m["dsp_setup"], ("pin", cname, p)))
                else:
                    for _, o in outputs:
                        comb_arcs[o].append((b, m["dsp_comb"], "route", 1))
        elif kind in ("lutram", "srl"):
            addr = _READ_ADDRESS[kind]
            for p, b in outputs:
                start_delay[b] = m["lutram_clk_to_out"]
            for p, b in inputs:
                base = re.sub(r"\d+$", "", p)
                if addr.match(p) or addr.match(base):
                    for _, o in outputs:
                        comb_arcs[o].append((b, m["lut"], "route", 1))
                elif not p.startswith("CLK") and p not in ("WCLK", "CLK"):
                    endpoints.append((b, m["lutram_setup"], ("pin", cname, p)))
        elif kind == "carry":
            # Yosys maps arithmetic to CARRY4 only; on UltraScale(+) a CARRY4 is half of the
            # CARRY8 that Vivado places, so it counts half a level (rounded up at the end)
            # and half a CARRY8's chain delay.
            half = t == "CARRY4" and ultrascale
            for p, b in inputs:
                chained = p in ("CI", "CI_TOP")
                delay = m["carry_chain"] if chained else m["carry_entry"]
                for _, o in outputs:
                    comb_arcs[o].append((b, delay / 2 if half and chained else delay,
                                         "carry" if chained else "route", 0.5 if half else 1))
        elif kind == "muxf":
            for p, b in inputs:
                for _, o in outputs:
                    comb_arcs[o].append((b, m["muxf"], "route" if p == "S" else "muxf", 1))
        else:                         # LUTs, and anything unknown counted like a LUT
            for p, b in inputs:
                for _, o in outputs:
                    comb_arcs[o].append((b, m["lut"], "route", 1))

    # Dedicated wires: CO -> CI of a carry chain, LUT/MUXF -> the MUXF above it.
    def wire(i, kind):
        if kind == "none":
            return 0.0
        d = driver.get(i)
        if kind == "carry" and d and _cell_kind(d[0]) == "carry":
            return 0.0
        if kind == "muxf" and d and _cell_kind(d[0]) in ("lut", "muxf"):
            return 0.0
        return m["route"]

    # Longest paths over the combinational DAG, iteratively (chains are thousands deep).
    by_delay, by_levels = {}, {}
    via_delay, via_levels = {}, {}    # bit -> the input bit on its worst path (for tracing)
    for b, c2o in start_delay.items():
        by_delay[b] = (c2o, 0, b)
        by_levels[b] = (0, c2o, b)

    def resolve(bit):
        stack = [bit]
        while stack:
            b = stack[-1]
            if b in by_delay:
                stack.pop()
                continue
            arcs = comb_arcs.get(b)
            if not arcs:                       # undriven or constant: no path
                by_delay[b] = (0.0, 0, None)
                by_levels[b] = (0, 0.0, None)
                stack.pop()
                continue
            pending = [i for i, *_ in arcs if i not in by_delay]
            if pending:
                stack.extend(pending)
                if len(stack) > 50_000_000:
                    raise RuntimeError("timing estimate: runaway traversal")
                continue
            best_d = best_l = None
            for i, delay, flag, level in arcs:
                w = wire(i, flag)
                d, lv, s = by_delay[i]
                cand = (d + w + delay, lv + level, s)
                if best_d is None or cand[0] > best_d[0]:
                    best_d, via_delay[b] = cand, i
                lv2, d2, s2 = by_levels[i]
                cand2 = (lv2 + level, d2 + w + delay, s2)
                if best_l is None or cand2[:2] > best_l[:2]:
                    best_l, via_levels[b] = cand2, i
            by_delay[b], by_levels[b] = best_d, best_l
            stack.pop()

    names = _names(module)
    worst_d = worst_l = None
    ranked = []                       # (delay, levels, start, bit, where) of every endpoint
    for bit, setup, where in endpoints:
        resolve(bit)
        d, lv, s = by_delay[bit]
        if s is not None:
            total = d + m["route"] + setup
            ranked.append((total, lv, s, bit, where))
            if worst_d is None or total > worst_d[0]:
                worst_d = (total, lv, s, bit, where)
        lv2, d2, s2 = by_levels[bit]
        if s2 is not None and (worst_l is None or (lv2, d2) > worst_l[:2]):
            worst_l = (lv2, d2 + m["route"] + setup, s2, bit, where)

    def end_name(bit, where):
        kind, ref, pin = where
        if kind == "q" and ref is not None:           # a register: its name, and which input
            return f"{names.get(ref, ref)} ({pin})"
        if kind == "pin":                              # a RAM/DSP input pin
            return f"{names.get(bit, bit)} -> {ref}.{pin}"
        return names.get(bit, str(bit))

    def cells(bit, via):
        """The cell types along the worst path into ``bit``, from its start."""
        chain = []
        while bit in via and len(chain) < 10_000:
            chain.append(cell_of.get(bit, "?"))
            bit = via[bit]
        return list(reversed(chain))

    def path(w, delay_first):
        if w is None:
            return None
        d, lv = (w[0], w[1]) if delay_first else (w[1], w[0])
        return {"start": names.get(w[2], str(w[2])), "end": end_name(w[3], w[4]),
                "levels": math.ceil(lv), "delay_ns": round(d, 3),
                "cells": cells(w[3], via_delay if delay_first else via_levels)}

    period = 1e9 / clock_hz if clock_hz else None
    est = round(worst_d[0], 3) if worst_d else None
    if worst_l is not None:           # whole levels (half-levels of CARRY4 pairs rounded up)
        worst_l = (math.ceil(worst_l[0]),) + tuple(worst_l[1:])
    ranked.sort(key=lambda w: w[0], reverse=True)
    # like Vivado's failing endpoints: how many register/RAM/DSP inputs the estimate puts over
    # the clock period, and the first few of them (a worst path per endpoint)
    failing = sum(1 for w in ranked if w[0] > period) if period else None
    # the failing endpoints by name with every number a '#' (all bits of a register, the same
    # register of every lane or bank): which logic is over, not only its slowest bit
    groups = {}
    for w in ranked[:failing or 0]:
        key = re.sub(r"\d+", "#", end_name(w[3], w[4]))
        group = groups.setdefault(key, {"end": key, "count": 0, "delay_ns": round(w[0], 3),
                                        "start": names.get(w[2], str(w[2]))})
        group["count"] += 1
    return {"logic_levels": worst_l[0] if worst_l else 0,
            "failing_endpoints": failing,
            "failing_groups": list(groups.values())[:FAILING_GROUPS],
            "worst_endpoints": [{k: v for k, v in path(w, True).items() if k != "cells"}
                                for w in ranked[:WORST_ENDPOINTS]],
            "logic_levels_path": path(worst_l, False),
            "est_delay_ns": est, "est_delay_path": path(worst_d, True),
            "clock_period_ns": round(period, 3) if period else None,
            "meets_clock": (est <= period) if (period and est is not None) else None,
            "delay_model": dict(model)}
