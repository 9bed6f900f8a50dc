"""What the F2 tests share: the small CL build (the kernels at the geometries the CLI tests of
the XRT stand-in simulate, so the command lines are the same), and the aws-fpga checkout some
tests judge against (``KSA_AWS_FPGA``; they skip with the reason without it, as in CI)."""

import os
import pathlib
import subprocess
import sys

import pytest

from sim.runner import REPO_ROOT

#: the kernels of the small CL and their parameters (tests/test_cli_xrt_standin.py BUILD)
SMALL = {
    "jacc_sketch": {"k": 21, "p": 10, "lanes": 2, "bytes_per_lane": 4},
    "jacc_similarity": {"p": 10, "pivots": 4, "streams": 2, "data_width": 128},
}
AWS_ENV = "KSA_AWS_FPGA"


def aws_fpga() -> pathlib.Path | None:
    """The aws-fpga checkout named by KSA_AWS_FPGA, or None."""
    path = os.environ.get(AWS_ENV)
    return pathlib.Path(path) if path and pathlib.Path(path).is_dir() else None


needs_aws = pytest.mark.skipif(aws_fpga() is None,
                               reason=f"no aws-fpga checkout ({AWS_ENV} names one: git clone "
                                      "https://github.com/aws/aws-fpga -b f2)")


def aws_file(relative: str) -> pathlib.Path:
    path = aws_fpga() / relative
    assert path.is_file(), f"{path}: not in the aws-fpga checkout {AWS_ENV} names"
    return path


def hw_build_f2(out, build=SMALL, extra=()):
    """``python -m hw.build --board f2`` of ``build``'s kernels into ``out``; the CL directory."""
    options = [f"-P{kernel}.{name}={value}" for kernel, fields in build.items()
               for name, value in fields.items()]
    result = subprocess.run([sys.executable, "-m", "hw.build", "--board", "f2", "--no-run",
                             "-j", "2", "-o", str(out), "--kernels", ",".join(build), *options,
                             *extra], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return pathlib.Path(out) / "kmer_jacc", result.stdout


def build_sdk_library(directory) -> pathlib.Path:
    """AWS's libfpga_mgmt.so.1 (fpga_mgmt, fpga_pci and what they link, as sdk_setup.sh builds
    it) compiled from the checkout's sources into ``directory``."""
    sdk = aws_fpga() / "sdk" / "userspace"
    libs = sdk / "fpga_libs"
    sources = [sdk / "utils" / "io.c", sdk / "utils" / "log.c"] + sorted(
        path for part in ("fpga_pci", "fpga_mgmt", "fpga_dma", "fpga_clkgen")
        for path in (libs / part).glob("*.c"))
    target = pathlib.Path(directory) / "libfpga_mgmt.so.1"
    result = subprocess.run(
        ["gcc", "-shared", "-fPIC", "-std=gnu99", "-O1", "-DCONFIG_LOGLEVEL=0",
         "-DFPGA_PCI_BARS_MAX=64", f"-I{sdk / 'include'}", *(f"-I{libs / p}" for p in
                                                             ("fpga_mgmt", "fpga_pci",
                                                              "fpga_clkgen")),
         *map(str, sources), "-Wl,-soname,libfpga_mgmt.so.1", "-o", str(target), "-lrt",
         "-lpthread"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return target
