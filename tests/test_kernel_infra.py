"""Shared Vitis kernel infrastructure under cocotb: the control register map (at the offsets
kernel.xml states), the checksum example kernel end to end with random backpressure, and the
burst reader/writer (1 beat/cycle, 4 KiB crossings, unaligned lengths, 256-beat cap)."""

import pytest

from hw.axi import RegArg
from hw.kernels.checksum import ChecksumKernel, ChecksumParams
from hw.vitis.kernel_xml import kernel_xml, parse_kernel_xml
from sim.harness import ControlHarness, CopyKernel
from sim.runner import run_cocotb, available_simulators

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")


def _regs_from_kernel_xml(desc):
    parsed = parse_kernel_xml(kernel_xml(desc))
    return [[a["name"], 8 * a["size"], a["offset"]] for a in parsed["args"]], parsed


def test_control_regmap_matches_kernel_xml():
    """Offsets come from the generated kernel.xml; the cocotb test writes/reads every one of them
    over AXI-Lite and checks what the RTL register (and the snapshot at start) holds."""
    regs, parsed = _regs_from_kernel_xml(ChecksumParams().desc)
    assert [r[2] for r in regs] == [0x10, 0x18, 0x20, 0x28]
    reg_args = [RegArg(n, w) for n, w, _ in regs]
    run_cocotb(ControlHarness(reg_args), "sim.tb_control", toplevel="ctl_harness",
               parameters={"regs": regs, "pause": 0.0})


def test_control_regmap_many_args_backpressure():
    """A longer mixed argument list (alignment padding between scalars and pointers) with random
    idle cycles on every AXI-Lite channel."""
    from hw.vitis import KernelDesc, Arg, Bundle
    desc = KernelDesc("many", args=[
        Arg("n0", "scalar"), Arg("p0", "pointer", "g"), Arg("n1", "scalar"), Arg("n2", "scalar"),
        Arg("n3", "scalar"), Arg("p1", "pointer", "g"), Arg("p2", "pointer", "g"),
        Arg("n4", "scalar")], bundles=[Bundle("g")])
    regs, _ = _regs_from_kernel_xml(desc)
    assert [r[2] for r in regs] == [0x10, 0x18, 0x20, 0x24, 0x28, 0x30, 0x38, 0x40]
    run_cocotb(ControlHarness([RegArg(n, w) for n, w, _ in regs]), "sim.tb_control",
               toplevel="ctl_harness_many", parameters={"regs": regs, "pause": 0.3})


# (src offset, dst offset, n bytes): unaligned lengths, 0, sub-beat, crossings of 4 KiB pages
CASES = [
    [0, 0, 1], [0, 0, 64], [0, 0, 65], [64, 128, 63], [0, 0, 0], [0, 0, 4],
    [0xFC0, 0x40, 128],            # read crosses 4 KiB after one beat
    [0x40, 0xFC0, 130],            # write crosses 4 KiB after one beat
    [0xF00, 0x1F80, 4096 + 37],    # several pages, partial tail
    [0, 0, 3 * 4096],              # exactly 3 pages, 64-beat bursts
    [0x1000 - 64, 0x2000 - 128, 9000],
]


@pytest.mark.parametrize("pause", [0.0, 0.35])
def test_checksum_kernel_end_to_end(pause):
    run_cocotb(ChecksumKernel(), "sim.tb_kernel",
               parameters={"kernel": "checksum", "data_width": 512, "rd": "gmem0", "wr": "gmem1",
                           "cases": CASES, "pause": pause, "seed": int(pause * 100),
                           "throughput": [128 * 1024, 0.97] if pause == 0 else None})


def test_reader_writer_narrow_bus_256_beat_cap():
    """32-bit bus: a 4 KiB page is 1024 beats, so bursts are capped at 256 beats."""
    cases = [[0, 0, 5000], [0x800, 0x10, 4096], [4, 0, 7], [0, 4, 1], [0xFFC, 0xFF8, 9]]
    run_cocotb(CopyKernel(32), "sim.tb_kernel",
               parameters={"kernel": "copy", "data_width": 32, "rd": "rd", "wr": "wr",
                           "cases": cases, "pause": 0.25, "seed": 3,
                           "throughput": [16384, 0.97]})
