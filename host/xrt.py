"""The card driver: :class:`XrtDevice` runs kernels on a card through XRT's C API
(host.xrt_binding: the ctypes prototypes and the library), or on a stand-in for that library
handed to it as ``api`` (the tests', or sim/xrt_sim.py's through host.backends with
``KMER_SKETCH_PYXRT=sim``; this module imports no stand-in).

:class:`XrtDevice` loads the xclbin, reads its compute units from the xclbin's own IP_LAYOUT
(host.xclbin) and opens each exclusively by the name form XRT documents for a compute unit,
``kernel:{unit}`` (xrt_kernel.h, ``xrtPLKernelOpen``: "kernel:{cu1,cu2}"; a name without braces
names a kernel, so ``kernel:kernel_1`` matches no unit: xrt_xclbin.cpp, ``copy_if_name_match``).
A unit that XRT will not open (busy in another process, misnamed) is an error naming the unit and
XRT's own message. The driver checks each unit's identity words, asks for a clean start before a
unit's first call and after any call of it that failed, keeps one call in flight per unit, keeps
every buffer object until its results are read, and when a run does not complete (a timeout, or
the states ABORT, ERROR, NORESPONSE: XRT's C API has no abort) keeps that call's buffers for the
life of the process, marks the device unusable and says to reset the card. :meth:`close` closes
the units and the device (the command line closes them when a command ends).

Error lines quote what XRT printed for the failed call (host.xrt_binding.XrtConsole), never
errno, which XRT sets for some failures only.
"""

import ctypes
import itertools
import json
import os
import pathlib
import sys
from collections.abc import Iterator
from ctypes import c_ubyte, c_uint32, c_void_p

from .calls import (DeviceError, KernelError, Output, RunResult, as_bytes, buffer_sizes,
                    run_fields, scalars)
from .card import CardDevice
from .control import check_error, timeout_ms
from .interrupts import uninterrupted
from .xclbin import read_units
from .xrt_binding import (BO_FLAGS_NONE, COMPLETED, ERT_CMD_STATE, NEW, SYNC_FROM_DEVICE,
                          SYNC_TO_DEVICE, TIMEOUT, XrtConsole, device_problem, load_library)

__all__ = ["XrtDevice", "unit_open_name"]

_reported: set = set()
#: calls whose run did not complete: their run handles and buffer objects are never closed or
#: freed in this process, since the compute unit may still write into them
_ABANDONED: list = []
#: xrtRunWaitFor waits this long at a time (a signal ends a wait within one slice)
WAIT_SLICE_MS = 200


def unit_open_name(kernel: str, unit: str) -> str:
    """The name that opens exactly one compute unit: ``kernel:{unit}`` (XRT builds the regular
    expression ``^(kernel):((unit))$`` from it and matches the IP_LAYOUT names)."""
    return f"{kernel}:{{{unit}}}"


def _report_once(api) -> None:
    """Say on stderr, once per process, which XRT drives the card (after the device opened and
    the xclbin loaded: a failure before that is one line of its own)."""
    if api.description not in _reported:
        _reported.add(api.description)
        print(f"xrt: {api.description}", file=sys.stderr)


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


class _Buffer:
    """One buffer object of a call; freed (xrtBOFree) only by the driver, when the call's run is
    known not to run (never by the garbage collector: a running unit may still write it)."""

    def __init__(self, device: "XrtDevice", handle: int):
        self._device = device
        self.handle = handle
        self.address = None

    def write(self, data: bytes, what: str):
        device = self._device
        if device.call("xrtBOWrite", self.handle, data, len(data), 0) or \
                device.call("xrtBOSync", self.handle, SYNC_TO_DEVICE, len(data), 0):
            raise DeviceError(f"{what}: cannot copy {len(data)} bytes to the card "
                              f"({device.reason()})")

    def read(self, size: int, what: str) -> bytes:
        device = self._device
        target = ctypes.create_string_buffer(size)
        if device.call("xrtBOSync", self.handle, SYNC_FROM_DEVICE, size, 0) or \
                device.call("xrtBORead", self.handle, target, size, 0):
            raise DeviceError(f"{what}: cannot copy {size} bytes from the card "
                              f"({device.reason()})")
        return target.raw

    def free(self):
        handle, self.handle = self.handle, None     # first: freed at most once
        if handle:
            self._device.call("xrtBOFree", handle)


class _ComputeUnit:
    """One compute unit, opened exclusively (XRT grants register access to an exclusive handle
    of one unit)."""

    def __init__(self, device: "XrtDevice", handle: int, name: str):
        self.device, self.handle, self.name = device, handle, name
        self.checked: set = set()     # the Params whose identity words matched this unit
        self.needs_clean_start = True
        self.calls = 0

    def read_register(self, offset: int) -> int:
        word = c_uint32()
        if self.device.call("xrtKernelReadRegister", self.handle, offset, ctypes.byref(word)):
            raise DeviceError(f"{self.name}: cannot read register 0x{offset:x} "
                              f"({self.device.reason()})")
        return word.value

    def write_register(self, offset: int, value: int):
        if self.device.call("xrtKernelWriteRegister", self.handle, offset, value & 0xFFFF_FFFF):
            raise DeviceError(f"{self.name}: cannot write register 0x{offset:x} "
                              f"({self.device.reason()})")

    def close(self):
        handle, self.handle = self.handle, None
        if handle:
            self.device.call("xrtKernelClose", handle)


class _Call:
    """A call: its unit, run handle and buffers. It is in its device's ``in_flight`` list from
    the moment its run is opened until the run is known not to run (never started, or
    completed) and its run is closed and its buffers freed, or until it is abandoned (a run that
    may still run keeps its run and buffers for the life of the process)."""

    def __init__(self, kernel, arguments, unit, run, limit_ms):
        self.kernel, self.arguments, self.unit, self.run = kernel, arguments, unit, run
        self.buffers: list[_Buffer] = []
        self.outputs: dict = {}
        self.values: dict = {}
        self.limit_ms = limit_ms
        self.abandoned = False


class XrtDevice(CardDevice):
    """A card driven through XRT's C API: load the xclbin (.awsxclbin on F1), then run kernels.

    ``api`` is the library; None loads XRT's (host.xrt_binding.load_library), after checking
    that XRT can open device ``device_index`` here. A stand-in given instead takes its own kind
    of binary (sim/xrt_sim.py: a ``python -m hw.build`` output directory, whose kernels then run
    as built: their geometry is taken from its kernel.json files, and a run asking for other
    algorithm parameters is refused by the identity words)."""

    #: what to do before the card is used again when a unit may still be running
    reset_advice = "reset the card (xbutil reset)"

    name = "xrt"

    def __init__(self, xclbin: str, device_index: int = 0, api=None):
        path = pathlib.Path(xclbin)
        self.xclbin_path = str(path)
        self.path = path
        self.device = None
        self._units: dict[str, list[_ComputeUnit]] = {}
        self._turns: dict[str, Iterator[int]] = {}
        self._unusable: str | None = None
        self._console = XrtConsole()
        #: the calls whose run is open and not known to be done with (:class:`_Call`)
        self.in_flight: list[_Call] = []
        #: the compute units a run abandoned by this device may still be running on
        self.still_running: list[str] = []
        if api is None:
            if not path.is_file():
                raise DeviceError(f"{path}: no such xclbin (build one with python -m hw.build "
                                  f"and v++, see its Makefile)")
            api = load_library()
            problem = device_problem(api.origin, device_index)
            if problem:
                raise DeviceError(f"no XRT device {device_index}: {problem}")
        self._api = api
        self.device = self.call("xrtDeviceOpen", device_index)
        if not self.device:
            raise DeviceError(f"no XRT device {device_index}: XRT could not open it "
                              f"({self.reason()})")
        try:
            self._load(path, device_index)
        except BaseException:
            self.close()
            raise
        built = build_parameters(path) if path.is_dir() else {}
        #: kernel -> geometry fields (host.drivers builds the kernels' Params with them)
        self.geometry = {name: {field: value for field, value in params.items()
                                if field not in run_fields(name)}
                         for name, params in built.items()}
        _report_once(api)

    def _load(self, path: pathlib.Path, device_index: int):
        if self.call("xrtDeviceLoadXclbinFile", self.device, os.fsencode(path)):
            raise DeviceError(f"{path}: XRT cannot load it on device {device_index} "
                              f"({self.reason()})")
        self.uuid = (c_ubyte * 16)()
        if self.call("xrtDeviceGetXclbinUUID", self.device, self.uuid):
            raise DeviceError(f"{path}: XRT gives no xclbin UUID on device {device_index} "
                              f"({self.reason()})")
        try:
            contents = read_units(self._api.xclbin_bytes(path))
        except (OSError, ValueError) as error:
            raise DeviceError(f"{path}: {error.strerror if isinstance(error, OSError) else error}")
        if contents.uuid != bytes(self.uuid):
            raise DeviceError(f"{path}: XRT reports xclbin {bytes(self.uuid).hex()} loaded on "
                              f"device {device_index}, but the file's UUID is "
                              f"{contents.uuid.hex()} (was it replaced while loading?)")
        #: kernel -> its compute units, as the xclbin's IP_LAYOUT lists them
        self.xclbin_units = contents.units

    def call(self, function: str, *args):
        """``function`` of the library, with XRT's messages about it kept for :meth:`reason`."""
        return self._console.call(getattr(self._api, function), *args)

    def reason(self) -> str:
        """What XRT printed about the last call that failed."""
        return self._console.reason()

    def compute_units(self, kernel) -> list[_ComputeUnit]:
        """Every compute unit of ``kernel`` (Params) in the xclbin's IP_LAYOUT, each opened
        exclusively."""
        name = kernel.desc.name
        if name not in self._units:
            listed = self.xclbin_units.get(name)
            if not listed:
                held = ", ".join(f"{k}:{u}" for k, units in self.xclbin_units.items()
                                 for u in units) or "none"
                raise DeviceError(f"kernel {name} is not in {self.path} (the compute units of "
                                  f"its IP_LAYOUT: {held})")
            units = []
            try:
                for unit in listed:
                    handle = self.call("xrtPLKernelOpenExclusive", self.device, self.uuid,
                                       unit_open_name(name, unit).encode())
                    if not handle:
                        raise DeviceError(f"{self.path}: XRT cannot open compute unit "
                                          f"{name}:{unit} exclusively ({self.reason()})")
                    units.append(_ComputeUnit(self, handle, f"{name}:{unit}"))
            except BaseException:
                for unit in units:
                    unit.close()
                raise
            self._units[name] = units
            self._turns[name] = itertools.cycle(range(len(units)))
        return self._units[name]

    def _start(self, kernel, arguments: dict) -> _Call:
        desc = kernel.desc
        unit = self._next_unit(kernel, arguments)
        limit = timeout_ms(kernel, buffer_sizes(arguments), scalars(desc, arguments))
        call = None
        try:
            with uninterrupted():   # the run is in in_flight from the moment it exists
                run = self.call("xrtRunOpen", unit.handle)
                if not run:
                    raise DeviceError(f"{unit.name}: cannot open a run ({self.reason()})")
                call = _Call(kernel, arguments, unit, run, limit)
                self.in_flight.append(call)
            self._set_arguments(call)
            with uninterrupted():
                if self.call("xrtRunStart", run):
                    raise DeviceError(f"{unit.name}: cannot start ({self.reason()})")
                unit.calls += 1
        except BaseException:
            # a failure, or an interrupt at any point, even as xrtRunStart returns: the run's
            # own state says whether the unit may be running (the call is then abandoned)
            if call is not None:
                self._settle(call)
            raise
        return call

    def _set_arguments(self, call: _Call) -> None:
        unit, desc, run = call.unit, call.kernel.desc, call.run
        for index, arg in enumerate(desc.args):
            value = call.arguments[arg.name]
            if arg.kind == "scalar":
                if not 0 <= int(value) < 1 << 32:
                    raise DeviceError(f"kernel {desc.name}: scalar {arg.name}={value} does "
                                      "not fit in 32 bits")
                status = self.call("xrtRunSetArg", run, index, c_uint32(int(value)))
            else:
                size = value.size if isinstance(value, Output) else len(as_bytes(value))
                group = self.call("xrtKernelArgGroupId", unit.handle, index)
                if group < 0:
                    raise DeviceError(f"{unit.name}: no memory group for argument {index} "
                                      f"({arg.name}) ({self.reason()})")
                buffer = self._allocate(call, max(size, 4096), group, f"{unit.name} {arg.name}")
                if isinstance(value, Output):
                    call.outputs[arg.name] = (buffer, size)
                elif size:
                    buffer.write(as_bytes(value), f"{unit.name} {arg.name}")
                call.values[arg.name] = buffer.address
                status = self.call("xrtRunSetArg", run, index, c_void_p(buffer.handle))
            if status:
                raise DeviceError(f"{unit.name}: cannot set argument {index} ({arg.name}) "
                                  f"({self.reason()})")

    def _allocate(self, call: _Call, size: int, group: int, what: str) -> _Buffer:
        """A buffer object of ``call``, in its list from the moment it exists."""
        with uninterrupted():
            handle = self.call("xrtBOAlloc", self.device, size, BO_FLAGS_NONE, group)
            if not handle:
                raise DeviceError(f"{what}: cannot allocate {size} bytes in memory group "
                                  f"{group} ({self.reason()})")
            buffer = _Buffer(self, handle)
            call.buffers.append(buffer)
        buffer.address = self.call("xrtBOAddress", handle)
        return buffer

    def _wait(self, call: _Call) -> int:
        """The run's state after waiting for it at most its time limit, in slices of
        :data:`WAIT_SLICE_MS` (xrtRunWaitFor returns TIMEOUT for a slice and may be called
        again; xrt_kernel.cpp, ``run_impl::wait``): between them, Python code runs, so a signal
        ends the wait within a slice. Not under XrtConsole: what is written to standard error
        meanwhile must not wait."""
        waited = 0
        while True:
            step = max(1, min(WAIT_SLICE_MS, call.limit_ms - waited))
            state = self._api.xrtRunWaitFor(call.run, step)
            waited += step
            if state != TIMEOUT or waited >= call.limit_ms:
                return state

    def _finish(self, call: _Call) -> RunResult:
        """Wait for ``call``, check its state and ERROR word, read its outputs; free it."""
        unit, desc = call.unit, call.kernel.desc
        try:
            state = self._wait(call)
        except BaseException:
            self._settle(call)      # interrupted while waiting: abandoned if it still runs
            raise
        if state != COMPLETED:
            # XRT's C API has no abort: the unit may still write into these buffers, so they
            # stay allocated, and nothing more runs on this device in this process
            with uninterrupted():
                self._abandon(call, state)
            if state == TIMEOUT:
                raise KernelError(self._unusable)
            raise DeviceError(self._unusable)
        try:
            try:
                check_error(call.kernel, unit.read_register,
                            {**scalars(desc, call.arguments), **call.values})
            except KernelError:
                unit.needs_clean_start = True
                raise
            return RunResult({name: buffer.read(size, f"{unit.name} {name}")
                              for name, (buffer, size) in call.outputs.items()})
        finally:
            self._settle(call)

    def _settle(self, call: _Call) -> None:
        """``call`` will not be waited for: released (its run closed, its buffers freed) if its
        run never started or has completed, as XRT reports the run's state, else abandoned.
        Idempotent, and not split by a signal."""
        with uninterrupted():
            if call not in self.in_flight:
                return
            if call.abandoned:
                self.in_flight.remove(call)
                return
            state = self.call("xrtRunState", call.run) if call.run else COMPLETED
            if state in (NEW, COMPLETED):
                self._release(call)
            else:
                self._abandon(call, state)

    def _release(self, call: _Call) -> None:
        run, call.run = call.run, None
        if run:
            self.call("xrtRunClose", run)
        for buffer in call.buffers:
            buffer.free()
        self.in_flight.remove(call)

    def _abandon(self, call: _Call, state: int) -> None:
        """Keep the run and buffers of ``call`` for the life of the process (the unit may still
        write into them) and make the device unusable, saying to reset the card."""
        call.abandoned = True
        _ABANDONED.append(call)
        if call in self.in_flight:
            self.in_flight.remove(call)
        unit, desc = call.unit, call.kernel.desc
        unit.needs_clean_start = True
        if unit.name not in self.still_running:
            self.still_running.append(unit.name)
        if self._unusable is None:
            what = (f"no ap_done within {call.limit_ms} ms on {unit.name}" if state == TIMEOUT
                    else f"the run on {unit.name} ended in state "
                         f"{ERT_CMD_STATE.get(state, state)}")
            self._unusable = (f"{desc.name}: {what}; the compute unit may still be running: "
                              f"{self.reset_advice} before using it again")

    def _kernel_units(self, kernel) -> list[_ComputeUnit]:
        return self.compute_units(kernel)

    def _registers(self, unit: _ComputeUnit):
        return unit.read_register, unit.write_register

    def close(self):
        """Settle the calls still in flight (an interrupted command's), then close every compute
        unit and the device: XRT holds a unit opened exclusively until its handle is closed.
        Calls abandoned by a run that did not complete keep their run and buffers (a run keeps
        its unit's context open in XRT); ``still_running`` names their units."""
        for call in list(self.in_flight):
            self._settle(call)
        with uninterrupted():
            for units in self._units.values():
                for unit in units:
                    unit.close()
            self._units.clear()
            self._turns.clear()
            device, self.device = self.device, None
            if device:
                self.call("xrtDeviceClose", device)
