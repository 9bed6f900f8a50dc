"""A ``python -m hw.build`` output directory as the xclbin v++ would link from it: its kernels,
compute units and memory banks (:class:`BuildImage`), and the axlf container holding the sections
XRT reads from an xclbin (:func:`axlf_container`).

v++ turns the link plan (``nk=`` units named ``<kernel>_<n>``, an ``sp=`` bank per m_axi port) and
each kernel's kernel.xml into an xclbin. Without v++ there is no bitstream, but the metadata XRT
parses when it loads an xclbin and opens compute units can be written from the same plan:

* ``IP_LAYOUT``: one ``ip_data`` per compute unit, named ``<kernel>:<unit>``, ``IP_KERNEL``,
  ``AP_CTRL_HS``, at its own control base address;
* ``MEM_TOPOLOGY``: one ``mem_data`` per memory bank the units use, tagged as in the plan;
* ``CONNECTIVITY``: one ``connection`` per (unit, pointer argument): argument index, the unit's
  IP_LAYOUT index, the bank's MEM_TOPOLOGY index;
* ``EMBEDDED_METADATA``: the XML XRT reads the kernels and their arguments from
  (``project/platform/device/core/kernel`` with ``port`` and ``arg`` elements, as in
  src/runtime_src/core/common/xclbin_parser.cpp), from each kernel.xml.

The structures are xrt/xclbin.h's (Debian's libxrt-dev, XRT 2.13): the header, section header and
IP_LAYOUT ones are those the card driver reads with (host/xclbin.py), the others are defined here;
tests/test_xclbin.py compiles a program against the installed header that prints each
structure's size and field offsets and compares them with these. The XRT stand-in (sim/xrt_sim.py) takes its units and banks from
:class:`BuildImage` and hands the driver this container as the binary's bytes; the tests load the
same container into XRT's own noop device (tests/test_xrt_noop.py). Nothing in host/ writes an
xclbin: the card driver only reads them (host/xclbin.py).
"""

import ctypes
import hashlib
import json
import pathlib
import re
import xml.etree.ElementTree as ET
from ctypes import c_int32, c_ubyte, c_uint8, c_uint64

from host.xclbin import STRUCTURES as READ_STRUCTURES
from host.xclbin import axlf, axlf_section_header, ip_data, ip_layout

__all__ = ["BuildImage", "KernelImage", "Unit", "axlf_container", "STRUCTURES", "SECTION_KIND",
           "MAGIC", "CONTROL_BASE", "CONTROL_STRIDE"]

MAGIC = b"xclbin2\0"
#: enum axlf_section_kind (the sections written here)
SECTION_KIND = {"EMBEDDED_METADATA": 2, "MEM_TOPOLOGY": 6, "CONNECTIVITY": 7, "IP_LAYOUT": 8}
IP_KERNEL = 1           # enum IP_TYPE
AP_CTRL_HS = 0          # enum IP_CONTROL, bits 15:8 of ip_data.properties
MEM_DDR4 = 1            # enum MEM_TYPE
XCLBIN_FLAT = 0         # enum XCLBIN_MODE
#: control base address of the first unit and the distance between units (64 KiB windows, as
#: v++ places the AXI-Lite slaves of the user region on an Alveo platform)
CONTROL_BASE = 0x180_0000
CONTROL_STRIDE = 0x1_0000
#: the size and base address given to every bank in MEM_TOPOLOGY (16 GiB at 64-bit addresses)
BANK_KBYTES = 16 << 20
BANK_BASE = 0x40_0000_0000
BANK_STRIDE = 0x10_0000_0000


class mem_data(ctypes.Structure):
    _fields_ = [("m_type", c_uint8), ("m_used", c_uint8), ("padding", c_uint8 * 6),
                ("m_size", c_uint64), ("m_base_address", c_uint64), ("m_tag", c_ubyte * 16)]


class mem_topology(ctypes.Structure):
    _fields_ = [("m_count", c_int32), ("m_mem_data", mem_data * 1)]


class connection(ctypes.Structure):
    _fields_ = [("arg_index", c_int32), ("m_ip_layout_index", c_int32),
                ("mem_data_index", c_int32)]


class connectivity(ctypes.Structure):
    _fields_ = [("m_count", c_int32), ("m_connection", connection * 1)]


#: every structure written, by its name in xrt/xclbin.h (the header, section header and
#: IP_LAYOUT ones are the driver's reader's, host/xclbin.py)
STRUCTURES = {**READ_STRUCTURES, **{cls.__name__: cls for cls in (mem_data, mem_topology,
                                                                   connection, connectivity)}}


class KernelImage:
    """One kernel of the build: its kernel.xml (argument ids, register offsets and sizes, the
    m_axi port of each pointer, the control window's range) and its Verilog."""

    def __init__(self, directory: pathlib.Path):
        from hw.vitis.kernel_xml import parse_kernel_xml
        try:
            described = parse_kernel_xml((directory / "kernel.xml").read_text())
        except Exception as error:  # an unreadable or foreign kernel.xml
            raise ValueError(f"{directory / 'kernel.xml'}: not a kernel description "
                             f"({type(error).__name__}: {error})") from None
        self.name = described["name"]
        self.directory = directory
        self.kernel_xml = directory / "kernel.xml"
        self.verilog = directory / f"{self.name}.v"
        if not self.verilog.is_file():
            raise ValueError(f"{directory}: kernel.xml names kernel {self.name}, but there is no "
                             f"{self.verilog.name} (generate it with python -m hw.build)")
        self.args = described["args"]
        if [a["id"] for a in self.args] != list(range(len(self.args))):
            raise ValueError(f"{directory / 'kernel.xml'}: argument ids are not "
                             f"0..{len(self.args) - 1}")
        self.ports = described["ports"]
        self.control_range = int(self.ports["s_axi_control"]["range"], 16)
        #: bundle -> AXI data bits of its m_axi port
        self.bundles = {name[len("m_axi_"):]: int(port["dataWidth"])
                        for name, port in self.ports.items() if name.startswith("m_axi_")}

    def bundle(self, index: int) -> str | None:
        """The bundle of argument ``index``, None for a scalar."""
        port = self.args[index]["port"]
        return port[len("m_axi_"):] if self.args[index]["qualifier"] == 1 else None


class Unit:
    """One compute unit: ``<kernel>:<name>`` in IP_LAYOUT, and the bank of each m_axi port."""

    def __init__(self, name: str, kernel: KernelImage, banks: dict):
        self.name, self.kernel, self.banks = name, kernel, banks

    @property
    def ip_name(self) -> str:
        return f"{self.kernel.name}:{self.name}"


def _tag_order(tag: str):
    match = re.fullmatch(r"(.*)\[(\d+)\]", tag)
    return (match.group(1), int(match.group(2))) if match else (tag, -1)


class BuildImage:
    """A hw.build output directory (or one kernel's directory ``DIR/kernels/<name>``) as a linked
    binary: its kernels, their compute units as the link plan names them (``DIR/build.json``, or
    the first ``DIR/<board>/build.json``; ``nk=``: ``<kernel>_1`` ..; without a plan one unit per
    kernel whose ports take DDR[0..3] in turn) and the banks of every unit's ports."""

    def __init__(self, path: pathlib.Path):
        path = pathlib.Path(path)
        if not path.is_dir():
            raise ValueError("not a directory; the XRT stand-in takes a python -m hw.build "
                             "output directory as its xclbin")
        directories = ([path] if (path / "kernel.xml").is_file()
                       else sorted(p.parent for p in path.glob("kernels/*/kernel.xml")))
        if not directories:
            raise ValueError("no kernel.xml in the directory or its kernels/*/; not a python "
                             "-m hw.build output directory")
        self.path = path
        self.kernels = {}
        for directory in directories:
            image = KernelImage(directory)
            self.kernels[image.name] = image
        self.platform = ""
        #: the units in IP_LAYOUT order (control base addresses ascending)
        self.units: list[Unit] = []
        self._assign_units(path if directories != [path] else path.parent.parent)
        self.mems = sorted({tag for unit in self.units for tag in unit.banks.values()},
                           key=_tag_order)
        digest = hashlib.sha256()
        for name in sorted(self.kernels):
            image = self.kernels[name]
            digest.update(image.kernel_xml.read_bytes())
            digest.update(hashlib.sha256(image.verilog.read_bytes()).digest())
        for unit in self.units:
            digest.update(json.dumps([unit.ip_name, unit.banks], sort_keys=True).encode())
        #: the xclbin's UUID: a digest of what would be linked
        self.uuid = digest.digest()[:16]

    def _assign_units(self, root: pathlib.Path):
        linked = {}
        for plan in [root / "build.json", *sorted(root.glob("*/build.json"))]:
            if not plan.is_file():
                continue
            try:
                built = json.loads(plan.read_text())
            except (OSError, ValueError):
                continue
            for entry in built.get("xclbins", {}).values():
                for name, connection in entry.get("connectivity", {}).items():
                    if connection.get("banks"):
                        linked.setdefault(name, connection["banks"])
            if linked:
                self.platform = built.get("platform") or ""
                break
        turn = 0
        for name, image in self.kernels.items():
            for number, planned in enumerate(linked.get(name, [{}]), 1):
                banks = {}
                for bundle in image.bundles:
                    tag = planned.get(bundle)
                    if tag is None:
                        tag, turn = f"DDR[{turn % 4}]", turn + 1
                    banks[bundle] = tag
                self.units.append(Unit(f"{name}_{number}", image, banks))

    def unit(self, ip_name: str) -> Unit | None:
        return next((unit for unit in self.units if unit.ip_name == ip_name), None)


def _embedded_metadata(image: BuildImage) -> bytes:
    """The EMBEDDED_METADATA XML: every kernel with its ports and arguments (port names as
    kernel.xml gives them), and one ``instance`` per compute unit."""
    project = ET.Element("project", name=image.path.name)
    platform = ET.SubElement(project, "platform", vendor="xilinx", boardid="",
                             name=image.platform, featureRomTime="0")
    device = ET.SubElement(platform, "device", name="fpga0", fpgaDevice="", addrWidth="0")
    core = ET.SubElement(device, "core", name="OCL_REGION_0", target="hw", type="clc_region",
                         clockFreq="0MHz", numComputeUnits=str(len(image.units)))
    for name, kernel in image.kernels.items():
        element = ET.SubElement(core, "kernel", name=name, language="ip",
                                vlnv=f"kmer-sketch:kernels:{name}:1.0",
                                preferredWorkGroupSizeMultiple="0", workGroupSize="1",
                                interrupt="true", hwControlProtocol="ap_ctrl_hs")
        for port_name, port in kernel.ports.items():
            ET.SubElement(element, "port", name=port_name, mode=port["mode"],
                          range=port["range"], dataWidth=port["dataWidth"],
                          portType=port["portType"], base=port["base"])
        for arg in kernel.args:
            ET.SubElement(element, "arg", name=arg["name"],
                          addressQualifier=str(arg["qualifier"]), id=str(arg["id"]),
                          port=arg["port"], size=hex(arg["size"]), offset=hex(arg["offset"]),
                          hostOffset="0x0", hostSize=hex(arg["size"]), type=arg["type"])
        for index, unit in enumerate(image.units):
            if unit.kernel is kernel:
                instance = ET.SubElement(element, "instance", name=unit.name)
                ET.SubElement(instance, "addrRemap", port="s_axi_control",
                              base=hex(CONTROL_BASE + index * CONTROL_STRIDE),
                              range=hex(kernel.control_range))
    return ET.tostring(project, encoding="utf-8", xml_declaration=True)


def _counted(structure, entry, entries: list) -> bytes:
    """A section of xclbin.h's ``{int32_t m_count; entry m_x[1];}`` form with ``entries``."""
    header = bytes(structure())[:ctypes.sizeof(structure) - ctypes.sizeof(entry)]
    body = b"".join(bytes(e) for e in entries)
    count = len(entries).to_bytes(4, "little", signed=True)
    data = count + header[4:] + body
    return data.ljust(ctypes.sizeof(structure), b"\0")


def _fill(field, text: bytes):
    field[:len(text)] = text


def axlf_container(image: BuildImage) -> bytes:
    """The xclbin of ``image``: an axlf header and the four sections XRT reads, each at an 8-byte
    boundary (xclbin.h: "Every segment must be aligned at 8 byte boundary")."""
    ips = []
    for index, unit in enumerate(image.units):
        entry = ip_data(m_type=IP_KERNEL, properties=AP_CTRL_HS << 8,
                        m_base_address=CONTROL_BASE + index * CONTROL_STRIDE)
        _fill(entry.m_name, unit.ip_name.encode())
        ips.append(entry)
    mems = []
    for index, tag in enumerate(image.mems):
        entry = mem_data(m_type=MEM_DDR4, m_used=1, m_size=BANK_KBYTES,
                         m_base_address=BANK_BASE + index * BANK_STRIDE)
        _fill(entry.m_tag, tag.encode())
        mems.append(entry)
    connections = []
    for ip_index, unit in enumerate(image.units):
        for arg in unit.kernel.args:
            bundle = unit.kernel.bundle(arg["id"])
            if bundle is not None:
                connections.append(connection(arg["id"], ip_index,
                                              image.mems.index(unit.banks[bundle])))
    sections = [("EMBEDDED_METADATA", _embedded_metadata(image)),
                ("MEM_TOPOLOGY", _counted(mem_topology, mem_data, mems)),
                ("CONNECTIVITY", _counted(connectivity, connection, connections)),
                ("IP_LAYOUT", _counted(ip_layout, ip_data, ips))]
    headers_end = ctypes.sizeof(axlf) + (len(sections) - 1) * ctypes.sizeof(axlf_section_header)
    offset = -(-headers_end // 8) * 8
    placed = []
    for name, data in sections:
        placed.append((name, offset, data))
        offset = -(-(offset + len(data)) // 8) * 8
    top = axlf(m_magic=MAGIC, m_signature_length=-1)
    _fill(top.reserved, b"\xff" * 28)
    _fill(top.m_keyBlock, b"\xff" * 256)
    top.m_uniqueId = int.from_bytes(image.uuid[:8], "little")
    header = top.m_header
    header.m_length = offset
    header.m_versionMajor, header.m_versionMinor, header.m_versionPatch = 2, 13, 0
    header.m_mode = XCLBIN_FLAT
    _fill(header.m_platformVBNV, image.platform.encode()[:63])
    _fill(header.uuid, image.uuid)
    header.m_numSections = len(sections)
    section_headers = []
    for name, start, data in placed:
        section = axlf_section_header(m_sectionKind=SECTION_KIND[name],
                                      m_sectionName=name.lower().encode()[:15],
                                      m_sectionOffset=start, m_sectionSize=len(data))
        section_headers.append(bytes(section))
    out = bytearray(offset)
    top_bytes = bytes(top)[:ctypes.sizeof(axlf) - ctypes.sizeof(axlf_section_header)]
    out[:len(top_bytes)] = top_bytes
    at = len(top_bytes)
    for section in section_headers:
        out[at:at + len(section)] = section
        at += len(section)
    for _, start, data in placed:
        out[start:start + len(data)] = data
    return bytes(out)
