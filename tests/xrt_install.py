"""This machine's XRT for the tests, found the way the driver and the compiler find it, never at
a fixed path: the library host.xrt_binding loads, the directory of XRT's headers on the C
compiler's include path, and an XRT root (``XILINX_XRT``) under which XRT's noop device loads.

XRT loads the library of a device from ``$XILINX_XRT/lib``: ``lib/libxrt_core.so.2`` for a
PCIe card, ``lib/libxrt_noop.so.2`` with ``XCL_EMULATION_MODE=noop``
(src/runtime_src/core/common/module_loader.cpp, ``shim_path``: ``xilinx_xrt() / "lib/lib" + name
+ ".so." + XRT_VERSION_MAJOR``). Debian's libxrt1 installs its libraries in the dynamic linker's
directory (``/usr/lib/<arch>``), not under a ``lib/`` of an XRT root, so :func:`noop_root` makes a
root whose ``lib/`` holds links to the installed files.
"""

import functools
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: what host.xrt_binding.load_library maps (in a child: XRT stays out of the test process)
_WHERE = "from host.xrt_binding import load_library; print(load_library().origin)"


@functools.cache
def installed_library() -> pathlib.Path | None:
    """The libxrt_coreutil.so.2 the driver loads without XILINX_XRT, as a real path."""
    env = {k: v for k, v in os.environ.items() if k not in ("XILINX_XRT", "XCL_EMULATION_MODE")}
    env["PYTHONPATH"] = str(ROOT)
    found = subprocess.run([sys.executable, "-c", _WHERE], capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=120)
    if found.returncode:
        return None
    path = pathlib.Path(found.stdout.strip())
    return path.resolve() if path.is_absolute() and path.is_file() else None


@functools.cache
def include_dir() -> pathlib.Path | None:
    """The directory of the C compiler's include path that holds ``xrt/xrt/xrt_kernel.h``
    (libxrt-dev), or None."""
    try:
        listed = subprocess.run(["cc", "-xc", "-E", "-v", "-"], input="", capture_output=True,
                                text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    searching = False
    for line in listed.splitlines():
        if line.startswith("#include <...> search starts here"):
            searching = True
        elif line.startswith("End of search list"):
            break
        elif searching and (pathlib.Path(line.strip()) / "xrt" / "xrt" / "xrt_kernel.h").is_file():
            return pathlib.Path(line.strip())
    return None


def noop_library() -> pathlib.Path | None:
    """XRT's noop device library, beside the installed libxrt_coreutil (libxrt1 ships both)."""
    library = installed_library()
    noop = library.with_name("libxrt_noop.so.2") if library else None
    return noop if noop and noop.is_file() else None


def noop_root(directory: pathlib.Path) -> pathlib.Path:
    """An XRT root in ``directory`` whose ``lib/`` links the installed libxrt_coreutil.so.2,
    libxrt_core.so.2 (whose presence the driver checks before opening a device) and
    libxrt_noop.so.2 (which XRT loads with ``XCL_EMULATION_MODE=noop``)."""
    library = installed_library()
    lib = directory / "xrt" / "lib"
    lib.mkdir(parents=True)
    for name in ("libxrt_coreutil.so.2", "libxrt_core.so.2", "libxrt_noop.so.2"):
        (lib / name).symlink_to(library.with_name(name))
    return directory / "xrt"


def noop_environment(root: pathlib.Path) -> dict:
    """The environment of a process that uses XRT's noop device (XCL_EMULATION_MODE=noop)."""
    env = {k: v for k, v in os.environ.items() if k != "KMER_SKETCH_PYXRT"}
    env.update(XILINX_XRT=str(root), XCL_EMULATION_MODE="noop", PYTHONPATH=str(ROOT))
    return env
