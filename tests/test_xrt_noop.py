"""The card driver on XRT itself, without a card: Debian's libxrt1 (XRT 2.13) with XRT's noop device
(``XCL_EMULATION_MODE=noop``: XRT loads ``$XILINX_XRT/lib/libxrt_noop.so.2``, a device that opens,
takes any xclbin and completes every run when it starts; tests/xrt_install.py makes the XRT root
from where the library is installed).

The xclbin is the axlf container of a ``python -m hw.build`` output, written by sim/xclbin.py with
the sections XRT parses (IP_LAYOUT with the units named as v++ names them, MEM_TOPOLOGY,
CONNECTIVITY, EMBEDDED_METADATA from the kernel.xml files; tests/test_xclbin.py checks its
structures against xrt/xclbin.h). What this shows:

* ``--backend xrt`` through XRT ends in one line naming the real cause, exit status 2, and XRT
  prints nothing of its own (no ``[XRT] ERROR`` line of a failed probe, no banner). The lines
  prove, in order: ``xrt: libxrt_coreutil.so.2 ... from ...`` is printed once the device opened,
  XRT loaded the container (it parsed its sections without complaint) and the driver read the
  units from its IP_LAYOUT with the UUID XRT reports; ``jacc_sketch:jacc_sketch_1: cannot read
  register 0x38 (XRT: failed to read ip(2): Operation not permitted)`` is the identity check's
  first register read on the first unit, so XRT's kernel_impl accepted the name: the kernel is in
  the metadata (else "No such kernel"), ``jacc_sketch:{jacc_sketch_1}`` matched exactly one unit
  (else "No compute units matching", or "Cannot read or write kernel with multiple compute units"
  for two), the handle passed the exclusive-access and range checks, and the read reached the
  device, where the noop device refuses every register access (its xclRegRead returns 1, EPERM;
  ip(2) is compute unit index 2: the IP_LAYOUT entries by base address are checksum_1,
  checksum_2, jacc_sketch_1, jacc_sketch_2).
* The old name form, ``jacc_sketch:jacc_sketch_1``, fails on XRT with "No compute units matching"
  (the driver patched to use it, in the second test, and as a raw call in the third).
* The stand-in answers XRT's C calls as XRT does (result, errno, message) wherever the noop device
  can show it: the probe sequence of tests/xrt_probes.py run on both (tests/data/xrt_rules.json
  says which rules the noop device cannot show, and why).

A later XRT's noop device would take the driver no further: in every release 2.13 .. 2.20 its
xclRegRead returns 1 and its xclOpenContext 0 (src/runtime_src/core/pcie/noop/shim.cpp). A noop
device that answered register reads (with zeros) would stop the driver at the identity check
("not a jacc_sketch kernel: identity magic 0x0"); one that also let the identity pass would let
this test check, through XRT, the argument registers XRT writes from the container's kernel XML,
the buffers' memory groups and a run's completion, which the probe sequence checks call by call.
"""

import json
import subprocess
import sys

import pytest

from sim.runner import REPO_ROOT, available_simulators
from sim.xclbin import BuildImage, axlf_container
from tests.xrt_install import noop_environment, noop_library, noop_root
from tests.xrt_probes import NOOP_ONLY, RUN_KEYS, probe, probe_settings

pytestmark = pytest.mark.skipif(noop_library() is None,
                                reason="XRT's noop device is not installed (Debian's libxrt1; "
                                       ".ci/run installs it)")

#: jacc_sketch with two compute units, narrow (the geometry of tests/test_cli_xrt_standin.py),
#: and checksum with two
LINK = 'kernels = ["jacc_sketch", "checksum"]\n[compute_units]\njacc_sketch = 2\nchecksum = 2\n'
SMALL = ["-Pjacc_sketch.k=21", "-Pjacc_sketch.p=10", "-Pjacc_sketch.lanes=2",
         "-Pjacc_sketch.bytes_per_lane=4"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the hw.build output directory, its xclbin container, the noop environment)."""
    top = tmp_path_factory.mktemp("noop")
    (top / "link.toml").write_text(LINK)
    out = top / "build"
    result = subprocess.run([sys.executable, "-m", "hw.build", "--no-run", "-o", str(out),
                             "--config", str(top / "link.toml"), *SMALL], cwd=REPO_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    xclbin = top / "kmer.xclbin"
    xclbin.write_bytes(axlf_container(BuildImage(out)))
    return out, xclbin, noop_environment(noop_root(top))


def sketch_through_xrt(tmp_path, xclbin, env, prelude=""):
    genome = tmp_path / "g.fa"
    genome.write_text(">g\nACGTACGTTGCAACGTACGTTTGACCAGTACGGATTACAGGCATTAGC\n")
    output = tmp_path / "out.sketch"
    script = (prelude + "import sys\nfrom host.cli import main\n"
              f"sys.exit(main(['sketch', {str(genome)!r}, '--index-bits', '10', '--k', '21', "
              f"'--backend', 'xrt', '--xclbin', {str(xclbin)!r}, '-o', {str(output)!r}]))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, cwd=REPO_ROOT, timeout=300)
    return result, output


def test_the_driver_opens_its_units_on_xrt_and_says_the_real_cause(tmp_path, built):
    _, xclbin, env = built
    result, output = sketch_through_xrt(tmp_path, xclbin, env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines == [
        f"xrt: libxrt_coreutil.so.2 (XRT C API) from {env['XILINX_XRT']}/lib/libxrt_coreutil.so.2",
        "error: jacc_sketch:jacc_sketch_1: cannot read register 0x38 (XRT: failed to read ip(2): "
        "Operation not permitted)"]
    assert not output.exists()


def test_the_old_unit_name_fails_on_xrt(tmp_path, built):
    """The driver made to open ``kernel:kernel_1``, as before: XRT matches no unit."""
    _, xclbin, env = built
    old = "import host.xrt\nhost.xrt.unit_open_name = lambda kernel, unit: f'{kernel}:{unit}'\n"
    result, _ = sketch_through_xrt(tmp_path, xclbin, env, prelude=old)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {xclbin}: XRT cannot open compute unit jacc_sketch:jacc_sketch_1 exclusively "
        "(XRT: No compute units matching 'jacc_sketch:jacc_sketch_1')")


@pytest.fixture(scope="module")
def xrt_outcomes(built):
    """The probe sequence on XRT's noop device (runs included: they cost nothing there)."""
    _, xclbin, env = built
    result = subprocess.run([sys.executable, "-m", "tests.xrt_probes", str(xclbin), "--runs"],
                            capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_xrt_names_units_as_the_rules_say(xrt_outcomes):
    """The rules the stand-in holds, seen on XRT itself (not through the stand-in)."""
    assert xrt_outcomes["unit-names/checksum:checksum_1"] == {
        "result": "NULL", "errno": None,
        "said": ["No compute units matching 'checksum:checksum_1'"]}
    assert xrt_outcomes["unit-names/checksum:{checksum_1}"]["result"] == "handle"
    assert xrt_outcomes["register-one-unit/read"]["said"] == [
        "Cannot read or write kernel with multiple compute units"]
    assert xrt_outcomes["kernel-name/nokernel:{x}"]["errno"] == "EINVAL"


def test_the_stand_in_answers_as_xrt_s_noop_device(built, xrt_outcomes, xrt_stand_in):
    directory, _, _ = built
    runs = bool(available_simulators())
    ours = probe(xrt_stand_in, str(directory), runs)
    compared = [key for key in xrt_outcomes if key not in NOOP_ONLY
                and (runs or key not in RUN_KEYS and not key.startswith("run/arg"))]
    assert len(compared) > 40
    assert {key: ours[key] for key in compared} == {key: xrt_outcomes[key] for key in compared}


#: xrt.ini settings probed (tests/xrt_probes.py, probe_settings), and the outcomes compared
#: (with rw_shared, the in-range read reaches the device: the noop device refuses it, the
#: stand-in's simulation would answer)
SETTINGS = {
    "default": ("", None),
    "rw_shared": ("rw_shared = true", {"register-shared/read 0x10"}),
    "log to a file": ('runtime_log = "{log}"', None),
    "log to nothing": ("runtime_log = null", None),
}


@pytest.mark.parametrize("name", SETTINGS)
def test_xrt_ini_decides_register_access_and_messages_as_the_rules_say(built, tmp_path,
                                                                       monkeypatch, name):
    """Rules register-shared and message-route on XRT itself and on the stand-in: a unit opened
    shared refuses register access unless Runtime.rw_shared; a message sent to a file or to
    nothing by Runtime.runtime_log is not on standard error."""
    directory, xclbin, env = built
    setting, skipped = SETTINGS[name]
    log = tmp_path / "xrt.log"
    ini = tmp_path / "xrt.ini"
    ini.write_text("[Runtime]\n" + setting.format(log=log) + "\n")
    result = subprocess.run([sys.executable, "-m", "tests.xrt_probes", str(xclbin), "--settings"],
                            capture_output=True, text=True, env={**env, "XRT_INI_PATH": str(ini)},
                            cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    xrt = json.loads(result.stdout)
    shared = ["Cannot read or write kernel with shared access"]
    routed = name.startswith("log to")
    if name == "rw_shared":
        assert xrt["register-shared/read 0x10"]["said"] != shared   # on to the device
    elif not routed:
        assert xrt["register-shared/read 0x10"]["said"] == shared
    assert xrt["register-shared/read 0x10"]["result"] == -1
    assert (xrt["message-route/no unit"]["said"] == []) == routed
    if name == "log to a file":
        assert "ERROR: No compute units matching 'checksum:checksum_1'" in log.read_text()
        log.unlink()
    monkeypatch.setenv("XRT_INI_PATH", str(ini))
    from sim import xrt_sim
    api = xrt_sim.XrtStandIn()
    try:
        ours = probe_settings(api, str(directory))
    finally:
        api.release()
    compared = [key for key in xrt if key not in (skipped or ())]
    assert {key: ours[key] for key in compared} == {key: xrt[key] for key in compared}
    if name == "log to a file":
        assert "ERROR: No compute units matching 'checksum:checksum_1'" in log.read_text()
