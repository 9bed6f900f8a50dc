"""AWS's own shell model (sh_bfm, from the aws-fpga checkout KSA_AWS_FPGA names) drives the small
F2 CL under Verilator over OCL (sim/f2_sh_bfm.py says what it took: AWS's port generator run into
a temporary directory, no DDR -- its models are encrypted --, and the project's own stand-ins for
the kit's DPI task include and testbench top, which Verilator cannot build). About 1.5 minutes of
Verilator build; skips without the checkout."""

from kmerspec import f2 as cl
from kmerspec.kernels import jacc_sketch
from sim.f2_sh_bfm import run
from tests.f2_build import needs_aws


@needs_aws
def test_sh_bfm_reads_the_cl_directory_and_a_units_registers(f2_cl_dir, tmp_path):
    lines = run(f2_cl_dir, tmp_path / "sh_bfm", log=lambda message: None)
    assert lines == [f"KSA magic {cl.CL_MAGIC:08x}", "KSA units 2",
                     f"KSA identity {jacc_sketch.Params.magic():08x}", "KSA fresh 1"]
