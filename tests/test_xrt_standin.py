"""The XRT C API stand-in (sim/xrt_sim.py) and the card driver on it (host.xrt.XrtDevice).

* The stand-in's rules: one test per rule of tests/data/xrt_rules.json (which names the XRT
  source of each, per release tag; docs/kernel_interface.md shows them as a table), each
  checking XRT's result, message and errno; tests/test_xrt_noop.py runs many of the same calls
  on XRT's own noop device and compares.
* The library's surface: exactly the functions of host.xrt_binding.PROTOTYPES, ctypes' argument
  checks; buffer objects with host and device memory that lose their device memory on
  xrtBOFree; a run keeps only the device addresses of its buffers.
* The driver: the compute units of the xclbin's IP_LAYOUT opened by XRT's name form, none
  probed; a unit that cannot be opened is an error naming it and XRT's message; results equal the
  kernel's model; a clean start after any failed call; a run that does not complete (timeout,
  ABORT, ERROR, NORESPONSE) keeps its buffers and makes the device unusable with one line saying
  to reset the card; both units of an nk=2 build used; the units and the device closed at the
  end; the wait leaves the GIL to other threads. Kernel runs use the ``checksum`` example kernel
  (copy + checksum record), simulated from its hw.build Verilog.
"""

import ctypes
import errno
import json
import os
import re
import subprocess
import sys
import threading
import time
from ctypes import byref, c_ubyte, c_uint32, c_void_p

import pytest

from host.calls import DeviceError, KernelError, Output
from host.xrt import XrtDevice
from host.xrt_binding import XrtConsole
from hw.kernels.checksum import ChecksumParams, checksum_model
from sim import xrt_sim
from sim.runner import REPO_ROOT, available_simulators
from tests.xrt_sources import DEBIAN_TAG, RULE_TAGS

needs_simulator = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")
RULES = json.loads((REPO_ROOT / "tests" / "data" / "xrt_rules.json").read_text())["rules"]
#: an errno no call here sets: still there after a call means the call left errno untouched
UNTOUCHED = errno.EDOM


def linked_build(out, config: str, *parameters: str):
    """A hw.build output directory of the checksum kernel linked as ``config`` says."""
    (out.parent / "link.toml").write_text('kernels = ["checksum"]\n' + config)
    result = subprocess.run([sys.executable, "-m", "hw.build", "--no-run", "-o", str(out),
                             "--config", str(out.parent / "link.toml"), *parameters],
                            cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def checksum_dir(tmp_path_factory):
    """The checksum kernel with its two ports in two banks of one SLR (F1's SLR1: DDR[0] and
    DDR[2]), so a buffer in the other port's bank is an AXI error."""
    return linked_build(tmp_path_factory.mktemp("hw") / "checksum",
                        '[banks.checksum]\ngmem0 = "DDR[0]"\ngmem1 = "DDR[2]"\n')


@pytest.fixture(scope="module")
def narrow_checksum_dir(tmp_path_factory):
    """The checksum kernel of checksum_dir's memory topology but another binary (a 256-bit bus):
    another xclbin UUID, the same MEM_TOPOLOGY."""
    return linked_build(tmp_path_factory.mktemp("hw") / "narrow",
                        '[banks.checksum]\ngmem0 = "DDR[0]"\ngmem1 = "DDR[2]"\n',
                        "-Pchecksum.data_width=256")


@pytest.fixture(scope="module")
def two_unit_dir(tmp_path_factory):
    """The checksum kernel linked with two compute units (nk=checksum:2)."""
    return linked_build(tmp_path_factory.mktemp("hw") / "checksum2",
                        "[compute_units]\nchecksum = 2\n")


def checksum_call(data: bytes) -> dict:
    return {"src": data, "n_bytes": len(data), "dst": Output(len(data)), "res": Output(64)}


def loaded(api, directory):
    device = api.xrtDeviceOpen(0)
    assert api.xrtDeviceLoadXclbinFile(device, os.fsencode(directory)) == 0
    uuid = (c_ubyte * 16)()
    assert api.xrtDeviceGetXclbinUUID(device, uuid) == 0
    return device, uuid


def outcome(api, function: str, *args):
    """(result, errno after the call or None if untouched, XRT's messages) of one call."""
    console = XrtConsole()
    ctypes.set_errno(UNTOUCHED)
    result = console.call(getattr(api, function), *args)
    code = ctypes.get_errno()
    return result, None if code == UNTOUCHED else errno.errorcode.get(code, code), console.said


def open_unit(api, device, uuid, name: str):
    return outcome(api, "xrtPLKernelOpenExclusive", device, uuid, name.encode())


# -- the stand-in's rules ---------------------------------------------------------------------

def test_every_rule_has_its_test_its_xrt_sources_and_its_row_in_the_docs():
    """Each rule's sources are found at Debian's tag (the XRT the tests run) in the recorded
    table, each names a test of this module, each rule the noop device shows is in the probe
    sequence (tests/xrt_probes.py, whose every step also compares messages and errno), and
    docs/kernel_interface.md's table lists the rules with the releases the recorded table gives
    (so it cannot go stale)."""
    probes = (REPO_ROOT / "tests" / "xrt_probes.py").read_text()
    docs = (REPO_ROOT / "docs" / "kernel_interface.md").read_text()
    table = docs[docs.index("**The stand-in's rules.**"):]
    table = table[:table.index("\n\n", table.index("| rule |"))]
    rows = dict(re.findall(r"^\| `([a-z-]+)` \|.*\| ([0-9.,– ]+) \|$", table, flags=re.M))
    assert set(rows) == {rule["id"] for rule in RULES}
    for rule in RULES:
        assert callable(globals().get(rule["test"])), rule["id"]
        holds = [tag for tag in RULE_TAGS
                 if all(source["found"][tag] for source in rule["sources"])]
        assert DEBIAN_TAG in holds, rule["id"]
        assert rows[rule["id"]] == release_span(holds), rule["id"]
        if rule["noop"] is True:
            assert f'"{rule["id"]}/' in probes, rule["id"]


def release_span(tags) -> str:
    """``2.12–2.20``: the minor versions of ``tags``, runs joined by an en dash."""
    minors = sorted({int(tag.split(".")[2]) for tag in tags})
    runs, start = [], minors[0]
    for previous, current in zip(minors, minors[1:] + [None]):
        if current != previous + 1:
            runs.append(f"2.{start}" if start == previous else f"2.{start}–2.{previous}")
            start = current
    return ", ".join(runs)


def test_rule_unit_names(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    assert xrt_sim.unit_name_pattern("checksum:{checksum_1,checksum_2}") == \
        "^(checksum):((checksum_1)|(checksum_2))$"
    assert xrt_sim.unit_name_pattern("checksum:checksum_1") == "^(checksum:checksum_1):((.*))$"
    for name in ("checksum:checksum_1", "checksum:{checksum_3}", "checksum:{checksum}"):
        assert open_unit(xrt_stand_in, device, uuid, name) == \
            (None, None, [f"No compute units matching '{name}'"])
    opened = {}
    for name in ("checksum:{checksum_2}", "checksum:{checksum_1,checksum_2}", "checksum"):
        handle, code, said = open_unit(xrt_stand_in, device, uuid, name)
        assert handle and code is None and said == []
        opened[name] = [c.unit.name for c in xrt_stand_in._get(handle, xrt_sim._Kernel).contexts]
    assert opened == {"checksum:{checksum_2}": ["checksum_2"],
                      "checksum:{checksum_1,checksum_2}": ["checksum_1", "checksum_2"],
                      "checksum": ["checksum_1", "checksum_2"]}


def test_rule_kernel_name(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    assert open_unit(xrt_stand_in, device, uuid, "motif:{motif_1}") == \
        (None, "EINVAL", ["No such kernel 'motif': Invalid argument"])


def test_rule_xclbin_uuid(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    other = (c_ubyte * 16)(*bytes(uuid)[::-1])
    assert open_unit(xrt_stand_in, device, other, "checksum:{checksum_1}") == \
        (None, "EINVAL", ["xclbin id mismatch: Invalid argument"])
    handle, code, said = open_unit(xrt_stand_in, device, (c_ubyte * 16)(), "checksum:{checksum_1}")
    assert handle and said == []       # a null UUID names the loaded xclbin


def test_rule_unit_contexts(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    first, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    second, _, said = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    assert first and second and first != second and said == []
    contexts = xrt_stand_in._device.contexts
    assert list(contexts) == ["checksum:checksum_1"]
    assert contexts["checksum:checksum_1"].references == 2
    assert xrt_stand_in.xrtKernelClose(first) == 0
    assert list(contexts) == ["checksum:checksum_1"]      # the other handle keeps it
    assert xrt_stand_in.xrtKernelClose(second) == 0
    assert contexts == {}
    xrt_stand_in.held_elsewhere.add("checksum:checksum_2")
    busy = (None, None, ["failed to open ip context: Device or resource busy"])
    assert open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_2}") == busy
    assert open_unit(xrt_stand_in, device, uuid, "checksum") == busy
    assert contexts == {}


def test_rule_register_one_unit(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    both, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum")
    refused = (-1, None, ["Cannot read or write kernel with multiple compute units"])
    assert outcome(xrt_stand_in, "xrtKernelReadRegister", both, 0x10, byref(c_uint32())) == refused
    assert outcome(xrt_stand_in, "xrtKernelWriteRegister", both, 0x10, 1) == refused


def test_rule_register_range(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    assert xrt_stand_in._device.image.kernels["checksum"].control_range == 0x1000
    refused = (-1, None, ["Cannot read or write outside kernel register space"])
    assert outcome(xrt_stand_in, "xrtKernelReadRegister", one, 0x1000, byref(c_uint32())) == \
        refused
    assert outcome(xrt_stand_in, "xrtKernelWriteRegister", one, 0xFFD, 0) == refused


def test_rule_register_alignment(xrt_stand_in, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    second, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_2}")
    assert outcome(xrt_stand_in, "xrtKernelReadRegister", second, 0x31, byref(c_uint32())) == \
        (-1, None, ["xclRegRW: invalid CU offset: 49", "failed to read ip(1): Invalid argument"])
    assert outcome(xrt_stand_in, "xrtKernelWriteRegister", second, 0x12, 0)[2][-1] == \
        "failed to write ip(1): Invalid argument"


def test_rule_group_id(xrt_stand_in, checksum_dir):
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    assert xrt_stand_in._device.image.mems == ["DDR[0]", "DDR[2]"]
    groups = [outcome(xrt_stand_in, "xrtKernelArgGroupId", one, index) for index in range(5)]
    assert groups == [(0, None, []), (-1, None, []), (1, None, []), (1, None, []),
                      (-1, None, ["vector::_M_range_check: __n (which is 4) >= this->size() "
                                  "(which is 4)"])]


def test_rule_set_arg_index(xrt_stand_in, checksum_dir):
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    run = xrt_stand_in.xrtRunOpen(one)
    assert outcome(xrt_stand_in, "xrtRunSetArg", run, 4, c_uint32(1)) == \
        (-1, None, ["vector::_M_range_check: __n (which is 4) >= this->size() (which is 4)"])
    bo = xrt_stand_in.xrtBOAlloc(device, 4096, 0, 0)
    no_handle = (-1, "EINVAL", ["No such handle: Invalid argument"])
    # a handle cut to 32 bits is no handle XRT knows, nor is a freed one
    assert outcome(xrt_stand_in, "xrtRunSetArg", run, 0, c_uint32(bo & 0xFFFF_FFFF)) == no_handle
    assert xrt_stand_in.xrtRunSetArg(run, 0, c_void_p(bo)) == 0
    assert xrt_stand_in.xrtBOFree(bo) == 0
    assert outcome(xrt_stand_in, "xrtRunSetArg", run, 0, c_void_p(bo)) == no_handle


def test_rule_handles(xrt_stand_in, checksum_dir):
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    no_handle = ["No such handle: Invalid argument"]
    bo = xrt_stand_in.xrtBOAlloc(device, 4096, 0, 0)
    assert xrt_stand_in.xrtBOFree(bo) == 0
    assert outcome(xrt_stand_in, "xrtBOFree", bo) == (-1, "EINVAL", no_handle)
    assert outcome(xrt_stand_in, "xrtBOAddress", bo) == ((1 << 64) - 1, "EINVAL", no_handle)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    run = xrt_stand_in.xrtRunOpen(one)
    assert xrt_stand_in.xrtRunClose(run) == 0
    assert outcome(xrt_stand_in, "xrtRunWaitFor", run, 0) == (6, "EINVAL", no_handle)  # ABORT
    assert outcome(xrt_stand_in, "xrtRunClose", run) == (-1, "EINVAL", no_handle)
    assert xrt_stand_in.xrtKernelClose(one) == 0
    assert outcome(xrt_stand_in, "xrtKernelClose", one) == (-1, "EINVAL", no_handle)
    assert outcome(xrt_stand_in, "xrtRunOpen", one) == (None, "EINVAL", no_handle)
    assert xrt_stand_in.xrtDeviceClose(device) == 0
    assert outcome(xrt_stand_in, "xrtDeviceClose", device) == (-1, "EINVAL", no_handle)


def test_rule_bo_range(xrt_stand_in, checksum_dir):
    device, _ = loaded(xrt_stand_in, checksum_dir)
    bo = xrt_stand_in.xrtBOAlloc(device, 5000, 0, 0)
    data = ctypes.create_string_buffer(8192)
    assert outcome(xrt_stand_in, "xrtBOWrite", bo, data, 10, 4995) == \
        (-1, "EINVAL", ["attempting to write past buffer size: Invalid argument"])
    assert outcome(xrt_stand_in, "xrtBORead", bo, data, 5001, 0) == \
        (-1, "EINVAL", ["attempting to read past buffer size: Invalid argument"])
    assert outcome(xrt_stand_in, "xrtBOSync", bo, 0, 4096, 4096) == \
        (-1, None, ["unable to sync BO: Invalid argument"])
    assert outcome(xrt_stand_in, "xrtBOSync", bo, 1, 5000, 0) == (0, None, [])


def test_rule_bo_alloc(xrt_stand_in, checksum_dir):
    device, _ = loaded(xrt_stand_in, checksum_dir)
    assert sorted(xrt_stand_in._device.banks) == [0, 1]
    refused = (None, None, ["std::bad_alloc"])
    assert outcome(xrt_stand_in, "xrtBOAlloc", device, 4096, 0, 2) == refused  # no bank 2
    assert outcome(xrt_stand_in, "xrtBOAlloc", device, xrt_sim.BANK_BYTES + 1, 0, 0) == refused
    with pytest.raises(xrt_sim.StandInLimitation, match="flags=0x80000000"):
        xrt_stand_in.xrtBOAlloc(device, 4096, 1 << 31, 0)     # modelled: normal buffers only


@needs_simulator
def test_rule_start_running(xrt_stand_in, checksum_dir):
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    run = checksum_run(xrt_stand_in, device, one, b"x" * 64)
    assert xrt_stand_in.xrtRunStart(run) == 0
    refused = (-1, None, ["bad command state, can't launch"])
    assert outcome(xrt_stand_in, "xrtRunStart", run) == refused
    assert xrt_stand_in.xrtRunWaitFor(run, 100) == xrt_sim.COMPLETED
    assert xrt_stand_in.xrtRunStart(run) == 0         # seen to end: it may start again
    assert xrt_stand_in.xrtRunWaitFor(run, 100) == xrt_sim.COMPLETED


def checksum_run(api, device, kernel, data: bytes):
    """A run of the checksum kernel on ``data`` with its arguments set."""
    src, dst, res = (api.xrtBOAlloc(device, 4096, 0, api.xrtKernelArgGroupId(kernel, index))
                     for index in (0, 2, 3))
    api.xrtBOWrite(src, data, len(data), 0)
    api.xrtBOSync(src, 0, len(data), 0)
    run = api.xrtRunOpen(kernel)
    for index, value in enumerate((c_void_p(src), c_uint32(len(data)), c_void_p(dst),
                                   c_void_p(res))):
        assert api.xrtRunSetArg(run, index, value) == 0
    return run


@needs_simulator
def test_rule_wait(xrt_stand_in, checksum_dir, monkeypatch):
    """A wait of 1 ms (here 8 cycles) returns TIMEOUT and the run goes on; a wait of 0 is not a
    short default: it sees the same run to its end."""
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    run = checksum_run(xrt_stand_in, device, one, os.urandom(4000))
    monkeypatch.setattr(xrt_sim, "KERNEL_CLOCK_HZ", 8000)      # 8 cycles a millisecond
    monkeypatch.setattr(xrt_sim, "_WAIT_STEP_CYCLES", 16)      # a wait of 0: 16 cycles a step
    assert xrt_stand_in.xrtRunStart(run) == 0
    assert xrt_stand_in.xrtRunWaitFor(run, 1) == xrt_sim.TIMEOUT
    assert xrt_stand_in.xrtRunState(run) == xrt_sim.SUBMITTED   # still running
    assert xrt_stand_in.xrtRunWaitFor(run, 0) == xrt_sim.COMPLETED
    assert xrt_stand_in.xrtRunState(run) == xrt_sim.COMPLETED


def test_rule_messages(xrt_stand_in, capfd):
    """XRT's banner before its first message, then one ``[XRT] ERROR:`` line per failure;
    errno set for an xrt_core::error only."""
    ctypes.set_errno(UNTOUCHED)
    assert xrt_stand_in.xrtDeviceOpen(3) is None             # a std::runtime_error
    assert ctypes.get_errno() == UNTOUCHED
    assert xrt_stand_in.xrtDeviceClose(12345) == -1           # an xrt_core::error
    assert ctypes.get_errno() == errno.EINVAL
    lines = capfd.readouterr().err.splitlines()
    assert lines[0] == "XRT build version: the XRT stand-in (sim/xrt_sim.py)"
    assert lines[-2:] == ["[XRT] ERROR: Could not open device with index '3'",
                          "[XRT] ERROR: No such handle: Invalid argument"]
    assert [line.split(":")[0] for line in lines[1:-2]] == \
        ["Build hash", "Build date", "Git branch", "PID", "UID", "[stand-in]", "HOST", "EXE"]
    xrt_stand_in.xrtDeviceOpen(3)
    assert capfd.readouterr().err == "[XRT] ERROR: Could not open device with index '3'\n"


def test_rule_reload(xrt_stand_in, checksum_dir, two_unit_dir):
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    one, _, _ = open_unit(xrt_stand_in, device, uuid, "checksum:{checksum_1}")
    bo = xrt_stand_in.xrtBOAlloc(device, 4096, 0, 0)
    assert outcome(xrt_stand_in, "xrtDeviceLoadXclbinFile", device,
                   os.fsencode(two_unit_dir)) == (0, None, [])   # the same: nothing changes
    assert xrt_stand_in._get(one, xrt_sim._Kernel) and xrt_stand_in.xrtBOAddress(bo) != -1
    assert outcome(xrt_stand_in, "xrtDeviceLoadXclbinFile", device, os.fsencode(checksum_dir)) \
        == (-1, None, ["Xclbin on card is in use, can't change.",
                       "See dmesg log for details. err = -16",
                       "failed to load xclbin: Device or resource busy"])
    assert xrt_stand_in.xrtKernelClose(one) == 0
    assert xrt_stand_in.xrtBOFree(bo) == 0
    assert xrt_stand_in.xrtDeviceLoadXclbinFile(device, os.fsencode(checksum_dir)) == 0
    assert xrt_stand_in._device.image.path == checksum_dir


def test_rule_reload_buffers(xrt_stand_in, checksum_dir, narrow_checksum_dir, two_unit_dir):
    """No unit open, a buffer allocated: refused with EPERM (not EBUSY, as before issue 51),
    unless the card keeps its memory and the new xclbin's memory topology is the same."""
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    bo = xrt_stand_in.xrtBOAlloc(device, 4096, 0, 0)
    refused = (-1, None, ["See dmesg log for details. err = -1",
                          "failed to load xclbin: Operation not permitted"])
    assert outcome(xrt_stand_in, "xrtDeviceLoadXclbinFile", device,
                   os.fsencode(narrow_checksum_dir)) == refused
    xrt_stand_in.retains_memory = True
    assert xrt_sim.BuildImage(narrow_checksum_dir).mems == xrt_stand_in._device.image.mems
    assert outcome(xrt_stand_in, "xrtDeviceLoadXclbinFile", device,
                   os.fsencode(narrow_checksum_dir)) == (0, None, [])
    assert xrt_stand_in._device.image.path == narrow_checksum_dir
    assert xrt_stand_in.xrtBOAddress(bo) == xrt_sim.BANK_BASE     # the buffer is still there
    # another memory topology (two_unit_dir's banks): refused although memory is kept
    assert outcome(xrt_stand_in, "xrtDeviceLoadXclbinFile", device,
                   os.fsencode(two_unit_dir)) == refused
    assert xrt_stand_in.xrtBOFree(bo) == 0
    assert xrt_stand_in.xrtDeviceLoadXclbinFile(device, os.fsencode(two_unit_dir)) == 0


def test_rule_register_shared(xrt_stand_in, two_unit_dir, tmp_path, monkeypatch):
    """A unit opened shared (xrtPLKernelOpen) refuses register access; with Runtime.rw_shared
    = true in xrt.ini the access goes on to the next check (the range, here)."""
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    shared, _, _ = outcome(xrt_stand_in, "xrtPLKernelOpen", device, uuid,
                           b"checksum:{checksum_1}")
    assert shared
    word = c_uint32()
    refused = (-1, None, ["Cannot read or write kernel with shared access"])
    assert outcome(xrt_stand_in, "xrtKernelReadRegister", shared, 0x10, byref(word)) == refused
    assert outcome(xrt_stand_in, "xrtKernelWriteRegister", shared, 0x10, 1) == refused
    with pytest.raises(xrt_sim.StandInLimitation, match="both shared and exclusively"):
        xrt_stand_in.xrtPLKernelOpenExclusive(device, uuid, b"checksum:{checksum_1}")
    ini = tmp_path / "xrt.ini"
    ini.write_text("[Runtime]\nrw_shared = true\n")
    monkeypatch.setenv("XRT_INI_PATH", str(ini))
    permitted = xrt_sim.XrtStandIn()     # XRT reads xrt.ini once, when first used
    try:
        device, uuid = loaded(permitted, two_unit_dir)
        shared = permitted.xrtPLKernelOpen(device, uuid, b"checksum:{checksum_1}")
        assert outcome(permitted, "xrtKernelReadRegister", shared, 0x1000, byref(word)) == \
            (-1, None, ["Cannot read or write outside kernel register space"])
    finally:
        permitted.release()


@pytest.mark.parametrize("setting, route", [
    ("runtime_log = syslog", "the system log (Runtime.runtime_log = syslog in {ini})"),
    ("runtime_log = null", "nowhere (Runtime.runtime_log = null in {ini})"),
    ('runtime_log = "{log}"', "{log} (Runtime.runtime_log in {ini})"),
    ("verbosity = 2", "nowhere (Runtime.verbosity = 2 in {ini} drops errors)"),
    ("runtime_log = console", None),
])
def test_rule_message_route(tmp_path, monkeypatch, capfd, setting, route):
    """Where xrt.ini sends XRT's messages, none reaches standard error, and the driver's line
    says where they went instead of "XRT printed no message"."""
    ini, log = tmp_path / "xrt.ini", tmp_path / "xrt.log"
    ini.write_text("[Runtime]\n" + setting.format(log=log) + "\n")
    monkeypatch.setenv("XRT_INI_PATH", str(ini))
    api = xrt_sim.XrtStandIn()
    try:
        capfd.readouterr()
        console = XrtConsole()
        assert console.call(api.xrtDeviceOpen, 3) is None
        said = "Could not open device with index '3'"
        if route is None:
            assert console.said == [said] and console.reason() == f"XRT: {said}"
            return
        assert console.said == [] and capfd.readouterr().err == ""
        assert console.reason() == "XRT's messages go to " + route.format(ini=ini, log=log)
        if log.exists():    # the file dispatch: XRT's banner, then the message
            text = log.read_text()
            assert text.startswith("XRT build version: ") and f"ERROR: {said}\n" in text
        else:
            assert api.logged_elsewhere == [said]
        with pytest.raises(DeviceError, match=re.escape(
                f"no XRT device 3: XRT could not open it (XRT's messages go to "
                f"{route.format(ini=ini, log=log)})")):
            XrtDevice(str(tmp_path), device_index=3, api=api)
    finally:
        api.release()


def test_rule_device_index(xrt_stand_in):
    assert outcome(xrt_stand_in, "xrtDeviceOpen", 1) == \
        (None, None, ["Could not open device with index '1'"])


# -- the library's surface --------------------------------------------------------------------

def test_only_the_declared_functions_exist_and_check_their_arguments(xrt_stand_in):
    with pytest.raises(AttributeError, match="xrtRunAbort: not a function"):
        xrt_stand_in.xrtRunAbort
    with pytest.raises(AttributeError):
        xrt_stand_in.read_register                       # pyxrt's dropped method is nothing here
    with pytest.raises(TypeError, match="takes 1 arguments"):
        xrt_stand_in.xrtDeviceOpen()
    with pytest.raises(ctypes.ArgumentError, match="argument 2"):
        xrt_stand_in.xrtDeviceLoadXclbinFile(1, "a str is not a char *")   # ctypes wants bytes
    with pytest.raises(ctypes.ArgumentError, match="argument 3"):
        xrt_stand_in.xrtRunSetArg(1, 0, "neither a handle nor a number")
    assert xrt_stand_in.xrtDeviceOpen(0) > 1 << 32      # a handle cut to 32 bits is unknown


def test_buffers_have_host_and_device_memory_and_free_poisons(xrt_stand_in, checksum_dir):
    device, _ = loaded(xrt_stand_in, checksum_dir)
    group = max(xrt_stand_in._device.banks)              # a bank the link plan connects
    first = xrt_stand_in.xrtBOAlloc(device, 5000, 0, group)
    second = xrt_stand_in.xrtBOAlloc(device, 100, 0, group)
    address = xrt_stand_in.xrtBOAddress(first)
    assert address % 4096 == 0 and address >= xrt_sim.BANK_BASE + group * xrt_sim.BANK_STRIDE
    assert xrt_stand_in.xrtBOAddress(second) >= address + 5000
    bank = xrt_stand_in._device.banks[group]
    at = address - bank.base
    assert xrt_stand_in.xrtBOWrite(first, b"abcdefgh", 8, 0) == 0
    assert bank.memory[at:at + 8] != b"abcdefgh"          # not on the device before a sync
    assert xrt_stand_in.xrtBOSync(first, 0, 8, 0) == 0
    assert bank.memory[at:at + 8] == b"abcdefgh"
    back = ctypes.create_string_buffer(8)
    assert xrt_stand_in.xrtBOWrite(first, b"ABCDEFGH", 8, 0) == 0
    assert xrt_stand_in.xrtBOSync(first, 1, 8, 0) == 0
    assert xrt_stand_in.xrtBORead(first, back, 8, 0) == 0
    assert back.raw == b"abcdefgh"                           # synced back from the device
    assert xrt_stand_in.xrtBOFree(first) == 0
    assert bank.memory[at:at + 8] == bytes([xrt_sim.POISON]) * 8
    reused = xrt_stand_in.xrtBOAlloc(device, 100, 0, group)
    assert xrt_stand_in.xrtBOAddress(reused) == address      # the freed space is reused


def test_the_binary_s_container_is_what_the_driver_reads(xrt_stand_in, two_unit_dir):
    from host.xclbin import read_units
    device, uuid = loaded(xrt_stand_in, two_unit_dir)
    read = read_units(xrt_stand_in.xclbin_bytes(os.fsencode(two_unit_dir)))
    assert read.uuid == bytes(uuid)
    assert read.units == {"checksum": ["checksum_1", "checksum_2"]}


# -- runs -------------------------------------------------------------------------------------

@needs_simulator
def test_a_run_keeps_addresses_only_so_a_freed_input_is_garbage(xrt_stand_in, checksum_dir):
    """The lifetime bug of an earlier driver: a buffer freed after xrtRunSetArg but before the
    run ends is read as freed memory (the run kept its address only), and the checksum is
    wrong."""
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    kernel = xrt_stand_in.xrtPLKernelOpenExclusive(device, uuid, b"checksum:{checksum_1}")
    assert kernel
    data = os.urandom(256)
    results = {}
    for free_early in (False, True):
        run = checksum_run(xrt_stand_in, device, kernel, data)
        src = xrt_stand_in._get(run, xrt_sim._Run).values[0]
        if free_early:
            handle = next(h for h, thing in xrt_stand_in._handles.items()
                          if isinstance(thing, xrt_sim._Buffer) and thing.address == src)
            xrt_stand_in.xrtBOFree(handle)
        assert xrt_stand_in.xrtRunStart(run) == 0
        assert xrt_stand_in.xrtRunWaitFor(run, 100) == xrt_sim.COMPLETED
        res_address = xrt_stand_in._get(run, xrt_sim._Run).values[3]
        res = next(thing for thing in xrt_stand_in._handles.values()
                   if isinstance(thing, xrt_sim._Buffer) and thing.address == res_address)
        start = res.offset
        results[free_early] = bytes(res.bank.memory[start:start + 64])
        xrt_stand_in.xrtRunClose(run)
    assert results[False] == checksum_model(data)
    assert results[True] != checksum_model(data)


# -- the driver -------------------------------------------------------------------------------

def test_units_come_from_the_ip_layout_and_none_is_probed(xrt_stand_in, two_unit_dir, capfd,
                                                          monkeypatch):
    names = []
    real_open = xrt_stand_in.xrtPLKernelOpenExclusive

    def recording_open(device, uuid, name):
        names.append(name)
        return real_open(device, uuid, name)
    monkeypatch.setattr(xrt_stand_in, "xrtPLKernelOpenExclusive", recording_open, raising=False)
    device = XrtDevice(str(two_unit_dir), api=xrt_stand_in)
    assert device.xclbin_units == {"checksum": ["checksum_1", "checksum_2"]}
    assert [unit.name for unit in device.compute_units(ChecksumParams())] == \
        ["checksum:checksum_1", "checksum:checksum_2"]
    assert names == [b"checksum:{checksum_1}", b"checksum:{checksum_2}"]
    from kmerspec.kernels import jacc_sketch
    with pytest.raises(DeviceError) as missing:
        device.compute_units(jacc_sketch.Params())
    assert str(missing.value) == (f"kernel jacc_sketch is not in {two_unit_dir} (the compute "
                                  "units of its IP_LAYOUT: checksum:checksum_1, "
                                  "checksum:checksum_2)")
    assert names == [b"checksum:{checksum_1}", b"checksum:{checksum_2}"]   # nothing tried
    device.close()
    err = capfd.readouterr().err
    assert "[XRT]" not in err and "XRT build version" not in err


def test_a_unit_xrt_will_not_open_is_an_error_naming_it(xrt_stand_in, two_unit_dir, capfd):
    xrt_stand_in.held_elsewhere.add("checksum:checksum_2")
    device = XrtDevice(str(two_unit_dir), api=xrt_stand_in)
    with pytest.raises(DeviceError) as busy:
        device.compute_units(ChecksumParams())
    assert str(busy.value) == (f"{two_unit_dir}: XRT cannot open compute unit "
                               "checksum:checksum_2 exclusively (XRT: failed to open ip context: "
                               "Device or resource busy)")
    assert xrt_stand_in._device.contexts == {}          # checksum_1 closed again
    err = capfd.readouterr().err
    assert "[XRT]" not in err and "XRT build version" not in err   # quoted, not printed


def test_close_releases_the_units_and_the_device(xrt_stand_in, two_unit_dir):
    with XrtDevice(str(two_unit_dir), api=xrt_stand_in) as device:
        device.compute_units(ChecksumParams())
        assert len(xrt_stand_in._device.contexts) == 2
    assert xrt_stand_in._device.contexts == {}
    assert not [thing for thing in xrt_stand_in._handles.values()
                if isinstance(thing, (xrt_sim._Device, xrt_sim._Kernel))]


def test_a_binary_xrt_cannot_load_is_one_line_quoting_xrt(xrt_stand_in, tmp_path):
    with pytest.raises(DeviceError) as refused:
        XrtDevice(str(tmp_path), api=xrt_stand_in)
    assert str(refused.value) == (f"{tmp_path}: XRT cannot load it on device 0 (XRT: {tmp_path}: "
                                  "no kernel.xml in the directory or its kernels/*/; not a python "
                                  "-m hw.build output directory)")
    assert not [thing for thing in xrt_stand_in._handles.values()
                if isinstance(thing, xrt_sim._Device)]          # the device closed again


@needs_simulator
def test_xrt_device_runs_checks_identity_and_reports_itself(xrt_stand_in, checksum_dir, capfd,
                                                             monkeypatch):
    monkeypatch.setattr("host.xrt._reported", set())
    device = XrtDevice(str(checksum_dir), api=xrt_stand_in)
    for size in (777, 5000):
        data = os.urandom(size)
        result = device.run(ChecksumParams(), checksum_call(data))
        assert result.outputs == {"dst": data, "res": checksum_model(data)}
    with pytest.raises(DeviceError, match=r"^checksum: built with data_width=512, asked for 256$"):
        device.run(ChecksumParams(data_width=256), checksum_call(b"abc"))
    fresh = ChecksumParams().desc.status_map().fresh
    # a clean start before call 1
    assert xrt_stand_in.register_writes == [("checksum_1", fresh, 1)]
    XrtDevice(str(checksum_dir / "kernels" / "checksum"), api=xrt_stand_in).geometry
    assert capfd.readouterr().err.splitlines() == [     # said once per process
        "xrt: the XRT C API stand-in (sim/xrt_sim.py)"]


@needs_simulator
def test_a_clean_start_is_asked_after_a_failed_call(xrt_stand_in, checksum_dir, monkeypatch):
    """A call that ends in an error (here the source buffer in the bank of another port: the
    memory answers SLVERR, which the kernel reports in its ERROR register, the run completing as
    on a card) makes the next call of that unit start with FRESH = 1."""
    device = XrtDevice(str(checksum_dir), api=xrt_stand_in)
    data = os.urandom(300)
    device.run(ChecksumParams(), checksum_call(data))
    real_group = xrt_stand_in.xrtKernelArgGroupId
    monkeypatch.setattr(xrt_stand_in, "xrtKernelArgGroupId",
                        lambda kernel, index: real_group(kernel, 2 if index == 0 else index),
                        raising=False)
    with pytest.raises(KernelError, match="^checksum: the memory answered a read with an error"):
        device.run(ChecksumParams(), checksum_call(data))
    assert xrt_stand_in.bank_errors and xrt_stand_in.bank_errors[0][0] == "checksum_1"
    monkeypatch.setattr(xrt_stand_in, "xrtKernelArgGroupId", real_group, raising=False)
    fresh = ChecksumParams().desc.status_map().fresh
    assert xrt_stand_in.register_writes == [("checksum_1", fresh, 1)]
    assert device.run(ChecksumParams(), checksum_call(data)).outputs["res"] == \
        checksum_model(data)
    assert xrt_stand_in.register_writes == [("checksum_1", fresh, 1)] * 2


@needs_simulator
def test_a_timeout_makes_the_device_unusable_and_keeps_the_buffers(xrt_stand_in, checksum_dir,
                                                                   monkeypatch):
    device = XrtDevice(str(checksum_dir), api=xrt_stand_in)
    monkeypatch.setattr("host.xrt._ABANDONED", [])
    monkeypatch.setattr(xrt_sim, "KERNEL_CLOCK_HZ", 8000)     # 8 cycles a millisecond
    monkeypatch.setattr("host.xrt.timeout_ms", lambda *args: 1)
    message = r"^checksum: no ap_done within 1 ms on checksum:checksum_1; the compute unit may " \
              r"still be running: reset the card \(xbutil reset\) before using it again$"
    with pytest.raises(KernelError, match=message):
        device.run(ChecksumParams(), checksum_call(os.urandom(4000)))
    assert_abandoned_and_unusable(xrt_stand_in, device, message)


def assert_abandoned_and_unusable(api, device, message):
    from host import xrt
    (abandoned,) = xrt._ABANDONED
    assert len(abandoned.buffers) == 3 and all(buffer.handle for buffer in abandoned.buffers)
    # neither freed nor closed
    assert all(api._get(buffer.handle, xrt_sim._Buffer) for buffer in abandoned.buffers)
    assert api._get(abandoned.run, xrt_sim._Run)
    with pytest.raises(DeviceError, match=message):
        device.run(ChecksumParams(), checksum_call(b"abc"))
    device.close()
    # the run keeps its unit's context, as XRT's run object keeps its kernel
    assert list(api._device.contexts) == ["checksum:checksum_1"]


@needs_simulator
@pytest.mark.parametrize("state", ["ERROR", "ABORT", "NORESPONSE"])
def test_a_run_that_ends_otherwise_keeps_its_buffers_too(xrt_stand_in, checksum_dir, monkeypatch,
                                                         state):
    """XRT's C API has no abort, and a run in one of these states may still be using its
    buffers: they stay allocated, and the device is refused for the rest of the process."""
    from host.xrt_binding import ERT_CMD_STATE
    code = {name: number for number, name in ERT_CMD_STATE.items()}[state]
    device = XrtDevice(str(checksum_dir), api=xrt_stand_in)
    monkeypatch.setattr("host.xrt._ABANDONED", [])
    monkeypatch.setattr(xrt_stand_in, "xrtRunWaitFor", lambda run, timeout: code, raising=False)
    message = (rf"^checksum: the run on checksum:checksum_1 ended in state {state}; the compute "
               r"unit may still be running: reset the card \(xbutil reset\) before using it "
               r"again$")
    with pytest.raises(DeviceError, match=message):
        device.run(ChecksumParams(), checksum_call(os.urandom(400)))
    assert_abandoned_and_unusable(xrt_stand_in, device, message)


@needs_simulator
def test_two_compute_units_share_the_calls(xrt_stand_in, two_unit_dir):
    device = XrtDevice(str(two_unit_dir), api=xrt_stand_in)
    assert [unit.name for unit in device.compute_units(ChecksumParams())] == \
        ["checksum:checksum_1", "checksum:checksum_2"]
    inputs = [os.urandom(200 + 300 * i) for i in range(4)]
    results = device.run_many(ChecksumParams(), [checksum_call(data) for data in inputs])
    assert [r.outputs["res"] for r in results] == [checksum_model(data) for data in inputs]
    assert xrt_stand_in.started == {"checksum_1": 2, "checksum_2": 2}
    # each unit's ports in the banks the link plan gave that unit
    (plan,) = json.loads((two_unit_dir / "build.json").read_text())["xclbins"].values()
    assert [unit.banks for unit in xrt_stand_in._device.image.units] == \
        plan["connectivity"]["checksum"]["banks"]


@needs_simulator
def test_the_wait_leaves_the_gil_to_other_threads(xrt_stand_in, checksum_dir):
    device = XrtDevice(str(checksum_dir), api=xrt_stand_in)
    device.run(ChecksumParams(), checksum_call(b"warm up"))
    ticks, running = [], threading.Event()

    def count():
        while not running.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
    thread = threading.Thread(target=count)
    start = time.perf_counter()
    thread.start()
    device.run(ChecksumParams(), checksum_call(os.urandom(60_000)))
    end = time.perf_counter()
    running.set()
    thread.join()
    during = [t for t in ticks if start <= t <= end]
    assert end - start > 0.2 and len(during) > (end - start) / 0.01   # ticked all along


def test_xrt_console_keeps_xrt_s_failures_and_passes_the_rest_on(capfd):
    """What the driver quotes: XRT's ERROR lines of the call; XRT's banner dropped; another
    writer's output and XRT's warnings written on."""
    def noisy():
        os.write(2, xrt_sim.BANNER.format(pid=1, uid=0).encode() +
                 b"\rsketching 3/10[XRT] WARNING: a warning\n[XRT] ERROR: it failed\n"
                 b"[XRT] ERROR: twice\npartial")
        return -1
    console = XrtConsole()
    assert console.call(noisy) == -1
    assert console.said == ["it failed", "twice"]
    assert console.reason() == "XRT: it failed; twice"
    assert capfd.readouterr().err == "\rsketching 3/10[XRT] WARNING: a warning\npartial"
    assert console.call(lambda: 0) == 0 and console.reason() == "XRT printed no message"
