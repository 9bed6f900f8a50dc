"""cocotb test of the JSD queue-builder kernel on its generated Verilog, driven over
s_axi_control like XRT does: every PQA entry, the entropy and the total of every genome must
equal the golden model, over several chunks on the same kernel (genomes that span chunks keep
their state, ended genomes must have been cleared).

Parameters: ``params`` (the kernel's Params, ``kmerspec.kernels.jsd_builder.Params.to_dict``), ``genomes`` (lists of files as
latin-1 strings), ``update`` ("cu" | "cm"), ``max_chunk_bytes``, ``max_block_beats``,
``pause`` (probability of a stall on every AXI channel), ``seed``, ``memory``/``ddr``
(sim.tb_common.memory_timing), ``genomes_file`` (a JSON file of the genomes instead of
``genomes``, for inputs too large for the environment), ``report`` (a JSON file that receives
every call's input beats and cycles, for bench/default_geometry.py).
"""

import dataclasses
import json
import pathlib

import cocotb

from kmerspec.kernels import params_from_dict
from kmerspec.kernels.jsd_builder import run_genomes
from sim.jsd.golden import compare_records, expected_record
from sim.runner import params
from sim.tb_common import KernelBench

P = params()
GEOMETRY = params_from_dict(P["params"])


@cocotb.test()
async def test_records_match_golden(dut):
    bench = await KernelBench.start(dut, GEOMETRY.desc)
    update = P.get("update", "cu")
    texts = P["genomes"] if "genomes" in P else \
        json.loads(pathlib.Path(P["genomes_file"]).read_text())
    genomes = [[text.encode("latin-1") for text in files] for files in texts]
    max_block_beats = int(P.get("max_block_beats", 64))
    max_chunk_bytes = int(P.get("max_chunk_bytes", 1 << 20))

    # each chunk is one kernel run; the outputs are then decoded by the host's own run_genomes
    outputs = await bench.run_chunks(
        genomes, GEOMETRY,
        lambda chunk, tags: 40 * len(chunk) + (len(tags) + 2) * (8 * GEOMETRY.record_bytes
                                                                 + (64 << GEOMETRY.cw)) + 20_000,
        max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes,
        update=int(update == "cm"))

    replay = iter(outputs)
    records = run_genomes(genomes, GEOMETRY, lambda chunk, count: next(replay),
                          max_block_beats=max_block_beats, max_chunk_bytes=max_chunk_bytes)
    golden = dataclasses.replace(GEOMETRY.algorithm, update=update)
    compare_records(records, [expected_record(tag, files, golden)
                              for tag, files in enumerate(genomes)])
    bench.check_bursts()
    bench.write_report()
    # a regression spans several chunks; a bench may measure one host call (``min_calls`` 1)
    assert len(outputs) >= int(P.get("min_calls", 2)), "the test should span several chunks"
