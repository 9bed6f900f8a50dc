"""The ECP5 flow's machinery on a real routed design small enough for every CI run (about two
minutes): a miniature of the self-test with its LED protocol goes through Amaranth's Trellis build
files and the YoWASP Yosys, nextpnr-ecp5 and ecppack (:func:`hw.ecp5.flow.run_flow`, the
commands ``python -m hw.build --board ulx3s`` runs), nextpnr's report is read, the estimate's
delays are checked against the arcs nextpnr reports, and the routed netlist runs in Icarus with
Yosys's ECP5 models: it passes, and with the LUT of ``generator.state0[0]``'s next value inverted
(the mutation ``python -m sim.ecp5_postroute --mutate generator`` makes) it fails.

The miniature: a 32-bit xorshift32 ``generator.state0`` (the self-test's input generator's state,
kmerspec.selftest.xorshift32) stepped ``STEPS`` times while a counter runs (a carry chain), each
state's low 18 bits written to a block RAM (one DP16KD in 1,024 x 18, the configuration of the
sketch core's register banks), then read back in order and folded into a rotate-and-xor checksum;
then LED 1 (done) and LED 2 (pass: the state and the checksum equal the golden model's) or LED 3
(fail). The block RAM puts its clock-to-out arc on nextpnr's critical path (so the estimate's
block RAM delay is checked against the router) and the DP16KD model of the post-route simulation
(sim/ecp5_bram.py) in the loop: with the model's byte enables ignored, the run fails."""

import json

import pytest
from amaranth.hdl import Cat, Elaboratable, Module, Signal
from amaranth.lib import io
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from kmerspec.selftest import xorshift32
from hw.ecp5 import estimate as ecp5_estimate
from hw.ecp5.flow import NAME, check_route, run_flow, write_build_files
from sim.ecp5_postroute import simulate
from hw.ecp5.report import register_path, summarise
from hw.ecp5.tools import tool_env
from hw.vitis.boards import load_board

STEPS = 150
SEED = 0x5EED1234
WORD = 18                      # the block RAM's width, as the sketch core's banks
#: the cycle the miniature shows done: STEPS writes, STEPS reads, one read latency
DONE_CYCLE = 2 * STEPS + 1


def states():
    s = [SEED]
    for _ in range(STEPS):
        s.append(xorshift32(s[-1]))
    return s


def golden():
    return states()[STEPS]


def rotl(value, width=WORD):
    return ((value << 1) | (value >> (width - 1))) & ((1 << width) - 1)


def golden_checksum():
    """The rotate-and-xor of the words the block RAM holds, read in address order."""
    acc = 0
    for s in states()[:STEPS]:
        acc = rotl(acc) ^ (s & ((1 << WORD) - 1))
    return acc


class Generator(Elaboratable):
    def __init__(self):
        self.state0 = Signal(32, init=SEED)
        self.run = Signal()

    def elaborate(self, platform):
        m = Module()
        s = self.state0
        s1 = s ^ (s << 13)[:32]
        s2 = s1 ^ (s1 >> 17)
        with m.If(self.run):
            m.d.sync += s.eq(s2 ^ (s2 << 5)[:32])
        return m


class MiniSelfTest(Elaboratable):
    def __init__(self):
        self.lights = [Signal(name=f"light{j}") for j in range(4)]   # heartbeat, done, pass, fail

    def elaborate(self, platform):
        m = Module()
        m.submodules.generator = gen = Generator()
        m.submodules.bank = bank = Memory(shape=WORD, depth=1024, init=[])
        write, read = bank.write_port(), bank.read_port()
        count = Signal(16)
        writing = count < STEPS
        reading = (count >= STEPS) & (count < 2 * STEPS)
        read_valid, checksum = Signal(), Signal(WORD)
        done = Signal()
        m.d.comb += [done.eq(count == DONE_CYCLE), gen.run.eq(writing),
                     write.en.eq(writing), write.addr.eq(count), write.data.eq(gen.state0[:WORD]),
                     read.addr.eq(count - STEPS)]
        m.d.sync += read_valid.eq(reading)
        with m.If(read_valid):
            m.d.sync += checksum.eq(Cat(checksum[-1], checksum[:-1]) ^ read.data)
        with m.If(~done):
            m.d.sync += count.eq(count + 1)
        right = (gen.state0 == golden()) & (checksum == golden_checksum())
        passed, failed = done & right, done & ~right
        m.d.comb += [light.eq(value) for light, value in
                     zip(self.lights, (count[3], done, passed, failed))]
        if platform is not None:
            for j, value in enumerate(self.lights):
                m.submodules[f"light{j}"] = pad = io.Buffer("o", platform.request("led", j,
                                                                                  dir="-"))
                m.d.comb += pad.o.eq(value)
        return m


def test_the_miniature_rtl_passes_at_its_done_cycle():
    """The golden values above and the RTL agree before any tool runs (Amaranth's simulator)."""
    dut = MiniSelfTest()
    seen = {}

    async def bench(ctx):
        for cycle in range(1, 2 * DONE_CYCLE):
            await ctx.tick()
            heartbeat, done, passed, failed = (ctx.get(light) for light in dut.lights)
            if done:
                seen.update(cycle=cycle, passed=passed, failed=failed)
                return

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == {"cycle": DONE_CYCLE, "passed": 1, "failed": 0}


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    board = load_board("ulx3s")
    bdir = tmp_path_factory.mktemp("ecp5_flow") / "ulx3s"
    bdir.mkdir()
    from hw.selftest.board import board_platform
    write_build_files(board_platform(board), MiniSelfTest(), bdir)
    (bdir / "selftest.json").write_text(json.dumps({
        "clock_hz": board["clock_hz"], "timeout_cycles": 2 * DONE_CYCLE,
        "expected": {"checksum": f"0x{golden():08x}", "records": 0}}))
    lines, errors = [], []
    status = run_flow(bdir, board, tool_env(), lines.append, errors.append)
    return bdir, status, lines, errors


def test_the_flow_writes_a_bitstream_and_reads_nextpnr_report(routed):
    bdir, status, lines, errors = routed
    assert status == 0 and not errors, errors
    text = "\n".join(lines)
    for step in ("Yosys synth_ecp5", "nextpnr-ecp5 placement and routing", "ecppack"):
        assert f"{step} ($" in text and f"{step} done in" in text
    bit = (bdir / f"{NAME}.bit").read_bytes()
    assert bit[:2] == b"\xff\x00" and b"\xff\xff\xbd\xb3" in bit[:4096]
    assert "synth_ecp5 -nodsp" in (bdir / f"{NAME}.ys").read_text()
    assert "--85k" in (bdir / f"build_{NAME}.sh").read_text()
    report = json.loads((bdir / "ecp5.json").read_text())
    clock = next(iter(report["fmax"].values()))
    assert clock["constraint_mhz"] == 25.0 and clock["achieved_mhz"] > 25.0
    assert report["utilisation"]["TRELLIS_FF"][0] >= 48
    path = register_path(summarise(json.loads((bdir / f"{NAME}_report.json").read_text())))
    assert path["delay_ns"] == pytest.approx(
        path["logic_ns"] + path["routing_ns"] + path["clk_to_q_ns"] + path["setup_ns"], abs=0.01)
    est = report["estimate"]
    assert est["design"]["estimate_levels"] >= 1
    assert 0 < est["critical_endpoint"]["estimate_ns"] <= est["design"]["estimate_ns"]


def test_timing_below_the_board_clock_exits_2(routed, tmp_path):
    bdir, status, lines, errors = routed
    assert status == 0
    report = json.loads((bdir / f"{NAME}_report.json").read_text())
    achieved = next(iter(report["fmax"].values()))["achieved"]
    for clock in report["fmax"].values():
        clock["constraint"] = achieved * 1.5
    (tmp_path / f"{NAME}_report.json").write_text(json.dumps(report))
    (tmp_path / "selftest.json").write_text((bdir / "selftest.json").read_text())
    errs = []
    assert check_route(tmp_path, load_board("ulx3s"), lambda m: None, errs.append,
                       estimate=False) == 2
    assert len(errs) == 1 and "timing not met" in errs[0] and "\n" not in errs[0]
    real = tmp_path / "real"         # check_route writes ecp5.json: not into the shared build
    real.mkdir()
    for name in (f"{NAME}_report.json", "selftest.json"):
        (real / name).write_text((bdir / name).read_text())
    assert check_route(real, load_board("ulx3s"), lambda m: None, errs.append,
                       estimate=False) == 0 and len(errs) == 1


def test_the_estimate_delays_are_nextpnr_own(routed):
    """Every arc of nextpnr's critical paths that :data:`NEXTPNR_ARCS` names has the model's
    delay (cell type and mode from the routed netlist)."""
    bdir, status, lines, errors = routed
    assert status == 0
    report = json.loads((bdir / f"{NAME}_report.json").read_text())
    cells = next(iter(json.loads((bdir / f"{NAME}_routed.json").read_text())
                      ["modules"].values()))["cells"]
    model = ecp5_estimate.ECP5_MODEL["6"]
    checked, chain = set(), []
    for segment in (s for entry in report["critical_paths"] for s in entry["path"]):
        if segment["type"] in ("clk-to-q", "setup"):
            # a clock arc: the cell's type and its data pin without a bit index (DOB2 -> DOB)
            cell = segment["from" if segment["type"] == "clk-to-q" else "to"]
            key = (cells[cell["cell"]]["type"], "CLK", cell["port"].rstrip("0123456789"))
        elif segment["type"] == "logic":
            key = (ecp5_estimate.arc_cell(cells[segment["from"]["cell"]]),
                   segment["from"]["port"], segment["to"]["port"])
        else:
            continue
        if key in ecp5_estimate.NEXTPNR_ARCS:
            assert model[ecp5_estimate.NEXTPNR_ARCS[key]] == pytest.approx(segment["delay"],
                                                                           abs=0.0015), key
            checked.add(key)
        elif key == ecp5_estimate.NEXTPNR_CHAIN_ARC:
            chain.append(segment["delay"])
    assert ("TRELLIS_FF", "CLK", "Q") in checked and len(checked) >= 2, checked
    # the miniature's block RAM read feeds its checksum: that path is the critical one
    assert {("DP16KD", "CLK", "DOA"), ("DP16KD", "CLK", "DOB")} & checked, checked
    if chain:
        assert max(chain) == pytest.approx(model["carry_chain"], abs=0.0015)


def test_the_routed_netlist_passes(routed):
    bdir, status, lines, errors = routed
    assert status == 0
    r = simulate(bdir)
    assert r["done"] and r["pass"] and not r["fail"], r
    assert r["cycles"] == DONE_CYCLE


def test_the_routed_netlist_with_the_generator_lut_inverted_fails(routed):
    bdir, status, lines, errors = routed
    assert status == 0
    r = simulate(bdir, mutate="generator")
    assert r["mutated_cell"] and r["done"] and r["fail"] and not r["pass"], r


def test_the_routed_netlist_fails_with_the_block_ram_model_ignoring_byte_enables(routed,
                                                                                  monkeypatch):
    """The DP16KD model is what the pass above rests on: with its upper byte enable ignored
    (only bits 8:0 of a row written), the routed miniature's checksum is wrong."""
    import sim.ecp5_postroute as postroute
    bdir, status, lines, errors = routed
    assert status == 0
    broken = postroute.DP16KD_MODEL
    for port in "AB":
        enabled = f"ad{port}[1] ? di{port}[17:9]"
        assert enabled in broken
        broken = broken.replace(enabled, f"1'b0 ? di{port}[17:9]")
    monkeypatch.setattr(postroute, "DP16KD_MODEL", broken)
    r = simulate(bdir)
    assert r["done"] and r["fail"] and not r["pass"], r
