# amaranth: UnusedElaboratable=no
"""Lane parser and k-mer buffer against the golden parser (kmerspec/golden/parse.py)."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from kmerspec.golden.parse import base_runs, kmers
from hw.sketch.kmer_buffer import KmerBuffer
from hw.sketch.parser import ByteRole, LaneParser, LineState, line_step
from sim.sketch.streams import SAMPLE_FILES, lane_beats, random_genome_file


def model_runs(data: bytes):
    """Base runs from the byte-level state machine that the hardware implements."""
    runs, run, state = [], [], LineState.LS_RECORD
    for byte in data:
        state, role = line_step(state, byte)
        if role == ByteRole.BASE:
            run.append("ACGT".index(chr(byte).upper()))
        elif role == ByteRole.BREAK and run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


@pytest.mark.parametrize("name", sorted(SAMPLE_FILES))
def test_byte_state_machine_matches_golden_samples(name):
    assert model_runs(SAMPLE_FILES[name]) == list(base_runs(SAMPLE_FILES[name]))


def test_byte_state_machine_matches_golden_random():
    rng = random.Random(11)
    alphabet = b">@+\r\n\nACGTacgtN-"
    for _ in range(3000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert model_runs(data) == list(base_runs(data)), data
    for _ in range(50):
        data = random_genome_file(rng, 400)
        assert model_runs(data) == list(base_runs(data)), data


def run_front_end(files, bytes_per_lane, k, seed, pad_probability=0.2, idle_probability=0.2,
                  bytes_per_stage=1):
    """Simulate LaneParser -> KmerBuffer over ``files`` (end_of_file after each); return the
    forward k-mers in output order."""
    rng = random.Random(seed)
    m = Module()
    m.submodules.parser = parser = LaneParser(bytes_per_lane, bytes_per_stage=bytes_per_stage)
    m.submodules.buffer = buffer = KmerBuffer(bytes_per_lane, k)
    m.d.comb += [buffer.i.valid.eq(parser.o.valid), buffer.i.payload.eq(parser.o.payload)]
    beats = []
    for data in files:
        file_beats = lane_beats(data, bytes_per_lane, rng, pad_probability) or [(0, 0)]
        beats += [(value, valid, index == len(file_beats) - 1)
                  for index, (value, valid) in enumerate(file_beats)]
    got = []
    done = False

    async def producer(ctx):
        nonlocal done
        for value, valid, eof in beats:
            while rng.random() < idle_probability:
                ctx.set(parser.i.valid, 0)
                await ctx.tick()
            ctx.set(parser.i.valid, 1)
            ctx.set(parser.i.payload, {"bytes": value, "byte_valid": valid, "end_of_file": eof})
            await ctx.tick()
        ctx.set(parser.i.valid, 0)
        await ctx.tick().repeat(parser.latency + buffer.latency + 2)
        done = True

    async def consumer(ctx):
        async for _, _, valid, payload in ctx.tick().sample(buffer.o.valid, buffer.o.payload):
            if valid:
                for q in range(bytes_per_lane):
                    if (payload.valid >> q) & 1:
                        got.append(payload.words[q])
            if done:
                return

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer, background=True)
    sim.run()
    return got


@pytest.mark.parametrize("bytes_per_lane,k", [(8, 31), (4, 5), (8, 3), (3, 1), (2, 32)])
def test_front_end_matches_golden(bytes_per_lane, k):
    files = [SAMPLE_FILES[name] for name in sorted(SAMPLE_FILES)]
    files += [b"", random_genome_file(random.Random(k), 600), b">long\n" + b"ACGTTGCAAC" * 5]
    expected = [word for data in files for word in kmers(data, k, canonical_form=False)]
    assert expected, "stimulus without k-mers cannot fail"
    got = run_front_end(files, bytes_per_lane, k, seed=bytes_per_lane * 100 + k)
    assert got == expected


@pytest.mark.parametrize("bytes_per_stage", [2, 3])
def test_front_end_with_several_bytes_per_parser_stage(bytes_per_stage):
    files = [SAMPLE_FILES[name] for name in sorted(SAMPLE_FILES)]
    files += [random_genome_file(random.Random(bytes_per_stage), 600)]
    expected = [word for data in files for word in kmers(data, 5, canonical_form=False)]
    assert run_front_end(files, 8, 5, seed=bytes_per_stage, bytes_per_stage=bytes_per_stage) \
        == expected


def test_front_end_every_byte_a_base():
    # adversarial: a full B k-mers in every cycle, no idle
    data = b">x\n" + bytes(random.Random(3).choice(b"ACGT") for _ in range(500))
    expected = list(kmers(data, 31, canonical_form=False))
    assert run_front_end([data], 8, 31, seed=1, pad_probability=0, idle_probability=0) == expected


def test_parameter_errors():
    with pytest.raises(ValueError, match=r"^bytes_per_lane must be a positive integer, not 0$"):
        LaneParser(0)
    with pytest.raises(ValueError, match=r"^k must be an integer from 1 to 32, not 33$"):
        KmerBuffer(8, 33)
