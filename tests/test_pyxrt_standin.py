"""The pyxrt stand-in (sim/pyxrt_sim.py) behaves as XRT's Python binding where the card driver
relies on it: xclbin metadata from a hw.build directory, buffers with separate host and device
memory (sync directions), 64-bit bank addresses, group_id, runs and their states, and pyxrt's
errors for wrong arguments. Kernel runs use the ``checksum`` example kernel (copy + checksum
record), simulated from its hw.build Verilog; host.device.XrtDevice runs it too."""

import os

import numpy as np
import pytest

from hw.kernels.checksum import ChecksumParams, checksum_model
from host.device import PYXRT_ENV, DeviceError, Output, XrtDevice, c_int, pyxrt_module
from sim import pyxrt_sim as pyxrt
from sim.runner import available_simulators
from tests.test_cli_xrt_standin import hw_build

TO_DEVICE = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
FROM_DEVICE = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
State = pyxrt.ert_cmd_state


@pytest.fixture(scope="module")
def checksum_dir(tmp_path_factory):
    return hw_build(tmp_path_factory.mktemp("hw") / "checksum", kernels=("checksum",))


@pytest.fixture(scope="module")
def loaded(checksum_dir):
    device = pyxrt.device(0)
    binary = pyxrt.xclbin(str(checksum_dir))
    return device, binary, device.load_xclbin(binary)


@pytest.fixture(scope="module")
def checksum(loaded):
    """The checksum kernel's simulation, shared by the run tests."""
    if not available_simulators():
        pytest.skip("no HDL simulator")
    device, _, uuid = loaded
    return pyxrt.kernel(device, uuid, "checksum", pyxrt.kernel.shared)


def test_xclbin_metadata(loaded, checksum_dir):
    device, binary, uuid = loaded
    assert [(k.get_name(), k.get_num_args()) for k in binary.get_kernels()] == [("checksum", 4)]
    # the f1 link plan of hw.build puts gmem0 on DDR[0] and gmem1 on DDR[1]
    assert [(m.get_tag(), m.get_index(), m.get_base_address()) for m in binary.get_mems()] == [
        ("DDR[0]", 0, pyxrt.BANK_BASE), ("DDR[1]", 1, pyxrt.BANK_BASE + pyxrt.BANK_STRIDE)]
    assert pyxrt.BANK_BASE >= 1 << 32          # a pointer cut to 32 bits reaches no bank
    assert uuid == binary.get_uuid() == device.get_xclbin_uuid()
    assert uuid == pyxrt.xclbin(str(checksum_dir)).get_uuid()      # the same binary, the same id


def test_buffers_have_host_and_device_memory(loaded):
    device = loaded[0]
    first = pyxrt.bo(device, 5000, pyxrt.bo.normal, 1)
    second = pyxrt.bo(device, 100, pyxrt.bo.normal, 1)
    assert first.size() == 5000 and first.address() % 4096 == 0
    assert first.address() >= pyxrt.BANK_BASE + pyxrt.BANK_STRIDE
    assert second.address() >= first.address() + 5000     # no overlap in the bank
    bank, at = device._banks[1].memory, first.address() - device._banks[1].base

    def device_bytes():
        return bank[at:at + 8]

    first.write(b"abcdefgh", 0)
    assert bytes(first.read(8, 0)) == b"abcdefgh"
    assert device_bytes() != b"abcdefgh"                  # not on the device before a sync
    first.sync(TO_DEVICE, 8, 0)
    assert device_bytes() == b"abcdefgh"
    first.map()[0:8] = b"ABCDEFGH"                         # the host copy changes alone
    assert bytes(first.read(8, 0)) == b"ABCDEFGH" and device_bytes() == b"abcdefgh"
    first.sync(FROM_DEVICE)                                # the whole buffer, device to host
    assert bytes(first.read(8, 0)) == b"abcdefgh"
    assert first.read(4, 2).dtype == np.int8               # pyxrt returns a char array

    freed = second.address()
    del second
    assert pyxrt.bo(device, 100, pyxrt.bo.normal, 1).address() == freed   # freed, reused


def test_buffer_errors_are_pyxrts(loaded):
    device = loaded[0]
    buffer = pyxrt.bo(device, 64, pyxrt.bo.normal, 0)
    with pytest.raises(RuntimeError, match="outside the 64-byte buffer"):
        buffer.write(b"x" * 10, 60)
    with pytest.raises(RuntimeError, match="outside the 64-byte buffer"):
        buffer.sync(TO_DEVICE, 65, 0)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        buffer.sync(0, 8, 0)                               # an int is not an xclBOSyncDirection
    with pytest.raises(TypeError, match="incompatible constructor arguments|incompatible function"):
        pyxrt.bo(device, 64, 0, 0)                         # flags must be bo.flags
    with pytest.raises(RuntimeError, match="memory group 7 is not a memory bank"):
        pyxrt.bo(device, 64, pyxrt.bo.normal, 7)
    with pytest.raises(RuntimeError, match="device_only"):
        pyxrt.bo(device, 64, pyxrt.bo.device_only, 0).map()
    with pytest.raises(RuntimeError, match="Could not open device with index '1'"):
        pyxrt.device(1)


def buffers(device, kernel, data):
    src = pyxrt.bo(device, 4096, pyxrt.bo.normal, kernel.group_id(0))
    dst = pyxrt.bo(device, 4096, pyxrt.bo.normal, kernel.group_id(2))
    res = pyxrt.bo(device, 4096, pyxrt.bo.normal, kernel.group_id(3))
    src.write(data, 0)
    return src, dst, res


def read_back(buffer, size):
    buffer.sync(FROM_DEVICE, size, 0)
    return buffer.read(size, 0).tobytes()


def test_run_states_and_results(loaded, checksum):
    device = loaded[0]
    assert (checksum.group_id(0), checksum.group_id(2), checksum.group_id(3)) == (0, 1, 1)
    data = os.urandom(3000)
    src, dst, res = buffers(device, checksum, data)
    src.sync(TO_DEVICE)
    run = pyxrt.run(checksum)
    for index, value in enumerate((src, len(data), dst, res)):
        run.set_arg(index, value)
    assert run.state() == State.ERT_CMD_STATE_NEW
    run.start()
    assert run.state() == State.ERT_CMD_STATE_SUBMITTED
    assert run.wait() == State.ERT_CMD_STATE_COMPLETED == run.state()
    assert read_back(dst, len(data)) == data
    assert read_back(res, 64) == checksum_model(data)
    assert 0 < run.cycles < 10_000

    # a forgotten sync: the kernel reads what the device memory held (the first 3000 bytes)
    src.write(bytes(3000), 0)
    again = checksum(src, len(data), dst, res)
    assert again.wait() == State.ERT_CMD_STATE_COMPLETED
    assert read_back(res, 64) == checksum_model(data)


def test_wrong_arguments(loaded, checksum):
    device = loaded[0]
    src, dst, res = buffers(device, checksum, b"\1" * 64)
    run = pyxrt.run(checksum)
    with pytest.raises(TypeError, match=r"set_arg\(\): incompatible function arguments"):
        run.set_arg(1, 1.5)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        run.set_arg(1, 1 << 31)                            # not a C int
    with pytest.raises(RuntimeError, match="bad argument index 4"):
        run.set_arg(4, 0)
    with pytest.raises(RuntimeError, match="argument 1 \\(n_bytes\\) is a scalar"):
        run.set_arg(1, src)
    with pytest.raises(RuntimeError, match="argument 0 \\(src\\) takes 8 bytes"):
        run.set_arg(0, 4096)
    with pytest.raises(RuntimeError, match="is a scalar, it has no memory group"):
        checksum.group_id(1)
    with pytest.raises(TypeError, match="incompatible"):
        pyxrt.kernel(device, loaded[2], "checksum", "shared")


def test_call_skips_what_it_cannot_cast(loaded, checksum):
    """pyxrt's kernel(*args) ignores an argument that is neither a bo nor a C int: the register
    keeps 0 and the kernel copies nothing (why XrtDevice sets arguments with run.set_arg)."""
    device = loaded[0]
    src, dst, res = buffers(device, checksum, b"\7" * 64)
    src.sync(TO_DEVICE)
    assert checksum(src, 1 << 31, dst, res).wait() == State.ERT_CMD_STATE_COMPLETED
    assert read_back(res, 64) == checksum_model(b"")


def test_access_outside_the_ports_bank_fails_the_run(loaded, checksum):
    device = loaded[0]
    src, dst, res = buffers(device, checksum, b"\2" * 64)
    wrong = pyxrt.bo(device, 4096, pyxrt.bo.normal, checksum.group_id(2))  # gmem1's bank
    run = checksum(wrong, 64, dst, res)
    assert run.wait() == State.ERT_CMD_STATE_ERROR
    assert run.errors and run.errors[0].startswith("m_axi_gmem0 read of 64 bytes at 0x")
    assert "outside DDR[0]" in run.errors[0]


def test_xrt_device_runs_the_stand_in(checksum_dir, monkeypatch):
    """host.device.XrtDevice itself: buffers in the banks of group_id, syncs both ways."""
    if not available_simulators():
        pytest.skip("no HDL simulator")
    monkeypatch.setenv(PYXRT_ENV, "sim")
    device = XrtDevice(str(checksum_dir))
    data = os.urandom(777)
    result = device.run(ChecksumParams(), {"src": data, "n_bytes": len(data),
                                           "dst": Output(len(data)), "res": Output(64)})
    assert result.outputs == {"dst": data, "res": checksum_model(data)}
    # the identity registers of the simulated binary refuse it, as a card's would
    with pytest.raises(DeviceError, match=r"^checksum: built with data_width=512, asked for 256$"):
        device.run(ChecksumParams(data_width=256), {"src": data, "n_bytes": len(data),
                                                    "dst": Output(len(data)), "res": Output(64)})


def test_pyxrt_selection_and_scalars(monkeypatch):
    monkeypatch.setenv(PYXRT_ENV, "sim")
    assert pyxrt_module() is pyxrt
    monkeypatch.setenv(PYXRT_ENV, "card")
    with pytest.raises(DeviceError, match="KMER_SKETCH_PYXRT=card: unknown"):
        pyxrt_module()
    assert (c_int(5), c_int((1 << 31) - 1), c_int(1 << 31), c_int((1 << 32) - 1)) == \
        (5, (1 << 31) - 1, -(1 << 31), -1)
    with pytest.raises(DeviceError, match="does not fit in 32 bits"):
        c_int(1 << 32)
