"""Yosys resources of the HyperLogLog feature unit (hw/common/feature_unit.py) and the JACC
similarity kernel at V = 80 composed from it.

    python bench/feature_unit.py [--family xcup]

Rows: the similarity kernel's unit (union of two slots of 32 registers, w = 4, p = 14, D = 4)
and the sketch kernel's (one word of 16 registers, no union, 4-input adders), each synthesized
alone with ``synth_xilinx`` (hw/vitis/synth.py: LUT, FF, CARRY, logic levels and the estimated
delay of hw/vitis/timing.py).  The V = 80 line adds 320 units (V D) to the kernel shell
synthesized with the units as black boxes, whose figures come from
``python bench/jacc_similarity_kernel.py --yosys`` (35 minutes; not re-run here): SHELL_V80.
Each row takes under two minutes of Yosys on one core.  Prints a table; asserts nothing.
"""

import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from hw.common.feature_unit import FeatureUnit  # noqa: E402
from hw.vitis.synth import NO_YOSYS, yosys_available, yosys_report  # noqa: E402
from bench.resource_table import part_verilog  # noqa: E402

PARTS = {
    "similarity unit (32 registers, union)": lambda: FeatureUnit(32, 4, 4),
    "sketch unit (16 registers, no union)": lambda: FeatureUnit(16, 4, union=False, arity=4),
}
UNITS_V80 = 80 * 4
# the V = 80 kernel shell with its 320 units as black boxes (docs/jacc_similarity_kernel.md)
SHELL_V80 = {"lut": 39_921, "ff": 30_410, "carry": 4_093}
JACC_FPGA_V80 = {"lut": 349_315, "ff": 354_420}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="xcup")
    args = parser.parse_args(argv)
    if not yosys_available():
        print(f"error: {NO_YOSYS}", file=sys.stderr)
        return 2
    print(f"Yosys synth_xilinx -family {args.family}, w = 4")
    print(f"| {'part':38} | {'LUT':>6} | {'FF':>6} | {'CARRY':>5} | {'levels':>6} | "
          f"{'est ns':>6} | {'latency':>7} |")
    print(f"|{'-' * 40}|{'-' * 8}|{'-' * 8}|{'-' * 7}|{'-' * 8}|{'-' * 8}|{'-' * 9}|")
    results = {}
    with tempfile.TemporaryDirectory(prefix="feature-unit-") as directory:
        for index, (name, make) in enumerate(PARTS.items()):
            unit = make()
            path = pathlib.Path(directory) / f"unit{index}.v"
            path.write_text(part_verilog(unit, f"unit{index}"))
            report = yosys_report(path, f"unit{index}", family=args.family)
            res = results[name] = report["resources"]
            print(f"| {name:38} | {res['lut']:6g} | {res['ff']:6g} | {res['carry']:5g} | "
                  f"{report['logic_levels']:6} | {report['est_delay_ns']:6.2f} | "
                  f"{unit.latency:7} |", flush=True)
    unit = results["similarity unit (32 registers, union)"]
    total = {k: SHELL_V80[k] + UNITS_V80 * unit[k] for k in SHELL_V80}
    print(f"\nJACC similarity V = 80 composed: shell {SHELL_V80['lut']} LUT + {UNITS_V80} x "
          f"{unit['lut']:g} LUT = {total['lut']:g} LUT, {total['ff']:g} FF, "
          f"{total['carry']:g} CARRY; JACC-FPGA (Vivado) {JACC_FPGA_V80['lut']} LUT, "
          f"{JACC_FPGA_V80['ff']} FF; unit budget for the anchor "
          f"{(JACC_FPGA_V80['lut'] - SHELL_V80['lut']) // UNITS_V80} LUT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
