"""The control port (``s_axi_control``, :class:`hw.axi.lite_control.AxiLiteControl` under the
Vitis top) keeps AXI4-Lite's rules from the first clock edge after reset on, checked cycle by
cycle by the project's monitor (:class:`sim.axi_monitor.ProtocolRules` with ``lite``), in the
Amaranth simulator (quick tier: a few seconds).

* The reset window: a master may raise AWVALID/WVALID/ARVALID right after the first rising edge
  at which ARESETn is high (ARM IHI 0022, A3.1.2). The top's reset reaches the control block's
  registers through two register stages, so an access taken in the edge after that was lost
  (no B, no R) while its READYs were high: they are now low until the registers are out of
  reset, and the access is answered.
* Posted writes (AW and W of several writes before any B is taken, W before AW too) and
  overlapping reads (the next AR offered while an R waits for RREADY), with random stalls on
  every channel: every write gets its own B, every read its own R with the register's value,
  and every VALID holds with its payload until READY.
"""

from types import SimpleNamespace

import pytest

from hw.axi.signature import AxiLiteSignature
from tests.simulation import simulate_top


def copy_kernel_top():
    """The copy kernel of sim.harness under its Vitis top: the smallest full control port."""
    from hw.vitis import VitisKernel
    from sim.harness import CopyKernel
    core = CopyKernel(32)
    return VitisKernel(core), core


def lite_port(dut):
    return SimpleNamespace(**{name: getattr(dut, f"s_axi_control_{name}")
                              for name in AxiLiteSignature(addr_width=12).members})


async def first_edge_after_reset(ctx, dut, cycles=4):
    """Hold ap_rst_n low for ``cycles`` edges, raise it, and return right after the first rising
    edge at which it is high: from here a master may raise its VALIDs (A3.1.2)."""
    ctx.set(dut.ap_rst_n, 0)
    for _ in range(cycles):
        await ctx.tick()
    ctx.set(dut.ap_rst_n, 1)
    await ctx.tick()


@pytest.mark.parametrize("access", ["write", "read"])
def test_an_access_at_the_first_edge_after_reset_is_answered(access):
    """AW+W (a write of the ``n_bytes`` argument, then read back) or AR (CTRL: ap_idle) offered
    from the first edge after ap_rst_n rose, READY as the kernel gives it, B and R taken at
    once: answered within 16 cycles. Fails on the top of before this change: its READYs were
    high in the edge that still reset the control block (``rst_pipe``), which took the
    handshake and forgot it (no BVALID, no RVALID)."""
    from kmerspec.regmap import CTRL, CTRL_AP_IDLE
    dut, core = copy_kernel_top()
    lite = lite_port(dut)
    n_bytes = next(slot.words[0] for arg, slot in core.desc.register_map()
                   if arg.name == "n_bytes")
    seen = {}

    async def wait_for(ctx, signal, label, bound=16):
        for _ in range(bound):
            _, _, value = await ctx.tick().sample(signal)
            if value:
                return
        raise AssertionError(f"{label}: no answer {bound} cycles after an access offered at the "
                             f"first edge after reset")

    async def handshake(ctx, channels):
        """Offer ``channels`` (set up already) until each is taken."""
        pending = set(channels)
        for _ in range(16):
            readies = [getattr(lite, f"{ch}READY") for ch in sorted(pending)]
            _, _, *taken = await ctx.tick().sample(*readies)
            for channel, ready in zip(sorted(pending), taken):
                if ready:
                    pending.discard(channel)
                    ctx.set(getattr(lite, f"{channel}VALID"), 0)
            if not pending:
                return
        raise AssertionError(f"{sorted(pending)} not taken")

    async def read(ctx, address):
        ctx.set(lite.ARADDR, address)
        ctx.set(lite.ARVALID, 1)
        ctx.set(lite.RREADY, 1)
        await handshake(ctx, ["AR"])
        if not ctx.get(lite.RVALID):
            await wait_for(ctx, lite.RVALID, f"AR 0x{address:x}")
        value = ctx.get(lite.RDATA)
        await ctx.tick()
        ctx.set(lite.RREADY, 0)
        return value

    async def driver(ctx):
        await first_edge_after_reset(ctx, dut)
        if access == "write":
            ctx.set(lite.AWADDR, n_bytes)
            ctx.set(lite.WDATA, 0x1234_5678)
            ctx.set(lite.WSTRB, 0xF)
            ctx.set(lite.AWVALID, 1)
            ctx.set(lite.WVALID, 1)
            ctx.set(lite.BREADY, 1)
            await handshake(ctx, ["AW", "W"])
            if not ctx.get(lite.BVALID):
                await wait_for(ctx, lite.BVALID, "AW+W")
            await ctx.tick()
            ctx.set(lite.BREADY, 0)
            seen["value"] = await read(ctx, n_bytes)
        else:
            seen["value"] = await read(ctx, CTRL)

    simulate_top(dut, driver)
    expected = 0x1234_5678 if access == "write" else CTRL_AP_IDLE
    assert seen["value"] == expected, f"read 0x{seen['value']:x}, expected 0x{expected:x}"


def control_words(core):
    """(the offsets of every argument word, {offset: its value} of the status words that hold
    still while no call runs: ERROR 0, FRESH 1 from the reset on, the identity words)."""
    words = [offset for _, slot in core.desc.register_map() for offset in slot.words]
    status = core.desc.status_map()
    return words, {status.error: 0, status.fresh: 1,
                   **dict(zip(status.identity_offsets, core.desc.identity))}


def run_posted_and_overlapping(seed, rounds=6, pause=0.3):
    """Rounds of posted writes (3..8 each, random words and byte strobes, the same word twice
    at times) until every B is in, then overlapping reads of argument and status words until
    every R is in, with random stalls on every channel of the port; the port's rules and the
    firewall's waits checked every cycle from the reset on. Returns the master model."""
    from sim.axi_checker import FIREWALL_WAITS
    from tests.axi_lite_master import LiteMaster
    import random
    dut, core = copy_kernel_top()
    master = LiteMaster(lite_port(dut), dut.ap_rst_n, seed=seed, pause=pause,
                        waits=FIREWALL_WAITS["slave"])
    words, constants = control_words(core)
    rng = random.Random(seed)

    async def until_answered(ctx, what, bound=400):
        for _ in range(bound):
            if not master.busy:
                return
            await ctx.tick()
        master.settled(f"{bound} cycles after the {what}")    # names what the slave owes
        raise AssertionError(f"the {what}: the port took them all but not all were answered "
                             f"in {bound} cycles ({len(master.responses)} of "
                             f"{master.issued_writes} B, {len(master.reads)} R)")

    async def driver(ctx):
        await first_edge_after_reset(ctx, dut)
        expected = dict.fromkeys(words, 0)
        for round_ in range(rounds):
            for _ in range(rng.randint(3, 8)):
                offset, value = rng.choice(words), rng.getrandbits(32)
                strobe = rng.choice([0xF, 0xF, 0x1, 0x6, 0x8, 0xC])
                master.write(offset, value, strobe)
                mask = sum(0xFF << 8 * byte for byte in range(4) if strobe >> byte & 1)
                expected[offset] = expected[offset] & ~mask | value & mask
            await until_answered(ctx, f"posted writes of round {round_}")
            targets = rng.sample(words, min(len(words), 4)) + rng.sample(sorted(constants), 2)
            first = len(master.reads)
            for offset in targets:
                master.read(offset)
            await until_answered(ctx, f"overlapping reads of round {round_}")
            for address, value, _ in master.reads[first:]:
                want = expected.get(address, constants.get(address))
                assert value == want, \
                    f"round {round_}: read 0x{value:x} at 0x{address:x}, expected 0x{want:x}"
        assert all(resp == 0 for resp in master.responses)
        master.settled("at the end")

    simulate_top(dut, driver, background=[master.run])
    return master


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_posted_writes_and_overlapping_reads_with_random_stalls(seed):
    """Every posted write gets its own B, every read its own R with the register's value, the
    slave holds BVALID and RVALID with their payload until READY, its READYs are low in reset
    and in the first edge after it. Mutants killed (docs/axi.md): two posted writes answered
    with one B (``do_write`` without ``~bvalid``: 'AXI4_ERRS_BRESP_ALL_DONE_EOS'), BVALID
    dropped before BREADY ('AXI4_ERRS_BVALID_STABLE'), RDATA loaded by a new ARVALID while the
    R waits ('AXI4_ERRS_RDATA_STABLE'), the top's READYs not and-ed with the reset
    ('KERNEL_AWREADY_RESET')."""
    master = run_posted_and_overlapping(seed)
    # the model did post and overlap: a second AW taken before the first B, ARs while R waited
    assert master.issued_writes >= 18 and len(master.reads) == 36
    assert master.rules.handshakes["B"] == master.issued_writes
    assert master.most_writes_outstanding >= 2 and master.ar_beside_a_waiting_r > 0, \
        (master.most_writes_outstanding, master.ar_beside_a_waiting_r)
