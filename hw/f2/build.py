"""``python -m hw.build --board f2``: the kernels as F2 CLs, one CL directory per AFI.

The kernels are generated as for a Vitis board (``OUT/kernels/<kernel>/``: the same Verilog
top, so the same register map and identity words). The link plan is hw.build's: by default one
AFI per workflow (``kmer_jacc``: jacc_sketch + jacc_similarity, ``kmer_jsd``, ``kmer_motif``),
``--link NAME=K1,K2`` for another; each is checked against the VU47P's budget and its units
placed in the SLRs of boards/f2.toml (hw/vitis/fit.py), a default AFI that cannot be placed split
into one per kernel, an asked-for one refused unless ``--force``. Each AFI becomes a CL
directory ``OUT/<name>/`` (hw/f2/cl_dir.py) whose Makefile runs AWS's flow.

Without Vivado and aws-fpga's HDK environment (``HDK_SHELL_DIR``, set by hdk_setup.sh) the build
stops after generation and prints the next command, as the F1 build does; with them (and without
``--no-run``) it runs ``make dcp`` in each CL directory.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

__all__ = ["build_f2", "units_of", "placements", "default_plan"]


def units_of(names, by_name, cus):
    """``[(kernel name, desc)]``: every compute unit of the CL, kernel by kernel in plan order."""
    return [(name, by_name[name][0]) for name in names for _ in range(int(cus.get(name, 1)))]


def placements(board, plan, by_name, cus, *, may_split=True, progress=lambda msg: None):
    """Yield ``(CL, kernels, fit, placement, why not)`` for each CL of ``plan`` (hw.build's
    link_plan): its fit against the board's budget and its units' SLRs (hw/vitis/fit.py);
    ``why`` is None when it fits. With ``may_split`` (the default plan) a CL that cannot be
    placed is split into one per kernel. ``by_name``: kernel -> (desc, its directory, info)."""
    from hw.build import placements as placed
    for cl, members, fit, placement, _, why in placed(board, plan, by_name, {}, cus,
                                                      may_split=may_split, progress=progress,
                                                      noun="CL"):
        yield cl, members, fit, placement, why


def default_plan(board):
    """``[(CL, placement)]`` of the default kernels at their default geometry, by the figures
    recorded for them (hw/vitis/kernel_area.toml), without generating them: the plan
    ``python -m hw.build --board f2`` makes (docs/f2.md shows it)."""
    import pathlib
    from hw.build import EXAMPLES, KERNELS, link_plan
    from kmerspec.kernels import params_class
    names = [k for k in KERNELS if k not in EXAMPLES]
    by_name = {}
    for name in names:
        params = params_class(name)()
        by_name[name] = (params.desc, pathlib.Path("/nonexistent"), {"params": params.to_dict()})
    return [(cl, placement) for cl, _, _, placement, _ in
            placements(board, link_plan(names), by_name, {})]


def build_f2(board, kernel_names, out, *, params=None, link=None, cus=None, force=False,
             run_tools=True, require_tools=False, jobs=1, log=print, error=None):
    """Generate (and with the tools present, build) the CLs of ``kernel_names`` for ``board``
    (an F2 board file). Returns the exit status: 0, 2 (a kernel or a CL refused), 3 (tools
    missing with ``require_tools``)."""
    from hw.build import _Clock, _generate_all, canonical_name, link_plan, report_placement
    error = error or (lambda msg: print(f"error: {msg}", file=sys.stderr))
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = [canonical_name(k) for k in kernel_names]
    params = {canonical_name(k): v for k, v in (params or {}).items()}
    cus = {canonical_name(k): v for k, v in (cus or {}).items()}
    plan = link_plan(names, link)
    progress = _Clock(log)

    status = 0
    by_name = {}
    for name, desc, info, problem in _generate_all(names, params, out, board, progress, jobs):
        if problem:
            error(problem)
            status = 2
        else:
            by_name[name] = (desc, out / "kernels" / name, info)
    if not by_name:
        error("no kernel could be generated")
        return 2
    plan = [(cl, [k for k in ks if k in by_name]) for cl, ks in plan]
    plan = [(cl, ks) for cl, ks in plan if ks]

    built, summary = [], {}
    for cl, members, fit, placement, why in placements(board, plan, by_name, cus,
                                                       may_split=not link, progress=progress):
        if why and not force:
            error(f"{why}; build it anyway with --force, or choose smaller parameters (-P) or "
                  "another plan (--link)")
            status = 2
            summary[cl] = {"kernels": members, "refused": why}
            continue
        report_placement(board, fit, placement, progress,
                         " -- built anyway (--force)" if why else "")
        units = units_of(members, by_name, cus)
        from hw.vitis.link import cu_names
        where, instance = {}, 0
        for name in members:
            desc = by_name[name][0]
            for cu in cu_names(desc, int(cus.get(name, 1))):
                where[f"unit{instance}"] = None if placement.failure else placement.slr_of(cu)
                instance += 1
        kernels = [(name, by_name[name][0],
                    by_name[name][1] / f"{by_name[name][0].name}.v", by_name[name][2]["params"])
                   for name in members]
        from .cl_dir import write_cl_dir
        info = write_cl_dir(out / cl, board, cl, kernels, units, where,
                            {"fit": fit.as_json(), "placement": placement.as_json()})
        progress(f"{board['name']}: CL {cl} in {out / cl}: "
                 + ", ".join(f"unit {u['unit']} {u['kernel']} (OCL 0x{u['window']:05x}"
                             + (f", {u['slr']})" if u['slr'] else ")") for u in info["units"]))
        summary[cl] = info
        built.append(cl)
    (out / "f2_build.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")

    missing = [what for what, present in
               (("vivado not on PATH", shutil.which("vivado")),
                ("HDK_SHELL_DIR not set (source aws-fpga/hdk_setup.sh)",
                 os.environ.get("HDK_SHELL_DIR"))) if not present]
    if missing or not run_tools or status:
        if missing:
            progress(f"{board['name']}: {'; '.join(missing)} -- generation only.")
        for cl in built:
            progress(f"{board['name']}: next, on the FPGA Developer AMI: source "
                     f"aws-fpga/hdk_setup.sh, then: make -C {out / cl} dcp")
        if missing and require_tools and not status:
            return 3
        return status
    for cl in built:
        progress(f"{board['name']}: running make -C {out / cl} dcp (AWS's flow: hours)")
        rc = subprocess.call(["make", "-C", str(out / cl), "dcp"])
        if rc:
            return rc
    return status
