"""Safe on a card (issue 12): identity registers, argument refusals, AXI error responses, wrong
n_records, clean state after abort/reset/FRESH -- cocotb on the generated Verilog of the small
kernels the other kernel tests build (no extra Verilator build) -- and the host's checks
(host.control) with their one-line errors."""

import pytest

from host.control import KernelError, check_error, check_identity, timeout_cycles
from kmerspec.kernels import KERNELS, jacc_similarity, jacc_sketch, jsd_similarity, params_class
from kmerspec.regmap import (ERROR_ARGUMENT, ERROR_AXI_READ, ERROR_NULL_POINTER,
                             ERROR_RECORDS_MISSING, ERROR_UNALIGNED_POINTER)
from sim.runner import run_kernel_bench
from sim.sketch.golden import regression_genomes

SKETCH = jacc_sketch.Params(lanes=2, bytes_per_lane=4, k=21, p=10, w=4)   # test_sketch_kernel's
SIMILARITY = jsd_similarity.Params(pivots=3, R=3, n=2, data_width=128)   # test_jsd_kernel's
JACC_SIMILARITY = jacc_similarity.Params(4, 2, 10, 4)    # test_jacc_similarity_kernel's


def test_chunk_kernel_refuses_aborts_and_starts_clean():
    genomes = regression_genomes(seed=31, count=5, scale=300)
    run_kernel_bench(SKETCH, "sim.tb_safety",
                     {"genomes": [[f.decode("latin-1") for f in files] for files in genomes]},
                     testcase="test_safety")


def test_jsd_similarity_refuses_too_many_pivots():
    run_kernel_bench(SIMILARITY, "sim.tb_safety", testcase="test_pivot_refusals")


def test_jacc_similarity_refuses_pivot_groups_out_of_range():
    run_kernel_bench(JACC_SIMILARITY, "sim.tb_safety", testcase="test_pivot_group_refusals")


@pytest.mark.parametrize("kernel", KERNELS)
def test_identity_words_name_every_parameter(kernel):
    params = params_class(kernel)()
    words = params.identity_words()
    assert params.desc.identity == words
    assert params.identity_mismatch(words) is None
    status = params.desc.status_map()
    last_argument = max(slot.offset + slot.size for _, slot in params.desc.register_map())
    assert status.error >= last_argument and status.error % 16 == 0
    assert status.end <= 0x1000
    for field, value in params.to_dict().items():
        if field == "kernel" or not isinstance(value, int):
            continue
        for changed in (value + 1, value - 1):
            try:
                other = params.replace(**{field: changed})
            except (TypeError, ValueError):
                continue
            mismatch = params.identity_mismatch(other.identity_words())
            assert str(mismatch) == f"built with {field}={changed}, asked for {value}"
            break


def registers(kernel, words):
    """read_register of a binary whose identity words are ``words`` (other offsets read 0)."""
    values = dict(zip(kernel.desc.status_map().identity_offsets, words))
    return lambda offset: values.get(offset, 0)


def test_identity_check_refuses_another_kernel_and_version():
    sketch = jacc_sketch.Params()
    words = list(jsd_similarity.Params().identity_words())
    with pytest.raises(KernelError, match=r"^jacc_sketch: not a jacc_sketch kernel: identity "
                                          r"magic 0x4b4d0004$"):
        check_identity(sketch, registers(sketch, words))
    words = list(sketch.identity_words())
    words[1] += 1
    with pytest.raises(KernelError, match=r"^jacc_sketch: built with layout version=2, asked "
                                          r"for 1$"):
        check_identity(sketch, registers(sketch, words))


@pytest.mark.parametrize("word, message", [
    (ERROR_NULL_POINTER | 2 << 8, "jacc_sketch: pointer argument dst is 0"),
    (ERROR_UNALIGNED_POINTER, "jacc_sketch: pointer argument src=0x1004 is not aligned to the "
                              "8-byte bus"),
    (ERROR_AXI_READ, "jacc_sketch: the memory answered a read with an error response "
                     "(SLVERR/DECERR)"),
    (ERROR_RECORDS_MISSING | 3 << 8, "jacc_sketch: the input ended with fewer records than "
                                     "n_records=5"),
    (ERROR_ARGUMENT | 1 << 8, "jacc_sketch: argument n_bytes=7 cannot be honoured by this build"),
    (0x99, "jacc_sketch: the kernel reported error 0x99"),
])
def test_error_words_become_one_line(word, message):
    offset = SKETCH.desc.status_map().error
    arguments = {"src": 0x1004, "n_bytes": 7, "dst": 0, "n_records": 5}
    with pytest.raises(KernelError) as caught:
        check_error(SKETCH, {offset: word}.get, arguments)
    assert str(caught.value) == message
    check_error(SKETCH, {offset: 0}.get, arguments)


def test_timeouts_grow_with_the_call():
    small = timeout_cycles(SKETCH, {"src": 1024, "dst": 64})
    large = timeout_cycles(SKETCH, {"src": 1 << 20, "dst": 64})
    assert 0 < small < large


def test_backend_auto_says_which_backend_it_chose(tmp_path, capsys, monkeypatch):
    from host.cli import main
    monkeypatch.delenv("KMER_SKETCH_XCLBIN", raising=False)
    genome = tmp_path / "g.fa"
    genome.write_bytes(b">g\nACGTTGCAACGTTGCAACGTTGCAACGTTGCAACGT\n")
    out = tmp_path / "g.sketch"
    assert main(["sketch", str(genome), "--backend", "auto", "-o", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("backend auto: sw (no card: "), lines
    assert out.exists()
