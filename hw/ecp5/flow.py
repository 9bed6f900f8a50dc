"""The self-test bitstream of an ECP5 board (``builder = "hw.ecp5.flow:build_ecp5"`` in
boards/*.toml; boards/ulx3s.toml) through Amaranth's own Trellis flow with the YoWASP tools.

``python -m hw.build --board ulx3s [-o DIR] [-P jacc_sketch.p=12] [-P selftest.genome_bytes=...]``
writes into ``DIR/<board>/`` (default ``build/hw/ulx3s``): Amaranth's files (``<name>.il``, the
Yosys script, the LPF with the board's pins and clock, ``build_<name>.sh``), ``selftest.json``,
and, running the script's three commands one by one (the YoWASP tools through Amaranth's
``YOSYS``/``NEXTPNR_ECP5``/``ECPPACK`` variables, :mod:`hw.ecp5.tools`):

1. Yosys ``synth_ecp5 -nodsp`` -> ``<name>.json`` (the mapped netlist);
2. nextpnr-ecp5 -> ``<name>_report.json`` (utilisation, Fmax, critical path) and the routed
   netlist ``<name>_routed.json`` (for :mod:`sim.ecp5_postroute`), ``<name>.config``;
3. only when every clock meets its constraint: ecppack -> ``<name>.bit``.

``ecp5.json`` keeps the figures: nextpnr's, and the project's level/delay estimate of the same
netlist beside them (:mod:`hw.ecp5.estimate`).

Why ``-nodsp``: the sketch core's fmix64 multiplies are cut into 17 x 26-bit partial products for
the DSP48E2; on ECP5 each takes two MULT18X18D, and the smallest core (8 hashes a cycle) needs
200 of the 85F's 156. In LUTs they fit, and Yosys's ECP5 simulation models (used after routing)
have no MULT18X18D.

Exit status: 0 with the bitstream; 2 with one ``error:`` line when the design does not meet the
board clock, or a tool fails; 3 with ``--require-tools`` when a YoWASP tool is missing.
"""

import json
import pathlib
import subprocess
import sys
import time

from hw.selftest.board import board_platform, selftest_params, write_selftest_json
from hw.selftest.top import SketchSelfTest

from .report import ReportError, report_lines, summarise, timing_failures
from .tools import MissingTools, tool_env

__all__ = ["NAME", "SYNTH_OPTS", "build_ecp5", "run_flow", "check_route", "generate",
           "write_build_files", "FlowError"]

NAME = "sketch_selftest"
SYNTH_OPTS = "-nodsp"
STEPS = ("Yosys synth_ecp5", "nextpnr-ecp5 placement and routing", "ecppack")


class FlowError(RuntimeError):
    pass


def _board_params(board, params):
    """The board file's ``[params.*]`` defaults (a geometry that fits its device) under the
    command line's."""
    merged = {k: dict(v) for k, v in board.get("params", {}).items()}
    for kernel, values in params.items():
        merged.setdefault(kernel, {}).update(values)
    return merged


def _script_steps(bdir, name):
    """The prelude (tool defaults) and the three tool commands of Amaranth's script."""
    lines = (bdir / f"build_{name}.sh").read_text().splitlines()
    prelude = [line for line in lines if line.startswith((":", "set ", "["))]
    commands = [line for line in lines if line.startswith('"$')]
    if len(commands) != len(STEPS):
        raise FlowError(f"{bdir}/build_{name}.sh: expected {len(STEPS)} tool commands "
                        f"(yosys, nextpnr-ecp5, ecppack), found {len(commands)}")
    return prelude, commands


def _run_step(bdir, prelude, command, env, log_name, timeout):
    log_path = bdir / log_name
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run(["sh", "-c", "\n".join(prelude + [command])], cwd=bdir, env=env,
                                stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            raise FlowError(f"{command.split()[0]} did not finish in {timeout} s; see "
                            f"{log_path}") from None
    if rc:
        text = log_path.read_text(errors="replace").splitlines()
        errors = [line for line in text if "ERROR" in line] or text[-1:] or ["(no output)"]
        raise FlowError(f"{command.split()[0]} failed (exit {rc}): {errors[0].strip()} "
                        f"(log {log_path})")


def write_build_files(platform, top, bdir, *, nextpnr_opts=""):
    """Amaranth's Trellis build files of ``top`` in ``bdir``, with this flow's options."""
    opts = (f"--report {NAME}_report.json --write {NAME}_routed.json --timing-allow-fail "
            f"--seed 1 {nextpnr_opts}").strip()
    plan = platform.build(top, name=NAME, build_dir=str(bdir), do_build=False,
                          synth_opts=SYNTH_OPTS, nextpnr_opts=opts)
    plan.extract(str(bdir))


def generate(board, out, params, *, nextpnr_opts=""):
    """Elaborate the self-test for ``board`` and write Amaranth's build files.
    Returns ``(bdir, top, selftest_info)``."""
    selftest = selftest_params(_board_params(board, params))
    platform = board_platform(board)
    bdir = pathlib.Path(out) / board["name"]
    bdir.mkdir(parents=True, exist_ok=True)
    top = SketchSelfTest(selftest)
    write_build_files(platform, top, bdir, nextpnr_opts=nextpnr_opts)
    info = write_selftest_json(bdir, board, selftest, top, platform, bitstream=f"{NAME}.bit")
    return bdir, top, info


def build_ecp5(board, out, params, *, run_tools=True, require_tools=False, log=print,
               error=None, step_timeout=4 * 3600, estimate=True):
    """Generate and run the board's ECP5 self-test build. Returns the exit status. Each tool
    gets ``step_timeout`` seconds (nextpnr, single-threaded, placed and routed the whole core
    in about 52 minutes on a loaded 2-core machine: 4 hours is a bound, not an estimate)."""
    error = error or (lambda msg: print(f"error: {msg}", file=sys.stderr))
    t0 = time.monotonic()
    name = board["name"]

    def progress(msg):
        log(f"[{time.monotonic() - t0:6.1f} s] {name}: {msg}")

    progress("golden model of the self-test input")
    bdir, top, info = generate(board, out, params)
    sketch = info["sketch"]
    progress(f"elaborated {NAME} (lanes={sketch['lanes']}, bytes_per_lane="
             f"{sketch['bytes_per_lane']}, k={sketch['k']}, p={sketch['p']}; "
             f"{info['input']['rounds'] * sketch['lanes']} genomes of "
             f"{info['input']['genome_bytes']} bytes; expected checksum "
             f"{info['expected']['checksum']}) into {bdir}")
    try:
        env = tool_env()
    except MissingTools as e:
        progress(f"{e} -- generation only")
        progress(f"next: pip install -e .[boards], then this command again (or: cd {bdir} && "
                 f"sh build_{NAME}.sh)")
        return 3 if require_tools else 0
    if not run_tools:
        progress(f"--no-run: generation only; next: cd {bdir} && sh build_{NAME}.sh")
        return 0
    try:
        status = run_flow(bdir, board, env, progress, error, step_timeout=step_timeout,
                          estimate=estimate)
    except (FlowError, ReportError, OSError) as e:
        error(f"{name}: {e}")
        return 2
    if status:
        return status
    progress(f"bitstream {bdir / info['bitstream']} ({(bdir / info['bitstream']).stat().st_size:,}"
             f" bytes); flash: openFPGALoader -b {board.get('openfpgaloader_board', name)} "
             f"{bdir / info['bitstream']}")
    return 0


def run_flow(bdir, board, env, progress, error, *, step_timeout=4 * 3600, estimate=True):
    """The three commands of Amaranth's script in ``bdir``, with :func:`check_route` between
    nextpnr and ecppack. Returns 0 with the bitstream, 2 when timing fails; :class:`FlowError`
    when a tool fails."""
    prelude, commands = _script_steps(bdir, NAME)
    # a bitstream of an earlier run must not pass for this one's
    (bdir / f"{NAME}.bit").unlink(missing_ok=True)
    for step, command, log_name in zip(STEPS, commands, ("yosys.log", "nextpnr.log",
                                                          "ecppack.log")):
        if step == "ecppack":
            status = check_route(bdir, board, progress, error, estimate=estimate)
            if status:
                return status
        t = time.monotonic()
        var = command.split()[0].strip('"').lstrip("$")
        progress(f"{step} (${var}={env[var]})")
        _run_step(bdir, prelude, command, env, log_name, step_timeout)
        progress(f"{step} done in {time.monotonic() - t:.1f} s")
    return 0


def check_route(bdir, board, progress, error, *, estimate=True):
    """After nextpnr: its report's figures (and the estimate beside them) into ``ecp5.json``;
    2 with one error line when a clock misses its constraint, else 0."""
    path = pathlib.Path(bdir) / f"{NAME}_report.json"
    try:
        summary = summarise(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError) as e:
        raise FlowError(f"{path}: {e}") from None
    summary["clock_hz"] = board["clock_hz"]
    progress("nextpnr report:\n" + "\n".join("    " + line for line in report_lines(summary)))
    if estimate:
        try:
            _estimate(pathlib.Path(bdir), board, summary, progress)
        except ValueError as e:         # a cell without a stated delay: no estimate, say why
            progress(f"no estimate: {e}")
    info = json.loads((pathlib.Path(bdir) / "selftest.json").read_text())
    (pathlib.Path(bdir) / "ecp5.json").write_text(json.dumps(
        {**summary, "selftest": info, "synth_opts": SYNTH_OPTS}, indent=2) + "\n")
    failures = timing_failures(summary)
    if failures:
        error(f"{board['name']}: timing not met at the board clock: {'; '.join(failures)} "
              f"(critical path in {pathlib.Path(bdir) / 'ecp5.json'}); no bitstream written")
        return 2
    return 0


def _estimate(bdir, board, summary, progress):
    from .estimate import compare, comparison_lines
    netlist = json.loads((bdir / f"{NAME}.json").read_text())
    routed = json.loads((bdir / f"{NAME}_routed.json").read_text())
    summary["estimate"] = compare(netlist, NAME, summary, routed, clock_hz=board["clock_hz"],
                                  speed=str(board_platform(board).speed))
    progress("the project's estimate (hw/vitis/timing.py, ECP5 delays) beside nextpnr:\n"
             + "\n".join("    " + line for line in comparison_lines(summary["estimate"])))
