"""Yosys resources and logic depth of the JACC sketch-construction kernel, next to JACC-FPGA.

    python bench/jacc_sketch_kernel.py [--kernel] [--family xcup] [--parts NAME,...]

Synthesizes (``synth_xilinx -family xcup`` through :func:`hw.vitis.synth.yosys_report`) the parts
of the default configuration (T = 8 lanes x B = 8 bytes, 512-bit bus, k = 31, p = 14, w = 4): one
fmix64 pipeline (its DSP count per instance), one HLL update unit, one whole lane (parser, k-mer
buffer, 8 canonicalizer + fmix64 + HLL pipelines, merge tree) scaled by T, and the shared part
(chunk decoder, feature unit, record writer). ``--parts min-count`` synthesizes the
minimum-count prefilter stage instead (SPEC 7; not in the default kernel). ``--kernel`` synthesizes the whole default kernel
with its AXI infrastructure instead of adding parts (slow: tens of minutes). "levels" is the
longest combinational path in logic levels (the Fmax proxy; the target clock is 250 MHz).
Yosys numbers are not Vivado's: compare, do not promise a fit.
"""

import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from hw.sketch.chunk import ChunkDecoder  # noqa: E402
from hw.sketch.fmix64 import Fmix64  # noqa: E402
from hw.sketch.hll_update import HllUpdate  # noqa: E402
from hw.sketch.kernel import JaccSketchKernel  # noqa: E402
from hw.sketch.lane import SketchLane  # noqa: E402
from hw.sketch.merge import FeatureAccumulator, RecordWriter  # noqa: E402
from hw.sketch.min_count import MinCountFilter  # noqa: E402
from kmerspec.golden.mincount import MinCountParams  # noqa: E402
from hw.vitis.synth import yosys_report  # noqa: E402
from hw.vitis.top import to_verilog  # noqa: E402
from bench.resource_table import ResourceTable, part_verilog  # noqa: E402

LANES = 8
JACC_FPGA = ("JACC-FPGA sketch kernel (paper)", {"lut": 92077, "ff": 111800, "bram36": 324,
                                                  "uram": 0, "dsp": 1536})


def parts():
    yield "fmix64 pipeline (one of 64)", 64, lambda: Fmix64()
    yield "HLL update unit 2^14 x 4 (one of 64)", 64, lambda: HllUpdate(14, 4)
    yield "lane: parser..merge tree, 8 pipelines", LANES, \
        lambda: SketchLane(bytes_per_lane=8, k=31, p=14, w=4)
    yield "chunk decoder (8 lanes)", 1, lambda: ChunkDecoder(lanes=8, bytes_per_lane=8)
    yield "feature unit", 1, lambda: FeatureAccumulator(14, 4)
    yield "record writer (512-bit)", 1, lambda: RecordWriter(512, 14, 4)


def optional_parts():
    """Parts not in the default kernel, synthesized only when named by ``--parts``: the
    minimum-count prefilter stage a lane would need (SPEC 7, docs/min_count.md)."""
    yield "min-count filter 4 x 2^16 x 8 bit", 0, \
        lambda: MinCountFilter(depth=4, width_bits=16, counter_bits=8)
    yield "min-count filter 4 x 2^16 x 2 bit", 0, \
        lambda: MinCountFilter(depth=4, width_bits=16, counter_bits=2)
    yield "min-count stage of a lane (FIFO, serializer, filter 4 x 2^18 x 2 bit)", 0, \
        lambda: SketchLane(bytes_per_lane=8, k=31, p=14, w=4, prefilter=MinCountParams(
            mc_depth=4, mc_width_bits=18, mc_counter_bits=2)).stage


TABLE = ResourceTable(42)
row = TABLE.row


def main():
    args = TABLE.start(__doc__, "--kernel", "synthesize the whole kernel")
    if args is None:
        return 1
    wanted = args.wanted
    keys = ("lut", "ff", "bram36", "uram", "dsp")
    total = dict.fromkeys(keys, 0)
    deepest = 0
    failed = []
    with tempfile.TemporaryDirectory(prefix="sketch-resources-") as directory:
        if args.kernel:
            jobs = [("whole kernel (default)", 1, lambda: to_verilog(JaccSketchKernel()),
                     "jacc_sketch")]
        else:
            jobs = [(name, scale, lambda b=build: part_verilog(b(), "part"), "part")
                    for name, scale, build in parts()
                    if not wanted or any(w in name for w in wanted)]
            jobs += [(name, scale, lambda b=build: part_verilog(b(), "part"), "part")
                     for name, scale, build in optional_parts()
                     if wanted and any(w in name for w in wanted)]
        for name, scale, text, top in jobs:
            path = pathlib.Path(directory) / f"{top}.v"
            path.write_text(text())
            try:
                report = yosys_report(path, top, family=args.family)
            except (RuntimeError, subprocess.SubprocessError) as error:
                print(f"| {name:42} | yosys failed: {error}", flush=True)
                failed.append(name)
                continue
            if report["lut_mapper"] != "abc9":
                name += " (abc)"
            res = report["resources"]
            deepest = max(deepest, report["logic_levels"] or 0)
            print(row(name, res, report["logic_levels"]), flush=True)
            if name.startswith("lane") or scale == 1:  # fmix64 and HLL units are in the lane
                for key in keys:
                    total[key] += res[key] * (scale if name.startswith("lane") else 1)
            if scale > 1:
                print(row(f"  x {scale}", {key: res[key] * scale for key in keys}), flush=True)
    if not args.kernel and not wanted:
        missing = f" (without {', '.join(failed)})" if failed else ""
        print(row(f"sum: 8 lanes + shared parts{missing}", total, deepest))
    print(row(*JACC_FPGA))
    return 0


if __name__ == "__main__":
    sys.exit(main())
