"""The card driver: :class:`XrtDevice` runs kernels on a card through XRT's C API
(host.xrt_binding: the ctypes prototypes and the library), or on the XRT stand-in.

:class:`XrtDevice` opens every compute unit of a kernel (``kernel:kernel_1``, ``kernel_2``, ...:
the names ``python -m hw.build`` gives the ``nk=`` units) exclusively, checks each unit's
identity words, asks for a clean start before a unit's first call and after any call of it that
failed, keeps one call in flight per unit, keeps every buffer object until its results are read,
and on a timeout (XRT's C API has no abort) marks the device unusable and says to reset the card.
With ``KMER_SKETCH_PYXRT=sim`` (:func:`xrt_api`) it drives the stand-in sim/xrt_sim.py, which
simulates the kernels of a ``python -m hw.build`` output directory, instead of the library.
"""

import ctypes
import itertools
import json
import os
import pathlib
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from ctypes import c_ubyte, c_uint32, c_void_p

from .calls import (DeviceError, KernelError, Output, RunResult, as_bytes, buffer_sizes,
                    check_arguments, scalars)
from .control import check_error, check_identity, request_clean_start, timeout_ms
from .xrt_binding import (BO_FLAGS_NONE, COMPLETED, ERT_CMD_STATE, LIBRARY, SYNC_FROM_DEVICE,
                          SYNC_TO_DEVICE, TIMEOUT, device_problem, errno_text, load_library)

__all__ = ["STAND_IN_ENV", "XrtDevice", "xrt_api", "standing_in"]

#: ``KMER_SKETCH_PYXRT=sim``: XrtDevice drives the XRT stand-in (sim/xrt_sim.py), which
#: simulates the kernels of a ``python -m hw.build`` output directory, instead of a card. (The
#: variable keeps the name it had when the stand-in imitated pyxrt.)
STAND_IN_ENV = "KMER_SKETCH_PYXRT"


def standing_in() -> bool:
    """Whether ``--backend xrt`` drives the XRT stand-in (``KMER_SKETCH_PYXRT=sim``)."""
    return os.environ.get(STAND_IN_ENV) == "sim"


_reported: set = set()


def xrt_api():
    """XRT's C API (the real library), or the stand-in's with ``KMER_SKETCH_PYXRT=sim``; its
    ``report`` says which (XrtDevice prints it once per process)."""
    choice = os.environ.get(STAND_IN_ENV, "")
    if choice == "sim":
        from sim.xrt_sim import stand_in
        api = stand_in()
        line = "xrt: the XRT C API stand-in (sim/xrt_sim.py, KMER_SKETCH_PYXRT=sim)"
    elif choice:
        raise DeviceError(f"{STAND_IN_ENV}={choice}: unknown; 'sim' simulates the kernels (the "
                          "XRT stand-in), unset uses XRT's C API")
    else:
        api = load_library()
        line = f"xrt: {LIBRARY} (XRT C API) from {api.origin}"
    api.report = line
    return api


def _report_once(api) -> None:
    """Say on stderr, once per process, which XRT drives the card (after the device opened and
    the xclbin loaded: a failure before that is one line of its own)."""
    if api.report not in _reported:
        _reported.add(api.report)
        print(api.report, file=sys.stderr)


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
            "jsd_builder": tuple(jsd_builder.ALGORITHM_FIELDS), "jsd_similarity": ("R", "n"),
            "motif": tuple(field.name for field in motif.ALGORITHM_FIELDS)}.get(kernel, ())


class _Buffer:
    """One buffer object; freed (xrtBOFree) by :meth:`free` or when dropped."""

    def __init__(self, api, device, size: int, group: int, what: str):
        self._api = api
        self.handle = api.xrtBOAlloc(device, size, BO_FLAGS_NONE, group)
        if not self.handle:
            raise DeviceError(f"{what}: cannot allocate {size} bytes in memory group {group} "
                              f"({errno_text()})")
        self.address = api.xrtBOAddress(self.handle)

    def write(self, data: bytes, what: str):
        if self._api.xrtBOWrite(self.handle, data, len(data), 0) or \
                self._api.xrtBOSync(self.handle, SYNC_TO_DEVICE, len(data), 0):
            raise DeviceError(f"{what}: cannot copy {len(data)} bytes to the card "
                              f"({errno_text()})")

    def read(self, size: int, what: str) -> bytes:
        target = ctypes.create_string_buffer(size)
        if self._api.xrtBOSync(self.handle, SYNC_FROM_DEVICE, size, 0) or \
                self._api.xrtBORead(self.handle, target, size, 0):
            raise DeviceError(f"{what}: cannot copy {size} bytes from the card "
                              f"({errno_text()})")
        return target.raw

    def free(self):
        handle, self.handle = self.handle, None
        if handle:
            self._api.xrtBOFree(handle)

    def __del__(self):
        self.free()


class _ComputeUnit:
    """One compute unit, opened exclusively (XRT grants register access to exclusive users)."""

    def __init__(self, api, handle: int, name: str):
        self.api, self.handle, self.name = api, handle, name
        self.checked: set = set()     # the Params whose identity words matched this unit
        self.needs_clean_start = True
        self.calls = 0

    def read_register(self, offset: int) -> int:
        word = c_uint32()
        if self.api.xrtKernelReadRegister(self.handle, offset, ctypes.byref(word)):
            raise DeviceError(f"{self.name}: cannot read register 0x{offset:x} "
                              f"({errno_text()})")
        return word.value

    def write_register(self, offset: int, value: int):
        if self.api.xrtKernelWriteRegister(self.handle, offset, value & 0xFFFF_FFFF):
            raise DeviceError(f"{self.name}: cannot write register 0x{offset:x} "
                              f"({errno_text()})")


class _Call:
    """A started call: its unit, run handle and buffers, all alive until :meth:`finish`."""

    def __init__(self, kernel, arguments, unit, run, buffers, outputs, values, limit_ms):
        self.kernel, self.arguments, self.unit, self.run = kernel, arguments, unit, run
        self.buffers, self.outputs, self.values, self.limit_ms = buffers, outputs, values, limit_ms


class XrtDevice:
    """A card driven through XRT's C API: load the xclbin (.awsxclbin on F1), then run kernels.

    With ``KMER_SKETCH_PYXRT=sim`` the same code drives the XRT stand-in, whose xclbin is a
    ``python -m hw.build`` output directory: the kernels run as they were built there (their
    geometry is taken from its kernel.json files, and a run asking for other algorithm
    parameters is refused by the identity words)."""

    name = "xrt"

    def __init__(self, xclbin: str, device_index: int = 0):
        path = pathlib.Path(xclbin)
        self.xclbin_path = str(path)
        self.path = path
        if standing_in():
            if not path.is_dir():
                raise DeviceError(f"{path}: not a directory ({STAND_IN_ENV}=sim takes a python "
                                  "-m hw.build output directory as --xclbin)")
        elif not path.is_file():
            raise DeviceError(f"{path}: no such xclbin (build one with python -m hw.build and "
                              f"v++, see its Makefile)")
        api = xrt_api()
        self._api = api
        if not standing_in():
            problem = device_problem(api.origin, device_index)
            if problem:
                raise DeviceError(f"no XRT device {device_index}: {problem}")
        self.device = api.xrtDeviceOpen(device_index)
        if not self.device:
            raise DeviceError(f"no XRT device {device_index}: XRT could not open it "
                              f"({errno_text()})")
        if api.xrtDeviceLoadXclbinFile(self.device, os.fsencode(path)):
            raise DeviceError(f"{path}: cannot load on device {device_index} ({errno_text()})")
        self.uuid = (c_ubyte * 16)()
        if api.xrtDeviceGetXclbinUUID(self.device, self.uuid):
            raise DeviceError(f"{path}: no xclbin UUID on device {device_index} "
                              f"({errno_text()})")
        built = build_parameters(path) if path.is_dir() else {}
        #: kernel -> geometry fields (host.drivers builds the kernels' Params with them)
        self.geometry = {name: {field: value for field, value in params.items()
                                if field not in _run_fields(name)}
                         for name, params in built.items()}
        _report_once(api)
        self._units: dict[str, list[_ComputeUnit]] = {}
        self._turns: dict[str, Iterator[int]] = {}
        self._unusable: str | None = None
        #: calls that timed out: their buffers are never freed, the unit may still write them
        self._abandoned: list[_Call] = []

    def compute_units(self, kernel) -> list[_ComputeUnit]:
        """Every compute unit of ``kernel`` (Params) in the xclbin, opened exclusively."""
        name = kernel.desc.name
        if name not in self._units:
            units = []
            for number in itertools.count(1):
                cu = f"{name}:{name}_{number}"
                handle = self._api.xrtPLKernelOpenExclusive(self.device, self.uuid, cu.encode())
                if not handle:
                    break
                units.append(_ComputeUnit(self._api, handle, cu))
            if not units:
                raise DeviceError(f"kernel {name} is not in {self.path} (XRT cannot open its "
                                  f"compute unit {name}:{name}_1 exclusively: {errno_text()})")
            self._units[name] = units
            self._turns[name] = itertools.cycle(range(len(units)))
        return self._units[name]

    def _start(self, kernel, arguments: dict) -> _Call:
        if self._unusable:
            raise DeviceError(self._unusable)
        api, desc = self._api, kernel.desc
        check_arguments(desc, arguments)
        units = self.compute_units(kernel)
        unit = units[next(self._turns[desc.name])]
        if kernel not in unit.checked:
            check_identity(kernel, unit.read_register)
            unit.checked.add(kernel)
        if unit.needs_clean_start:
            request_clean_start(kernel, unit.write_register)
            unit.needs_clean_start = False
        run = api.xrtRunOpen(unit.handle)
        if not run:
            raise DeviceError(f"{unit.name}: cannot open a run ({errno_text()})")
        buffers, outputs, values = [], {}, {}
        try:
            for index, arg in enumerate(desc.args):
                value = arguments[arg.name]
                if arg.kind == "scalar":
                    if not 0 <= int(value) < 1 << 32:
                        raise DeviceError(f"kernel {desc.name}: scalar {arg.name}={value} does "
                                          "not fit in 32 bits")
                    status = api.xrtRunSetArg(run, index, c_uint32(int(value)))
                else:
                    size = value.size if isinstance(value, Output) else len(as_bytes(value))
                    group = api.xrtKernelArgGroupId(unit.handle, index)
                    if group < 0:
                        raise DeviceError(f"{unit.name}: no memory group for argument {index} "
                                          f"({arg.name}): {errno_text()}")
                    buffer = _Buffer(api, self.device, max(size, 4096), group,
                                     f"{unit.name} {arg.name}")
                    buffers.append(buffer)
                    if isinstance(value, Output):
                        outputs[arg.name] = (buffer, size)
                    elif size:
                        buffer.write(as_bytes(value), f"{unit.name} {arg.name}")
                    values[arg.name] = buffer.address
                    status = api.xrtRunSetArg(run, index, c_void_p(buffer.handle))
                if status:
                    raise DeviceError(f"{unit.name}: cannot set argument {index} ({arg.name}): "
                                      f"{errno_text()}")
            if api.xrtRunStart(run):
                raise DeviceError(f"{unit.name}: cannot start ({errno_text()})")
        except BaseException:
            api.xrtRunClose(run)
            for buffer in buffers:
                buffer.free()
            raise
        unit.calls += 1
        limit = timeout_ms(kernel, buffer_sizes(arguments), scalars(desc, arguments))
        return _Call(kernel, arguments, unit, run, buffers, outputs, values, limit)

    def _finish(self, call: _Call) -> RunResult:
        """Wait for ``call``, check its state and ERROR word, read its outputs; free it."""
        api, unit, desc = self._api, call.unit, call.kernel.desc
        state = api.xrtRunWaitFor(call.run, call.limit_ms)
        if state == TIMEOUT:
            # XRT's C API has no abort: the unit may still write into these buffers, so they
            # stay allocated, and nothing more runs on this device in this process
            self._abandoned.append(call)
            self._unusable = (f"{desc.name}: no ap_done within {call.limit_ms} ms on {unit.name}; "
                              f"the compute unit may still be running: reset the card "
                              f"(xbutil reset) before using it again")
            unit.needs_clean_start = True
            raise KernelError(self._unusable)
        try:
            if state != COMPLETED:
                unit.needs_clean_start = True
                raise DeviceError(f"kernel {desc.name} on {unit.name} ended in state "
                                  f"{ERT_CMD_STATE.get(state, state)}")
            try:
                check_error(call.kernel, unit.read_register,
                            {**scalars(desc, call.arguments), **call.values})
            except KernelError:
                unit.needs_clean_start = True
                raise
            return RunResult({name: buffer.read(size, f"{unit.name} {name}")
                              for name, (buffer, size) in call.outputs.items()})
        finally:
            api.xrtRunClose(call.run)
            for buffer in call.buffers:
                buffer.free()

    def run(self, kernel, arguments: dict) -> RunResult:
        return self._finish(self._start(kernel, arguments))

    def run_many(self, kernel, calls: list[dict]) -> list[RunResult]:
        return list(self.run_stream(kernel, calls))

    def run_stream(self, kernel, calls: Iterable[dict]) -> Iterator[RunResult]:
        """Each call as it comes, one in flight per compute unit, results in order. While a call
        runs, xrtRunWaitFor holds no GIL (ctypes releases it), so host.drivers.prefetched packs
        the next chunk meanwhile."""
        pending: deque = deque()
        try:
            for arguments in calls:
                if len(pending) >= len(self.compute_units(kernel)):
                    yield self._finish(pending.popleft())
                pending.append(self._start(kernel, arguments))
            while pending:
                yield self._finish(pending.popleft())
        finally:
            # a failed or abandoned stream: the calls still in flight end before their buffers
            # are freed
            while pending:
                try:
                    self._finish(pending.popleft())
                except DeviceError:
                    pass
