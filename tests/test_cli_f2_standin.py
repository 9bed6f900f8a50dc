"""`--backend f2` without an F2 instance: with KMER_SKETCH_F2_SIM=DIR, host.backends hands
host.f2.F2Device the stand-in of AWS's SDK (sim/f2_sim.py), whose slot 0 holds the CL directory
DIR of `python -m hw.build --board f2`, simulated behind the shell's ports (sim/tb_f2.py). sketch,
dist and search through it equal `--backend sw` byte for byte; each test checks that the CL's
units were driven (OCL and PCIS accesses), and every command ends with the BARs detached. A
command line the slot cannot serve is one line, exit 2, nothing written.

The CL is the small one of tests/f2_build.py (the Verilator build tests/test_f2_cl.py makes)."""

import pytest

from host.cli import main
from sim.runner import available_simulators
from tests.test_cli_sim_backend import small_genomes  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

OPTIONS = ["--index-bits", "10", "--k", "21"]


def run_both(tmp_path, stand_in, command, *args):
    outputs = {}
    for backend in ("sw", "f2"):
        out = tmp_path / f"{backend}.out"
        slot = ["--slot", "0"] if backend == "f2" else []
        assert main([command, *args, "-o", str(out), "--backend", backend, *slot]) == 0
        outputs[backend] = out.read_bytes()
    assert outputs["f2"] == outputs["sw"]
    assert not stand_in._bars                 # the command detached its BARs
    return outputs["sw"]


def test_sketch_dist_search(tmp_path, small_genomes, f2_stand_in):
    run_both(tmp_path, f2_stand_in, "sketch", *small_genomes, *OPTIONS)
    assert f2_stand_in.accesses["pcis_write"] >= 1 and f2_stand_in.accesses["ocl_write"] >= 1
    kept = tmp_path / "all.sketch"
    (tmp_path / "sw.out").rename(kept)
    before = f2_stand_in.accesses["ocl_write"]
    # --estimator hll: the similarity kernel's estimator (the default, mle, runs on the host)
    matrix = run_both(tmp_path, f2_stand_in, "dist", str(kept), "--estimator", "hll")
    assert f2_stand_in.accesses["ocl_write"] > before
    assert matrix.count(b"\n") == 2 + len(small_genomes)
    edges = run_both(tmp_path, f2_stand_in, "dist", str(kept), "--format", "edges",
                     "--threshold", "0.2", "--estimator", "hll")
    assert b"related0.fa\trelated1.fa" in edges or b"related1.fa\trelated0.fa" in edges
    db = tmp_path / "db.sketch"
    assert main(["sketch", *small_genomes[2:], *OPTIONS, "-o", str(db)]) == 0
    before = f2_stand_in.accesses["pcis_write"]
    rows = run_both(tmp_path, f2_stand_in, "search", *small_genomes[:2], "--db", str(db),
                    "--top", "2")
    assert rows.count(b"\n") >= 4 and f2_stand_in.accesses["pcis_write"] > before
    assert not f2_stand_in.ocl_responses and not f2_stand_in.pcis_responses


@pytest.mark.parametrize("case", ["other_k", "no_kernel", "slot", "slot_other_backend"])
def test_one_line_errors(tmp_path, small_genomes, f2_stand_in, capfd, case):
    """A run the slot cannot serve: exit 2, one line naming the cause, no output."""
    out = tmp_path / "out.sketch"
    options, backend = OPTIONS, ["--backend", "f2"]
    if case == "other_k":
        options = ["--index-bits", "10", "--k", "31"]
        expected = "jacc_sketch: built with k=21, asked for 31"     # the identity registers
    elif case == "no_kernel":
        options = ["--kind", "pqa", "--k", "15", "--s", "1", "--R", "4", "--n", "4", "--cw", "8",
                   "--d", "3"]
        expected = ("kernel jsd_builder is not in the AFI loaded in FPGA slot 0 (agfi-sim-"
                    f"{f2_stand_in._image_hash()}: jacc_sketch_1 (BAR0 0x1000), "
                    "jacc_similarity_1 (BAR0 0x2000)); load the AFI of a CL that has it")
    elif case == "slot":
        backend += ["--slot", "3"]
        expected = ("FPGA slot 3: fpga_mgmt_describe_local_image failed: No such file or "
                    "directory (-2) (an F2 instance's slots: sudo fpga-describe-local-image -S 3)")
    else:
        backend = ["--slot", "1"]
        expected = "--slot: applies to --backend f2, not --backend sw; drop it or choose " \
                   "--backend f2"
    status = main(["sketch", *small_genomes[:2], *options, "-o", str(out), *backend])
    assert status == 2
    assert capfd.readouterr().err.splitlines() == [f"error: {expected}"]
    assert not out.exists() and not f2_stand_in._bars
