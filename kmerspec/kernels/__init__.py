"""One contract module per kernel: its Params, its host-argument description and its byte layouts.

==================  =====================================  =====================================
module              kernel (Vitis name = hw.build key)     what it computes
==================  =====================================  =====================================
``jacc_sketch``     ``jacc_sketch``                        HyperLogLog sketch per genome (SPEC 3)
``jacc_similarity`` ``jacc_similarity``                    all-pairs HLL union features (SPEC 3)
``jsd_builder``     ``jsd_builder``                        PQA per genome (SPEC 4)
``jsd_similarity``  ``jsd_similarity``                     JSD of PQA pairs (SPEC 4)
``motif``           ``motif``                              emerging k-mers (SPEC 5)
==================  =====================================  =====================================

Each module defines ``Params``, a frozen dataclass derived from :class:`KernelParams`: every build
parameter of the kernel once (its default, range and error message come from
:mod:`kmerspec.params`), the derived sizes of its layouts, and ``desc``, the
:class:`kmerspec.interface.KernelDesc` of its host arguments. The RTL kernel (hw/), the drivers
(host/drivers.py) and the cocotb benches (sim/) all take this one object.
"""

import importlib
import json
from dataclasses import asdict, dataclass, fields, replace

from ..interface import Arg, KernelDesc, gmem_bundles

__all__ = ["KernelParams", "KERNELS", "params_class", "params_from_dict", "IDENTITY_VERSION",
           "IDENTITY_MAGIC", "IdentityMismatch", "params_from_identity"]

#: kernel name -> its contract module (under kmerspec.kernels)
KERNELS = ("jacc_sketch", "jacc_similarity", "jsd_builder", "jsd_similarity", "motif")

#: Version of the identity words and of every kernel's argument and buffer layouts: a binary of
#: another version is refused (raise it whenever a layout changes incompatibly).
IDENTITY_VERSION = 1
#: High half of every kernel's magic word ("KM"); the low half is the kernel's place in KERNELS
#: plus one (0 for a kernel outside KERNELS, such as hw.kernels' examples).
IDENTITY_MAGIC = 0x4B4D0000


@dataclass(frozen=True)
class IdentityMismatch:
    """Why a binary's identity words do not match the Params asked for: ``name`` (a Params field,
    or ``magic``/``version``), the binary's value and the requested one."""
    name: str
    built: object
    asked: object

    def __str__(self):
        if self.name == "magic":
            return (f"not a {self.asked} kernel: identity magic 0x{self.built:08x}")
        if self.name == "mc_depth" and self.built == 0:
            return (f"built without the minimum-count prefilter (mc_depth=0), asked for "
                    f"mc_depth={self.asked} (--min-count above 1)")
        return f"built with {self.name}={self.built}, asked for {self.asked}"


class KernelParams:
    """Base of every kernel's frozen ``Params`` dataclass.

    ``KERNEL`` (class attribute) is the kernel's name: its hw.build registry key and the Vitis
    kernel (Verilog top module) name.
    """

    KERNEL: str = ""

    @property
    def desc(self) -> KernelDesc:
        """The kernel's host arguments (:meth:`host_args`) and m_axi ports: the bundles gmem0
        (inputs) and gmem1 (outputs), ``data_width`` bits each."""
        return KernelDesc(name=self.KERNEL, identity=self.identity_words(), args=self.host_args(),
                          bundles=gmem_bundles(self.data_width))

    def host_args(self) -> list[Arg]:
        """The kernel's host arguments in register order."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The build parameters as JSON-ready values (what the cocotb benches receive)."""
        return {"kernel": self.KERNEL, **asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, values: dict):
        values = dict(values)
        kernel = values.pop("kernel", cls.KERNEL)
        if kernel != cls.KERNEL:
            raise ValueError(f"parameters of kernel {kernel!r}, not {cls.KERNEL!r}")
        names = {field.name for field in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"kernel {cls.KERNEL!r} has no parameter {unknown[0]!r} "
                             f"(parameters: {', '.join(sorted(names))})")
        return cls(**values)

    # -- identity: what a binary reports it was built with (kmerspec.regmap status registers) ---
    @classmethod
    def magic(cls) -> int:
        return IDENTITY_MAGIC | (KERNELS.index(cls.KERNEL) + 1 if cls.KERNEL in KERNELS else 0)

    def identity_words(self) -> tuple:
        """Magic, IDENTITY_VERSION, number of parameter words, then every field of the Params
        as a 64-bit value (two 32-bit words, low first) in field order."""
        values = []
        for field in fields(self):
            value = int(getattr(self, field.name))
            values += [value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF]
        return (self.magic(), IDENTITY_VERSION, len(values), *values)

    def identity_mismatch(self, words) -> "IdentityMismatch | None":
        """The first difference between a binary's identity ``words`` and these Params (None
        when they are the same build)."""
        words = [int(word) for word in words]
        expected = self.identity_words()
        if len(words) != len(expected) and len(words) < 3:
            return IdentityMismatch("magic", words[0] if words else 0, self.KERNEL)
        if words[0] != expected[0]:
            return IdentityMismatch("magic", words[0], self.KERNEL)
        if words[1] != IDENTITY_VERSION:
            return IdentityMismatch("layout version", words[1], IDENTITY_VERSION)
        for index, field in enumerate(fields(self)):
            low, high = 3 + 2 * index, 4 + 2 * index
            built = (words[low] | words[high] << 32) if high < len(words) else None
            asked = int(getattr(self, field.name))
            if built != asked:
                return IdentityMismatch(field.name, built, asked)
        if words != list(expected):
            return IdentityMismatch("parameter words", words[2], expected[2])
        return None

    def replace(self, **changes):
        """A copy with ``changes`` (checked like the constructor's arguments)."""
        return replace(self, **changes)


def params_class(kernel: str) -> type:
    """The Params class of the kernel called ``kernel``."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r} (known: {', '.join(KERNELS)})")
    return importlib.import_module(f"{__name__}.{kernel}").Params


def params_from_dict(values: dict) -> KernelParams:
    """The Params a :meth:`KernelParams.to_dict` made (its ``kernel`` key picks the class)."""
    return params_class(values["kernel"]).from_dict(values)


def params_from_identity(words) -> KernelParams:
    """The Params a binary was built with, from its identity words (magic, version, number of
    parameter words, then every field as two words, low first: :meth:`KernelParams.identity_words`).
    ValueError when the words are not a kernel's of this IDENTITY_VERSION or do not build."""
    words = [int(word) for word in words]
    if len(words) < 3 or words[0] & 0xFFFF0000 != IDENTITY_MAGIC \
            or not 1 <= words[0] & 0xFFFF <= len(KERNELS):
        raise ValueError(f"not a kernel's identity words (magic 0x{words[0] if words else 0:08x})")
    cls = params_class(KERNELS[(words[0] & 0xFFFF) - 1])
    if words[1] != IDENTITY_VERSION:
        raise ValueError(f"{cls.KERNEL}: identity layout version {words[1]}, this host reads "
                         f"{IDENTITY_VERSION}")
    names = [field.name for field in fields(cls)]
    if words[2] != 2 * len(names) or len(words) < 3 + words[2]:
        raise ValueError(f"{cls.KERNEL}: {words[2]} parameter words, expected {2 * len(names)}")
    values = {name: words[3 + 2 * i] | words[4 + 2 * i] << 32 for i, name in enumerate(names)}
    return cls(**values)
