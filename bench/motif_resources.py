"""Yosys resource and logic-depth table of the emerging-motif engine's parts and kernel.

    python bench/motif_resources.py [--kernel] [--family xcup]

Synthesizes (``synth_xilinx``, :func:`hw.vitis.synth.yosys_report`) the CM-CU row set, the
heavy-hitter store and one whole lane for k = 10 and k = 20 with the default geometry (4 x 2^14
16-bit counters, 64 x 4 store), and with ``--kernel`` the whole default kernel (k = 10..20,
slow: the counter memories' initial values make a ~20 MB Verilog file). Prints a table next to
the thesis's per-sketch and per-CAM figures (Table 5.7 divided by 11; 12-bit counters, KCU1500).
Yosys numbers are not Vivado's: compare, do not promise a fit.
"""

import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from kmerspec.golden.motif import MotifParams  # noqa: E402
from hw.common.countmin import CountMinUnit  # noqa: E402
from hw.motif.h3 import H3Hash  # noqa: E402
from hw.motif.kernel import MotifKernel  # noqa: E402
from hw.motif.lane import MotifLane  # noqa: E402
from hw.motif.store import HeavyHitterStore  # noqa: E402
from hw.vitis.synth import NO_YOSYS, yosys_available, yosys_report  # noqa: E402
from hw.vitis.top import to_verilog  # noqa: E402
from bench.resource_table import part_verilog  # noqa: E402

THESIS_ROWS = [("thesis sketch (per k, Table 5.7 / 11)", 563, 770, 20.0),
               ("thesis CAM (per k, Table 5.7 / 11)", 140, 196, 3.45),
               ("thesis whole system (Table 5.6)", 13078, 13336, 264.0)]


def parts(params: MotifParams, with_kernel: bool):
    for k in (10, 20):
        yield (f"CM-CU rows k={k}", lambda k=k: CountMinUnit(
            params.d, params.cw, params.counter_bits, 2 * k,
            hasher=H3Hash(2 * k, params.cw, params.countmin_seed_words(k))))
        yield (f"store k={k}", lambda k=k: HeavyHitterStore(
            2 * k, params.counter_bits, params.store_sets, params.store_ways,
            params.store_seed_words(k)))
        yield (f"lane k={k}", lambda k=k: MotifLane(k, params))
    if with_kernel:
        yield ("kernel k=10..20 (default)", None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernel", action="store_true", help="also the whole default kernel")
    parser.add_argument("--family", default="xcup")
    args = parser.parse_args()
    if not yosys_available():
        print(NO_YOSYS, file=sys.stderr)
        return 1
    params = MotifParams()
    print(f"| {'part':40} | {'LUT':>6} | {'FF':>6} | {'BRAM36':>6} | {'DSP':>4} | "
          f"{'levels':>6} |")
    print(f"|{'-' * 42}|{'-' * 8}|{'-' * 8}|{'-' * 8}|{'-' * 6}|{'-' * 8}|")
    with tempfile.TemporaryDirectory(prefix="motif-resources-") as directory:
        for name, build in parts(params, args.kernel):
            top = "motif" if build is None else "part"
            text = to_verilog(MotifKernel()) if build is None else \
                part_verilog(build(), top)
            path = pathlib.Path(directory) / f"{top}.v"
            path.write_text(text)
            report = yosys_report(path, top, family=args.family)
            res = report["resources"]
            print(f"| {name:40} | {res['lut']:6} | {res['ff']:6} | {res['bram36']:6g} | "
                  f"{res['dsp']:4} | {report['logic_levels']!s:>6} |", flush=True)
    for name, lut, ff, bram in THESIS_ROWS:
        print(f"| {name:40} | {lut:6} | {ff:6} | {bram:6g} | {0:4} | {'':>6} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
