"""python -m hw.build: generation for f1 and u250 into a temp dir, kernel.xml vs the RTL control
block (through cocotb AXI-Lite), Verilog top ports vs kernel.xml and the Vitis naming rules."""

import json
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from hw.build import main, available_kernels, EXAMPLES
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
    assert "create_vitis_afi.sh -xclbin=kmer_sketch.xclbin" in f1
    assert "v++ -p" not in f1 and "$(VPP) -p" not in f1
    u250 = (out / "u250" / "Makefile").read_text()
    assert "$(VPP) -p -t $(TARGET) --platform $(PLATFORM)" in u250
    assert "create_vitis_afi" not in u250
    assert "PLATFORM ?= xilinx_aws-vu9p-f1_shell-v04261818_201920_4" in f1
    assert "PLATFORM ?= xilinx_u250_gen3x16_xdma_4_1_202210_1" in u250


def test_link_cfg_connects_every_port(built):
    out, kernels = built
    for board, banks in (("f1", 4), ("u250", 4)):
        cfg = (out / board / "link.cfg").read_text()
        assert cfg.splitlines()[1].startswith("platform=")
        for k in kernels:
            kxml = parse_kernel_xml((out / "kernels" / k / "kernel.xml").read_text())
            name = kxml["name"]
            assert f"nk={name}:1:{name}_1" in cfg
            for port in kxml["ports"]:
                if port.startswith("m_axi_"):
                    assert re.search(rf"^sp={name}_1\.{port}:DDR\[[0-{banks - 1}]\]$", cfg, re.M), port


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
    assert rc != 0
    assert "unknown kernel" in err.out + err.err
    assert "Traceback" not in err.out + err.err
    # a registered kernel whose module does not exist yet: a note, the others still build
    import hw.build as hb
    saved = dict(hb.KERNELS)
    hb.KERNELS["future"] = "hw.future_kernel_that_does_not_exist:FutureKernel"
    hb.KERNELS["broken"] = "hw.kernels.checksum:NoSuchClass"
    try:
        rc = main(["--kernels", "checksum,future,broken", "-o", str(tmp_path), "--no-run"])
    finally:
        hb.KERNELS.clear()
        hb.KERNELS.update(saved)
    out = capsys.readouterr()
    assert rc == 0
    assert "kernel 'future': module hw.future_kernel_that_does_not_exist does not exist yet" in out.out
    assert "kernel 'broken': hw.kernels.checksum has no NoSuchClass" in out.out
    assert "Traceback" not in out.out + out.err
    assert (tmp_path / "kernels" / "checksum" / "checksum.v").exists()


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
    link = (o / "u200" / "link.cfg").read_text()
    assert "platform=xilinx_u200_gen3x16_xdma_2_202110_1" in link
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
    assert "LUT" in capsys.readouterr().out
    import bench.resources as br
    assert br.main([str(tmp_path)]) == 0


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
proc ipx::get_user_parameters args { return {} }
proc get_property args { return x }
set argv [list xo/k.xo xcvu9p-flgb2104-2-i 250000000]
source $::env(KSA_TCL)
foreach c $::calls { puts $c }
"""


@pytest.mark.skipif(shutil.which("tclsh") is None, reason="no tclsh")
def test_package_tcl_runs_with_stubbed_vivado(built, tmp_path):
    """The packaging Tcl runs (Vivado commands stubbed) and declares the kernel.xml registers."""
    import os
    import subprocess
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
