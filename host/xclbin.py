"""The compute units an xclbin holds, read from its IP_LAYOUT section.

An xclbin (and F1's .awsxclbin) is an axlf container (xrt/xclbin.h, Debian's libxrt-dev): the
magic ``xclbin2``, a header with the UUID and the number of sections, one section header per
section (kind, offset, size), and the sections. IP_LAYOUT lists every IP of the user region as
``ip_data`` entries; the compute units of a kernel are the ``IP_KERNEL`` entries named
``<kernel>:<unit>`` (v++ names the ``nk=`` units ``<kernel>_1``, ``<kernel>_2``, ...). The card
driver opens exactly these units (host.xrt), so it never finds them by trying names.

The structures below are xclbin.h's; tests/test_xclbin.py compiles a program against the
installed header and compares every size and field offset with them. This module only reads: the
xclbins the tests load into XRT are written by sim/xclbin.py.
"""

import ctypes
from ctypes import c_char, c_int32, c_ubyte, c_uint8, c_uint16, c_uint32, c_uint64
from typing import NamedTuple

__all__ = ["XclbinUnits", "read_units", "STRUCTURES", "IP_LAYOUT", "IP_KERNEL"]

#: enum axlf_section_kind: IP_LAYOUT; enum IP_TYPE: IP_KERNEL (a kernel instance)
IP_LAYOUT, IP_KERNEL = 8, 1


class axlf_section_header(ctypes.Structure):
    _fields_ = [("m_sectionKind", c_uint32), ("m_sectionName", c_char * 16),
                ("m_sectionOffset", c_uint64), ("m_sectionSize", c_uint64)]


class axlf_header(ctypes.Structure):
    # the header's unions (rom / rom_uuid, m_next_axlf / uuid) as their 16 bytes
    _fields_ = [("m_length", c_uint64), ("m_timeStamp", c_uint64),
                ("m_featureRomTimeStamp", c_uint64), ("m_versionPatch", c_uint16),
                ("m_versionMajor", c_uint8), ("m_versionMinor", c_uint8), ("m_mode", c_uint16),
                ("m_actionMask", c_uint16), ("rom_uuid", c_ubyte * 16),
                ("m_platformVBNV", c_ubyte * 64), ("uuid", c_ubyte * 16),
                ("m_debug_bin", c_char * 16), ("m_numSections", c_uint32)]


class axlf(ctypes.Structure):
    _fields_ = [("m_magic", c_char * 8), ("m_signature_length", c_int32),
                ("reserved", c_ubyte * 28), ("m_keyBlock", c_ubyte * 256),
                ("m_uniqueId", c_uint64), ("m_header", axlf_header),
                ("m_sections", axlf_section_header * 1)]


class ip_data(ctypes.Structure):
    _fields_ = [("m_type", c_uint32), ("properties", c_uint32),
                ("m_base_address", c_uint64), ("m_name", c_ubyte * 64)]


class ip_layout(ctypes.Structure):
    _fields_ = [("m_count", c_int32), ("m_ip_data", ip_data * 1)]


#: the structures read, by their names in xrt/xclbin.h
STRUCTURES = {cls.__name__: cls for cls in (axlf_section_header, axlf_header, axlf, ip_data,
                                            ip_layout)}

_SECTIONS_AT = axlf.m_sections.offset
_ENTRIES_AT = ip_layout.m_ip_data.offset


class XclbinUnits(NamedTuple):
    uuid: bytes
    #: kernel -> its compute units' names, in IP_LAYOUT order
    units: dict


def read_units(data: bytes) -> XclbinUnits:
    """The UUID and the compute units of an xclbin's bytes; ValueError says what is wrong."""
    if len(data) < ctypes.sizeof(axlf):
        raise ValueError(f"not an xclbin ({len(data)} bytes, shorter than its header)")
    top = axlf.from_buffer_copy(data)
    # XRT compares the first 7 bytes (xrt_xclbin.cpp, strncmp with "xclbin2")
    if top.m_magic[:7] != b"xclbin2":
        raise ValueError(f"not an xclbin (magic {bytes(top.m_magic)!r}, not xclbin2)")
    count = top.m_header.m_numSections
    end = _SECTIONS_AT + count * ctypes.sizeof(axlf_section_header)
    if end > len(data):
        raise ValueError(f"truncated xclbin: {count} section headers do not fit in its "
                         f"{len(data)} bytes")
    layout = None
    for index in range(count):
        section = axlf_section_header.from_buffer_copy(
            data, _SECTIONS_AT + index * ctypes.sizeof(axlf_section_header))
        if section.m_sectionKind == IP_LAYOUT:     # the first, as XRT takes it
            layout = section
            break
    if layout is None:
        raise ValueError("the xclbin has no IP_LAYOUT section, so no compute units (was it "
                         "linked by v++?)")
    start, size = layout.m_sectionOffset, layout.m_sectionSize
    if start + size > len(data) or size < _ENTRIES_AT:
        raise ValueError(f"truncated xclbin: its IP_LAYOUT ({size} bytes at {start}) is not "
                         f"within its {len(data)} bytes")
    entries = int.from_bytes(data[start:start + 4], "little", signed=True)
    if entries < 0 or _ENTRIES_AT + entries * ctypes.sizeof(ip_data) > size:
        raise ValueError(f"corrupt xclbin: IP_LAYOUT says {entries} entries in {size} bytes")
    units: dict[str, list[str]] = {}
    for index in range(entries):
        entry = ip_data.from_buffer_copy(data, start + _ENTRIES_AT + index * ctypes.sizeof(ip_data))
        if entry.m_type != IP_KERNEL:
            continue
        name = bytes(entry.m_name).split(b"\0", 1)[0].decode("ascii", "replace")
        kernel, colon, unit = name.partition(":")
        if not colon or not kernel or not unit:
            raise ValueError(f"IP_LAYOUT entry {index} is named {name!r}, not "
                             "<kernel>:<compute unit>")
        units.setdefault(kernel, []).append(unit)
    return XclbinUnits(bytes(top.m_header.uuid), units)
