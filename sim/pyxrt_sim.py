"""A stand-in for XRT's Python binding ``pyxrt`` that runs the generated Verilog under cocotb.

With ``KMER_SKETCH_PYXRT=sim``, :class:`host.device.XrtDevice` imports this module instead of
``pyxrt``, so the card driver's own code (argument order, 64-bit pointers, memory banks, sync
directions) runs without a card::

    python -m hw.build --kernels jacc_sketch -P jacc_sketch.lanes=2 ... -o build/small
    KMER_SKETCH_PYXRT=sim python -m host sketch a.fa b.fa --backend xrt --xclbin build/small

The classes and calls are those of XRT's ``src/python/pybind11`` (pyxrt.cpp, pyxrt.pyi); what
the card driver and the tests need of them is modelled, the rest is absent:

* :class:`device` ``(index)``: one device, index 0; ``load_xclbin(xclbin or path)`` returns the
  :class:`uuid`; ``get_xclbin_uuid()``.
* :class:`xclbin` ``(path)``: a ``python -m hw.build`` output directory (or one kernel's
  directory, ``DIR/kernels/<name>``) stands for the binary: each kernel's ``kernel.xml`` (argument
  ids, register offsets and sizes, the m_axi port of each pointer) and its Verilog, and the memory
  bank of every m_axi port from the link plan in ``DIR/<board>/build.json`` (without one, the
  ports take the banks DDR[0..3] in turn, as v++ would be told by ``hw.build``).
  ``get_kernels()`` (``get_name``, ``get_num_args``), ``get_mems()`` and ``get_uuid()``.
* Device memory: one bank per memory tag at a 64-bit base address above 4 GiB
  (``BANK_BASE + index * BANK_STRIDE``, as the DDR banks of an Alveo card), each a sparse file
  that the simulations map too. A 32-bit truncated pointer therefore reaches no bank.
* :class:`bo` ``(device, size, flags, group)``: a host buffer and a device buffer in bank
  ``group``. ``write``/``read``/``map`` act on the host buffer only, ``sync(XCL_BO_SYNC_BO_TO_DEVICE
  | XCL_BO_SYNC_BO_FROM_DEVICE[, size, offset])`` copies between the two as a card's DMA does, so
  a forgotten sync reads stale data here as it would on a card; ``address()`` is the device
  address the kernel's m_axi master is given.
* :class:`kernel` ``(device, uuid, name[, mode])``: starts the kernel's simulation (Verilator
  build cached by Verilog hash, :func:`sim.runner.run_cocotb`; the cocotb side is
  :mod:`sim.tb_pyxrt`, every m_axi port on an AXI memory model of its bank); ``group_id(i)`` is the
  memory index of argument ``i``'s port. ``kernel(*args)`` starts a run as pyxrt's ``__call__``
  does: an argument that fits neither a bo nor a C ``int`` is skipped without a word (pyxrt.cpp
  catches the cast errors), so XrtDevice sets arguments with :meth:`run.set_arg`, which raises.
* :class:`run` ``(kernel)``: ``set_arg(i, bo | int)`` (TypeError for any other type or an int
  outside C ``int``, RuntimeError for an index out of range or a bo given to a scalar and the
  reverse), ``start()`` (writes every argument register from kernel.xml's offsets, unset ones as
  0, then ap_start), ``wait([timeout_ms])`` and ``state()``.

Simulated time: the kernel clock is 250 MHz and the simulation advances only inside ``wait``:
``wait(timeout_ms)`` gives the kernel ``timeout_ms * 250 000`` cycles and returns
``ERT_CMD_STATE_TIMEOUT`` when it has not finished (a later ``wait`` continues); ``wait()`` without
a timeout gives it :data:`DEFAULT_WAIT_CYCLES`, after which it also returns
``ERT_CMD_STATE_TIMEOUT`` (a card would wait forever). Between ``start`` and completion ``state()``
is ``ERT_CMD_STATE_SUBMITTED``.

One deliberate difference: an m_axi access outside the bank its port is connected to is answered
with an AXI error (SLVERR; a card's interconnect answers DECERR) and the run ends in
``ERT_CMD_STATE_ERROR``, with the access in ``run.errors``, so that a wrong bank or a mangled
pointer cannot pass a test unnoticed. Errors are ``RuntimeError`` (XRT's exceptions arrive as such
through pybind11) and ``TypeError`` for incompatible arguments, as pybind11 raises them.
"""

import atexit
import enum
import hashlib
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

import numpy as np

__all__ = ["XCL_BO_FLAGS_NONE", "xclBOSyncDirection", "ert_cmd_state", "uuid", "device", "xclbin",
           "kernel", "run", "bo", "enumerate_devices", "BANK_BASE", "BANK_STRIDE", "BANK_BYTES",
           "KERNEL_CLOCK_HZ", "DEFAULT_WAIT_CYCLES"]

XCL_BO_FLAGS_NONE = 0
#: device address of memory index 0, and the distance between banks (as on an Alveo U250)
BANK_BASE = 0x40_0000_0000
BANK_STRIDE = 0x10_0000_0000
#: size of each simulated bank (a sparse file: only what is written takes space)
BANK_BYTES = 1 << 30
KERNEL_CLOCK_HZ = 250_000_000
#: cycles ``run.wait()`` without a timeout gives a kernel before it returns ERT_CMD_STATE_TIMEOUT
DEFAULT_WAIT_CYCLES = 50_000_000
_PAGE = 4096
_C_INT = (-(1 << 31), (1 << 31) - 1)


class xclBOSyncDirection(enum.IntEnum):
    """DMA flags used with DMA API"""
    XCL_BO_SYNC_BO_TO_DEVICE = 0
    XCL_BO_SYNC_BO_FROM_DEVICE = 1
    XCL_BO_SYNC_BO_GMIO_TO_AIE = 2
    XCL_BO_SYNC_BO_AIE_TO_GMIO = 3


class ert_cmd_state(enum.IntEnum):
    """Kernel execution status (the values of XRT's ert.h)"""
    ERT_CMD_STATE_NEW = 1
    ERT_CMD_STATE_QUEUED = 2
    ERT_CMD_STATE_COMPLETED = 4
    ERT_CMD_STATE_ERROR = 5
    ERT_CMD_STATE_ABORT = 6
    ERT_CMD_STATE_SUBMITTED = 7
    ERT_CMD_STATE_TIMEOUT = 8
    ERT_CMD_STATE_NORESPONSE = 9
    ERT_CMD_STATE_SKERROR = 10
    ERT_CMD_STATE_SKCRASHED = 11


def _incompatible(function: str, signatures: list[str], args: tuple) -> TypeError:
    """pybind11's message for arguments that match no overload."""
    lines = [f"{function}(): incompatible function arguments. The following argument types are "
             "supported:"]
    lines += [f"    {index}. {signature}" for index, signature in enumerate(signatures, 1)]
    lines.append("Invoked with: " + ", ".join(repr(a) for a in args))
    return TypeError("\n".join(lines))


def _is_int(value) -> bool:
    """What pybind11's C ``int`` caster accepts: an integer (or ``__index__``) in range."""
    if isinstance(value, (bool, float)) or not hasattr(value, "__index__"):
        return False
    return _C_INT[0] <= value.__index__() <= _C_INT[1]


def enumerate_devices() -> int:
    return 1


class uuid:
    """XRT UUID object to identify a compiled xclbin binary"""

    def __init__(self, text: str):
        self._text = str(text)

    def to_string(self) -> str:
        return self._text

    def __eq__(self, other):
        return isinstance(other, uuid) and other._text == self._text

    def __hash__(self):
        return hash(self._text)

    def __repr__(self):
        return f"<pyxrt_sim.uuid {self._text}>"


# -- the binary: a hw.build output directory ------------------------------------------------

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


class _Image:
    """A hw.build output directory as a binary: its kernels and the banks they are linked to."""

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
        self._assign_banks(path if directories != [path] else path.parent.parent)
        tags = sorted({tag for k in self.kernels.values() for tag in k.banks.values()},
                      key=_tag_order)
        self.mems = {tag: index for index, tag in enumerate(tags)}
        digest = hashlib.sha256()
        for name in sorted(self.kernels):
            image = self.kernels[name]
            digest.update((image.directory / "kernel.xml").read_bytes())
            digest.update(hashlib.sha256(image.verilog.read_bytes()).digest())
            digest.update(json.dumps(image.banks, sort_keys=True).encode())
        hexa = digest.hexdigest()[:32]
        self.uuid = uuid(f"{hexa[:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:]}")

    def _assign_banks(self, root: pathlib.Path):
        """Banks from the first board's link plan (build.json), else DDR[0..3] in turn."""
        linked = {}
        for plan in sorted(root.glob("*/build.json")):
            try:
                xclbins = json.loads(plan.read_text()).get("xclbins", {})
            except (OSError, ValueError):
                continue
            for entry in xclbins.values():
                for name, connection in entry.get("connectivity", {}).items():
                    if connection.get("banks"):
                        linked.setdefault(name, connection["banks"][0])
            if linked:
                break
        turn = 0
        for name, image in self.kernels.items():
            for bundle in image.ports:
                tag = linked.get(name, {}).get(bundle)
                if tag is None:
                    tag, turn = f"DDR[{turn % 4}]", turn + 1
                image.banks[bundle] = tag


class xclbin:
    """Represents an xclbin and provides APIs to access meta data"""

    class xclbinkernel:
        """Represents a kernel in an xclbin"""

        def __init__(self, image=None):
            self._image = image

        def get_name(self) -> str:
            return self._image.name if self._image else ""

        def get_num_args(self) -> int:
            return len(self._image.args) if self._image else 0

    class xclbinmem:
        """Represents a physical device memory bank"""

        def __init__(self, tag="", index=0):
            self._tag, self._index = tag, index

        def get_tag(self) -> str:
            return self._tag

        def get_base_address(self) -> int:
            return BANK_BASE + self._index * BANK_STRIDE

        def get_size_kb(self) -> int:
            return BANK_BYTES // 1024

        def get_used(self) -> bool:
            return True

        def get_index(self) -> int:
            return self._index

    def __init__(self, *args):
        if len(args) != 1 or not isinstance(args[0], (str, os.PathLike)):
            raise _incompatible("__init__", ["(self: pyxrt.xclbin, arg0: str) -> None"], args)
        self._image = _Image(pathlib.Path(args[0]))

    def get_kernels(self) -> list:
        return [xclbin.xclbinkernel(image) for image in self._image.kernels.values()]

    def get_mems(self) -> list:
        return [xclbin.xclbinmem(tag, index) for tag, index in self._image.mems.items()]

    def get_uuid(self) -> uuid:
        return self._image.uuid

    def get_xsa_name(self) -> str:
        return "kmer-sketch pyxrt stand-in"


# -- device memory ----------------------------------------------------------------------------

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
        self._used.pop(offset, None)

    def close(self):
        self.memory.close()


class device:
    """Abstraction of an acceleration device"""

    def __init__(self, *args):
        if len(args) > 1 or (args and not (isinstance(args[0], str) or _is_int(args[0]))):
            raise _incompatible("__init__", ["(self: pyxrt.device) -> None",
                                             "(self: pyxrt.device, arg0: int) -> None",
                                             "(self: pyxrt.device, arg0: str) -> None"], args)
        if args and args[0] not in (0, "0000:00:00.0"):
            raise RuntimeError(f"Could not open device with index '{args[0]}' (the stand-in "
                               "models one device, index 0)")
        self._image = None
        self._banks: dict[int, _Bank] = {}
        self._directory = None
        self._simulations = weakref.WeakSet()

    def load_xclbin(self, *args) -> uuid:
        if len(args) != 1 or not isinstance(args[0], (str, os.PathLike, xclbin)):
            raise _incompatible("load_xclbin", [
                "(self: pyxrt.device, arg0: str) -> pyxrt.uuid",
                "(self: pyxrt.device, arg0: pyxrt.xclbin) -> pyxrt.uuid"], args)
        image = args[0]._image if isinstance(args[0], xclbin) else _Image(pathlib.Path(args[0]))
        self._release()
        self._image = image
        self._directory = pathlib.Path(tempfile.mkdtemp(prefix="pyxrt-sim-"))
        self._banks = {index: _Bank(self._directory, tag, index)
                       for tag, index in image.mems.items()}
        weakref.finalize(self, _remove_banks, self._banks, self._directory)
        return image.uuid

    def get_xclbin_uuid(self) -> uuid:
        return self._image.uuid if self._image else uuid("00000000-0000-0000-0000-000000000000")

    def _release(self):
        for simulation in list(self._simulations):
            simulation.close()
        if self._directory is not None:
            _remove_banks(self._banks, self._directory)

    def _bank_at(self, address: int, size: int):
        for bank in self._banks.values():
            if bank.base <= address and address + size <= bank.base + BANK_BYTES:
                return bank
        return None


def _remove_banks(banks: dict, directory: pathlib.Path):
    for bank in banks.values():
        if not bank.memory.closed:
            bank.close()
    shutil.rmtree(directory, ignore_errors=True)


class bo:
    """Represents a buffer object"""

    class flags(enum.IntEnum):
        """Buffer object creation flags"""
        normal = 0
        cacheable = 1 << 24
        svm = 1 << 27
        device_only = 1 << 28
        host_only = 1 << 29
        p2p = 1 << 30

    normal, cacheable, svm = flags.normal, flags.cacheable, flags.svm
    device_only, host_only, p2p = flags.device_only, flags.host_only, flags.p2p

    def __init__(self, *args):
        if not (len(args) == 4 and isinstance(args[0], device) and _is_int(args[1])
                and isinstance(args[2], bo.flags) and _is_int(args[3])):
            raise _incompatible("__init__", [
                "(self: pyxrt.bo, arg0: pyxrt.device, arg1: int, arg2: pyxrt.bo.flags, "
                "arg3: int) -> None"], args)
        owner, size, flags, group = args
        if flags not in (bo.normal, bo.cacheable, bo.device_only):
            raise RuntimeError(f"bo flags {flags.name}: not modelled by the pyxrt stand-in "
                               "(normal, cacheable and device_only are)")
        if size <= 0:
            raise RuntimeError(f"Invalid buffer size {size}")
        if owner._image is None:
            raise RuntimeError("no xclbin loaded on the device")
        if group not in owner._banks:
            raise RuntimeError(f"memory group {group} is not a memory bank of the loaded xclbin "
                               f"(its banks: {sorted(owner._banks)})")
        self._device, self._size, self._flags = owner, int(size), flags
        self._bank = owner._banks[group]
        self._offset = self._bank.allocate(self._size)
        self._host = None if flags == bo.device_only else bytearray(self._size)
        weakref.finalize(self, self._bank.free, self._offset)

    def size(self) -> int:
        return self._size

    def address(self) -> int:
        return self._bank.base + self._offset

    def _host_buffer(self, what: str) -> bytearray:
        if self._host is None:
            raise RuntimeError(f"{what}: the buffer is device_only, it has no host memory")
        return self._host

    def _check_range(self, what: str, size: int, offset: int):
        if size < 0 or offset < 0 or offset + size > self._size:
            raise RuntimeError(f"{what}: {size} bytes at offset {offset} are outside the "
                               f"{self._size}-byte buffer")

    def write(self, *args):
        if len(args) != 2 or not _is_int(args[1]):
            raise _incompatible("write", ["(self: pyxrt.bo, arg0: buffer, arg1: int) -> None"],
                                args)
        try:
            data = memoryview(args[0]).cast("B")
        except TypeError:
            raise _incompatible("write", ["(self: pyxrt.bo, arg0: buffer, arg1: int) -> None"],
                                args) from None
        self._check_range("write", len(data), args[1])
        self._host_buffer("write")[args[1]:args[1] + len(data)] = data

    def read(self, *args) -> np.ndarray:
        if len(args) != 2 or not all(_is_int(a) for a in args):
            raise _incompatible("read", ["(self: pyxrt.bo, arg0: int, arg1: int) -> numpy.ndarray"],
                                args)
        size, skip = args
        self._check_range("read", size, skip)
        return np.frombuffer(bytes(self._host_buffer("read")[skip:skip + size]), dtype=np.int8)

    def map(self) -> memoryview:
        return memoryview(self._host_buffer("map"))

    def sync(self, *args):
        signatures = ["(self: pyxrt.bo, arg0: pyxrt.xclBOSyncDirection, arg1: int, arg2: int) "
                      "-> None", "(self: pyxrt.bo, arg0: pyxrt.xclBOSyncDirection) -> None"]
        if len(args) not in (1, 3) or not isinstance(args[0], xclBOSyncDirection) \
                or not all(_is_int(a) for a in args[1:]):
            raise _incompatible("sync", signatures, args)
        direction = args[0]
        size, offset = (args[1], args[2]) if len(args) == 3 else (self._size, 0)
        self._check_range("sync", size, offset)
        host = self._host_buffer("sync")
        start = self._offset + offset
        memory = self._bank.memory
        if direction == xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE:
            memory[start:start + size] = bytes(host[offset:offset + size])
        elif direction == xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE:
            host[offset:offset + size] = memory[start:start + size]
        else:
            raise RuntimeError(f"sync {direction.name}: no AI engine in the stand-in")


# -- kernels and runs -------------------------------------------------------------------------

class kernel:
    """Represents a set of instances matching a specified name"""

    class cu_access_mode(enum.IntEnum):
        """Compute unit access mode"""
        exclusive = 0
        shared = 1
        none = 2

    exclusive, shared, none = cu_access_mode.exclusive, cu_access_mode.shared, cu_access_mode.none

    def __init__(self, *args):
        if not (len(args) in (3, 4) and isinstance(args[0], device) and isinstance(args[1], uuid)
                and isinstance(args[2], str)
                and (len(args) == 3 or isinstance(args[3], kernel.cu_access_mode))):
            raise _incompatible("__init__", [
                "(self: pyxrt.kernel, arg0: pyxrt.device, arg1: pyxrt.uuid, arg2: str, "
                "arg3: pyxrt.kernel.cu_access_mode) -> None",
                "(self: pyxrt.kernel, arg0: pyxrt.device, arg1: pyxrt.uuid, arg2: str) -> None"],
                args)
        owner, wanted, name = args[:3]
        if owner._image is None or owner._image.uuid != wanted:
            raise RuntimeError(f"xclbin {wanted.to_string()} is not loaded on the device")
        base = name.split(":", 1)[0]
        image = owner._image.kernels.get(base)
        if image is None:
            raise RuntimeError(f"No compute units matching '{name}' (kernels in "
                               f"{owner._image.path}: {', '.join(owner._image.kernels)})")
        self._device, self._image = owner, image
        self._simulation = _Simulation(image, owner)
        owner._simulations.add(self._simulation)
        weakref.finalize(self, self._simulation.close)

    def group_id(self, index) -> int:
        if not _is_int(index):
            raise _incompatible("group_id", ["(self: pyxrt.kernel, arg0: int) -> int"], (index,))
        self._check_index(index)
        bundle = self._image.bundle(index)
        if bundle is None:
            raise RuntimeError(f"kernel {self._image.name}: argument {index} "
                               f"({self._image.args[index]['name']}) is a scalar, it has no "
                               "memory group")
        return self._device._image.mems[self._image.banks[bundle]]

    def _check_index(self, index: int):
        if not 0 <= index < len(self._image.args):
            raise RuntimeError(f"kernel {self._image.name}: bad argument index {index} (it has "
                               f"{len(self._image.args)} arguments)")

    def __call__(self, *args) -> "run":
        execution = run(self)
        for index, value in enumerate(args):
            # pyxrt.cpp tries each argument as a bo, then as an int, and ignores every failure
            try:
                execution.set_arg(index, value)
            except (TypeError, RuntimeError):
                pass
        execution.start()
        return execution


class run:
    """Represents one execution of a kernel"""

    def __init__(self, *args):
        if len(args) != 1 or not isinstance(args[0], kernel):
            raise _incompatible("__init__", ["(self: pyxrt.run, arg0: pyxrt.kernel) -> None"], args)
        self._kernel = args[0]
        self._values: dict[int, int] = {}
        self._buffers: dict[int, bo] = {}     # kept alive while the run may use them
        self._state = ert_cmd_state.ERT_CMD_STATE_NEW
        #: accesses outside a port's bank seen during the run (ERT_CMD_STATE_ERROR)
        self.errors: list[str] = []
        self.cycles: int | None = None

    def set_arg(self, *args):
        signatures = ["(self: pyxrt.run, arg0: int, arg1: pyxrt.bo) -> None",
                      "(self: pyxrt.run, arg0: int, arg1: int) -> None"]
        if len(args) != 2 or not _is_int(args[0]) or not (isinstance(args[1], bo)
                                                          or _is_int(args[1])):
            raise _incompatible("set_arg", signatures, args)
        index, value = args
        image = self._kernel._image
        self._kernel._check_index(index)
        described = image.args[index]
        if isinstance(value, bo):
            if described["qualifier"] != 1:
                raise RuntimeError(f"kernel {image.name}: argument {index} ({described['name']}) "
                                   "is a scalar, not a global memory buffer")
            self._buffers[index] = value
            self._values[index] = value.address()
        else:
            if described["qualifier"] == 1 or described["size"] != 4:
                raise RuntimeError(f"kernel {image.name}: argument {index} ({described['name']}) "
                                   f"takes {described['size']} bytes, not a 4-byte int")
            self._buffers.pop(index, None)
            self._values[index] = value.__index__() & 0xFFFF_FFFF

    def start(self):
        if self._state == ert_cmd_state.ERT_CMD_STATE_SUBMITTED:
            raise RuntimeError("run is already started")
        words = []
        for index, described in enumerate(self._kernel._image.args):
            value = self._values.get(index, 0)
            for word in range(described["size"] // 4):
                words.append((described["offset"] + 4 * word, (value >> (32 * word)) & 0xFFFF_FFFF))
        self.errors, self.cycles = [], None
        self._kernel._simulation.start(words)
        self._state = ert_cmd_state.ERT_CMD_STATE_SUBMITTED

    def wait(self, *args) -> ert_cmd_state:
        if len(args) > 1 or (args and not _is_int(args[0])):
            raise _incompatible("wait", ["(self: pyxrt.run) -> pyxrt.ert_cmd_state",
                                         "(self: pyxrt.run, arg0: int) -> pyxrt.ert_cmd_state"],
                                args)
        if self._state != ert_cmd_state.ERT_CMD_STATE_SUBMITTED:
            return self._state
        timeout_ms = args[0] if args else 0
        budget = timeout_ms * (KERNEL_CLOCK_HZ // 1000) if timeout_ms else DEFAULT_WAIT_CYCLES
        finished, cycles, errors = self._kernel._simulation.wait(budget)
        if not finished:
            return ert_cmd_state.ERT_CMD_STATE_TIMEOUT
        self.cycles, self.errors = cycles, errors
        self._state = (ert_cmd_state.ERT_CMD_STATE_ERROR if errors
                       else ert_cmd_state.ERT_CMD_STATE_COMPLETED)
        return self._state

    def state(self) -> ert_cmd_state:
        return self._state


# -- the simulation of one kernel -------------------------------------------------------------

class _Simulation:
    """The kernel's Verilog under cocotb (sim/tb_pyxrt.py) in a simulator process, driven over a
    Unix socket: ``start`` writes the argument registers and ap_start, ``wait`` lets it run."""

    def __init__(self, image: _KernelImage, owner: device):
        from sim.runner import run_cocotb
        self.name = image.name
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._connection = None
        address = owner._directory / f"{image.name}-{id(self):x}.sock"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(address))
        server.listen(1)
        server.settimeout(0.5)
        banks = [{"tag": bank.tag, "base": bank.base, "size": BANK_BYTES, "path": str(bank.path)}
                 for bank in owner._banks.values()]
        parameters = {"socket": str(address), "banks": banks, "ports": image.banks,
                      "kernel_xml": str(image.directory / "kernel.xml")}

        def simulate():
            try:
                run_cocotb(image.verilog.read_text(), "sim.tb_pyxrt", toplevel=image.name,
                           parameters=parameters)
            except BaseException as error:  # reported to the caller of start/wait
                self._failure = error

        self._thread = threading.Thread(target=simulate, name=f"pyxrt-sim-{image.name}",
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
