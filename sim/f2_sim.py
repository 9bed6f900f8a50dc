"""A stand-in for AWS's FPGA SDK C library (libfpga_mgmt: fpga_mgmt and fpga_pci) whose one FPGA
(slot 0) holds a CL of ``python -m hw.build --board f2``, simulated: every peek and poke of AppPF
BAR0 is an AXI4-Lite transaction on the CL top's OCL port, every write of BAR4 and every read of
it an AXI4 transaction on its PCIS port, in the cocotb simulation of sim/tb_f2.py (the Verilog
of the CL directory under Verilator, sh_ddr replaced by a memory model). It holds AWS's rules and
nothing else.

    python -m hw.build --board f2 --kernels jacc_sketch,jacc_similarity -P ... -o build/f2
    KMER_SKETCH_F2_SIM=build/f2/kmer_jacc python -m host sketch a.fa b.fa --backend f2 --slot 0

Tied to the real library through host.f2_binding.PROTOTYPES: it offers exactly those functions
(any other name raises AttributeError), each checks its arguments with the ctypes prototype the
real call would use and returns what the C function returns: 0, a negative errno or an
``FPGA_ERR_*`` code. Every refusal is one of AWS's, with the source lines in
tests/data/f2_rules.json (tested in tests/test_f2_standin.py). What it does not model (the
management PF's BARs, BAR2, flags other than BURST_CAPABLE, reads through a pointer kept after
the next call) raises :class:`StandInLimitation`, a Python exception, never an SDK-like failure.

``fpga_pci_get_address`` returns a pointer to a read-only copy of the bytes the BAR holds at the
time of the call, read through PCIS then (on a card the pointer maps the BAR; the driver reads
it at once and never writes through it: a write faults, as it would not on a card, so that a
driver that did would be found). The copy lives until the next call of the stand-in.

Time: the host's clock (``clock()``, ``sleep()``, which host.f2_binding.CApi takes from the
system) is the simulation's: ``sleep(s)`` lets the CL run s x 250 MHz cycles, ``clock()`` is
the simulated time, so the driver's timeouts and polling act on simulated cycles.

For the tests: ``ocl_responses`` and ``pcis_responses`` list every non-OKAY response
(offset, response), ``accesses`` counts the requests of each kind.
"""

import collections
import ctypes
import errno
import hashlib
import json
import mmap
import os
import pathlib
import tempfile

from sim.declared_functions import DeclaredFunctions
from sim.served import ServedSimulation

__all__ = ["stand_in", "F2StandIn", "StandInLimitation", "BAR_BYTES", "CLOCK_HZ", "SIM_ENV",
           "FPGA_ERR_SOFTWARE_PROBLEM"]

#: the environment variable naming the CL directory whose AFI slot 0 holds (host.backends)
SIM_ENV = "KMER_SKETCH_F2_SIM"
CLOCK_HZ = 250_000_000
#: AppPF BAR sizes (hdk/docs/AWS_Fpga_Pcie_Memory_Map.md)
BAR_BYTES = {0: 64 << 20, 2: 64 << 10, 4: 128 << 30}
FPGA_ERR_SOFTWARE_PROBLEM = 24
FPGA_PF_MAX, FPGA_BAR_PER_PF_MAX, FPGA_SLOT_MAX = 2, 5, 8
#: FPGA_ERR2STR of hal/fpga_common.h, the codes the stand-in returns
_ERR_NAMES = {0: "ok", FPGA_ERR_SOFTWARE_PROBLEM: "software-problem"}


class StandInLimitation(RuntimeError):
    """A call the stand-in does not model (not a failure the SDK would report)."""


class _Bar:
    def __init__(self, slot, pf, bar, burst):
        self.slot, self.pf, self.bar, self.burst = slot, pf, bar, burst
        self.size = BAR_BYTES.get(bar, 0)


class F2StandIn(DeclaredFunctions):
    """The functions of host.f2_binding.PROTOTYPES over one simulated F2 FPGA (slot 0); see
    the module docstring."""

    origin = "the F2 SDK stand-in (sim/f2_sim.py)"
    description = "the AWS FPGA SDK stand-in (sim/f2_sim.py)"
    library = "AWS's FPGA SDK"
    declared_in = "host.f2_binding.PROTOTYPES"

    def __init__(self, cl_dir=None, *, design=None, parameters=None):
        """``design``, ``parameters``: the simulation's (text, parameters) and more parameters
        of sim/tb_f2.py, for tests (default: :func:`simulation_design` of ``cl_dir``)."""
        from host.f2_binding import PROTOTYPES
        self._prototypes = PROTOTYPES
        self.cl_dir = pathlib.Path(cl_dir) if cl_dir else None
        self._design, self._parameters = design, parameters
        self._initialized = False
        self._bars: dict[int, _Bar] = {}
        self._simulation: _Simulation | None = None
        self._copies: list = []
        self._time_ns = 0
        self.ocl_responses: list = []
        self.pcis_responses: list = []
        self.accesses: collections.Counter = collections.Counter()

    def _call(self, name: str, implementation, args: tuple):
        self._copies.clear()             # a pointer of get_address lives until the next call
        # a ctypes value passed by value (c_int(3)) is its number, as the C function sees it
        return implementation(*(arg.value if isinstance(arg, ctypes._SimpleCData)
                                and not isinstance(arg, ctypes.c_char_p) else arg
                                for arg in args))

    # -- time -------------------------------------------------------------------------------

    def clock(self) -> float:
        return self._time_ns * 1e-9

    def sleep(self, seconds: float) -> None:
        if self._simulation is None:
            return
        cycles = max(1, round(seconds * CLOCK_HZ))
        self._time_ns = self._simulation.request(("wait", cycles))[-1]

    # -- fpga_mgmt --------------------------------------------------------------------------

    def _c_fpga_mgmt_init(self):
        self._initialized = True
        return 0

    def _c_fpga_mgmt_strerror(self, code):
        code = int(code)
        text = os.strerror(-code) if code < 0 else _ERR_NAMES.get(code, "internal-error")
        return text.encode()

    def _slot_problem(self, slot):
        """fpga_pci_get_slot_spec: a slot number out of range is -EINVAL, a slot without an FPGA
        -ENOENT ("No device matching specified id")."""
        if not 0 <= slot < FPGA_SLOT_MAX:
            return -errno.EINVAL
        if slot != 0:
            return -errno.ENOENT
        return 0

    def _c_fpga_mgmt_describe_local_image(self, slot, info, flags):
        from host.f2_binding import FpgaMgmtImageInfo
        if not self._initialized:
            return FPGA_ERR_SOFTWARE_PROBLEM
        if flags:
            raise StandInLimitation(f"fpga_mgmt_describe_local_image flags 0x{flags:x}: the "
                                    "stand-in describes without metrics (flags 0)")
        problem = self._slot_problem(slot)
        if problem:
            return problem
        target = ctypes.cast(info, ctypes.POINTER(FpgaMgmtImageInfo)).contents
        ctypes.memset(ctypes.addressof(target), 0, ctypes.sizeof(target))
        target.slot_id = slot
        if self.cl_dir is None:
            target.status = 1                   # FPGA_STATUS_CLEARED
            target.ids.afi_id = b"none"
        else:
            built = self._build_info()
            target.status = 0                   # FPGA_STATUS_LOADED
            target.ids.afi_id = f"agfi-sim-{self._image_hash()}".encode()
            id0, id1 = (int(built["pci_ids"][k], 16) for k in ("cl_sh_id0", "cl_sh_id1"))
            ids = target.ids.afi_device_ids
            ids.vendor_id, ids.device_id = id0 & 0xFFFF, id0 >> 16
            ids.svid, ids.ssid = id1 & 0xFFFF, id1 >> 16
        for pf in range(FPGA_PF_MAX):
            spec = target.spec.map[pf]
            spec.vendor_id, spec.device_id = (0x1D0F, 0x9248) if pf else (
                target.ids.afi_device_ids.vendor_id, target.ids.afi_device_ids.device_id)
            for bar, size in BAR_BYTES.items():
                spec.resource_size[bar] = size
                spec.resource_burstable[bar] = True     # every F2 BAR is prefetchable
        return 0

    def _build_info(self) -> dict:
        path = self.cl_dir / "build.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            raise StandInLimitation(f"{self.cl_dir}: no build.json (not a CL directory of "
                                    "python -m hw.build --board f2)") from None

    def _image_hash(self) -> str:
        digest = hashlib.sha256()
        for path in sorted((self.cl_dir / "design").glob("*")):
            digest.update(path.read_bytes())
        return digest.hexdigest()[:17]

    # -- fpga_pci ---------------------------------------------------------------------------

    def _c_fpga_pci_init(self):
        return 0

    def _c_fpga_pci_attach(self, slot, pf, bar, flags, handle):
        if not 0 <= pf < FPGA_PF_MAX or not 0 <= bar < FPGA_BAR_PER_PF_MAX:
            return -errno.EINVAL
        problem = self._slot_problem(slot)
        if problem:
            return problem
        if pf != 0 or bar not in (0, 4):
            raise StandInLimitation(f"fpga_pci_attach(pf {pf}, bar {bar}): the stand-in models "
                                    "AppPF BAR0 (OCL) and BAR4 (PCIS)")
        if flags & ~1:
            raise StandInLimitation(f"fpga_pci_attach flags 0x{flags:x}: the stand-in models "
                                    "BURST_CAPABLE only")
        if self.cl_dir is None:
            return -errno.ENOENT
        number = next(i for i in range(64) if i not in self._bars)
        self._bars[number] = _Bar(slot, pf, bar, bool(flags & 1))
        ctypes.cast(handle, ctypes.POINTER(ctypes.c_int))[0] = number
        return 0

    def _c_fpga_pci_detach(self, handle):
        if self._bars.pop(int(handle), None) is None:
            return -errno.EINVAL
        if not self._bars and self._simulation is not None:
            self._simulation.close()
            self._simulation = None
        return 0

    def _bar(self, handle, offset, size):
        """The BAR of ``handle`` if [offset, offset + size) lies in it, else None
        (fpga_pci_bar_get_mem_at_offset: an unknown handle or a range past the BAR: -EINVAL)."""
        bar = self._bars.get(int(handle))
        if bar is None or offset + size > bar.size:
            return None
        if self._simulation is None:
            self._simulation = _Simulation(self.cl_dir, self._parameters, self._design)
            self._time_ns = self._simulation.started_ns
        return bar

    def _ocl_read(self, offset):
        _, value, response, self._time_ns = self._simulation.request(("ocl_read", offset))
        self.accesses["ocl_read"] += 1
        if response:
            self.ocl_responses.append((offset, response))
        return value

    def _ocl_write(self, offset, value):
        _, response, self._time_ns = self._simulation.request(("ocl_write", offset, value))
        self.accesses["ocl_write"] += 1
        if response:
            self.ocl_responses.append((offset, response))

    def _pcis_write(self, offset, data):
        _, bad, self._time_ns = self._simulation.request(("pcis_write", offset, bytes(data)))
        self.accesses["pcis_write"] += 1
        self.pcis_responses += [(offset, response) for response in bad]

    def _pcis_read(self, offset, length):
        _, data, bad, self._time_ns = self._simulation.request(("pcis_read", offset, length))
        self.accesses["pcis_read"] += 1
        self.pcis_responses += [(offset, response) for response in bad]
        return data

    def _c_fpga_pci_peek(self, handle, offset, value):
        bar = self._bar(handle, offset, 4)
        if bar is None:
            return -errno.EINVAL
        word = self._ocl_read(offset) if bar.bar == 0 else int.from_bytes(
            self._pcis_read(offset, 4), "little")
        ctypes.cast(value, ctypes.POINTER(ctypes.c_uint32))[0] = word
        return 0

    def _c_fpga_pci_poke(self, handle, offset, value):
        bar = self._bar(handle, offset, 4)
        if bar is None:
            return -errno.EINVAL
        if bar.bar == 0:
            self._ocl_write(offset, int(value))
        else:
            self._pcis_write(offset, int(value).to_bytes(4, "little"))
        return 0

    def _c_fpga_pci_write_burst(self, handle, offset, datap, dword_len):
        bar = self._bar(handle, offset, 4 * dword_len)
        if bar is None:
            return -errno.EINVAL
        data = ctypes.string_at(datap, 4 * dword_len)
        if bar.bar == 0:
            for i in range(dword_len):
                self._ocl_write(offset + 4 * i, int.from_bytes(data[4 * i:4 * i + 4], "little"))
        else:
            self._pcis_write(offset, data)
        return 0

    def _c_fpga_pci_get_address(self, handle, offset, dword_len, pointer):
        bar = self._bar(handle, offset, 4 * dword_len)
        if bar is None:
            return -errno.EINVAL
        if bar.bar != 4:
            raise StandInLimitation("fpga_pci_get_address of BAR0: the stand-in gives pointers "
                                    "into BAR4 (PCIS) only; registers are peeked")
        data = self._pcis_read(offset, 4 * dword_len) or b"\0"
        copy = mmap.mmap(-1, len(data))
        copy.write(data)
        address = ctypes.addressof(ctypes.c_char.from_buffer(copy))
        _read_only(address, len(data))
        self._copies.append(copy)
        ctypes.cast(pointer, ctypes.POINTER(ctypes.c_void_p))[0] = address
        return 0

    # -- for the tests ----------------------------------------------------------------------

    def request(self, *request):
        """A raw request to the simulation (sim/tb_f2.py), e.g. ("settled",)."""
        if self._simulation is None:
            self._simulation = _Simulation(self.cl_dir, self._parameters, self._design)
        answer = self._simulation.request(request)
        self._time_ns = answer[-1]
        return answer

    def release(self):
        """End the simulation (the tests' teardown)."""
        self._bars.clear()
        if self._simulation is not None:
            self._simulation.close()
            self._simulation = None


def _read_only(address, size):
    """mprotect the pages of an anonymous mapping read-only (a write through the pointer faults)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    page = mmap.PAGESIZE
    start = address - address % page
    if libc.mprotect(start, -(-(address + size - start) // page) * page, mmap.PROT_READ):
        raise OSError(ctypes.get_errno(), "mprotect")


_instances: dict = {}


def stand_in(cl_dir) -> F2StandIn:
    """The process's stand-in library for the CL directory ``cl_dir`` (one FPGA, slot 0)."""
    key = str(pathlib.Path(cl_dir).resolve()) if cl_dir else None
    if key not in _instances:
        _instances[key] = F2StandIn(cl_dir)
    return _instances[key]


#: The cycles the shell gives a PCIS transaction (AWS_Shell_Interface_Specification.md, "PCIS
#: Interface Timeout Details": 8 us, then it completes the transaction itself), at 250 MHz: the
#: MAXWAITS of AMD's checker on the PCIS slave's AWREADY, WREADY and ARREADY
PCIS_WAIT_CYCLES = 8 * CLOCK_HZ // 1_000_000


def checked_ports():
    """AMD's checker on every AXI port of the CL top's simulation build (sim.axi_checker): the
    shell's OCL, SDA, PCIS and PCIM (signals named by hw.f2.shell; USER and WID left to the
    checker's defaults: no rule reads them) and the memory port."""
    from hw.f2.shell import AXI_PORTS
    from hw.f2.top import SIM_PREFIX, sim_memory_ports
    from sim.axi_checker import CheckedPort, MaxWaits
    ports = []
    for name, axi in AXI_PORTS.items():
        signals = {(channel + field).upper(): axi.signal(channel, field)
                   for channel, field, _, _ in axi.fields()
                   if field != "user" and (channel, field) != ("w", "id")}
        waits = MaxWaits(aw=PCIS_WAIT_CYCLES, w=PCIS_WAIT_CYCLES, ar=PCIS_WAIT_CYCLES) \
            if name == "pcis" else MaxWaits()
        ports.append(CheckedPort(name=f"{name}_port", protocol="AXI4LITE" if axi.lite else "AXI4",
                                 data_width=32 if axi.lite else axi.data_width,
                                 addr_width=32 if axi.lite else axi.addr_width,
                                 id_width=0 if axi.lite else axi.id_width, signals=signals,
                                 clock="clk_main_a0", resetn="rst_main_n", maxwaits=waits,
                                 max_bursts=32))
    memory = {name[len(SIM_PREFIX) + 1:]: name for name in sim_memory_ports()
              if name != f"{SIM_PREFIX}_ready"}
    ports.append(CheckedPort(name="memory_port", protocol="AXI4", data_width=512, addr_width=64,
                             id_width=16, signals=memory, clock="clk_main_a0",
                             resetn="rst_main_n", max_bursts=64))
    return ports


def simulation_design(cl_dir, *, checker=True, mutant=None):
    """(Verilog text, tb parameters) of the CL directory's simulation: with ``checker`` and an
    aws-fpga checkout in KSA_AWS_FPGA, AMD's checker bound to every port (its file read from the
    checkout and compiled with the design, never kept); ``mutant``: pairs (text, replacement),
    each first occurrence replaced, for tests."""
    from hw.f2.cl_dir import simulation_text
    from sim.axi_checker import bind, checker_source
    cl_dir = pathlib.Path(cl_dir)
    text = simulation_text(cl_dir)
    for old, new in mutant or ():
        if old not in text:
            raise ValueError(f"mutant: {old!r} is not in the design")
        text = text.replace(old, new, 1)
    source = checker_source() if checker else None
    if source is None:
        return text, {}
    ports = checked_ports()
    text = bind(text, cl_dir.name, ports, source) + "\n" + source.read_text(errors="replace")
    return text, {"checker_ports": [port.name for port in ports],
                  "checker_source": str(source)}


class _Simulation(ServedSimulation):
    """The CL's Verilog under cocotb (sim/tb_f2.py) in a simulator thread, driven over a Unix
    socket, one request at a time (sim.served). ``design``: (text, parameters) of
    :func:`simulation_design` (default: the CL directory's, checked where the checker is)."""

    _ANSWERS = {"ocl_read": "value", "ocl_write": "written", "pcis_write": "written",
                "pcis_read": "data", "wait": "waited", "settled": "settled", "report": "report",
                "pcis_latency": "pcis_latency"}

    def __init__(self, cl_dir, parameters=None, design=None):
        cl_dir = pathlib.Path(cl_dir)
        self._directory = pathlib.Path(tempfile.mkdtemp(prefix="f2-sim-"))
        text, bound = design or simulation_design(cl_dir)
        super().__init__(f"CL {cl_dir.name}", self._directory / "cl.sock", text, "sim.tb_f2",
                         cl_dir.name, {**bound, **(parameters or {})})
        with self._lock:
            self.started_ns = self._expect("ready")[-1]

    def request(self, request):
        return self.exchange(request, self._ANSWERS[request[0]])

    def close(self):
        super().close(timeout=120)
        import shutil
        shutil.rmtree(self._directory, ignore_errors=True)
        if self._failure is not None:
            raise self._failed("failed")
