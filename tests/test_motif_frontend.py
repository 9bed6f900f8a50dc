# amaranth: UnusedElaboratable=no
"""Kernel front end (beats -> bytes -> parser -> bases with restarts) against the golden parser,
and its throughput of one byte per cycle."""

import random

import pytest
from amaranth.sim import Simulator

from kmerspec.kernels.motif import pack_files
from hw.motif.frontend import BaseFrontEnd
from tests.test_motif_engine import base_events, random_fasta


def run_frontend(stream_bytes, data_width=64, pause_probability=0.0, seed=0, bytes_per_cycle=1):
    """Send ``stream_bytes`` as beats; return (base events, cycles from first beat to idle)."""
    dut = BaseFrontEnd(data_width, bytes_per_cycle)
    nbytes = data_width // 8
    beats = [stream_bytes[i:i + nbytes] for i in range(0, len(stream_bytes), nbytes)]
    rng = random.Random(seed)
    events = []
    cycles = []

    async def producer(ctx):
        for index, beat in enumerate(beats):
            while rng.random() < pause_probability:
                ctx.set(dut.i.valid, 0)
                await ctx.tick()
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"data": int.from_bytes(beat, "little"),
                                    "keep": (1 << len(beat)) - 1,
                                    "last": index == len(beats) - 1})
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def consumer(ctx):
        cycle = 0
        started = False
        async for _, _, valid, payload, busy in ctx.tick().sample(
                dut.o.valid, dut.o.payload, dut.busy):
            cycle += 1
            if valid:
                events.append((payload.code, bool(payload.restart)))
            started = started or busy
            if started and not busy:
                cycles.append(cycle)
                return

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer, background=True)
    sim.run_until(1e-8 * (20 * len(stream_bytes) + 200))
    return events, cycles[0] if cycles else None, dut.latency


@pytest.mark.parametrize("bytes_per_cycle", [1, 2, 4, 8])
@pytest.mark.parametrize("pause_probability", [0.0, 0.4])
def test_bases_match_golden_parser(pause_probability, bytes_per_cycle):
    rng = random.Random(2)
    files = [random_fasta(rng, 10, alphabet="ACGTacgtN"),
             b"@read1\nACGTNACG\n+\nIIIIIIII\n@read2\nacgtac\n+\n!!!!!!\n",
             b"ACG\r\nTTA\nGG", b"", b"\n\n>only header"]
    stream_bytes = pack_files(files)
    events, _, _ = run_frontend(stream_bytes, pause_probability=pause_probability,
                                bytes_per_cycle=bytes_per_cycle)
    assert events == base_events(files)


def test_one_byte_per_cycle_with_one_byte_parser():
    stream_bytes = pack_files([b">r\n" + b"ACGT" * 250 + b"\n"])
    events, cycles, latency = run_frontend(stream_bytes, data_width=512)
    assert len(events) == 1000
    # every byte takes exactly one cycle: no bubble between beats
    assert cycles <= len(stream_bytes) + latency + 2


def test_one_base_per_cycle_with_two_byte_parser():
    """200 bp FASTA records with headers: more bytes than bases, yet one base leaves per cycle."""
    rng = random.Random(6)
    records = [b">seq%d\n%s\n" % (n, "".join(rng.choice("ACGT") for _ in range(200)).encode())
               for n in range(10)]
    stream_bytes = pack_files([b"".join(records)])
    events, cycles, latency = run_frontend(stream_bytes, data_width=512, bytes_per_cycle=2)
    assert len(events) == 2000
    assert cycles <= len(events) + latency + 4


def test_one_base_per_cycle_on_fastq_with_eight_byte_parser():
    """Real Illumina reads (SRR059298, 72 bp, 3.8 bytes per base with headers, '+' lines and
    qualities): the default 8-byte parser skips the other bytes fast enough that a base leaves
    in every cycle but a few (a 2-byte parser gives 0.45 bases per cycle here, a 4-byte 0.70)."""
    from kmerspec.kernels.motif import Params
    from sim.real_data import fastq_fragment

    reads = fastq_fragment(2000)
    events, cycles, latency = run_frontend(pack_files([reads]), data_width=512,
                                           bytes_per_cycle=Params().bytes_per_cycle)
    assert events == base_events([reads])
    assert cycles <= len(events) * 1.01 + latency + 8
