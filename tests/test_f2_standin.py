"""The stand-in of AWS's FPGA SDK (sim/f2_sim.py) and the F2 driver's checks of the slot on it.

* Its rules: one test per rule of tests/data/f2_rules.json, whose source fragments are found in
  the aws-fpga checkout KSA_AWS_FPGA names (tests/test_f2_binding.py runs the rules that need no
  FPGA on AWS's library itself); only the tests of BAR4's data (write-burst and get-address,
  pcis-timeout) start the CL's simulation.
* Its surface: exactly the functions of host.f2_binding.PROTOTYPES, ctypes' argument checks,
  a read-only pointer from fpga_pci_get_address.
* The driver before any call: a slot without an AFI, an AFI that is not this project's (PCI
  IDs), a CL directory of another layout version; each one line naming what to do.
"""

import ctypes
import errno
import json
import re
import signal
import subprocess
import sys
from ctypes import byref, c_int, c_uint32, c_void_p

import pytest

from host.calls import DeviceError
from host.f2 import F2Device
from host.f2_binding import FpgaMgmtImageInfo
from kmerspec import f2 as cl
from sim import f2_sim
from sim.runner import REPO_ROOT, available_simulators
from tests.f2_build import aws_fpga, needs_aws

RULES = json.loads((REPO_ROOT / "tests" / "data" / "f2_rules.json").read_text())["rules"]
EINVAL, ENOENT = -errno.EINVAL, -errno.ENOENT


def normalized(text: str) -> str:
    return " ".join(text.split())


@needs_aws
def test_every_rule_is_in_the_sources_of_the_release():
    assert (aws_fpga() / "release_version.txt").read_text().strip() == "RELEASE_VERSION=2.0.2"
    tests = {name for name in globals() if name.startswith("test_rule_")}
    for rule in RULES:
        assert rule["test"] in tests, rule["id"]
        for source in rule["sources"]:
            text = normalized((aws_fpga() / source["path"]).read_text(errors="replace"))
            for fragment in source["fragments"]:
                assert normalized(fragment) in text, (rule["id"], source["path"], fragment)


@pytest.fixture
def stand_in(f2_cl_dir):
    fresh = f2_sim.F2StandIn(f2_cl_dir)
    yield fresh
    fresh.release()


def test_rule_attach_ranges(stand_in):
    handle = c_int(-1)
    assert stand_in.fpga_pci_attach(0, 2, 0, 0, byref(handle)) == EINVAL
    assert stand_in.fpga_pci_attach(0, -1, 0, 0, byref(handle)) == EINVAL
    assert stand_in.fpga_pci_attach(0, 0, 5, 0, byref(handle)) == EINVAL
    assert handle.value == -1 and stand_in._simulation is None


def test_rule_slot_ranges(stand_in):
    info, handle = FpgaMgmtImageInfo(), c_int(-1)
    assert stand_in.fpga_mgmt_init() == 0
    assert stand_in.fpga_mgmt_describe_local_image(8, byref(info), 0) == EINVAL
    assert stand_in.fpga_mgmt_describe_local_image(-1, byref(info), 0) == EINVAL
    assert stand_in.fpga_mgmt_describe_local_image(1, byref(info), 0) == ENOENT
    assert stand_in.fpga_pci_attach(8, 0, 0, 0, byref(handle)) == EINVAL
    assert stand_in.fpga_pci_attach(3, 0, 4, 1, byref(handle)) == ENOENT


def test_rule_bar_range(stand_in):
    """(and bar-sizes) Past the end of BAR0 (64 MiB) or BAR4 (128 GiB), or a handle not
    attached: -EINVAL, and nothing reaches the CL (the simulation does not even start)."""
    bar0, bar4, word = c_int(-1), c_int(-1), c_uint32()
    assert stand_in.fpga_pci_attach(0, 0, 0, 0, byref(bar0)) == 0
    assert stand_in.fpga_pci_attach(0, 0, 4, 1, byref(bar4)) == 0
    assert stand_in.fpga_pci_peek(bar0, (64 << 20) - 3, byref(word)) == EINVAL
    assert stand_in.fpga_pci_poke(bar0, 64 << 20, 1) == EINVAL
    data = (c_uint32 * 4)()
    assert stand_in.fpga_pci_write_burst(bar4, (128 << 30) - 12, data, 4) == EINVAL
    pointer = c_void_p()
    assert stand_in.fpga_pci_get_address(bar4, (128 << 30) - 4, 2, byref(pointer)) == EINVAL
    assert stand_in.fpga_pci_peek(bar4.value + 5, 0, byref(word)) == EINVAL
    assert stand_in._simulation is None and not stand_in.accesses


def test_rule_init_first(stand_in):
    info = FpgaMgmtImageInfo()
    assert stand_in.fpga_mgmt_describe_local_image(0, byref(info), 0) == 24
    assert stand_in.fpga_mgmt_init() == 0 and stand_in.fpga_pci_init() == 0
    assert stand_in.fpga_mgmt_describe_local_image(0, byref(info), 0) == 0


def test_rule_strerror(stand_in):
    assert stand_in.fpga_mgmt_strerror(EINVAL) == b"Invalid argument"
    assert stand_in.fpga_mgmt_strerror(24) == b"software-problem"


def test_rule_detach(stand_in):
    handle, word = c_int(-1), c_uint32()
    assert stand_in.fpga_pci_detach(3) == EINVAL
    assert stand_in.fpga_pci_attach(0, 0, 0, 0, byref(handle)) == 0
    assert stand_in.fpga_pci_detach(handle) == 0
    assert stand_in.fpga_pci_detach(handle) == EINVAL
    assert stand_in.fpga_pci_peek(handle, 0, byref(word)) == EINVAL


def test_rule_describe(stand_in):
    info = FpgaMgmtImageInfo()
    assert stand_in.fpga_mgmt_init() == 0
    assert stand_in.fpga_mgmt_describe_local_image(0, byref(info), 0) == 0
    ids = info.ids.afi_device_ids
    assert (info.status, info.slot_id) == (0, 0)
    assert re.fullmatch(r"agfi-sim-[0-9a-f]{17}", info.ids.afi_id.decode())
    assert (ids.vendor_id, ids.device_id, ids.svid, ids.ssid) == (
        cl.PCI_VENDOR_ID, cl.PCI_DEVICE_ID, cl.PCI_SUBSYSTEM_VENDOR_ID, cl.PCI_SUBSYSTEM_ID)
    assert info.spec.map[0].resource_size[4] == 128 << 30


def test_the_surface_is_the_declared_functions(stand_in):
    with pytest.raises(AttributeError, match="fpga_mgmt_load_local_image: not a function"):
        stand_in.fpga_mgmt_load_local_image
    with pytest.raises(TypeError, match="takes 3 arguments"):
        stand_in.fpga_mgmt_describe_local_image(0, None)
    with pytest.raises(ctypes.ArgumentError):
        stand_in.fpga_pci_poke(0, "0x10", 1)


@pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")
def test_rule_write_burst_and_get_address(stand_in):
    """Bytes written with fpga_pci_write_burst come back through fpga_pci_get_address's
    pointer, which is read-only (a write through it ends the process: run in a child)."""
    bar4 = c_int(-1)
    assert stand_in.fpga_pci_attach(0, 0, 4, 1, byref(bar4)) == 0
    data = bytes(range(256)) * 3
    words = (c_uint32 * (len(data) // 4)).from_buffer_copy(data)
    assert stand_in.fpga_pci_write_burst(bar4, 0x3000, words, len(words)) == 0
    pointer = c_void_p()
    assert stand_in.fpga_pci_get_address(bar4, 0x3000, len(words), byref(pointer)) == 0
    assert ctypes.string_at(pointer.value, len(data)) == data
    assert stand_in.accesses["pcis_write"] == 1 and stand_in.accesses["pcis_read"] == 1
    child = subprocess.run([sys.executable, "-c", WRITE_THROUGH], cwd=REPO_ROOT)
    assert child.returncode == -signal.SIGSEGV


@pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")
@pytest.mark.parametrize("limit", [None, 8])
def test_rule_pcis_timeout(f2_cl_dir, limit):
    """A 4 KiB write through BAR4 (one 64-beat PCIS burst) completes well within the shell's
    8 us; with the limit lowered to 8 cycles, under the burst's length, the same write fails the
    simulation, which names the rule (it is enforced, not only measured)."""
    stand_in = f2_sim.F2StandIn(f2_cl_dir, parameters={} if limit is None else
                                {"pcis_timeout_cycles": limit})
    bar4 = c_int(-1)
    words = (c_uint32 * 1024)(*range(1024))
    try:
        assert stand_in.fpga_pci_attach(0, 0, 4, 1, byref(bar4)) == 0
        if limit is None:
            assert stand_in.fpga_pci_write_burst(bar4, 0x3000, words, 1024) == 0
            longest = stand_in.request("pcis_latency")[1]["write"]
            assert 64 <= longest <= 2000
        else:
            with pytest.raises(Exception) as failure:
                stand_in.fpga_pci_write_burst(bar4, 0x3000, words, 1024)
                stand_in.request("settled")
            assert "the shell's PCIS timeout (8 us)" in str(failure.value)
    finally:
        try:
            stand_in.release()
        except Exception:       # the simulation failed, as it must with the limit lowered
            if limit is None:
                raise


#: a child that writes through a pointer the stand-in gave (without a simulation: a copy made
#: the way fpga_pci_get_address makes it)
WRITE_THROUGH = """
import ctypes, mmap
from sim.f2_sim import _read_only
copy = mmap.mmap(-1, 64)
address = ctypes.addressof(ctypes.c_char.from_buffer(copy))
_read_only(address, 64)
ctypes.memset(address, 1, 1)
"""


class _Slot(f2_sim.F2StandIn):
    """A stand-in whose slot answers ``describe`` with ``status`` and ``ids``, and whose CL
    directory's version word reads ``version`` (for the driver's checks before any call)."""

    def __init__(self, cl_dir, status=0, ids=None, version=None):
        super().__init__(cl_dir)
        self.status, self.ids, self.version = status, ids, version

    def _c_fpga_mgmt_describe_local_image(self, slot, info, flags):
        result = super()._c_fpga_mgmt_describe_local_image(slot, info, flags)
        target = ctypes.cast(info, ctypes.POINTER(FpgaMgmtImageInfo)).contents
        target.status = self.status
        if self.ids:
            ids = target.ids.afi_device_ids
            ids.vendor_id, ids.device_id, ids.svid, ids.ssid = self.ids
        return result

    def _ocl_read(self, offset):
        if offset == cl.VERSION and self.version is not None:
            return self.version
        return super()._ocl_read(offset)


@pytest.mark.parametrize("case", ["cleared", "other_ids", "other_version"])
def test_the_driver_checks_the_slot_before_any_call(f2_cl_dir, case):
    if case == "other_version" and not available_simulators():
        pytest.skip("no HDL simulator")
    slot = {"cleared": _Slot(f2_cl_dir, status=1),
            "other_ids": _Slot(f2_cl_dir, ids=(0x1D0F, 0xF010, 0x1D51, 0xFEDC)),
            "other_version": _Slot(f2_cl_dir, version=2)}[case]
    try:
        with pytest.raises(DeviceError) as failure:
            F2Device(0, api=slot)
        message = str(failure.value)
        afi = f"agfi-sim-{slot._image_hash()}"
        assert message == {
            "cleared": "FPGA slot 0: no AFI loaded (cleared); load one built by python -m "
                       "hw.build --board f2: sudo fpga-load-local-image -S 0 -I agfi-...",
            "other_ids": f"FPGA slot 0: AFI {afi} is not a kmer-sketch CL (PCI IDs 1d0f:f010 "
                         "subsystem 1d51:fedc; the CLs of python -m hw.build --board f2 present "
                         "1d0f:f0c5 subsystem 1d0f:4b53)",
            "other_version": f"FPGA slot 0: AFI {afi} has CL layout version 2; this host reads "
                             "version 1 (build the AFI and the host from the same release)"}[case]
        assert not slot._bars           # whatever was attached is detached again
    finally:
        slot.release()
