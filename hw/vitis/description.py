"""The Amaranth side of a kernel description (kmerspec.interface): the AXI4 signature of a bundle.

The description itself (arguments, bundles, register offsets) is plain data in kmerspec so that
the host drives a card without Amaranth; it is re-exported here for the generators in hw/vitis.
"""

from kmerspec.interface import AXI_DATA_WIDTHS, POINTER, SCALAR, Arg, Bundle, KernelDesc

from ..axi.signature import Axi4Signature

__all__ = ["Arg", "Bundle", "KernelDesc", "POINTER", "SCALAR", "AXI_DATA_WIDTHS",
           "bundle_signature"]


def bundle_signature(bundle: Bundle) -> Axi4Signature:
    """The AXI4 master signature of ``m_axi_<bundle.name>``."""
    return Axi4Signature(addr_width=bundle.addr_width, data_width=bundle.data_width,
                         id_width=bundle.id_width)
