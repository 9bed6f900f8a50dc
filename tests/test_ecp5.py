"""The self-test through the open ECP5 flow (hw/ecp5/, boards/ulx3s.toml), end to end at the
smallest geometry the core takes: ``python -m hw.build --board ulx3s`` runs Yosys, nextpnr-ecp5
and ecppack (YoWASP) to a bitstream and nextpnr's report; the routed netlist runs the self-test in
Verilator (sim/ecp5_postroute.py) and passes; with one generator LUT inverted it fails.

The whole-core build is marked ``slow`` (``pytest -m slow tests/test_ecp5.py``): its 56,000 LUT4
take Yosys about 7 CPU-minutes and nextpnr far longer in WebAssembly, more than a CI run affords;
tests/test_ecp5_flow.py runs the same flow, report, estimate and post-route machinery on a
routed miniature of the self-test in every CI run. The other tests here are fast."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from kmerspec.kernels.jacc_sketch import Params
from kmerspec.selftest import SelfTestParams, expected_result
from hw.ecp5.flow import NAME
from sim.ecp5_postroute import simulate
from hw.ecp5.report import register_path, summarise, timing_failures

ROOT = pathlib.Path(__file__).resolve().parent.parent
SMALL = {"jacc_sketch": dict(lanes=2, bytes_per_lane=4, k=21, p=8),
         "selftest": dict(genome_bytes=200, rounds=2, block_beats=16, seed=7)}
SMALL_ARGS = [a for kernel, values in SMALL.items() for name, value in values.items()
              for a in ("-P", f"{kernel}.{name}={value}")]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


#: Yosys and nextpnr (WebAssembly, one thread each) on the 56,000-LUT small core
pytestmark = pytest.mark.timeout(7200)


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """``python -m hw.build --board ulx3s`` at the small geometry, once. ``KMER_ECP5_BUILD``
    names the ``-o`` directory of such a run made beforehand by the same command (with its
    standard output in ``hw_build.stdout`` and its exit status in ``hw_build.rc`` there), to look
    at it again without a rebuild."""
    reuse = os.environ.get("KMER_ECP5_BUILD")
    if reuse:
        out = pathlib.Path(reuse)
        result = subprocess.CompletedProcess([], int((out / "hw_build.rc").read_text()),
                                             (out / "hw_build.stdout").read_text(), "")
        return out / "ulx3s", result
    out = tmp_path_factory.mktemp("ecp5")
    result = subprocess.run([sys.executable, "-m", "hw.build", "--board", "ulx3s", "-o", str(out)]
                            + SMALL_ARGS, cwd=ROOT, env=_env(), capture_output=True, text=True,
                            timeout=5000)
    return out / "ulx3s", result


@pytest.mark.slow
def test_hw_build_writes_the_ulx3s_bitstream_and_nextpnr_report(build):
    bdir, result = build
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for step in ("Yosys synth_ecp5", "nextpnr-ecp5 placement and routing", "ecppack"):
        assert f"ulx3s: {step} (" in out and f"ulx3s: {step} done in" in out
    assert "Fmax" in out and "critical path" in out
    assert f"openFPGALoader -b ulx3s {bdir / (NAME + '.bit')}" in out
    bit = (bdir / f"{NAME}.bit").read_bytes()
    # ecppack's bitstream: a comment block (0xFF 0x00 ... 0x00 0xFF), then the ECP5 preamble
    assert bit[:2] == b"\xff\x00" and b"\xff\xff\xbd\xb3" in bit[:4096] and len(bit) > 100_000
    # the 85F of the ULX3S, its pins, its 25 MHz clock; synthesis without DSPs
    lpf = (bdir / f"{NAME}.lpf").read_text()
    assert 'SITE "G2"' in lpf and "25000000" in lpf.replace(".0", "")
    assert "--85k" in (bdir / f"build_{NAME}.sh").read_text()
    assert "synth_ecp5 -nodsp" in (bdir / f"{NAME}.ys").read_text()
    report = json.loads((bdir / "ecp5.json").read_text())
    fmax = report["fmax"]
    assert len(fmax) == 1
    clock = next(iter(fmax.values()))
    assert clock["constraint_mhz"] == 25.0 and clock["achieved_mhz"] >= 25.0
    used, available = report["utilisation"]["TRELLIS_COMB"]
    assert 1000 < used < available == 83640
    assert report["utilisation"]["MULT18X18D"][0] == 0
    path = register_path(report)
    assert path["cells"] >= 1 and path["delay_ns"] == pytest.approx(
        path["logic_ns"] + path["routing_ns"] + path["clk_to_q_ns"] + path["setup_ns"], abs=0.01)
    info = json.loads((bdir / "selftest.json").read_text())
    checksum, records = expected_result(SelfTestParams(sketch=Params(**SMALL["jacc_sketch"]),
                                                       **SMALL["selftest"]))
    assert info["expected"] == {"checksum": f"0x{checksum:08x}", "records": records}
    assert "rgb_led 0" not in info["leds"] and info["leds"]["led 2"] == "pass"


@pytest.mark.slow
def test_the_routed_netlist_passes_the_selftest(build):
    bdir, result = build
    assert result.returncode == 0
    r = simulate(bdir)
    assert r["done"] and r["pass"] and not r["fail"], r
    assert r["cells"] > 1000 and r["cycles"] > 100


@pytest.mark.slow
def test_a_routed_netlist_with_a_broken_generator_fails_the_selftest(build):
    bdir, result = build
    assert result.returncode == 0
    r = simulate(bdir, mutate="generator")
    assert "generator" in r["mutated_cell"]
    assert r["fail"] and not r["pass"], r


def test_postroute_command_refuses_a_directory_without_a_build(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sim.ecp5_postroute", str(tmp_path)], cwd=ROOT,
                            env=_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no selftest.json" in result.stderr


def test_report_summary_and_failures_from_a_recorded_report():
    report = {"utilization": {"TRELLIS_COMB": {"used": 10, "available": 20}},
              "fmax": {"$glbnet$clk": {"achieved": 30.0, "constraint": 25.0}},
              "critical_paths": []}
    summary = summarise(report)
    assert summary["utilisation"]["TRELLIS_COMB"] == (10, 20) and not timing_failures(summary)
    report["fmax"]["$glbnet$clk"]["achieved"] = 24.9
    assert timing_failures(summarise(report)) == ["$glbnet$clk: 24.90 MHz achieved < 25.00 MHz "
                                                  "required"]


def test_hw_build_refuses_a_bad_parameter_for_ulx3s(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hw.build", "--board", "ulx3s", "-o",
                             str(tmp_path), "-P", "jacc_sketch.lanes=two"], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "jacc_sketch.lanes" in result.stderr
