"""cocotb test of the ``motif`` kernel on its generated Verilog, driven over s_axi_control like
XRT does: every store entry (k-mer, estimate, control count, round-robin pointer, emerging flag)
must equal kmerspec.golden.motif, run after run on the same kernel (so clearing is tested too).

Parameters: ``params`` (``kmerspec.kernels.motif.Params.to_dict()``), ``runs`` = [{"test": [file, ...], "control":
[...], "thresholds": [...], "growth": g}] with files as latin-1 strings, ``pause`` (probability
of a stall on every AXI channel), ``seed``, ``max_overhead_cycles`` (throughput bound, only
checked without pauses), ``memory``/``ddr`` (sim.tb_common.memory_timing), ``report`` (a JSON
file receiving each run's bases and cycles); a run may give ``min_windows_per_cycle``.
"""

import dataclasses

import cocotb

from kmerspec.golden.motif import find_motifs, run_engine
from kmerspec.golden.parse import base_runs
from kmerspec.kernels import params_from_dict
from kmerspec.kernels.motif import (emerging_rows_from, pack_files, pack_thresholds, result_bytes,
                                    unpack_result)
from sim.runner import params
from sim.tb_common import KernelBench

P = params()
KERNEL = params_from_dict(P["params"])
GEOMETRY = KERNEL.algorithm


def golden_entries(sketches, run_params):
    """(k, set, way) -> (valid, word, estimate, control count, pointer, emerging)."""
    expected = {}
    for sketch in sketches:
        store = sketch.store
        for s in range(store.sets):
            for w in range(store.ways):
                valid = store.valid[s][w]
                expected[sketch.k, s, w] = (
                    valid, store.kmers[s][w] if valid else 0, store.values[s][w],
                    store.control_counts[s][w], store.next_victim[s],
                    valid and run_params.is_emerging(sketch.k, store.values[s][w],
                                                     store.control_counts[s][w]))
    return expected


def count_bases(files):
    return sum(len(run) for data in files for run in base_runs(data))


@cocotb.test()
async def test_runs_match_golden(dut):
    bench = await KernelBench.start(dut, KERNEL.desc, memory_bytes=1 << 20)
    passes = []

    for number, run in enumerate(P["runs"]):
        test_files = [text.encode("latin-1") for text in run["test"]]
        control_files = [text.encode("latin-1") for text in run["control"]]
        run_params = dataclasses.replace(GEOMETRY, thresholds=tuple(run["thresholds"]),
                                         growth=run["growth"])
        test_bytes, control_bytes = pack_files(test_files), pack_files(control_files)
        bench.new_call()
        arguments = dict(test=bench.input(test_bytes), test_bytes=len(test_bytes),
                         control=bench.input(control_bytes), control_bytes=len(control_bytes),
                         thresholds=bench.input(pack_thresholds(run_params)),
                         growth_q8=run_params.growth_q8,
                         result=bench.output(result_bytes(KERNEL)))
        cycles = await bench.timed_call(
            20 * (len(test_bytes) + len(control_bytes)) + (40 << GEOMETRY.cw) + 50_000,
            len(test_bytes) + len(control_bytes), **arguments)
        result = unpack_result(bench.read_output(arguments["result"]), KERNEL)

        expected = golden_entries(run_engine(test_files, control_files, run_params), run_params)
        got = {(e.k, e.set_index, e.way): (e.valid, e.word, e.estimate, e.control_count,
                                           e.next_victim, e.emerging)
               for e in result.entries}
        mismatches = [(key, got[key], expected[key]) for key in expected
                      if got[key] != expected[key]]
        assert not mismatches, f"run {number}: {len(mismatches)} entries differ: {mismatches[:4]}"
        assert emerging_rows_from(result) == find_motifs(test_files, control_files, run_params)
        assert result.test_bases == count_bases(test_files)
        assert result.control_bases == count_bases(control_files)
        assert (result.test_bytes, result.control_bytes) == (len(test_bytes),
                                                             len(control_bytes))

        valid = sum(entry[0] for entry in expected.values())
        emerging = sum(entry[5] for entry in expected.values())
        lanes = len(run_params.ks)
        dut._log.info(
            "run %d: %d cycles; test pass %d bytes %d bases in %d cycles (%.4f bytes/cycle, "
            "%.4f windows/cycle per k, %d k in parallel); control %d bytes in %d cycles; "
            "%d store entries, %d emerging", number, cycles, len(test_bytes), result.test_bases,
            result.test_cycles, len(test_bytes) / max(1, result.test_cycles),
            result.test_bases / max(1, result.test_cycles), lanes, len(control_bytes),
            result.control_cycles, valid, emerging)
        passes.append({"test_bytes": len(test_bytes), "test_bases": result.test_bases,
                       "test_cycles": result.test_cycles, "control_bytes": len(control_bytes),
                       "control_bases": result.control_bases,
                       "control_cycles": result.control_cycles, "call_cycles": cycles})
        if not bench.pause and "max_overhead_cycles" in P:
            overhead = int(P["max_overhead_cycles"])
            assert result.test_cycles <= len(test_bytes) + overhead, result.test_cycles
            assert result.control_cycles <= len(control_bytes) + overhead, \
                result.control_cycles
        if not bench.pause and "min_windows_per_cycle" in run:
            # every base is one window of every k in the same cycle
            assert result.test_bases / result.test_cycles >= run["min_windows_per_cycle"]
            assert result.control_bases / result.control_cycles >= run["min_windows_per_cycle"]
    bench.check_bursts()
    bench.write_report(passes=passes)
