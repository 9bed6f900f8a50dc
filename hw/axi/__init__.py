"""AXI plumbing shared by every kernel: signatures, the ap_ctrl_hs control block, burst reader and
writer.  One topic per module."""

from kmerspec.regmap import RegArg, ArgSlot, layout_args

from .signature import Axi4Signature, AxiLiteSignature
from .lite_control import AxiLiteControl
from .burst import BurstSplitter, CommandLayout
from .reader import AxiBurstReader, ReadBeatLayout
from .writer import AxiBurstWriter
from .connect import connect_axi_rw

__all__ = ["Axi4Signature", "AxiLiteSignature", "RegArg", "ArgSlot", "layout_args",
           "AxiLiteControl", "BurstSplitter", "CommandLayout", "AxiBurstReader",
           "ReadBeatLayout", "AxiBurstWriter", "connect_axi_rw"]
