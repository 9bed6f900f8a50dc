"""`--backend xrt` without a card: with KMER_SKETCH_PYXRT=sim, host.device hands host.xrt.XrtDevice
the XRT C API stand-in (sim/xrt_sim.py), which simulates the kernels of a `python -m hw.build`
output directory from its kernel.xml and Verilog. sketch, dist, search, jsd (the PQAs from the JSD
builder, the matrix from the JSD similarity kernel) and motifs through it equal `--backend sw`
byte for byte, each test checks that the kernel it needs ran, and every command ends with the
compute units and the device closed.

The build uses the Params SimDevice simulates for the same command lines (host.drivers
SIM_GEOMETRY and the options of tests/test_cli_sim_backend.py), so the Verilator builds are the
ones tests/test_cli_sim_backend.py makes (cached by Verilog hash)."""

import subprocess
import sys

import pytest

from host.cli import main
from sim.runner import REPO_ROOT, available_simulators
from tests.test_cli_sim_backend import small_genomes  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

KERNELS = ("jacc_sketch", "jacc_similarity", "jsd_builder", "jsd_similarity", "motif")
#: the options of the command lines below, and the geometry of host.drivers.SIM_GEOMETRY
BUILD = {
    "jacc_sketch": {"k": 21, "p": 10, "lanes": 2, "bytes_per_lane": 4},
    "jacc_similarity": {"p": 10, "pivots": 4, "streams": 2, "data_width": 128},
    "jsd_builder": {"k": 15, "s": 1, "R": 4, "n": 4, "cw": 8, "d": 3, "lanes": 2,
                    "bytes_per_lane": 8},
    "jsd_similarity": {"R": 4, "n": 4, "pivots": 4, "data_width": 128},
    "motif": {"kmin": 8, "kmax": 9, "cw": 8},
}
JSD_OPTIONS = ["--k", "15", "--s", "1", "--R", "4", "--n", "4", "--cw", "8", "--d", "3"]


def hw_build(out, kernels=KERNELS, build=BUILD):
    options = [f"-P{kernel}.{name}={value}" for kernel in kernels
               for name, value in build.get(kernel, {}).items()]
    result = subprocess.run([sys.executable, "-m", "hw.build", "--no-run", "-j", "2", "-o",
                             str(out), "--kernels", ",".join(kernels), *options],
                            cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    """One hw.build output directory with the five kernels the CLI drives."""
    return hw_build(tmp_path_factory.mktemp("hw") / "small")


def closed(stand_in) -> bool:
    """No compute unit nor device of the stand-in left open."""
    from sim import xrt_sim
    return not stand_in._device.contexts and not [
        thing for thing in stand_in._handles.values()
        if isinstance(thing, (xrt_sim._Device, xrt_sim._Kernel, xrt_sim._Run))]


def run_both(tmp_path, build_dir, command, *args):
    from sim import xrt_sim
    outputs = {}
    for backend in ("sw", "xrt"):
        out = tmp_path / f"{backend}.out"
        binary = ["--xclbin", str(build_dir)] if backend == "xrt" else []
        assert main([command, *args, "-o", str(out), "--backend", backend, *binary]) == 0
        outputs[backend] = out.read_bytes()
    assert outputs["xrt"] == outputs["sw"]
    assert closed(xrt_sim.stand_in())       # the command closed its units and the device
    return outputs["sw"]


def test_sketch_and_dist(tmp_path, build_dir, small_genomes, xrt_stand_in):
    run_both(tmp_path, build_dir, "sketch", *small_genomes, "--index-bits", "10", "--k", "21")
    assert xrt_stand_in.started["jacc_sketch_1"] >= 1
    kept = tmp_path / "all.sketch"
    (tmp_path / "sw.out").rename(kept)
    # --estimator hll: the similarity kernel's estimator (the default, mle, runs on the host)
    matrix = run_both(tmp_path, build_dir, "dist", str(kept), "--estimator", "hll")
    assert xrt_stand_in.started["jacc_similarity_1"] >= 1
    assert matrix.count(b"\n") == 2 + len(small_genomes)
    edges = run_both(tmp_path, build_dir, "dist", str(kept), "--format", "edges",
                     "--threshold", "0.2", "--estimator", "hll")
    assert b"related0.fa\trelated1.fa" in edges or b"related1.fa\trelated0.fa" in edges


def test_search(tmp_path, build_dir, small_genomes, xrt_stand_in):
    """The query sequences are sketched by the sketch kernel; the database is a sketch file."""
    db = tmp_path / "db.sketch"
    assert main(["sketch", *small_genomes[2:], "--index-bits", "10", "--k", "21", "-o", str(db)]) == 0
    rows = run_both(tmp_path, build_dir, "search", *small_genomes[:2], "--db", str(db),
                    "--top", "2")
    assert rows.count(b"\n") >= 4 and xrt_stand_in.started["jacc_sketch_1"] >= 1


def test_jsd(tmp_path, build_dir, small_genomes, xrt_stand_in):
    run_both(tmp_path, build_dir, "sketch", "--kind", "pqa", *small_genomes, *JSD_OPTIONS,
             "--update", "cm")
    assert xrt_stand_in.started["jsd_builder_1"] >= 1


def test_jsd_matrix(tmp_path, build_dir, small_genomes, xrt_stand_in):
    # both JSD kernels: the builder makes the PQAs, the similarity kernel the matrix
    matrix = run_both(tmp_path, build_dir, "jsd", *small_genomes[:4], *JSD_OPTIONS,
                      "--arithmetic", "fixed")
    assert matrix.count(b"\n") == 2 + 4
    assert xrt_stand_in.started["jsd_builder_1"] >= 1
    assert xrt_stand_in.started["jsd_similarity_1"] >= 1


def test_motifs(tmp_path, build_dir, small_genomes, xrt_stand_in):
    rows = run_both(tmp_path, build_dir, "motifs", "--test", *small_genomes[:2], "--control",
                    small_genomes[3], "--kmin", "8", "--kmax", "9", "--cw", "8",
                    "--threshold", "2")
    assert rows.count(b"\n") > 4 and xrt_stand_in.started["motif_1"] == 1


@pytest.mark.parametrize("case", ["other_k", "file", "no_kernel_xml", "missing_kernel"])
def test_one_line_errors(tmp_path, build_dir, small_genomes, xrt_stand_in, capfd, case):
    """A run the build directory cannot serve: exit 2, one line naming the cause, no output."""
    out = tmp_path / "out.sketch"
    xclbin, options = build_dir, ["--index-bits", "10", "--k", "21"]
    if case == "other_k":
        options = ["--index-bits", "10", "--k", "31"]
        expected = "jacc_sketch: built with k=21, asked for 31"  # the identity registers
    elif case == "file":
        xclbin = tmp_path / "kernel.xclbin"
        xclbin.write_bytes(b"xclbin2")
        expected = f"{xclbin}: not a directory (with KMER_SKETCH_PYXRT=sim, --xclbin names a " \
                   "python -m hw.build output directory)"
    elif case == "no_kernel_xml":
        xclbin = tmp_path / "empty"
        xclbin.mkdir()
        expected = (f"{xclbin}: XRT cannot load it on device 0 (XRT: {xclbin}: no kernel.xml in "
                    "the directory or its kernels/*/; not a python -m hw.build output "
                    "directory)")       # the stand-in's message, quoted as XRT's is
    else:
        xclbin = build_dir / "kernels" / "motif"
        expected = f"kernel jacc_sketch is not in {xclbin} (the compute units of its " \
                   "IP_LAYOUT: motif:motif_1)"
    status = main(["sketch", *small_genomes[:2], *options, "-o", str(out), "--backend", "xrt",
                   "--xclbin", str(xclbin)])
    assert status == 2
    lines = capfd.readouterr().err.splitlines()
    # besides the error, at most the line (once per process) that says which XRT is used
    assert [line for line in lines if not line.startswith("xrt: the XRT C API stand-in ")] \
        == [f"error: {expected}"]
    assert not out.exists()
    assert closed(xrt_stand_in)
