"""Print the Yosys resource and timing-estimate table of built kernels, each next to its
published anchor, and the board's budget (the sum of its SLRs' figures, or the device minus its
shell for a board file without [slr]: hw.vitis.fit.budget, boards/*.toml).

    python bench/resources.py [BUILD_DIR]            # tables from BUILD_DIR/kernels/*/resources.json
    python bench/resources.py --run [--board f1] [--kernels checksum,sketch] [-P k.p=v]
                                                     # synthesize now (slow), then print

BUILD_DIR defaults to build/hw (what ``python -m hw.build --resources`` writes).  ``--json`` prints
the reports as one JSON list instead.  Per kernel: LUT/FF/BRAM36/URAM/DSP (Yosys synth_xilinx, not
Vivado), logic levels and est_delay_ns of the worst register-to-register path (hw/vitis/timing.py,
its delay model stated there) against the board's clock period, and a verdict line against the
goals of issue 13 (at or below the anchor, <= 8 levels, est_delay_ns below the clock period).
"""

import argparse
import json
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from hw.build import canonical_name, main as build_main, resource_table  # noqa: E402
from hw.vitis.boards import load_board  # noqa: E402
from hw.vitis.fit import budget  # noqa: E402

#: Published figures per registry kernel (Vivado, as published by the JACC-FPGA paper and the
#: JSD thesis; see docs/): the goals.
#: Keyed by the registry's kernel names (hw.build.KERNELS), as resources.json names them.
ANCHORS = {
    "jacc_sketch": ("JACC-FPGA paper", {"lut": 92077, "ff": 111800, "bram36": 324, "dsp": 1536}),
    "jacc_similarity": ("JACC-FPGA V=80", {"lut": 349315, "ff": 354420, "bram36": 179}),
    "jsd_builder": ("thesis, 8 lanes", {"lut": 75219, "dsp": 960}),
    "jsd_similarity": ("thesis, 24 piv.", {"lut": 757827, "dsp": 4032}),
    "motif": ("CM-CU thesis", {"lut": 13078, "ff": 13336, "bram36": 264, "dsp": 0}),
}
#: Kernels whose anchor is a reference only: issue 13 sets area goals for the sketch, the JACC
#: similarity and the two JSD kernels; the motif kernel keeps 16-bit counters, 32-bit control
#: counts and an exactly forwarded set-associative store where the thesis had 12-bit counters and
#: a simpler CAM (docs/motif_kernel.md), so its thesis figure is printed for comparison.
REFERENCE_ONLY = {"motif"}
#: The resources issue 13's area goals name per kernel (the other figures of an anchor are shown
#: beside them, their excess named as no goal).
GOAL_RESOURCES = {"jacc_sketch": ("lut", "dsp", "bram36"), "jacc_similarity": ("lut",),
                  "jsd_builder": ("lut", "dsp"), "jsd_similarity": ("lut",)}
MAX_LEVELS = 8
#: groups of failing endpoints printed under a kernel's verdict
SHOWN_GROUPS = 8


def load_reports(build_dir):
    reps = []
    for p in sorted(pathlib.Path(build_dir).glob("kernels/*/resources.json")):
        reps.append(json.loads(p.read_text()))
    return reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", default="build/hw")
    ap.add_argument("--run", action="store_true", help="run python -m hw.build --resources first")
    ap.add_argument("--board", default="f1")
    ap.add_argument("--kernels")
    ap.add_argument("-P", "--param", action="append", default=[])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    bdir = a.build_dir
    if a.run:
        if a.build_dir == "build/hw":
            bdir = tempfile.mkdtemp(prefix="kmer-resources-")
        args = ["--board", a.board, "-o", bdir, "--resources", "--no-run"]
        if a.kernels:
            args += ["--kernels", a.kernels]
        for p in a.param:
            args += ["-P", p]
        rc = build_main(args)
        if rc:
            return rc
    reps = load_reports(bdir)
    if not reps:
        print(f"no resources.json under {bdir}/kernels (run python -m hw.build --resources)",
              file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(reps, indent=2))
        return 0
    board = load_board(reps[0].get("board") or a.board)
    left, source = budget(board)
    print(resource_table(reps, anchors=ANCHORS,
                         budget=(f"{board['name']} budget", left)))
    print(f"budget = {'sum of the SLRs' if board.get('slr') else 'device minus shell'} "
          f"({source}); each kernel must also fit one SLR: docs/link_plan.md")
    for r in reps:
        print("\n".join(verdict_lines(r)))
    return 0


def verdict_lines(report):
    """The verdict, then the largest groups of endpoints over the clock (by name, numbers aside)."""
    return [verdict(report)] + [
        f"  {group['count']:>6} over, up to {group['delay_ns']} ns: {group['end']}"
        f" (from {group['start']})"
        for group in report.get("failing_groups", [])[:SHOWN_GROUPS]]


def verdict(report):
    """One line: which goals of issue 13 the kernel meets."""
    name = canonical_name(report.get("kernel", report["top"]))
    parts = []
    if name in ANCHORS:
        label, fig = ANCHORS[name]
        over = [k.upper() for k, v in fig.items() if report["resources"].get(k, 0) > v]
        if name in REFERENCE_ONLY:
            parts.append(f"{'at or below' if not over else 'above'} {label} in "
                         f"{', '.join(over) or 'every resource'} (a reference, not an area goal)")
        else:
            goals = [k.upper() for k in GOAL_RESOURCES[name]]
            over_goal = [k for k in over if k in goals]
            parts.append(f"at or below anchor ({label}) in {', '.join(goals)}" if not over_goal
                         else f"ABOVE anchor ({label}) in {', '.join(over_goal)}")
            others = [k for k in over if k not in goals]
            if others:
                parts[-1] += f", above it in {', '.join(others)} (no goal)"
        if name == "jsd_similarity":
            parts[-1] += f" [anchor at 24 pivots; built with {report.get('params', {}).get('pivots', '?')}]"
    levels = report.get("logic_levels")
    if levels is not None:
        parts.append(f"{levels} levels {'<=' if levels <= MAX_LEVELS else '>'} {MAX_LEVELS}")
    est, period = report.get("est_delay_ns"), report.get("clock_period_ns")
    if est is not None and period:
        parts.append(f"est {est} ns {'<=' if est <= period else '>'} {period} ns clock")
        failing = report.get("failing_endpoints")
        if failing:
            parts[-1] += f" ({failing} endpoint{'s' if failing > 1 else ''} over)"
    return f"{name}: " + "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
