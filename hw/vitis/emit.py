"""Verilog of a kernel, with memory initialisation written compactly.

Amaranth 0.5 gives every memory bit of its initial contents its own netlist constant on the way to
RTLIL (``$meminit_v2``), and Yosys's ``write_verilog`` then writes one ``initial`` assignment per
memory word: a default kernel has millions of such bits, which cost about a third of the
generation time and most of the 9-34 MB of Verilog.  Two changes, neither altering the design:

* :func:`fast_memory_init` emits the same ``$meminit_v2`` cell with its data as one RTLIL constant
  built from the integers directly (the bit order of Amaranth's own emitter: word 0 in the least
  significant bits);
* :func:`compact_memory_init` rewrites each ``initial begin`` block whose words all get the same
  value into a ``for`` loop over the words (Verilog-2001 named block with a local ``integer``).

``tests/test_build.py`` checks that both together give the Verilog of Amaranth's stock path
with only the initial blocks rewritten, and that the rewrite keeps every word's value.
"""

import contextlib
import re

from amaranth.back import rtlil, verilog
from amaranth.hdl import _nir

__all__ = ["fast_memory_init", "compact_memory_init", "convert"]


def _emit_memory_fast(self, cell_idx, cell):
    memory_info = self.memories[cell_idx]
    width, mask = cell.width, (1 << cell.width) - 1
    data = "".join(format(row & mask, f"0{width}b") for row in reversed(cell.init))
    self.builder.cell("$meminit_v2", ports={
        "ADDR": self.sigspec(),
        "DATA": f"{width * cell.depth}'{data}",
        "EN": self.sigspec(_nir.Value.ones(width)),
    }, parameters={
        "MEMID": memory_info.memid,
        "ABITS": 0,
        "WIDTH": width,
        "WORDS": cell.depth,
        "PRIORITY": 0,
    }, src_loc=cell.src_loc)


@contextlib.contextmanager
def fast_memory_init():
    """Within the block, Amaranth's RTLIL backend writes memory contents as one constant."""
    saved = rtlil.ModuleEmitter.emit_memory
    rtlil.ModuleEmitter.emit_memory = _emit_memory_fast
    try:
        yield
    finally:
        rtlil.ModuleEmitter.emit_memory = saved


# Yosys: "  initial begin\n    <mem>[0] = 64'h0;\n    <mem>[1] = ...;\n  end\n", the memory name
# a plain or an escaped (backslash ... space) identifier.
_INIT_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)initial begin\n"
    r"(?P<body>(?:[ \t]*(?:\\\S+ |[A-Za-z_][\w$]*)\[\d+\] = [^;\n]+;\n)+)"
    r"(?P=indent)end\n", re.M)
_INIT_WORD = re.compile(r"[ \t]*(\\\S+ |[A-Za-z_][\w$]*)\[(\d+)\] = ([^;\n]+);\n")


def _compact(match):
    words = _INIT_WORD.findall(match.group("body"))
    names = {w[0] for w in words}
    values = {w[2] for w in words}
    indices = [int(w[1]) for w in words]
    if len(names) != 1 or len(values) != 1 or indices != list(range(len(indices))):
        return match.group(0)
    name, value, ind = words[0][0], words[0][2], match.group("indent")
    return (f"{ind}initial begin : {_block_name(name)}\n"
            f"{ind}  integer i;\n"
            f"{ind}  for (i = 0; i < {len(indices)}; i = i + 1)\n"
            f"{ind}    {name}[i] = {value};\n"
            f"{ind}end\n")


def _block_name(memory):
    return re.sub(r"\W", "_", memory.strip().lstrip("\\")) + "__init"


def compact_memory_init(text):
    """``text`` with every memory initialisation that sets all words (0 .. N-1, in order) to one
    value written as a loop; other initial blocks are left as they are."""
    return _INIT_BLOCK.sub(_compact, text)


def convert(top, name, **kwargs):
    """``amaranth.back.verilog.convert`` with compact memory initialisation."""
    with fast_memory_init():
        text = verilog.convert(top, name=name, **kwargs)
    return compact_memory_init(text)
