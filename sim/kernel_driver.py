"""cocotb driver of a Vitis kernel's s_axi_control port, speaking the ap_ctrl_hs protocol the way
XRT does: write every argument word from 0x10, write ap_start, poll CTRL until ap_done.

The register offsets come from the kernel's :class:`hw.vitis.description.KernelDesc`, the same
source that kernel.xml and the RTL control block are generated from.
"""

from cocotb.triggers import ClockCycles

from kmerspec.regmap import CTRL, CTRL_AP_START, CTRL_AP_DONE, CTRL_AP_IDLE, CTRL_AUTO_RESTART

__all__ = ["KernelDriver", "KernelTimeout"]


class KernelTimeout(AssertionError):
    pass


class KernelDriver:
    def __init__(self, axil, desc, clk):
        self.axil = axil
        self.desc = desc
        self.clk = clk
        self.offsets = {a.name: s for a, s in desc.register_map()}

    async def read(self, offset):
        return await self.axil.read_dword(offset)

    async def write(self, offset, value):
        await self.axil.write_dword(offset, value & 0xFFFFFFFF)

    async def set_args(self, **values):
        """Write arguments by name (pointers as two words, low first).  Missing ones are left."""
        for name, value in values.items():
            slot = self.offsets[name]
            for i, off in enumerate(slot.words):
                await self.write(off, (int(value) >> (32 * i)) & 0xFFFFFFFF)

    async def get_arg(self, name):
        slot = self.offsets[name]
        v = 0
        for i, off in enumerate(slot.words):
            v |= (await self.read(off)) << (32 * i)
        return v

    async def start(self, auto_restart=False):
        await self.write(CTRL, CTRL_AP_START | (CTRL_AUTO_RESTART if auto_restart else 0))

    async def wait_done(self, timeout_cycles=200_000, poll_gap=8):
        """Poll CTRL until ap_done (clear on read: this read consumes it).  Returns the cycles."""
        waited = 0
        while True:
            ctrl = await self.read(CTRL)
            if ctrl & CTRL_AP_DONE:
                return waited
            await ClockCycles(self.clk, poll_gap)
            waited += poll_gap
            if waited > timeout_cycles:
                raise KernelTimeout(f"kernel {self.desc.name}: no ap_done after {waited} cycles "
                                    f"(CTRL=0x{ctrl:02x})")

    async def run(self, timeout_cycles=200_000, **args):
        """Write ``args``, start, wait for ap_done; checks ap_idle is back afterwards."""
        await self.set_args(**args)
        await self.start()
        cycles = await self.wait_done(timeout_cycles)
        ctrl = await self.read(CTRL)
        assert ctrl & CTRL_AP_IDLE, f"ap_idle not set after ap_done (CTRL=0x{ctrl:02x})"
        assert not ctrl & CTRL_AP_DONE, "ap_done not cleared by the read"
        return cycles
