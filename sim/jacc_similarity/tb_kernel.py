"""cocotb test of the ``jacc_similarity`` kernel, driven over s_axi_control like XRT does.

Parameters: ``params`` (``kmerspec.kernels.jacc_similarity.Params.to_dict()``), ``sketches`` (path
of an .npy register array), ``runs`` = [[threshold or null, pause, sketch count or null], ...] (a
count runs the plan of the first sketches only), ``seed``, ``memory``/``ddr``
(sim.tb_common.memory_timing), ``out`` (path of a JSON file that
receives, per run, the feature records of every call and the measured cycles).

Every call of each run's plan (host.allpairs.SimilarityJob) is executed on the kernel; its
feature records must equal, byte for byte, the software model's (which the pytest side checks
against the golden union features), and nothing may be written past them.
"""

import json

import cocotb
import numpy as np

from host.allpairs import SimilarityJob
from kmerspec.golden.hll import HllParams
from kmerspec.kernels import params_from_dict
from sim.runner import params
from sim.tb_common import KernelBench

P = params()
GEOMETRY = params_from_dict(P["params"])
HLL = HllParams(GEOMETRY.p, GEOMETRY.w)


def _first_difference(got: bytes, expected: bytes) -> str:
    g = GEOMETRY
    at = next(i for i in range(len(got)) if got[i] != expected[i])
    group, offset = divmod(at, g.record_block_bytes)
    record = offset // g.record_bytes
    pivot, slot = divmod(record, g.streams)
    lo = group * g.record_block_bytes + record * g.record_bytes
    hi = lo + g.record_bytes
    return (f"byte {at}: group {group}, pivot {pivot}, slot {slot}: got {got[lo:hi].hex()} "
            f"expected {expected[lo:hi].hex()}")


@cocotb.test()
async def run_plans(dut):
    """Each run's whole call plan; the records of every call against the software model."""
    bench = await KernelBench.start(dut, GEOMETRY.desc, pause=0.0)
    monitors = bench.monitors
    registers = np.load(P["sketches"])
    report = []
    for run, (threshold, pause, count) in enumerate(P["runs"]):
        bench.set_pause(pause, bench.seed + run)
        job = SimilarityJob(registers[:count], HLL, GEOMETRY, threshold)
        bench.new_call()
        sketches = bench.input(job.buffer)
        features, cycles = [], []
        for call in job.calls:
            out = bench.output(call.groups * GEOMETRY.record_block_bytes)
            r_start, w_start = len(monitors[0].r_cycles), len(monitors[1].w_cycles)
            await bench.driver.set_args(sketches=sketches, features=out,
                                        **call.scalar_arguments())
            started = monitors[0].cycle
            await bench.driver.start()
            await bench.driver.wait_done(100 * (call.groups + 4) * GEOMETRY.beats_per_group
                                         + 20_000)
            done = monitors[0].cycle
            got = bench.read_output(out)
            expected = job.model_features(call)
            assert got == expected, \
                f"run {run} ({threshold=}), {call}: {_first_difference(got, expected)}"
            reads, writes = monitors[0].r_cycles[r_start:], monitors[1].w_cycles[w_start:]
            assert len(reads) == call.groups * GEOMETRY.beats_per_group
            assert len(writes) == call.groups * GEOMETRY.record_beats
            features.append(got.hex())
            cycles.append({"groups": call.groups, "start_to_done": done - started,
                           "start_to_first_read": reads[0] - started,
                           "first_read_to_last_write": writes[-1] - reads[0] + 1,
                           "read_span": reads[-1] - reads[0] + 1})
        report.append({"threshold": threshold, "pause": pause, "count": count, "features": features,
                       "cycles": cycles})
        dut._log.info("run %d (threshold %s, pause %s): %d calls, cycles %s", run, threshold,
                      pause, len(job.calls), [c["first_read_to_last_write"] for c in cycles])
    bench.check_bursts()
    with open(P["out"], "w") as out:
        json.dump(report, out)
