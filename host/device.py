"""One device interface for every kernel: run a Vitis kernel on buffers and scalars.

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

* :class:`SimDevice`: the generated Verilog under Verilator (or Icarus) with cocotb, AXI memory
  models behind every m_axi port and XRT's register protocol on s_axi_control;
* :class:`XrtDevice`: a real card through XRT's Python bindings (pyxrt), buffers allocated in the
  memory bank each m_axi port is connected to; with ``KMER_SKETCH_PYXRT=sim`` the same code
  drives the pyxrt stand-in (sim/pyxrt_sim.py), which simulates a ``python -m hw.build`` output
  directory's Verilog as a card would run it.

This is the one module of host/ that reaches into hw/ and sim/: :class:`SimDevice` builds the
RTL kernel from its Params and simulates it, and :class:`XrtDevice` imports the pyxrt stand-in
when asked to; driving a card needs neither.
"""

import json
import os
import pathlib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["Output", "RunResult", "DeviceError", "SimDevice", "XrtDevice", "PYXRT_ENV",
           "pyxrt_module", "standing_in", "c_int", "build_parameters"]


class DeviceError(RuntimeError):
    """The device cannot be used (missing runtime, wrong xclbin, failed run)."""


@dataclass(frozen=True)
class Output:
    """An output buffer of ``size`` bytes."""

    size: int


@dataclass
class RunResult:
    outputs: dict[str, bytes]
    cycles: int | None = None


def _as_bytes(value) -> bytes:
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tobytes()
    return bytes(value)


def _check_arguments(desc, arguments: dict) -> None:
    names = {a.name for a in desc.args}
    unknown = set(arguments) - names
    missing = names - set(arguments)
    if unknown or missing:
        raise DeviceError(f"kernel {desc.name}: arguments {sorted(missing)} missing, "
                          f"{sorted(unknown)} unknown")
    for arg in desc.args:
        value = arguments[arg.name]
        if arg.kind == "scalar" and not isinstance(value, (int, np.integer)):
            raise DeviceError(f"kernel {desc.name}: scalar {arg.name} must be an int")
        if arg.kind == "pointer" and isinstance(value, (int, np.integer)):
            raise DeviceError(f"kernel {desc.name}: {arg.name} is a buffer, not an int")


def parse_build(text: str | None) -> dict:
    """``{kernel: {field: int}}`` from ``"KERNEL.FIELD=VALUE,..."`` (hw.build's -P syntax)."""
    built: dict = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        try:
            key, value = item.split("=", 1)
            kernel, field = key.strip().split(".", 1)
            built.setdefault(kernel, {})[field] = int(value, 0)
        except ValueError:
            raise DeviceError(f"KMER_SKETCH_SIM_BUILD: expected KERNEL.FIELD=INTEGER, "
                              f"got {item!r}") from None
    return built


def _buffer_sizes(arguments: dict) -> dict:
    """Bytes of every buffer of a call (inputs and outputs), for host.control.timeout_cycles."""
    return {name: value.size if isinstance(value, Output) else len(_as_bytes(value))
            for name, value in arguments.items() if not isinstance(value, (int, np.integer))}


def _scalars(desc, arguments: dict) -> dict:
    """The scalar arguments of a call (the values an error message may quote)."""
    return {arg.name: int(arguments[arg.name]) for arg in desc.args if arg.kind == "scalar"}


class SimDevice:
    """Kernels simulated from their generated Verilog (sim/tb_device.py does one run).

    ``pause`` is the probability of a stall cycle on every AXI channel of the memory models
    (random backpressure); ``simulator`` is "verilator" (default) or "icarus"; ``memory`` is
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

    def __init__(self, simulator: str | None = None, pause: float = 0.0, seed: int = 1,
                 timeout_cycles: int | None = None, geometry: str | dict | None = None,
                 memory: str = "ideal", built: dict | None = None):
        self.simulator = simulator
        self.pause = pause
        self.seed = seed
        self.timeout_cycles = timeout_cycles
        if isinstance(geometry, str):
            from .drivers import SIM_GEOMETRIES
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
                _check_arguments(desc, arguments)
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
                        path.write_bytes(_as_bytes(value))
                        plan[arg.name] = {"kind": "in", "path": str(path), "bundle": arg.bundle}
                plans.append(plan)
                limits.append(self.timeout_cycles
                              or timeout_cycles(asked or kernel, _buffer_sizes(arguments)))
            report = directory / "report.json"
            run_cocotb(kernel, "sim.tb_device", simulator=self.simulator,
                       parameters={"calls": plans, "report": str(report), "pause": self.pause,
                                   "seed": self.seed, "timeout_cycles": limits,
                                   "memory": self.memory,
                                   "status": {"identity_offsets": status.identity_offsets,
                                              "identity": list((asked.desc if asked else desc).identity),
                                              "error_offset": status.error,
                                              "fresh_offset": status.fresh}})
            report = json.loads(report.read_text())
            identity = {int(offset): word for offset, word in report["identity"].items()}
            if asked is not None:
                check_identity(asked, identity.__getitem__)
                for index, error in enumerate(report["errors"]):
                    check_error(asked, {status.error: error}.__getitem__,
                                _scalars(desc, calls[index]))
            if "timed_out" in report:
                raise KernelError(f"{desc.name}: no ap_done after {report['timed_out']['cycles']} "
                                  f"cycles (the bound of call {report['timed_out']['call']})")
            return [RunResult({name: pathlib.Path(spec["path"]).read_bytes()
                               for name, spec in plan.items() if spec["kind"] == "out"}, count)
                    for plan, count in zip(plans, report["cycles"])]


#: ``KMER_SKETCH_PYXRT=sim``: XrtDevice drives the pyxrt stand-in (sim/pyxrt_sim.py), which
#: simulates the kernels of a ``python -m hw.build`` output directory, instead of a card.
PYXRT_ENV = "KMER_SKETCH_PYXRT"


def pyxrt_module():
    """XRT's Python binding, or its stand-in :mod:`sim.pyxrt_sim` with ``KMER_SKETCH_PYXRT=sim``."""
    choice = os.environ.get(PYXRT_ENV, "")
    if choice == "sim":
        from sim import pyxrt_sim
        return pyxrt_sim
    if choice:
        raise DeviceError(f"{PYXRT_ENV}={choice}: unknown; 'sim' simulates the kernels (the "
                          "pyxrt stand-in), unset uses XRT's pyxrt")
    try:
        import pyxrt
    except ImportError:
        raise DeviceError("the xrt backend needs XRT's Python bindings (pyxrt): install XRT "
                          "and 'source /opt/xilinx/xrt/setup.sh' (on F1, the aws-fpga "
                          "vitis_runtime_setup.sh)") from None
    return pyxrt


def standing_in() -> bool:
    """Whether ``--backend xrt`` drives the pyxrt stand-in (``KMER_SKETCH_PYXRT=sim``)."""
    return os.environ.get(PYXRT_ENV) == "sim"


def c_int(value: int) -> int:
    """A 32-bit scalar as pyxrt's ``set_arg`` takes it: a C ``int``, so 2**31 and above wrap to
    negative (the register receives the same 32 bits)."""
    value = int(value)
    if not 0 <= value < 1 << 32:
        raise DeviceError(f"scalar {value} does not fit in 32 bits")
    return value - (1 << 32) if value >= 1 << 31 else value


def build_parameters(directory: pathlib.Path) -> dict:
    """``{kernel: its Params fields}`` of a ``python -m hw.build`` output directory (the
    ``kernel.json`` of each kernel), or of one kernel's directory."""
    files = ([directory / "kernel.json"] if (directory / "kernel.json").is_file()
             else sorted(directory.glob("kernels/*/kernel.json")))
    built = {}
    for path in files:
        info = json.loads(path.read_text())
        built[info["name"]] = info["params"]
    return built


def _run_fields(kernel: str) -> tuple:
    """The Params fields a driver sets from the run (the algorithm); the kernel's other fields
    (lanes, bus width, pivots, ...) are its geometry, taken from the device."""
    from kmerspec.kernels import jsd_builder, motif
    return {"jacc_sketch": ("k", "p", "w"), "jacc_similarity": ("p", "w"),
            "jsd_builder": tuple(jsd_builder.ALGORITHM_FIELDS),
            "motif": tuple(field.name for field in motif.ALGORITHM_FIELDS)}.get(kernel, ())


class XrtDevice:
    """A card driven through pyxrt: load the xclbin (.awsxclbin on F1), then run kernels.

    With ``KMER_SKETCH_PYXRT=sim`` the same code drives the pyxrt stand-in, whose ``xclbin`` is
    a ``python -m hw.build`` output directory: the kernels run as they were built there (their
    geometry is taken from its kernel.json files, and a run asking for other algorithm parameters
    is refused)."""

    name = "xrt"

    def __init__(self, xclbin: str, device_index: int = 0):
        pyxrt = pyxrt_module()
        path = pathlib.Path(xclbin)
        self.xclbin_path = str(path)
        if standing_in():
            if not path.is_dir():
                raise DeviceError(f"{path}: not a directory ({PYXRT_ENV}=sim takes a python -m "
                                  f"hw.build output directory as --xclbin)")
        elif not path.is_file():
            raise DeviceError(f"{path}: no such xclbin (build one with python -m hw.build and "
                              f"v++, see its Makefile)")
        self._pyxrt = pyxrt
        self.path = path
        try:
            self.device = pyxrt.device(device_index)
            self.xclbin = pyxrt.xclbin(str(path))
            self.uuid = self.device.load_xclbin(self.xclbin)
        except RuntimeError as error:
            raise DeviceError(f"{path}: cannot load on device {device_index} "
                              f"({_first_line(error)})") from None
        self._arg_counts = {k.get_name(): k.get_num_args() for k in self.xclbin.get_kernels()}
        self._built = build_parameters(path) if path.is_dir() else {}
        #: kernel -> geometry fields (host.drivers builds the kernels' Params with them)
        self.geometry = {name: {field: value for field, value in params.items()
                                if field not in _run_fields(name)}
                         for name, params in self._built.items()}
        self._kernels = {}
        self._checked = set()     # the Params whose identity check passed

    def _kernel(self, kernel):
        """The pyxrt kernel of ``kernel`` (Params), opened exclusive (XRT lets only an exclusive
        user read the status registers), its identity checked before its first call."""
        from .control import before_first_call, check_identity
        name = kernel.desc.name
        if name not in self._kernels:
            if name not in self._arg_counts:
                raise DeviceError(f"kernel {name} is not in {self.path} (it has: "
                                  f"{', '.join(self._arg_counts) or 'no kernel'})")
            try:
                handle = self._pyxrt.kernel(self.device, self.uuid, name,
                                            self._pyxrt.kernel.exclusive)
            except RuntimeError as error:
                raise DeviceError(f"kernel {name} in {self.path}: cannot open "
                                  f"({_first_line(error)})") from None
            before_first_call(kernel, handle.read_register, handle.write_register)
            self._kernels[name] = handle
            self._checked.add(kernel)
        elif kernel not in self._checked:     # the same kernel asked with other Params
            check_identity(kernel, self._kernels[name].read_register)
            self._checked.add(kernel)
        return self._kernels[name]

    def _check_kernel(self, kernel) -> None:
        """The xclbin's kernel takes the arguments the driver passes (its build parameters are
        checked by the identity registers when it is opened, host.control)."""
        desc = kernel.desc
        count = self._arg_counts.get(desc.name)
        if count is not None and count != len(desc.args):
            raise DeviceError(f"kernel {desc.name} in {self.path} takes {count} arguments, the "
                              f"driver passes {len(desc.args)} (host and xclbin are of different "
                              f"versions)")

    def run(self, kernel, arguments: dict) -> RunResult:
        from .control import KernelError, check_error, timeout_ms
        pyxrt = self._pyxrt
        desc = kernel.desc
        _check_arguments(desc, arguments)
        self._check_kernel(kernel)
        handle = self._kernel(kernel)
        # run.set_arg raises on a wrong type or index; calling the kernel would skip the
        # argument silently (pyxrt's __call__ ignores cast errors)
        execution = pyxrt.run(handle)
        outputs, values = {}, {}
        for index, arg in enumerate(desc.args):
            value = arguments[arg.name]
            if arg.kind == "scalar":
                execution.set_arg(index, c_int(value))
                continue
            size = value.size if isinstance(value, Output) else len(_as_bytes(value))
            buffer = pyxrt.bo(self.device, max(size, 4096), pyxrt.bo.normal,
                              handle.group_id(index))
            if isinstance(value, Output):
                outputs[arg.name] = (buffer, size)
            else:
                buffer.write(np.frombuffer(_as_bytes(value), dtype=np.uint8), 0)
                buffer.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE, size, 0)
            execution.set_arg(index, buffer)
            values[arg.name] = buffer.address()
        execution.start()
        limit = timeout_ms(kernel, _buffer_sizes(arguments))
        state = execution.wait(limit)
        if state == pyxrt.ert_cmd_state.ERT_CMD_STATE_TIMEOUT:
            raise KernelError(f"{desc.name}: no ap_done within {limit} ms")
        if state != pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED:
            detail = "; ".join(getattr(execution, "errors", []))
            raise DeviceError(f"kernel {desc.name} ended in state {getattr(state, 'name', state)}"
                              + (f" ({detail})" if detail else ""))
        check_error(kernel, handle.read_register, {**_scalars(desc, arguments), **values})
        result = {}
        for name, (buffer, size) in outputs.items():
            buffer.sync(pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE, size, 0)
            result[name] = buffer.read(size, 0).tobytes()
        return RunResult(result, getattr(execution, "cycles", None))

    def run_many(self, kernel, calls: list[dict]) -> list[RunResult]:
        return list(self.run_stream(kernel, calls))

    def run_stream(self, kernel, calls: Iterable[dict]) -> Iterator[RunResult]:
        """Each call as it comes: with host.drivers.prefetched, the next chunk is packed while
        this one runs (pyxrt's wait releases the GIL)."""
        for arguments in calls:
            yield self.run(kernel, arguments)


def _first_line(error) -> str:
    return " ".join(str(error).split("\n")[0].split())
