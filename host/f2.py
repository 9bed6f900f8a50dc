"""The F2 driver: :class:`F2Device` runs kernels on an AWS EC2 F2 FPGA slot holding one of this
project's AFIs (``python -m hw.build --board f2``), through AWS's SDK C library (host.f2_binding:
the ctypes prototypes and the library), or on a stand-in for that library handed to it as
``api`` (sim/f2_sim.py, through host.backends with ``KMER_SKETCH_F2_SIM``; this module imports no
stand-in).

The same driver code as on a Vitis card (host.drivers packs and unpacks; host.control checks the
identity words, asks for clean starts, reads ERROR and bounds every call): only the way to the
registers and the memory differs. Before the first call the device checks, in this order, and
says which failed:

1. the slot holds an AFI (``fpga_mgmt_describe_local_image``: status ``loaded``) whose PCI IDs
   are this project's CL's (kmerspec.f2: 1d0f:f0c5, subsystem 1d0f:4b53);
2. the CL directory on OCL (AppPF BAR0, window 0) has this layout's magic and version, and lists
   the compute units (kernel, window);
3. the card memory is ready (the directory's STATUS; the DDR4 calibrates when the AFI loads);
4. before a unit's first call, its identity words equal the Params the driver asks for
   (host.control.check_identity); the geometry of every kernel (lanes, bus width, pivots, ...)
   is read from those words (kmerspec.kernels.params_from_identity), so no build directory is
   needed on the F2 instance.

A call: its buffers are placed in card memory (4 KiB-aligned, from 4 KiB up: 0 is never a valid
pointer), its inputs written through PCIS (AppPF BAR4, attached with write combining:
``fpga_pci_write_burst``), its arguments and ap_start through the unit's window (``fpga_pci_poke``;
BAR0 is attached without write combining, since CTRL clears on read), CTRL polled
(``fpga_pci_peek``) until ap_done, ERROR read, its outputs read through BAR4
(``fpga_pci_get_address``, then one copy). One call is in flight per unit. A call that does not
finish within host.control.timeout_ms (the kernel's cycle model, 4 times over) ends the device:
its memory is never reused in this process, and the error says to clear and reload the AFI
(``fpga-clear-local-image``/``fpga-load-local-image``), since the unit may still be running.
"""

import ctypes
import itertools
from ctypes import c_int, c_uint32, c_void_p

from kmerspec import f2 as cl
from kmerspec.kernels import params_class, params_from_identity
from kmerspec.regmap import CTRL, CTRL_AP_DONE, CTRL_AP_IDLE, CTRL_AP_START

from .calls import (DeviceError, KernelError, Output, RunResult, as_bytes, buffer_sizes,
                    run_fields, scalars)
from .card import CardDevice
from .control import check_error, timeout_ms
from .interrupts import uninterrupted
from .f2_binding import (APP_PF_BAR0, APP_PF_BAR4, BURST_CAPABLE, FPGA_APP_PF, FPGA_SLOT_MAX,
                         FPGA_STATUS_LOADED, FPGA_STATUSES, FpgaMgmtImageInfo, load_library,
                         strerror)

__all__ = ["F2Device", "MEMORY_READY_S", "PAGE"]

#: seconds the device waits for the card memory to become ready
MEMORY_READY_S = 10.0
PAGE = 4096
#: CTRL is polled every POLL_MIN_S at first, then every 1/16 of the time waited, at most POLL_MAX_S
POLL_MIN_S, POLL_MAX_S = 2e-6, 1e-3


class _Memory:
    """First-fit allocation of 4 KiB-aligned buffers in [PAGE, size)."""

    def __init__(self, size: int):
        self.size = size
        self.used: dict[int, int] = {}

    def allocate(self, size: int) -> int | None:
        size = -(-max(size, 1) // PAGE) * PAGE
        offset = PAGE
        for start in sorted(self.used):
            if start - offset >= size:
                break
            offset = max(offset, start + self.used[start])
        if offset + size > self.size:
            return None
        self.used[offset] = size
        return offset

    def free(self, offset: int):
        self.used.pop(offset, None)


class _Geometry(dict):
    """kernel -> its geometry fields, read from the AFI; asking for a kernel the AFI does not
    hold (``get``, as host.drivers asks before it builds a call) says so, instead of falling
    back to a default geometry the AFI was not built with."""

    def __init__(self, values, missing):
        super().__init__(values)
        self._missing = missing

    def get(self, kernel, default=None):
        if kernel not in self:
            raise DeviceError(self._missing(kernel))
        return self[kernel]


class _Unit:
    def __init__(self, index: int, kernel: str, window: int, number: int):
        self.index, self.kernel, self.window, self.number = index, kernel, window, number
        self.name = f"{kernel}_{number + 1}"
        self.checked: set = set()
        self.needs_clean_start = True
        self.identity_words: list | None = None


def _over(ctrl: int) -> bool:
    """Whether the CTRL word ``ctrl`` of a started unit says its run is over."""
    return bool(ctrl & CTRL_AP_DONE) or (ctrl & (CTRL_AP_IDLE | CTRL_AP_START)) == CTRL_AP_IDLE


class _Call:
    def __init__(self, kernel, arguments, unit, buffers, outputs, values, limit_ms, started):
        self.kernel, self.arguments, self.unit = kernel, arguments, unit
        self.buffers, self.outputs, self.values = buffers, outputs, values
        self.limit_ms, self.started = limit_ms, started
        self.settled = False    # its buffers freed or abandoned


class F2Device(CardDevice):
    """An F2 FPGA slot (``slot``, 0..7) with one of this project's AFIs loaded. ``api``: AWS's
    SDK library (None: load it) or a stand-in with the same functions."""

    name = "f2"

    @property
    def reset_advice(self) -> str:
        """What to do before the slot is used again when a unit may still be running."""
        return (f"clear and reload the AFI (sudo fpga-clear-local-image -S {self.slot}, then "
                f"fpga-load-local-image)")

    def __init__(self, slot: int = 0, api=None):
        if not 0 <= int(slot) < FPGA_SLOT_MAX:
            raise DeviceError(f"--slot {slot}: an F2 instance has FPGA slots "
                              f"0..{FPGA_SLOT_MAX - 1}")
        self.slot = int(slot)
        self._api = api if api is not None else load_library()
        self._bars: dict[int, int] = {}
        self._unusable: str | None = None
        self._abandoned: list = []
        #: the compute units an abandoned call may still be running on
        self.still_running: list[str] = []
        self._check_image()
        try:
            self._bars[APP_PF_BAR0] = self._attach(APP_PF_BAR0, 0)
            self._bars[APP_PF_BAR4] = self._attach(APP_PF_BAR4, BURST_CAPABLE)
            self._read_directory()
            self._wait_for_memory()
            self.memory = _Memory(self.memory_bytes)
            #: kernel -> geometry fields (host.drivers builds its Params with them)
            self.geometry = _Geometry({}, self._not_here)
            for kernel, units in self.units.items():
                try:
                    built = params_from_identity(self._identity_words(units[0]))
                except ValueError as error:
                    raise DeviceError(f"FPGA slot {self.slot}: {units[0].name}: {error}") \
                        from None
                self.geometry[kernel] = {name: value for name, value in built.to_dict().items()
                                         if name != "kernel" and name not in run_fields(kernel)}
        except BaseException:
            self.close()
            raise
        self._turns = {kernel: itertools.cycle(range(len(units)))
                       for kernel, units in self.units.items()}

    # -- the slot ---------------------------------------------------------------------------

    def _check_image(self):
        api, slot = self._api, self.slot
        rc = api.fpga_mgmt_init()
        if rc:
            raise DeviceError(f"fpga_mgmt_init failed: {strerror(api, rc)}")
        info = FpgaMgmtImageInfo()
        rc = api.fpga_mgmt_describe_local_image(slot, ctypes.byref(info), 0)
        if rc:
            raise DeviceError(f"FPGA slot {slot}: fpga_mgmt_describe_local_image failed: "
                              f"{strerror(api, rc)} (an F2 instance's slots: sudo "
                              f"fpga-describe-local-image -S {slot})")
        afi = info.ids.afi_id.decode(errors="replace") or "none"
        if info.status != FPGA_STATUS_LOADED:
            state = FPGA_STATUSES.get(info.status, f"status {info.status}")
            raise DeviceError(f"FPGA slot {slot}: no AFI loaded ({state}); load one built by "
                              f"python -m hw.build --board f2: sudo fpga-load-local-image -S "
                              f"{slot} -I agfi-...")
        ids = info.ids.afi_device_ids
        got = (ids.vendor_id, ids.device_id, ids.svid, ids.ssid)
        want = (cl.PCI_VENDOR_ID, cl.PCI_DEVICE_ID, cl.PCI_SUBSYSTEM_VENDOR_ID,
                cl.PCI_SUBSYSTEM_ID)
        if got != want:
            raise DeviceError(f"FPGA slot {slot}: AFI {afi} is not a kmer-sketch CL (PCI IDs "
                              f"{got[0]:04x}:{got[1]:04x} subsystem {got[2]:04x}:{got[3]:04x}; "
                              f"the CLs of python -m hw.build --board f2 present "
                              f"{want[0]:04x}:{want[1]:04x} subsystem {want[2]:04x}:{want[3]:04x})")
        self.afi = afi

    def _attach(self, bar: int, flags: int) -> int:
        api = self._api
        rc = api.fpga_pci_init()
        if rc:
            raise DeviceError(f"fpga_pci_init failed: {strerror(api, rc)}")
        handle = c_int(-1)
        rc = api.fpga_pci_attach(self.slot, FPGA_APP_PF, bar, flags, ctypes.byref(handle))
        if rc:
            raise DeviceError(f"FPGA slot {self.slot}: fpga_pci_attach of AppPF BAR{bar} failed: "
                              f"{strerror(self._api, rc)}")
        return handle.value

    def peek(self, offset: int) -> int:
        """A 32-bit read of BAR0 (OCL) at ``offset``."""
        word = c_uint32()
        rc = self._api.fpga_pci_peek(self._bars[APP_PF_BAR0], offset, ctypes.byref(word))
        if rc:
            raise DeviceError(f"FPGA slot {self.slot}: fpga_pci_peek of BAR0 0x{offset:x} "
                              f"failed: {strerror(self._api, rc)}")
        return word.value

    def poke(self, offset: int, value: int):
        rc = self._api.fpga_pci_poke(self._bars[APP_PF_BAR0], offset, value & 0xFFFF_FFFF)
        if rc:
            raise DeviceError(f"FPGA slot {self.slot}: fpga_pci_poke of BAR0 0x{offset:x} "
                              f"failed: {strerror(self._api, rc)}")

    def write_memory(self, address: int, data: bytes, what: str):
        """``data`` into card memory at ``address`` through PCIS (BAR4), in 32-bit words (the
        last padded with zeros: buffers are whole pages)."""
        padded = bytes(data) + bytes(-len(data) % 4)
        words = (c_uint32 * (len(padded) // 4)).from_buffer_copy(padded)
        rc = self._api.fpga_pci_write_burst(self._bars[APP_PF_BAR4], address, words, len(words))
        if rc:
            raise DeviceError(f"{what}: cannot write {len(data)} bytes at card address "
                              f"0x{address:x}: fpga_pci_write_burst: {strerror(self._api, rc)}")

    def read_memory(self, address: int, size: int, what: str) -> bytes:
        """``size`` bytes of card memory at ``address``, through PCIS (BAR4)."""
        pointer = c_void_p()
        dwords = -(-size // 4)
        rc = self._api.fpga_pci_get_address(self._bars[APP_PF_BAR4], address, dwords,
                                            ctypes.byref(pointer))
        if rc or not pointer.value:
            raise DeviceError(f"{what}: cannot read {size} bytes at card address 0x{address:x}: "
                              f"fpga_pci_get_address: {strerror(self._api, rc)}")
        return ctypes.string_at(pointer.value, size)

    def _read_directory(self):
        magic = self.peek(cl.MAGIC)
        if magic != cl.CL_MAGIC:
            raise DeviceError(f"FPGA slot {self.slot}: AFI {self.afi} has no kmer-sketch CL "
                              f"directory on BAR0 (magic 0x{magic:08x}, expected "
                              f"0x{cl.CL_MAGIC:08x})")
        version = self.peek(cl.VERSION)
        if version != cl.CL_LAYOUT_VERSION:
            raise DeviceError(f"FPGA slot {self.slot}: AFI {self.afi} has CL layout version "
                              f"{version}; this host reads version {cl.CL_LAYOUT_VERSION} (build "
                              f"the AFI and the host from the same release)")
        count = self.peek(cl.UNITS)
        if not 0 < count <= cl.MAX_UNITS:
            raise DeviceError(f"FPGA slot {self.slot}: the CL directory lists {count} units")
        self.memory_bytes = self.peek(cl.MEMORY_LOW) | self.peek(cl.MEMORY_HIGH) << 32
        self.units: dict[str, list[_Unit]] = {}
        for index in range(count):
            base = cl.UNIT_TABLE + index * cl.UNIT_ENTRY_BYTES
            kernel = cl.name_from_words([self.peek(base + 4 * i) for i in range(4)])
            unit = _Unit(index, kernel, self.peek(base + cl.UNIT_WINDOW),
                         self.peek(base + cl.UNIT_INDEX))
            self.units.setdefault(kernel, []).append(unit)

    def _wait_for_memory(self):
        api = self._api
        started = api.clock()
        while not self.peek(cl.STATUS) & cl.STATUS_MEMORY_READY:
            if api.clock() - started > MEMORY_READY_S:
                raise DeviceError(f"FPGA slot {self.slot}: the card memory is not ready after "
                                  f"{MEMORY_READY_S:.0f} s (DDR4 calibration: sudo "
                                  f"fpga-describe-local-image -S {self.slot} -M)")
            api.sleep(1e-3)

    def _identity_words(self, unit: _Unit) -> list:
        """The identity words of ``unit`` (read once): magic, version, count, then the words."""
        if unit.identity_words is None:
            try:
                status = params_class(unit.kernel)().desc.status_map()
            except ValueError:
                raise DeviceError(f"FPGA slot {self.slot}: the CL directory lists unit "
                                  f"{unit.index} as {unit.kernel!r}, a kernel this host does "
                                  f"not know") from None

            def word(i):
                return self.peek(unit.window + status.identity + 4 * i)
            head = [word(i) for i in range(3)]
            unit.identity_words = head + [word(3 + i) for i in range(min(head[2], 256))]
        return unit.identity_words

    # -- calls ------------------------------------------------------------------------------

    def _not_here(self, name: str) -> str:
        held = ", ".join(f"{u.name} (BAR0 0x{u.window:x})" for us in self.units.values()
                         for u in us)
        return (f"kernel {name} is not in the AFI loaded in FPGA slot {self.slot} ({self.afi}: "
                f"{held}); load the AFI of a CL that has it")

    def units_of(self, kernel) -> list[_Unit]:
        units = self.units.get(kernel.desc.name)
        if not units:
            raise DeviceError(self._not_here(kernel.desc.name))
        return units

    def _registers(self, unit: _Unit):
        """Read and write functions of ``unit``'s registers (offset; offset, value)."""
        return (lambda offset: self.peek(unit.window + offset),
                lambda offset, value: self.poke(unit.window + offset, value))

    def _start(self, kernel, arguments: dict) -> _Call:
        desc = kernel.desc
        unit = self._next_unit(kernel, arguments)
        buffers, outputs, values = [], {}, {}
        try:
            for arg, slot in desc.register_map():
                value = arguments[arg.name]
                if arg.kind == "scalar":
                    if not 0 <= int(value) < 1 << 32:
                        raise DeviceError(f"kernel {desc.name}: scalar {arg.name}={value} does "
                                          "not fit in 32 bits")
                    words = [int(value)]
                else:
                    size = value.size if isinstance(value, Output) else len(as_bytes(value))
                    address = self.memory.allocate(max(size, PAGE))
                    if address is None:
                        raise DeviceError(f"{unit.name} {arg.name}: no room for {size} bytes in "
                                          f"the card's {self.memory_bytes >> 30} GiB")
                    buffers.append(address)
                    if isinstance(value, Output):
                        outputs[arg.name] = (address, size)
                    elif size:
                        self.write_memory(address, as_bytes(value), f"{unit.name} {arg.name}")
                    values[arg.name] = address
                    words = [address & 0xFFFF_FFFF, address >> 32]
                for offset, word in zip(slot.words, words):
                    self.poke(unit.window + offset, word)
        except BaseException:
            for address in buffers:
                self.memory.free(address)
            raise
        limit = timeout_ms(kernel, buffer_sizes(arguments), scalars(desc, arguments))
        call = _Call(kernel, arguments, unit, buffers, outputs, values, limit, None)
        try:
            with uninterrupted():   # started is set if and only if ap_start was written
                self.poke(unit.window + CTRL, CTRL_AP_START)
                call.started = self._api.clock()
        except BaseException:
            self._settle(call)
            raise
        return call

    def _finish(self, call: _Call) -> RunResult:
        api, unit, desc = self._api, call.unit, call.kernel.desc
        delay = POLL_MIN_S
        try:
            while not self.peek(unit.window + CTRL) & CTRL_AP_DONE:
                waited = api.clock() - call.started
                if waited * 1000 > call.limit_ms:
                    with uninterrupted():
                        self._abandon(call, f"no ap_done from {unit.name} (FPGA slot "
                                            f"{self.slot}, BAR0 0x{unit.window:x}) after "
                                            f"{call.limit_ms} ms (the kernel's cycle model, 4 "
                                            f"times over)")
                    raise KernelError(self._unusable)
                api.sleep(delay)
                delay = min(POLL_MAX_S, max(POLL_MIN_S, waited / 16))
        except KeyboardInterrupt:
            self._settle(call)      # interrupted while polling: abandoned unless it is done
            raise
        try:
            try:
                check_error(call.kernel, self._registers(unit)[0],
                            {**scalars(desc, call.arguments), **call.values})
            except KernelError:
                unit.needs_clean_start = True
                raise
            return RunResult({name: self.read_memory(address, size, f"{unit.name} {name}")
                              for name, (address, size) in call.outputs.items()})
        finally:
            call.settled = True
            for address in call.buffers:
                self.memory.free(address)

    def _settle(self, call: _Call) -> None:
        """``call`` will not be waited for (an interrupt): its buffers freed if ap_start was
        never written, or CTRL says the run is over (ap_done; or ap_idle with ap_start taken,
        since a poll that saw ap_done cleared it), else abandoned. Idempotent, not split by a
        signal."""
        with uninterrupted():
            if call.settled:
                return
            if call.started is None or _over(self.peek(call.unit.window + CTRL)):
                call.settled = True
                for address in call.buffers:
                    self.memory.free(address)
            else:
                self._abandon(call, f"{call.unit.name} was interrupted while it ran")

    def _abandon(self, call: _Call, what: str) -> None:
        """Keep the buffers of ``call`` for the life of the process (the unit may still write
        into them) and refuse the device, saying to clear and reload the AFI."""
        call.settled = True
        self._abandoned.append(call.buffers)
        if call.unit.name not in self.still_running:
            self.still_running.append(call.unit.name)
        call.unit.needs_clean_start = True
        if self._unusable is None:
            self._unusable = (f"{call.kernel.desc.name}: {what}; the unit may still be running: "
                              f"{self.reset_advice} before using the slot again")

    def _kernel_units(self, kernel) -> list[_Unit]:
        return self.units_of(kernel)

    def close(self):
        """Detach the BARs (the SDK unmaps them)."""
        bars, self._bars = self._bars, {}
        for handle in bars.values():
            self._api.fpga_pci_detach(handle)
