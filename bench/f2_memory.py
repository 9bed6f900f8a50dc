"""DDR or HBM for the F2 CL: the JACC similarity kernel's all-pairs rate on each, by its cycle
model (a model, not a card).

    python bench/f2_memory.py [--n 128110]

The kernel reads one 512-bit beat per cycle at 250 MHz (16 GB/s) while it streams; its cycle
model (hw.jacc_similarity.kernel.call_cycles_model, checked cycle for cycle against the RTL by
tests/test_jacc_similarity_kernel.py) gives a call's cycles with a memory that keeps up. Here the
stream is slowed to the memory's rate ``r`` (beats per cycle of the kernel's port): each group's
beats take ``beats_per_group / r`` cycles. Memories (boards/f2.toml, aws-fpga's IP files):

* DDR4 through sh_ddr: 2,133 MT/s x 8 bytes = 17.1 GB/s, one 512-bit AXI4 port at the kernels'
  250 MHz: at most 1 beat per cycle, shared by every unit (and PCIS);
* HBM (cl_hbm.xci: 32 AXI3 ports of 256 bits at 450 MHz = 14.4 GB/s each, 460.8 GB/s in all;
  AWS measured 426.28 GB/s reading with all 32, cl_mem_perf/README.md): a unit on one port,
  through a 512-to-256-bit width and a 250-to-450 MHz clock converter, gets 14.4 x 426.28 / 460.8
  = 13.3 GB/s = 0.83 beats per cycle; units on different ports do not share.

The memories' figures are read from boards/f2.toml ([memory.DDR], [memory.HBM]).

The pivots a unit can hold are limited by its SLR's LUTs (boards/f2.toml less 10 %): the LUTs of
the kernel at V pivots are modelled as 4,377 V - 1,322, the line through the two measured points
(V = 80: 348,860 whole-kernel Yosys, hw/vitis/kernel_area.toml; V = 16: 68,710 composed,
docs/jacc_similarity_kernel.md); a CL's units share one build, so one V for all. Prints a table;
asserts nothing.
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from hw.jacc_similarity.kernel import drain_cycles, write_tail  # noqa: E402
from hw.vitis.boards import load_board  # noqa: E402
from hw.vitis.fit import slr_budgets  # noqa: E402
from kmerspec.kernels.jacc_similarity import Params, plan_calls  # noqa: E402

BOARD = load_board("f2")
CLOCK_HZ = BOARD["kernel_clock_hz"]
PORT_BYTES_PER_S = 64 * CLOCK_HZ                         # 512 bits at the kernels' clock
_DDR, _HBM = BOARD["memory"]["DDR"], BOARD["memory"]["HBM"]
DDR_PEAK = _DDR["transfers_per_s"] * _DDR["data_bits"] // 8            # DDR4-2133, 64 data bits
HBM_PORT_PEAK = _HBM["port_data_bits"] // 8 * _HBM["port_clock_hz"]    # 256 bits at 450 MHz
#: AWS's measured read rate with all HBM ports (cl_mem_perf/README.md) over their peak
HBM_MEASURED_FRACTION = 426.28e9 / (_HBM["ports"] * HBM_PORT_PEAK)
START_LATENCY = 9 + 100          # ap_start to the first beat: simulation's 9, plus ~100 of DDR


def lut_of(pivots: int) -> float:
    return 4_377 * pivots - 1_322


def call_cycles_at(params, groups: int, rate: float) -> float:
    """A call's cycles when the memory delivers ``rate`` beats per cycle (<= 1)."""
    beats = params.beats_per_group / min(1.0, rate)
    period = max(beats, drain_cycles(params) + 1)
    return START_LATENCY + beats + (groups - 1) * period + drain_cycles(params) + write_tail(
        params)


def run_seconds(pivots: int, n: int, units: int, rate: float) -> float:
    """Kernel seconds of all pairs of ``n`` sketches over ``units`` units of V = ``pivots``,
    each streaming at ``rate`` beats per cycle; calls shared out in turn."""
    params = Params(pivots, 4, 14, 4)
    calls = plan_calls(n, params, None)
    cycles = [0.0] * units
    for index, call in enumerate(calls):
        cycles[index % units] += call_cycles_at(params, call.groups, rate)
    return max(cycles) / CLOCK_HZ


def largest_pivots(budget_lut: float) -> int:
    pivots = 4
    while lut_of(pivots + 4) <= budget_lut:
        pivots += 4
    return pivots


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128_110, help="sketches (default: RefSeq 2022)")
    args = parser.parse_args(argv)
    lut = {name: budget["lut"] for name, budget, _, _ in slr_budgets(BOARD)}
    sketch_lut = 88_166                  # jacc_sketch beside it in kmer_jacc (kernel_area.toml)
    ddr_rate = min(1.0, DDR_PEAK / PORT_BYTES_PER_S)
    hbm_rate = HBM_PORT_PEAK * HBM_MEASURED_FRACTION / PORT_BYTES_PER_S
    print(f"memory rate per 512-bit port at 250 MHz: DDR {ddr_rate:.2f} beats/cycle shared by "
          f"all units (peak {DDR_PEAK / 1e9:.1f} GB/s), HBM {hbm_rate:.2f} per unit on its own "
          f"port ({HBM_PORT_PEAK / 1e9:.1f} GB/s x {HBM_MEASURED_FRACTION:.3f} measured by AWS)")
    print("SLR LUT budgets (boards/f2.toml, less 10 %): "
          + ", ".join(f"{s} {v:,.0f}" for s, v in lut.items()))
    configurations = [
        ("kmer_jacc: 1 unit in SLR2 beside the sketch kernel", 1,
         largest_pivots(lut["SLR2"]) if lut_of(80) > lut["SLR2"] else 80),
        ("1 unit, the largest V one SLR holds (SLR2)", 1, largest_pivots(lut["SLR2"])),
        ("3 units, one per SLR, the sketch kernel in SLR0", 3,
         largest_pivots(min(lut["SLR0"] - sketch_lut, lut["SLR1"], lut["SLR2"]))),
        ("3 units, one per SLR, a similarity-only CL", 3, largest_pivots(min(lut.values()))),
    ]
    print(f"all pairs of N = {args.n:,} sketches, p = 14, w = 4, D = 4, 250 MHz, the cycle model "
          f"with the stream at the memory's rate; start latency {START_LATENCY} cycles")
    head = (f"{'configuration':<52}{'units':>6}{'V':>5}{'LUT/unit':>10}"
            f"{'DDR s':>9}{'DDR M/s':>9}{'HBM s':>9}{'HBM M/s':>9}")
    print(head)
    print("-" * len(head))
    pairs = args.n * (args.n - 1) / 2
    for label, units, pivots in configurations:
        ddr = run_seconds(pivots, args.n, units, ddr_rate / units)
        hbm = run_seconds(pivots, args.n, units, hbm_rate)
        print(f"{label:<52}{units:>6}{pivots:>5}{lut_of(pivots):>10,.0f}{ddr:>9.1f}"
              f"{pairs / ddr / 1e6:>9.1f}{hbm:>9.1f}{pairs / hbm / 1e6:>9.1f}")


if __name__ == "__main__":
    main()
