"""The card driver interrupted at every point of a call (issue 51, item 2): host.xrt.XrtDevice on
the XRT stand-in (sim/xrt_sim.py), with a KeyboardInterrupt raised just after each C call of a
run returns (and just before the first), as Python's SIGINT handler would raise it there.

What must hold wherever the interrupt lands, once the device is closed (as the command line
closes it, in a ``finally``):

* no buffer was freed while its started run had not been seen to end (the stand-in records
  any in ``freed_while_running``: on a card the unit may write into reused memory);
* a run that had started and not ended is abandoned: its run handle and buffers are kept, the
  device refuses further calls with the line saying to reset the card, and ``still_running``
  names its compute unit; otherwise nothing is kept;
* everything else is closed: no kernel handle, no device handle, no other run or buffer.

Before issue 51, an interrupt just after xrtRunStart returned freed the buffers under the
running unit (the ``except BaseException`` of ``_start``), one as xrtRunWaitFor returned
TIMEOUT left the run unrecorded, its buffers freed by the garbage collector, and the device
usable; ``test_every_point_of_a_call`` fails on that driver at those points.
"""

import os
import signal

import pytest

from host.calls import DeviceError
from host.xrt import XrtDevice
from host.xrt_binding import PROTOTYPES
from hw.kernels.checksum import ChecksumParams, checksum_model
from sim import xrt_sim
from sim.runner import available_simulators
from tests.interrupting import Interrupting
from tests.test_xrt_standin import checksum_call, linked_build

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

DATA = bytes(range(256)) * 16


@pytest.fixture(scope="module")
def checksum_dir(tmp_path_factory):
    return linked_build(tmp_path_factory.mktemp("hw") / "checksum", "")


@pytest.fixture(scope="module")
def two_unit_dir(tmp_path_factory):
    return linked_build(tmp_path_factory.mktemp("hw") / "checksum2",
                        "[compute_units]\nchecksum = 2\n")


@pytest.fixture(autouse=True)
def python_s_sigint_handler():
    """SIGINT raises KeyboardInterrupt in this process, as in any Python program."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def slow(monkeypatch):
    """(a fresh stand-in, the Interrupting proxy of it): the stand-in's kernel clock slowed to
    64 cycles a millisecond and the driver's wait sliced by the millisecond, so that a run
    spans several slices; host.xrt's abandoned calls kept apart for the test."""
    from host import xrt
    monkeypatch.setattr(xrt, "_ABANDONED", [])
    monkeypatch.setattr(xrt_sim, "KERNEL_CLOCK_HZ", 64_000)
    monkeypatch.setattr(xrt, "WAIT_SLICE_MS", 1)
    api = xrt_sim.XrtStandIn()
    yield api, Interrupting(api, PROTOTYPES)
    api.release()


def live(api, kind) -> list:
    return [handle for handle, thing in api._handles.items() if isinstance(thing, kind)]


def drain(api) -> None:
    """After a case: the stand-in lets each run still started end, then frees what the driver
    kept (the test's own cleanup, as a card reset would), so the next case starts clean."""
    for handle in live(api, xrt_sim._Run):
        api.xrtRunWaitFor(handle, 0)
        api.xrtRunClose(handle)
    for handle in live(api, xrt_sim._Buffer):
        api.xrtBOFree(handle)


def check_closed(api, device, started_and_running: bool, abandoned: list) -> None:
    assert api.freed_while_running == []
    assert live(api, xrt_sim._Kernel) == [] and live(api, xrt_sim._Device) == []
    kept_runs = sorted(call.run for call in abandoned)
    kept_buffers = sorted(buffer.handle for call in abandoned for buffer in call.buffers)
    assert sorted(live(api, xrt_sim._Run)) == kept_runs
    assert sorted(live(api, xrt_sim._Buffer)) == kept_buffers
    if started_and_running:
        assert len(abandoned) == 1 and len(kept_buffers) == 3
        assert device.still_running == ["checksum:checksum_1"]
        with pytest.raises(DeviceError, match=r"may still be running: reset the card \(xbutil "
                                              r"reset\) before using it again$"):
            device.run(ChecksumParams(), checksum_call(b"abc"))
    else:
        assert abandoned == [] and device.still_running == []


def test_every_point_of_a_call(checksum_dir, slow, monkeypatch):
    """One run on a device whose unit is open and checked; its C calls recorded, then the run
    interrupted before the first and after each of them in turn. The kernel clock of the
    stand-in is slowed and the wait sliced finely, so that the first slice of the wait returns
    TIMEOUT with the run still going: the interrupt as a wait returns TIMEOUT is one of the
    points."""
    from host import xrt
    api, proxy = slow
    first = XrtDevice(str(checksum_dir), api=proxy)
    assert first.run(ChecksumParams(), checksum_call(DATA)).outputs["res"] == \
        checksum_model(DATA)            # the unit's simulation runs, its identity checked
    proxy.arm(None)
    first.run(ChecksumParams(), checksum_call(DATA))
    sequence = proxy.names
    assert "xrtRunStart" in sequence and sequence.count("xrtRunWaitFor") > 1
    start = sequence.index("xrtRunStart")
    completed = len(sequence) - 1 - sequence[::-1].index("xrtRunWaitFor")
    first.close()
    seen = []
    for at in [-1, *range(1, len(sequence) + 1)]:
        monkeypatch.setattr(xrt, "_ABANDONED", [])
        device = XrtDevice(str(checksum_dir), api=proxy)
        unit, = device.compute_units(ChecksumParams())     # opened, checked: as `first`'s
        unit.checked.add(ChecksumParams())
        unit.needs_clean_start = False
        proxy.arm(at)
        with pytest.raises(KeyboardInterrupt):
            device.run(ChecksumParams(), checksum_call(DATA))
        running = start <= at - 1 < completed       # started, not yet seen to end
        # settled at once, closed or not (a library's caller may go on without close):
        # nothing left in flight, the device refused if the unit may still run
        assert device.in_flight == []
        assert device.still_running == (["checksum:checksum_1"] if running else [])
        device.close()
        check_closed(api, device, running, list(xrt._ABANDONED))
        seen.append((sequence[at - 1] if at > 0 else "(first)", running))
        drain(api)
    # the windows of the issue are among the points: just after xrtRunStart returned, and
    # as a wait returned TIMEOUT
    assert ("xrtRunStart", True) in seen and ("xrtRunWaitFor", True) in seen


def test_an_interrupted_stream_settles_every_call_in_flight(two_unit_dir, slow, monkeypatch):
    """Two units, a call running on each: an interrupt in the wait for the first abandons both
    at once (the stream does not wait for the other), and the command line's close keeps
    exactly their runs and buffers."""
    from host import xrt
    api, proxy = slow
    device = XrtDevice(str(two_unit_dir), api=proxy)
    stream = device.run_stream(ChecksumParams(), (checksum_call(DATA) for _ in range(4)))

    def interrupted_wait(run, timeout):
        signal.raise_signal(signal.SIGINT)
    monkeypatch.setattr(proxy, "xrtRunWaitFor", interrupted_wait, raising=False)
    with pytest.raises(KeyboardInterrupt):
        next(stream)
    device.close()
    abandoned = list(xrt._ABANDONED)
    assert sorted(device.still_running) == ["checksum:checksum_1", "checksum:checksum_2"]
    assert api.freed_while_running == []
    assert sorted(live(api, xrt_sim._Run)) == sorted(call.run for call in abandoned)
    assert len(live(api, xrt_sim._Buffer)) == 6 and live(api, xrt_sim._Kernel) == []
    drain(api)


def test_the_wait_is_sliced_and_a_slow_run_still_completes(checksum_dir, slow):
    """Waiting in slices changes nothing for a run that completes in its time limit: the result
    is the kernel's, after several TIMEOUT slices."""
    api, proxy = slow
    device = XrtDevice(str(checksum_dir), api=proxy)
    proxy.arm(None)
    data = os.urandom(3000)
    assert device.run(ChecksumParams(), checksum_call(data)).outputs["res"] == \
        checksum_model(data)
    assert proxy.names.count("xrtRunWaitFor") > 1
    device.close()
    assert live(api, xrt_sim._Run) == [] and live(api, xrt_sim._Buffer) == []
