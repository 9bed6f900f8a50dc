"""The floors of the project (docs/architecture.md), checked on every module's imports, including
those inside functions: kmerspec imports nothing else of the project, hw/ never imports host/ or
sim/, host/ imports hw/ and sim/ only in one module (host.device: it simulates RTL and hands the
xrt backend the XRT stand-in with KMER_SKETCH_PYXRT=sim and the f2 backend the F2 SDK stand-in
with KMER_SKETCH_F2_SIM), never in the card drivers (host.xrt, host.f2), sim/ imports host/
only in the bench that runs the host's call plan on a kernel, in the XRT and F2 stand-ins
(the drivers' declared C APIs, host.xrt_binding and host.f2_binding) and in the xclbin
writer (the structures the driver reads with, host.xclbin), the card path (host without
host.device, kmerspec) needs no Amaranth, and no modules of host/ import each other in a
circle."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("kmerspec", "hw", "host", "sim")
PROJECT = PACKAGES + ("tests", "bench")
#: the one module of host/ that loads a simulator: SimDevice builds and simulates RTL
SIMULATOR_BACKEND = "host.device"
#: the one module of host/ that may reach into hw/ and sim/, and its only such edges: SimDevice
#: builds and simulates RTL; xrt_stand_in gives the xrt backend the XRT stand-in for XrtDevice
#: when KMER_SKETCH_PYXRT=sim, f2_stand_in the f2 backend AWS's SDK stand-in for F2Device when
#: KMER_SKETCH_F2_SIM=DIR (the drivers, host.xrt and host.f2, do not know their test doubles)
SIMULATOR_EDGES = {"host.device": {"hw.build", "sim.runner", "sim.xrt_sim", "sim.f2_sim"}}
#: what each package may import of the project (besides itself)
ALLOWED = {
    "kmerspec": set(),
    "hw": {"kmerspec"},
    "host": {"kmerspec"},
    "sim": {"kmerspec", "hw"},
}
#: the modules of sim/ that may import host/, and their only such edges: the similarity
#: kernel's bench executes the call plan of host.allpairs.SimilarityJob (the host's layout code
#: under test) on the RTL; the XRT C API stand-in offers exactly the functions the card driver
#: declares (host.xrt_binding.PROTOTYPES), so it cannot accept a call the real library does not
#: have (and the F2 SDK stand-in, host.f2_binding.PROTOTYPES, likewise); the xclbin writer the stand-in and the tests use writes the structures the driver's
#: xclbin reader reads (host.xclbin), so the two cannot disagree on a layout
SIM_HOST_EDGES = {"sim.jacc_similarity.tb_kernel": {"host.allpairs"},
                  "sim.xrt_sim": {"host.xrt_binding"}, "sim.xclbin": {"host.xclbin"},
                  "sim.f2_sim": {"host.f2_binding"}}
#: third-party packages of the RTL and simulation floors, which the card path must not need
HARDWARE_ONLY = {"amaranth", "cocotb", "cocotb_tools", "cocotbext"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: pathlib.Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it, as absolute dotted names."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            found.add(prefix)
            # ``from pkg import module`` imports pkg.module when it is one
            directory = ROOT / prefix.replace(".", "/")
            found.update(f"{prefix}.{alias.name}" for alias in node.names
                         if (directory / f"{alias.name}.py").exists()
                         or (directory / alias.name / "__init__.py").exists())
    return found


def modules(package: str) -> list[pathlib.Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def test_imports_are_parsed_with_function_level_ones():
    """The checker sees imports inside functions and resolves relative imports."""
    found = imports_of(ROOT / "host" / "device.py")
    assert "sim.runner" in found   # inside SimDevice.run_many
    assert "hw.build" in found
    assert "sim.xrt_sim" in found   # inside xrt_stand_in()
    assert "kmerspec.golden.hashes" in imports_of(ROOT / "kmerspec" / "golden" / "motif.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_the_floors_below(package):
    violations = []
    for path in modules(package):
        name = module_name(path)
        allowed = ALLOWED[package] | {package}
        for imported in sorted(imports_of(path)):
            top = imported.split(".")[0]
            if imported in SIMULATOR_EDGES.get(name, set()) | ({"hw", "sim"} if name in
                                                                SIMULATOR_EDGES else set()):
                continue
            if imported in SIM_HOST_EDGES.get(name, set()):
                continue
            if top in PROJECT and top not in allowed:
                violations.append(f"{name} imports {imported}")
    assert not violations, "\n".join(violations)


def test_one_module_of_host_reaches_into_hw_and_sim():
    """host.device alone imports hw/ or sim/ (issue 52: the sim backend and the XRT stand-in
    were reached from two modules)."""
    reaching = sorted(module_name(path) for path in modules("host")
                      if {m.split(".")[0] for m in imports_of(path)} & {"hw", "sim"})
    assert reaching == sorted(SIMULATOR_EDGES) == [SIMULATOR_BACKEND]


@pytest.mark.parametrize("package", ["kmerspec", "host"])
def test_the_card_path_needs_no_amaranth(package):
    violations = [f"{module_name(path)} imports {imported}"
                  for path in modules(package) if module_name(path) != SIMULATOR_BACKEND
                  for imported in sorted(imports_of(path))
                  if imported.split(".")[0] in HARDWARE_ONLY]
    assert not violations, "\n".join(violations)


def import_cycles(package: str) -> list[list[str]]:
    """Every circle of imports (anywhere in a module) among the modules of ``package``."""
    names = {module_name(path): path for path in modules(package)}
    edges = {name: sorted(imported for imported in imports_of(path) if imported in names
                          and imported != name) for name, path in names.items()}
    cycles, state = [], {}

    def visit(name, stack):
        state[name] = "open"
        stack.append(name)
        for target in edges[name]:
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[name] = "done"
    for name in sorted(names):
        if name not in state:
            visit(name, [])
    return cycles


def test_the_card_driver_does_not_import_its_test_double():
    """Production code never imports its test double: host.xrt and its binding import nothing of
    sim/ or hw/ (the stand-in is handed to XrtDevice)."""
    for name in ("xrt.py", "xrt_binding.py", "xclbin.py"):
        assert not [m for m in imports_of(ROOT / "host" / name)
                    if m.split(".")[0] in ("sim", "hw")], name


def test_no_import_circle_in_host():
    assert import_cycles("host") == []


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .b import g\n")
    (package / "b.py").write_text("from .c import h\n")
    (package / "c.py").write_text("from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert import_cycles("pkg") == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_drivers_run_with_amaranth_unavailable():
    """Importing the drivers and packing a call for each kernel works where Amaranth cannot be
    imported (as on a card host with XRT only)."""
    script = """
import sys
for name in ("amaranth", "cocotb"):
    sys.modules[name] = None          # any import of them fails
import host.drivers, host.backends, host.cli
from kmerspec.kernels import KERNELS, params_class
for kernel in KERNELS:
    params = params_class(kernel)()
    assert params.desc.offsets()
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr


#: the standalone-board flows: hw/build.py loads them by the name a board file gives
#: (``builder = "module:function"``), and they convert their own -P values, so neither side
#: imports the other
STANDALONE_FLOWS = ("hw.selftest", "hw.ecp5")


def test_hw_build_and_the_standalone_flows_do_not_import_each_other():
    build = imports_of(ROOT / "hw" / "build.py")
    assert not [m for m in build if m.startswith(STANDALONE_FLOWS)], \
        f"hw/build.py imports {sorted(m for m in build if m.startswith(STANDALONE_FLOWS))}"
    violations = [f"{module_name(path)} imports {imported}"
                  for flow in STANDALONE_FLOWS
                  for path in modules(flow.replace(".", "/"))
                  for imported in sorted(imports_of(path))
                  if imported == "hw.build" or imported.startswith("hw.build.")]
    assert not violations, "\n".join(violations)
    # the flows are still reachable: every standalone board file names a loadable builder
    from hw.build import standalone_builder
    from hw.vitis.boards import list_boards, load_board
    standalone = [load_board(b) for b in list_boards() if load_board(b)["kind"] == "standalone"]
    assert {b["name"] for b in standalone} >= {"rfsoc4x2", "ulx3s"}
    for board in standalone:
        assert callable(standalone_builder(board))


def test_the_api_is_the_floor_under_the_commands():
    """host.api (the Python API) imports nothing of the command line, and the commands that
    sketch, compare and cluster call it rather than keeping copies (issue 52 item 8)."""
    api = [path for path in modules("host") if module_name(path).startswith("host.api")]
    assert {module_name(path) for path in api} >= {"host.api", "host.api.pairs",
                                                   "host.api.sketching", "host.api.clustering"}
    upward = [f"{module_name(path)} imports {imported}" for path in api
              for imported in sorted(imports_of(path))
              if imported.startswith(("host.commands", "host.cli"))]
    assert not upward, "\n".join(upward)
    for command in ("sketch", "dist", "search", "screen", "cluster"):
        path = ROOT / "host" / "commands" / f"{command}.py"
        assert any(imported.startswith("host.api") for imported in imports_of(path)), command
