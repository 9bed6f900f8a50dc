# amaranth: UnusedElaboratable=no
"""The device interface: the simulated device runs a kernel on buffers and scalars."""

import random

import pytest

from host.device import DeviceError, Output, SimDevice
from hw.kernels.checksum import ChecksumParams, checksum_model



def test_sim_device_runs_a_kernel_with_backpressure():
    rng = random.Random(2)
    data = bytes(rng.getrandbits(8) for _ in range(5000))
    device = SimDevice(pause=0.3, seed=4)
    result = device.run(ChecksumParams(data_width=512), {
        "src": data, "n_bytes": len(data), "dst": Output(len(data)), "res": Output(64)})
    assert result.outputs["dst"] == data
    assert result.outputs["res"] == checksum_model(data, 512)
    assert result.cycles > 5000 // 64


def test_arguments_are_checked():
    with pytest.raises(DeviceError, match=r"arguments \['res'\] missing, \['extra'\] unknown"):
        SimDevice().run(ChecksumParams(), {"src": b"", "n_bytes": 0, "dst": Output(1),
                                           "extra": 1})


def test_sim_device_runs_several_calls_in_one_simulation():
    device = SimDevice()
    calls = [{"src": bytes([i]) * (100 + 70 * i), "n_bytes": 100 + 70 * i,
              "dst": Output(100 + 70 * i), "res": Output(64)} for i in range(3)]
    results = device.run_many(ChecksumParams(data_width=512), calls)
    for call, result in zip(calls, results):
        assert result.outputs["dst"] == call["src"]
        assert result.outputs["res"] == checksum_model(call["src"], 512)


def test_prefetched_keeps_order_and_reraises():
    from host.drivers import prefetched

    assert list(prefetched(iter(range(100)), depth=2)) == list(range(100))

    def failing():
        yield 1
        raise ValueError("packing failed")
    items = prefetched(failing())
    assert next(items) == 1
    with pytest.raises(ValueError, match="packing failed"):
        next(items)


def test_stream_of_calls_packs_ahead_while_a_call_runs():
    """A device that runs calls one by one (like XrtDevice) sees the next call already packed."""
    import time

    from host.drivers import prefetched
    packed = []

    def calls():
        for index in range(4):
            packed.append(index)
            yield index

    class OneByOne:
        def run_stream(self, kernel, calls):
            for call in calls:
                time.sleep(0.05)   # the kernel runs; the packer thread works meanwhile
                yield call, list(packed)
    seen = list(OneByOne().run_stream(None, prefetched(calls(), depth=2)))
    assert [call for call, _ in seen] == [0, 1, 2, 3]
    assert len(seen[0][1]) >= 2, "the next chunk was not packed while the first call ran"
