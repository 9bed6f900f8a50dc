"""The axlf container (xclbin) as the card driver reads it (host/xclbin.py) and as the tests
write it from a hw.build output (sim/xclbin.py).

* Every structure both use has the size and field offsets of the installed xrt/xclbin.h
  (Debian's libxrt-dev): a C program compiled against the header prints them (the header's own
  XCLBIN_STATIC_ASSERTs fix the sizes, offsetof the fields), so neither side can drift from
  XRT's layout.
* The reader gives the units of every kernel, in IP_LAYOUT order, from the writer's container,
  and names what is wrong with a file that is not an xclbin.
"""

import ctypes
import shutil
import subprocess
import sys

import pytest

from host.xclbin import IP_KERNEL, STRUCTURES as READ_STRUCTURES, read_units
from sim import xclbin
from sim.runner import REPO_ROOT


def header_layout(tmp_path, structures: dict) -> dict:
    """``{struct: (size, {field: (offset, size)})}`` of xclbin.h, from a compiled program; the
    header is found on the compiler's include path (libxrt-dev installs xrt/xclbin.h)."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <xrt/xclbin.h>",
             "int main(void) {"]
    for name, cls in structures.items():
        lines.append(f'  printf("{name} %zu\\n", sizeof(struct {name}));')
        for field, _ in cls._fields_:
            lines.append(f'  printf("{name}.{field} %zu %zu\\n", offsetof(struct {name}, {field}),'
                         f' sizeof(((struct {name} *)0)->{field}));')
    lines += ["  return 0;", "}"]
    source = tmp_path / "layout.c"
    source.write_text("\n".join(lines) + "\n")
    built = subprocess.run(["gcc", "-o", str(tmp_path / "layout"), str(source)],
                           capture_output=True, text=True)
    if built.returncode and "xrt/xclbin.h" in built.stderr and "No such file" in built.stderr:
        pytest.skip("xrt/xclbin.h is not installed (.ci/run installs libxrt-dev)")
    assert built.returncode == 0, built.stderr
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    layout = {}
    for line in filter(None, printed):
        name, *numbers = line.split()
        if "." in name:
            struct, field = name.split(".")
            layout[struct][1][field] = tuple(map(int, numbers))
        else:
            layout[name] = (int(numbers[0]), {})
    return layout


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_every_structure_has_xclbin_h_s_size_and_offsets(tmp_path):
    structures = {**READ_STRUCTURES, **xclbin.STRUCTURES}
    layout = header_layout(tmp_path, structures)
    for name, cls in structures.items():
        size, fields = layout[name]
        assert ctypes.sizeof(cls) == size, name
        for field, _ in cls._fields_:
            ours = getattr(cls, field)
            assert (ours.offset, ours.size) == fields[field], f"{name}.{field}"
    # the header's static asserts, as numbers (what a mismatch would look like)
    assert {name: layout[name][0] for name in ("axlf", "axlf_header", "axlf_section_header",
                                               "ip_data", "ip_layout", "mem_data", "connection")} \
        == {"axlf": 496, "axlf_header": 152, "axlf_section_header": 40, "ip_data": 80,
            "ip_layout": 88, "mem_data": 40, "connection": 12}


@pytest.fixture(scope="module")
def two_unit_build(tmp_path_factory):
    """The checksum kernel linked with two compute units (nk=checksum:2)."""
    out = tmp_path_factory.mktemp("hw") / "build"
    config = out.parent / "link.toml"
    config.write_text('kernels = ["checksum"]\n[compute_units]\nchecksum = 2\n')
    built = subprocess.run([sys.executable, "-m", "hw.build", "--no-run", "-o", str(out),
                            "--config", str(config)], cwd=REPO_ROOT, capture_output=True,
                           text=True)
    assert built.returncode == 0, built.stderr
    return out


def test_the_reader_gives_the_units_the_writer_linked(two_unit_build):
    image = xclbin.BuildImage(two_unit_build)
    data = xclbin.axlf_container(image)
    assert len(data) % 8 == 0
    read = read_units(data)
    assert read.uuid == image.uuid
    assert read.units == {"checksum": ["checksum_1", "checksum_2"]}
    # each section at an 8-byte boundary, within the file, as xclbin.h asks
    top = READ_STRUCTURES["axlf"].from_buffer_copy(data)
    header = READ_STRUCTURES["axlf_section_header"]
    kinds = []
    for index in range(top.m_header.m_numSections):
        section = header.from_buffer_copy(data, 456 + 40 * index)
        assert section.m_sectionOffset % 8 == 0
        assert section.m_sectionOffset + section.m_sectionSize <= top.m_header.m_length
        kinds.append(section.m_sectionKind)
    assert sorted(kinds) == sorted(xclbin.SECTION_KIND.values())
    assert top.m_header.m_length == len(data)


def test_the_reader_names_what_is_wrong(two_unit_build):
    data = bytearray(xclbin.axlf_container(xclbin.BuildImage(two_unit_build)))
    with pytest.raises(ValueError, match=r"not an xclbin \(8 bytes"):
        read_units(b"xclbin2\0")
    with pytest.raises(ValueError, match=r"magic b'xclbin1"):
        read_units(b"xclbin1\0" + bytes(data[8:]))
    with pytest.raises(ValueError, match="section headers do not fit"):
        read_units(bytes(data[:500]))
    layout_at = next(at for at in range(456, 456 + 40 * 4, 40)
                     if int.from_bytes(data[at:at + 4], "little") == 8)
    renamed = bytearray(data)
    renamed[layout_at:layout_at + 4] = (99).to_bytes(4, "little")   # IP_LAYOUT made unknown
    with pytest.raises(ValueError, match="has no IP_LAYOUT section"):
        read_units(bytes(renamed))
    header = READ_STRUCTURES["axlf_section_header"].from_buffer_copy(data, layout_at)
    start = header.m_sectionOffset
    entry = READ_STRUCTURES["ip_data"]
    first_name = start + READ_STRUCTURES["ip_layout"].m_ip_data.offset + entry.m_name.offset
    unnamed = bytearray(data)
    unnamed[first_name:first_name + 64] = b"checksum_1".ljust(64, b"\0")
    with pytest.raises(ValueError, match=r"IP_LAYOUT entry 0 is named 'checksum_1', not "):
        read_units(bytes(unnamed))
    not_kernel = bytearray(data)
    not_kernel[start + 8:start + 12] = (4).to_bytes(4, "little")   # IP_MEM_DDR4: not a unit
    assert read_units(bytes(not_kernel)).units == {"checksum": ["checksum_2"]}
    assert IP_KERNEL == 1
