"""A stand-in for XRT's C API (libxrt_coreutil) that runs the generated Verilog under cocotb, and
holds XRT's rules and nothing else.

The tests hand it to the card driver, ``host.xrt.XrtDevice(DIR, api=stand_in)``, as does
``--backend xrt`` with ``KMER_SKETCH_PYXRT=sim`` (host.device.xrt_stand_in, the one place
outside the tests that reaches it), so the driver's own code (argument order, 64-bit buffer handles and device
addresses, memory groups, sync directions, compute units, register access, XRT's messages) runs
without a card::

    python -m hw.build --kernels jacc_sketch -P jacc_sketch.lanes=2 ... -o build/small
    KMER_SKETCH_PYXRT=sim python -m host sketch a.fa b.fa --backend xrt --xclbin build/small

It is tied to the real library through host.xrt_binding.PROTOTYPES: it offers exactly those
functions (any other name raises AttributeError, as a symbol the driver never declared), each
checks its arguments with the same ctypes prototype the real call would use
(``argtypes[i].from_param``, so a wrong type fails here as it fails through ctypes), returns
what ctypes returns (a handle as an int or None for NULL, an int status or state) and writes
out-parameters through the pointers given. Besides them, :meth:`XrtStandIn.xclbin_bytes` gives
the axlf container of the binary (sim/xclbin.py), from which the driver reads the compute units
as it reads a real xclbin's.

**XRT's rules, and nothing else.** Every call that fails here fails as XRT fails it: XRT's
message on standard error (``[XRT] ERROR: <what>``, after XRT's banner the first time), its
return value, and errno only where XRT sets it (an ``xrt_core::error``); the rules and the XRT
source of each are in docs/kernel_interface.md ("The stand-in's rules") and tests/data/
xrt_rules.json, each with a test in tests/test_xrt_standin.py, several of them run against XRT's
own noop device too. What the stand-in does not model (buffer flags, a run on a kernel handle
of several units, ...) raises :class:`StandInLimitation`, a Python exception and never an
XRT-like failure, so no test passes by the stand-in answering as XRT would not. Like XRT, it
reads xrt.ini once (host.xrt_binding.xrt_settings): ``Runtime.runtime_log`` sends its messages
to a file, the system log or nowhere, ``Runtime.rw_shared`` allows register access on a unit
opened shared (``xrtPLKernelOpen``).

For the tests of interrupted commands: ``KMER_SKETCH_XRT_SIM_LOG=FILE`` logs every call (its
handles and result) to FILE, ``KMER_SKETCH_XRT_SIM_SLOW_WAIT=SECONDS`` makes every wait for a
started run last that long (a unit that takes long), and ``freed_while_running`` lists the
buffers freed under a started run.

The binary: ``xrtDeviceLoadXclbinFile`` takes a ``python -m hw.build`` output directory (or one
kernel's directory ``DIR/kernels/<name>``), read as sim.xclbin.BuildImage: each kernel's
``kernel.xml`` (argument ids, register offsets and sizes, the m_axi port of each pointer, the
control window's range) and its Verilog, and the compute units and memory banks of the link plan
in ``DIR/build.json`` (``nk``: units ``<kernel>_1`` ..). Memory index i is the i-th bank of the
container's MEM_TOPOLOGY, compute unit i the i-th IP_LAYOUT entry.

What a card does, modelled (not refusals):

* Device memory: one bank per memory tag at a 64-bit base address above 4 GiB (``BANK_BASE +
  index * BANK_STRIDE``, as the DDR banks of an Alveo card), each a sparse file that the
  simulations map too, so a pointer cut to 32 bits reaches no bank. A buffer object has host
  memory and device memory: ``xrtBOWrite``/``xrtBORead`` act on the host copy, ``xrtBOSync``
  copies as a card's DMA does. ``xrtBOFree`` releases the device memory and overwrites it
  (:data:`POISON`): a kernel reading a freed input, or a result read after its buffer was freed,
  is garbage, as on a card where the memory is reused.
* A kernel's m_axi access outside the bank its port is connected to is answered with an AXI
  error response (SLVERR; a card's interconnect answers DECERR), which the kernel reports in its
  own ERROR register; the run completes, as on a card (XRT knows nothing of the kernel's AXI
  traffic), and the access is listed in :attr:`XrtStandIn.bank_errors`.
* Simulated time: the kernel clock is 250 MHz and the simulation advances only inside
  ``xrtRunWaitFor(run, timeout_ms)``, which gives the kernel ``timeout_ms * 250 000`` cycles
  (0: until the run ends, as XRT waits for ever). The wait blocks in a socket read, which holds
  no GIL, as a ctypes call into the real library holds none. A compute unit's simulation starts
  when its registers are first touched or its first run starts.
"""

import collections
import ctypes
import errno
import itertools
import json
import mmap
import os
import pathlib
import re
import shutil
import tempfile
import threading
import time
import weakref

from sim.declared_functions import DeclaredFunctions
from sim.served import ServedSimulation
from sim.xclbin import BuildImage, Unit, axlf_container

__all__ = ["stand_in", "XrtStandIn", "StandInLimitation", "BANK_BASE", "BANK_STRIDE",
           "BANK_BYTES", "KERNEL_CLOCK_HZ", "POISON", "BANNER"]

#: device address of memory index 0, and the distance between banks (as on an Alveo U250)
BANK_BASE = 0x40_0000_0000
BANK_STRIDE = 0x10_0000_0000
#: size of each simulated bank (a sparse file: only what is written takes space)
BANK_BYTES = 1 << 30
KERNEL_CLOCK_HZ = 250_000_000
#: the byte freed device memory is overwritten with
POISON = 0xA5
_PAGE = 4096
#: xrt/ert.h enum ert_cmd_state
NEW, COMPLETED, ABORT, SUBMITTED, TIMEOUT = 1, 4, 6, 7, 8
#: what XRT's console dispatch prints before its first message (message.cpp)
BANNER = ("XRT build version: the XRT stand-in (sim/xrt_sim.py)\nBuild hash: \nBuild date: \n"
          "Git branch: \nPID: {pid}\nUID: {uid}\n[stand-in]\nHOST: \nEXE: \n")
#: the variable naming the file the stand-in logs its calls to (:meth:`XrtStandIn._log_call`)
CALL_LOG_ENV = "KMER_SKETCH_XRT_SIM_LOG"
#: the variable giving the seconds every wait for a started run lasts at least: a compute unit
#: that takes long, for the tests of an interrupted card run (tests/test_cli_card_interrupt.py)
SLOW_WAIT_ENV = "KMER_SKETCH_XRT_SIM_SLOW_WAIT"
#: the simulation of a run waited for with timeout 0 advances this many cycles at a time
_WAIT_STEP_CYCLES = 50_000_000


class StandInLimitation(RuntimeError):
    """A call the stand-in does not model (not a failure XRT would report)."""


def unit_name_pattern(name: str) -> str:
    """The regular expression XRT builds from a kernel or compute unit name
    (src/runtime_src/core/common/api/xrt_xclbin.cpp, ``copy_if_name_match``): ``kernel:{cu1,cu2}``
    matches those units of the kernel, any other name is a kernel name: ``^(name):((.*))$``."""
    braces = re.search(r"^(.*):\{(.*)\}$", name)
    if not braces:
        return "^(" + name + "):((.*))$"
    kernel, units = braces.groups()
    return "^(" + kernel + "):(" + "|".join(f"({unit})" for unit in units.split(",")) + ")$"


class _Bank:
    """One memory bank: a sparse file mapped here and in every simulation, and its allocator."""

    def __init__(self, directory: pathlib.Path, tag: str, index: int):
        self.tag, self.index = tag, index
        self.base = BANK_BASE + index * BANK_STRIDE
        self.path = directory / f"bank{index}.mem"
        with open(self.path, "w+b") as file:
            file.truncate(BANK_BYTES)
            self.memory = mmap.mmap(file.fileno(), BANK_BYTES)
        self._used: dict[int, int] = {}    # offset -> size of every live buffer

    def allocate(self, size: int) -> int | None:
        size = -(-size // _PAGE) * _PAGE
        offset = 0
        for start in sorted(self._used):
            if start - offset >= size:
                break
            offset = max(offset, start + self._used[start])
        if offset + size > BANK_BYTES:
            return None
        self._used[offset] = size
        return offset

    def free(self, offset: int):
        """Release a buffer's memory and overwrite it (POISON), so that a kernel still reading
        or a host reading it after the free sees garbage, as it may on a card."""
        size = self._used.pop(offset, None)
        if size is not None and not self.memory.closed:
            self.memory[offset:offset + size] = bytes([POISON]) * size

    def close(self):
        self.memory.close()


def _remove_banks(banks: dict, directory: pathlib.Path):
    for bank in banks.values():
        if not bank.memory.closed:
            bank.close()
    shutil.rmtree(directory, ignore_errors=True)


class _Device:
    """The one device: the loaded binary, its banks and the compute unit contexts open."""

    def __init__(self):
        self.image: BuildImage | None = None
        self.banks: dict[int, _Bank] = {}
        self.directory: pathlib.Path | None = None
        #: IP_LAYOUT name -> the context of that unit, shared by every handle that opened it
        self.contexts: dict[str, "_Context"] = {}
        self.buffers = 0

    def load(self, image: BuildImage, keep_banks: bool = False):
        if keep_banks:      # the same memory topology, kept with its buffers
            self.image = image
            return
        self.release()
        self.image = image
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="xrt-sim-"))
        self.banks = {index: _Bank(self.directory, tag, index)
                      for index, tag in enumerate(image.mems)}
        weakref.finalize(self, _remove_banks, self.banks, self.directory)

    def index_of(self, unit: Unit) -> int:
        """The unit's compute unit index (its place in IP_LAYOUT, sorted by base address)."""
        return self.image.units.index(unit)

    def release(self):
        for context in list(self.contexts.values()):
            context.close()
        self.contexts.clear()
        if self.directory is not None:
            _remove_banks(self.banks, self.directory)
            self.directory = None


class _Context:
    """A compute unit opened in this process, exclusively or shared (``exclusive``): every
    kernel handle and run that uses it holds a reference (XRT shares one context per unit within
    a process: xrt_kernel.cpp, ``ip_context::open``); its simulation starts when first
    needed."""

    def __init__(self, device: _Device, unit: Unit, exclusive: bool = True):
        self.device, self.unit, self.exclusive = device, unit, exclusive
        self.references = 0
        self._simulation: "_Simulation | None" = None

    @property
    def simulation(self) -> "_Simulation":
        if self._simulation is None:
            self._simulation = _Simulation(self.unit, self.device)
        return self._simulation

    def release(self):
        self.references -= 1
        if self.references == 0:
            self.close()

    def close(self):
        if self._simulation is not None:
            self._simulation.close()
            self._simulation = None
        self.device.contexts.pop(self.unit.ip_name, None)


class _Buffer:
    def __init__(self, device: _Device, bank: _Bank, offset: int, size: int):
        self.device, self.bank, self.offset, self.size = device, bank, offset, size
        self.host = bytearray(size)
        device.buffers += 1

    @property
    def address(self) -> int:
        return self.bank.base + self.offset

    def free(self):
        self.bank.free(self.offset)
        self.host = None
        self.device.buffers -= 1


class _Kernel:
    """A kernel handle: the contexts of the units its name matched."""

    def __init__(self, contexts: list[_Context]):
        self.contexts = contexts
        self.kernel = contexts[0].unit.kernel
        for context in contexts:
            context.references += 1

    def close(self):
        for context in self.contexts:
            context.release()


class _Run:
    def __init__(self, kernel: _Kernel):
        self.kernel = kernel
        self.values: dict[int, int] = {}
        self.state = NEW
        for context in kernel.contexts:     # a run keeps its kernel's units (xrt::run_impl)
            context.references += 1

    def close(self):
        for context in self.kernel.contexts:
            context.release()


def _unquoted(value: str) -> str:
    """A string setting of xrt.ini without the quotes XRT strips (config_reader.cpp)."""
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def _out_of_range(index: int, size: int) -> str:
    """libstdc++'s message for ``std::vector::at`` past the end (XRT prints what() as is)."""
    return (f"vector::_M_range_check: __n (which is {index % (1 << 64)}) >= this->size() "
            f"(which is {size})")


class XrtStandIn(DeclaredFunctions):
    """The functions of host.xrt_binding.PROTOTYPES over a simulated device (see the module
    docstring).

    Handles are integers above 2^32 (a handle cut to 32 bits is unknown here); a handle of the
    wrong kind or one already freed or closed is "No such handle", as XRT's handle maps answer.
    For the tests: ``started`` counts the runs started on each compute unit,
    ``register_writes`` lists every (unit, offset, value) written through
    xrtKernelWriteRegister, ``bank_errors`` every (unit, access) outside the bank of its port,
    and the IP_LAYOUT names put in ``held_elsewhere`` are held by another process (their
    exclusive open fails as XRT's does, EBUSY); ``freed_while_running`` lists the buffers freed
    under a started run, ``logged_elsewhere`` the messages xrt.ini sent away from standard
    error, and ``retains_memory`` makes the card keep its buffers across a reload of the same
    memory topology (rule reload-buffers)."""

    origin = "the XRT stand-in (sim/xrt_sim.py)"
    description = "the XRT C API stand-in (sim/xrt_sim.py)"
    library = "the XRT C API"
    declared_in = "host.xrt_binding.PROTOTYPES"

    def __init__(self):
        from host.xrt_binding import PROTOTYPES
        self._prototypes = PROTOTYPES
        self._handles: dict[int, object] = {}
        self._numbers = itertools.count(0x7F00_0000_1000, 0x40)
        self._device = _Device()
        self._banner_said = False
        self.started: collections.Counter = collections.Counter()
        self.register_writes: list[tuple[str, int, int]] = []
        self.bank_errors: list[tuple[str, str]] = []
        self.held_elsewhere: set[str] = set()
        #: the card keeps its memory across xclbins (XRT's DATA_RETAIN: xocl_ioctl.c,
        #: ``xocl_preserve_mem``): a reload of an xclbin of the same memory topology keeps the
        #: buffers allocated instead of refusing (EPERM)
        self.retains_memory = False
        # XRT reads xrt.ini once, at its first use in the process (config_reader.cpp): here,
        # when the library (the stand-in) is made
        from host.xrt_binding import message_route, xrt_settings
        settings = xrt_settings()
        self.message_route = message_route(settings)
        log = _unquoted(settings.get("Runtime.runtime_log", "console"))
        #: the file XRT's messages go to (file dispatch), if xrt.ini names one
        self._log_file = (log if self.message_route is not None and log not in (
            "syslog", "", "null") and not self.message_route.startswith("nowhere") else None)
        shared = os.environ.get("Runtime.rw_shared", settings.get("Runtime.rw_shared", "false"))
        self.rw_shared = shared in ("true", "1")
        #: XRT's messages that xrt.ini sent to the system log or dropped
        self.logged_elsewhere: list[str] = []
        #: the device addresses of buffers freed while a started run, not yet seen to end,
        #: had them among its arguments (the unit may still write there)
        self.freed_while_running: list[int] = []

    def _call(self, name: str, implementation, args: tuple):
        try:
            result = implementation(*args)
        except BaseException:
            self._log_call(name, args, "interrupted")
            raise
        self._log_call(name, args, result)
        return result

    def _log_call(self, name: str, args: tuple, result) -> None:
        """With ``KMER_SKETCH_XRT_SIM_LOG=FILE``, one JSON line per call made (its integer and
        handle arguments, its result) appended to FILE: what a process ended by a signal had
        opened, closed and kept, for the tests (tests/test_cli_interrupts.py)."""
        log = os.environ.get(CALL_LOG_ENV)
        if not log:
            return
        shown = [value.value if isinstance(value, ctypes._SimpleCData) else value
                 if isinstance(value, int) else None for value in args]
        with open(log, "a") as file:
            file.write(json.dumps({"call": name, "args": shown, "result": result}) + "\n")

    def xclbin_bytes(self, path) -> bytes:
        """The axlf container of the hw.build directory ``path``, as v++ would link it."""
        return axlf_container(BuildImage(pathlib.Path(os.fsdecode(path))))

    # -- how XRT fails ------------------------------------------------------------------------

    def _say(self, message: str):
        """An error message of XRT: on standard error (message.cpp, console dispatch), or where
        xrt.ini's Runtime.runtime_log sends it: a file (file dispatch: the banner when opened,
        then a line per message), the system log, or nowhere (host.xrt_binding.message_route)."""
        if self.message_route is None:
            text = f"[XRT] ERROR: {message}\n"
            if not self._banner_said:
                self._banner_said = True
                text = BANNER.format(pid=os.getpid(), uid=os.getuid()) + text
            os.write(2, text.encode())
        elif self._log_file is not None:
            mode = "a" if self._banner_said else "w"
            with open(self._log_file, mode) as log:
                if not self._banner_said:
                    self._banner_said = True
                    log.write(BANNER.format(pid=os.getpid(), uid=os.getuid()))
                log.write(f"[stand-in] [XRT] Tid: {threading.get_ident()},  ERROR: {message}\n")
        else:
            self.logged_elsewhere.append(message)

    def _failed(self, message: str, result):
        """A std::exception caught by the C function: its message, no errno."""
        self._say(message)
        return result

    def _error(self, code: int, message: str, result):
        """An ``xrt_core::error``: its message with the code's text, and errno."""
        self._say(f"{message}: {os.strerror(code)}")
        ctypes.set_errno(code)
        return result

    def _system_error(self, code: int, message: str, result):
        """An ``xrt_core::system_error`` (a shim's failure): message and code's text, no errno
        (the C functions' ``catch (const xrt_core::error&)`` does not take it)."""
        return self._failed(f"{message}: {os.strerror(code)}", result)

    # -- handles ------------------------------------------------------------------------------

    def _new(self, thing) -> int:
        number = next(self._numbers)
        self._handles[number] = thing
        return number

    def _get(self, handle, kind):
        handle = handle.value if isinstance(handle, ctypes.c_void_p) else handle
        thing = self._handles.get(handle)
        return thing if isinstance(thing, kind) else None

    def _no_handle(self, result):
        return self._error(errno.EINVAL, "No such handle", result)

    def _close(self, handle, kind) -> int:
        """xrt*Close of a handle of ``kind``: its object closed (its units released), or
        EINVAL for any other handle."""
        target = self._get(handle, kind)
        if target is None:
            return self._no_handle(-1)
        self._handles.pop(handle)
        target.close()
        return 0

    # -- device -------------------------------------------------------------------------------

    def _c_xrtDeviceOpen(self, index):
        if index != 0:
            return self._failed(f"Could not open device with index '{index}'", None)
        return self._new(self._device)

    def _c_xrtDeviceClose(self, device):
        if self._get(device, _Device) is None:
            return self._no_handle(-1)
        self._handles.pop(device)
        return 0

    def _c_xrtDeviceLoadXclbinFile(self, device, path):
        target = self._get(device, _Device)
        if target is None:
            return self._no_handle(-1)
        location = pathlib.Path(os.fsdecode(path))
        try:
            image = BuildImage(location)
        except ValueError as error:         # the stand-in's binary is a hw.build directory
            return self._failed(f"{location}: {error}", -1)
        if target.image is not None and target.image.uuid == image.uuid:
            return 0        # already loaded: a card is not reprogrammed (xocl_ioctl.c)
        if target.contexts:
            # a context locks the bitstream: the driver refuses with EBUSY (xocl_ioctl.c,
            # xocl_icap_bitstream_is_locked), XRT's shim says so (shim.cpp, xclLoadXclBin)
            return self._load_refused(errno.EBUSY, ["Xclbin on card is in use, can't change."])
        if target.buffers:
            if self.retains_memory and target.image is not None and \
                    target.image.mems == image.mems:
                # the memory topology is the same and the card keeps its memory: the buffers
                # stay (xocl_ioctl.c, xocl_preserve_mem)
                target.load(image, keep_banks=True)
                return 0
            # xocl_cleanup_mem refuses while buffers are allocated (xocl_drm.c,
            # xocl_check_topology: "pre-existing buffer allocations"), with EPERM, for which
            # XRT's shim has no message of its own
            return self._load_refused(errno.EPERM, [])
        target.load(image)
        return 0

    def _load_refused(self, code: int, said: list[str]):
        """xrtDeviceLoadXclbinFile refused by the card's driver with ``code``: XRT's shim says
        ``said`` and where to look (shim.cpp, xclLoadXclBin), its device layer throws an
        xrt_core::system_error (ishim.h, load_axlf)."""
        for message in said + [f"See dmesg log for details. err = {-code}"]:
            self._say(message)
        return self._system_error(code, "failed to load xclbin", -1)

    def _c_xrtDeviceGetXclbinUUID(self, device, out):
        target = self._get(device, _Device)
        if target is None:
            return self._no_handle(-1)
        ctypes.memmove(out, target.image.uuid if target.image else bytes(16), 16)
        return 0

    # -- kernels ------------------------------------------------------------------------------

    def _c_xrtPLKernelOpenExclusive(self, device, uuid, name):
        return self._open_kernel(device, uuid, name, exclusive=True)

    def _c_xrtPLKernelOpen(self, device, uuid, name):
        return self._open_kernel(device, uuid, name, exclusive=False)

    def _open_kernel(self, device, uuid, name, exclusive: bool):
        target = self._get(device, _Device)
        if target is None:
            return self._no_handle(None)
        name = name.decode() if isinstance(name, bytes) else str(name)
        if not re.fullmatch(r"[A-Za-z0-9_:{},]+", name):
            raise StandInLimitation(f"{name!r}: the stand-in matches names of letters, digits, "
                                    "_ : { } and , only (XRT takes them as a regular expression)")
        image = target.image
        given = ctypes.string_at(uuid, 16)
        # a null UUID names the loaded xclbin (device.cpp: ``if (xclbin_id && ...)``)
        if image is None or given not in (image.uuid, bytes(16)):
            return self._error(errno.EINVAL, "xclbin id mismatch", None)
        kernel = name.split(":", 1)[0]
        if kernel not in image.kernels:
            return self._error(errno.EINVAL, f"No such kernel '{kernel}'", None)
        pattern = re.compile(unit_name_pattern(name))
        units = [unit for unit in image.units
                 if unit.kernel.name == kernel and pattern.fullmatch(unit.ip_name)]
        if not units:
            return self._failed(f"No compute units matching '{name}'", None)
        for unit in units:
            if unit.ip_name in self.held_elsewhere:
                return self._system_error(errno.EBUSY, "failed to open ip context", None)
            open_here = target.contexts.get(unit.ip_name)
            if open_here is not None and open_here.exclusive != exclusive:
                # XRT 2.12-2.13 refuse it ("Conflicting access mode"), 2.14 on decide by their
                # hardware contexts: not modelled
                raise StandInLimitation(f"{unit.ip_name}: opened both shared and exclusively in "
                                        "one process")
        contexts = [target.contexts.setdefault(unit.ip_name, _Context(target, unit, exclusive))
                    for unit in units]
        return self._new(_Kernel(contexts))

    def _c_xrtKernelClose(self, kernel):
        return self._close(kernel, _Kernel)

    def _c_xrtKernelArgGroupId(self, kernel, argno):
        target = self._get(kernel, _Kernel)
        if target is None:
            return self._no_handle(-1)
        # the default connection of each argument of the first unit (ip_context::arg_memidx):
        # a vector up to the last connected argument, -1 for a scalar within it
        unit = target.contexts[0].unit
        connected = [arg["id"] for arg in unit.kernel.args if unit.kernel.bundle(arg["id"])]
        size = max(connected) + 1 if connected else 0
        if not 0 <= argno < size:
            return self._failed(_out_of_range(argno, size), -1)
        bundle = unit.kernel.bundle(argno)
        return -1 if bundle is None else target.contexts[0].device.image.mems.index(
            unit.banks[bundle])

    def _register(self, kernel, offset, what: str):
        """The context a register access goes to, or the failure (xrt_kernel.cpp,
        ``get_cuidx_or_error``; the card's shim, ``xclRegRW``)."""
        target = self._get(kernel, _Kernel)
        if target is None:
            return None, self._no_handle(-1)
        if len(target.contexts) != 1:
            return None, self._failed("Cannot read or write kernel with multiple compute units",
                                      -1)
        context = target.contexts[0]
        if not context.exclusive and not self.rw_shared:
            return None, self._failed("Cannot read or write kernel with shared access", -1)
        if offset + 4 > context.unit.kernel.control_range:
            return None, self._failed("Cannot read or write outside kernel register space", -1)
        if offset % 4:
            self._say(f"xclRegRW: invalid CU offset: {offset}")
            index = context.device.index_of(context.unit)
            return None, self._system_error(errno.EINVAL, f"failed to {what} ip({index})", -1)
        return context, 0

    def _c_xrtKernelReadRegister(self, kernel, offset, datap):
        context, failure = self._register(kernel, offset, "read")
        if context is None:
            return failure
        value = context.simulation.read_register(offset)
        ctypes.memmove(datap, value.to_bytes(4, "little"), 4)
        return 0

    def _c_xrtKernelWriteRegister(self, kernel, offset, data):
        context, failure = self._register(kernel, offset, "write")
        if context is None:
            return failure
        context.simulation.write_register(offset, data & 0xFFFF_FFFF)
        self.register_writes.append((context.unit.name, offset, data & 0xFFFF_FFFF))
        return 0

    # -- buffers ------------------------------------------------------------------------------

    def _c_xrtBOAlloc(self, device, size, flags, group):
        target = self._get(device, _Device)
        if target is None:
            return self._no_handle(None)
        if flags != 0 or size <= 0:
            raise StandInLimitation(f"xrtBOAlloc(size={size}, flags={flags:#x}): the stand-in "
                                    "models normal buffers (XRT_BO_FLAGS_NONE) of 1 byte or more")
        bank = target.banks.get(group)
        offset = bank.allocate(size) if bank is not None else None
        if offset is None:
            # a bank that is not there or is full: the card's driver refuses, XRT's shim
            # throws std::bad_alloc (ishim.h, alloc_bo)
            return self._failed("std::bad_alloc", None)
        return self._new(_Buffer(target, bank, offset, size))

    def _c_xrtBOFree(self, buffer):
        target = self._get(buffer, _Buffer)
        if target is None:
            return self._no_handle(-1)
        if any(isinstance(run, _Run) and run.state == SUBMITTED
               and target.address in run.values.values() for run in self._handles.values()):
            # XRT lets it happen; on a card the unit may then write into reused memory
            self.freed_while_running.append(target.address)
        self._handles.pop(buffer)
        target.free()
        return 0

    def _c_xrtBOAddress(self, buffer):
        target = self._get(buffer, _Buffer)
        return target.address if target else self._no_handle(0xFFFF_FFFF_FFFF_FFFF)

    def _c_xrtBOWrite(self, buffer, src, size, seek):
        return self._copy(buffer, "write", src, size, seek)

    def _c_xrtBORead(self, buffer, dst, size, skip):
        return self._copy(buffer, "read", dst, size, skip)

    def _copy(self, buffer, direction: str, pointer, size: int, offset: int) -> int:
        """xrtBOWrite (``pointer`` -> the buffer's host memory at ``offset``) or xrtBORead (the
        other way), after XRT's checks of the handle and the range."""
        target = self._get(buffer, _Buffer)
        if target is None:
            return self._no_handle(-1)
        if size + offset > target.size:
            return self._error(errno.EINVAL, f"attempting to {direction} past buffer size", -1)
        if direction == "write":
            target.host[offset:offset + size] = ctypes.string_at(pointer, size)
        else:
            ctypes.memmove(pointer, bytes(target.host[offset:offset + size]), size)
        return 0

    def _c_xrtBOSync(self, buffer, direction, size, offset):
        target = self._get(buffer, _Buffer)
        if target is None:
            return self._no_handle(-1)
        if direction not in (0, 1):
            raise StandInLimitation(f"xrtBOSync direction {direction}: the stand-in models "
                                    "XCL_BO_SYNC_BO_TO_DEVICE (0) and _FROM_DEVICE (1)")
        if size + offset > target.size:
            # the card's driver refuses (xocl_bo.c, "request is out of range"), the shim throws
            return self._system_error(errno.EINVAL, "unable to sync BO", -1)
        memory, start = target.bank.memory, target.offset + offset
        if direction == 0:      # XCL_BO_SYNC_BO_TO_DEVICE
            memory[start:start + size] = bytes(target.host[offset:offset + size])
        else:
            target.host[offset:offset + size] = memory[start:start + size]
        return 0

    # -- runs ---------------------------------------------------------------------------------

    def _c_xrtRunOpen(self, kernel):
        target = self._get(kernel, _Kernel)
        return self._new(_Run(target)) if target else self._no_handle(None)

    def _c_xrtRunSetArg(self, run, index, *value):
        target = self._get(run, _Run)
        if target is None:
            return self._no_handle(-1)
        if len(value) != 1:
            raise StandInLimitation("xrtRunSetArg: the stand-in takes one value after the index")
        args, value = target.kernel.kernel.args, value[0]
        if not 0 <= index < len(args):
            return self._failed(_out_of_range(index, len(args)), -1)
        described = args[index]
        if described["qualifier"] == 1:
            # va_arg(args, xrtBufferHandle), then XRT looks the handle up: only a pointer-sized
            # handle arrives whole
            number = value.value if isinstance(value, ctypes._SimpleCData) else value
            buffer = self._get(number, _Buffer) if isinstance(value, ctypes.c_void_p) else None
            if buffer is None:
                return self._no_handle(-1)
            target.values[index] = buffer.address     # XRT keeps the address, not the buffer
        else:
            if described["size"] != 4 or isinstance(value, ctypes.c_void_p):
                raise StandInLimitation(f"xrtRunSetArg({index}): the stand-in takes a 4-byte "
                                        "scalar as an integer")
            number = value.value if isinstance(value, ctypes._SimpleCData) else value
            target.values[index] = int(number) & 0xFFFF_FFFF
        return 0

    def _c_xrtRunStart(self, run):
        target = self._get(run, _Run)
        if target is None:
            return self._no_handle(-1)
        if target.state == SUBMITTED:
            return self._failed("bad command state, can't launch", -1)
        if len(target.kernel.contexts) != 1:
            raise StandInLimitation("xrtRunStart: the stand-in runs kernel handles of one "
                                    "compute unit")
        context = target.kernel.contexts[0]
        words = []
        for index, described in enumerate(target.kernel.kernel.args):
            value = target.values.get(index, 0)
            for word in range(described["size"] // 4):
                words.append((described["offset"] + 4 * word,
                              (value >> (32 * word)) & 0xFFFF_FFFF))
        context.simulation.start(words)
        target.state = SUBMITTED
        self.started[context.unit.name] += 1
        return 0

    def _c_xrtRunWaitFor(self, run, timeout_ms):
        target = self._get(run, _Run)
        if target is None:
            return self._no_handle(ABORT)
        if target.state != SUBMITTED:
            return target.state
        slow = os.environ.get(SLOW_WAIT_ENV)
        if slow:    # a unit that takes long: the wait lasts at least this (wall-clock) time
            time.sleep(float(slow))
        context = target.kernel.contexts[0]
        while True:
            budget = timeout_ms * (KERNEL_CLOCK_HZ // 1000) if timeout_ms else _WAIT_STEP_CYCLES
            finished, _, errors = context.simulation.wait(budget)
            if finished or timeout_ms:
                break
        if not finished:
            return TIMEOUT
        self.bank_errors.extend((context.unit.name, error) for error in errors)
        target.state = COMPLETED
        return target.state

    def _c_xrtRunState(self, run):
        target = self._get(run, _Run)
        return target.state if target else self._no_handle(ABORT)

    def _c_xrtRunClose(self, run):
        return self._close(run, _Run)

    def release(self):
        """End every simulation and remove the memory banks (the tests' teardown)."""
        self._device.release()


_instance: XrtStandIn | None = None


def stand_in() -> XrtStandIn:
    """The process's stand-in library (one device, as one card)."""
    global _instance
    if _instance is None:
        _instance = XrtStandIn()
    return _instance


class _Simulation(ServedSimulation):
    """The kernel's Verilog under cocotb (sim/tb_xrt.py) in a simulator thread, driven over a
    Unix socket (sim.served): ``start`` writes the argument registers and ap_start, ``wait`` lets
    it run."""

    def __init__(self, unit: Unit, owner: _Device):
        image = unit.kernel
        self.name = unit.name
        banks = [{"tag": bank.tag, "base": bank.base, "size": BANK_BYTES, "path": str(bank.path)}
                 for bank in owner.banks.values()]
        super().__init__(f"kernel {unit.name}", owner.directory / f"{unit.name}-{id(self):x}.sock",
                         image.verilog.read_text(), "sim.tb_xrt", image.name,
                         {"banks": banks, "ports": unit.banks,
                          "kernel_xml": str(image.kernel_xml)})
        with self._lock:
            self._expect("ready")

    def start(self, words: list):
        self.exchange(("start", words), "started")

    def read_register(self, offset: int) -> int:
        return self.exchange(("read", int(offset)), "value")[1]

    def write_register(self, offset: int, value: int):
        self.exchange(("write", int(offset), int(value)), "written")

    def wait(self, budget_cycles: int):
        """(finished, cycles since start, bank errors)."""
        _, finished, cycles, errors = self.exchange(("wait", int(budget_cycles)), "waited")
        return finished, cycles, errors
