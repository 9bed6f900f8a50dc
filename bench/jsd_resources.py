"""Yosys resource and logic-depth table of the JSD engine's parts, next to the thesis.

    python bench/jsd_resources.py [--kernels] [--family xcup] [--parts NAME,...]

Synthesizes (``synth_xilinx -family xcup`` through :func:`hw.vitis.synth.yosys_report`) the parts
of the default geometry (k = 31, s = 10, 5 x 2^14 32-bit Count-Min, 2^12 x 8 PQA, 512-bit bus):
the lane's 5-seed murmur3 finish (from the sampler's mixed blocks), the 8-way sampler, the
Count-Min rows, the PQA insert network, the builder's one entropy unit (shared by the lanes), and
a one-pivot similarity core; then sums a builder lane's parts, scales them by T = 8 and adds the
shared parts, and scales the pivot unit by the thesis' 24 pivots. A whole builder lane (parser,
k-mer buffer, canonicalizers, sampler, FIFO, serializer, hashes, Count-Min, PQA, record
multiplexer) is synthesized too and scaled by T = 8: with the entropy unit added, that is the
builder kernel without its chunk decoder, lane multiplexer and AXI plumbing. The full murmur3 pipeline
(``Murmur3Hashes``, block mixing included) is printed for reference, outside the sums.
``--kernels`` also synthesizes the whole default kernels (very slow). Yosys numbers are not Vivado's: compare, do not promise a fit.
"""

import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from hw.common.countmin import CountMinUnit  # noqa: E402
from hw.jsd.builder import QueueBuilderLane  # noqa: E402
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

LANES = 8
#: Count-Min + PQA banks per lane of the default builder (``record_banks``): the lane's
#: Count-Min and PQA parts are measured with that many banks (memories per bank, logic shared)
BANKS = jsd_builder.Params().record_banks
THESIS_PIVOTS = 24
THESIS_ROWS = [("thesis build kernel (8 builders)", 75219, None, 960),
               ("thesis similarity kernel (24 pivots)", 757827, None, 4032)]


PER_LANE, SHARED, APART = "per lane", "shared", "apart"


def parts():
    """(name, scale, build, role): PER_LANE parts are summed (``scale`` copies per lane) and
    scaled by the lanes, SHARED
    parts (one per builder kernel) added once, APART parts stand alone."""
    yield "murmur3_32 x 5 seeds (with block mixing)", 1, lambda: Murmur3Hashes(range(5)), APART
    yield "murmur3 finish x 5 seeds (lane's form)", 1, lambda: Murmur3Seeds(range(5)), PER_LANE
    yield "sampler (8 k-mers/beat)", 1, lambda: Sampler(8, 10), PER_LANE
    yield f"Count-Min rows 5 x 2^14 x 32, {BANKS} bank(s)", 1, \
        lambda: CountMinUnit(5, 14, 32, 32 + (BANKS > 1), read_latency=2,
                             stall_while_clearing=True, banks=BANKS), PER_LANE
    yield f"PQA insert 2^12 x 8, {BANKS} bank(s)", 1, \
        lambda: PqaInsert(12, 8, banks=BANKS), PER_LANE
    yield "entropy unit (8 x 32-bit), shared", 1, lambda: EntropyUnit(32, 8, 12), SHARED
    yield "builder lane, whole (parser to record mux)", LANES, \
        lambda: QueueBuilderLane(jsd_builder.Params()), APART
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
        lane, shared = {}, {}
        for name, scale, text, top, role in jobs:
            if wanted and not any(w in name for w in wanted):
                continue
            path = pathlib.Path(directory) / f"{top}.v"
            path.write_text(text())
            report = yosys_report(path, top, family=args.family)
            res = report["resources"]
            print(row(name, res, report["logic_levels"]), flush=True)
            if role != APART:
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
    for name, lut, ff, dsp in THESIS_ROWS:
        print(f"| {name:44} | {lut:8} | {'':>8} | {'':>7} | {'':>5} | {dsp:5} | {'':>6} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
