"""Devices that run a Vitis kernel on buffers and scalars; here the simulated one.

``device.run(kernel, arguments)`` (and ``run_many``/``run_stream`` for a sequence of calls)
takes a kernel, named by its Params (kmerspec.kernels.<kernel>.Params, whose ``desc``, a
:class:`kmerspec.interface.KernelDesc`, names the arguments; SimDevice also takes an RTL kernel
object of hw/), and a dict from argument name to

* ``bytes``/``bytearray``/numpy array: an input buffer, copied to device memory;
* :class:`Output` ``(size)``: an output buffer of ``size`` bytes, read back after the run;
* ``int``: a 32-bit scalar.

It returns a :class:`RunResult` with the bytes of every output buffer and, where the device can
count them, the kernel cycles from ap_start to ap_done. The kernel drivers (host.drivers) pack
inputs and unpack outputs through the contract modules (kmerspec.kernels.*), the same code the
cocotb kernel tests use, so the devices cannot disagree on a byte:

* :class:`SimDevice` (this module): the generated Verilog under Verilator (or Icarus) with
  cocotb, AXI memory models behind every m_axi port and XRT's register protocol on
  s_axi_control;
* :class:`host.xrt.XrtDevice`: a card through XRT's C API (libxrt_coreutil), or, with
  ``KMER_SKETCH_PYXRT=sim``, the same driver on the XRT stand-in (sim/xrt_sim.py).

This is the one module of host/ that reaches into hw/ and sim/, each time inside the function
that needs it: :class:`SimDevice` builds the RTL kernel from its Params and simulates it, and
:func:`xrt_stand_in` hands the xrt backend (host.backends) the XRT C API stand-in with
``KMER_SKETCH_PYXRT=sim``, as :func:`f2_stand_in` hands the f2 backend the stand-in of AWS's
FPGA SDK with ``KMER_SKETCH_F2_SIM=DIR``; driving a card needs none of them.
"""

import json
import os
import pathlib
import tempfile
from collections.abc import Iterable, Iterator

from .calls import (F2_STAND_IN_ENV, SIM_GEOMETRIES, STAND_IN_ENV, DeviceError, Output,
                    RunResult, as_bytes, buffer_sizes, check_arguments, parse_build, scalars)

__all__ = ["Output", "RunResult", "DeviceError", "SimDevice", "parse_build", "xrt_stand_in",
           "f2_stand_in"]


def xrt_stand_in():
    """The XRT stand-in the xrt backend hands host.xrt.XrtDevice with ``KMER_SKETCH_PYXRT=sim``,
    else None (XRT's library). The one place outside the tests that reaches the stand-in: the
    driver itself imports no stand-in."""
    choice = os.environ.get(STAND_IN_ENV, "")
    if not choice:
        return None
    if choice != "sim":
        raise DeviceError(f"{STAND_IN_ENV}={choice}: unknown; 'sim' simulates the kernels (the "
                          "XRT stand-in), unset uses XRT's C API")
    from sim.xrt_sim import stand_in
    return stand_in()


def f2_stand_in():
    """The SDK stand-in the f2 backend hands host.f2.F2Device with ``KMER_SKETCH_F2_SIM``, else
    None (AWS's library). The one place outside the tests that reaches it."""
    directory = os.environ.get(F2_STAND_IN_ENV, "")
    if not directory:
        return None
    if not os.path.isfile(os.path.join(directory, "build.json")) or \
            not os.path.isdir(os.path.join(directory, "design")):
        raise DeviceError(f"{F2_STAND_IN_ENV}={directory}: not a CL directory of python -m "
                          "hw.build --board f2 (no build.json and design/)")
    from sim.f2_sim import stand_in
    return stand_in(directory)


class SimDevice:
    """Kernels simulated from their generated Verilog (sim/tb_device.py does one run).

    ``pause`` is the probability of a stall cycle on every AXI channel of the memory models
    (random backpressure; None: the benches' default, sim.tb_common.DEFAULT_PAUSE, with random
    write-response latency); ``simulator`` is "verilator" (default) or "icarus"; ``memory`` is
    "ideal" (cocotbext-axi's AxiRam) or "ddr" (sim.ddr_memory's DDR-like model). ``geometry``
    is the kernel geometry the drivers (host.drivers) build: a mapping kernel name -> Params
    fields, or a name of host.drivers.SIM_GEOMETRIES ("small", the default, or "default": the
    Params defaults that ``python -m hw.build`` builds). ``built`` (``{kernel: {field:
    value}}``, or the environment's ``KMER_SKETCH_SIM_BUILD``, e.g. ``jacc_sketch.k=21``)
    simulates a binary built with those Params fields whatever the driver asks for, as a card
    does: the identity check then refuses the mismatch. Each call may take
    host.control.timeout_cycles (``timeout_cycles`` overrides it).
    """

    name = "sim"

    def __init__(self, simulator: str | None = None, pause: float | None = None, seed: int = 1,
                 timeout_cycles: int | None = None, geometry: str | dict | None = None,
                 memory: str = "ideal", built: dict | None = None):
        self.simulator = simulator
        self.pause = pause
        self.seed = seed
        self.timeout_cycles = timeout_cycles
        if isinstance(geometry, str):
            if geometry not in SIM_GEOMETRIES:
                raise DeviceError(f"simulation geometry must be one of "
                                  f"{', '.join(SIM_GEOMETRIES)}, not {geometry!r}")
            geometry = SIM_GEOMETRIES[geometry]
        self.geometry = geometry
        if memory not in ("ideal", "ddr"):
            raise DeviceError(f"memory model must be 'ideal' or 'ddr', not {memory!r}")
        self.memory = memory
        self.built = parse_build(os.environ.get("KMER_SKETCH_SIM_BUILD")) if built is None \
            else built

    def run(self, kernel, arguments: dict) -> RunResult:
        return self.run_many(kernel, [arguments])[0]

    def run_stream(self, kernel, calls: Iterable[dict]) -> Iterator[RunResult]:
        """The calls in order; a simulation needs them all before it starts."""
        yield from self.run_many(kernel, list(calls))

    def run_many(self, kernel, calls: list[dict]) -> list[RunResult]:
        """Several calls in one simulation: kernel state carries over, as on a card."""
        from hw.build import kernel_for
        from kmerspec.kernels import KernelParams
        from sim.runner import run_cocotb
        from .control import KernelError, check_error, check_identity, timeout_cycles
        # the Params the driver asks for (an RTL kernel object of hw/ carries its own)
        asked = kernel if isinstance(kernel, KernelParams) else getattr(kernel, "params", None)
        if isinstance(kernel, KernelParams):
            overrides = self.built.get(kernel.KERNEL, {})
            try:
                kernel = kernel_for(kernel.replace(**overrides) if overrides else kernel)
            except (TypeError, ValueError) as error:
                raise DeviceError(f"KMER_SKETCH_SIM_BUILD: {asked.KERNEL}: {error}") from None
        desc = kernel.desc
        status = (asked.desc if asked is not None else desc).status_map()
        limits = []
        with tempfile.TemporaryDirectory(prefix=f"{desc.name}-run-") as directory:
            directory = pathlib.Path(directory)
            plans = []
            for index, arguments in enumerate(calls):
                check_arguments(desc, arguments)
                plan = {}
                for arg in desc.args:
                    value = arguments[arg.name]
                    if arg.kind == "scalar":
                        plan[arg.name] = {"kind": "scalar", "value": int(value)}
                        continue
                    path = directory / f"{index}-{arg.name}.bin"
                    if isinstance(value, Output):
                        plan[arg.name] = {"kind": "out", "size": value.size, "path": str(path),
                                          "bundle": arg.bundle}
                    else:
                        path.write_bytes(as_bytes(value))
                        plan[arg.name] = {"kind": "in", "path": str(path), "bundle": arg.bundle}
                plans.append(plan)
                limits.append(self.timeout_cycles
                              or timeout_cycles(asked or kernel, buffer_sizes(arguments),
                                                 scalars(desc, arguments)))
            report = directory / "report.json"
            run_cocotb(kernel, "sim.tb_device", simulator=self.simulator,
                       parameters={"calls": plans, "report": str(report),
                                   **({} if self.pause is None else {"pause": self.pause}),
                                   "seed": self.seed, "timeout_cycles": limits,
                                   "memory": self.memory,
                                   "status": {"identity_offsets": status.identity_offsets,
                                              "identity": list((asked or kernel).desc.identity),
                                              "error_offset": status.error,
                                              "fresh_offset": status.fresh}})
            report = json.loads(report.read_text())
            identity = {int(offset): word for offset, word in report["identity"].items()}
            if asked is not None:
                check_identity(asked, identity.__getitem__)
                for index, error in enumerate(report["errors"]):
                    check_error(asked, {status.error: error}.__getitem__,
                                scalars(desc, calls[index]))
            if "timed_out" in report:
                raise KernelError(f"{desc.name}: no ap_done after {report['timed_out']['cycles']} "
                                  f"cycles (the bound of call {report['timed_out']['call']})")
            return [RunResult({name: pathlib.Path(spec["path"]).read_bytes()
                               for name, spec in plan.items() if spec["kind"] == "out"}, count)
                    for plan, count in zip(plans, report["cycles"])]
