"""host/f2_binding.py against AWS's SDK itself (an aws-fpga checkout named by KSA_AWS_FPGA;
these tests skip with the reason without it, as CI's do):

* every prototype of host.f2_binding.PROTOTYPES is the declaration in
  sdk/userspace/include/fpga_pci.h or fpga_mgmt.h, parsed from the header (return type, each
  argument's C type mapped to ctypes);
* every structure the driver hands the library has the size, and every member the offset, gcc
  gives the C structure compiled from those headers;
* AWS's library, built here from the checkout's sources as sdk_setup.sh builds it, resolves
  every function of PROTOTYPES, answers as the rules of tests/data/f2_rules.json say it does
  where no F2 FPGA is needed, and the driver turns its answer on a machine without an FPGA into
  one line naming the call and the SDK's error.
"""

import ctypes
import errno
import re
import shutil
import subprocess
import sys
from ctypes import POINTER, c_char_p, c_int, c_uint32, c_uint64, c_void_p

import pytest

from host.calls import DeviceError
from host.f2 import F2Device
from host.f2_binding import (HEADERS, PROTOTYPES, STRUCTURES, CApi, FpgaMgmtImageInfo,
                             strerror)
from tests.f2_build import aws_fpga, build_sdk_library, needs_aws

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")

#: C types of the headers' declarations -> ctypes
C_TYPES = {"int": c_int, "uint32_t": c_uint32, "uint64_t": c_uint64,
           "pci_bar_handle_t": c_int, "const char *": c_char_p, "uint32_t *": POINTER(c_uint32),
           "pci_bar_handle_t *": POINTER(c_int), "void **": POINTER(c_void_p),
           "struct fpga_mgmt_image_info *": POINTER(FpgaMgmtImageInfo)}


def declaration(header_text: str, name: str):
    """(return type, [argument types]) of ``name`` in a header."""
    text = re.sub(r"/\*.*?\*/", "", header_text, flags=re.S)
    found = re.search(rf"([\w ]+?\*?)\s*\b{name}\s*\(([^)]*)\)\s*;", text)
    assert found, f"{name} is not declared"
    result = " ".join(found.group(1).split())
    arguments = []
    for argument in " ".join(found.group(2).split()).split(","):
        argument = argument.strip()
        if argument in ("void", ""):
            continue
        typed = re.match(r"(.*?)(\**)\s*\w+$", argument)
        base, stars = " ".join(typed.group(1).split()), typed.group(2)
        arguments.append(base + (" " + stars if stars else ""))
    return result, arguments


@needs_aws
def test_prototypes_are_the_sdk_headers():
    include = aws_fpga() / "sdk" / "userspace" / "include"
    for name, prototype in PROTOTYPES.items():
        result, arguments = declaration((include / HEADERS[name]).read_text(), name)
        assert C_TYPES[result] is prototype.restype, (name, result)
        assert [C_TYPES[a] for a in arguments] == list(prototype.argtypes), (name, arguments)
    # (the library's fpga_pci_get_address takes size_t where the header says uint64_t: the
    # same 64 bits on the x86-64 F2 host)


@needs_aws
@needs_gcc
def test_structures_have_the_c_layout(tmp_path):
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "fpga_mgmt.h"',
             "int main(void) {"]
    for c_name, cls in STRUCTURES.items():
        lines.append(f'  printf("{c_name} %zu\\n", sizeof({c_name}));')
        for field, *_ in cls._fields_:
            lines.append(f'  printf("{c_name}.{field} %zu\\n", offsetof({c_name}, {field}));')
    lines += ["  return 0;", "}"]
    (tmp_path / "layout.c").write_text("\n".join(lines) + "\n")
    include = aws_fpga() / "sdk" / "userspace" / "include"
    subprocess.run(["gcc", f"-I{include}", "layout.c", "-o", "layout"], cwd=tmp_path, check=True)
    printed = dict(line.rsplit(" ", 1) for line in
                   subprocess.run(["./layout"], cwd=tmp_path, capture_output=True, text=True,
                                  check=True).stdout.splitlines())
    for c_name, cls in STRUCTURES.items():
        assert int(printed[c_name]) == ctypes.sizeof(cls), c_name
        for field, *_ in cls._fields_:
            assert int(printed[f"{c_name}.{field}"]) == getattr(cls, field).offset, field


@pytest.fixture(scope="module")
def sdk_library(tmp_path_factory):
    if aws_fpga() is None or shutil.which("gcc") is None:
        pytest.skip("needs an aws-fpga checkout (KSA_AWS_FPGA) and gcc")
    return build_sdk_library(tmp_path_factory.mktemp("sdk"))


def test_the_real_library_resolves_every_function_and_follows_the_rules(sdk_library):
    api = CApi(ctypes.CDLL(str(sdk_library), use_errno=True), str(sdk_library))
    assert api.fpga_mgmt_init() == 0 and api.fpga_pci_init() == 0
    info, handle, word = FpgaMgmtImageInfo(), c_int(-1), c_uint32()
    # attach-ranges, slot-ranges, bar-range, detach, strerror
    assert api.fpga_pci_attach(0, 5, 0, 0, ctypes.byref(handle)) == -errno.EINVAL
    assert api.fpga_pci_attach(0, 0, 7, 0, ctypes.byref(handle)) == -errno.EINVAL
    assert api.fpga_pci_attach(9, 0, 0, 0, ctypes.byref(handle)) == -errno.EINVAL
    assert api.fpga_mgmt_describe_local_image(9, ctypes.byref(info), 0) == -errno.EINVAL
    assert api.fpga_pci_peek(3, 0, ctypes.byref(word)) == -errno.EINVAL
    assert api.fpga_pci_detach(3) == -errno.EINVAL
    assert strerror(api, -errno.EINVAL) == "Invalid argument (-22)"
    assert strerror(api, 24) == "software-problem (24)"
    # no FPGA on this machine: the driver says so in one line
    with pytest.raises(DeviceError) as failure:
        F2Device(0, api=api)
    assert str(failure.value) == (
        "FPGA slot 0: fpga_mgmt_describe_local_image failed: pci-device-missing (20) (an F2 "
        "instance's slots: sudo fpga-describe-local-image -S 0)")


def test_the_real_library_wants_init_first(sdk_library):
    """init-first, in a process of its own (the library's state is per process)."""
    probe = ("import ctypes, sys\n"
             "from host.f2_binding import CApi, FpgaMgmtImageInfo\n"
             "api = CApi(ctypes.CDLL(sys.argv[1]), sys.argv[1])\n"
             "info = FpgaMgmtImageInfo()\n"
             "print(api.fpga_mgmt_describe_local_image(0, ctypes.byref(info), 0))\n")
    result = subprocess.run([sys.executable, "-c", probe, str(sdk_library)],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "24"
