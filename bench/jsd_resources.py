"""Yosys resource and logic-depth table of the JSD engine's parts, next to the thesis.

    python bench/jsd_resources.py [--kernels] [--family xcup] [--parts NAME,...]

Synthesizes (``synth_xilinx -family xcup`` through :func:`hw.vitis.synth.yosys_report`) the parts
of the default geometry (k = 31, s = 10, 5 x 2^14 32-bit Count-Min, 2^12 x 8 PQA, 512-bit bus):
per lane the 8-way sampler; shared by the lanes (one back end per builder since 2026-11-26) the
5-seed murmur3 finish (from the sampler's mixed blocks), the Count-Min rows and the PQA insert
network with the banks of all lanes, and the one entropy unit; and a one-pivot similarity core.
Then it sums the lane's parts, scales them by T = 8 and adds the shared parts, and scales the
pivot unit by the thesis' 24 pivots. A whole builder lane (parser, k-mer buffer, canonicalizers,
sampler, FIFO, the control of its banks and its record multiplexer) is synthesized too: 8 of it
and the shared parts are the builder kernel without its chunk decoder, serializer, lane and
record multiplexers and AXI plumbing. The full murmur3 pipeline
(``Murmur3Hashes``, block mixing included) is printed for reference, outside the sums.
``--kernels`` also synthesizes the whole default kernels (very slow). Yosys numbers are not Vivado's: compare, do not promise a fit.
"""

import pathlib
import sys
import tempfile
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from amaranth.hdl import UnusedElaboratable  # noqa: E402
from hw.common.countmin import CountMinUnit  # noqa: E402
from hw.common.pipeline import bank_bits  # noqa: E402
from hw.jsd.builder import QueueBuilderCore  # noqa: E402
from hw.jsd.entropy import EntropyUnit  # noqa: E402
from hw.jsd.kernel import JsdSimilarityKernel, QueueBuilderKernel  # noqa: E402
from hw.jsd.murmur3 import Murmur3Hashes, Murmur3Seeds  # noqa: E402
from hw.jsd.pqa import PqaInsert  # noqa: E402
from hw.jsd.sampler import Sampler  # noqa: E402
from hw.jsd.similarity import JsdSimilarityCore  # noqa: E402
from kmerspec.kernels import jsd_builder, jsd_similarity  # noqa: E402
from hw.vitis.synth import yosys_report  # noqa: E402
from hw.vitis.top import to_verilog  # noqa: E402
from bench.resource_table import ResourceTable, part_verilog  # noqa: E402

# a lane is built inside its core (which knows the lane's flush); the rest of the core is unused
warnings.filterwarnings("ignore", category=UnusedElaboratable)

LANES = 8
#: Count-Min + PQA banks of the default builder: ``record_banks`` per lane, all behind the one
#: Count-Min pipeline and PQA network (memories per bank, logic shared)
BANKS = LANES * jsd_builder.Params().record_banks
THESIS_PIVOTS = 24
THESIS_ROWS = [("thesis build kernel (8 builders)", 75219, None, 960),
               ("thesis similarity kernel (24 pivots)", 757827, None, 4032)]


PER_LANE, SHARED, APART, WHOLE_LANE = "per lane", "shared", "apart", "whole lane"


def parts():
    """(name, scale, build, role): PER_LANE parts are summed (``scale`` copies per lane) and
    scaled by the lanes, SHARED parts (one per builder kernel) added once, the WHOLE_LANE part
    scaled by the lanes and added to the shared parts, APART parts stand alone."""
    yield "murmur3_32 x 5 seeds (with block mixing)", 1, lambda: Murmur3Hashes(range(5)), APART
    yield "sampler (8 k-mers/beat)", 1, lambda: Sampler(8, 10), PER_LANE
    yield "murmur3 finish x 5 seeds, shared", 1, lambda: Murmur3Seeds(range(5)), SHARED
    yield f"Count-Min rows 5 x 2^14 x 32, {BANKS} banks, shared", 1, \
        lambda: CountMinUnit(5, 14, 32, 32 + bank_bits(BANKS), read_latency=2,
                             stall_while_clearing=True, banks=BANKS), SHARED
    yield f"PQA insert 2^12 x 8, {BANKS} banks, shared", 1, \
        lambda: PqaInsert(12, 8, banks=BANKS), SHARED
    yield "entropy unit (8 x 32-bit), shared", 1, lambda: EntropyUnit(32, 8, 12), SHARED
    yield "builder lane, whole (parser to FIFO, banks' control)", LANES, \
        lambda: QueueBuilderCore(jsd_builder.Params()).lane_units[0], WHOLE_LANE
    yield "similarity core, 1 pivot", THESIS_PIVOTS, \
        lambda: JsdSimilarityCore(jsd_similarity.Params(pivots=1)), APART


TABLE = ResourceTable(44)


def main():
    args = TABLE.start(__doc__, "--kernels", "also the whole default kernels")
    if args is None:
        return 1
    wanted, row = args.wanted, TABLE.row
    with tempfile.TemporaryDirectory(prefix="jsd-resources-") as directory:
        jobs = [(name, scale, lambda b=build: part_verilog(b(), "part"), "part", role)
                for name, scale, build, role in parts()]
        if args.kernels:
            jobs += [("build kernel (default)", 1, lambda: to_verilog(QueueBuilderKernel()),
                      "jsd_builder", APART),
                     ("similarity kernel (8 pivots)", 1,
                      lambda: to_verilog(JsdSimilarityKernel()), "jsd_similarity", APART)]
        lane, shared, whole_lane = {}, {}, None
        for name, scale, text, top, role in jobs:
            if wanted and not any(w in name for w in wanted):
                continue
            path = pathlib.Path(directory) / f"{top}.v"
            path.write_text(text())
            report = yosys_report(path, top, family=args.family, purge_names=top != "part")
            res = report["resources"]
            print(row(name, res, report["logic_levels"]), flush=True)
            if role == WHOLE_LANE:
                whole_lane = res
            if role in (PER_LANE, SHARED):
                total = lane if role == PER_LANE else shared
                copies = scale if role == PER_LANE else 1
                for key, value in res.items():
                    if isinstance(value, (int, float)):
                        total[key] = total.get(key, 0) + value * copies
            if scale > 1:
                scaled = {key: value * scale for key, value in res.items()
                          if isinstance(value, (int, float))}
                print(row(f"  x {scale}", scaled), flush=True)
        if lane:
            print(row("JSD parts of one builder lane (sum)", lane), flush=True)
            print(row(f"  x {LANES} lanes", {key: value * LANES for key, value in lane.items()}))
            if shared:
                print(row(f"  x {LANES} lanes + shared parts",
                          {key: value * LANES + shared.get(key, 0)
                           for key, value in lane.items()}))
        if whole_lane and shared:
            print(row(f"{LANES} whole lanes + shared parts",
                      {key: value * LANES + shared.get(key, 0) for key, value in whole_lane.items()
                       if isinstance(value, (int, float))}))
    for name, lut, ff, dsp in THESIS_ROWS:
        print(f"| {name:44} | {lut:8} | {'':>8} | {'':>7} | {'':>5} | {dsp:5} | {'':>6} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
