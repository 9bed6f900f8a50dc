"""The ULX3S self-test at full size through the open ECP5 flow, and its routed netlist simulated.

    python bench/ecp5_build.py [-o DIR] [--board ulx3s] [--no-postroute] [-P KERNEL.NAME=VALUE ...]

Runs ``python -m hw.build --board ulx3s`` (the board file's geometry: the sketch core at lanes = 2,
bytes_per_lane = 4, k = 31, p = 14, fmix64 in LUTs; 2 rounds of 2 genomes of 4,096 bytes generated
on chip; Yosys synth_ecp5 -nodsp, nextpnr-ecp5 for the LFE5U-85F-6 at the board's 25 MHz,
ecppack), then the self-test on nextpnr's routed netlist in Icarus (``sim.ecp5_postroute``), and
prints one table: utilisation, Fmax, the critical path, the project's estimate beside nextpnr's
figures (none at p = 14: its block RAM has no stated delay; at p = 8 the core uses LUT-RAM), the
post-route result against the golden checksum, and how long each step took. docs/ecp5.md says
what was measured with it.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hw.ecp5.flow import NAME  # noqa: E402
from sim.ecp5_postroute import simulate  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--out", default="build/ecp5_bench")
    p.add_argument("--board", default="ulx3s")
    p.add_argument("--no-postroute", action="store_true")
    p.add_argument("-P", "--param", action="append", default=[])
    args = p.parse_args(argv)
    t = time.monotonic()
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
        rows.append(("critical path", f"{c['start']} -> {c['end']}"))
        rows.append(("  nextpnr", f"{c['delay_ns']:.2f} ns: {c['cells']} cells, logic "
                                  f"{c['logic_ns']:.2f} ns, routing {c['routing_ns']:.2f} ns over "
                                  f"{c['routing_hops']} nets, clock-to-Q + setup "
                                  f"{c['clk_to_q_ns'] + c['setup_ns']:.2f} ns"))
    est = report.get("estimate")
    if est:
        d = est["design"]
        rows.append(("estimate, design worst", f"{d['estimate_ns']:.2f} ns, "
                                               f"{d['estimate_levels']} levels "
                                               f"({d['estimate_path']['start']} -> "
                                               f"{d['estimate_path']['end']})"))
        c = est.get("critical_endpoint")
        if c:
            rows.append(("estimate, into nextpnr's end", f"{c['estimate_ns']:.2f} ns, "
                                                         f"{c['estimate_levels']} levels"))
            rows.append(("estimate of nextpnr's path", f"{c['estimate_of_nextpnr_path_ns']:.2f} ns"
                                                       f" (nextpnr {c['nextpnr_ns']:.2f} ns)"))
    rows.append(("build (yosys, nextpnr, ecppack)", f"{build_s:.0f} s, exit {rc}"))
    if not args.no_postroute and rc == 0:
        t = time.monotonic()
        r = simulate(bdir, log=lambda msg: print(f"postroute: {msg}", flush=True))
        verdict = "PASS" if r["pass"] and not r["fail"] else "FAIL"
        rows.append(("post-route simulation", f"{verdict} after {r['cycles']:,} cycles "
                                              f"({r['cells']:,} routed cells; golden "
                                              f"{r['expected']['checksum']}), "
                                              f"{time.monotonic() - t:.0f} s"))
    width = max(len(k) for k, _ in rows)
    print()
    print(f"| {'':<{width}} | {args.board} ({NAME}) |")
    print(f"|{'-' * (width + 2)}|{'-' * 40}|")
    for k, v in rows:
        print(f"| {k:<{width}} | {v} |")
    return rc


if __name__ == "__main__":
    sys.exit(main())
