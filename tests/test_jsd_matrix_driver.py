"""host.drivers.jsd_matrix (the JSD similarity kernel's driver behind `jsd --backend sim|xrt`)
on a device that answers each call with the kernel's contract computed in Python
(kmerspec.golden.entropy.jsd_fixed of every pivot record with every streamed record, read back
from the packed buffers): the row tiles equal host.jsdmatrix's ``fixed`` arithmetic bit for bit,
with pivot blocks that do not divide the tiles and streamed PQAs split over several calls.
tests/test_cli_sim_backend.py and tests/test_cli_xrt_standin.py run the RTL kernel."""

import numpy as np
import pytest

import host.drivers as drivers
from host.calls import RunResult
from host.jsdmatrix import PqaArrays, entropies, jsd_row_tile, kernel_row_tiles
from kmerspec.golden.entropy import jsd_fixed
from kmerspec.kernels import jsd_builder
from kmerspec.kernels.jsd_similarity import Params
from sim.jsd.golden import random_records

GEOMETRY = {"pivots": 3, "data_width": 128}


class ContractDevice:
    """Answers jsd_similarity calls from the packed buffers, as the kernel's contract says."""

    name = "sim"
    geometry = {"jsd_similarity": GEOMETRY}

    def __init__(self):
        self.calls = []

    def run_stream(self, kernel, calls):
        for call in calls:
            self.calls.append((call["n_pivots"], call["n_pqas"]))
            pivots = jsd_builder.unpack_records(call["pivots"], call["n_pivots"], kernel)
            streamed = jsd_builder.unpack_records(call["pqas"], call["n_pqas"], kernel)
            mode = ("textbook", "counts")[call["mode"]]
            out = b""
            for record in streamed:
                row = [jsd_fixed(p.pqa, record.pqa, mode, p.entropy, record.entropy)
                       for p in pivots] + [0] * (kernel.pivots - len(pivots))
                out += b"".join(v.to_bytes(4, "little", signed=True) for v in row)
                out = out.ljust(len(out) + kernel.bus_bytes - 4 * kernel.pivots, b"\0")
            assert len(out) == call["out"].size
            yield RunResult({"out": out})


def arrays(records) -> PqaArrays:
    tags = np.array([[[t for t, _ in q] for q in r.pqa.queues] for r in records], np.uint32)
    values = np.array([[[v for _, v in q] for q in r.pqa.queues] for r in records], np.uint32)
    return PqaArrays(tags, values)


@pytest.mark.parametrize("mode", ["textbook", "counts"])
def test_kernel_rows_equal_the_fixed_arithmetic(mode, monkeypatch):
    pqas = arrays(random_records(3, 2, 7, 5))          # 8 genomes, one of them empty
    monkeypatch.setattr(drivers, "JSD_STREAM_BYTES", 3 * Params(R=3, n=2, **GEOMETRY).record_bytes)
    device = ContractDevice()
    tiles = [range(0, 5), range(5, 8)]

    class Backend:
        name = "sim"

        def jsd_rows(self, pqas_list, tiles_, mode_):
            return drivers.jsd_matrix(device, pqas_list, tiles_, mode_)
    got = list(kernel_row_tiles(Backend(), pqas, tiles, mode, "fixed"))
    expected = [jsd_row_tile(tile, pqas, entropies(pqas), mode, "fixed") for tile in tiles]
    assert all(np.array_equal(a, b) for a, b in zip(got, expected))
    assert got[0][1, 0] > 0                                 # not a matrix of zeros
    # tile 0..4: pivot blocks of 3 and 2; tile 5..7: one of 3; columns in pieces of 3, 3, 2
    assert device.calls == [(3, 3), (3, 3), (3, 2), (2, 3), (2, 3), (2, 2),
                            (3, 3), (3, 3), (3, 2)]


def test_a_kernel_backend_refuses_float_and_a_software_backend_is_not_asked():
    pqas = arrays(random_records(3, 2, 2, 1))

    class Backend:
        name = "xrt"

        def jsd_rows(self, *args):
            raise AssertionError("not to be called")
    with pytest.raises(ValueError, match=r"^--backend xrt: the JSD similarity kernel computes "
                                         r"the fixed-point JSD; add --arithmetic fixed"):
        kernel_row_tiles(Backend(), pqas, [range(0, 3)], "textbook", "float")
    assert kernel_row_tiles(object(), pqas, [range(0, 3)], "textbook", "fixed") is None
