"""cocotb test of the JSD similarity kernel on its generated Verilog: every JSD of every pivot
with every streamed PQA equal to kmerspec.golden.entropy.jsd_fixed, in several runs on the same
kernel (pivot sets and modes change between runs).

Parameters: ``params`` (``kmerspec.kernels.jsd_similarity.Params.to_dict()``), ``runs`` = [{"pivots": [index,
...], "pqas": [index, ...], "mode": "textbook" | "counts"}] over the records of
:func:`sim.jsd.golden.random_records` (``records``, ``seed``), or with ``genomes_file`` (a JSON
list of genomes, each a list of file texts) the golden records of those genomes under the default
``jsd_builder`` algorithm with this kernel's R and n; ``pause``; ``report`` (a JSON file: input
beats and cycles of every run).
"""

import dataclasses
import json
import pathlib

import cocotb

from kmerspec.golden.entropy import jsd_fixed
from kmerspec.kernels import params_from_dict
from kmerspec.kernels import jsd_builder
from kmerspec.kernels.jsd_builder import pack_record
from kmerspec.kernels.jsd_similarity import unpack_results
from sim.jsd.golden import expected_record, random_records
from sim.runner import params
from sim.tb_common import KernelBench

P = params()
GEOMETRY = params_from_dict(P["params"])


@cocotb.test()
async def test_jsd_matches_golden(dut):
    bench = await KernelBench.start(dut, GEOMETRY.desc)
    if "genomes_file" in P:
        algorithm = dataclasses.replace(jsd_builder.Params().algorithm, R=GEOMETRY.R, n=GEOMETRY.n)
        genomes = json.loads(pathlib.Path(P["genomes_file"]).read_text())
        records = [expected_record(tag, [text.encode("latin-1") for text in files], algorithm)
                   for tag, files in enumerate(genomes)]
    else:
        records = random_records(GEOMETRY.R, GEOMETRY.n, int(P.get("records", 6)), bench.seed)
    report = []

    read_beats = 0
    for number, run in enumerate(P["runs"]):
        pivots = [records[i] for i in run["pivots"]]
        pqas = [records[i] for i in run["pqas"]]
        bench.new_call()
        pivot_address = bench.input(b"".join(pack_record(r, GEOMETRY) for r in pivots))
        pqa_address = bench.input(b"".join(pack_record(r, GEOMETRY) for r in pqas))
        out = bench.output(len(pqas) * GEOMETRY.bus_bytes)
        beats = (len(pivots) + len(pqas)) * GEOMETRY.record_bytes // GEOMETRY.bus_bytes
        cycles = await bench.timed_call(
            20 * beats + 100 * len(pqas) + 20_000, beats * GEOMETRY.bus_bytes,
            pivots=pivot_address, n_pivots=len(pivots), pqas=pqa_address, n_pqas=len(pqas),
            out=out, mode=int(run["mode"] == "counts"))
        got = unpack_results(bench.read_output(out), len(pqas), GEOMETRY.pivots, GEOMETRY)
        for row, record in zip(got, pqas):
            expected = [jsd_fixed(p.pqa, record.pqa, run["mode"], p.entropy, record.entropy)
                        for p in pivots] + [0] * (GEOMETRY.pivots - len(pivots))
            assert row == expected, f"run {number}, PQA {record.tag}: {row} != {expected}"
        dut._log.info("run %d: %d pivots x %d PQAs (%d input beats) in %d cycles", number,
                      len(pivots), len(pqas), beats, cycles)
        read = len(bench.monitors[0].r_cycles) - read_beats
        read_beats += read
        assert read == beats, f"run {number}: {read} beats read, {beats} expected"
        report.append({"pivots": len(pivots), "pqas": len(pqas), "beats": beats,
                       "cycles": cycles})
    bench.check_bursts()
    if "report" in P:
        pathlib.Path(P["report"]).write_text(json.dumps(report))
