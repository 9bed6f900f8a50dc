"""Base class of a kernel core (the part of a kernel that does the work).

A core is a ``wiring.Component`` whose signature is derived from a :class:`KernelDesc`:

``start``              In(1)   one-cycle pulse: a run begins.
``args``               In(StructLayout)  one field per argument (``args.<name>``: 64 bits for a
                               pointer, 32 for a scalar), valid from the ``start`` cycle and stable
                               until the next ``start``.
``done``               Out(1)  one-cycle pulse: the run has completed.  Raise it only after every
                               write of the run has its B response (``AxiBurstWriter.idle``).
``error``              Out(32) the ERROR register (:mod:`kmerspec.regmap`: an ``ERROR_*`` code in
                               bits 7:0, an argument index in 15:8; 0 = success), held from
                               ``done`` until the next ``start``.
``fresh``              In(1)   with ``args``: the call must start from a clean kernel (reset or the
                               host's FRESH write since the last call); the shell resets its core.
``m_axi_<bundle>``     Out(Axi4Signature)  one AXI4 master per bundle.  Use
                               :class:`hw.axi.AxiBurstReader` / :class:`hw.axi.AxiBurstWriter` and
                               :func:`hw.axi.connect_axi_rw` to drive it.

The core runs in the ``sync`` domain, whose clock is ``ap_clk`` and whose (synchronous, active-
high) reset is ``~ap_rst_n`` delayed by two register stages.  A subclass may add members of its
own (``extra_members``), which the Vitis top ties to 0 (status outputs are simply dropped).
"""

from amaranth import *
from amaranth.lib import wiring, data
from amaranth.lib.wiring import In, Out

from .description import KernelDesc, bundle_signature

__all__ = ["KernelCore", "core_signature_members"]


def core_signature_members(desc: KernelDesc):
    layout = data.StructLayout({a.name: a.width for a in desc.args} or {"_none": 1})
    members = {"start": In(1), "args": In(layout), "done": Out(1), "error": Out(32),
               "fresh": In(1)}
    for b in desc.bundles:
        members[b.port] = Out(bundle_signature(b))
    return members


class KernelCore(wiring.Component):
    """Subclass this; set ``desc`` (a :class:`KernelDesc`) by passing it to ``__init__``."""

    #: the LUT mapping of the kernel's Yosys report (``mapper`` of
    #: :func:`hw.vitis.synth.yosys_report`); None: mapped for the board's clock
    lut_mapping = None

    def __init__(self, desc: KernelDesc, extra_members=None):
        self.desc = desc
        members = core_signature_members(desc)
        for k, v in (extra_members or {}).items():
            if k in members:
                raise ValueError(f"extra member {k!r} collides with the core contract")
            members[k] = v
        super().__init__(members)
