"""Ctrl-C during a card run (issue 51, item 2), through the XRT stand-in: ``sketch --backend xrt``
with ``KMER_SKETCH_PYXRT=sim`` (host.device.xrt_stand_in hands host.xrt.XrtDevice
sim/xrt_sim.py), the stand-in's compute unit slow (``KMER_SKETCH_XRT_SIM_SLOW_WAIT``: every wait
lasts 120 s), and every C call logged (``KMER_SKETCH_XRT_SIM_LOG``), SIGINT sent once the run has
started.

The command closes what it may and keeps what the running unit may still write: its compute
units (xrtKernelClose) and the device (xrtDeviceClose) are closed, the started run's handle and
its two buffers (src, dst) are kept (no xrtRunClose, no xrtBOFree of them), and one line says so; the
process then dies of SIGINT, and nothing is left in TMPDIR. Before issue 51 the process exited
130 from the signal-watching thread with no XRT call at all (no close of anything) and no word
that the unit may still be running.
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from sim.runner import REPO_ROOT, available_simulators, build_root
from sim.xrt_sim import CALL_LOG_ENV, SLOW_WAIT_ENV
from tests.cli_helpers import ENV, interruptible
from tests.test_cli_xrt_standin import hw_build

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

#: the geometry of tests/test_cli_xrt_standin.py (the same Verilator build, cached)
SKETCH = {"jacc_sketch": {"k": 21, "p": 10, "lanes": 2, "bytes_per_lane": 4}}
#: the kinds of handle each call opens, and the call that closes each kind
OPENS = {"xrtDeviceOpen": "device", "xrtPLKernelOpenExclusive": "kernel", "xrtRunOpen": "run",
         "xrtBOAlloc": "buffer"}
CLOSES = {"xrtDeviceClose": "device", "xrtKernelClose": "kernel", "xrtRunClose": "run",
          "xrtBOFree": "buffer"}


def handles_at_the_end(calls: list[dict]) -> dict[int, str]:
    """The handles opened and not closed, by the log: handle -> kind."""
    live = {}
    for call in calls:
        if call["call"] in OPENS and call["result"]:
            live[call["result"]] = OPENS[call["call"]]
        elif call["call"] in CLOSES and call["result"] == 0:
            live.pop(call["args"][0])
    return live


@pytest.fixture
def short_tmpdir():
    """A short TMPDIR of the test's own: the stand-in's Unix sockets live there (their paths may
    hold 108 bytes)."""
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="ks51-"))
    yield scratch
    shutil.rmtree(scratch, ignore_errors=True)


def test_sigint_during_a_card_run_closes_what_it_may_and_says_so(tmp_path_factory,
                                                                  short_tmpdir):
    tmp_path = tmp_path_factory.mktemp("card")
    build = hw_build(tmp_path / "hw", kernels=("jacc_sketch",), build=SKETCH)
    genome = tmp_path / "g.fa"
    genome.write_text(">g\n" + "ACGTTGCAAGGCTTAACCGGATCGATCGGCTA" * 200 + "\n")
    log, scratch = tmp_path / "calls.jsonl", short_tmpdir
    # the Verilator builds stay where every test finds them (sim.runner.build_root)
    (scratch / "kmer-sketch-sim").symlink_to(build_root())
    env = {**ENV, "KMER_SKETCH_PYXRT": "sim", CALL_LOG_ENV: str(log), SLOW_WAIT_ENV: "120",
           "TMPDIR": str(scratch)}
    out = tmp_path / "out.sketch"
    process = subprocess.Popen([sys.executable, "-m", "host", "sketch", str(genome), "--k", "21",
                                "--index-bits", "10", "--backend", "xrt", "--xclbin", str(build),
                                "-o", str(out)], env=env, cwd=REPO_ROOT, stderr=subprocess.PIPE,
                               text=True, preexec_fn=interruptible)
    try:
        deadline = time.monotonic() + 600      # a first Verilator build of the kernel
        while not (log.exists() and '"xrtRunStart"' in log.read_text()):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)                         # in the wait now (it lasts 120 s)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == -signal.SIGINT
    assert err.splitlines()[-1] == (
        "error: interrupted (SIGINT); jacc_sketch:jacc_sketch_1 may still be running: reset the "
        "card (xbutil reset) before using it again")
    assert not out.exists()
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    names = [call["call"] for call in calls]
    started = [call["args"][0] for call in calls if call["call"] == "xrtRunStart"]
    assert len(started) == 1
    run = started[0]
    buffers = {call["result"] for call in calls if call["call"] == "xrtBOAlloc"}
    assert buffers <= {call["args"][2] for call in calls
                       if call["call"] == "xrtRunSetArg" and call["args"][0] == run}
    # closed what may be closed: the unit's kernel handle and the device; kept the run and the
    # buffers the running unit may still write
    assert "xrtKernelClose" in names and "xrtDeviceClose" in names
    assert handles_at_the_end(calls) == {run: "run", **{buffer: "buffer" for buffer in buffers}}
    assert len(buffers) == 2      # src and dst of jacc_sketch
    assert names.index("xrtRunState") > names.index("xrtRunWaitFor")   # its state asked
    # nothing left in TMPDIR: no simulator log of the command, no stand-in memory banks
    assert os.listdir(scratch) == ["kmer-sketch-sim"]
    assert not (build_root() / f"host-sketch-{process.pid}.log").exists()
