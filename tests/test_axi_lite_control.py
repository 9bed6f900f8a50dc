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
