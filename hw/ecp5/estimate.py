"""The project's pre-router timing estimate (hw/vitis/timing.py: logic levels and a delay of
cell delays plus a routing allowance per level) applied to an ECP5 netlist, beside nextpnr.

The method is the one the UltraScale+ figures rely on, unchanged: :func:`estimate_timing` runs on
the Yosys ``synth_ecp5`` netlist (the one nextpnr places) with each ECP5 cell given the role of its
UltraScale+ counterpart (:data:`ROLES`: LUT4 a LUT, PFUMX/L6MUX21 the MUXF7/MUXF8 above LUTs,
CCU2C a carry element with CIN -> COUT its chain, TRELLIS_FF a flip-flop, TRELLIS_DPR16X4 a
LUT-RAM) and the delays of :data:`ECP5_MODEL`.

Cell delays (ns, speed grade 6: the ULX3S's LFE5U-85F-6) are nextpnr-ecp5's own (its timing
database, prjtrellis's import of Lattice Diamond's models) as nextpnr 0.11 reports them for the
segments of its critical paths: :data:`NEXTPNR_ARCS` names each arc, and tests/test_ecp5.py checks
every one a fresh build's report shows against these numbers. LUT: D -> F 0.236; PFUMX/L6MUX21:
M -> OFX 0.256; CCU2C: B -> FCO 0.447 into a chain, FCI -> FCO 0.071 per CCU2C along it (the
exit FCI -> F, 0.403, counts as chain in this method, as CI -> O does for UltraScale+);
TRELLIS_FF: clock to Q 0.525, setup 0. Block RAM (DP16KD, in the role of a RAMB18E2 without its
output register: REGMODE NOREG, the only mode Yosys maps; another is refused): clock to DOA/DOB
5.830, address setup 0.251 (nextpnr's report of a routed ROM whose address path was critical,
2026-11-27; the clock-to-out arc is on the critical path of the CI miniature, whose test checks
it in every run). The LUT-RAM read after a write is not a figure seen here: taken as clock-to-Q
plus a LUT.

Routing: the UltraScale+ model's planning allowance is 0.38 ns per level beside a 0.12 ns LUT, a
route 3.17 LUT delays long; :data:`ECP5_MODEL` keeps that ratio (``route`` = 3.17 x ``lut``), so
the comparison with nextpnr's routed delay tests the rule the UltraScale+ estimate rests on, not a
value fitted to this router.
"""

import copy

from hw.vitis.timing import DELAY_MODEL, estimate_timing

from .report import register_path

__all__ = ["ROLES", "ECP5_MODEL", "NEXTPNR_ARCS", "arc_cell", "translate", "estimate", "compare",
           "comparison_lines", "path_estimate"]

#: the UltraScale+ model's routing allowance per level in LUT delays (0.38 / 0.12)
ROUTE_PER_LUT = DELAY_MODEL["route"] / DELAY_MODEL["lut"]

#: ECP5 cell -> (the UltraScale+ cell type whose role it plays, {ECP5 pin: pin of that role})
ROLES = {
    "LUT4": ("LUT4", {}),
    "PFUMX": ("MUXF7", {"C0": "S"}),
    "L6MUX21": ("MUXF8", {"SD": "S"}),
    "CCU2C": ("CARRY8", {"CIN": "CI", "COUT": "CO"}),
    "TRELLIS_FF": ("FDRE", {"CLK": "C"}),
    "DP16KD": ("RAMB18E2", {}),
    "TRELLIS_DPR16X4": ("RAM16X4D", {"WCK": "WCLK", "RAD[0]": "DPRA0", "RAD[1]": "DPRA1",
                                     "RAD[2]": "DPRA2", "RAD[3]": "DPRA3"}),
    "VLO": ("GND", {}),
    "VHI": ("VCC", {}),
}
#: cells left out: I/O buffers (nextpnr times register-to-register paths of the clock only), the
#: global set/reset and clock buffers, and Yosys's hierarchy records ($scopeinfo: no logic)
DROPPED = {"TRELLIS_IO", "GSR", "SGSR", "PUR", "DCCA", "DCSC", "EHXPLLL", "$scopeinfo"}

def arc_cell(cell) -> str:
    """How :data:`NEXTPNR_ARCS` names a routed cell: its type, and for TRELLIS_COMB its mode
    (a LUT and a carry half have different delays in nextpnr's database)."""
    if cell["type"] == "TRELLIS_COMB":
        return f"TRELLIS_COMB:{str(cell['parameters'].get('MODE', 'LOGIC')).strip()}"
    return cell["type"]


#: (routed cell as :func:`arc_cell` names it, from pin, to pin) -> the :data:`ECP5_MODEL` key
#: that nextpnr's delay for that arc sets (setup arcs: from pin "CLK")
NEXTPNR_ARCS = {
    ("TRELLIS_COMB:LOGIC", "D", "F"): "lut",
    ("TRELLIS_COMB:LOGIC", "M", "OFX"): "muxf",
    ("TRELLIS_COMB:CCU2", "B", "FCO"): "carry_entry",
    ("TRELLIS_FF", "CLK", "Q"): "ff_clk_to_q",
    ("TRELLIS_FF", "CLK", "CE"): "ff_setup",
    ("TRELLIS_FF", "CLK", "DI"): "ff_setup",
    ("DP16KD", "CLK", "DOA"): "bram_clk_to_out",     # clock-to-out arcs: the data pin's name
    ("DP16KD", "CLK", "DOB"): "bram_clk_to_out",     # without its bit index
    ("DP16KD", "CLK", "ADA"): "bram_setup",
    ("DP16KD", "CLK", "ADB"): "bram_setup",
}
#: a CCU2C is two TRELLIS_COMBs in CCU2 mode; nextpnr gives FCI -> FCO 0 in the first and
#: 0.071 ns in the second, so a whole CCU2C's chain delay is the larger of the two
NEXTPNR_CHAIN_ARC = ("TRELLIS_COMB:CCU2", "FCI", "FCO")

#: speed grade -> delays (ns), keys as :data:`hw.vitis.timing.DELAY_MODEL`
ECP5_MODEL = {}


def _speed6():
    """LFE5U-85F-6 (the ULX3S's part): nextpnr-ecp5 0.11's figures as its report gives them
    (:data:`NEXTPNR_ARCS`; tests/test_ecp5.py compares them with a fresh build's report)."""
    m = {k: 0.0 for k in DELAY_MODEL}
    m.update({
        "lut": 0.236,            # TRELLIS_COMB (LOGIC) D -> F
        "muxf": 0.256,           # TRELLIS_COMB M -> OFX (PFUMX / L6MUX21)
        "carry_entry": 0.447,    # CCU2 B -> FCO (an input into the chain)
        "carry_chain": 0.071,    # FCI -> FCO of a whole CCU2C (0 + 0.071 over its halves)
        "ff_clk_to_q": 0.525,    # TRELLIS_FF CLK -> Q
        "ff_setup": 0.0,         # TRELLIS_FF CE (and DI) setup: 0 in nextpnr's report
        "bram_clk_to_out": 5.830,  # DP16KD CLKB -> DOB, REGMODE NOREG
        "bram_setup": 0.251,       # DP16KD ADA setup to CLKA
        # not seen in a report here: a LUT-RAM read after its write clock is taken as a
        # flip-flop's clock-to-Q plus a LUT (its read is a LUT in DPRAM mode)
        "lutram_clk_to_out": 0.525 + 0.236,
        "lutram_setup": 0.0,
        "port_in": 0.0,
        "port_out_setup": 0.0,
    })
    m["route"] = round(ROUTE_PER_LUT * m["lut"], 3)
    return m


ECP5_MODEL["6"] = _speed6()


def _pin(name, index, width):
    return name if width == 1 else f"{name}[{index}]"


def translate(netlist, top, *, only_endpoint_cell=None):
    """A copy of the flattened ``synth_ecp5`` netlist with every cell in its UltraScale+ role
    (:data:`ROLES`), multi-bit pins split into one pin per bit; cells of :data:`DROPPED` removed.
    With ``only_endpoint_cell``, every other clocked cell keeps only its outputs (a start point,
    no endpoint) and the top-level outputs are no endpoints: the estimate's worst path is then the
    worst into that cell."""
    module = copy.deepcopy(netlist["modules"][top])
    cells = {}
    for name, cell in module["cells"].items():
        t = cell["type"]
        if t in DROPPED:
            continue
        if t == "DP16KD" and any(str(cell["parameters"].get(f"REGMODE_{p}", "NOREG")).strip()
                                 != "NOREG" for p in "AB"):
            raise ValueError(f"ECP5 estimate: block RAM {name} has an output register, whose "
                             "delay is not among the stated ones (hw/ecp5/estimate.py)")
        if t not in ROLES:
            raise ValueError(f"ECP5 estimate: no role for cell type {t} ({name}); "
                             "synthesised with DSPs? (the flow uses synth_ecp5 -nodsp)")
        role, pins = ROLES[t]
        conns, dirs = {}, {}
        for pin, bits in cell["connections"].items():
            for i, bit in enumerate(bits):
                ecp5_pin = _pin(pin, i, len(bits))
                new = pins.get(ecp5_pin, pins.get(pin, ecp5_pin))
                if new in ("CI", "CO") and len(bits) > 1:
                    new = f"{new}{i}"
                conns[new] = [bit]
                dirs[new] = cell["port_directions"][pin]
        clocked = t in ("TRELLIS_FF", "TRELLIS_DPR16X4", "DP16KD")
        if only_endpoint_cell is not None and clocked and name != only_endpoint_cell:
            keep = {p for p, d in dirs.items() if d == "output"}
            if t == "TRELLIS_DPR16X4":        # its read address is a combinational arc
                keep |= {p for p in conns if p.startswith("DPRA")}
            conns = {p: b for p, b in conns.items() if p in keep}
            dirs = {p: d for p, d in dirs.items() if p in keep}
        cells[name] = {"type": role, "parameters": cell.get("parameters", {}),
                       "port_directions": dirs, "connections": conns}
    module["cells"] = cells
    if only_endpoint_cell is not None:
        module["ports"] = {n: p for n, p in module.get("ports", {}).items()
                           if p["direction"] == "input"}
    return {"modules": {top: module}}


def estimate(netlist, top, *, clock_hz, speed="6", only_endpoint_cell=None):
    return estimate_timing(translate(netlist, top, only_endpoint_cell=only_endpoint_cell), top,
                           clock_hz=clock_hz, model=ECP5_MODEL[speed], family="ecp5")


def path_estimate(path, routed_cells, speed="6"):
    """The estimate's delay for nextpnr's own critical path (its cells as routed): per logic arc
    the model's delay for that kind of cell (a LUT, a LUT's PFUMX/L6MUX output, a carry cell's
    chain or entry), one routing allowance per routed net, the clock-to-out and setup of the
    path's first and last cell (a flip-flop's or a block RAM's)."""
    m = ECP5_MODEL[speed]
    cells = 0.0
    for arc in path["logic_arcs"]:
        kind = arc_cell(routed_cells[arc["cell"]]) if arc["cell"] in routed_cells else "?"
        if kind == "TRELLIS_COMB:CCU2":
            # a CCU2C is two halves in the routed netlist: half its chain delay each
            if arc["from"] == "FCI":
                cells += m["carry_chain"] / (2 if arc["to"] == "FCO" else 1)
            else:
                cells += m["carry_entry"]
        elif arc["to"] == "OFX":
            cells += m["muxf"]
        elif kind == "DCCA":
            continue
        else:
            cells += m["lut"]
    def is_bram(cell):
        return cell in routed_cells and routed_cells[cell]["type"] == "DP16KD"
    start = m["bram_clk_to_out"] if is_bram(path["start_cell"]) else m["ff_clk_to_q"]
    end = m["bram_setup"] if is_bram(path["end_cell"]) else m["ff_setup"]
    return round(start + cells + path["routing_hops"] * m["route"] + end, 3)


def compare(netlist, top, summary, routed, *, clock_hz, speed="6"):
    """The estimate beside nextpnr: the whole design's worst path, and the worst path into the
    endpoint of nextpnr's critical path, with nextpnr's figures for it."""
    whole = estimate(netlist, top, clock_hz=clock_hz, speed=speed)
    rows = {"model": ECP5_MODEL[speed], "speed": speed,
            "design": {"estimate_levels": whole["logic_levels"],
                       "estimate_ns": whole["est_delay_ns"],
                       "estimate_path": whole["est_delay_path"]}}
    crit = register_path(summary)
    if crit:
        fmax = next(iter(summary["fmax"].values()))["achieved_mhz"]
        rows["design"].update(nextpnr_ns=round(1e3 / fmax, 3), nextpnr_cells=crit["cells"])
        if crit["end_cell"] in netlist["modules"][top]["cells"]:
            same = estimate(netlist, top, clock_hz=clock_hz, speed=speed,
                            only_endpoint_cell=crit["end_cell"])
            rows["critical_endpoint"] = {
                "end": crit["end"], "nextpnr_ns": crit["delay_ns"],
                "nextpnr_logic_ns": crit["logic_ns"], "nextpnr_routing_ns": crit["routing_ns"],
                "nextpnr_cells": crit["cells"], "nextpnr_routing_hops": crit["routing_hops"],
                "estimate_levels": same["logic_levels"], "estimate_ns": same["est_delay_ns"],
                "estimate_path": same["est_delay_path"],
                "estimate_of_nextpnr_path_ns": path_estimate(
                    crit, next(iter(routed["modules"].values()))["cells"], speed)}
    return rows


def comparison_lines(rows):
    m = rows["model"]
    lines = [f"model (speed {rows['speed']}): LUT {m['lut']} ns, route allowance {m['route']} ns "
             f"per level, carry entry {m['carry_entry']} ns, FF clock-to-Q {m['ff_clk_to_q']} ns",
             f"{'':<34}{'estimate':>18}{'nextpnr':>18}"]
    d = rows["design"]
    lines.append(f"{'worst path of the design':<34}"
                 f"{d['estimate_ns']:>9.2f} ns {d['estimate_levels']:>2} lv"
                 + (f"{d['nextpnr_ns']:>9.2f} ns {d['nextpnr_cells']:>2} cl"
                    if "nextpnr_ns" in d else ""))
    c = rows.get("critical_endpoint")
    if c:
        lines.append(f"{'worst into nextpnr critical end':<34}"
                     f"{c['estimate_ns']:>9.2f} ns {c['estimate_levels']:>2} lv"
                     f"{c['nextpnr_ns']:>9.2f} ns {c['nextpnr_cells']:>2} cl")
        lines.append(f"{'nextpnr critical path, its cells':<34}"
                     f"{c['estimate_of_nextpnr_path_ns']:>9.2f} ns {'':>5}"
                     f"{c['nextpnr_ns']:>9.2f} ns (routing {c['nextpnr_routing_ns']:.2f} ns "
                     f"over {c['nextpnr_routing_hops']} nets, logic {c['nextpnr_logic_ns']:.2f})")
        lines.append(f"  nextpnr critical end: {c['end']}")
    return lines
