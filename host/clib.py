"""What the ctypes bindings of vendor C libraries share (host.xrt_binding: XRT's C API;
host.f2_binding: AWS's FPGA SDK): a function's prototype, declaring a library's functions on an
object, and the file the dynamic linker mapped for a library name."""

import ctypes
import os
import pathlib
from typing import NamedTuple

__all__ = ["Prototype", "bind_functions", "loaded_path"]


class Prototype(NamedTuple):
    restype: type | None
    argtypes: tuple
    variadic: bool = False


def bind_functions(target, library: ctypes.CDLL, prototypes: dict) -> None:
    """Set each function of ``prototypes`` (name -> :class:`Prototype`) on ``target``, its
    ctypes prototype declared (a variadic function: its fixed arguments only); a name the
    library lacks raises AttributeError."""
    for name, prototype in prototypes.items():
        function = getattr(library, name)
        function.restype = prototype.restype
        function.argtypes = prototype.argtypes
        setattr(target, name, function)


def loaded_path(candidate: str) -> str:
    """The file the dynamic linker mapped for ``candidate`` (a bare name resolves on its path)."""
    if os.path.isabs(candidate):
        return candidate
    try:
        for line in pathlib.Path("/proc/self/maps").read_text().splitlines():
            if line.endswith("/" + candidate) or f"/{candidate}." in line.rsplit(" ", 1)[-1]:
                return line.rsplit(" ", 1)[-1]
    except OSError:
        pass
    return candidate
