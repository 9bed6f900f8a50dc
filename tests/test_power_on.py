"""No power-on assumption and no read-during-write assumption (docs/kernel_interface.md, "Clean
state").

Write-first memories: the units whose memories are read and written in the same cycle (PQA,
HLL update, Count-Min, heavy-hitter store, the JSD builder core) run their golden tests with every
synchronous read port made transparent to every write port of its memory (a write-first or
"transparent" block RAM, as UltraRAM behaves on a collision), so no result may depend on the
read-first behaviour the Amaranth default (and Yosys's mapping) gives. Mutants tried: the PQA
drain writing a queue empty in the cycle of its read (the code before this test) fails
``test_units_with_write_first_memories[pqa-*]`` (drained queues read empty); the HLL drain the
same (``[hll-drain]``); the HLL without its registered bypass fails
``test_hll_insert_right_after_the_drain_of_its_word`` with read-first memories.

Garbage start: every kernel, started with every memory word and every register random (sim.runner ``garbage_start``: the Verilog without its
zero memory initialisers and register init values, Verilator ``--x-initial unique`` and
``+verilator+rand+reset+2`` with a seed), must still give the golden records after the bench's
reset. Each bench is the kernel's own regression (the same geometry and checks as its test file,
fewer inputs), so what it compares is the kernel contract; each runs with the benches' default
random back-pressure and write-response latency, and the AXI protocol monitor on every port
(a VALID high in the reset, which a random start would show, fails it).

Mutant tried: the JSD builder with today's ``dirty`` flags (reset_less, so a reset clears only the
banks marked dirty; the first call after configuration clears nothing) fails
``test_builder_kernel_from_garbage``: the garbage of the banks not marked dirty reaches the
records (genome 0's first queue holds a garbage entry and a garbage count).
"""

import importlib
import random

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib.memory import Memory

from kmerspec.golden.hll import HllParams
from kmerspec.kernels.jacc_similarity import Params as JaccSimilarityParams
from kmerspec.kernels.motif import Params as MotifParams
from tests.similarity_sketches import sketch_set
from sim.runner import available_simulators, run_kernel_bench
from sim.sketch.golden import regression_genomes
from tests.genomes import random_genome_bytes
from tests.simulation import simulate
from tests.test_jsd_kernel import SIMILARITY, SMALL as BUILDER
from tests.test_motif_kernel import GEOMETRY as MOTIF_GEOMETRY, runs as motif_runs
from tests.test_sketch_kernel import FILTERED as SKETCH, adversarial_genomes

needs_verilator = pytest.mark.skipif("verilator" not in available_simulators(),
                                     reason="garbage_start needs Verilator")


@pytest.fixture
def write_first(monkeypatch):
    """Every Memory elaborated in the test reads like a write-first block RAM: each synchronous
    read port is transparent for every write port of its memory in its domain (a read of the
    address written in the same cycle returns the new data)."""
    elaborate = Memory.elaborate

    def write_first_elaborate(self, platform):
        for port in self._read_ports:
            if port.domain != "comb":
                port._transparent_for = tuple(write for write in self._write_ports
                                              if write.domain == port.domain)
        return elaborate(self, platform)

    monkeypatch.setattr(Memory, "elaborate", write_first_elaborate)


def read_during_write(memory_factory):
    """(what a read of address 3 returns while 3 is written with 0x55, the old word being 0x11)
    on a memory from ``memory_factory``: the tie of the ``write_first`` model to what it
    claims."""
    memory = memory_factory()
    m = Module()
    m.submodules.memory = memory
    read, write = memory.read_port(), memory.write_port()
    got = {}

    async def testbench(ctx):
        ctx.set(write.addr, 3)
        ctx.set(write.data, 0x11)
        ctx.set(write.en, 1)
        await ctx.tick()
        ctx.set(write.data, 0x55)
        ctx.set(read.addr, 3)
        ctx.set(read.en, 1)
        await ctx.tick()
        got["read"] = ctx.get(read.data)

    simulate(m, testbench)
    return got["read"]


def test_memories_read_first_by_default():
    assert read_during_write(lambda: Memory(shape=8, depth=8, init=[])) == 0x11


def test_write_first_model_returns_the_new_word(write_first):
    assert read_during_write(lambda: Memory(shape=8, depth=8, init=[])) == 0x55


#: (id, test module, test function, arguments): golden tests of every unit that reads and
#: writes one memory in one cycle, each including its drain or clear where it has one
WRITE_FIRST_CASES = [
    ("pqa-random", "tests.test_jsd_pqa", "test_pqa_random_with_ties", (4,)),
    ("pqa-collision", "tests.test_jsd_pqa", "test_pqa_each_forwarding_distance_alone", (4,)),
    ("pqa-banks", "tests.test_jsd_pqa", "test_pqa_banks_share_the_network", (2,)),
    ("hll-random", "tests.test_sketch_hash", "test_hll_update_random", (8, 4)),
    ("hll-same-word", "tests.test_sketch_hash", "test_hll_update_same_word_every_cycle", ()),
    ("hll-drain", "tests.test_sketch_hash",
     "test_hll_update_drains_one_bank_while_the_other_inserts", ()),
    ("countmin-same-key", "tests.test_countmin", "test_colliding_keys_with_bubbles",
     ("indices", 2, "cu", 0.0)),
    ("countmin-clear", "tests.test_countmin", "test_clear", (False, True, 2)),
    ("countmin-banks", "tests.test_countmin", "test_banks_share_the_pipeline", (2, 2, "cu")),
    ("store-random", "tests.test_motif_store", "test_random_operations", (4, 3, 0.0)),
    ("store-evict", "tests.test_motif_store", "test_set_fills_and_evicts_back_to_back", (3, 0)),
    ("builder-reset", "tests.test_jsd_builder", "test_reset_forgets_a_cut_off_genome", (2,)),
]


@pytest.mark.parametrize("module,function,arguments",
                         [pytest.param(*case[1:], id=case[0]) for case in WRITE_FIRST_CASES])
def test_units_with_write_first_memories(write_first, module, function, arguments):
    getattr(importlib.import_module(module), function)(*arguments)


def test_hll_insert_right_after_the_drain_of_its_word():
    """An insert into a bank accepted in the cycle of the bank's last drain, into the word that
    drain reads: the word's clear is written in the next cycle, in the cycle of the insert's read,
    so the registered bypass must give the insert a zero word (with either memory model: here the
    default read-first one, which would return the old word)."""
    from kmerspec.golden.hll import Hll, HllParams
    from hw.sketch.hll_update import HllUpdate
    from tests.test_sketch_hash import offer_hash, registers_of

    p, w = 8, 4
    low_bits = 64 - p
    words = 1 << (p - 4)
    # every register of the last word high, so a stale word shows
    first = [((words - 1) << 4 | slot) << low_bits for slot in range(16)]
    last = ((words - 1) << 4 | 7) << low_bits | (1 << (low_bits - 3))   # rank 3, register 7
    dut = HllUpdate(p, w)
    model = Hll(HllParams(p, w))
    model.insert_hash(last)
    result = {}

    async def testbench(ctx):
        for h in first:
            offer_hash(ctx, dut, h)
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(dut.latency)
        ctx.set(dut.drain_en, 1)
        for addr in range(words):
            ctx.set(dut.drain_addr, addr)
            offer_hash(ctx, dut, last if addr == words - 1 else None)
            await ctx.tick()
            ctx.set(dut.i.valid, 0)
        ctx.set(dut.drain_en, 0)
        await ctx.tick().repeat(dut.latency + 1)
        result["words"] = [ctx.get(dut.banks[0].data[a]) for a in range(words)]

    simulate(dut, testbench)
    assert registers_of(result["words"], w) == model.registers


#: the seed of the power-on garbage (any seed must pass; this one is what CI runs)
GARBAGE_SEED = 11


@needs_verilator
def test_builder_kernel_from_garbage():
    """Random PQA slots, Count-Min counters, FIFOs and flags: the first reset clears both banks
    of every lane before the first k-mer, so the records equal the golden model."""
    rng = random.Random(3)
    genomes = [[random_genome_bytes(rng, records=2, length=150, fastq=False).decode("latin-1")]
               for _ in range(4)]
    run_kernel_bench(BUILDER, "sim.jsd.tb_builder_kernel",
                     {"genomes": genomes, "update": "cu", "seed": 5,
                      "max_chunk_bytes": 384, "max_block_beats": 8},
                     garbage_start=GARBAGE_SEED)


@needs_verilator
def test_sketch_kernel_from_garbage():
    """Random partial-sketch banks and min-count counters: the reset clear zeroes them."""
    genomes = regression_genomes(seed=23, count=3, scale=300) + adversarial_genomes()[:1]
    run_kernel_bench(SKETCH, "sim.sketch.tb_sketch_kernel",
                     {"genomes": [[f.decode("latin-1") for f in files] for files in genomes],
                      "seed": 5, "max_chunk_bytes": 1024, "max_block_beats": 16,
                      "min_count": 2},
                     garbage_start=GARBAGE_SEED)


@needs_verilator
def test_motif_kernel_from_garbage():
    """Random Count-Min counters and store sets: every call clears them before counting."""
    run_kernel_bench(MotifParams(**MOTIF_GEOMETRY), "sim.motif.tb_motif_kernel",
                     {"runs": motif_runs()[:2], "seed": 3,
                      "max_overhead_cycles": 64},
                     garbage_start=GARBAGE_SEED)


@needs_verilator
def test_jsd_similarity_kernel_from_garbage():
    """Random pivot slots: every call loads its pivots before streaming."""
    runs = [{"pivots": [0, 1, 6], "pqas": [0, 1, 2, 3, 4, 5, 6], "mode": "textbook"},
            {"pivots": [2, 3], "pqas": [5, 2, 6, 0], "mode": "counts"}]
    run_kernel_bench(SIMILARITY, "sim.jsd.tb_similarity_kernel",
                     {"runs": runs, "records": 6, "seed": 2},
                     garbage_start=GARBAGE_SEED)


@needs_verilator
def test_jacc_similarity_kernel_from_garbage(tmp_path):
    """Random pivot memories: every call loads its pivot groups before streaming."""
    registers = sketch_set(6, 3, HllParams(10, 4), seed=3)
    np.save(tmp_path / "sketches.npy", registers)
    run_kernel_bench(JaccSimilarityParams(4, 2, 10, 4), "sim.jacc_similarity.tb_kernel",
                     {"sketches": str(tmp_path / "sketches.npy"), "seed": 5,
                      "runs": [[None, 0.0, None]], "out": str(tmp_path / "report.json")},
                     garbage_start=GARBAGE_SEED)


class PowerOnProbe:
    """A memory without initial contents (read at ``addr`` into ``word``; written only with
    ``write_enable``, which the bench keeps 0, so Yosys keeps it a memory), a ``reset_less``
    register (``flag``), a reset register (``counter``, reset 5) and a two-word ROM (0x5A, 0xA5,
    read at ``addr[0]``)."""

    DEPTH = 16

    def __new__(cls):
        from amaranth.hdl import Signal
        from amaranth.lib import wiring
        from amaranth.lib.wiring import In, Out

        class Probe(wiring.Component):
            addr: In(4)
            write_enable: In(1)
            write_data: In(32)
            word: Out(32)
            flag: Out(32)
            counter: Out(8)
            rom_word: Out(8)

            def elaborate(self, platform):
                m = Module()
                m.submodules.memory = memory = Memory(shape=32, depth=cls.DEPTH, init=[])
                m.submodules.rom = rom = Memory(shape=8, depth=2, init=[0x5A, 0xA5])
                read = memory.read_port()
                write = memory.write_port()
                rom_read = rom.read_port()
                m.d.comb += [read.addr.eq(self.addr), self.word.eq(read.data),
                             write.addr.eq(self.addr), write.data.eq(self.write_data),
                             write.en.eq(self.write_enable),
                             rom_read.addr.eq(self.addr[0]), self.rom_word.eq(rom_read.data)]
                held = Signal(32, reset_less=True)
                with m.If(self.write_enable):
                    m.d.sync += held.eq(self.write_data)
                counter = Signal(8, init=5)
                with m.If(self.write_enable):
                    m.d.sync += counter.eq(self.write_data)
                m.d.comb += [self.flag.eq(held), self.counter.eq(counter)]
                return m

        return Probe()


@needs_verilator
def test_garbage_start_randomises_memories_and_reset_less_registers(tmp_path):
    """The tie of ``garbage_start`` to what it claims, on Verilator itself: memory words and a
    reset_less register random (different for two seeds), reset registers and ROMs as designed;
    without it everything starts at 0."""
    from sim.runner import run_cocotb
    seen = []
    for garbage in (None, 1, 2):
        out = tmp_path / f"seen-{garbage}.json"
        run_cocotb(PowerOnProbe(), "sim.tb_power_on", garbage_start=garbage,
                   parameters={"garbage": garbage is not None, "depth": PowerOnProbe.DEPTH,
                               "out": str(out)})
        seen.append(__import__("json").loads(out.read_text()))
    assert seen[1]["words"] != seen[2]["words"], "two seeds gave the same power-on contents"
    assert seen[1]["flag"] != seen[2]["flag"] or seen[1]["flag"] not in (0,), \
        "the reset_less register is not random"


def test_without_power_on_values_keeps_roms_and_yosys_helpers():
    """Zero-initialised memories get random words, registers lose their init values; ROM
    contents and Yosys's helper registers stay."""
    from amaranth.back import verilog
    from sim.runner import without_power_on_values
    probe = PowerOnProbe()
    text = verilog.convert(probe, name="top")
    stripped = without_power_on_values(text)
    assert "memory[0] = 32'd0;" in text and "reg [31:0] flag = 32'd0;" in text
    assert "memory[0] =" not in stripped and "memory[i] = {$urandom};" in stripped
    assert "rom[0] = 8'h5a;" in stripped and "rom[1] = 8'ha5;" in stripped
    assert "reg [7:0] counter;" in stripped and "reg [31:0] flag;" in stripped
    assert all(line.strip().startswith("reg \\$auto$") for line in stripped.splitlines()
               if line.strip().startswith("reg ") and "=" in line)
