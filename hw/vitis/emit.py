"""Verilog of a kernel, faster and smaller than Amaranth's stock path, for the same design.

Where the time of ``amaranth.back.verilog.convert`` went on the default kernels (profiled on the
2-core machine): the combinational-cycle check of the netlist (for the JACC similarity kernel
411 of 620 s), the memory initialisation (every memory bit its own netlist constant on the way to
RTLIL's ``$meminit_v2``, millions per kernel), and Yosys's ``write_verilog`` writing one
``initial`` assignment per memory word (most of the 9-34 MB of Verilog), and elaborating the
same :class:`~hw.common.feature_unit.FeatureUnit` hundreds of times (320 in the default JACC
similarity kernel).  Four changes, none altering the design or weakening a check:

* :func:`fast_comb_cycle_check`: Amaranth's check visits, for every output bit of an adder,
  comparator, shifter, bit select (``Part``), ``Matches`` or asynchronous read port, every input
  bit of that cell, which is quadratic in the width.  All output bits of such a cell depend on
  the same inputs, so one graph node per cell finds exactly the same cycles; on a cycle, Amaranth's
  own check runs and raises its usual message.
* :func:`fast_memory_init` emits the same ``$meminit_v2`` cell with its data as one RTLIL constant
  built from the integers directly (the bit order of Amaranth's own emitter: word 0 in the least
  significant bits);
* :func:`compact_memory_init` rewrites each ``initial begin`` block whose words all get the same
  value into a ``for`` loop over the words (Verilog-2001 named block with a local ``integer``);
* :func:`convert` elaborates every feature unit as an instance of one module per parameter set
  (:func:`hw.common.feature_unit.units_as_instances`) and appends that module's Verilog once:
  the default similarity kernel's Verilog went from 19.5 MB to 1.7 MB, and its generation from
  about 35 s to 7 s.

``tests/test_build.py`` checks that the result is the Verilog of Amaranth's stock path with only
the initial blocks rewritten, that Yosys reads the same memory contents from both, and that a
combinational cycle is still reported with Amaranth's message.
"""

import contextlib
import re

from amaranth.back import rtlil, verilog
from amaranth.hdl import _nir

from hw.common.feature_unit import units_as_instances

__all__ = ["fast_comb_cycle_check", "fast_memory_init", "compact_memory_init", "convert"]


def _uniform(cell):
    """Whether every output bit of ``cell`` has the same combinational inputs."""
    if isinstance(cell, _nir.Operator):
        if len(cell.inputs) == 1:
            return cell.operator != "~"
        if len(cell.inputs) == 2:
            return cell.operator not in ("&", "|", "^")
        return False
    return isinstance(cell, (_nir.Part, _nir.Matches, _nir.AsyncReadPort))


def has_comb_cycle(netlist):
    """Whether the netlist has a combinational cycle (the graph of Amaranth's
    ``Netlist.check_comb_cycles``, one node per cell whose outputs all share their inputs)."""
    cells, connections = netlist.cells, netlist.connections
    uniform = [_uniform(cell) for cell in cells]

    def node(net):
        if net >= 2 and uniform[net >> 16]:
            return ("cell", net >> 16)
        return net

    def sources(key):
        if isinstance(key, tuple):
            return [src for src, _ in cells[key[1]].comb_edges_to(0)]
        if key < 0:
            return [connections[key]]
        return [src for src, _ in cells[key >> 16].comb_edges_to(key & 0xFFFF)]

    on_path, done = 1, 2
    state = {}

    def visit(start):
        if start in state:
            return False
        state[start] = on_path
        stack = [(start, iter(sources(start)))]
        while stack:
            key, it = stack[-1]
            for src in it:
                if src in (0, 1):
                    continue
                nxt = node(src)
                seen = state.get(nxt)
                if seen is None:
                    state[nxt] = on_path
                    stack.append((nxt, iter(sources(nxt))))
                    break
                if seen == on_path:
                    return True
            else:
                state[key] = done
                stack.pop()
        return False

    for idx, cell in enumerate(cells):
        if uniform[idx]:
            if visit(("cell", idx)):
                return True
        else:
            for net in cell.output_nets(idx):
                if visit(node(net)):
                    return True
    for value in netlist.signals.values():
        for net in value:
            if net not in (0, 1) and visit(node(net)):
                return True
    return False


@contextlib.contextmanager
def fast_comb_cycle_check():
    """Within the block, Amaranth checks netlists for combinational cycles with
    :func:`has_comb_cycle` first, and runs its own check (for its message) only on a cycle."""
    saved = _nir.Netlist.check_comb_cycles

    def check(self):
        if has_comb_cycle(self):
            saved(self)

    _nir.Netlist.check_comb_cycles = check
    try:
        yield
    finally:
        _nir.Netlist.check_comb_cycles = saved


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
# a plain or an escaped (backslash ... space) identifier. INIT_BLOCK, INIT_WORD (one word of its
# body: memory, index, value) and INIT_LOOP are read by hw.vitis.synth and sim.runner too.
INIT_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)initial begin\n"
    r"(?P<body>(?:[ \t]*(?:\\\S+ |[A-Za-z_][\w$]*)\[\d+\] = [^;\n]+;\n)+)"
    r"(?P=indent)end\n", re.M)
INIT_WORD = re.compile(r"[ \t]*(?P<memory>\\\S+ |[A-Za-z_][\w$]*)\[(?P<index>\d+)\] = "
                       r"(?P<value>[^;\n]+);\n")
# what _compact writes
INIT_LOOP = re.compile(
    r"^(?P<indent>[ \t]*)initial begin : \w+\n"
    r"[ \t]*integer i;\n"
    r"[ \t]*for \(i = 0; i < (?P<depth>\d+); i = i \+ 1\)\n"
    r"[ \t]*(?P<memory>\\\S+ |[A-Za-z_][\w$]*)\[i\] = (?P<value>[^;\n]+);\n"
    r"(?P=indent)end\n", re.M)


def _compact(match):
    words = INIT_WORD.findall(match.group("body"))
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
    return INIT_BLOCK.sub(_compact, text)


def convert(top, name, **kwargs):
    """``amaranth.back.verilog.convert`` with the faster cycle check and compact memory
    initialisation, every :class:`~hw.common.feature_unit.FeatureUnit` emitted once per
    parameter set as its own module and instanced (the same logic, not elaborated per unit)."""
    with fast_comb_cycle_check(), fast_memory_init():
        with units_as_instances() as wanted:
            text = verilog.convert(top, name=name, **kwargs)
        for module, unit in sorted(wanted.items()):
            text += verilog.convert(unit, name=module)
    return compact_memory_init(text)
