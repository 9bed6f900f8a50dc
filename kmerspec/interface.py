"""Kernel description: a kernel's host arguments (name, kind, order, width, register offset) and
its AXI4 master ports, as plain data.

It is the single source from which the control block, the core's ports, kernel.xml, the Vivado
packaging Tcl and the v++ link config are generated (hw/vitis), and from which the drivers and
devices (host/) call a kernel; it needs no Amaranth, so a card can be driven without it.
"""

import re
from dataclasses import dataclass

from .regmap import RegArg, layout_args, layout_status, CONTROL_ADDR_WIDTH

__all__ = ["Arg", "Bundle", "KernelDesc", "POINTER", "SCALAR", "AXI_DATA_WIDTHS", "gmem_bundles"]

POINTER = "pointer"
SCALAR = "scalar"

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: AXI4 data widths (ARM IHI 0022: a power of two, 8 to 1024 bits).
AXI_DATA_WIDTHS = (8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Bundle:
    """One AXI4 master port ``m_axi_<name>``."""
    name: str
    data_width: int = 512
    id_width: int = 1
    addr_width: int = 64

    def __post_init__(self):
        if not _IDENT.match(self.name) or "__" in self.name:
            raise ValueError(f"bad bundle name {self.name!r}")
        if self.addr_width != 64:
            raise ValueError("Vitis requires 64-bit m_axi addresses")
        if self.data_width not in AXI_DATA_WIDTHS:
            raise ValueError(f"AXI4 data width must be one of {AXI_DATA_WIDTHS}, "
                             f"not {self.data_width}")
        if self.id_width < 1:
            raise ValueError("AXI4 ID width must be at least 1")

    @property
    def port(self):
        return f"m_axi_{self.name}"


@dataclass(frozen=True)
class Arg:
    """One host argument.  ``kind`` is ``"pointer"`` (64-bit device address, needs ``bundle``) or
    ``"scalar"`` (32-bit; pyxrt passes C ``int``)."""
    name: str
    kind: str
    bundle: str | None = None
    ctype: str | None = None

    def __post_init__(self):
        if not _IDENT.match(self.name):
            raise ValueError(f"bad argument name {self.name!r}")
        if self.kind not in (POINTER, SCALAR):
            raise ValueError(f"argument {self.name!r}: kind must be 'pointer' or 'scalar'")
        if self.kind == POINTER and self.bundle is None:
            raise ValueError(f"pointer argument {self.name!r} needs a bundle")
        if self.kind == SCALAR and self.bundle is not None:
            raise ValueError(f"scalar argument {self.name!r} cannot have a bundle")

    @property
    def width(self):
        return 64 if self.kind == POINTER else 32

    @property
    def c_type(self):
        if self.ctype:
            return self.ctype
        return "void*" if self.kind == POINTER else "unsigned int"


@dataclass(frozen=True)
class KernelDesc:
    """A Vitis RTL kernel: ``name`` (= Verilog top module = kernel.xml name), ``args`` in host
    order (the index is the pyxrt ``set_arg`` index), ``bundles`` (the m_axi ports), and
    ``identity``, the read-only words the kernel reports after its arguments (a kernel's
    ``Params.identity_words()``; :func:`kmerspec.regmap.layout_status` places them)."""
    name: str
    args: tuple
    bundles: tuple
    vendor: str = "kmer-sketch"
    library: str = "kernels"
    version: str = "1.0"
    identity: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "bundles", tuple(self.bundles))
        object.__setattr__(self, "identity", tuple(int(word) for word in self.identity))
        if any(not 0 <= word < 1 << 32 for word in self.identity):
            raise ValueError("identity words must be 32-bit")
        if not _IDENT.match(self.name):
            raise ValueError(f"bad kernel name {self.name!r}")
        names = [b.name for b in self.bundles]
        if len(set(names)) != len(names):
            raise ValueError("duplicate bundle names")
        if not self.bundles:
            raise ValueError("a kernel needs at least one m_axi bundle")
        for a in self.args:
            if a.bundle is not None and a.bundle not in names:
                raise ValueError(f"argument {a.name!r}: unknown bundle {a.bundle!r}")
        for b in names:
            if not any(a.bundle == b for a in self.args):
                raise ValueError(f"bundle {b!r} has no pointer argument")
        if len({a.name for a in self.args}) != len(self.args):
            raise ValueError("duplicate argument names")
        if {f"m_axi_{b}" for b in names} & {a.name for a in self.args}:
            raise ValueError("an argument is named like a bundle port")

    # -- derived data -------------------------------------------------------------------------
    @property
    def control_addr_width(self):
        return CONTROL_ADDR_WIDTH

    @property
    def reg_args(self):
        return [RegArg(a.name, a.width) for a in self.args]

    def register_map(self):
        """``[(Arg, ArgSlot)]`` in host order: the offsets of every argument."""
        return list(zip(self.args, layout_args(self.reg_args, addr_width=CONTROL_ADDR_WIDTH)))

    def status_map(self):
        """Offsets of the ERROR register and the identity words (:class:`kmerspec.regmap.StatusMap`)."""
        return layout_status(self.reg_args, len(self.identity), addr_width=CONTROL_ADDR_WIDTH)

    def offsets(self):
        """``{arg name: byte offset}``."""
        return {a.name: s.offset for a, s in self.register_map()}

    def bundle(self, name):
        for b in self.bundles:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def vlnv(self):
        return f"{self.vendor}:{self.library}:{self.name}:{self.version}"


def gmem_bundles(data_width: int, count: int = 2) -> list[Bundle]:
    """The bundles ``gmem0 .. gmem<count-1>``, all ``data_width`` bits wide (inputs on gmem0 and
    outputs on gmem1 is every kernel's convention)."""
    return [Bundle(f"gmem{index}", data_width=data_width) for index in range(count)]
