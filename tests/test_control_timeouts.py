"""The timeout of a kernel call comes from its kernel's cycle model (host.control.model_cycles)
times TIMEOUT_MARGIN: every model is at least the rate measured in simulation
(docs/default_geometry.md), so a healthy call is never declared hung, and a large input gets a
proportionally longer limit."""

import pytest

from host.control import FIXED_CYCLES, TIMEOUT_MARGIN, model_cycles, timeout_cycles, timeout_ms
from kmerspec.kernels import jacc_similarity, jacc_sketch, jsd_builder, jsd_similarity, motif

MB = 1 << 20

#: (Params, input argument, cycles per 512-bit input beat measured over whole calls on the
#: DDR-like memory model: docs/default_geometry.md, "Measured" table)
MEASURED = [
    (jacc_sketch.Params(), "src", 1.080),
    (jsd_builder.Params(), "src", 1.069),
    (jsd_similarity.Params(), "pqas", 1.074),
    (motif.Params(), "test", 88.97),
]


@pytest.mark.parametrize("kernel,argument,measured", MEASURED,
                         ids=[k.KERNEL for k, _, _ in MEASURED])
def test_each_model_is_at_least_the_measured_rate(kernel, argument, measured):
    beats = 64 * MB // 64
    cycles = model_cycles(kernel, {argument: 64 * MB}, {"n_records": 0, "n_pqas": 0})
    assert cycles - FIXED_CYCLES >= measured * beats


def test_the_motif_kernel_gets_its_own_rate_not_the_flat_one():
    """The flat 64 cycles per beat of before was below the motif kernel's rate on a 512-bit bus
    (64 / B cycles per beat for each k: B = 1 and one k already 64)."""
    slow = motif.Params(bytes_per_cycle=1, kmin=10, kmax=10)
    beats = 64 * MB // 64
    assert model_cycles(slow, {"test": 64 * MB}) - FIXED_CYCLES >= 64 * beats
    default = motif.Params()
    assert model_cycles(default, {"test": 64 * MB}) > 64 * beats + 1_000_000


def test_records_and_the_similarity_geometry_count():
    sketch = jacc_sketch.Params()
    none = model_cycles(sketch, {"src": MB, "dst": 0}, {"n_records": 0})
    many = model_cycles(sketch, {"src": MB, "dst": 0}, {"n_records": 100})
    assert many - none == 100 * (sketch.registers + 64)
    wide = jacc_similarity.Params(pivots=64, streams=2)
    narrow = jacc_similarity.Params(pivots=8, streams=2)
    assert model_cycles(wide, {"sketches": 16 * MB}) > model_cycles(narrow, {"sketches": 16 * MB})


def test_the_timeout_is_the_margin_times_the_model_in_milliseconds_at_250_mhz():
    sizes = {"src": 256 * MB, "dst": 4096}
    cycles = timeout_cycles(jacc_sketch.Params(), sizes, {"n_records": 8})
    assert cycles == TIMEOUT_MARGIN * model_cycles(jacc_sketch.Params(), sizes, {"n_records": 8})
    assert timeout_ms(jacc_sketch.Params(), sizes, {"n_records": 8}) == -(-cycles // 250_000)
