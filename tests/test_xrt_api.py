"""The card driver against real XRT, not only against its stand-in.

* The C functions the driver declares (host.xrt_binding.PROTOTYPES) resolve in the real
  ``libxrt_coreutil.so.2`` of Debian's libxrt1 (XRT 2.13, installed by .ci/run) and each ctypes
  prototype equals the declaration in the installed headers (libxrt-dev: xrt/xrt_device.h,
  xrt_kernel.h, xrt_bo.h), and the declarations recorded from every release 2.12 .. 2.20
  (tests/data/xrt_c_api.json, from the release tags of github.com/Xilinx/XRT).
* pyxrt (tests/data/pyxrt_api.json, from each release's pyxrt.cpp): ``kernel.read_register``
  and ``write_register`` exist in no release 2.12 .. 2.20, and the driver and the stand-in use no
  pyxrt name that a supported release lacks (they use none: the driver is the C API).
* ``--backend xrt`` on this card-less machine, through the real library, ends with one line
  naming the missing device and exit status 2 in each way XRT fails here.

The library and the headers are found where the driver and the C compiler find them
(tests/xrt_install.py), not at fixed paths.
"""

import ast
import ctypes
import json
import os
import pathlib
import subprocess
import sys
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_ubyte, c_uint, c_uint32, c_uint64, c_void_p

import pytest

from host.xrt_binding import PROTOTYPES, CApi
from tests.xrt_install import include_dir, installed_library
from tests.xrt_sources import HEADERS, PYXRT_REFERENCE_TAG, TAGS, c_declarations

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
#: xrt/xrt_*.h of libxrt-dev on the compiler's include path, and the library the driver loads
INCLUDE = include_dir() / "xrt" / "xrt" if include_dir() else None
DEBIAN_LIBRARY = installed_library()
installed = pytest.mark.skipif(INCLUDE is None or DEBIAN_LIBRARY is None,
                               reason="Debian's libxrt1 and libxrt-dev are not installed "
                                      "(.ci/run installs them)")

#: C types of the headers -> the ctypes type that passes them (typedefs checked below)
C_TYPES = {
    "xrtDeviceHandle": c_void_p, "xrtKernelHandle": c_void_p, "xrtRunHandle": c_void_p,
    "xrtBufferHandle": c_void_p, "void*": c_void_p, "const void*": c_void_p,
    "int": c_int, "unsigned int": c_uint, "uint32_t": c_uint32, "uint32_t*": POINTER(c_uint32),
    "size_t": c_size_t, "uint64_t": c_uint64, "xrtBufferFlags": c_uint64,
    "xrtMemoryGroup": c_uint32, "const char*": c_char_p, "xuid_t": POINTER(c_ubyte),
    "const xuid_t": POINTER(c_ubyte), "enum ert_cmd_state": c_int,
    "enum xclBOSyncDirection": c_int,
}


def as_ctypes(declaration) -> tuple:
    restype, params, variadic = declaration
    return C_TYPES[restype], tuple(C_TYPES[p] for p in params), variadic


def prototype_mismatches(declared: dict) -> list[str]:
    """Every function of PROTOTYPES missing from ``declared`` or declared otherwise."""
    wrong = []
    for name, prototype in PROTOTYPES.items():
        if name not in declared:
            wrong.append(f"{name}: not declared")
        elif as_ctypes(declared[name]) != (prototype.restype, tuple(prototype.argtypes),
                                           prototype.variadic):
            wrong.append(f"{name}: {declared[name]} is not {prototype}")
    return wrong


def installed_declarations() -> dict:
    declared = {}
    for header in HEADERS:
        declared.update(c_declarations((INCLUDE / header).read_text()))
    return declared


@installed
def test_installed_headers_declare_every_function_with_the_drivers_prototype():
    text = (INCLUDE / "xrt_bo.h").read_text()
    # the typedefs C_TYPES relies on
    assert "typedef uint64_t xrtBufferFlags;" in text
    assert "typedef uint32_t xrtMemoryGroup;" in text
    assert "typedef void* xrtBufferHandle;" in text
    assert prototype_mismatches(installed_declarations()) == []


@installed
def test_the_real_library_resolves_every_function_with_the_declared_prototype():
    """CApi sets PROTOTYPES on the real library's functions; each resolves (a name the library
    lacks raises AttributeError) and carries the prototype of the installed header."""
    api = CApi(ctypes.CDLL(str(DEBIAN_LIBRARY), use_errno=True), str(DEBIAN_LIBRARY))
    declared = installed_declarations()
    for name in PROTOTYPES:
        function = getattr(api, name)
        restype, argtypes, _ = as_ctypes(declared[name])
        assert (function.restype, tuple(function.argtypes)) == (restype, argtypes), name
    with pytest.raises(AttributeError):
        api.xrtRunAbort     # not in the C API of any supported release, so not declared


def test_the_mismatch_check_catches_a_changed_prototype(monkeypatch):
    """A prototype changed in the driver (flags passed as 32 bits) fails the comparison."""
    from host import xrt_binding
    recorded = json.loads((DATA / "xrt_c_api.json").read_text())["releases"][TAGS[0]]
    assert prototype_mismatches(recorded) == []
    monkeypatch.setitem(xrt_binding.PROTOTYPES, "xrtBOAlloc",
                        xrt_binding.Prototype(c_void_p, (c_void_p, c_size_t, c_uint32, c_uint32)))
    assert [line.split(":")[0] for line in prototype_mismatches(recorded)] == ["xrtBOAlloc"]


def test_every_supported_release_declares_the_drivers_functions():
    recorded = json.loads((DATA / "xrt_c_api.json").read_text())
    assert tuple(recorded["releases"]) == TAGS
    for tag, declared in recorded["releases"].items():
        assert prototype_mismatches(declared) == [], tag
        assert "xrtRunAbort" not in declared, tag   # why a timeout marks the device unusable


# -- pyxrt ------------------------------------------------------------------------------------

PYXRT = json.loads((DATA / "pyxrt_api.json").read_text())["releases"]


def pyxrt_names_used(source: str) -> set[str]:
    """Attributes taken of ``pyxrt`` (or of an object of it: any ``.name`` after a call or a
    variable bound to a pyxrt class) in a module that imports pyxrt; none if it does not."""
    tree = ast.parse(source)
    imported = any(isinstance(node, (ast.Import, ast.ImportFrom))
                   and any("pyxrt" in (alias.name or "") for alias in node.names)
                   or isinstance(node, ast.ImportFrom) and "pyxrt" in (node.module or "")
                   for node in ast.walk(tree))
    if not imported:
        return set()
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def pyxrt_names(tag: str) -> set[str]:
    names = set()
    for cls, methods in PYXRT[tag].items():
        names.update(part for part in cls.split(".") if part)
        names.update(methods)
    return names


def test_pyxrt_has_no_register_access_in_any_supported_release():
    assert tuple(PYXRT) == (PYXRT_REFERENCE_TAG, *TAGS)
    # 2.11, recorded for reference: register access, but no xclbin.get_kernels
    assert {"read_register", "write_register"} <= set(PYXRT[PYXRT_REFERENCE_TAG]["kernel"])
    assert "get_kernels" not in PYXRT[PYXRT_REFERENCE_TAG]["xclbin"]
    for tag in TAGS:
        api = PYXRT[tag]
        assert {"device", "xclbin", "kernel", "run", "bo"} <= set(api), tag
        assert "group_id" in api["kernel"], tag
        assert "read_register" not in api["kernel"] and "write_register" not in api["kernel"], tag


def test_the_driver_and_the_stand_in_use_only_pyxrt_names_of_every_release():
    modules = [ROOT / "host" / name
               for name in ("xrt.py", "xrt_binding.py", "device.py", "control.py")] + \
        [ROOT / "sim" / "xrt_sim.py", ROOT / "sim" / "tb_xrt.py"]
    used = set().union(*(pyxrt_names_used(path.read_text()) for path in modules))
    for tag in TAGS:
        assert used - pyxrt_names(tag) == set(), tag
    # the check sees a driver that reads registers through pyxrt
    calling = "import pyxrt\nk = pyxrt.kernel(d, u, 'k', pyxrt.kernel.exclusive)\n" \
              "k.read_register(0x10)\n"
    assert "read_register" in pyxrt_names_used(calling) - pyxrt_names(TAGS[0])


# -- no card here -----------------------------------------------------------------------------

def run_cli(tmp_path, environment):
    genome = tmp_path / "g.fa"
    genome.write_text(">g\nACGTACGTTGCAACGTACGTTTGACCAGT\n")
    xclbin = tmp_path / "k.xclbin"
    xclbin.write_bytes(b"xclbin2\0")
    env = {k: v for k, v in os.environ.items() if k not in ("XILINX_XRT", "KMER_SKETCH_PYXRT")}
    env.update(environment, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "host", "sketch", str(genome), "--backend",
                           "xrt", "--xclbin", str(xclbin), "-o", str(tmp_path / "o.sketch")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def fake_xrt_root(tmp_path, core: bytes | None | bool):
    """An XRT root whose lib/ holds the installed coreutil and ``core`` (None: the installed
    core library, False: none)."""
    lib = tmp_path / "xrt" / "lib"
    lib.mkdir(parents=True)
    (lib / "libxrt_coreutil.so.2").symlink_to(DEBIAN_LIBRARY)
    if core is None:
        (lib / "libxrt_core.so.2").symlink_to(DEBIAN_LIBRARY.with_name("libxrt_core.so.2"))
    elif core is not False:
        (lib / "libxrt_core.so.2").write_bytes(core)
    return str(tmp_path / "xrt")


@installed
@pytest.mark.parametrize("case", ["unset", "no_core", "no_card"])
def test_backend_xrt_without_a_card_says_so_in_one_line(tmp_path, case):
    root = None if case == "unset" else fake_xrt_root(tmp_path, False if case == "no_core" else None)
    environment = {"XILINX_XRT": root} if root else {}
    result = run_cli(tmp_path, environment)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no XRT device 0: "), lines
    expected = {"unset": "XILINX_XRT is not set",
                "no_core": f"XILINX_XRT={root} has no lib/libxrt_core.so.2",
                "no_card": "XRT found no card with index 0 (no /dev/dri/renderD* of the xocl "
                           "driver; XRT: Could not open device with index '0')"}[case]
    assert expected in lines[0]
    assert not (tmp_path / "o.sketch").exists()


@installed
def test_the_device_open_runs_in_a_child_so_an_abort_is_one_line(tmp_path):
    """A core library XRT cannot load: whatever XRT does (an abort ends the child process), the
    command ends with one line."""
    result = run_cli(tmp_path, {"XILINX_XRT": fake_xrt_root(tmp_path, b"not a library")})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: no XRT device 0: XRT ended the process opening the device (killed by SIGABRT"), \
        lines
