"""Does an xclbin fit its board?  The kernels' resources against the board minus its shell.

Budget: a board's device totals (``[resources]`` of ``boards/<name>.toml``) minus what its
platform's static region (the shell) takes (``[shell]``, with the source of the figures).

A kernel's resources come, in this order, from

1. the Yosys report of this build (``resources.json`` next to the kernel's Verilog, written by
   ``--resources``) when it was made from the same Verilog (sha256);
2. ``kernel_area.toml`` (next to this module): figures measured earlier at the kernel's default
   geometry, each with the command or document it comes from, used only when the kernel is built
   with exactly the parameters recorded there;
3. otherwise the kernel is unknown and the xclbin is reported as "not checked", not refused.

These are Yosys ``synth_xilinx`` figures, not Vivado's: a refusal means "over budget by a margin
that tool differences do not explain away", and ``--force`` links anyway.
"""

import hashlib
import json
import pathlib
import tomllib
from dataclasses import dataclass, field

__all__ = ["RESOURCES", "budget", "kernel_usage", "FitResult", "check_fit", "verilog_digest"]

RESOURCES = ("lut", "ff", "bram36", "uram", "dsp")
AREA_FILE = pathlib.Path(__file__).with_name("kernel_area.toml")


def budget(board):
    """``{resource: amount}`` a board leaves to kernels, and the shell figures' source."""
    shell = board.get("shell") or {}
    left = {r: board["resources"][r] - shell.get(r, 0) for r in RESOURCES}
    return left, shell.get("source", "no [shell] figures in the board file: whole device")


def verilog_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _recorded(name, params, area_file=AREA_FILE):
    if not pathlib.Path(area_file).exists():
        return None
    with open(area_file, "rb") as f:
        table = tomllib.load(f)
    entry = table.get(name)
    if entry is None:
        return None
    if any(params.get(k) != v for k, v in entry.get("params", {}).items()):
        return None
    return {r: entry.get(r, 0) for r in RESOURCES}, f"recorded ({entry['source']})"


def kernel_usage(name, params, kdir, module, *, area_file=AREA_FILE):
    """``(usage or None, source)`` of one compute unit of kernel ``name``."""
    kdir = pathlib.Path(kdir)
    report = kdir / "resources.json"
    verilog = kdir / f"{module}.v"
    if report.exists() and verilog.exists():
        rep = json.loads(report.read_text())
        if rep.get("verilog_sha256") == verilog_digest(verilog):
            return {r: rep["resources"][r] for r in RESOURCES}, "Yosys report of this build"
    rec = _recorded(name, params, area_file)
    if rec is not None:
        return rec
    return None, "unknown (no resources.json for this Verilog; run with --resources)"


@dataclass
class FitResult:
    xclbin: str
    board: str
    budget: dict
    shell_source: str
    need: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)    # kernel -> where its figures come from
    unknown: list = field(default_factory=list)   # kernels without figures

    @property
    def over(self):
        return {r: (self.need[r], self.budget[r]) for r in RESOURCES
                if self.need.get(r, 0) > self.budget[r]}

    @property
    def checked(self):
        return not self.unknown

    def message(self):
        over = ", ".join(f"{r.upper()} {n:,.0f} of {b:,.0f}" for r, (n, b) in self.over.items())
        return (f"xclbin {self.xclbin} does not fit board {self.board}: {over} "
                f"(device minus shell: {self.shell_source}; kernel figures: "
                + "; ".join(f"{k}: {s}" for k, s in self.sources.items()) + ")")

    def summary(self):
        if self.unknown:
            return (f"{self.xclbin}: fit not checked on {self.board} "
                    f"(no resource figures for {', '.join(self.unknown)})")
        use = ", ".join(f"{r.upper()} {self.need[r]:,.0f}/{self.budget[r]:,.0f}"
                        for r in RESOURCES if self.budget[r])
        return f"{self.xclbin}: {'fits' if not self.over else 'OVER BUDGET'} on {self.board}: {use}"

    def as_json(self):
        return {"budget": self.budget, "shell_source": self.shell_source, "need": self.need,
                "sources": self.sources, "unknown": self.unknown, "fits": not self.over,
                "checked": self.checked}


def check_fit(board, xclbin, members):
    """``members`` = [(kernel name, compute units, usage or None, source)]."""
    left, source = budget(board)
    res = FitResult(xclbin, board["name"], left, source, need={r: 0 for r in RESOURCES})
    for name, n_cu, usage, src in members:
        res.sources[name] = src
        if usage is None:
            res.unknown.append(name)
            continue
        for r in RESOURCES:
            res.need[r] += n_cu * usage.get(r, 0)
    return res
