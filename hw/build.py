"""Generate everything Vitis needs to build the kernels for a board.

    python -m hw.build --board f1 [--kernels jacc_sketch,jacc_similarity,jsd_builder,...] [-o DIR]
                       [--config FILE] [--require-tools] [-P KERNEL.PARAM=VALUE ...]
                       [--link XCLBIN=K1,K2 ...] [--force] [--resources] [--impl] [-j N]
                       [--list]

For each kernel (``DIR/kernels/<name>/``): the Verilog top (``<name>.v``), ``kernel.xml``, the Vivado
packaging Tcl (``package_<name>.tcl``) and, with ``--resources``, a Yosys resource, logic-depth and
delay report (``resources.json``).  For the board (``DIR`` itself; with several boards
``DIR/<board>/`` each): one v++ link config per xclbin of the link plan (``link_<xclbin>.cfg``:
``nk=``, ``slr=`` of every compute unit and ``sp=`` of every m_axi port to a bank of its SLR), a
``Makefile`` with the exact vivado/v++ commands (and ``create_vitis_afi.sh``/``afi-status`` for
F1), ``report_slr.tcl`` and ``build.json``.  The default link plan is one xclbin per workflow
(:data:`WORKFLOWS`); each is checked against the board's budget and its compute units placed in
its SLRs (hw/vitis/fit.py, docs/link_plan.md, with a fit table per SLR); an xclbin of the default
plan that cannot be placed is split into one xclbin per kernel, an xclbin asked for (``--link``,
``[xclbins]``) that cannot be placed is refused unless ``--force``.  ``--impl`` adds Vivado
out-of-context implementation scripts (:mod:`hw.vitis.impl`), run when Vivado is on PATH, whose
utilisation the fit check then uses.  Kernels are generated ``-j`` at a time, each in its own
process; progress goes to stdout, one line per step with the elapsed time.

Exit status: 0 when every requested kernel was generated and every xclbin placed; 2 (``error: ...``
lines naming the kernel or xclbin and the cause) when a kernel fails to import or elaborate, a
parameter is refused, an xclbin cannot be placed (the SLR and the resource named) or the Vitis
release in use cannot target the board -- the other kernels are still generated; 3 with
``--require-tools`` when vivado/v++ are missing.  If ``vivado`` and ``v++`` are on PATH the
Makefile is run; otherwise generation finishes and the next command is printed.

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
    [xclbins]                        # the link plan instead of one xclbin per workflow
    kmer_all = ["jacc_sketch", "jacc_similarity"]

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
import time
import tomllib

from .vitis.boards import BoardError, list_boards, load_board

__all__ = ["KERNELS", "ALIASES", "EXAMPLES", "WORKFLOWS", "main", "build", "link_plan",
           "resolve_kernel", "kernel_for", "canonical_name", "KernelUnavailable"]

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

#: The default link plan: one xclbin per workflow (``<XCLBIN_PREFIX>_<workflow>.xclbin``), each
#: checked against its board's budget (hw/vitis/fit.py).  Other kernels get an xclbin each.
WORKFLOWS = {
    "jacc": ("jacc_sketch", "jacc_similarity"),
    "jsd": ("jsd_builder", "jsd_similarity"),
    "motif": ("motif",),
}
XCLBIN_PREFIX = "kmer"


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


def convert_value(value, default):
    """A -P string as the type of the parameter's ``default`` (other values unchanged)."""
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
        kwargs[k] = convert_value(v, known[k])
    obj = cls(cls.Params(**kwargs))
    top = obj if isinstance(obj, VitisKernel) else VitisKernel(obj)
    return top, {**known, **kwargs}


# ---- generation -----------------------------------------------------------------------------

class _Clock:
    """Progress lines: elapsed time since the start of the build, then the message."""

    def __init__(self, log, t0=None):
        self.log = log
        self.t0 = time.monotonic() if t0 is None else t0

    def __call__(self, msg):
        self.log(f"[{time.monotonic() - self.t0:6.1f} s] {msg}")


def generate_kernel(name, cls, params, kdir: pathlib.Path, *, board_for_tcl, progress=None):
    from .vitis.kernel_xml import kernel_xml
    from .vitis.top import to_verilog
    from .vitis.package import package_tcl
    progress = progress or (lambda msg: None)
    top, used = instantiate(name, cls, params)
    desc = top.desc
    kdir.mkdir(parents=True, exist_ok=True)
    vname = f"{desc.name}.v"
    progress(f"{name}: elaborating and writing {kdir / vname}")
    t = time.monotonic()
    text = to_verilog(top)
    (kdir / vname).write_text(text)
    progress(f"{name}: {vname} {len(text) / 1e6:.1f} MB in {time.monotonic() - t:.1f} s; "
             f"kernel.xml, package_{desc.name}.tcl")
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


def link_plan(names, groups=None):
    """``[(xclbin name, [kernel names])]``.  ``groups`` ({xclbin: [kernels]}, from ``--link`` or
    the config's ``[xclbins]``) must place every requested kernel exactly once; by default each
    workflow of :data:`WORKFLOWS` present among ``names`` is one xclbin and any other kernel is
    one of its own.  Earlier kernel names (:data:`ALIASES`) are accepted in both."""
    names = [canonical_name(k) for k in names]
    groups = {x: [canonical_name(k) for k in ks] for x, ks in (groups or {}).items()}
    if groups:
        placed = [k for ks in groups.values() for k in ks]
        for k in placed:
            if k not in names:
                raise ValueError(f"link plan: kernel {k!r} is not among the kernels built "
                                 f"({', '.join(names)})")
        twice = sorted({k for k in placed if placed.count(k) > 1})
        if twice:
            raise ValueError(f"link plan: {', '.join(twice)} in more than one xclbin")
        missing = [k for k in names if k not in placed]
        if missing:
            raise ValueError(f"link plan: no xclbin for {', '.join(missing)}")
        return [(x, list(ks)) for x, ks in groups.items() if ks]
    plan, placed = [], set()
    for flow, members in WORKFLOWS.items():
        present = [k for k in members if k in names]
        if present:
            plan.append((f"{XCLBIN_PREFIX}_{flow}", present))
            placed |= set(present)
    plan += [(f"{XCLBIN_PREFIX}_{k}", [k]) for k in names if k not in placed]
    return plan


def _resource_report(name, desc, kdir, board, progress, params):
    from .vitis.fit import verilog_digest
    from .vitis.synth import NO_YOSYS, yosys_available, yosys_report
    try:
        available = yosys_available()
    except RuntimeError as e:       # KMER_YOSYS names an unknown or missing backend
        return f"kernel {name!r}: resource report failed: {e}"
    if not available:
        progress(f"{name}: resource report skipped: {NO_YOSYS}")
        return
    progress(f"{name}: Yosys synth_xilinx (slow)")
    t = time.monotonic()
    vpath = kdir / f"{desc.name}.v"
    try:
        # a kernel may name the mapping that serves it better (KernelCore.lut_mapping)
        mapper = getattr(available_kernels().get(name), "lut_mapping", None)
        rep = yosys_report(vpath, desc.name, family=board["yosys_family"],
                           device=board["resources"], clock_hz=board["kernel_clock_hz"],
                           purge_names=True, mapper=mapper)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return f"kernel {name!r}: resource report failed: {str(e).splitlines()[0]}"
    rep["kernel"] = name
    rep["board"] = board["name"]
    rep["params"] = params
    rep["verilog_sha256"] = verilog_digest(vpath)
    (kdir / "resources.json").write_text(json.dumps(rep, indent=2, default=str) + "\n")
    progress(f"{name}: resources.json in {time.monotonic() - t:.1f} s\n" + resource_table([rep]))


def _implement(name, desc, kdir, board, progress, run):
    """Write the out-of-context implementation script; run it when Vivado is there; fold an
    ``impl.json`` made from this Verilog into ``resources.json``."""
    from .vitis.fit import verilog_digest
    from .vitis.impl import IMPL_JSON, impl_tcl
    script = f"impl_{desc.name}.tcl"
    digest = verilog_digest(kdir / f"{desc.name}.v")
    (kdir / script).write_text(impl_tcl(desc, verilog_file=f"{desc.name}.v", part=board["part"],
                                        clock_hz=board["kernel_clock_hz"], verilog_sha256=digest))
    result = kdir / IMPL_JSON
    if run and shutil.which("vivado"):
        progress(f"{name}: Vivado out-of-context synthesis, placement and routing (slow)")
        rc = subprocess.call(["vivado", "-mode", "batch", "-nojournal", "-nolog", "-source",
                              script], cwd=kdir)
        if rc:
            return f"kernel {name!r}: Vivado implementation failed (exit {rc}); see {kdir}"
    elif not (result.exists() and json.loads(result.read_text()).get("verilog_sha256") == digest):
        progress(f"{name}: {script} written; vivado not on PATH -- run: cd {kdir} && "
                 f"vivado -mode batch -nojournal -nolog -source {script}, then this command again")
        return None
    impl = json.loads(result.read_text())
    report = kdir / "resources.json"
    rep = json.loads(report.read_text()) if report.exists() else {"kernel": name}
    rep["impl"] = impl
    report.write_text(json.dumps(rep, indent=2, default=str) + "\n")
    progress(f"{name}: Vivado WNS {impl['wns_ns']} ns at {impl['period_ns']} ns, "
             f"{impl['lut']} LUT, {impl['ff']} FF, {impl['bram36']} BRAM36, {impl['dsp']} DSP")
    return None


def _board_platform(board, platform, error):
    """``(platform name, Vitis release or None)``: an explicit ``platform`` wins; a board with
    ``[vitis_platforms]`` (F1) takes the one of the Vitis release found (XILINX_VITIS, else
    ``v++ --version``) and refuses a release it has none for (None for the platform)."""
    from .vitis.makefile import vitis_release
    table = board.get("vitis_platforms") or {}
    release = vitis_release() if table else None
    if release and release not in table:
        error(f"board {board['name']}: Vitis {release} cannot target {board['name']}: "
              f"supported Vitis releases {', '.join(sorted(table))} "
              f"({'; '.join(f'{r}: {p}' for r, p in sorted(table.items()))})")
        return None, release
    if platform:
        return platform, release
    if release:
        return table[release], release
    return board["platforms"][0], release


def _place_xclbin(board, xclbin, names, by_name, banks, cus):
    """The total fit check and the SLR placement of one xclbin's compute units."""
    from .vitis.fit import Unit, check_fit, kernel_usage, place_units
    from .vitis.link import _resolve_bank, cu_names
    members, units = [], []
    for n in names:
        desc, kdir, info = by_name[n]
        count = int(cus.get(n, 1))
        usage, source = kernel_usage(n, info["params"], kdir, desc.name)
        members.append((n, count, usage, source))
        overrides = dict(banks.get(n) or {})
        unknown = set(overrides) - {b.name for b in desc.bundles}
        if unknown:
            raise ValueError(f"kernel {desc.name}: no bundle {', '.join(sorted(unknown))} "
                             f"(bundles: {', '.join(b.name for b in desc.bundles)})")
        overrides = {b: _resolve_bank(desc, b, bank, board["memory_banks"])
                     for b, bank in overrides.items()}
        units += [Unit(n, cu, [b.name for b in desc.bundles], usage, source, overrides)
                  for cu in cu_names(desc, count)]
    return check_fit(board, xclbin, members), place_units(board, xclbin, units), members


def placements(board, plan, by_name, banks, cus, *, may_split, progress, noun="xclbin"):
    """Yield ``(name, kernels, fit, placement, members, why)`` for each xclbin of ``plan``
    (``[(name, kernel names)]``; an F2 CL for hw/f2, ``noun`` "CL"): its fit check and SLR
    placement (:func:`_place_xclbin`), ``why`` the reason it cannot be placed or None. With
    ``may_split`` (the default plan) one that cannot be placed becomes one per kernel."""
    todo = list(plan)
    while todo:
        name, names = todo.pop(0)
        fit, placement, members = _place_xclbin(board, name, names, by_name, banks, cus)
        why = fit.message().replace("xclbin", noun, 1) if fit.over else (
            f"{noun} {name} cannot be placed on board {board['name']}: {placement.failure}"
            if placement.failure else None)
        if why and may_split and len(names) > 1:
            parts = [(f"{XCLBIN_PREFIX}_{n}", [n]) for n in names]
            progress(f"{board['name']}: {name} cannot be placed in one piece ({why}): "
                     f"split into {', '.join(x for x, _ in parts)}")
            todo = parts + todo
            continue
        yield name, names, fit, placement, members, why


def report_placement(board, fit, placement, progress, note=""):
    """Print a placed xclbin's (or CL's) fit summary, its per-SLR table and warnings."""
    from .vitis.fit import fit_table
    progress(f"{board['name']}: {fit.summary()}{note}")
    if placement.slrs:
        progress(fit_table(placement))
    for line in placement.spanning + placement.warnings:
        progress(f"{board['name']}: warning: {line}")


def _link_board(board, kernels, plan, bdir, *, platform, banks, cus, force, progress, error,
                may_split):
    """Link configs (with the SLR placement), Makefile and build.json of one board.  Returns
    ``(binfo, refused xclbins)``.  ``may_split``: the plan is the default one, so an xclbin whose
    kernels cannot be placed together becomes one xclbin per kernel."""
    from .vitis.link import bank_plan, link_cfg
    from .vitis.makefile import SLR_REPORT_TCL, makefile, slr_report_tcl
    bdir.mkdir(parents=True, exist_ok=True)
    plat, release = _board_platform(board, platform, error)
    by_name = {name: (desc, kdir, info) for name, desc, kdir, info in kernels}
    linked, refused, xinfo = [], [], {}
    for xclbin, names, fit, placement, members, why in placements(
            board, plan, by_name, banks, cus, may_split=may_split, progress=progress):
        if placement.slrs:
            cu_banks = [[placement.banks.get(cu) for cu in _cus(by_name[n][0], c)]
                        for n, c, _, _ in members]
        else:        # a board file without [slr]: banks in turn, no slr=
            cu_banks = bank_plan([(by_name[n][0], c, banks.get(n)) for n, c, _, _ in members],
                                 board["memory_banks"])
        if placement.failure:     # units left unplaced (refused, or --force): banks in turn
            spare = bank_plan([(by_name[n][0], c, banks.get(n)) for n, c, _, _ in members],
                              board["memory_banks"])
            cu_banks = [[b or s for b, s in zip(bs, ss)] for bs, ss in zip(cu_banks, spare)]
        # a placement that failed (linked with --force) gives no unit an SLR
        cu_slrs = [[None if placement.failure else placement.slr_of(cu)
                    for cu in _cus(by_name[n][0], c)] for n, c, _, _ in members]
        xinfo[xclbin] = {"kernels": names, "fit": fit.as_json(), "placement": placement.as_json(),
                         "connectivity": {by_name[n][0].name: {"compute_units": c, "banks": b,
                                                               "slr": s}
                                          for (n, c, _, _), b, s in zip(members, cu_banks,
                                                                        cu_slrs)}}
        if why and not force:
            error(f"{why}; link it anyway with --force, or choose smaller parameters (-P) or "
                  "another link plan (--link)")
            refused.append(xclbin)
            xinfo[xclbin]["refused"] = True
            # a link config of an earlier run must not stand for the refused plan
            (bdir / f"link_{xclbin}.cfg").unlink(missing_ok=True)
            continue
        report_placement(board, fit, placement, progress,
                         " -- linked anyway (--force)" if why else "")
        (bdir / f"link_{xclbin}.cfg").write_text(link_cfg(
            board, [(by_name[n][0], b, s) for (n, _, _, _), b, s in zip(members, cu_banks,
                                                                         cu_slrs)],
            xclbin=xclbin))
        linked.append((xclbin, [by_name[n][0] for n in names]))
    rel = [(desc, os.path.relpath(kdir, bdir)) for name, desc, kdir, info in kernels]
    (bdir / SLR_REPORT_TCL).write_text(slr_report_tcl())
    (bdir / "Makefile").write_text(makefile(board, rel, linked, plat or board["platforms"][0],
                                            explicit_platform=bool(platform)))
    binfo = {"board": board["name"], "platform": plat, "vitis_release": release,
             "part": board["part"], "kernel_clock_hz": board["kernel_clock_hz"],
             "xclbins": xinfo}
    (bdir / "build.json").write_text(json.dumps(binfo, indent=2) + "\n")
    progress(f"{board['name']}: {bdir}/Makefile, "
             + ", ".join(f"link_{x}.cfg" for x, _ in linked) + f" (platform {plat})")
    if plat is None:
        refused.append("(platform)")
    return binfo, refused


def _cus(desc, count):
    from .vitis.link import cu_names
    return cu_names(desc, count)


def _generate_one(name, params, kdir, board, progress):
    """``(desc, info, None)``, or ``(None, None, problem)`` naming the kernel and the cause."""
    try:
        cls = resolve_kernel(name)
        desc, info = generate_kernel(name, cls, params, kdir, board_for_tcl=board,
                                     progress=progress)
    except KernelUnavailable as e:
        return None, None, str(e)
    except ValueError as e:       # a parameter the kernel refuses
        return None, None, f"kernel {name!r}: {e}"
    except Exception as e:        # an elaboration failure: name the kernel, go on
        return None, None, f"kernel {name!r}: elaboration failed: {type(e).__name__}: {e}"
    return desc, info, None


def _generate_in_worker(job):
    name, params, kdir, board, t0 = job
    return (name, *_generate_one(name, params, kdir, board,
                                 _Clock(lambda msg: print(msg, flush=True), t0)))


def _generate_all(names, params, out, board, progress, jobs):
    """Generate every kernel, ``jobs`` at a time (each elaborated once, in its own process when
    jobs > 1); yields ``(name, desc, info, problem)`` in the order of ``names``."""
    work = [(n, params.get(n, {}), out / "kernels" / n, board, progress.t0) for n in names]
    if jobs <= 1 or len(work) <= 1:
        for name, p, kdir, b, _ in work:
            yield (name, *_generate_one(name, p, kdir, b, progress))
        return
    import multiprocessing
    sys.stdout.flush()
    with multiprocessing.get_context("fork").Pool(min(jobs, len(work)),
                                                  maxtasksperchild=1) as pool:
        yield from pool.imap(_generate_in_worker, work)


def build(boards, kernel_names, out, *, params=None, banks=None, cus=None, platform=None,
          resources=False, require_tools=False, run_tools=True, link=None, force=False,
          impl=False, jobs=1, log=print, error=None):
    """Generate (and, with the tools present, run) the build.  Returns ``(status, summary)``:
    status 2 when a requested kernel could not be generated or an xclbin was refused."""
    error = error or (lambda msg: print(f"error: {msg}", file=sys.stderr))
    kernel_names = [canonical_name(k) for k in kernel_names]
    params = {canonical_name(k): v for k, v in (params or {}).items()}
    banks = {canonical_name(k): v for k, v in (banks or {}).items()}
    cus = {canonical_name(k): v for k, v in (cus or {}).items()}
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    board_objs = [load_board(b) for b in boards]
    plan = link_plan(kernel_names, link)
    progress = _Clock(log)

    kernels = []
    problems = []
    for name, desc, info, problem in _generate_all(kernel_names, params, out, board_objs[0],
                                                   progress, jobs):
        if problem:
            problems.append(problem)
            error(problem)
        else:
            kernels.append((name, desc, out / "kernels" / name, info))
    if resources:
        for name, desc, kdir, info in kernels:
            problem = _resource_report(name, desc, kdir, board_objs[0], progress, info["params"])
            if problem:
                problems.append(problem)
                error(problem)
    if impl:
        for name, desc, kdir, info in kernels:
            problem = _implement(name, desc, kdir, board_objs[0], progress, run_tools)
            if problem:
                problems.append(problem)
                error(problem)

    summary = {"kernels": [k[3] for k in kernels], "boards": {}, "problems": problems}
    if not kernels:
        error("no kernel could be generated")
        return 2, summary
    built = {k[0] for k in kernels}
    plan = [(x, [k for k in ks if k in built]) for x, ks in plan]
    plan = [(x, ks) for x, ks in plan if ks]

    tools_missing = [t for t in ("vivado", "v++") if shutil.which(t) is None]
    status = 2 if problems else 0
    for board in board_objs:
        # -o DIR: one board's Makefile, link configs and build.json go into DIR itself; with
        # several boards, each into DIR/<board>
        bdir = out if len(board_objs) == 1 else out / board["name"]
        binfo, refused = _link_board(board, kernels, plan, bdir, platform=platform, banks=banks,
                                     cus=cus, force=force, progress=progress, error=error,
                                     may_split=not link)
        summary["boards"][board["name"]] = binfo
        if refused:
            status = 2
        if tools_missing or not run_tools or status:
            if tools_missing:
                progress(f"{board['name']}: not on PATH: {', '.join(tools_missing)} -- "
                         "generation only.")
            progress(f"{board['name']}: next: source the Vitis/XRT settings"
                     + (" and aws-fpga vitis_setup.sh" if board["aws_afi"] else "")
                     + f", then: make -C {bdir}")
            if tools_missing and require_tools and not status:
                status = 3
        else:
            progress(f"{board['name']}: running make -C {bdir}")
            rc = subprocess.call(["make", "-C", str(bdir)])
            if rc:
                status = rc
    (out / "build_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return status, summary


def resource_table(reports, anchors=None, budget=None):
    """Text table of Yosys reports (:mod:`hw.vitis.synth`): LUT/FF/BRAM36/URAM/DSP, logic levels
    and estimated delay of the worst path.  ``anchors`` ({kernel: (label, {resource: n})}) adds
    a published figure under each kernel; ``budget`` ((label, {resource: n})) a last row."""
    cols = ("lut", "ff", "bram36", "uram", "dsp")
    head = (f"{'kernel':<16}" + "".join(f"{c.upper():>10}" for c in cols)
            + f"{'levels':>8}{'est ns':>8}{'clock ns':>9}")
    lines = [head, "-" * len(head)]

    def num(v):
        return "" if v is None else f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"

    for r in reports:
        res = r["resources"]
        lines.append(f"{r.get('kernel', r['top']):<16}" + "".join(f"{num(res[c]):>10}" for c in cols)
                     + f"{num(r.get('logic_levels')):>8}{r.get('est_delay_ns') or '':>8}"
                     + f"{r.get('clock_period_ns') or '':>9}")
        path = r.get("est_delay_path")
        if path:
            lines.append(f"{'':<16}  worst path: {path['start']} -> {path['end']} "
                         f"({path['levels']} levels)")
        if anchors and r.get("kernel") in anchors:
            label, fig = anchors[r["kernel"]]
            lines.append(f"{'  ' + label:<16}" + "".join(f"{num(fig.get(c)):>10}" for c in cols))
    if budget:
        label, fig = budget
        lines.append(f"{label:<16}" + "".join(f"{num(fig.get(c)):>10}" for c in cols))
    return "\n".join(lines)


#: The flow of a standalone board whose file names no ``builder``: Amaranth's Vivado flow.
STANDALONE_BUILDER = "hw.selftest.board:build_standalone"


def standalone_builder(board):
    """The function that builds a board without a Vitis shell -- a standalone board's bitstream,
    or an HDK board's CL directories (F2: hw/f2/build.py) -- named by the board file's ``builder
    = "module:function"`` and loaded by name (as the kernels are), so that this module imports
    none of those flows (hw/selftest/ and hw/ecp5/ import nothing of it either; hw/f2/ reuses its
    kernel generation and link plan)."""
    name = board.get("builder", STANDALONE_BUILDER)
    module, _, function = name.partition(":")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as e:
        raise BoardError(f"board file {board['file']}: builder {name!r} cannot "
                         f"be loaded: {e}") from None


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
    p.add_argument("--kernels", help="comma-separated kernel names (default: every project "
                                     "kernel; 'checksum' is the infrastructure example)")
    p.add_argument("-o", "--out", help="output directory (default build/hw): the kernels in "
                                        "DIR/kernels, the board's Makefile and link configs in "
                                        "DIR (in DIR/<board> when several boards are built)")
    p.add_argument("--config", help="TOML file with board, kernels, params, banks, ...")
    p.add_argument("-P", "--param", action="append", default=[], metavar="KERNEL.NAME=VALUE",
                   help="kernel build parameter (a field of its Params), e.g. -P jacc_sketch.p=14 "
                   "(repeatable)")
    p.add_argument("--platform", help="Vitis platform instead of the board's default")
    p.add_argument("--resources", action="store_true",
                   help="Yosys resource/logic-depth report per kernel (slow: minutes)")
    p.add_argument("--impl", action="store_true",
                   help="Vivado out-of-context synthesis, placement and routing of each kernel at "
                        "the board clock: writes impl_<kernel>.tcl, runs it when vivado is on "
                        "PATH and adds WNS and utilisation to resources.json")
    p.add_argument("--require-tools", action="store_true",
                   help="exit non-zero when vivado/v++ are missing (default: generate, exit 0)")
    p.add_argument("--no-run", action="store_true", help="never run the Xilinx tools")
    p.add_argument("--link", action="append", default=[], metavar="XCLBIN=K1,K2",
                   help="put these kernels into one xclbin (repeatable; default: one xclbin per "
                        "workflow: " + "; ".join(f"{XCLBIN_PREFIX}_{w} = {'+'.join(ks)}"
                                                   for w, ks in WORKFLOWS.items()) + ")")
    p.add_argument("--force", action="store_true",
                   help="link an xclbin even when its compute units cannot be placed in the "
                        "board's SLRs (boards/*.toml [slr.*], docs/link_plan.md): then without slr=")
    p.add_argument("-j", "--jobs", type=int, default=min(os.cpu_count() or 1, 2), metavar="N",
                   help="kernels generated at the same time, one process each (default: the "
                        "number of CPUs, at most 2: each kernel needs up to ~2 GB while it is "
                        "elaborated)")
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
        names = [k for k in KERNELS if k not in EXAMPLES]

    link = {x: list(ks) for x, ks in cfg.get("xclbins", {}).items()}
    for item in args.link:
        xclbin, sep, ks = item.partition("=")
        if not sep or not xclbin or not ks:
            print(f"error: --link expects XCLBIN=K1,K2, got {item!r}", file=sys.stderr)
            return 2
        link[xclbin] = [k for k in ks.split(",") if k]

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
    out = args.out or cfg.get("out") or "build/hw"
    try:
        board_objs = [load_board(b) for b in boards]
        standalone = [b for b in board_objs if b["kind"] == "standalone"]
        hdk = [b for b in board_objs if b["kind"] == "hdk"]
        boards = [b["file"] for b in board_objs if b["kind"] == "vitis"]
        status = 0
        for board in standalone:
            own = params if not boards else {k: v for k, v in params.items()
                                             if k in ("jacc_sketch", "selftest")}
            status = max(status, standalone_builder(board)(
                board, out, own, run_tools=not args.no_run, require_tools=args.require_tools))
        if standalone:
            params.pop("selftest", None)
        for kname in params:
            if hdk and kname not in KERNELS:
                print(f"error: parameters for unknown kernel {kname!r}", file=sys.stderr)
                return 2
        for board in hdk:
            # an HDK board's CL directories go into OUT itself when it is the only board
            where = out if len(board_objs) == 1 else os.path.join(out, board["name"])
            status = max(status, standalone_builder(board)(
                board, names, where, params=params, link=link or None,
                cus=cfg.get("compute_units"), force=args.force or bool(cfg.get("force")),
                run_tools=not args.no_run, require_tools=args.require_tools,
                jobs=max(1, args.jobs)))
        if not boards:
            return status
    except (BoardError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for kname in params:
        if kname not in KERNELS:
            print(f"error: parameters for unknown kernel {kname!r}", file=sys.stderr)
            return 2

    try:
        vitis_status, _ = build(boards, names, out, params=params, banks=cfg.get("banks"),
                                cus=cfg.get("compute_units"),
                                platform=args.platform or cfg.get("platform"),
                                resources=args.resources or bool(cfg.get("resources")),
                                require_tools=args.require_tools, run_tools=not args.no_run,
                                link=link or None, force=args.force or bool(cfg.get("force")),
                                impl=args.impl, jobs=max(1, args.jobs))
        status = max(status, vitis_status)
    except (BoardError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
