"""One sequence of XRT C calls that exercises the stand-in's rules (tests/data/xrt_rules.json),
run against XRT's own library on its noop device (in a child process: ``python -m
tests.xrt_probes XCLBIN [--runs]`` prints the outcomes as JSON) and against the stand-in
(:func:`probe` in the test's process), so tests/test_xrt_noop.py can compare them call by call;
and the few calls whose outcome xrt.ini decides (:func:`probe_settings`, ``--settings``), run
once per setting.

Each outcome is the call's result (a handle as "handle" or "NULL", else the number), the errno
the call left (it is set to 0 before each call) and the messages XRT printed
(host.xrt_binding.XrtConsole). The binary is the ``checksum`` kernel linked with two compute
units: ``checksum_1`` and ``checksum_2`` with arguments src (pointer), n_bytes (scalar), dst
and res (pointers).
"""

import ctypes
import errno
import json
import os
import sys
from ctypes import byref, c_ubyte, c_uint32, c_void_p

from host.xrt_binding import XrtConsole

#: steps whose outcome on XRT's noop device is the noop device's, not a card's: it opens a
#: device of any index
NOOP_ONLY = ("device-index/open 7",)
#: the steps of ``runs`` (on the stand-in's side they need a simulator)
RUN_KEYS = ("start-running/start", "wait/after start", "start-running/start after the wait",
            "start-running/start again")


def _handle(value):
    return "handle" if value else "NULL"


def probe(api, binary: str, runs: bool) -> dict:
    console = XrtConsole()
    out = {}

    def step(key, function, *args, result=lambda value: value):
        ctypes.set_errno(0)
        value = console.call(getattr(api, function), *args)
        # errno only after a failure: a call that succeeds may leave what a library call it
        # made left there (XRT's xrtDeviceOpen leaves ENOENT)
        code = ctypes.get_errno() if value in (None, -1, (1 << 64) - 1) else 0
        out[key] = {"result": result(value), "errno": errno.errorcode.get(code, code) if code
                    else None, "said": list(console.said)}
        return value

    def open_unit(key, name, uuid):
        return step(key, "xrtPLKernelOpenExclusive", device, uuid, name.encode(),
                    result=_handle)

    device = step("device-index/open 0", "xrtDeviceOpen", 0, result=_handle)
    step("device-index/open 7", "xrtDeviceOpen", 7, result=_handle)
    step("load", "xrtDeviceLoadXclbinFile", device, os.fsencode(binary))
    uuid = (c_ubyte * 16)()
    step("uuid", "xrtDeviceGetXclbinUUID", device, uuid)
    for name in ("checksum:checksum_1", "checksum:{checksum_9}", "checksum:{checksum_1,x}"):
        open_unit(f"unit-names/{name}", name, uuid)
    open_unit("kernel-name/nokernel:{x}", "nokernel:{x}", uuid)
    open_unit("xclbin-uuid/other", "checksum:{checksum_1}", (c_ubyte * 16)(*[0x11] * 16))
    open_unit("xclbin-uuid/null", "checksum:{checksum_1}", (c_ubyte * 16)())
    one = open_unit("unit-names/checksum:{checksum_1}", "checksum:{checksum_1}", uuid)
    again = open_unit("unit-contexts/again", "checksum:{checksum_1}", uuid)
    both = open_unit("unit-names/checksum", "checksum", uuid)
    word = c_uint32()
    step("register-one-unit/read", "xrtKernelReadRegister", both, 0x10, byref(word))
    step("register-one-unit/write", "xrtKernelWriteRegister", both, 0x10, 1)
    step("register-range/read 0x1000", "xrtKernelReadRegister", one, 0x1000, byref(word))
    step("register-range/write 0xffd", "xrtKernelWriteRegister", one, 0xFFD, 0)
    for index in range(5):
        step(f"group-id/{index}", "xrtKernelArgGroupId", one, index)
    group = out["group-id/0"]["result"]
    bo = step("bo-alloc/4096", "xrtBOAlloc", device, 4096, 0, group, result=_handle)
    data = ctypes.create_string_buffer(8192)
    step("bo-range/write past", "xrtBOWrite", bo, data, 4097, 0)
    step("bo-range/read past", "xrtBORead", bo, data, 10, 4090)
    step("bo-range/write", "xrtBOWrite", bo, data, 4096, 0)
    step("handles/address", "xrtBOAddress", bo, result=lambda address: address != (1 << 64) - 1)
    spare = step("bo-alloc/spare", "xrtBOAlloc", device, 4096, 0, group, result=_handle)
    step("handles/free", "xrtBOFree", spare)
    step("handles/free again", "xrtBOFree", spare)
    step("handles/address of freed", "xrtBOAddress", spare,
         result=lambda address: address == (1 << 64) - 1)
    run = step("run/open", "xrtRunOpen", one, result=_handle)
    step("set-arg-index/9", "xrtRunSetArg", run, 9, c_uint32(1))
    step("set-arg-index/freed buffer", "xrtRunSetArg", run, 0, c_void_p(spare))
    if runs:
        for index, value in enumerate((c_void_p(bo), c_uint32(64), c_void_p(bo), c_void_p(bo))):
            step(f"run/arg {index}", "xrtRunSetArg", run, index, value)
        step("start-running/start", "xrtRunStart", run)
        step("wait/after start", "xrtRunWaitFor", run, 10_000)
        step("start-running/start after the wait", "xrtRunStart", run)
        # (not waited for: XRT 2.13's noop device hangs in a wait after a refused start)
        step("start-running/start again", "xrtRunStart", run)
    step("run/close", "xrtRunClose", run)
    step("handles/run close again", "xrtRunClose", run)
    step("kernel/close both", "xrtKernelClose", both)
    step("kernel/close again", "xrtKernelClose", again)
    step("kernel/close one", "xrtKernelClose", one)
    step("handles/kernel close once more", "xrtKernelClose", one)
    step("bo/free", "xrtBOFree", bo)
    step("device/close", "xrtDeviceClose", device)
    return out


def probe_settings(api, binary: str) -> dict:
    """The calls whose outcome xrt.ini decides (XRT reads it once per process, so each setting
    is probed in a process of its own): register access on a unit opened shared, in range and
    out of it, and where a failure's message goes."""
    console = XrtConsole()
    out = {}

    def step(key, function, *args):
        ctypes.set_errno(0)
        value = console.call(getattr(api, function), *args)
        code = ctypes.get_errno() if value in (None, -1) else 0
        out[key] = {"result": "handle" if value and key.endswith("open") else
                    "NULL" if value is None else value,
                    "errno": errno.errorcode.get(code, code) if code else None,
                    "said": list(console.said)}
        return value

    device = api.xrtDeviceOpen(0)
    api.xrtDeviceLoadXclbinFile(device, os.fsencode(binary))
    uuid = (c_ubyte * 16)()
    api.xrtDeviceGetXclbinUUID(device, uuid)
    shared = step("register-shared/open", "xrtPLKernelOpen", device, uuid,
                  b"checksum:{checksum_1}")
    word = c_uint32()
    step("register-shared/read 0x10", "xrtKernelReadRegister", shared, 0x10, byref(word))
    step("register-shared/read 0x1000", "xrtKernelReadRegister", shared, 0x1000, byref(word))
    step("message-route/no unit", "xrtPLKernelOpenExclusive", device, uuid,
         b"checksum:checksum_1")
    api.xrtKernelClose(shared)
    api.xrtDeviceClose(device)
    return out


if __name__ == "__main__":
    from host.xrt_binding import load_library
    if "--settings" in sys.argv[2:]:
        outcomes = probe_settings(load_library(), sys.argv[1])
    else:
        outcomes = probe(load_library(), sys.argv[1], "--runs" in sys.argv[2:])
    print(json.dumps(outcomes))
