"""cocotb test of the JSD queue-builder kernel on its generated Verilog, driven over
s_axi_control like XRT does: every PQA entry, the entropy and the total of every genome must
equal the golden model, over several chunks on the same kernel (genomes that span chunks keep
their state, ended genomes must have been cleared).

Parameters: ``params`` (the kernel's Params, ``kmerspec.kernels.jsd_builder.Params.to_dict``), ``genomes`` (lists of files as
latin-1 strings), ``update`` ("cu" | "cm"), ``max_chunk_bytes``, ``max_block_beats``,
``pause`` (probability of a stall on every AXI channel), ``seed``.
"""

import dataclasses

import cocotb

from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels import params_from_dict
from kmerspec.kernels.jsd_builder import run_genomes
from sim.jsd.golden import compare_records, expected_record
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
SRC_BASE = 0x1000
DST_BASE = 0x200000
FILL = 0xA5


@cocotb.test()
async def test_records_match_golden(dut):
    clk = dut.ap_clk
    rd_ram, wr_ram, axil = await start_two_memory_kernel(dut, MEM, PAUSE, SEED)
    monitors = (BurstMonitor(dut, "m_axi_gmem0", clk), BurstMonitor(dut, "m_axi_gmem1", clk))
    driver = KernelDriver(axil, GEOMETRY.desc, clk)
    update = P.get("update", "cu")
    genomes = [[text.encode("latin-1") for text in files] for files in P["genomes"]]
    calls = []

    # each chunk is one kernel run; the outputs are then decoded by the host's own run_genomes
    outputs = []
    blocks = plan_blocks(genomes, GEOMETRY,
                         max_block_beats=int(P.get("max_block_beats", 64)))
    for chunk, tags in pack_chunks(blocks, GEOMETRY,
                                   max_chunk_bytes=int(P.get("max_chunk_bytes", 1 << 20))):
        size = len(tags) * GEOMETRY.record_bytes
        rd_ram.write(SRC_BASE, chunk)
        wr_ram.write(DST_BASE, bytes([FILL]) * (size + 256))
        cycles = await driver.run(
            timeout_cycles=40 * len(chunk) + (len(tags) + 2) * (8 * GEOMETRY.record_bytes
                                                                 + (64 << GEOMETRY.cw)) + 20_000,
            src=SRC_BASE, n_bytes=len(chunk), dst=DST_BASE, n_records=len(tags),
            update=int(update == "cm"))
        assert wr_ram.read(DST_BASE + size, 256) == bytes([FILL]) * 256, "wrote past the end"
        outputs.append(wr_ram.read(DST_BASE, size))
        calls.append((len(chunk), len(tags), cycles))
        dut._log.info("chunk of %d bytes (%d beats), %d records: %d cycles", len(chunk),
                      len(chunk) // GEOMETRY.bus_bytes, len(tags), cycles)

    replay = iter(outputs)
    records = run_genomes(genomes, GEOMETRY, lambda chunk, count: next(replay),
                          max_block_beats=int(P.get("max_block_beats", 64)),
                          max_chunk_bytes=int(P.get("max_chunk_bytes", 1 << 20)))
    golden = dataclasses.replace(GEOMETRY.algorithm, update=update)
    compare_records(records, [expected_record(tag, files, golden)
                              for tag, files in enumerate(genomes)])
    assert len(calls) >= 2, "the test should span several chunks"
    for monitor in monitors:
        assert not monitor.errors, monitor.errors[:5]
