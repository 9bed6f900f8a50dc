"""cocotb test of the sketch kernel on its generated Verilog, driven over s_axi_control like XRT:
every register of every sketch and every (Z, nz) must equal the golden model, over several
chunks on the same kernel (genomes that span chunks keep their state, ended ones are cleared).

Measures, from the R channel of m_axi_gmem0 and the core's ``stalled`` flag: cycles per input
beat while streaming (every cycle the memory offers a beat and the core does not stop the input
must take it), and the length of every stop (the clear after reset, and the genome ends that wait
for the lane's other bank to be drained).

Parameters: ``params`` (``kmerspec.kernels.jacc_sketch.Params.to_dict()``), ``genomes`` (lists of files as latin-1
strings; or ``genomes_file``, a JSON file of them, for inputs too large for the environment),
``max_chunk_bytes``, ``max_block_beats``, ``pause`` (stall probability on every AXI
channel), ``seed``, ``memory``/``ddr`` (sim.tb_common.memory_timing), ``report`` (a JSON file
that receives every call's beats and cycles and the genome-end stops, for bench/), and
``min_count`` (m of SPEC 7, for a kernel built with the prefilter; with m > 1 a lane takes one
k-mer per cycle, so the input waits and the one-beat-per-cycle check gives way to a count of
cycles per k-mer).
"""

import json
import pathlib

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from kmerspec.chunks import plan_blocks
from kmerspec.kernels import params_from_dict
from kmerspec.golden.parse import genome_kmers
from kmerspec.kernels.jacc_sketch import run_genomes
from sim.runner import params
from sim.sketch.golden import compare_records, expected_record
from sim.tb_common import KernelBench

P = params()
GEOMETRY = params_from_dict(P["params"])


class ThroughputMonitor:
    """Per cycle: input beats offered/taken while the core does not stop the input, and the
    lengths of its stops."""

    def __init__(self, dut):
        self.dut = dut
        self.offered = 0
        self.taken = 0
        self.stops = []
        cocotb.start_soon(self._run())

    async def _run(self):
        dut = self.dut
        ending_flag = dut.core.core.stalled   # the SketchCore inside the kernel shell
        stop = 0
        while True:
            await RisingEdge(dut.ap_clk)
            await ReadOnly()
            if not ending_flag.value.is_resolvable:   # Icarus: X until the reset reaches it
                continue
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


@cocotb.test()
async def test_records_match_golden(dut):
    bench = await KernelBench.start(dut, GEOMETRY.desc)
    monitor = ThroughputMonitor(dut)
    texts = P["genomes"] if "genomes" in P else \
        json.loads(pathlib.Path(P["genomes_file"]).read_text())
    genomes = [[text.encode("latin-1") for text in files] for files in texts]
    max_block_beats = int(P.get("max_block_beats", 64))
    max_chunk_bytes = int(P.get("max_chunk_bytes", 1 << 20))
    min_count = int(P.get("min_count", 1))
    scalars = {"min_count": min_count} if GEOMETRY.prefilter is not None else {}
    filtering = min_count > 1
    # a filtering lane takes one k-mer per cycle and clears its Count-Min at each genome end
    per_beat = 50 * (GEOMETRY.bytes_per_lane if filtering else 1)
    clear = (1 << GEOMETRY.mc_width_bits) if scalars else 0

    outputs = await bench.run_chunks(
        genomes, GEOMETRY,
        lambda chunk, tags: per_beat * len(chunk) // GEOMETRY.bus_bytes
        + (len(tags) + 2) * 40 * (GEOMETRY.registers // 16 + 64) + 2 * clear + 20_000,
        max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes, **scalars)

    replay = iter(outputs)
    records = run_genomes(genomes, GEOMETRY, lambda chunk, count: next(replay),
                          max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes)
    compare_records(records, [expected_record(tag, files, GEOMETRY.k, GEOMETRY, min_count)
                              for tag, files in enumerate(genomes)])
    # a regression spans several chunks; a bench may measure one host call (``min_calls`` 1)
    assert len(outputs) >= int(P.get("min_calls", 2)), "the test should span several chunks"
    bench.check_bursts()
    kmers = sum(sum(1 for _ in genome_kmers(files, GEOMETRY.k)) for files in genomes)
    if filtering:
        # the memory offers a beat in every cycle outside genome ends that the core holds or takes
        dut._log.info("MIN COUNT m=%d: %d k-mers, %d beats taken in %d cycles with a beat "
                      "offered (no genome end): %.2f cycles per beat, %.2f cycles per k-mer per "
                      "lane", min_count, kmers, monitor.taken, monitor.offered,
                      monitor.offered / max(1, monitor.taken),
                      monitor.offered * GEOMETRY.lanes / max(1, kmers))
    else:
        assert monitor.taken == monitor.offered > 0, (monitor.taken, monitor.offered)
    ends = sum(len(block.genomes_ended)
               for block in plan_blocks(genomes, GEOMETRY, max_block_beats=max_block_beats))
    dut._log.info("THROUGHPUT streaming: %d beats offered, %d taken: %.2f cycles per beat",
                  monitor.offered, monitor.taken, monitor.offered / monitor.taken)
    dut._log.info("GENOME ENDS: %d genomes, %d stops of %s cycles (all lanes stop)", ends,
                  len(monitor.stops), sorted(set(monitor.stops)))
    beats, cycles = map(sum, zip(*bench.calls))
    dut._log.info("WHOLE CALLS: %d beats in %d cycles from ap_start to ap_done: %.3f cycles per "
                  "beat", beats, cycles, cycles / beats)
    bench.write_report(stops=monitor.stops, offered=monitor.offered, taken=monitor.taken,
                       kmers=kmers)
