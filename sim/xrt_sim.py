"""A stand-in for XRT's C API (libxrt_coreutil) that runs the generated Verilog under cocotb.

With ``KMER_SKETCH_PYXRT=sim``, :class:`host.xrt.XrtDevice` takes :func:`stand_in` instead of the
real library, so the card driver's own code (argument order, 64-bit buffer handles and device
addresses, memory groups, sync directions, compute units, register access) runs without a card::

    python -m hw.build --kernels jacc_sketch -P jacc_sketch.lanes=2 ... -o build/small
    KMER_SKETCH_PYXRT=sim python -m host sketch a.fa b.fa --backend xrt --xclbin build/small

It is tied to the real library through host.xrt_binding.PROTOTYPES: it offers exactly those
functions (any other name raises AttributeError, as a symbol the driver never declared), each
checks its arguments with the same ctypes prototype the real call would use
(``argtypes[i].from_param``, so a wrong type fails here as it fails through ctypes), returns
what ctypes returns (a handle as an int or None for NULL, an int status or state), writes
out-parameters through the pointers given (``ctypes.byref``, arrays, ``create_string_buffer``)
and reports failures through errno (``ctypes.set_errno``, which the driver reads with
``ctypes.get_errno`` as after a real call). tests/test_xrt_api.py checks PROTOTYPES against
XRT's installed headers and the recorded headers of every release 2.12 .. 2.20.

The model:

* ``xrtDeviceOpen(0)`` is the one device; ``xrtDeviceLoadXclbinFile`` takes a ``python -m
  hw.build`` output directory (or one kernel's directory ``DIR/kernels/<name>``) as the binary:
  each kernel's ``kernel.xml`` (argument ids, register offsets and sizes, the m_axi port of each
  pointer) and its Verilog, and the compute units and memory banks from the link plan in
  ``DIR/build.json`` (or ``DIR/<board>/build.json``; ``nk``: units ``<kernel>_1`` ..; without
  a plan one unit whose ports take the banks DDR[0..3] in turn).
* Device memory: one bank per memory tag at a 64-bit base address above 4 GiB (``BANK_BASE +
  index * BANK_STRIDE``, as the DDR banks of an Alveo card), each a sparse file that the
  simulations map too, so a pointer cut to 32 bits reaches no bank. A buffer object has host
  memory and device memory: ``xrtBOWrite``/``xrtBORead`` act on the host copy, ``xrtBOSync``
  copies as a card's DMA does. ``xrtBOFree`` releases the device memory and overwrites it
  (:data:`POISON`): a kernel reading a freed input, or a result read after its buffer was freed,
  is garbage, as on a card where the memory is reused.
* ``xrtPLKernelOpenExclusive(device, uuid, "kernel:cu")`` opens one compute unit (its own
  simulation, sim/tb_xrt.py) and refuses a second exclusive open of it; register reads and
  writes need that exclusive handle, as XRT requires.
* ``xrtRunSetArg(run, index, value)`` (variadic, as in C): a global-memory argument takes a
  ``c_void_p`` buffer handle, of which, as XRT, the run keeps only the device address; a 4-byte
  scalar a ``c_uint32``/``c_int``. ``xrtRunStart`` writes every argument register from
  kernel.xml's offsets, then ap_start.
* Simulated time: the kernel clock is 250 MHz and the simulation advances only inside
  ``xrtRunWaitFor(run, timeout_ms)``, which gives the kernel ``timeout_ms * 250 000`` cycles and
  returns ERT_CMD_STATE_TIMEOUT when it has not finished (0: :data:`DEFAULT_WAIT_CYCLES`). The
  wait blocks in a socket read, which holds no GIL, as a ctypes call into the real library
  holds none: other Python threads run meanwhile.

One deliberate difference: an m_axi access outside the bank its port is connected to is answered
with an AXI error (SLVERR; a card's interconnect answers DECERR) and the run ends in
ERT_CMD_STATE_ERROR, so that a wrong bank or a mangled pointer cannot pass a test unnoticed.
"""

import atexit
import collections
import ctypes
import errno
import hashlib
import itertools
import json
import mmap
import os
import pathlib
import re
import shutil
import socket
import tempfile
import threading
import weakref
from multiprocessing.connection import Connection

__all__ = ["stand_in", "XrtStandIn", "BANK_BASE", "BANK_STRIDE", "BANK_BYTES", "KERNEL_CLOCK_HZ",
           "DEFAULT_WAIT_CYCLES", "POISON"]

#: device address of memory index 0, and the distance between banks (as on an Alveo U250)
BANK_BASE = 0x40_0000_0000
BANK_STRIDE = 0x10_0000_0000
#: size of each simulated bank (a sparse file: only what is written takes space)
BANK_BYTES = 1 << 30
KERNEL_CLOCK_HZ = 250_000_000
#: cycles ``xrtRunWaitFor(run, 0)`` gives a kernel before it returns ERT_CMD_STATE_TIMEOUT
DEFAULT_WAIT_CYCLES = 50_000_000
#: the byte freed device memory is overwritten with
POISON = 0xA5
_PAGE = 4096
#: xrt/ert.h enum ert_cmd_state
NEW, COMPLETED, ERROR, SUBMITTED, TIMEOUT = 1, 4, 5, 7, 8


class _Port:
    def __init__(self, name: str, data_width: int):
        self.name, self.data_width = name, data_width


class _KernelImage:
    """One kernel of the binary: kernel.xml, Verilog and the memory tag of every m_axi port."""

    def __init__(self, directory: pathlib.Path):
        from hw.vitis.kernel_xml import parse_kernel_xml
        try:
            described = parse_kernel_xml((directory / "kernel.xml").read_text())
        except Exception as error:  # an unreadable or foreign kernel.xml
            raise RuntimeError(f"{directory / 'kernel.xml'}: not a kernel description "
                               f"({type(error).__name__}: {error})") from None
        self.name = described["name"]
        self.directory = directory
        self.verilog = directory / f"{self.name}.v"
        if not self.verilog.is_file():
            raise RuntimeError(f"{directory}: kernel.xml names kernel {self.name}, but there is no "
                               f"{self.verilog.name} (generate it with python -m hw.build)")
        self.args = described["args"]
        if [a["id"] for a in self.args] != list(range(len(self.args))):
            raise RuntimeError(f"{directory / 'kernel.xml'}: argument ids are not "
                               f"0..{len(self.args) - 1}")
        self.ports = {name[len("m_axi_"):]: _Port(name, int(port["dataWidth"]))
                      for name, port in described["ports"].items() if name.startswith("m_axi_")}
        self.banks: dict[str, str] = {}

    def bundle(self, index: int) -> str | None:
        port = self.args[index]["port"]
        return port[len("m_axi_"):] if self.args[index]["qualifier"] == 1 else None


def _tag_order(tag: str):
    match = re.fullmatch(r"(.*)\[(\d+)\]", tag)
    return (match.group(1), int(match.group(2))) if match else (tag, -1)




class _Unit:
    """One compute unit: its kernel image and the bank of each of its m_axi ports."""

    def __init__(self, name: str, image: _KernelImage, banks: dict):
        self.name, self.image, self.banks = name, image, banks


class _Image:
    """A hw.build output directory as a binary: its kernels, their compute units and the banks
    each unit's ports are linked to."""

    def __init__(self, path: pathlib.Path):
        if not path.is_dir():
            raise RuntimeError("not a directory; the stand-in takes a python -m hw.build output "
                               "directory as its xclbin")
        directories = ([path] if (path / "kernel.xml").is_file()
                       else sorted(p.parent for p in path.glob("kernels/*/kernel.xml")))
        if not directories:
            raise RuntimeError("no kernel.xml in the directory or its kernels/*/; not a python "
                               "-m hw.build output directory")
        self.path = path
        self.kernels = {}
        for directory in directories:
            image = _KernelImage(directory)
            self.kernels[image.name] = image
        self.units: dict[str, _Unit] = {}
        self._assign_units(path if directories != [path] else path.parent.parent)
        tags = sorted({tag for unit in self.units.values() for tag in unit.banks.values()},
                      key=_tag_order)
        self.mems = {tag: index for index, tag in enumerate(tags)}
        digest = hashlib.sha256()
        for name in sorted(self.kernels):
            image = self.kernels[name]
            digest.update((image.directory / "kernel.xml").read_bytes())
            digest.update(hashlib.sha256(image.verilog.read_bytes()).digest())
        for name in sorted(self.units):
            digest.update(json.dumps([name, self.units[name].banks], sort_keys=True).encode())
        self.uuid = digest.digest()[:16]

    def _assign_units(self, root: pathlib.Path):
        """Units and banks from the link plan (``DIR/build.json`` of a one-board build, else the
        first board's ``DIR/<board>/build.json``), else one unit per kernel whose ports take
        DDR[0..3] in turn."""
        linked = {}
        for plan in [root / "build.json", *sorted(root.glob("*/build.json"))]:
            if not plan.is_file():
                continue
            try:
                xclbins = json.loads(plan.read_text()).get("xclbins", {})
            except (OSError, ValueError):
                continue
            for entry in xclbins.values():
                for name, connection in entry.get("connectivity", {}).items():
                    if connection.get("banks"):
                        linked.setdefault(name, connection["banks"])
            if linked:
                break
        turn = 0
        for name, image in self.kernels.items():
            for number, planned in enumerate(linked.get(name, [{}]), 1):
                banks = {}
                for bundle in image.ports:
                    tag = planned.get(bundle)
                    if tag is None:
                        tag, turn = f"DDR[{turn % 4}]", turn + 1
                    banks[bundle] = tag
                self.units[f"{name}:{name}_{number}"] = _Unit(f"{name}_{number}", image, banks)

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

    def allocate(self, size: int) -> int:
        size = -(-size // _PAGE) * _PAGE
        offset = 0
        for start in sorted(self._used):
            if start - offset >= size:
                break
            offset = max(offset, start + self._used[start])
        if offset + size > BANK_BYTES:
            raise RuntimeError(f"bad_alloc: no {size} bytes left in memory bank {self.tag}")
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
    """The one device: the loaded binary and its banks."""

    def __init__(self):
        self.image: _Image | None = None
        self.banks: dict[int, _Bank] = {}
        self.directory: pathlib.Path | None = None
        self.open_units: dict[str, "_Kernel"] = {}

    def load(self, image: _Image):
        self.release()
        self.image = image
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="xrt-sim-"))
        self.banks = {index: _Bank(self.directory, tag, index)
                      for tag, index in image.mems.items()}
        weakref.finalize(self, _remove_banks, self.banks, self.directory)

    def release(self):
        for kernel in list(self.open_units.values()):
            kernel.close()
        if self.directory is not None:
            _remove_banks(self.banks, self.directory)
            self.directory = None


class _Buffer:
    def __init__(self, device: _Device, size: int, group: int):
        self.device, self.size = device, size
        self.bank = device.banks[group]
        self.offset = self.bank.allocate(size)
        self.host = bytearray(size)

    @property
    def address(self) -> int:
        return self.bank.base + self.offset

    def free(self):
        self.bank.free(self.offset)
        self.host = None


class _Kernel:
    """A compute unit opened exclusively, and its simulation."""

    def __init__(self, device: _Device, key: str, unit: _Unit):
        self.device, self.key, self.unit = device, key, unit
        self.simulation = _Simulation(unit, device)
        device.open_units[key] = self

    def close(self):
        self.simulation.close()
        self.device.open_units.pop(self.key, None)


class _Run:
    def __init__(self, kernel: _Kernel):
        self.kernel = kernel
        self.values: dict[int, int] = {}
        self.state = NEW
        self.cycles: int | None = None
        self.errors: list[str] = []


def _fail(code: int, result=None):
    ctypes.set_errno(code)
    return result


class XrtStandIn:
    """The functions of host.xrt_binding.PROTOTYPES over a simulated device (see the module
    docstring).

    Handles are integers above 2^32 (a handle cut to 32 bits is unknown here); a handle of the
    wrong kind or one already freed or closed fails with EINVAL. ``started`` counts the runs
    started on each compute unit and ``register_writes`` lists every (unit, offset, value)
    written through xrtKernelWriteRegister, for the tests."""

    origin = "the XRT stand-in (sim/xrt_sim.py)"

    def __init__(self):
        from host.xrt_binding import PROTOTYPES
        self._prototypes = PROTOTYPES
        self._handles: dict[int, object] = {}
        self._numbers = itertools.count(0x7F00_0000_1000, 0x40)
        self._device = _Device()
        self.started: collections.Counter = collections.Counter()
        self.register_writes: list[tuple[str, int, int]] = []

    def __getattr__(self, name: str):
        # only the functions the driver declares exist; each checks its arguments as ctypes
        prototypes = self.__dict__.get("_prototypes", {})
        if name not in prototypes or not hasattr(type(self), "_c_" + name):
            raise AttributeError(f"{name}: not a function of the XRT C API the driver declares "
                                 "(host.xrt_binding.PROTOTYPES)")
        prototype, implementation = prototypes[name], getattr(self, "_c_" + name)

        def call(*args):
            fixed = len(prototype.argtypes)
            if len(args) < fixed or (len(args) > fixed and not prototype.variadic):
                raise TypeError(f"{name}: this function takes {fixed} arguments "
                                f"({len(args)} given)")
            for index, (argtype, value) in enumerate(zip(prototype.argtypes, args), 1):
                try:
                    argtype.from_param(value)
                except TypeError as error:
                    raise ctypes.ArgumentError(f"argument {index}: TypeError: {error}") from None
            for index, value in enumerate(args[fixed:], fixed + 1):
                if not isinstance(value, (int, ctypes._SimpleCData)):
                    raise ctypes.ArgumentError(f"argument {index}: TypeError: Don't know how to "
                                               f"convert parameter {index}")
            return implementation(*args)
        call.__name__ = name
        return call

    # -- handles ------------------------------------------------------------------------------

    def _new(self, thing) -> int:
        number = next(self._numbers)
        self._handles[number] = thing
        return number

    def _get(self, handle, kind):
        handle = handle.value if isinstance(handle, ctypes.c_void_p) else handle
        thing = self._handles.get(handle)
        return thing if isinstance(thing, kind) else None

    # -- device -------------------------------------------------------------------------------

    def _c_xrtDeviceOpen(self, index):
        return self._new(self._device) if index == 0 else _fail(errno.ENODEV)

    def _c_xrtDeviceClose(self, device):
        if self._get(device, _Device) is None:
            return _fail(errno.EINVAL, -1)
        self._handles.pop(device)
        return 0

    def _c_xrtDeviceLoadXclbinFile(self, device, path):
        target = self._get(device, _Device)
        if target is None:
            return _fail(errno.EINVAL, -1)
        try:
            image = _Image(pathlib.Path(os.fsdecode(path)))
        except RuntimeError as error:
            self.last_error = str(error)
            return _fail(errno.ENOENT if "not a directory" in str(error) else errno.EINVAL, -1)
        target.load(image)
        return 0

    def _c_xrtDeviceGetXclbinUUID(self, device, out):
        target = self._get(device, _Device)
        if target is None or target.image is None:
            return _fail(errno.EINVAL, -1)
        ctypes.memmove(out, target.image.uuid, 16)
        return 0

    # -- kernels ------------------------------------------------------------------------------

    def _c_xrtPLKernelOpenExclusive(self, device, uuid, name):
        target = self._get(device, _Device)
        if target is None or target.image is None:
            return _fail(errno.EINVAL)
        if ctypes.string_at(uuid, 16) != target.image.uuid:
            return _fail(errno.EINVAL)      # another xclbin than the one loaded
        key = name.decode() if isinstance(name, bytes) else str(name)
        unit = target.image.units.get(key)
        if unit is None:
            return _fail(errno.ENOENT)      # XRT: "No compute units matching"
        if key in target.open_units:
            return _fail(errno.EBUSY)       # already opened exclusively
        try:
            return self._new(_Kernel(target, key, unit))
        except RuntimeError:
            return _fail(errno.EIO)

    def _c_xrtKernelClose(self, kernel):
        target = self._get(kernel, _Kernel)
        if target is None:
            return _fail(errno.EINVAL, -1)
        self._handles.pop(kernel)
        target.close()
        return 0

    def _c_xrtKernelArgGroupId(self, kernel, argno):
        target = self._get(kernel, _Kernel)
        image = target.unit.image if target else None
        if image is None or not 0 <= argno < len(image.args):
            return _fail(errno.EINVAL, -1)
        bundle = image.bundle(argno)
        if bundle is None:
            return _fail(errno.EINVAL, -1)  # a scalar has no memory group
        return target.device.image.mems[target.unit.banks[bundle]]

    def _register(self, kernel, offset):
        target = self._get(kernel, _Kernel)
        if target is None or not 0 <= offset < 0x1000 or offset % 4:
            return None
        return target

    def _c_xrtKernelReadRegister(self, kernel, offset, datap):
        target = self._register(kernel, offset)
        if target is None:
            return _fail(errno.EINVAL, -1)
        value = target.simulation.read_register(offset)
        ctypes.memmove(datap, value.to_bytes(4, "little"), 4)
        return 0

    def _c_xrtKernelWriteRegister(self, kernel, offset, data):
        target = self._register(kernel, offset)
        if target is None:
            return _fail(errno.EINVAL, -1)
        target.simulation.write_register(offset, data & 0xFFFF_FFFF)
        self.register_writes.append((target.unit.name, offset, data & 0xFFFF_FFFF))
        return 0

    # -- buffers ------------------------------------------------------------------------------

    def _c_xrtBOAlloc(self, device, size, flags, group):
        target = self._get(device, _Device)
        if target is None or target.image is None or size <= 0 or flags != 0 \
                or group not in target.banks:
            return _fail(errno.EINVAL)
        try:
            return self._new(_Buffer(target, size, group))
        except RuntimeError:
            return _fail(errno.ENOMEM)

    def _c_xrtBOFree(self, buffer):
        target = self._get(buffer, _Buffer)
        if target is None:
            return _fail(errno.EINVAL, -1)
        self._handles.pop(buffer)
        target.free()
        return 0

    def _c_xrtBOAddress(self, buffer):
        target = self._get(buffer, _Buffer)
        return target.address if target else _fail(errno.EINVAL, 0xFFFF_FFFF_FFFF_FFFF)

    def _range(self, buffer, size, offset):
        target = self._get(buffer, _Buffer)
        if target is None or size < 0 or offset < 0 or offset + size > target.size:
            return None
        return target

    def _c_xrtBOWrite(self, buffer, src, size, seek):
        target = self._range(buffer, size, seek)
        if target is None:
            return _fail(errno.EINVAL, -1)
        target.host[seek:seek + size] = ctypes.string_at(src, size)
        return 0

    def _c_xrtBORead(self, buffer, dst, size, skip):
        target = self._range(buffer, size, skip)
        if target is None:
            return _fail(errno.EINVAL, -1)
        ctypes.memmove(dst, bytes(target.host[skip:skip + size]), size)
        return 0

    def _c_xrtBOSync(self, buffer, direction, size, offset):
        target = self._range(buffer, size, offset)
        if target is None or direction not in (0, 1):
            return _fail(errno.EINVAL, -1)
        memory, start = target.bank.memory, target.offset + offset
        if direction == 0:      # XCL_BO_SYNC_BO_TO_DEVICE
            memory[start:start + size] = bytes(target.host[offset:offset + size])
        else:
            target.host[offset:offset + size] = memory[start:start + size]
        return 0

    # -- runs ---------------------------------------------------------------------------------

    def _c_xrtRunOpen(self, kernel):
        target = self._get(kernel, _Kernel)
        return self._new(_Run(target)) if target else _fail(errno.EINVAL)

    def _c_xrtRunSetArg(self, run, index, *value):
        target = self._get(run, _Run)
        if target is None or len(value) != 1:
            return _fail(errno.EINVAL, -1)
        image, value = target.kernel.unit.image, value[0]
        if not 0 <= index < len(image.args):
            return _fail(errno.EINVAL, -1)
        described = image.args[index]
        if described["qualifier"] == 1:
            # va_arg(args, xrtBufferHandle): only a pointer-sized handle arrives whole
            buffer = self._get(value, _Buffer) if isinstance(value, ctypes.c_void_p) else None
            if buffer is None:
                return _fail(errno.EINVAL, -1)
            target.values[index] = buffer.address     # XRT keeps the address, not the buffer
        else:
            if described["size"] != 4 or isinstance(value, ctypes.c_void_p):
                return _fail(errno.EINVAL, -1)
            number = value.value if isinstance(value, ctypes._SimpleCData) else value
            target.values[index] = int(number) & 0xFFFF_FFFF
        return 0

    def _c_xrtRunStart(self, run):
        target = self._get(run, _Run)
        if target is None or target.state == SUBMITTED:
            return _fail(errno.EINVAL, -1)
        words = []
        for index, described in enumerate(target.kernel.unit.image.args):
            value = target.values.get(index, 0)
            for word in range(described["size"] // 4):
                words.append((described["offset"] + 4 * word,
                              (value >> (32 * word)) & 0xFFFF_FFFF))
        target.kernel.simulation.start(words)
        target.state, target.cycles, target.errors = SUBMITTED, None, []
        self.started[target.kernel.unit.name] += 1
        return 0

    def _c_xrtRunWaitFor(self, run, timeout_ms):
        target = self._get(run, _Run)
        if target is None:
            return _fail(errno.EINVAL, 6)   # ERT_CMD_STATE_ABORT, as XRT on an exception
        if target.state != SUBMITTED:
            return target.state
        budget = timeout_ms * (KERNEL_CLOCK_HZ // 1000) if timeout_ms else DEFAULT_WAIT_CYCLES
        finished, cycles, errors = target.kernel.simulation.wait(budget)
        if not finished:
            return TIMEOUT
        target.cycles, target.errors = cycles, errors
        target.state = ERROR if errors else COMPLETED
        return target.state

    def _c_xrtRunState(self, run):
        target = self._get(run, _Run)
        return target.state if target else _fail(errno.EINVAL, 6)

    def _c_xrtRunClose(self, run):
        if self._get(run, _Run) is None:
            return _fail(errno.EINVAL, -1)
        self._handles.pop(run)
        return 0


_instance: XrtStandIn | None = None


def stand_in() -> XrtStandIn:
    """The process's stand-in library (one device, as one card)."""
    global _instance
    if _instance is None:
        _instance = XrtStandIn()
    return _instance


class _Simulation:
    """The kernel's Verilog under cocotb (sim/tb_xrt.py) in a simulator process, driven over a
    Unix socket: ``start`` writes the argument registers and ap_start, ``wait`` lets it run."""

    def __init__(self, unit: "_Unit", owner: "_Device"):
        image = unit.image
        from sim.runner import run_cocotb
        self.name = unit.name
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._connection = None
        address = owner.directory / f"{unit.name}-{id(self):x}.sock"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(address))
        server.listen(1)
        server.settimeout(0.5)
        banks = [{"tag": bank.tag, "base": bank.base, "size": BANK_BYTES, "path": str(bank.path)}
                 for bank in owner.banks.values()]
        parameters = {"socket": str(address), "banks": banks, "ports": unit.banks,
                      "kernel_xml": str(image.directory / "kernel.xml")}

        def simulate():
            try:
                run_cocotb(image.verilog.read_text(), "sim.tb_xrt", toplevel=image.name,
                           parameters=parameters)
            except BaseException as error:  # reported to the caller of start/wait
                self._failure = error

        self._thread = threading.Thread(target=simulate, name=f"xrt-sim-{unit.name}",
                                        daemon=True)
        self._thread.start()
        try:
            while self._connection is None:
                try:
                    client, _ = server.accept()
                except socket.timeout:
                    if not self._thread.is_alive():
                        raise self._failed("did not start") from None
                    continue
                self._connection = Connection(client.detach())
        finally:
            server.close()
            address.unlink(missing_ok=True)
        self._expect("ready")
        _live.add(self)

    def _failed(self, what: str) -> RuntimeError:
        failure = self._failure
        if failure is not None and type(failure).__name__ == "CocotbFailure":
            return failure          # the CLI names the simulator log
        detail = str(failure).splitlines()[0] if failure else "the simulator exited"
        return RuntimeError(f"kernel {self.name}: the simulation {what} ({detail})")

    def _expect(self, kind: str):
        try:
            message = self._connection.recv()
        except (EOFError, OSError):
            self._thread.join(timeout=60)
            raise self._failed("ended") from None
        if message[0] != kind:
            raise RuntimeError(f"kernel {self.name}: the simulation answered {message!r}, "
                               f"expected {kind}")
        return message

    def start(self, words: list):
        with self._lock:
            self._connection.send(("start", words))
            self._expect("started")

    def read_register(self, offset: int) -> int:
        with self._lock:
            self._connection.send(("read", int(offset)))
            return self._expect("value")[1]

    def write_register(self, offset: int, value: int):
        with self._lock:
            self._connection.send(("write", int(offset), int(value)))
            self._expect("written")

    def wait(self, budget_cycles: int):
        """(finished, cycles since start, bank errors)."""
        with self._lock:
            self._connection.send(("wait", int(budget_cycles)))
            _, finished, cycles, errors = self._expect("waited")
            return finished, cycles, errors

    def close(self):
        with self._lock:
            if self._connection is not None:
                try:
                    self._connection.send(("close",))
                except OSError:
                    pass
                self._connection.close()
                self._connection = None
        self._thread.join(timeout=60)
        _live.discard(self)


_live: "weakref.WeakSet[_Simulation]" = weakref.WeakSet()


@atexit.register
def _close_all():
    for simulation in list(_live):
        simulation.close()
