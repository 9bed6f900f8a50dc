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
"""

from dataclasses import dataclass

__all__ = [
    "CTRL", "GIE", "IER", "ISR", "ARGS_BASE",
    "CTRL_AP_START", "CTRL_AP_DONE", "CTRL_AP_IDLE", "CTRL_AP_READY", "CTRL_AUTO_RESTART",
    "RegArg", "ArgSlot", "layout_args", "CONTROL_ADDR_WIDTH",
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
