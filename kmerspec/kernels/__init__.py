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
from dataclasses import asdict, fields, replace

__all__ = ["KernelParams", "KERNELS", "params_class", "params_from_dict"]

#: kernel name -> its contract module (under kmerspec.kernels)
KERNELS = ("jacc_sketch", "jacc_similarity", "jsd_builder", "jsd_similarity", "motif")


class KernelParams:
    """Base of every kernel's frozen ``Params`` dataclass.

    ``KERNEL`` (class attribute) is the kernel's name: its hw.build registry key and the Vitis
    kernel (Verilog top module) name.
    """

    KERNEL: str = ""

    @property
    def desc(self):
        """The kernel's host arguments and m_axi ports (a :class:`kmerspec.interface.KernelDesc`)."""
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
