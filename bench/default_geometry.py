"""Throughput of the kernels at their default geometry (the Params defaults, what ``python -m
hw.build`` builds) under the DDR-like memory model, on fragments of real genomes and reads.

    python bench/default_geometry.py [--kernels jacc_sketch,jacc_similarity] [--memory ddr|ideal]
                                     [--latency 150] [--outstanding 8] [--fragment-bytes 6000]
                                     [--bacteria] [--genomes 16] [--memory-mib 4]

Every figure comes from a bit-exact cocotb regression of the generated Verilog under Verilator
(each bench compares every output byte with the golden model, so a wrong kernel prints no row):

* ``jacc_sketch`` (T = 8 lanes x 8 bytes, 512-bit bus, k = 31, p = 14, w = 4): fragments of the
  example genomes and SRR059298 reads (sim.real_data), chunked as the host does; cycles per
  512-bit input beat over whole calls (ap_start write to ap_done read: memory latency, genome
  ends and record writes included), the share of offered beats taken outside genome ends, and
  the genome-end stop at p = 14;
* ``jacc_similarity`` (V = 80 pivots, D = 4 streams, 512-bit bus, p = 14): sketches of the same
  fragments, the whole call plan of a full all-pairs run; cycles per call from ap_start to
  ap_done against the read beats of the call and the kernel's cycle model;
* ``jsd_builder`` (8 lanes x 8 bytes, 512-bit bus, k = 31, cw = 14, R = 12 queues of n = 8):
  the same fragments; cycles per 512-bit input beat over whole calls (memory latency, genome
  ends and the 256 KiB record of every genome included);
* ``jsd_similarity`` (V = 8 pivots, R = 12, n = 8, 512-bit bus): the golden records of the same
  genomes (the first ``--jsd-records``), the first V of them as the pivots, all streamed; cycles
  per record beat read over the call;
* ``motif`` (k = 10..20, 4 x 2^14 CM-CU, 64 x 4 store, B = 8 bytes per cycle): a FASTA fragment
  (lambda) and a FASTQ fragment (SRR059298) as test sets; bases per cycle of the test pass (one
  window of every k per base), from the kernel's own cycle counters.

``--bacteria`` takes the sketch and JSD genomes from the sibelia-examples bacteria (Mbases each,
``sim.real_data.bacterial_fragments``; ``--min-fragment-bytes`` spreads their sizes) instead of
the example genomes and reads, for runs long enough that genome ends and per-call costs fade;
``--memory-mib`` sizes the simulated memories to hold such a call.

The memory model is sim.ddr_memory.DdrAxiRam (read latency, outstanding-burst limit, refresh
gaps; DDR4 defaults) or cocotbext-axi's ideal AxiRam (``--memory ideal``). "vs ideal" is the
beats per cycle over the call divided by what the memory can deliver at most (one beat per
cycle outside refresh gaps). The first run of a kernel builds it (Verilator with -O0 C++ for
these large designs, or ``SIM=icarus``; see docs/default_geometry.md; the build is cached under
$TMPDIR/kmer-sketch-sim).
"""

import argparse
import dataclasses
import json
import pathlib
import random
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from kmerspec.golden.hll import HllParams  # noqa: E402
from kmerspec.kernels import (jacc_similarity, jacc_sketch, jsd_builder,  # noqa: E402
                              jsd_similarity, motif)
from sim.ddr_memory import DdrTiming  # noqa: E402
from sim.real_data import (bacterial_fragments, fasta_fragment, fastq_fragment,  # noqa: E402
                            genome_fragments)
from sim.runner import run_cocotb, run_kernel_bench  # noqa: E402

KERNELS = ("jacc_sketch", "jacc_similarity", "jsd_builder", "jsd_similarity", "motif")


def run_bench(args, geometry, module: str, parameters: dict):
    """run_kernel_bench, or with ``--verilog KERNEL=FILE`` the bench on that Verilog (the same
    kernel generated earlier: skips the minutes of Amaranth and Yosys; the build cache is keyed
    by the design, not its source paths, so a build from another checkout is reused)."""
    given = dict(item.split("=", 1) for item in args.verilog)
    if geometry.KERNEL in given:
        return run_cocotb(pathlib.Path(given[geometry.KERNEL]).read_text(), module,
                          toplevel=geometry.desc.name,
                          parameters={"params": geometry.to_dict(), **parameters})
    return run_kernel_bench(geometry, module, parameters)


def memory_parameters(args) -> dict:
    # throughput: no random stalls and no random write-response latency (the benches' default)
    size = {"memory_bytes": args.memory_mib << 20, "pause": 0.0, "response_latency": [0, 0]}
    if args.memory == "ideal":
        return {"memory": "ideal", **size}
    return {"memory": "ddr", "ddr": {"read_latency": args.latency,
                                      "max_outstanding": args.outstanding}, **size}


def input_genomes(args) -> list[list[bytes]]:
    """The genomes of the sketch and JSD benches: fragments of the example genomes and reads, or
    with ``--bacteria`` of the sibelia-examples bacteria (Mbases each)."""
    if args.bacteria:
        return bacterial_fragments(args.genomes, args.fragment_bytes, args.min_fragment_bytes)
    return genome_fragments(args.genomes, args.fragment_bytes)


def ceiling(args) -> float:
    """Beats per cycle the memory can deliver at most."""
    if args.memory == "ideal":
        return 1.0
    return DdrTiming(read_latency=args.latency, max_outstanding=args.outstanding) \
        .peak_beats_per_cycle


def beat_rate_row(kernel: str, figure: str, cycles: int, beats: int, args, notes: str) -> tuple:
    """The table row of ``cycles`` per bus beat, and its beats per cycle against the memory's
    peak (``ceiling``)."""
    return (kernel, figure, f"{cycles / beats:.3f}", f"{beats / cycles / ceiling(args):.3f}",
            notes)


def wall_time_row(kernel: str, started: float, notes: str = "") -> tuple:
    """The table row of a kernel's simulation wall time since ``started`` (time.time())."""
    return (kernel, "simulation wall time (s)", f"{time.time() - started:.0f}", "", notes)


def bench_sketch(args, directory: pathlib.Path) -> list[tuple]:
    geometry = jacc_sketch.Params()
    genomes = input_genomes(args)
    report = directory / "sketch.json"
    started = time.time()
    (directory / "genomes.json").write_text(json.dumps(
        [[f.decode("latin-1") for f in files] for files in genomes]))
    run_bench(args, geometry, "sim.sketch.tb_sketch_kernel", {
        "genomes_file": str(directory / "genomes.json"),
        "seed": 5, "max_chunk_bytes": args.chunk_bytes, "max_block_beats": args.block_beats,
        "min_calls": 1, "report": str(report), **memory_parameters(args)})
    result = json.loads(report.read_text())
    beats = sum(b for b, _ in result["calls"])
    cycles = sum(c for _, c in result["calls"])
    stops = sorted(set(result["stops"]))
    return [
        beat_rate_row("jacc_sketch", "cycles per 512-bit beat, whole calls", cycles, beats, args,
                      f"{len(genomes)} genomes, {beats} beats, {len(result['calls'])} calls"),
        ("jacc_sketch", "beats taken / offered outside genome ends",
         f"{result['taken']}/{result['offered']}", f"{result['taken'] / result['offered']:.3f}",
         "every offered beat must be taken"),
        ("jacc_sketch", "genome-end stop, p=14 (cycles)", ", ".join(map(str, stops)), "",
         f"{len(result['stops'])} stops"),
        wall_time_row("jacc_sketch", started),
    ]


def bench_similarity(args, directory: pathlib.Path) -> list[tuple]:
    from host.fast.hll import sketch_genomes
    geometry = jacc_similarity.Params()
    hll = HllParams(geometry.p, geometry.w)
    genomes = genome_fragments(args.sketches, args.fragment_bytes)
    registers = np.stack(list(sketch_genomes(genomes, 31, hll, True, 1)))
    np.save(directory / "sketches.npy", registers)
    started = time.time()
    run_bench(args, geometry, "sim.jacc_similarity.tb_kernel", {
        "sketches": str(directory / "sketches.npy"), "seed": 5, "runs": [[None, 0.0, None]],
        "out": str(directory / "similarity.json"), **memory_parameters(args)})
    from hw.jacc_similarity.kernel import call_cycles_model
    calls = json.loads((directory / "similarity.json").read_text())[0]["cycles"]
    rows = []
    for index, call in enumerate(calls):
        beats = call["groups"] * geometry.beats_per_group
        model = call_cycles_model(geometry, call["groups"], call["start_to_first_read"])
        rows.append(("jacc_similarity", f"call {index}: cycles ap_start..ap_done",
                     str(call["start_to_done"]), f"{beats / call['start_to_done'] / ceiling(args):.3f}",
                     f"{call['groups']} groups, {beats} read beats, model {model} "
                     f"(first read after {call['start_to_first_read']})"))
    rows.append(wall_time_row("jacc_similarity", started, f"{len(genomes)} sketches, "
                              f"V={geometry.pivots}, D={geometry.streams}"))
    return rows


def bench_jsd_builder(args, directory: pathlib.Path) -> list[tuple]:
    geometry = jsd_builder.Params()
    if args.jsd_small:        # the CI geometry of tests/test_jsd_kernel.py (a quick build)
        from tests.test_jsd_kernel import SMALL as geometry
    if args.jsd_record_banks:
        geometry = dataclasses.replace(geometry, record_banks=args.jsd_record_banks)
    if args.jsd_random_bytes:  # longer than any example genome: random FASTA, 60-base lines
        rng = random.Random(11)
        genomes = []
        for index in range(args.genomes):
            sequence = bytes(rng.choice(b"ACGT") for _ in range(args.jsd_random_bytes))
            genomes.append([b">random%d\n" % index + b"\n".join(
                sequence[i:i + 60] for i in range(0, len(sequence), 60)) + b"\n"])
    else:
        genomes = input_genomes(args)
    (directory / "jsd_genomes.json").write_text(json.dumps(
        [[f.decode("latin-1") for f in files] for files in genomes]))
    report = directory / "jsd_builder.json"
    started = time.time()
    run_bench(args, geometry, "sim.jsd.tb_builder_kernel", {
        "genomes_file": str(directory / "jsd_genomes.json"), "seed": 5,
        "max_chunk_bytes": args.chunk_bytes, "max_block_beats": args.block_beats,
        "min_calls": 1, "report": str(report), **memory_parameters(args)})
    calls = json.loads(report.read_text())["calls"]
    beats = sum(b for b, _ in calls)
    cycles = sum(c for _, c in calls)
    record_beats = len(genomes) * geometry.record_bytes // geometry.bus_bytes
    return [
        beat_rate_row("jsd_builder", f"cycles per {geometry.data_width}-bit beat, whole calls",
                      cycles, beats, args, f"{len(genomes)} genomes, {beats} input beats, "
                                           f"{len(calls)} calls, {cycles} cycles"),
        ("jsd_builder", "cycles per beat read or written, whole calls",
         f"{cycles / (beats + record_beats):.3f}", "",
         f"+ {record_beats} record beats ({geometry.record_bytes} bytes per genome)"),
        ("jsd_builder", "per call: input beats / cycles", "", "",
         ", ".join(f"{b} / {c}" for b, c in calls)),
        wall_time_row("jsd_builder", started),
    ]


def bench_jsd_similarity(args, directory: pathlib.Path) -> list[tuple]:
    geometry = jsd_similarity.Params()
    genomes = input_genomes(args)[:args.jsd_records]
    (directory / "jsd_similarity_genomes.json").write_text(json.dumps(
        [[f.decode("latin-1") for f in files] for files in genomes]))
    report = directory / "jsd_similarity.json"
    pivots = list(range(min(geometry.pivots, len(genomes))))
    started = time.time()
    run_bench(args, geometry, "sim.jsd.tb_similarity_kernel", {
        "genomes_file": str(directory / "jsd_similarity_genomes.json"), "seed": 5,
        "runs": [{"pivots": pivots, "pqas": list(range(len(genomes))), "mode": "textbook"}],
        "report": str(report), **memory_parameters(args)})
    rows = [beat_rate_row("jsd_similarity", f"call {index}: cycles per record beat read",
                          run["cycles"], run["beats"], args,
                          f"{run['pivots']} pivots + {run['pqas']} PQAs, {run['beats']} read "
                          f"beats, {run['cycles']} cycles ap_start..ap_done")
            for index, run in enumerate(json.loads(report.read_text()))]
    return rows + [wall_time_row("jsd_similarity", started,
                                 f"V={geometry.pivots}, R={geometry.R}, n={geometry.n}")]


def bench_motif(args, directory: pathlib.Path) -> list[tuple]:
    fields = {}
    if args.motif_small:      # the CI geometry of tests/test_motif_kernel.py (a quick build)
        from tests.test_motif_kernel import GEOMETRY
        fields.update(GEOMETRY)
    if args.motif_bytes_per_cycle:
        fields["bytes_per_cycle"] = args.motif_bytes_per_cycle
    geometry = motif.Params(**fields)
    inputs = {"FASTA (lambda, 60-base lines)": fasta_fragment("lambda_virus", args.motif_bytes),
              "FASTQ (SRR059298, 72 bp reads)": fastq_fragment(args.motif_bytes)}
    control = fasta_fragment("dwv", args.motif_bytes // 4)
    ks = len(geometry.algorithm.ks)
    report = directory / "motif.json"
    started = time.time()
    run_bench(args, geometry, "sim.motif.tb_motif_kernel", {
        "runs": [{"test": [text.decode("latin-1")], "control": [control.decode("latin-1")],
                  "thresholds": [3] * ks, "growth": 2} for text in inputs.values()],
        "seed": 3, "report": str(report), **memory_parameters(args)})
    rows = []
    for name, run in zip(inputs, json.loads(report.read_text())["passes"]):
        rows.append(("motif", f"bases per cycle per k, {name}",
                     f"{run['test_bases'] / run['test_cycles']:.3f}",
                     f"{run['test_bases'] / run['test_cycles']:.3f}",
                     f"{run['test_bytes']} bytes, {run['test_bases']} bases, "
                     f"{run['test_cycles']} pass cycles, {run['call_cycles']} call cycles, "
                     f"k={geometry.kmin}..{geometry.kmax}, B={geometry.bytes_per_cycle}"))
    rows.append(wall_time_row("motif", started))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--memory", choices=("ddr", "ideal"), default="ddr")
    parser.add_argument("--latency", type=int, default=DdrTiming().read_latency)
    parser.add_argument("--outstanding", type=int, default=DdrTiming().max_outstanding)
    parser.add_argument("--fragment-bytes", type=int, default=6000)
    parser.add_argument("--genomes", type=int, default=16)
    parser.add_argument("--sketches", type=int, default=24)
    parser.add_argument("--chunk-bytes", type=int, default=1 << 16)
    parser.add_argument("--min-fragment-bytes", type=int, default=None,
                        help="with --bacteria: sizes spread from this to --fragment-bytes")
    parser.add_argument("--memory-mib", type=int, default=4,
                        help="size of each simulated memory (a call's input must fit)")
    parser.add_argument("--bacteria", action="store_true",
                        help="jacc_sketch, jsd_builder: --genomes fragments of the sibelia-examples "
                             "bacteria (S. aureus, H. pylori; Mbases each) instead of the "
                             "example genomes and reads")
    parser.add_argument("--block-beats", type=int, default=64)
    parser.add_argument("--motif-bytes", type=int, default=8000)
    parser.add_argument("--motif-bytes-per-cycle", type=int, default=None,
                        help="the motif front end's B (default: the Params default)")
    parser.add_argument("--verilog", action="append", default=[], metavar="KERNEL=FILE",
                        help="simulate this Verilog of KERNEL's default geometry instead of "
                             "generating it (python -m hw.build output)")
    parser.add_argument("--motif-small", action="store_true",
                        help="the motif kernel of the CI test (k=4..7) instead of the default")
    parser.add_argument("--jsd-random-bytes", type=int, default=0,
                        help="jsd_builder: --genomes random genomes of this many bases instead "
                             "of real fragments (the example genomes are <= 48.5 kb)")
    parser.add_argument("--jsd-record-banks", type=int, default=0,
                        help="jsd_builder: build it with this many Count-Min/PQA banks per lane "
                             "(default: the Params default)")
    parser.add_argument("--jsd-records", type=int, default=12,
                        help="jsd_similarity: records of this many of the genomes (the first "
                             "V are also the pivots)")
    parser.add_argument("--jsd-small", action="store_true",
                        help="the jsd_builder of the CI test (2 lanes x 8 bytes, R=3, n=2, "
                             "cw=4) instead of the default")
    args = parser.parse_args(argv)
    benches = {"jacc_sketch": bench_sketch, "jacc_similarity": bench_similarity,
               "jsd_builder": bench_jsd_builder, "jsd_similarity": bench_jsd_similarity,
               "motif": bench_motif}
    memory = "ideal AxiRam" if args.memory == "ideal" else \
        f"DDR-like (latency {args.latency}, {args.outstanding} outstanding, refresh " \
        f"{DdrTiming().refresh_cycles}/{DdrTiming().refresh_interval} cycles)"
    source = (f"{args.genomes} random genomes of {args.jsd_random_bytes} bases (jsd_builder)"
              if args.jsd_random_bytes else
              f"{args.genomes} fragments of {args.min_fragment_bytes or args.fragment_bytes}"
              f"..{args.fragment_bytes} bytes of the "
              f"sibelia-examples bacteria (sim.real_data.bacterial_fragments)" if args.bacteria else
              f"real fragments of <= {args.fragment_bytes} bytes (sim.real_data)")
    print(f"default geometry, memory: {memory}, input: {source}\n")
    print(f"| {'kernel':15} | {'figure':42} | {'value':>12} | {'vs ideal':>8} | notes")
    print(f"|{'-' * 17}|{'-' * 44}|{'-' * 14}|{'-' * 10}|------")
    with tempfile.TemporaryDirectory(prefix="default-geometry-") as directory:
        for name in args.kernels.split(","):
            for row in benches[name](args, pathlib.Path(directory)):
                print(f"| {row[0]:15} | {row[1]:42} | {row[2]:>12} | {row[3]:>8} | {row[4]}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
