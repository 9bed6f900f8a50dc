"""The XRT C API stand-in (sim/xrt_sim.py) and the card driver on it (host.xrt.XrtDevice).

The stand-in offers exactly the functions of host.xrt_binding.PROTOTYPES (whose prototypes
tests/test_xrt_api.py compares with XRT's headers) with ctypes' argument checks; buffer objects
have host and device memory and lose their device memory on xrtBOFree; a run keeps only the
device addresses of its buffers. The driver: results equal the kernel's model, every buffer
lives until its results are read, a clean start is asked for after any failed call, a timeout
makes the device unusable with one line saying to reset the card, both units of an nk=2 build
are used, and the wait leaves the GIL to other threads. Kernel runs use the ``checksum``
example kernel (copy + checksum record), simulated from its hw.build Verilog."""

import ctypes
import errno
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from host.calls import DeviceError, KernelError, Output
from host.xrt import XrtDevice
from hw.kernels.checksum import ChecksumParams, checksum_model
from sim import xrt_sim
from sim.runner import REPO_ROOT, available_simulators

needs_simulator = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")


def linked_build(out, config: str):
    """A hw.build output directory of the checksum kernel linked as ``config`` says."""
    (out.parent / "link.toml").write_text('kernels = ["checksum"]\n' + config)
    result = subprocess.run([sys.executable, "-m", "hw.build", "--no-run", "-o", str(out),
                             "--config", str(out.parent / "link.toml")], cwd=REPO_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def checksum_dir(tmp_path_factory):
    """The checksum kernel with its two ports in two banks of one SLR (F1's SLR1: DDR[0] and
    DDR[2]), so a buffer in the other port's bank is an AXI error."""
    return linked_build(tmp_path_factory.mktemp("hw") / "checksum",
                        '[banks.checksum]\ngmem0 = "DDR[0]"\ngmem1 = "DDR[2]"\n')


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
    uuid = (ctypes.c_ubyte * 16)()
    assert api.xrtDeviceGetXclbinUUID(device, uuid) == 0
    return device, uuid


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
    ctypes.set_errno(0)
    assert xrt_stand_in.xrtDeviceOpen(1) is None and ctypes.get_errno() == errno.ENODEV
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
    assert xrt_stand_in.xrtBOWrite(first, b"x" * 10, 10, 4995) == -1  # outside the buffer
    assert xrt_stand_in.xrtBOFree(first) == 0
    assert bank.memory[at:at + 8] == bytes([xrt_sim.POISON]) * 8
    assert xrt_stand_in.xrtBOFree(first) == -1                        # freed once
    reused = xrt_stand_in.xrtBOAlloc(device, 100, 0, group)
    assert xrt_stand_in.xrtBOAddress(reused) == address      # the freed space is reused


# -- runs -------------------------------------------------------------------------------------

@needs_simulator
def test_a_run_keeps_addresses_only_so_a_freed_input_is_garbage(xrt_stand_in, checksum_dir):
    """The lifetime bug of the issue: a buffer freed after xrtRunSetArg but before the run ends
    is read as freed memory (the run kept its address only), and the checksum is wrong."""
    device, uuid = loaded(xrt_stand_in, checksum_dir)
    kernel = xrt_stand_in.xrtPLKernelOpenExclusive(device, uuid, b"checksum:checksum_1")
    assert kernel
    assert xrt_stand_in.xrtPLKernelOpenExclusive(device, uuid, b"checksum:checksum_1") is None
    data = os.urandom(256)
    results = {}
    for free_early in (False, True):
        src = xrt_stand_in.xrtBOAlloc(device, 4096, 0, xrt_stand_in.xrtKernelArgGroupId(kernel, 0))
        dst = xrt_stand_in.xrtBOAlloc(device, 4096, 0, xrt_stand_in.xrtKernelArgGroupId(kernel, 2))
        res = xrt_stand_in.xrtBOAlloc(device, 4096, 0, xrt_stand_in.xrtKernelArgGroupId(kernel, 3))
        assert xrt_stand_in.xrtKernelArgGroupId(kernel, 1) == -1      # a scalar has no memory group
        xrt_stand_in.xrtBOWrite(src, data, len(data), 0)
        xrt_stand_in.xrtBOSync(src, 0, len(data), 0)
        run = xrt_stand_in.xrtRunOpen(kernel)
        cut_handle = ctypes.c_uint32(src & 0xFFFF_FFFF)
        assert xrt_stand_in.xrtRunSetArg(run, 0, cut_handle) == -1
        for index, value in enumerate((ctypes.c_void_p(src), ctypes.c_uint32(len(data)),
                                       ctypes.c_void_p(dst), ctypes.c_void_p(res))):
            assert xrt_stand_in.xrtRunSetArg(run, index, value) == 0
        if free_early:
            xrt_stand_in.xrtBOFree(src)
        assert xrt_stand_in.xrtRunStart(run) == 0
        assert xrt_stand_in.xrtRunWaitFor(run, 100) == xrt_sim.COMPLETED
        record = ctypes.create_string_buffer(64)
        xrt_stand_in.xrtBOSync(res, 1, 64, 0)
        xrt_stand_in.xrtBORead(res, record, 64, 0)
        results[free_early] = record.raw
        xrt_stand_in.xrtRunClose(run)
    assert results[False] == checksum_model(data)
    assert results[True] != checksum_model(data)


@needs_simulator
def test_xrt_device_runs_checks_identity_and_reports_itself(xrt_stand_in, checksum_dir, capfd,
                                                             monkeypatch):
    monkeypatch.setattr("host.xrt._reported", set())
    device = XrtDevice(str(checksum_dir))
    for size in (777, 5000):
        data = os.urandom(size)
        result = device.run(ChecksumParams(), checksum_call(data))
        assert result.outputs == {"dst": data, "res": checksum_model(data)}
    with pytest.raises(DeviceError, match=r"^checksum: built with data_width=512, asked for 256$"):
        device.run(ChecksumParams(data_width=256), checksum_call(b"abc"))
    fresh = ChecksumParams().desc.status_map().fresh
    # a clean start before call 1
    assert xrt_stand_in.register_writes == [("checksum_1", fresh, 1)]
    XrtDevice(str(checksum_dir / "kernels" / "checksum")).geometry   # a kernel's directory
    assert capfd.readouterr().err.splitlines() == [     # said once per process
        "xrt: the XRT C API stand-in (sim/xrt_sim.py, KMER_SKETCH_PYXRT=sim)"]
    with pytest.raises(DeviceError, match=r"kernel jacc_sketch is not in .*checksum \(XRT cannot "
                                          r"open its compute unit jacc_sketch:jacc_sketch_1"):
        from kmerspec.kernels import jacc_sketch
        device.compute_units(jacc_sketch.Params())


@needs_simulator
def test_a_clean_start_is_asked_after_a_failed_call(xrt_stand_in, checksum_dir, monkeypatch):
    """A call that ends in an error (here the source buffer in the bank of another port: an
    AXI error) makes the next call of that unit start with FRESH = 1."""
    device = XrtDevice(str(checksum_dir))
    data = os.urandom(300)
    device.run(ChecksumParams(), checksum_call(data))
    real_group = xrt_stand_in.xrtKernelArgGroupId
    monkeypatch.setattr(xrt_stand_in, "xrtKernelArgGroupId",
                        lambda kernel, index: real_group(kernel, 2 if index == 0 else index),
                        raising=False)
    with pytest.raises(DeviceError, match="ended in state ERROR"):
        device.run(ChecksumParams(), checksum_call(data))
    monkeypatch.setattr(xrt_stand_in, "xrtKernelArgGroupId", real_group, raising=False)
    fresh = ChecksumParams().desc.status_map().fresh
    assert xrt_stand_in.register_writes == [("checksum_1", fresh, 1)]
    assert device.run(ChecksumParams(), checksum_call(data)).outputs["res"] == \
        checksum_model(data)
    assert xrt_stand_in.register_writes == [("checksum_1", fresh, 1)] * 2


@needs_simulator
def test_a_timeout_makes_the_device_unusable_and_keeps_the_buffers(xrt_stand_in, checksum_dir,
                                                                   monkeypatch):
    device = XrtDevice(str(checksum_dir))
    monkeypatch.setattr(xrt_sim, "KERNEL_CLOCK_HZ", 8000)     # 8 cycles a millisecond
    monkeypatch.setattr("host.xrt.timeout_ms", lambda *args: 1)
    message = r"^checksum: no ap_done within 1 ms on checksum:checksum_1; the compute unit may " \
              r"still be running: reset the card \(xbutil reset\) before using it again$"
    with pytest.raises(KernelError, match=message):
        device.run(ChecksumParams(), checksum_call(os.urandom(4000)))
    abandoned = device._abandoned[0].buffers
    assert len(abandoned) == 3 and all(buffer.handle for buffer in abandoned)
    # not freed
    assert all(xrt_stand_in._get(buffer.handle, xrt_sim._Buffer) for buffer in abandoned)
    with pytest.raises(DeviceError, match=message):
        device.run(ChecksumParams(), checksum_call(b"abc"))


@needs_simulator
def test_two_compute_units_share_the_calls(xrt_stand_in, two_unit_dir):
    device = XrtDevice(str(two_unit_dir))
    assert [unit.name for unit in device.compute_units(ChecksumParams())] == \
        ["checksum:checksum_1", "checksum:checksum_2"]
    inputs = [os.urandom(200 + 300 * i) for i in range(4)]
    results = device.run_many(ChecksumParams(), [checksum_call(data) for data in inputs])
    assert [r.outputs["res"] for r in results] == [checksum_model(data) for data in inputs]
    assert xrt_stand_in.started == {"checksum_1": 2, "checksum_2": 2}
    # each unit's ports in the banks the link plan gave that unit
    (plan,) = json.loads((two_unit_dir / "build.json").read_text())["xclbins"].values()
    units = xrt_stand_in._device.image.units
    assert [units[f"checksum:checksum_{n}"].banks for n in (1, 2)] == \
        plan["connectivity"]["checksum"]["banks"]


@needs_simulator
def test_the_wait_leaves_the_gil_to_other_threads(xrt_stand_in, checksum_dir):
    device = XrtDevice(str(checksum_dir))
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
