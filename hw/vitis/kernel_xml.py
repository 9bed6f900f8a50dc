"""kernel.xml (for ``package_xo -kernel_xml``), generated from a :class:`KernelDesc`, and its parser.

Format as in the Vitis RTL kernel examples (root versionMajor 1 / versionMinor 6): one
``s_axi_control`` slave port, one ``m_axi_<bundle>`` master port per bundle (``dataWidth`` = AXI
data bits), and one ``<arg>`` per host argument with ``id`` = host index, ``offset``/``size`` from
:func:`kmerspec.regmap.layout_args`, ``addressQualifier`` 1 for pointers and 0 for scalars.
"""

import xml.etree.ElementTree as ET

from .description import KernelDesc, POINTER

__all__ = ["kernel_xml", "parse_kernel_xml"]


def kernel_xml(desc: KernelDesc) -> str:
    root = ET.Element("root", versionMajor="1", versionMinor="6")
    k = ET.SubElement(root, "kernel", {
        "name": desc.name,
        "language": "ip_c",
        "vlnv": desc.vlnv,
        "attributes": "",
        "preferredWorkGroupSizeMultiple": "0",
        "workGroupSize": "1",
        "interrupt": "true",
        "hwControlProtocol": "ap_ctrl_hs",
    })
    ports = ET.SubElement(k, "ports")
    ET.SubElement(ports, "port", {
        "name": "s_axi_control", "mode": "slave", "range": hex(1 << desc.control_addr_width),
        "dataWidth": "32", "portType": "addressable", "base": "0x0"})
    for b in desc.bundles:
        ET.SubElement(ports, "port", {
            "name": b.port, "mode": "master", "range": "0xFFFFFFFFFFFFFFFF",
            "dataWidth": str(b.data_width), "portType": "addressable", "base": "0x0"})
    args = ET.SubElement(k, "args")
    for i, (a, slot) in enumerate(desc.register_map()):
        ET.SubElement(args, "arg", {
            "name": a.name,
            "addressQualifier": "1" if a.kind == POINTER else "0",
            "id": str(i),
            "port": f"m_axi_{a.bundle}" if a.kind == POINTER else "s_axi_control",
            "size": hex(slot.size),
            "offset": hex(slot.offset),
            "hostOffset": "0x0",
            "hostSize": hex(slot.size),
            "type": a.c_type,
        })
    ET.indent(root, "  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def parse_kernel_xml(text: str) -> dict:
    """``{"name", "ports": {name: {...}}, "args": [{name, id, offset, size, port, qualifier}]}``."""
    root = ET.fromstring(text)
    k = root.find("kernel")
    ports = {p.get("name"): dict(p.attrib) for p in k.find("ports")}
    args = []
    for a in k.find("args"):
        args.append({
            "name": a.get("name"), "id": int(a.get("id")), "offset": int(a.get("offset"), 16),
            "size": int(a.get("size"), 16), "port": a.get("port"),
            "qualifier": int(a.get("addressQualifier")), "type": a.get("type"),
        })
    args.sort(key=lambda a: a["id"])
    return {"name": k.get("name"), "protocol": k.get("hwControlProtocol"), "ports": ports,
            "args": args}
