"""The ULX3S self-test at full size through the open ECP5 flow, and its routed netlist simulated.

    python bench/ecp5_build.py [-o DIR] [--board ulx3s] [--no-postroute] [-P KERNEL.NAME=VALUE ...]
    python bench/ecp5_build.py --from-build build/ulx3s [--record]   # a finished hw.build run

Runs ``python -m hw.build --board ulx3s`` (the board file's geometry: the sketch core at lanes = 2,
bytes_per_lane = 4, k = 31, p = 14, fmix64 in LUTs; 2 rounds of 2 genomes of 4,096 bytes generated
on chip; Yosys synth_ecp5 -nodsp, nextpnr-ecp5 for the LFE5U-85F-6 at the board's 25 MHz,
ecppack), then the self-test on nextpnr's routed netlist in Verilator (``sim.ecp5_postroute``),
and prints one table: utilisation, Fmax, the critical path, the project's estimate beside
nextpnr's figures, the post-route result against the golden checksum, and how long each step
took. ``--from-build DIR`` reads a finished ``python -m hw.build --board ulx3s`` run's directory
instead of building (the README's set-up, then that command, then this); ``--record`` stores the
table as bench/results/ecp5_build.json for bench/benchmarks_doc.py. docs/ecp5.md says what was
measured with it.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hw.ecp5.flow import NAME, check_route  # noqa: E402
from hw.vitis.boards import load_board  # noqa: E402
from sim.ecp5_postroute import simulate  # noqa: E402


def path_text(path: dict) -> str:
    return f"{path['start']} -> {path['end']}"


def estimate_text(path: dict) -> str:
    """The project's timing estimate of a path (hw/ecp5): its delay and logic levels."""
    return f"{path['estimate_ns']:.2f} ns, {path['estimate_levels']} levels"


def report_rows(report: dict) -> list[tuple[str, str]]:
    """The table's rows of a build's ecp5.json: geometry, input, utilisation, Fmax, nextpnr's
    critical paths and the project's estimate beside them."""
    rows = []
    info = report["selftest"]
    s = info["sketch"]
    rows.append(("geometry", f"lanes={s['lanes']} bytes_per_lane={s['bytes_per_lane']} "
                             f"k={s['k']} p={s['p']} w={s['w']}"))
    rows.append(("input", f"{info['input']['rounds']} rounds x {s['lanes']} genomes of "
                          f"{info['input']['genome_bytes']} bytes (seed {info['input']['seed']})"))
    for cell in ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D"):
        used, available = report["utilisation"].get(cell, (0, 0))
        if available:
            rows.append((cell, f"{used:,} / {available:,} ({100 * used / available:.1f} %)"))
    for clock, f in report["fmax"].items():
        rows.append((f"Fmax {clock}", f"{f['achieved_mhz']:.2f} MHz (constraint "
                                      f"{f['constraint_mhz']:.2f} MHz)"))
    for c in report["critical_paths"]:
        rows.append(("critical path", path_text(c)))
        rows.append(("  nextpnr", f"{c['delay_ns']:.2f} ns: {c['cells']} cells, logic "
                                  f"{c['logic_ns']:.2f} ns, routing {c['routing_ns']:.2f} ns over "
                                  f"{c['routing_hops']} nets, clock-to-Q + setup "
                                  f"{c['clk_to_q_ns'] + c['setup_ns']:.2f} ns"))
    est = report.get("estimate")
    if est:
        d = est["design"]
        rows.append(("estimate, design worst",
                     f"{estimate_text(d)} ({path_text(d['estimate_path'])})"))
        c = est.get("critical_endpoint")
        if c:
            rows.append(("estimate, into nextpnr's end", estimate_text(c)))
            rows.append(("estimate of nextpnr's path", f"{c['estimate_of_nextpnr_path_ns']:.2f} ns"
                                                       f" (nextpnr {c['nextpnr_ns']:.2f} ns)"))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--out", default="build/ecp5_bench")
    p.add_argument("--board", default="ulx3s")
    p.add_argument("--no-postroute", action="store_true")
    p.add_argument("-P", "--param", action="append", default=[])
    p.add_argument("--from-build", metavar="DIR",
                   help="a finished hw.build run's board directory (e.g. build/ulx3s): no build")
    p.add_argument("--record", action="store_true",
                   help="store the table as bench/results/ecp5_build.json")
    args = p.parse_args(argv)
    t = time.monotonic()
    if args.from_build:
        bdir, build_s = pathlib.Path(args.from_build).resolve(), None
        if not (bdir / f"{NAME}.bit").exists():
            print(f"error: {bdir}: no {NAME}.bit (the build did not finish)", file=sys.stderr)
            return 2
        # nextpnr's report of that build, read again, and the estimate beside it as this
        # checkout computes it (ecp5.json rewritten, as the build's own step writes it)
        rc = check_route(bdir, load_board(args.board), lambda msg: print(msg, flush=True),
                         lambda msg: print(f"error: {msg}", file=sys.stderr))
    else:
        cmd = [sys.executable, "-m", "hw.build", "--board", args.board, "-o", args.out]
        for item in args.param:
            cmd += ["-P", item]
        print("$", " ".join(cmd), flush=True)
        rc = subprocess.call(cmd, cwd=ROOT)
        build_s = time.monotonic() - t
        bdir = ROOT / args.out / args.board
    if not (bdir / "ecp5.json").exists():
        print(f"error: {bdir}: the build wrote no ecp5.json (exit {rc})", file=sys.stderr)
        return 2
    report = json.loads((bdir / "ecp5.json").read_text())
    info = report["selftest"]
    rows = report_rows(report)
    if build_s is not None:
        rows.append(("build (yosys, nextpnr, ecppack)", f"{build_s:.0f} s, exit {rc}"))
    if (bdir / f"{NAME}.bit").exists():
        rows.append(("bitstream", f"{NAME}.bit, {(bdir / f'{NAME}.bit').stat().st_size:,} bytes"))
    postroute = None
    if not args.no_postroute and rc == 0:
        t = time.monotonic()
        r = simulate(bdir, log=lambda msg: print(f"postroute: {msg}", flush=True))
        verdict = "PASS" if r["pass"] and not r["fail"] else "FAIL"
        postroute = {"verdict": verdict, "cycles": r["cycles"], "cells": r["cells"],
                     "simulator": r["simulator"], "golden": r["expected"]["checksum"],
                     "seconds": round(time.monotonic() - t)}
        rows.append(("post-route simulation", f"{verdict} after {r['cycles']:,} cycles "
                                              f"({r['cells']:,} routed cells, {r['simulator']}; "
                                              f"golden {r['expected']['checksum']}), "
                                              f"{postroute['seconds']} s"))
    width = max(len(k) for k, _ in rows)
    print()
    print(f"| {'':<{width}} | {args.board} ({NAME}) |")
    print(f"|{'-' * (width + 2)}|{'-' * 40}|")
    for k, v in rows:
        print(f"| {k:<{width}} | {v} |")
    if args.record:
        from bench import record
        command = (f"python bench/ecp5_build.py --from-build {args.from_build} --record"
                   if args.from_build else "python bench/ecp5_build.py --record " + " ".join(
                       f"-P {item}" for item in args.param))
        record.write("ecp5_build", {
            "command": command.strip(), "board": args.board, "part": info.get("part", ""),
            "geometry": rows[0][1], "input": rows[1][1],
            "utilisation": {cell: report["utilisation"][cell] for cell in
                            ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD")
                            if cell in report["utilisation"]},
            "fmax": report["fmax"], "critical_paths": [
                {k: c[k] for k in ("start", "end", "delay_ns", "logic_ns", "routing_ns",
                                   "routing_hops", "cells")} for c in report["critical_paths"]],
            "estimate": {k: v for k, v in (report.get("estimate") or {}).items()
                         if k in ("design", "critical_endpoint")},
            "postroute": postroute, "table": [list(row) for row in rows]})
    return rc


if __name__ == "__main__":
    sys.exit(main())
