"""The frame the Yosys resource benches share (bench/jsd_resources.py, bench/jacc_sketch_kernel.py,
bench/motif_resources.py): a component's Verilog with its signals as ports, the command line,
and the rows of the markdown table they print."""

import argparse
import sys

from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.lib import data

from hw.vitis.synth import NO_YOSYS, yosys_available

__all__ = ["part_verilog", "ResourceTable"]


def part_verilog(component, name: str) -> str:
    """Verilog of a component; its signal and view members become ports (always-ready streams
    have constant ``ready`` members, which cannot)."""
    ports = [value.as_value() if isinstance(value, data.View) else value
             for _, _, value in component.signature.flatten(component)
             if isinstance(value, (Signal, data.View))]
    return verilog.convert(component, name=name, ports=ports)


class ResourceTable:
    """Rows ``| part | LUT | FF | BRAM36 | URAM | DSP | levels |`` with a ``name_width`` column."""

    def __init__(self, name_width: int):
        self.name_width = name_width

    def start(self, doc: str, kernel_option: str, kernel_help: str):
        """Parse the command line (``kernel_option``, ``--family``, ``--parts``) and print the
        header; None (after a message) without Yosys. ``args.wanted``: the ``--parts`` list."""
        parser = argparse.ArgumentParser(description=doc.split("\n")[0])
        parser.add_argument(kernel_option, action="store_true", help=kernel_help)
        parser.add_argument("--family", default="xcup")
        parser.add_argument("--parts", help="comma-separated substrings of part names to run")
        args = parser.parse_args()
        args.wanted = args.parts.split(",") if args.parts else None
        if not yosys_available():
            print(NO_YOSYS, file=sys.stderr)
            return None
        width = self.name_width
        print(f"| {'part':{width}} | {'LUT':>8} | {'FF':>8} | {'BRAM36':>7} | {'URAM':>5} | "
              f"{'DSP':>5} | {'levels':>6} |")
        print(f"|{'-' * (width + 2)}|{'-' * 10}|{'-' * 10}|{'-' * 9}|{'-' * 7}|{'-' * 7}|"
              f"{'-' * 8}|")
        return args

    def row(self, name, res, levels="") -> str:
        bram = res.get("bram36", 0) + res.get("bram18", 0) / 2
        return (f"| {name:{self.name_width}} | {res['lut']:8g} | {res['ff']:8g} | {bram:7g} | "
                f"{res.get('uram', 0):5g} | {res['dsp']:5g} | {levels!s:>6} |")
