"""The AWS EC2 F2 custom logic (CL) as the host sees it: the OCL register map (AppPF BAR0) that
names the compute units of a loaded AFI, the card memory behind PCIS (AppPF BAR4), and the PCI
IDs the CL presents. Plain data (no Amaranth), so that the host drives a card without the
generators; hw/f2 builds the CL from it and host/f2.py reads it (docs/f2.md, "Register map").

OCL (BAR0) is cut into windows of :data:`WINDOW_BYTES` (4 KiB, a kernel's s_axi_control range):
window 0 is the CL directory, window ``i + 1`` the control registers of compute unit ``i`` with
exactly the register map of the Vitis kernel (kmerspec.regmap: CTRL, arguments, ERROR, FRESH,
identity words), so the driver protocol of docs/kernel_interface.md holds unchanged.

The directory (read-only words at these byte offsets of window 0)::

    0x00 MAGIC          CL_MAGIC ("KSF2")
    0x04 VERSION        CL_LAYOUT_VERSION
    0x08 UNITS          number of compute units
    0x0C STATUS         bit 0: card memory ready (the DDR4 controller calibrated: sh_ddr's
                        sh_cl_ddr_is_ready); no PCIS access or kernel call before it is 1
    0x10 MEMORY_LOW     bytes of card memory reachable through PCIS and by the kernels,
    0x14 MEMORY_HIGH    from address 0 (the high word second)
    0x18 WINDOW         WINDOW_BYTES
    0x40 + 0x20 u       unit u: its kernel's name, 16 bytes of ASCII, NUL padded, as four
                        little-endian words (0x40 .. 0x4C), then the byte offset of its window
                        in BAR0 (0x50), then its index among the units of its kernel (0x54)

Any other address of window 0 reads 0; an address past the last unit's window is answered with
DECERR (the shell reports it through its metrics; a read returns 0).
"""

from dataclasses import dataclass

__all__ = ["WINDOW_BYTES", "CL_MAGIC", "CL_LAYOUT_VERSION", "MAGIC", "VERSION", "UNITS",
           "STATUS", "MEMORY_LOW", "MEMORY_HIGH", "WINDOW", "UNIT_TABLE", "UNIT_ENTRY_BYTES",
           "NAME_BYTES", "UNIT_WINDOW", "UNIT_INDEX", "STATUS_MEMORY_READY", "MAX_UNITS",
           "DDR_BYTES", "CL_SH_ID0", "CL_SH_ID1", "PCI_VENDOR_ID", "PCI_DEVICE_ID",
           "PCI_SUBSYSTEM_VENDOR_ID", "PCI_SUBSYSTEM_ID", "UnitEntry", "directory_words",
           "name_words", "name_from_words", "unit_window", "BAR_OCL", "BAR_PCIS"]

WINDOW_BYTES = 0x1000
CL_MAGIC = 0x4B534632          # "KSF2" read as a big-endian word
CL_LAYOUT_VERSION = 1

MAGIC, VERSION, UNITS, STATUS = 0x00, 0x04, 0x08, 0x0C
MEMORY_LOW, MEMORY_HIGH, WINDOW = 0x10, 0x14, 0x18
UNIT_TABLE = 0x40
UNIT_ENTRY_BYTES = 0x20
NAME_BYTES = 16
UNIT_WINDOW = 0x10             # within an entry: the window's byte offset in BAR0
UNIT_INDEX = 0x14              # within an entry: the unit's index among its kernel's units
STATUS_MEMORY_READY = 1 << 0
#: units whose entries fit window 0
MAX_UNITS = (WINDOW_BYTES - UNIT_TABLE) // UNIT_ENTRY_BYTES

#: The F2 card's DDR4 (one 64 GiB RDIMM behind sh_ddr: AWS_Shell_Interface_Specification.md,
#: "DDR4 DRAM"), at PCIS addresses 0 .. DDR_BYTES - 1 (the layout of aws-fpga's cl_mem_perf)
DDR_BYTES = 64 << 30

#: AppPF BARs (AWS_Fpga_Pcie_Memory_Map.md): OCL registers on BAR0, card memory on BAR4
BAR_OCL, BAR_PCIS = 0, 4

#: PCI IDs of the CL (cl_id_defines.vh, recorded in the AFI's manifest at ingestion): vendor
#: 0x1D0F (Amazon), whose device IDs 0xF000 .. 0xF0FF are free for CLs (CL_TEMPLATE's
#: cl_id_defines.vh); none may be 0
PCI_VENDOR_ID, PCI_DEVICE_ID = 0x1D0F, 0xF0C5
PCI_SUBSYSTEM_VENDOR_ID, PCI_SUBSYSTEM_ID = 0x1D0F, 0x4B53
CL_SH_ID0 = PCI_DEVICE_ID << 16 | PCI_VENDOR_ID
CL_SH_ID1 = PCI_SUBSYSTEM_ID << 16 | PCI_SUBSYSTEM_VENDOR_ID


@dataclass(frozen=True)
class UnitEntry:
    """One compute unit of the CL: its kernel, its index among that kernel's units, and the
    byte offset of its control window in BAR0."""
    kernel: str
    index: int
    window: int


def unit_window(unit: int) -> int:
    """BAR0 byte offset of compute unit ``unit``'s control registers."""
    return (unit + 1) * WINDOW_BYTES


def name_words(name: str) -> list[int]:
    """``name`` as the four little-endian words of a directory entry."""
    raw = name.encode("ascii")
    if len(raw) > NAME_BYTES or not name.isidentifier():
        raise ValueError(f"kernel name {name!r}: an identifier of at most {NAME_BYTES} "
                         "ASCII characters")
    raw = raw.ljust(NAME_BYTES, b"\0")
    return [int.from_bytes(raw[i:i + 4], "little") for i in range(0, NAME_BYTES, 4)]


def name_from_words(words) -> str:
    raw = b"".join(int(word).to_bytes(4, "little") for word in words)
    return raw.rstrip(b"\0").decode("ascii", errors="replace")


def directory_words(units: list, memory_bytes: int = DDR_BYTES) -> dict:
    """``{byte offset: word}`` of every constant word of the directory for ``units`` (a list of
    kernel names in unit order; STATUS is live, not here)."""
    if len(units) > MAX_UNITS:
        raise ValueError(f"{len(units)} compute units: at most {MAX_UNITS} fit the directory")
    words = {MAGIC: CL_MAGIC, VERSION: CL_LAYOUT_VERSION, UNITS: len(units),
             MEMORY_LOW: memory_bytes & 0xFFFF_FFFF, MEMORY_HIGH: memory_bytes >> 32,
             WINDOW: WINDOW_BYTES}
    seen: dict = {}
    for unit, kernel in enumerate(units):
        base = UNIT_TABLE + unit * UNIT_ENTRY_BYTES
        for i, word in enumerate(name_words(kernel)):
            words[base + 4 * i] = word
        words[base + UNIT_WINDOW] = unit_window(unit)
        words[base + UNIT_INDEX] = seen.get(kernel, 0)
        seen[kernel] = seen.get(kernel, 0) + 1
    return words
