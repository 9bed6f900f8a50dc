"""The standalone self-test bitstream for a board without a Vitis shell (``kind = "standalone"``
in boards/*.toml), through Amaranth's own Vivado flow (amaranth.vendor.XilinxPlatform) and the
board's pins and clock from amaranth-boards.

``python -m hw.build --board rfsoc4x2 [-P jacc_sketch.p=12] [-P selftest.genome_bytes=65536]``
writes into ``OUT/<board>/``: the Verilog of :class:`SketchSelfTest`, Amaranth's Vivado
script, constraints and ``build_<name>.sh`` (the board's pins, I/O standards and clock), and
``selftest.json`` (the geometry, the generated input, the checksum and record count the golden
model predicts, what each LED means). With ``vivado`` on PATH it runs the script (synthesis,
placement, routing, bitstream); without, it says how to.
"""

import dataclasses
import importlib
import json
import pathlib
import shutil
import subprocess

from kmerspec.kernels.jacc_sketch import Params as SketchParams
from kmerspec.selftest import SelfTestParams

from .top import SketchSelfTest

__all__ = ["NAME", "selftest_params", "board_platform", "led_meanings", "build_standalone"]

NAME = "sketch_selftest"


def led_meanings(platform) -> dict:
    """What each LED of ``platform`` shows (:class:`SketchSelfTest`), for selftest.json."""
    leds = {"led 0": "heartbeat", "led 1": "done", "led 2": "pass",
            "led 3": "fail (wrong checksum or timeout)"}
    if ("rgb_led", 0) in platform.resources:
        leds["rgb_led 0"] = "green = pass, red = fail"
    return leds


def _integer(value):
    """A -P string (decimal, 0x.., 0b..) or a config integer as an int. Every parameter of the
    self-test is an integer; hw.build is not imported here (hw/build.py reaches this module only
    through a board file's ``builder``, so neither imports the other)."""
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return int(value, 0)
    raise ValueError


def _field_values(kernel, cls, values, exclude=()):
    """``values`` (hw.build's -P strings or config values) as the integer fields of dataclass
    ``cls``."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.name not in exclude}
    unknown = set(values) - set(defaults)
    if unknown:
        raise ValueError(f"{kernel} has no parameter {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(defaults))}")
    converted = {}
    for name, value in values.items():
        try:
            converted[name] = _integer(value)
        except ValueError:
            raise ValueError(f"{kernel}.{name} must be an integer, not {value!r}") from None
    return converted


def selftest_params(params: dict) -> SelfTestParams:
    """The self-test's parameters from hw.build's ``-P``/config values: ``jacc_sketch.*`` (the
    core's geometry; default: the kernel's defaults) and ``selftest.*`` (the input)."""
    others = set(params) - {"jacc_sketch", "selftest"}
    if others:
        raise ValueError(f"a standalone board builds the jacc_sketch self-test: parameters for "
                         f"{', '.join(sorted(others))} do not apply")
    sketch = SketchParams(**_field_values("jacc_sketch", SketchParams,
                                          params.get("jacc_sketch", {})))
    return SelfTestParams(sketch=sketch, **_field_values("selftest", SelfTestParams,
                                                         params.get("selftest", {}),
                                                         exclude=("sketch",)))


def write_selftest_json(bdir, board, selftest: SelfTestParams, top, platform, **more) -> dict:
    """``bdir/selftest.json``: the board, geometry, input and expected checksum of a self-test
    build (every flow writes the same record; ``more`` adds flow-specific keys)."""
    checksum, records = top.expected
    info = {
        "board": board["name"], "part": board["part"], "clock_hz": board["clock_hz"],
        "sketch": dataclasses.asdict(selftest.sketch),
        "input": {"genome_bytes": selftest.genome_bytes, "rounds": selftest.rounds,
                  "block_beats": selftest.block_beats, "seed": selftest.seed,
                  "beats": selftest.input_beats},
        "expected": {"checksum": f"0x{checksum:08x}", "records": records},
        "timeout_cycles": top.timeout_cycles,
        "leds": led_meanings(platform),
        "script": f"build_{NAME}.sh",
        **more,
    }
    (pathlib.Path(bdir) / "selftest.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def board_platform(board):
    """The board's Amaranth platform (``amaranth_platform = "module:Class"``), whose clock must
    be the board file's ``clock_hz``."""
    module, _, cls = board["amaranth_platform"].partition(":")
    try:
        platform = getattr(importlib.import_module(module), cls)()
    except (ImportError, AttributeError) as e:
        raise ValueError(f"board {board['name']}: cannot load its Amaranth platform "
                         f"{board['amaranth_platform']!r}: {e}") from None
    if platform.default_clk_frequency != board["clock_hz"]:
        raise ValueError(f"board file {board['file']}: clock_hz = {board['clock_hz']} but the "
                         f"Amaranth platform's clock is {platform.default_clk_frequency:.0f} Hz")
    return platform


def build_standalone(board, out, params, *, run_tools=True, require_tools=False, log=print):
    """Generate (and with Vivado on PATH, run) the board's self-test build. Returns the exit
    status: 0, or 3 when ``require_tools`` and Vivado is missing."""
    selftest = selftest_params(params)
    platform = board_platform(board)
    bdir = pathlib.Path(out) / board["name"]
    bdir.mkdir(parents=True, exist_ok=True)
    log(f"{board['name']}: golden model of the self-test input "
        f"({selftest.records} genomes of {selftest.genome_bytes} bytes)")
    top = SketchSelfTest(selftest)
    top.expected  # the golden model runs now, under the log line that announces it
    log(f"{board['name']}: elaborating {NAME} ({board['amaranth_platform']})")
    plan = platform.build(top, name=NAME, build_dir=str(bdir), do_build=False, emit_src=False)
    plan.extract(str(bdir))
    write_selftest_json(bdir, board, selftest, top, platform)
    files = sorted(p.name for p in bdir.iterdir())
    log(f"{board['name']}: {bdir}: {', '.join(files)}")
    if shutil.which("vivado") is None or not run_tools:
        if shutil.which("vivado") is None:
            log(f"{board['name']}: not on PATH: vivado -- generation only.")
        log(f"{board['name']}: next: source the Vivado settings, then: "
            f"cd {bdir} && sh build_{NAME}.sh  (bitstream {NAME}.bit)")
        return 3 if require_tools and shutil.which("vivado") is None else 0
    log(f"{board['name']}: running build_{NAME}.sh in {bdir}")
    try:
        plan.execute_local(str(bdir))
    except subprocess.CalledProcessError as e:
        log(f"{board['name']}: build_{NAME}.sh failed (exit {e.returncode}); see the Vivado "
            f"logs in {bdir}")
        return 1
    return 0
