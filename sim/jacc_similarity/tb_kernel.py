"""cocotb test of the ``jacc_similarity`` kernel, driven over s_axi_control like XRT does.

Parameters: ``params`` (``kmerspec.kernels.jacc_similarity.Params.to_dict()``), ``sketches`` (path
of an .npy register array), ``runs`` = [[threshold or null, pause, sketch count or null], ...] (a
count runs the plan of the first sketches only), ``seed``, ``out`` (path of a JSON file that
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
from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.tb_common import make_axi_ram, make_axil_master, set_axi_ram_pauses, start_clock_reset
from sim.tb_kernel import BurstMonitor

P = params()
GEOMETRY = params_from_dict(P["params"])
HLL = HllParams(GEOMETRY.p, GEOMETRY.w)
SEED = int(P.get("seed", 0))
MEM = 1 << 20
SKETCH_BASE = 0x1000
FEATURE_BASE = 0x40000
FILL = 0xA5


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
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    rd_ram = make_axi_ram(dut, "m_axi_gmem0", clk, rst_n, size=MEM, seed=SEED)
    wr_ram = make_axi_ram(dut, "m_axi_gmem1", clk, rst_n, size=MEM, seed=SEED + 7)
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n)
    await start_clock_reset(clk, rst_n)
    monitors = (BurstMonitor(dut, "m_axi_gmem0", clk), BurstMonitor(dut, "m_axi_gmem1", clk))
    driver = KernelDriver(axil, GEOMETRY.desc, clk)
    registers = np.load(P["sketches"])
    report = []
    for run, (threshold, pause, count) in enumerate(P["runs"]):
        set_axi_ram_pauses(rd_ram, pause, SEED + run)
        set_axi_ram_pauses(wr_ram, pause, SEED + 100 + run)
        job = SimilarityJob(registers[:count], HLL, GEOMETRY, threshold)
        assert SKETCH_BASE + len(job.buffer) <= FEATURE_BASE or not job.calls, "buffer too big"
        rd_ram.write(SKETCH_BASE, job.buffer)
        features, cycles = [], []
        for call in job.calls:
            size = call.groups * GEOMETRY.record_block_bytes
            wr_ram.write(FEATURE_BASE, bytes([FILL]) * (size + 256))
            r_start, w_start = len(monitors[0].r_cycles), len(monitors[1].w_cycles)
            await driver.set_args(sketches=SKETCH_BASE, features=FEATURE_BASE,
                                  **call.scalar_arguments())
            started = monitors[0].cycle
            await driver.start()
            await driver.wait_done(100 * (call.groups + 4) * GEOMETRY.beats_per_group + 20_000)
            got = wr_ram.read(FEATURE_BASE, size)
            expected = job.model_features(call)
            assert got == expected, \
                f"run {run} ({threshold=}), {call}: {_first_difference(got, expected)}"
            assert wr_ram.read(FEATURE_BASE + size, 256) == bytes([FILL]) * 256, \
                f"run {run}, {call}: wrote past its records"
            reads, writes = monitors[0].r_cycles[r_start:], monitors[1].w_cycles[w_start:]
            assert len(reads) == call.groups * GEOMETRY.beats_per_group
            assert len(writes) == call.groups * GEOMETRY.record_beats
            features.append(got.hex())
            cycles.append({"groups": call.groups, "start_to_first_read": reads[0] - started,
                           "first_read_to_last_write": writes[-1] - reads[0] + 1,
                           "read_span": reads[-1] - reads[0] + 1})
        report.append({"threshold": threshold, "pause": pause, "count": count, "features": features,
                       "cycles": cycles})
        dut._log.info("run %d (threshold %s, pause %s): %d calls, cycles %s", run, threshold,
                      pause, len(job.calls), [c["first_read_to_last_write"] for c in cycles])
    for monitor in monitors:
        assert not monitor.errors, monitor.errors[:5]
    with open(P["out"], "w") as out:
        json.dump(report, out)
