"""cocotb test of the JSD similarity kernel on its generated Verilog: every JSD of every pivot
with every streamed PQA equal to kmerspec.golden.entropy.jsd_fixed, in several runs on the same
kernel (pivot sets and modes change between runs).

Parameters: ``params`` (``kmerspec.kernels.jsd_similarity.Params.to_dict()``), ``runs`` = [{"pivots": [index,
...], "pqas": [index, ...], "mode": "textbook" | "counts"}] over the records of
:func:`sim.jsd.golden.random_records` (``records``, ``seed``), ``pause``.
"""

import cocotb

from kmerspec.golden.entropy import jsd_fixed
from kmerspec.kernels import params_from_dict
from kmerspec.kernels.jsd_builder import pack_record
from kmerspec.kernels.jsd_similarity import unpack_results
from sim.jsd.golden import random_records
from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.tb_common import start_two_memory_kernel
from sim.tb_kernel import BurstMonitor

P = params()
GEOMETRY = params_from_dict(P["params"])
DW = GEOMETRY.data_width
PAUSE = float(P.get("pause", 0.0))
SEED = int(P.get("seed", 0))
MEM = 1 << 22
PIVOT_BASE = 0x1000
PQA_BASE = 0x100000
OUT_BASE = 0x300000
FILL = 0xA5


@cocotb.test()
async def test_jsd_matches_golden(dut):
    clk = dut.ap_clk
    rd_ram, wr_ram, axil = await start_two_memory_kernel(dut, MEM, PAUSE, SEED)
    monitors = (BurstMonitor(dut, "m_axi_gmem0", clk), BurstMonitor(dut, "m_axi_gmem1", clk))
    driver = KernelDriver(axil, GEOMETRY.desc, clk)
    records = random_records(GEOMETRY.R, GEOMETRY.n, int(P.get("records", 6)), SEED)

    for number, run in enumerate(P["runs"]):
        pivots = [records[i] for i in run["pivots"]]
        pqas = [records[i] for i in run["pqas"]]
        rd_ram.write(PIVOT_BASE, b"".join(pack_record(r, GEOMETRY) for r in pivots))
        rd_ram.write(PQA_BASE, b"".join(pack_record(r, GEOMETRY) for r in pqas))
        size = len(pqas) * GEOMETRY.bus_bytes
        wr_ram.write(OUT_BASE, bytes([FILL]) * (size + 256))
        beats = (len(pivots) + len(pqas)) * GEOMETRY.record_bytes // GEOMETRY.bus_bytes
        cycles = await driver.run(timeout_cycles=20 * beats + 100 * len(pqas) + 20_000,
                                  pivots=PIVOT_BASE, n_pivots=len(pivots), pqas=PQA_BASE,
                                  n_pqas=len(pqas), out=OUT_BASE,
                                  mode=int(run["mode"] == "counts"))
        assert wr_ram.read(OUT_BASE + size, 256) == bytes([FILL]) * 256, "wrote past the end"
        got = unpack_results(wr_ram.read(OUT_BASE, size), len(pqas), GEOMETRY.pivots, GEOMETRY)
        for row, record in zip(got, pqas):
            expected = [jsd_fixed(p.pqa, record.pqa, run["mode"], p.entropy, record.entropy)
                        for p in pivots] + [0] * (GEOMETRY.pivots - len(pivots))
            assert row == expected, f"run {number}, PQA {record.tag}: {row} != {expected}"
        dut._log.info("run %d: %d pivots x %d PQAs (%d input beats) in %d cycles", number,
                      len(pivots), len(pqas), beats, cycles)
    for monitor in monitors:
        assert not monitor.errors, monitor.errors[:5]
