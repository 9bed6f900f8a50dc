"""The kernels' contracts (kmerspec.kernels): one Params per kernel, checked once, serialised for
the cocotb benches, named alike in the registry, the RTL and the Vitis kernel."""

import dataclasses

import pytest

from hw.build import ALIASES, KERNELS, kernel_params, resolve_kernel
from kmerspec import params as spec
from kmerspec.golden.hll import HllParams
from kmerspec.golden.jsd import JsdParams
from kmerspec.golden.motif import MotifParams
from kmerspec.kernels import KERNELS as CONTRACTS
from kmerspec.kernels import jacc_similarity, jacc_sketch, jsd_builder, jsd_similarity, motif
from kmerspec.kernels import params_class, params_from_dict


@pytest.mark.parametrize("kernel", CONTRACTS)
def test_one_params_per_kernel_named_like_the_registry_and_the_vitis_kernel(kernel):
    params = params_class(kernel)()
    assert params.KERNEL == kernel == params.desc.name
    cls = resolve_kernel(kernel)
    assert cls.Params is type(params)
    assert kernel_params(cls) == dataclasses.asdict(params)


@pytest.mark.parametrize("kernel", CONTRACTS)
def test_params_round_trip_through_the_bench_serialisation(kernel):
    params = params_class(kernel)()
    assert params_from_dict(params.to_dict()) == params
    with pytest.raises(ValueError, match=rf"^kernel '{kernel}' has no parameter 'nope'"):
        type(params).from_dict({**params.to_dict(), "nope": 1})


def test_old_registry_names_are_aliases():
    assert ALIASES == {"sketch": "jacc_sketch", "similarity": "jacc_similarity",
                       "jsd": "jsd_builder"}
    for old, new in ALIASES.items():
        assert old not in KERNELS
        assert resolve_kernel(old) is resolve_kernel(new)


def test_a_range_is_checked_with_one_message_everywhere():
    """p is checked by kmerspec.params.P for the golden model and both JACC kernels alike."""
    message = r"^p must be an integer from 8 to 18, not 19$"
    for make in (lambda: HllParams(p=19), lambda: jacc_sketch.Params(p=19),
                 lambda: jacc_similarity.Params(p=19), lambda: spec.P.check(19)):
        with pytest.raises(ValueError, match=message):
            make()
    assert HllParams().p == jacc_sketch.Params().p == jacc_similarity.Params().p == spec.P.default


def test_kernel_limits_narrower_than_the_algorithm():
    """The golden model allows R = 0 (one queue); the kernels need at least one address bit."""
    assert JsdParams(R=0).R == 0
    for make in (lambda: jsd_builder.Params(R=0), lambda: jsd_similarity.Params(R=0)):
        with pytest.raises(ValueError, match=r"^R must be an integer from 1 to 20, not 0$"):
            make()


def test_kernel_params_from_the_algorithm_parameters():
    algorithm = JsdParams(k=21, s=4, d=3, cw=10, R=6, n=8, update="cm")
    kernel = jsd_builder.Params.for_algorithm(algorithm, lanes=2)
    assert (kernel.k, kernel.s, kernel.d, kernel.cw, kernel.R, kernel.n, kernel.lanes) == \
        (21, 4, 3, 10, 6, 8, 2)
    assert kernel.algorithm == dataclasses.replace(algorithm, update="cu")
    with pytest.raises(ValueError, match="canonical"):
        jsd_builder.Params.for_algorithm(JsdParams(canonical=False))
    shape = MotifParams(kmin=4, kmax=7, cw=6, store_sets=8, store_ways=3, thresholds=5)
    kernel = motif.Params.for_algorithm(shape, read_latency=2)
    assert (kernel.kmin, kernel.kmax, kernel.cw, kernel.store_sets, kernel.read_latency) == \
        (4, 7, 6, 8, 2)
    assert kernel.algorithm.countmin_seed_words(5) == shape.countmin_seed_words(5)


def test_register_offsets_of_the_default_kernels():
    """What the drivers program: SPEC 6 offsets (pointers 8-byte aligned) in argument order."""
    assert jacc_sketch.Params().desc.offsets() == {"src": 0x10, "n_bytes": 0x18, "dst": 0x20,
                                                   "n_records": 0x28}
    assert jsd_builder.Params().desc.offsets()["update"] == 0x2C
    assert list(motif.Params().desc.offsets()) == ["test", "test_bytes", "control",
                                                   "control_bytes", "thresholds", "growth_q8",
                                                   "result"]
