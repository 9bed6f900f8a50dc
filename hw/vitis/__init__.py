"""Vitis RTL kernel infrastructure.

* :mod:`.description` -- :class:`KernelDesc`, :class:`Arg`, :class:`Bundle`: the one description of
  a kernel's interface.
* :mod:`.core` -- :class:`KernelCore`, the base class of the part of a kernel that does the work
  (its contract: ``start``/``args``/``done``/``m_axi_<bundle>``; read that module's docstring).
* :mod:`.top` -- :class:`VitisKernel`, the top level with the exact Vitis port names, and
  :func:`to_verilog`.
* :mod:`.kernel_xml`, :mod:`.package`, :mod:`.link`, :mod:`.makefile` -- kernel.xml, the Vivado
  packaging Tcl, the v++ link configs and the per-board Makefile, generated from the description.
* :mod:`.emit` -- Verilog conversion (faster cycle check, compact memory initialisation);
  :mod:`.fit` -- the link fit check against a board's budget; :mod:`.synth` and :mod:`.timing`
  -- Yosys resource report and timing estimate; :mod:`.impl` -- Vivado out-of-context scripts.

Writing a kernel::

    from hw.vitis import KernelCore, KernelDesc, Arg, Bundle
    from hw.axi import AxiBurstReader, AxiBurstWriter, connect_axi_rw

    class MyKernel(KernelCore):
        def __init__(self, p=14):
            super().__init__(KernelDesc("my_kernel",
                args=[Arg("src", "pointer", "gmem0"), Arg("n", "scalar"),
                      Arg("out", "pointer", "gmem1")],
                bundles=[Bundle("gmem0"), Bundle("gmem1")]))
        def elaborate(self, platform):
            m = Module()
            m.submodules.rd = rd = AxiBurstReader()
            connect_axi_rw(m, self.m_axi_gmem0, reader=rd.axi)
            ...   # on self.start: push rd.cmd (self.args.src, self.args.n) ...
            ...   # when finished and the writer is idle: m.d.comb += self.done.eq(1)
            return m

``hw/kernels/checksum.py`` is a complete small example.
"""

from ._yosys import ensure_yosys
ensure_yosys()

from .description import Arg, Bundle, KernelDesc, POINTER, SCALAR
from .core import KernelCore, core_signature_members
from .top import VitisKernel, to_verilog, top_port_names

__all__ = ["Arg", "Bundle", "KernelDesc", "POINTER", "SCALAR", "KernelCore",
           "core_signature_members", "VitisKernel", "to_verilog", "top_port_names"]
