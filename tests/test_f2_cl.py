"""The F2 CL top (python -m hw.build --board f2), simulated and driven only through the shell's
ports (sim/tb_f2.py): OCL as an AXI4-Lite master, PCIS as an AXI4 master, the DDR model on the
CL's memory port, random back-pressure on every channel of every port (the benches' default:
stall probability 0.2 in runs of 1..7 cycles, B responses 0..64 cycles late), the project's AXI
monitor on OCL, SDA, PCIS, PCIM and the memory port.

* Sketch and similarity calls end to end, by the F2 driver (host.f2.F2Device: AWS's SDK calls,
  here the stand-in of sim/f2_sim.py, which routes them into that simulation) under the driver
  protocol of docs/kernel_interface.md: the sketches equal the golden model's HyperLogLog
  registers, every all-pairs row host.similarity.all_pairs's; traffic went through OCL, PCIS and
  the memory port, none through SDA and PCIM, and no burst owes anything at the end.
* The shell-facing rules of the CL: the directory (magic, units, memory size and status), a
  write to it refused (SLVERR), an OCL address past the last unit (DECERR, read data 0), a PCIS
  access past the 64 GiB of DDR (DECERR, nothing written), narrow and unaligned PCIS writes
  (byte strobes) read back, a kernel's pointer past the DDR reported by the kernel
  (ERROR_AXI_READ) and the unit usable again afterwards.
* PCIS beside a running kernel: a second user's 4 KiB reads and writes complete within the
  shell's 8 us PCIS timeout (sim/tb_f2.py enforces it) and the kernel's results stay exact.

One Verilator build of the small CL (tests/f2_build.py SMALL, about 1 CPU-minute) serves these
tests and tests/test_cli_f2_standin.py.
"""

import random
import signal

import numpy as np
import pytest

from host.drivers import all_pairs, sketch_genomes
from host.calls import DeviceError
from host.f2 import F2Device
from host.f2_binding import PROTOTYPES
from host.similarity import all_pairs as golden_all_pairs
from kmerspec import f2 as cl
from kmerspec.golden.hll import Hll, HllParams
from kmerspec.golden.parse import genome_kmers
from kmerspec.kernels import jacc_similarity, jacc_sketch
from kmerspec.regmap import CTRL, CTRL_AP_DONE, CTRL_AP_IDLE, CTRL_AP_START, ERROR_AXI_READ
from sim.axi_checker import checker_source, unavailable_reason
from sim.f2_sim import F2StandIn, simulation_design
from sim.runner import available_simulators
from tests.genomes import random_genome_bytes, related_sequences
from tests.interrupting import Interrupting

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")
needs_checker = pytest.mark.skipif(checker_source() is None, reason=str(unavailable_reason()))
#: every AXI port of the CL top, as sim/f2_sim.py binds AMD's checker to them
CHECKED = ["pcim_port", "pcis_port", "ocl_port", "sda_port", "memory_port"]

OKAY, SLVERR, DECERR = 0, 2, 3
K, HLL = 21, HllParams(10, 4)


def genomes():
    """Six genomes: related FASTA with CRLF and several records, a FASTQ, an empty one."""
    rng = random.Random(54)
    out = [[b">g%d\r\n%s\r\n>second\nACGTNNNNacgtacgtTTGA\n" % (i, text)]
           for i, text in enumerate(related_sequences(7, count=4, length=900, step=0.05))]
    out.append([random_genome_bytes(rng, records=4, length=150, fastq=True)])
    out.append([b""])
    return out


def test_sketch_and_similarity_calls(f2_stand_in):
    device = F2Device(0, api=f2_stand_in)
    try:
        assert set(device.units) == {"jacc_sketch", "jacc_similarity"}
        assert device.memory_bytes == cl.DDR_BYTES
        # the geometry comes from the units' identity words
        built = jacc_sketch.Params(k=K, p=HLL.p, lanes=2, bytes_per_lane=4).to_dict()
        assert device.geometry["jacc_sketch"] == {name: value for name, value in built.items()
                                                  if name not in ("kernel", "k", "p", "w")}
        data = genomes()
        registers = np.array(sketch_genomes(device, data, K, HLL))
        for files, got in zip(data, registers):
            expected = Hll(HLL).update(genome_kmers(files, K, canonical_form=True)).registers
            assert got.tolist() == list(expected)
        rows = list(all_pairs(device, registers, HLL, None))
        expected = list(golden_all_pairs(registers, HLL, None))
        assert [(i, list(js)) for i, js, _ in rows] == [(i, list(js)) for i, js, _ in expected]
        for (_, _, got), (_, _, want) in zip(rows, expected):
            assert np.array_equal(got, want)
        _, handshakes, checked, _ = f2_stand_in.request("report")
        # AMD's checker, where an aws-fpga checkout is named, watched every port (silent: a
        # pc_asserted fails the simulation at once)
        assert checked == (CHECKED if checker_source() else [])
        for port in ("ocl", "pcis", "memory"):
            assert handshakes[port]["AR"] and handshakes[port]["R"], (port, handshakes)
            assert handshakes[port]["AW"] and handshakes[port]["B"], (port, handshakes)
        assert not any(handshakes["sda"].values()) and not any(handshakes["pcim"].values())
        assert f2_stand_in.request("settled")[1] == []
        assert not f2_stand_in.ocl_responses and not f2_stand_in.pcis_responses
    finally:
        device.close()


def test_shell_rules(f2_stand_in):
    device = F2Device(0, api=f2_stand_in)
    try:
        words = cl.directory_words(["jacc_sketch", "jacc_similarity"])
        for offset, word in words.items():
            assert device.peek(offset) == word, hex(offset)
        assert device.peek(cl.STATUS) == cl.STATUS_MEMORY_READY
        assert device.peek(0x3C) == 0 and not f2_stand_in.ocl_responses
        device.poke(cl.UNITS, 7)                          # the directory is read-only
        assert device.peek(cl.UNITS) == 2
        assert f2_stand_in.ocl_responses == [(cl.UNITS, SLVERR)]
        past = cl.unit_window(2)                          # no third unit
        device.poke(past + 0x10, 1)
        assert device.peek(past) == 0
        assert f2_stand_in.ocl_responses[1:] == [(past + 0x10, DECERR), (past, DECERR)]

        # PCIS: narrow and unaligned writes (byte strobes), then past the DDR
        device.write_memory(0x2000, bytes(range(64)) * 2, "test")
        f2_stand_in.fpga_pci_poke(device._bars[4], 0x2003, 0xA1B2C3D4)
        expected = bytearray(bytes(range(64)) * 2)
        expected[3:7] = (0xA1B2C3D4).to_bytes(4, "little")
        assert device.read_memory(0x2000, 128, "test") == bytes(expected)
        beyond = cl.DDR_BYTES + 0x1000
        device.write_memory(beyond, b"\xff" * 64, "test")
        assert device.read_memory(beyond, 64, "test") == bytes(64)
        assert f2_stand_in.pcis_responses == [(beyond, DECERR), (beyond, DECERR)]
        assert device.read_memory(0x2000, 128, "test") == bytes(expected)

        # a kernel's pointer past the DDR, written over OCL as a host would: the kernel reports
        # the read error (the memory port answered DECERR), then works again
        kernel = jacc_similarity.Params(p=HLL.p, w=HLL.w, **device.geometry["jacc_similarity"])
        window = device.units["jacc_similarity"][0].window
        arguments = {"sketches": beyond, "features": 0x10000, "first_group": 0,
                     "pivot_groups": 1, "stream_groups": 0}
        for arg, slot in kernel.desc.register_map():
            for i, offset in enumerate(slot.words):
                device.poke(window + offset, arguments[arg.name] >> (32 * i))
        device.poke(window + CTRL, CTRL_AP_START)
        for _ in range(200):
            if device.peek(window + CTRL) & CTRL_AP_DONE:
                break
            f2_stand_in.sleep(4e-6)
        else:
            raise AssertionError("no ap_done after a read past the DDR")
        assert device.peek(window + kernel.desc.status_map().error) & 0xFF == ERROR_AXI_READ
        registers = sketch_genomes(device, genomes()[:1], K, HLL)
        assert registers[0].tolist() == list(
            Hll(HLL).update(genome_kmers(genomes()[0], K, canonical_form=True)).registers)
        assert f2_stand_in.request("settled")[1] == []
    finally:
        device.close()


def test_pcis_while_a_kernel_streams(f2_stand_in):
    """A second user of the card reads and writes card memory through PCIS (4 KiB bursts, as a
    host's copies come) while the similarity kernel streams sketches from the same memory: each
    PCIS transaction completes within the shell's 8 us timeout (sim/tb_f2.py fails the run
    otherwise), the kernel's rows equal the golden model's, the other user's bytes are intact."""
    import threading
    device = F2Device(0, api=f2_stand_in)
    rng = np.random.default_rng(54)
    registers = rng.integers(0, 12, size=(8, 1 << HLL.p), dtype=np.uint8)
    done, counts, errors = threading.Event(), {"read": 0, "write": 0}, []
    far = 1 << 30                       # a GiB up: beyond the driver's buffers

    def other_user():
        try:
            block = bytes(rng.integers(0, 256, 4096, dtype=np.uint8))
            while not done.is_set() and counts["read"] < 12:
                f2_stand_in.request("pcis_write", far, block)
                counts["write"] += 1
                if f2_stand_in.request("pcis_read", far, 4096)[1] != block:
                    errors.append("the other user's block changed")
                counts["read"] += 1
        except BaseException as error:          # reported below
            errors.append(repr(error))
    thread = threading.Thread(target=other_user)
    thread.start()
    try:
        rows = list(all_pairs(device, registers, HLL, None))
    finally:
        done.set()
        thread.join()
    try:
        expected = list(golden_all_pairs(registers, HLL, None))
        assert [(i, list(js), list(v)) for i, js, v in rows] == \
            [(i, list(js), list(v)) for i, js, v in expected]
        assert not errors, errors
        assert counts["read"] >= 4, counts      # the accesses overlapped the kernel's run
        longest = f2_stand_in.request("pcis_latency")[1]
        print(f"longest PCIS transaction beside the kernel: {longest} cycles "
              f"({counts} 4 KiB accesses)")
        assert 0 < longest["write"] <= 2000 and 0 < longest["read"] <= 2000
        assert f2_stand_in.request("settled")[1] == []
    finally:
        device.close()


def test_every_point_of_an_interrupted_call(f2_stand_in):
    """One sketch call interrupted just after each of its SDK calls in turn: whatever the
    point, nothing is left in flight and no buffer is freed while the unit may run; once
    ap_start is written and until the unit is seen idle, the call is abandoned (its card memory
    never reused), the unit named and the slot refused with the advice to clear and reload the
    AFI; before it, or once the run is over, its buffers are freed."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    proxy = Interrupting(f2_stand_in, PROTOTYPES)
    data = genomes()[:1]
    try:
        device = F2Device(0, api=proxy)
        sketch_genomes(device, data, K, HLL)        # the unit checked and started clean
        unit = device.units["jacc_sketch"][0]
        proxy.arm(None)
        sketch_genomes(device, data, K, HLL)
        sequence = list(proxy.calls)
        device.close()
        start = next(i for i, (name, args) in enumerate(sequence) if name == "fpga_pci_poke"
                     and args[1:] == (unit.window + CTRL, CTRL_AP_START))
        seen = set()
        for at in range(1, len(sequence) + 1):
            device = F2Device(0, api=proxy)
            sketch_unit = device.units["jacc_sketch"][0]
            sketch_unit.checked.add(jacc_sketch.Params(k=K, p=HLL.p, w=HLL.w,
                                                       **device.geometry["jacc_sketch"]))
            sketch_unit.needs_clean_start = False
            proxy.arm(at)
            with pytest.raises(KeyboardInterrupt):
                sketch_genomes(device, data, K, HLL)
            running = bool(device.still_running)
            if at - 1 < start:
                assert not running and device.memory.used == {}, sequence[at - 1]
            if running:
                assert device.still_running == [sketch_unit.name]
                assert device.memory.used, "buffers freed under a running unit"
                with pytest.raises(DeviceError, match=r"may still be running: clear and reload "
                                                      r"the AFI \(sudo fpga-clear-local-image -S "
                                                      r"0, then fpga-load-local-image\) before "
                                                      r"using the slot again$"):
                    sketch_genomes(device, data, K, HLL)
            else:
                assert device.memory.used == {}
            seen.add((sequence[at - 1][0], running))
            while not device.peek(sketch_unit.window + CTRL) & CTRL_AP_IDLE:   # as a reset
                f2_stand_in.sleep(1e-5)
            device.close()
        # the windows that matter are among the points: just after ap_start was written, and
        # while CTRL is polled
        assert ("fpga_pci_poke", True) in seen and ("fpga_pci_peek", True) in seen
        assert ("fpga_pci_peek", False) in seen
    finally:
        signal.signal(signal.SIGINT, previous)


@needs_checker
def test_amds_checker_catches_bvalid_dropped_before_bready(f2_cl_dir):
    """A mutant CL whose OCL BVALID falls every other cycle, whatever BREADY does: with the
    project's monitor on OCL left off, AMD's checker alone fails the run, naming the rule."""
    mutant = [(".ocl_BVALID(cl_ocl_bvalid)", ".ocl_BVALID(mutant_bvalid)"),
              ("\nendmodule", "\n  logic mutant_phase = 1'b0;\n"
               "  always_ff @(posedge clk_main_a0) mutant_phase <= ~mutant_phase;\n"
               "  assign cl_ocl_bvalid = mutant_bvalid & mutant_phase;\nendmodule")]
    design = simulation_design(f2_cl_dir, mutant=mutant)
    stand_in = F2StandIn(f2_cl_dir, design=design, parameters={"unmonitored": ["ocl"]})
    try:
        device = F2Device(0, api=stand_in)        # reads only: no B yet
        with pytest.raises(Exception) as failure:
            sketch_genomes(device, genomes()[:1], K, HLL)
        assert "ocl_port: AMD AXI protocol checker" in str(failure.value)
        assert "AXI_ERRS_BVALID_STABLE" in str(failure.value)
    finally:
        try:
            stand_in.release()
        except Exception:       # the simulation failed, as it must
            pass


@pytest.mark.slow
def test_the_default_geometry_cl(tmp_path):
    """The CL python -m hw.build --board f2 builds by default (kmer_jacc: jacc_sketch with 8
    lanes of 8 bytes, jacc_similarity with V = 80, D = 4, p = 14), simulated as above: a sketch
    call and an all-pairs call equal the golden model. Measured with AMD's checker bound: 1,161 s
    user + 88 s system CPU, 3.9 GB peak (Verilator's build of both kernels), 1 h 36 min wall on
    the shared 2-core machine."""
    from tests.f2_build import hw_build_f2
    cl_dir, _ = hw_build_f2(tmp_path / "default", build={"jacc_sketch": {}, "jacc_similarity": {}})
    stand_in = F2StandIn(cl_dir)
    params = HllParams(14, 4)
    try:
        device = F2Device(0, api=stand_in)
        data = genomes()[:2]
        registers = np.array(sketch_genomes(device, data, 31, params))
        for files, got in zip(data, registers):
            expected = Hll(params).update(genome_kmers(files, 31, canonical_form=True)).registers
            assert got.tolist() == list(expected)
        rows = list(all_pairs(device, registers, params, None))
        expected = list(golden_all_pairs(registers, params, None))
        assert [(i, list(js), list(v)) for i, js, v in rows] == \
            [(i, list(js), list(v)) for i, js, v in expected]
        assert stand_in.request("settled")[1] == []
        device.close()
    finally:
        stand_in.release()
