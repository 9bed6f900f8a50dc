"""The ap_ctrl_hs control register map (SPEC section 6), as data (no Amaranth: the drivers use it).

One function, :func:`layout_args`, turns an ordered argument list into register offsets; the control
block (:class:`hw.axi.lite_control.AxiLiteControl`), kernel.xml, the Vivado ``ipx::`` Tcl and the
cocotb driver all use it, so they cannot disagree.

Fixed registers::

    0x00 CTRL  bit0 ap_start (R/W, write 1 sets; cleared by the core's ap_ready unless auto_restart)
               bit1 ap_done  (R, clear on read)      bit2 ap_idle (R)
               bit3 ap_ready (R, clear on read)      bit7 auto_restart (R/W)
    0x04 GIE   bit0 global interrupt enable
    0x08 IER   bit0 ap_done, bit1 ap_ready interrupt enables
    0x0C ISR   bit0 ap_done, bit1 ap_ready status, toggle on write (write 1 to a set bit clears it)

Arguments start at 0x10 in list order.  A 64-bit argument (a pointer) takes two 32-bit words, low
word first, and is aligned to 8 bytes; a 32-bit scalar takes one word.  Padding words read as 0.

Status registers (read-only) follow the arguments at the next 16-byte boundary, ``STATUS``
(:func:`layout_status`)::

    STATUS + 0x0  ERROR     the outcome of the last call (valid from its ap_done to the next
                            ap_start): bits 7:0 an ``ERROR_*`` code (0: none), bits 15:8 the index of
                            the argument it concerns (for the argument codes)
    STATUS + 0x4  FRESH     (R/W) bit 0: the next call starts from a clean kernel (every lane
                            memory cleared, see each kernel's doc for the cycles); set by reset
                            and by a host write of 1, cleared when a call starts
    STATUS + 0x8  IDENTITY  the words of ``KernelParams.identity_words``: magic, layout version,
    ...                     number of parameter words, then every build parameter as a 64-bit
                            value (two words, low first) in the order of the Params fields
"""

from dataclasses import dataclass

__all__ = [
    "CTRL", "GIE", "IER", "ISR", "ARGS_BASE",
    "CTRL_AP_START", "CTRL_AP_DONE", "CTRL_AP_IDLE", "CTRL_AP_READY", "CTRL_AUTO_RESTART",
    "RegArg", "ArgSlot", "layout_args", "CONTROL_ADDR_WIDTH", "StatusMap", "layout_status",
    "ERROR_NONE", "ERROR_AXI_READ", "ERROR_AXI_WRITE", "ERROR_NULL_POINTER",
    "ERROR_UNALIGNED_POINTER", "ERROR_ARGUMENT", "ERROR_RECORDS_EXTRA", "ERROR_RECORDS_MISSING",
    "ERROR_AXI_READ_PROTOCOL", "ERROR_AXI_WRITE_PROTOCOL", "ERROR_CAUSES", "error_code", "error_argument",
]

CTRL, GIE, IER, ISR = 0x00, 0x04, 0x08, 0x0C
ARGS_BASE = 0x10

CTRL_AP_START = 1 << 0
CTRL_AP_DONE = 1 << 1
CTRL_AP_IDLE = 1 << 2
CTRL_AP_READY = 1 << 3
CTRL_AUTO_RESTART = 1 << 7

#: Address bits of ``s_axi_control``: a 4 KiB window (kernel.xml ``range="0x1000"``).
CONTROL_ADDR_WIDTH = 12


@dataclass(frozen=True)
class RegArg:
    """One control-register argument: a name and a width of 32 or 64 bits."""
    name: str
    width: int

    def __post_init__(self):
        if self.width not in (32, 64):
            raise ValueError(f"argument {self.name!r}: width must be 32 or 64, not {self.width}")
        if not self.name.isidentifier():
            raise ValueError(f"argument name {self.name!r} is not an identifier")


@dataclass(frozen=True)
class ArgSlot:
    """Where an argument lives: byte ``offset`` of its low word and ``size`` in bytes (4 or 8)."""
    name: str
    width: int
    offset: int

    @property
    def size(self):
        return self.width // 8

    @property
    def words(self):
        """Byte offsets of the 32-bit words, low word first."""
        return [self.offset + 4 * i for i in range(self.width // 32)]


def layout_args(args, *, addr_width=CONTROL_ADDR_WIDTH):
    """Offsets of ``args`` (a sequence of :class:`RegArg`, or objects with ``name`` and ``width``).

    Returns a list of :class:`ArgSlot` in argument order.
    """
    slots = []
    names = set()
    offset = ARGS_BASE
    for arg in args:
        if arg.name in names:
            raise ValueError(f"duplicate argument name {arg.name!r}")
        names.add(arg.name)
        size = arg.width // 8
        offset = (offset + size - 1) // size * size
        slots.append(ArgSlot(arg.name, arg.width, offset))
        offset += size
    if offset > (1 << addr_width):
        raise ValueError(f"{len(slots)} arguments do not fit in a {1 << addr_width}-byte register window")
    return slots


# -- status registers --------------------------------------------------------------------------

#: Codes of the ERROR register (bits 7:0); the argument codes carry the argument index in 15:8.
ERROR_NONE = 0
ERROR_AXI_READ = 1           # an R beat on m_axi_gmem0 answered SLVERR or DECERR
ERROR_AXI_WRITE = 2          # a B response on m_axi_gmem1 answered SLVERR or DECERR
ERROR_NULL_POINTER = 3       # a pointer argument is 0
ERROR_UNALIGNED_POINTER = 4  # a pointer argument is not a multiple of its bus width in bytes
ERROR_ARGUMENT = 5           # a scalar argument the kernel cannot honour (range, multiple of)
ERROR_RECORDS_EXTRA = 6      # the chunk holds more records than n_records
ERROR_RECORDS_MISSING = 7    # the chunk ended with fewer records than n_records
ERROR_AXI_READ_PROTOCOL = 8  # an R beat on m_axi_gmem0 had RLAST on the wrong beat (or none) or
                             # an RID that is not the kernel's
ERROR_AXI_WRITE_PROTOCOL = 9  # a B response on m_axi_gmem1 had a BID that is not the kernel's

#: What each code means, as the host prints it (the argument codes name the argument).
ERROR_CAUSES = {
    ERROR_AXI_READ: "the memory answered a read with an error response (SLVERR/DECERR)",
    ERROR_AXI_WRITE: "the memory answered a write with an error response (SLVERR/DECERR)",
    ERROR_NULL_POINTER: "pointer argument {arg} is 0",
    ERROR_UNALIGNED_POINTER: "pointer argument {arg}=0x{value:x} is not aligned to the "
                             "{bus_bytes}-byte bus",
    ERROR_ARGUMENT: "argument {arg}={value} cannot be honoured by this build",
    ERROR_RECORDS_EXTRA: "the input holds more records than n_records={value}",
    ERROR_RECORDS_MISSING: "the input ended with fewer records than n_records={value}",
    ERROR_AXI_READ_PROTOCOL: "the memory's read data broke the AXI protocol (RLAST on the "
                             "wrong beat or missing, or an RID that is not the kernel's)",
    ERROR_AXI_WRITE_PROTOCOL: "the memory's write response broke the AXI protocol (a BID "
                              "that is not the kernel's)",
}


def error_code(word: int) -> int:
    """The ``ERROR_*`` code of an ERROR register value."""
    return word & 0xFF


def error_argument(word: int) -> int:
    """The argument index of an ERROR register value (argument codes only)."""
    return (word >> 8) & 0xFF


@dataclass(frozen=True)
class StatusMap:
    """Offsets of the status registers of a kernel."""
    error: int
    fresh: int
    identity: int
    identity_words: int

    @property
    def identity_offsets(self):
        return [self.identity + 4 * i for i in range(self.identity_words)]

    @property
    def end(self):
        return self.identity + 4 * self.identity_words


def layout_status(args, identity_words: int, *, addr_width=CONTROL_ADDR_WIDTH) -> StatusMap:
    """The status registers after the arguments ``args`` (as for :func:`layout_args`): ERROR at
    the first 16-byte boundary past the last argument word, FRESH, then ``identity_words`` words."""
    slots = layout_args(args, addr_width=addr_width)
    end = max((slot.offset + slot.size for slot in slots), default=ARGS_BASE)
    base = (end + 15) // 16 * 16
    status = StatusMap(error=base, fresh=base + 4, identity=base + 8, identity_words=identity_words)
    if status.end > (1 << addr_width):
        raise ValueError(f"the status registers do not fit in a {1 << addr_width}-byte window")
    return status
