"""XRT's C API (``libxrt_coreutil.so.2``) through ctypes: the functions the card driver calls,
their prototypes, loading the library, and why XRT cannot open a device.

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
stand-in (sim/xrt_sim.py) exposes exactly these functions with the same conventions (handles as
integers, out-parameters through ctypes pointers). The driver that uses them is host.xrt
(XrtDevice).

Why a call failed: XRT's C functions catch every exception, print its text as a console message
``[XRT] ERROR: <what>`` on standard error (src/runtime_src/core/common/message.cpp, the console
dispatch, preceded once per process by a banner: build version, PID, host, ...) and return NULL,
-1 or ERT_CMD_STATE_ABORT; they set errno only where the exception is an ``xrt_core::error``
(xrt_kernel.cpp, xrt_bo.cpp, xrt_device.cpp: ``catch (const xrt_core::error& ex) { ...
errno = ex.get_code(); }``), so errno after a failure may be anything a library call left there
earlier. XRT 2.12 .. 2.20 has no C function that returns the message (its xrt_error.h reports
the device's asynchronous errors only). :class:`XrtConsole` therefore takes standard error while a
C function runs and keeps XRT's error messages, which the driver quotes; it never reads errno.
"""

import ctypes
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_ubyte, c_uint, c_uint32, c_uint64, c_void_p

from .calls import DeviceError
from .clib import Prototype, bind_functions, loaded_path
from .interrupts import uninterrupted

__all__ = ["PROTOTYPES", "Prototype", "CApi", "LIBRARY", "ERT_CMD_STATE", "load_library",
           "xrt_ini_path", "xrt_settings", "message_route",
           "library_candidates", "device_problem", "XrtConsole", "xrt_messages"]

LIBRARY = "libxrt_coreutil.so.2"


#: ``xuid_t`` (``unsigned char[16]``) as a parameter: a pointer to its first byte
UUID = POINTER(c_ubyte)
#: The C functions the driver calls (xrt/xrt_device.h, xrt_kernel.h, xrt_bo.h), and one it must
#: not (xrtPLKernelOpen). Handles are ``void *``; enums (ert_cmd_state, xclBOSyncDirection) are
#: C ``int``.
PROTOTYPES = {
    "xrtDeviceOpen": Prototype(c_void_p, (c_uint,)),
    "xrtDeviceClose": Prototype(c_int, (c_void_p,)),
    "xrtDeviceLoadXclbinFile": Prototype(c_int, (c_void_p, c_char_p)),
    "xrtDeviceGetXclbinUUID": Prototype(c_int, (c_void_p, UUID)),
    "xrtPLKernelOpenExclusive": Prototype(c_void_p, (c_void_p, UUID, c_char_p)),
    # not called by the driver: a shared handle has no register access unless xrt.ini sets
    # Runtime.rw_shared (xrt_kernel.cpp, get_cuidx_or_error); declared so that the stand-in
    # holds that rule and a driver changed to open units shared fails there as on a card
    "xrtPLKernelOpen": Prototype(c_void_p, (c_void_p, UUID, c_char_p)),
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
NEW, COMPLETED, TIMEOUT = 1, 4, 8
#: xrt.h ``enum xclBOSyncDirection``
SYNC_TO_DEVICE, SYNC_FROM_DEVICE = 0, 1
#: xrt/xrt_bo.h: XRT_BO_FLAGS_NONE (a normal buffer: host and device memory)
BO_FLAGS_NONE = 0


class CApi:
    """The functions of :data:`PROTOTYPES` from a loaded library, their prototypes set; no other
    name of the library is reachable through it. Besides them, :meth:`xclbin_bytes`: the
    container XRT loads from an xclbin path, whose IP_LAYOUT the driver reads."""

    def __init__(self, library: ctypes.CDLL, origin: str):
        self.origin = origin
        self.description = f"{LIBRARY} (XRT C API) from {origin}"
        bind_functions(self, library, PROTOTYPES)

    @staticmethod
    def xclbin_bytes(path) -> bytes:
        """The file XRT reads for ``xrtDeviceLoadXclbinFile(path)``."""
        return pathlib.Path(path).read_bytes()


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


def load_library() -> CApi:
    errors = []
    for candidate in library_candidates():
        try:
            library = ctypes.CDLL(candidate, use_errno=True)
        except OSError as error:
            errors.append(str(error))
            continue
        return CApi(library, loaded_path(candidate))
    raise DeviceError(f"the xrt backend needs XRT ({LIBRARY} not found: install XRT and "
                      "'source /opt/xilinx/xrt/setup.sh', or Debian's libxrt1)")


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


# -- xrt.ini: where XRT's messages go, and the settings the stand-in follows -------------------

def xrt_ini_path() -> pathlib.Path | None:
    """The xrt.ini XRT reads (src/runtime_src/core/common/config_reader.cpp, ``get_ini_path``):
    $XRT_INI_PATH, else $SDACCEL_INI_PATH, if the file exists; else xrt.ini (or sdaccel.ini) in
    the directory of the executable (here Python's), else in the current directory."""
    for variable in ("XRT_INI_PATH", "SDACCEL_INI_PATH"):
        value = os.environ.get(variable)
        if value and os.path.exists(value):
            return pathlib.Path(value)
    try:
        directories = [pathlib.Path(os.path.realpath("/proc/self/exe")).parent,
                       pathlib.Path.cwd()]
    except OSError:
        directories = []
    for directory in directories:
        for name in ("xrt.ini", "sdaccel.ini"):
            if (directory / name).is_file():
                return directory / name
    return None


def xrt_settings() -> dict[str, str]:
    """``{"Section.key": value}`` of that xrt.ini, as boost's INI reader takes it (``[Section]``
    lines, ``key = value`` lines, ``;`` and ``#`` comment lines, spaces trimmed); {} without
    one, or for one that cannot be read."""
    path = xrt_ini_path()
    settings: dict[str, str] = {}
    if path is None:
        return settings
    section = ""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return settings
    for line in lines:
        line = line.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif "=" in line:
            key, _, value = line.partition("=")
            settings[f"{section}.{key.strip()}"] = value.strip()
    return settings


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def message_route(settings: dict[str, str] | None = None) -> str | None:
    """None when XRT prints its error messages on standard error, as by default; else where
    they go instead, for an error line: XRT's ``Runtime.runtime_log`` (default "console") picks
    the console, "syslog", a file, or nothing ("null", ""), and ``Runtime.verbosity`` (default
    4, warning) below 3 (error) drops them (config_reader.h, ``get_logging``/``get_verbosity``;
    message.cpp, ``make_dispatcher``/``send``)."""
    settings = xrt_settings() if settings is None else settings
    ini = xrt_ini_path()
    try:
        verbosity = int(settings.get("Runtime.verbosity", "4"))
    except ValueError:
        verbosity = 4   # XRT eats the parse error and keeps its default
    if verbosity < 3:
        return f"nowhere (Runtime.verbosity = {verbosity} in {ini} drops errors)"
    log = _unquoted(settings.get("Runtime.runtime_log", "console"))
    if log == "console":
        return None
    if log in ("", "null"):
        return f"nowhere (Runtime.runtime_log = {log or chr(34) * 2} in {ini})"
    if log == "syslog":
        return f"the system log (Runtime.runtime_log = syslog in {ini})"
    return f"{log} (Runtime.runtime_log in {ini})"


#: a console message of XRT (message.cpp: ``"[" << tag << "] " << severity << msg << std::endl``)
_MESSAGE = re.compile(rb"\[([^\]\n]+)\] (EMERGENCY|ALERT|CRITICAL|ERROR|WARNING|NOTICE|INFO|DEBUG): "
                      rb"([^\n]*)(?:\n|$)")
_FAILURES = {b"EMERGENCY", b"ALERT", b"CRITICAL", b"ERROR"}
#: the banner the console dispatch prints before the first message of a process
_BANNER = re.compile(rb"XRT build version: [^\n]*\n(?:(?:Build hash|Build date|Git branch|PID|UID|"
                     rb"HOST|EXE): ?[^\n]*\n|\[[^\]\n]*\]\n)*")


def xrt_messages(text: bytes) -> tuple[list[str], bytes]:
    """XRT's failure messages in ``text`` (what was written to standard error), and the rest of
    it without them and without XRT's banner (another thread's output, XRT's warnings)."""
    said = []

    def take(match):
        if match.group(2) in _FAILURES:
            said.append(" ".join(match.group(3).decode(errors="replace").split()))
            return b""
        return match.group(0)
    rest = _MESSAGE.sub(take, _BANNER.sub(b"", text))
    return said, rest


#: standard error is one per process: one capture at a time
_CONSOLE_LOCK = threading.Lock()


class XrtConsole:
    """Standard error (file descriptor 2, where XRT's console messages go) taken while one C
    function runs: :meth:`call` returns the function's result and leaves XRT's failure messages
    of that call in :attr:`said`; whatever else was written meanwhile (another thread's lines,
    XRT's warnings) is written on to standard error afterwards."""

    def __init__(self):
        self.said: list[str] = []

    def call(self, function, *args):
        # not split by a signal (host.interrupts.uninterrupted): an interrupt between taking
        # standard error and giving it back would leave every later message in the sink
        with _CONSOLE_LOCK, uninterrupted():
            try:
                sys.stderr.flush()
                saved = os.dup(2)
            except (OSError, ValueError):    # no standard error to take
                self.said = []
                return function(*args)
            with tempfile.TemporaryFile() as sink:
                os.dup2(sink.fileno(), 2)
                try:
                    return function(*args)
                finally:
                    try:
                        sys.stderr.flush()
                    except (OSError, ValueError):
                        pass
                    os.dup2(saved, 2)
                    os.close(saved)
                    sink.seek(0)
                    self.said, rest = xrt_messages(sink.read())
                    if rest:
                        os.write(2, rest)

    def reason(self) -> str:
        """What XRT said about the last call, for an error line; where XRT's messages went
        when xrt.ini sends them elsewhere (:func:`message_route`)."""
        if self.said:
            return "XRT: " + "; ".join(self.said)
        route = message_route()
        return f"XRT's messages go to {route}" if route else "XRT printed no message"
