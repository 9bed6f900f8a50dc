"""The card driver: XRT's C API (``libxrt_coreutil.so.2``) through ctypes.

Why the C API and not pyxrt (docs/kernel_interface.md, "Driver"): the driver reads and writes the
status registers (identity, ERROR, FRESH), which pyxrt cannot since XRT 2.12 (its
``kernel.read_register``/``write_register`` were dropped from pyxrt.cpp; tests/data/pyxrt_api.json
records every release), while ``xrtKernelReadRegister``/``xrtKernelWriteRegister`` exist in every
release 2.12 .. 2.20 with the same prototype (tests/data/xrt_c_api.json). pyxrt is moreover a
compiled module of the card host's system Python (3.10 on Ubuntu 22.04) and does not import into
this package's Python >= 3.11; a C library needs no Python-version match. ctypes releases the GIL
during every foreign call, so ``xrtRunWaitFor`` lets the packer thread (host.drivers.prefetched)
pack the next chunk while the kernel runs.

:data:`PROTOTYPES` is every C function the driver calls, with its ctypes prototype; a test loads
the real library and compares each with the declaration in XRT's installed headers, and the
stand-in (sim/xrt_sim.py, ``KMER_SKETCH_PYXRT=sim``) exposes exactly these functions with the
same conventions (handles as integers, out-parameters through ctypes pointers, errno).

:class:`XrtDevice` opens every compute unit of a kernel (``kernel:kernel_1``, ``kernel_2``, ...:
the names ``python -m hw.build`` gives the ``nk=`` units) exclusively, checks each unit's
identity words, asks for a clean start before a unit's first call and after any call of it that
failed, keeps one call in flight per unit, keeps every buffer object until its results are read,
and on a timeout (XRT's C API has no abort) marks the device unusable and says to reset the card.
"""

import ctypes
import itertools
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_ubyte, c_uint, c_uint32, c_uint64, c_void_p
from typing import NamedTuple

from .calls import (DeviceError, KernelError, Output, RunResult, as_bytes, buffer_sizes,
                    check_arguments, scalars)
from .control import check_error, check_identity, request_clean_start, timeout_ms

__all__ = ["PROTOTYPES", "Prototype", "LIBRARY", "STAND_IN_ENV", "XrtDevice", "xrt_api",
           "standing_in", "device_problem", "ERT_CMD_STATE"]

LIBRARY = "libxrt_coreutil.so.2"
#: ``KMER_SKETCH_PYXRT=sim``: XrtDevice drives the XRT stand-in (sim/xrt_sim.py), which
#: simulates the kernels of a ``python -m hw.build`` output directory, instead of a card. (The
#: variable keeps the name it had when the stand-in imitated pyxrt.)
STAND_IN_ENV = "KMER_SKETCH_PYXRT"


class Prototype(NamedTuple):
    restype: type | None
    argtypes: tuple
    variadic: bool = False


#: ``xuid_t`` (``unsigned char[16]``) as a parameter: a pointer to its first byte
UUID = POINTER(c_ubyte)
#: The C functions the driver calls (xrt/xrt_device.h, xrt_kernel.h, xrt_bo.h). Handles are
#: ``void *``; enums (ert_cmd_state, xclBOSyncDirection) are C ``int``.
PROTOTYPES = {
    "xrtDeviceOpen": Prototype(c_void_p, (c_uint,)),
    "xrtDeviceClose": Prototype(c_int, (c_void_p,)),
    "xrtDeviceLoadXclbinFile": Prototype(c_int, (c_void_p, c_char_p)),
    "xrtDeviceGetXclbinUUID": Prototype(c_int, (c_void_p, UUID)),
    "xrtPLKernelOpenExclusive": Prototype(c_void_p, (c_void_p, UUID, c_char_p)),
    "xrtKernelClose": Prototype(c_int, (c_void_p,)),
    "xrtKernelArgGroupId": Prototype(c_int, (c_void_p, c_int)),
    "xrtKernelReadRegister": Prototype(c_int, (c_void_p, c_uint32, POINTER(c_uint32))),
    "xrtKernelWriteRegister": Prototype(c_int, (c_void_p, c_uint32, c_uint32)),
    "xrtBOAlloc": Prototype(c_void_p, (c_void_p, c_size_t, c_uint64, c_uint32)),
    "xrtBOFree": Prototype(c_int, (c_void_p,)),
    "xrtBOWrite": Prototype(c_int, (c_void_p, c_void_p, c_size_t, c_size_t)),
    "xrtBORead": Prototype(c_int, (c_void_p, c_void_p, c_size_t, c_size_t)),
    "xrtBOSync": Prototype(c_int, (c_void_p, c_int, c_size_t, c_size_t)),
    "xrtBOAddress": Prototype(c_uint64, (c_void_p,)),
    "xrtRunOpen": Prototype(c_void_p, (c_void_p,)),
    "xrtRunSetArg": Prototype(c_int, (c_void_p, c_int), variadic=True),
    "xrtRunStart": Prototype(c_int, (c_void_p,)),
    "xrtRunWaitFor": Prototype(c_int, (c_void_p, c_uint)),
    "xrtRunState": Prototype(c_int, (c_void_p,)),
    "xrtRunClose": Prototype(c_int, (c_void_p,)),
}

#: xrt/ert.h ``enum ert_cmd_state``
ERT_CMD_STATE = {1: "NEW", 2: "QUEUED", 3: "RUNNING", 4: "COMPLETED", 5: "ERROR", 6: "ABORT",
                 7: "SUBMITTED", 8: "TIMEOUT", 9: "NORESPONSE", 10: "SKERROR", 11: "SKCRASHED"}
COMPLETED, TIMEOUT = 4, 8
#: xrt.h ``enum xclBOSyncDirection``
SYNC_TO_DEVICE, SYNC_FROM_DEVICE = 0, 1
#: xrt/xrt_bo.h: XRT_BO_FLAGS_NONE (a normal buffer: host and device memory)
BO_FLAGS_NONE = 0


class CApi:
    """The functions of :data:`PROTOTYPES` from a loaded library, their prototypes set; no other
    name of the library is reachable through it."""

    def __init__(self, library: ctypes.CDLL, origin: str):
        self.origin = origin
        for name, prototype in PROTOTYPES.items():
            function = getattr(library, name)
            function.restype = prototype.restype
            function.argtypes = prototype.argtypes   # variadic: the fixed ones only
            setattr(self, name, function)


def library_candidates() -> list[str]:
    """Where libxrt_coreutil is looked for: $XILINX_XRT/lib (XRT's setup.sh), /opt/xilinx/xrt/lib
    (Xilinx's packages), then the dynamic linker's path (Debian's libxrt1 in /usr/lib/<arch>)."""
    found = []
    for root in (os.environ.get("XILINX_XRT"), "/opt/xilinx/xrt"):
        if root:
            path = pathlib.Path(root) / "lib" / LIBRARY
            if path.is_file():
                found.append(str(path))
    return found + [LIBRARY]


def _load_library() -> CApi:
    errors = []
    for candidate in library_candidates():
        try:
            library = ctypes.CDLL(candidate, use_errno=True)
        except OSError as error:
            errors.append(str(error))
            continue
        return CApi(library, _loaded_path(candidate))
    raise DeviceError(f"the xrt backend needs XRT ({LIBRARY} not found: install XRT and "
                      "'source /opt/xilinx/xrt/setup.sh', or Debian's libxrt1)")


def _loaded_path(candidate: str) -> str:
    """The file the dynamic linker mapped for ``candidate`` (a bare name resolves on its path)."""
    if os.path.isabs(candidate):
        return candidate
    try:
        for line in pathlib.Path("/proc/self/maps").read_text().splitlines():
            if line.endswith("/" + candidate) or f"/{candidate}." in line.rsplit(" ", 1)[-1]:
                return line.rsplit(" ", 1)[-1]
    except OSError:
        pass
    return candidate


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
        api = _load_library()
        line = f"xrt: {LIBRARY} (XRT C API) from {api.origin}"
    api.report = line
    return api


def _report_once(api) -> None:
    """Say on stderr, once per process, which XRT drives the card (after the device opened and
    the xclbin loaded: a failure before that is one line of its own)."""
    if api.report not in _reported:
        _reported.add(api.report)
        print(api.report, file=sys.stderr)


_PROBE = """
import ctypes, sys
library = ctypes.CDLL(sys.argv[1])
library.xrtDeviceOpen.restype = ctypes.c_void_p
library.xrtDeviceOpen.argtypes = (ctypes.c_uint,)
sys.exit(0 if library.xrtDeviceOpen(int(sys.argv[2])) else 3)
"""


def device_problem(library: str, index: int) -> str | None:
    """Why XRT cannot open device ``index`` here, or None. XRT ends the process from inside
    ``xrtDeviceOpen`` where it has no runtime (std::terminate with "XILINX_XRT not set"), so
    that case is checked first and the open itself is tried in a child process."""
    root = os.environ.get("XILINX_XRT")
    if not root:
        return ("XILINX_XRT is not set (source /opt/xilinx/xrt/setup.sh; on F1 the aws-fpga "
                "vitis_runtime_setup.sh)")
    core = pathlib.Path(root) / "lib" / "libxrt_core.so.2"
    if not core.is_file():
        return (f"XILINX_XRT={root} has no lib/libxrt_core.so.2, the XRT core library of a PCIe "
                "card (install XRT from Xilinx's packages)")
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE, library, str(index)],
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "XRT did not answer within 120 s"
    if probe.returncode == 0:
        return None
    nodes = sorted(str(p) for p in pathlib.Path("/dev/dri").glob("renderD*")) \
        if pathlib.Path("/dev/dri").is_dir() else []
    # XRT prints a banner (version, PID, host) before its messages; its ERROR lines say why
    said = "; ".join(" ".join(line.split()) for line in
                     re.findall(r"\[XRT\] ERROR: ?(.*)", probe.stderr))
    if probe.returncode == 3:
        where = ("render nodes " + ", ".join(nodes) if nodes
                 else "no /dev/dri/renderD* of the xocl driver")
        return (f"XRT found no card with index {index} ({where}"
                + (f"; XRT: {said}" if said else "") + ")")
    ended = (f"killed by {signal.Signals(-probe.returncode).name}" if probe.returncode < 0
             else f"exit status {probe.returncode}")
    what = re.findall(r"what\(\): *(.*)", probe.stderr)
    said = "; ".join(filter(None, [said] + [" ".join(w.split()) for w in what]))
    return f"XRT ended the process opening the device ({ended}" + \
        (f"; XRT: {said}" if said else "") + ")"


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


def _errno_text() -> str:
    code = ctypes.get_errno()
    return os.strerror(code) if code else "no reason given"


class _Buffer:
    """One buffer object; freed (xrtBOFree) by :meth:`free` or when dropped."""

    def __init__(self, api, device, size: int, group: int, what: str):
        self._api = api
        self.handle = api.xrtBOAlloc(device, size, BO_FLAGS_NONE, group)
        if not self.handle:
            raise DeviceError(f"{what}: cannot allocate {size} bytes in memory group {group} "
                              f"({_errno_text()})")
        self.address = api.xrtBOAddress(self.handle)

    def write(self, data: bytes, what: str):
        if self._api.xrtBOWrite(self.handle, data, len(data), 0) or \
                self._api.xrtBOSync(self.handle, SYNC_TO_DEVICE, len(data), 0):
            raise DeviceError(f"{what}: cannot copy {len(data)} bytes to the card "
                              f"({_errno_text()})")

    def read(self, size: int, what: str) -> bytes:
        target = ctypes.create_string_buffer(size)
        if self._api.xrtBOSync(self.handle, SYNC_FROM_DEVICE, size, 0) or \
                self._api.xrtBORead(self.handle, target, size, 0):
            raise DeviceError(f"{what}: cannot copy {size} bytes from the card "
                              f"({_errno_text()})")
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
                              f"({_errno_text()})")
        return word.value

    def write_register(self, offset: int, value: int):
        if self.api.xrtKernelWriteRegister(self.handle, offset, value & 0xFFFF_FFFF):
            raise DeviceError(f"{self.name}: cannot write register 0x{offset:x} "
                              f"({_errno_text()})")


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
                              f"({_errno_text()})")
        if api.xrtDeviceLoadXclbinFile(self.device, os.fsencode(path)):
            raise DeviceError(f"{path}: cannot load on device {device_index} ({_errno_text()})")
        self.uuid = (c_ubyte * 16)()
        if api.xrtDeviceGetXclbinUUID(self.device, self.uuid):
            raise DeviceError(f"{path}: no xclbin UUID on device {device_index} "
                              f"({_errno_text()})")
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
                                  f"compute unit {name}:{name}_1 exclusively: {_errno_text()})")
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
            raise DeviceError(f"{unit.name}: cannot open a run ({_errno_text()})")
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
                                          f"({arg.name}): {_errno_text()}")
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
                                      f"{_errno_text()}")
            if api.xrtRunStart(run):
                raise DeviceError(f"{unit.name}: cannot start ({_errno_text()})")
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
