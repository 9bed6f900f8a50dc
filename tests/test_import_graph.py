"""The floors of the project (docs/architecture.md), checked on every module's imports, including
those inside functions: kmerspec imports nothing else of the project, hw/ never imports host/ or
sim/, host/ imports hw/ and sim/ only in the one module that loads a simulator, and the card
path (host without that module, kmerspec) needs no Amaranth."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("kmerspec", "hw", "host", "sim")
PROJECT = PACKAGES + ("tests", "bench")
#: the one module of host/ that may reach into hw/ and sim/: SimDevice builds and simulates RTL,
#: XrtDevice imports the pyxrt stand-in when KMER_SKETCH_PYXRT=sim; these are its only such edges
SIMULATOR_BACKEND = "host.device"
SIMULATOR_BACKEND_EDGES = {"hw.build", "sim.runner", "sim.pyxrt_sim"}
#: what each package may import of the project (besides itself)
ALLOWED = {
    "kmerspec": set(),
    "hw": {"kmerspec"},
    "host": {"kmerspec"},
    "sim": {"kmerspec", "hw", "host"},
}
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
    assert "sim.pyxrt_sim" in found   # inside host.device.pyxrt_module
    assert "kmerspec.golden.hashes" in imports_of(ROOT / "kmerspec" / "golden" / "motif.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_the_floors_below(package):
    violations = []
    for path in modules(package):
        name = module_name(path)
        allowed = ALLOWED[package] | {package}
        for imported in sorted(imports_of(path)):
            top = imported.split(".")[0]
            if name == SIMULATOR_BACKEND and imported in SIMULATOR_BACKEND_EDGES | {"hw", "sim"}:
                continue
            if top in PROJECT and top not in allowed:
                violations.append(f"{name} imports {imported}")
    assert not violations, "\n".join(violations)


@pytest.mark.parametrize("package", ["kmerspec", "host"])
def test_the_card_path_needs_no_amaranth(package):
    violations = [f"{module_name(path)} imports {imported}"
                  for path in modules(package) if module_name(path) != SIMULATOR_BACKEND
                  for imported in sorted(imports_of(path))
                  if imported.split(".")[0] in HARDWARE_ONLY]
    assert not violations, "\n".join(violations)


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
