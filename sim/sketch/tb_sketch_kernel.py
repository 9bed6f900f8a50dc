"""cocotb test of the sketch kernel on its generated Verilog, driven over s_axi_control like XRT:
every register of every sketch and every (Z, nz) must equal the golden model, over several
chunks on the same kernel (genomes that span chunks keep their state, ended ones are cleared).

Measures, from the R channel of m_axi_gmem0 and the core's ``ending_genome`` flag: cycles per
input beat while streaming (every cycle the memory offers a beat and no genome is ending must
take it), and the length of every genome-end stop.

Parameters: ``params`` (``kmerspec.kernels.jacc_sketch.Params.to_dict()``), ``genomes`` (lists of files as latin-1
strings), ``max_chunk_bytes``, ``max_block_beats``, ``pause`` (stall probability on every AXI
channel), ``seed``.
"""

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from kmerspec.chunks import pack_chunks, plan_blocks
from kmerspec.kernels import params_from_dict
from kmerspec.kernels.jacc_sketch import run_genomes
from sim.kernel_driver import KernelDriver
from sim.runner import params
from sim.sketch.golden import compare_records, expected_record
from sim.tb_common import start_two_memory_kernel

P = params()
GEOMETRY = params_from_dict(P["params"])
DW = GEOMETRY.data_width
PAUSE = float(P.get("pause", 0.0))
SEED = int(P.get("seed", 0))
MEM = 1 << 22
SRC_BASE = 0x1000
DST_BASE = 0x200000
FILL = 0xA5


class ThroughputMonitor:
    """Per cycle: input beats offered/taken outside genome ends, and genome-end stop lengths;
    also checks every AR/AW burst (INCR, full width, no 4 KiB crossing)."""

    def __init__(self, dut):
        self.dut = dut
        self.offered = 0
        self.taken = 0
        self.stops = []
        self.errors = []
        cocotb.start_soon(self._run())

    def _check_burst(self, prefix, channel):
        addr = int(getattr(self.dut, f"{prefix}_{channel}ADDR").value)
        beats = int(getattr(self.dut, f"{prefix}_{channel}LEN").value) + 1
        if int(getattr(self.dut, f"{prefix}_{channel}BURST").value) != 1:
            self.errors.append(f"{prefix} {channel}: not INCR")
        if (addr & 0xFFF) + beats * DW // 8 > 0x1000 or addr % (DW // 8):
            self.errors.append(f"{prefix} {channel}: 0x{addr:x} x {beats} beats")

    async def _run(self):
        dut = self.dut
        ending_flag = dut.core.ending_genome
        stop = 0
        while True:
            await RisingEdge(dut.ap_clk)
            await ReadOnly()
            ending = int(ending_flag.value)
            rvalid = int(dut.m_axi_gmem0_RVALID.value)
            if ending:
                stop += 1
            else:
                if stop:
                    self.stops.append(stop)
                stop = 0
                self.offered += rvalid
                self.taken += rvalid & int(dut.m_axi_gmem0_RREADY.value)
            if int(dut.m_axi_gmem0_ARVALID.value) and int(dut.m_axi_gmem0_ARREADY.value):
                self._check_burst("m_axi_gmem0", "AR")
            if int(dut.m_axi_gmem1_AWVALID.value) and int(dut.m_axi_gmem1_AWREADY.value):
                self._check_burst("m_axi_gmem1", "AW")


@cocotb.test()
async def test_records_match_golden(dut):
    clk = dut.ap_clk
    rd_ram, wr_ram, axil = await start_two_memory_kernel(dut, MEM, PAUSE, SEED)
    monitor = ThroughputMonitor(dut)
    driver = KernelDriver(axil, GEOMETRY.desc, clk)
    genomes = [[text.encode("latin-1") for text in files] for files in P["genomes"]]
    max_block_beats = int(P.get("max_block_beats", 64))
    max_chunk_bytes = int(P.get("max_chunk_bytes", 1 << 20))

    outputs = []
    blocks = plan_blocks(genomes, GEOMETRY, max_block_beats=max_block_beats)
    chunks = pack_chunks(blocks, GEOMETRY, max_chunk_bytes=max_chunk_bytes)
    for chunk, tags in chunks:
        size = len(tags) * GEOMETRY.record_bytes
        rd_ram.write(SRC_BASE, chunk)
        wr_ram.write(DST_BASE, bytes([FILL]) * (size + 256))
        cycles = await driver.run(
            timeout_cycles=50 * len(chunk) // GEOMETRY.bus_bytes
            + (len(tags) + 2) * 40 * (GEOMETRY.registers // 16 + 64) + 20_000,
            src=SRC_BASE, n_bytes=len(chunk), dst=DST_BASE, n_records=len(tags))
        assert wr_ram.read(DST_BASE + size, 256) == bytes([FILL]) * 256, "wrote past the end"
        outputs.append(wr_ram.read(DST_BASE, size))
        dut._log.info("chunk of %d beats, %d records: %d cycles",
                      len(chunk) // GEOMETRY.bus_bytes, len(tags), cycles)

    replay = iter(outputs)
    records = run_genomes(genomes, GEOMETRY, lambda chunk, count: next(replay),
                          max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes)
    compare_records(records, [expected_record(tag, files, GEOMETRY.k, GEOMETRY)
                              for tag, files in enumerate(genomes)])
    assert len(chunks) >= 2, "the test should span several chunks"
    assert not monitor.errors, monitor.errors[:5]
    assert monitor.taken == monitor.offered > 0, (monitor.taken, monitor.offered)
    ends = sum(len(block.genomes_ended) for block in blocks)
    dut._log.info("THROUGHPUT streaming: %d beats offered, %d taken: %.2f cycles per beat",
                  monitor.offered, monitor.taken, monitor.offered / monitor.taken)
    dut._log.info("GENOME ENDS: %d genomes, %d stops of %s cycles (all lanes stop)", ends,
                  len(monitor.stops), sorted(set(monitor.stops)))
