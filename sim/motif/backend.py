"""The ``sim`` backend of the motif engine: the RTL kernel simulated with cocotb on Verilator.

:func:`run_motif_kernel_sim` packs the inputs with :mod:`kmerspec.kernels.motif` (as the FPGA driver
does), runs one kernel invocation on the generated Verilog, and unpacks the result buffer. The
kernel is built for the geometry of ``params`` (k range, d, cw, counter bits, store shape, H3
seed); thresholds and growth are runtime arguments. Simulation runs at roughly 10^4 cycles per
second for the default geometry, plus 2^cw cycles of clearing: use small inputs.
"""

import pathlib
import tempfile

from kmerspec.golden.motif import MotifParams, MotifRow
from kmerspec.kernels import motif
from kmerspec.kernels.motif import (MotifResult, emerging_rows_from, pack_files, pack_thresholds,
                                    result_bytes, unpack_result)

__all__ = ["run_motif_kernel_sim", "find_motifs_sim"]


def run_motif_kernel_sim(test_files: list[bytes], control_files: list[bytes],
                         params: MotifParams = MotifParams(), *, data_width: int = 512,
                         simulator: str | None = None) -> MotifResult:
    """One run of the simulated kernel on these files; the decoded result buffer."""
    from hw.motif.kernel import MotifKernel
    from sim.runner import run_cocotb

    contract = motif.Params.for_algorithm(params, data_width=data_width)
    kernel = MotifKernel(contract)
    size = result_bytes(contract)
    with tempfile.TemporaryDirectory(prefix="motif-sim-") as directory:
        paths = {name: pathlib.Path(directory) / name
                 for name in ("test", "control", "thresholds", "result")}
        paths["test"].write_bytes(pack_files(test_files))
        paths["control"].write_bytes(pack_files(control_files))
        paths["thresholds"].write_bytes(pack_thresholds(params))
        run_cocotb(kernel, "sim.motif.tb_motif_run", simulator=simulator,
                   parameters={"test_path": str(paths["test"]),
                               "control_path": str(paths["control"]),
                               "thresholds_path": str(paths["thresholds"]),
                               "result_path": str(paths["result"]),
                               "growth_q8": params.growth_q8, "result_bytes": size,
                               "clear_cycles": 1 << params.cw, "params": contract.to_dict()})
        return unpack_result(paths["result"].read_bytes(), contract)


def find_motifs_sim(test_files: list[bytes], control_files: list[bytes],
                    params: MotifParams = MotifParams()) -> list[MotifRow]:
    """Emerging k-mers as :func:`kmerspec.golden.motif.find_motifs` returns them, from the RTL."""
    return emerging_rows_from(run_motif_kernel_sim(test_files, control_files, params))

