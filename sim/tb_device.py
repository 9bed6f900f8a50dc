"""cocotb module behind host.device.SimDevice: kernel calls on buffers read from files.

Parameters (sim.runner.params): ``calls``, a list of {argument name: {"kind": "in"|"out"|"scalar",
...}} run one after another in one simulation (the kernel keeps its state between calls, as a
card does), ``report`` (a JSON file that receives the cycles of each call, from the ap_start write to the
ap_done read), ``pause`` (stall
probability on every AXI channel), ``seed``, ``response_latency`` (random stalls and B latency by
default: sim.tb_common.axi_settings), ``timeout_cycles`` (one per call), ``memory``/``ddr``
(sim.tb_common.memory_timing), ``status`` ({"identity_offsets", "identity", "error_offset"}:
the simulation reads the identity words before the first call and stops if they are not
``identity``, else writes 1 to ``fresh_offset`` (a clean first call, as
host.xrt.XrtDevice does on a card); it reads the ERROR register after every ap_done
and stops at the first non-zero one; the report gets every word it read, by offset, for
host.control to judge, and ``timed_out`` when a call had no ap_done within its cycles). Each
m_axi bundle gets its own AxiRam (or DdrAxiRam), whose protocol monitor must be settled after
every ap_done (no burst owes anything); the buffers of a bundle are placed one after
another at 4 KiB-aligned addresses from
0x1000 (0 stays unused so that a null pointer is never valid).
"""

import json
import pathlib

import cocotb
from cocotb.utils import get_sim_time

from sim.kernel_driver import KernelDriver, KernelTimeout
from sim.runner import params
from sim.tb_common import (CLOCK_PERIOD_NS, axi_settings, make_axi_ram, make_axil_master,
                           memory_timing, quiet_axi_logs, start_clock_reset)

P = params()
PAGE = 4096


def _align(value: int) -> int:
    return -(-value // PAGE) * PAGE


def _place(calls):
    """Addresses of every buffer of every call, and the RAM size each bundle needs."""
    ends, placements = {}, []
    for arguments in calls:
        placement = {}
        for name, spec in arguments.items():
            if spec["kind"] == "scalar":
                continue
            size = spec["size"] if spec["kind"] == "out" else pathlib.Path(spec["path"]).stat().st_size
            base = ends.get(spec["bundle"], PAGE)
            placement[name] = (spec["bundle"], base)
            ends[spec["bundle"]] = _align(base + max(size, 1))
        placements.append(placement)
    return placements, ends


def _desc_of(dut, arguments):
    """A KernelDesc with the argument order of the run; offsets follow from it as in the RTL."""
    from kmerspec.interface import Arg, Bundle, KernelDesc
    bundles = sorted({spec["bundle"] for spec in arguments.values() if spec["kind"] != "scalar"})
    args = [Arg(name, "scalar") if spec["kind"] == "scalar" else Arg(name, "pointer", spec["bundle"])
            for name, spec in arguments.items()]
    return KernelDesc(dut._name, args, [Bundle(b) for b in bundles])


@cocotb.test()
async def run_kernel(dut):
    calls = P["calls"]
    clk, rst_n = dut.ap_clk, dut.ap_rst_n
    placements, sizes = _place(calls)
    pause, seed, response_latency = axi_settings({"seed": 1, **P})
    rams = {bundle: make_axi_ram(dut, f"m_axi_{bundle}", clk, rst_n, size=size, pause=pause,
                                 seed=seed + i, ddr=memory_timing(P),
                                 response_latency=response_latency)
            for i, (bundle, size) in enumerate(sorted(sizes.items()))}
    axil = make_axil_master(dut, "s_axi_control", clk, rst_n)
    quiet_axi_logs()
    await start_clock_reset(clk, rst_n)
    status = P.get("status") or {}
    identity, errors, cycles, report = {}, [], [], {}
    for offset in status.get("identity_offsets", []):
        identity[offset] = await axil.read_dword(offset)
    identity_ok = list(identity.values()) == list(status.get("identity", []))
    if identity_ok and "fresh_offset" in status:
        await axil.write_dword(status["fresh_offset"], 1)
    timeouts = P.get("timeout_cycles", 50_000_000)
    for index, (arguments, placement) in enumerate(zip(calls, placements) if identity_ok else []):
        for name, (bundle, base) in placement.items():
            if arguments[name]["kind"] == "in":
                rams[bundle].write(base, pathlib.Path(arguments[name]["path"]).read_bytes())
        values = {name: placement[name][1] if spec["kind"] != "scalar" else spec["value"]
                  for name, spec in arguments.items()}
        driver = KernelDriver(axil, _desc_of(dut, arguments), clk)
        await driver.set_args(**values)
        started = get_sim_time("ns")
        await driver.start()
        limit = timeouts[index] if isinstance(timeouts, list) else timeouts
        try:
            await driver.wait_done(int(limit))
        except KernelTimeout:
            report["timed_out"] = {"call": index, "cycles": int(limit)}
            break
        # From the ap_start write to the ap_done read, as the host sees a call.
        cycles.append(round((get_sim_time("ns") - started) / CLOCK_PERIOD_NS))
        for ram in rams.values():
            ram.monitor.settled(f"after call {index}")
        if "error_offset" in status:
            errors.append(await axil.read_dword(status["error_offset"]))
            if errors[-1]:
                break
        for name, spec in arguments.items():
            if spec["kind"] == "out":
                bundle, base = placement[name]
                pathlib.Path(spec["path"]).write_bytes(rams[bundle].read(base, spec["size"]))
    report.update(cycles=cycles, identity={str(k): v for k, v in identity.items()}, errors=errors)
    pathlib.Path(P["report"]).write_text(json.dumps(report))
