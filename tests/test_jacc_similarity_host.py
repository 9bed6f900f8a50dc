"""Host side of the JACC similarity kernel: Params checks, the byte layouts of the sketch buffer and
the feature records, the call plan (every wanted pair exactly once, N not a multiple of V or D,
pruning), and the software model through the whole host flow against host.similarity.all_pairs."""

import io

import numpy as np
import pytest

from host.allpairs import SimilarityJob, execute_model, run_all_pairs, write_similarity
from kmerspec.golden.hll import HllParams, features
from kmerspec.kernels.jacc_similarity import (KernelCall, Params, call_pairs, pack_features,
                                              pack_sketches, partner_stops, plan_calls,
                                              unpack_features, unpack_groups)
from host.similarity import all_pairs
from tests.similarity_sketches import sketch_set


def _random_registers(rng, n, params):
    rows = np.zeros((n, params.m), dtype=np.uint8)
    for row in rows:
        inserts = int(rng.integers(0, 3 * params.m))
        ranks = np.minimum(rng.geometric(0.5, inserts), params.max_rank).astype(np.uint8)
        np.maximum.at(row, rng.integers(0, params.m, inserts), ranks)
    return rows


@pytest.mark.parametrize("kwargs, message", [
    ({"pivots": 6, "streams": 4},
     r"pivots \(V\) must be a positive multiple of streams \(4\), not 6"),
    ({"streams": 3}, r"streams \(D\) must be a power of two with D \* 4 <= 512, not 3"),
    ({"p": 7}, r"p must be an integer from 8 to 18, not 7"),
    ({"w": 9}, r"w must be an integer from 4 to 8, not 9"),
    ({"pivots": 256, "streams": 256, "p": 8}, r"streams \(D\) must be a power of two"),
    ({"pivots": 1, "streams": 1, "p": 8, "data_width": 2048},
     r"a sketch \(1024 bits\) is smaller than a slot \(2048 bits\)"),
])
def test_geometry_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Params(**kwargs)


def test_geometry_of_the_jacc_fpga_build():
    g = Params(80, 4, 14, 4)
    assert (g.slot_bits, g.registers_per_slot, g.beats_per_group) == (128, 32, 512)
    assert (g.group_bytes, g.record_bytes, g.record_beats, g.record_block_bytes) == \
        (32768, 8, 40, 2560)
    assert Params(4, 2, 18, 4).record_bytes == 16     # Z has 34 bits
    assert Params(4, 2, 14, 5).field_bits == 8


def test_sketch_buffer_byte_layout():
    """The documented table: beat b of group g, slot s = registers [b R, (b+1) R) of sketch
    g D + s; two 4-bit registers per byte, the lower index in the low nibble."""
    g = Params(2, 2, 8, 4)           # R = 64 registers per 256-bit slot, 4 beats
    registers = np.zeros((3, 256), dtype=np.uint8)
    registers[0, 0], registers[0, 1] = 3, 5
    registers[1, 64] = 7                          # beat 1, slot 1
    registers[2, 255] = 15                        # group 1, beat 3, slot 0, last register
    data = pack_sketches(registers, g)
    assert len(data) == 2 * 4 * 64               # padded to 2 groups of 4 beats
    assert data[0] == 0x53
    assert data[64 + 32] == 0x07
    assert data[256 + 3 * 64 + 31] == 0xF0
    assert sum(data) == 0x53 + 0x07 + 0xF0


@pytest.mark.parametrize("v, d, p, w", [(4, 2, 8, 4), (8, 4, 10, 5), (2, 1, 8, 8), (4, 4, 9, 4)])
def test_sketch_buffer_round_trip(v, d, p, w):
    g = Params(v, d, p, w)
    rng = np.random.default_rng(p * 10 + w)
    registers = _random_registers(rng, 7, HllParams(p, w))
    groups = unpack_groups(pack_sketches(registers, g), 0, -(-7 // d), g)
    assert np.array_equal(groups.reshape(-1, g.m)[:7], registers)
    assert not groups.reshape(-1, g.m)[7:].any()


def test_bad_sketch_buffers_are_named():
    g = Params(4, 2, 8, 4)
    with pytest.raises(ValueError, match=r"must be an n x 256 array, not shape \(3, 128\)"):
        pack_sketches(np.zeros((3, 128), dtype=np.uint8), g)
    with pytest.raises(ValueError, match="a register exceeds the largest rank 15 of w = 4"):
        pack_sketches(np.full((1, 256), 16, dtype=np.uint8), g)
    with pytest.raises(ValueError, match=r"groups \[1, 3\) are outside the buffer of 1 groups"):
        unpack_groups(pack_sketches(np.zeros((2, 256), dtype=np.uint8), g), 1, 2, g)


def test_feature_records_round_trip_and_layout():
    g = Params(2, 2, 18, 4)            # 16-byte records: Z needs 34 bits
    z = np.array([[[1 << 33, 5], [0, 77]]], dtype=object)
    nz = np.array([[[1 << 18, 0], [3, 4]]])
    data = pack_features(z, nz, g)
    assert len(data) == 64
    assert data[:16] == (1 << 18).to_bytes(4, "little") + (1 << 33).to_bytes(12, "little")
    z2, nz2 = unpack_features(data, 1, g)
    assert z2.tolist() == z.tolist() and nz2.tolist() == nz.tolist()


def _wanted(n, stops):
    return {(r, t) for r in range(n) for t in range(r + 1, int(stops[r]))}


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 13, 21])
@pytest.mark.parametrize("v, d", [(4, 2), (8, 4), (2, 2), (6, 2), (1, 1)])
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_plan_covers_every_pair_once(n, v, d, threshold):
    g = Params(v, d, 8, 4)
    cards = np.sort(np.random.default_rng(n).uniform(0, 100, n))
    cards[: n // 4] = 0.0                           # empty sketches too
    stops = partner_stops(cards, threshold)
    seen = []
    for call in plan_calls(n, g, stops):
        assert call.first_pivot == call.first_group * d and 1 <= call.pivot_groups <= v // d
        r, t, q, j, s = call_pairs(call, n, g, stops)
        assert (q < call.groups).all()
        seen.extend(zip(r.tolist(), t.tolist()))
    assert len(seen) == len(set(seen))
    assert set(seen) == _wanted(n, stops)


def test_pruning_shortens_the_stream():
    g = Params(4, 2, 8, 4)
    cards = np.geomspace(10, 10000, 40)
    full = plan_calls(40, g, partner_stops(cards, None))
    pruned = plan_calls(40, g, partner_stops(cards, 0.5))
    assert sum(c.groups for c in pruned) < sum(c.groups for c in full) / 2
    # the stream of a call ends at the group of the last sketch its largest pivot may reach
    stops = partner_stops(cards, 0.5)
    for call in pruned:
        last = call.first_pivot + call.n_pivots - 1
        assert (call.first_group + call.groups) * 2 >= stops[last]
        stream_start = (call.first_group + call.pivot_groups) * 2
        assert (call.first_group + call.groups - 1) * 2 < max(stops[last], stream_start)


def test_model_records_are_golden_union_features():
    """A call's records straight from kmerspec.golden.hll.features, per the visibility rule."""
    g = Params(4, 2, 8, 4)
    params = HllParams(8, 4)
    registers = _random_registers(np.random.default_rng(9), 11, params)
    buffer = pack_sketches(registers, g)
    call = KernelCall(first_pivot=4, n_pivots=4, first_group=2, pivot_groups=2, stream_groups=2)
    z, nz = unpack_features(execute_model(buffer, call, g), call.groups, g)
    padded = np.vstack([registers, np.zeros((1, g.m), dtype=np.uint8)])
    for q in range(call.groups):
        for j in range(4):
            for s in range(2):
                visible = j // 2 <= q
                pivot = padded[4 + j] if visible else np.zeros(g.m, dtype=np.uint8)
                union = np.maximum(pivot, padded[(2 + q) * 2 + s]).tolist()
                assert (z[q, j, s], nz[q, j, s]) == features(union, params)


@pytest.mark.parametrize("v, d, p, w", [(4, 2, 10, 4), (8, 4, 8, 5), (2, 1, 8, 8), (6, 2, 9, 4)])
@pytest.mark.parametrize("threshold", [None, 0.2, 0.5, 0.9])
def test_sw_backend_equals_all_pairs(v, d, p, w, threshold):
    params = HllParams(p, w)
    registers = sketch_set(14, 5, params, seed=p + w, length=2000)
    got = list(run_all_pairs(registers, params, Params(v, d, p, w), threshold))
    expected = list(all_pairs(registers, params, threshold))
    assert len(got) == len(expected)
    for (i, js, values), (ei, ejs, evalues) in zip(got, expected):
        assert i == ei and np.array_equal(js, ejs) and np.array_equal(values, evalues)
    if threshold is not None and threshold <= 0.5:
        assert sum(len(js) for _, js, _ in got) > 0, "the family must give pairs above h"


@pytest.mark.parametrize("p, w, size", [(8, 4, 2_000_000), (9, 5, 10**11)])
def test_saturated_sketches_through_the_kernel_plan(p, w, size):
    """The kernel returns (Z, nz) of each union; the host adds the union's saturated registers
    (C_R, SPEC 3 "Saturated registers") for pairs where a sketch has some, so the kernel path
    equals the native pair loop bit for bit on saturated sketches too (and on a sketch all at
    the top value, whose estimate is not censored). Related sets (a shared part and a part of
    their own, of 1 to 4 times ``size`` k-mers) so that J is between 0 and 1."""
    from bench.containment_small import simulated_registers
    params = HllParams(p, w)
    rng = np.random.default_rng(41)
    shared = simulated_registers(size, params, rng)
    registers = np.array([np.maximum(shared, simulated_registers(int(size * f), params, rng))
                          for f in (1, 1.5, 2, 3, 4)] + [np.zeros(params.m, np.uint8)] * 2)
    registers[-2] = simulated_registers(size // 10_000, params, rng)  # unsaturated
    registers[-1] = params.max_rank
    saturated = (registers == params.max_rank).sum(axis=1)
    assert (saturated[:5] > 0).all() and saturated[5] == 0
    got = list(run_all_pairs(registers, params, Params(4, 2, p, w)))
    expected = list(all_pairs(registers, params))
    assert any(((v > 0) & (v < 1)).any() for _, _, v in expected)
    assert [(i, js.tolist(), v.tolist()) for i, js, v in got] == \
        [(i, js.tolist(), v.tolist()) for i, js, v in expected]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_sets(n):
    params = HllParams(8, 4)
    registers = _random_registers(np.random.default_rng(n), n, params)
    got = list(run_all_pairs(registers, params, Params(4, 2, 8, 4)))
    assert [(i, js.tolist(), v.tolist()) for i, js, v in got] == \
        [(i, js.tolist(), v.tolist()) for i, js, v in all_pairs(registers, params)]


def test_job_rejects_mismatched_parameters_and_records():
    params = HllParams(8, 4)
    with pytest.raises(ValueError,
                       match="the sketches have p=8, w=4 but the kernel geometry has p=9, w=4"):
        SimilarityJob(np.zeros((2, 256), dtype=np.uint8), params, Params(4, 2, 9, 4))
    job = SimilarityJob(np.zeros((5, 256), dtype=np.uint8), params, Params(4, 2, 8, 4))
    with pytest.raises(ValueError, match="0 feature blocks for 1 calls"):
        list(job.rows([]))


def test_write_similarity_formats():
    params = HllParams(8, 4)
    registers = sketch_set(8, 0, params, seed=4, length=1500)
    names = [f"g{i}" for i in range(len(registers))]
    g = Params(4, 2, 8, 4)
    outputs = {}
    for fmt in ("tsv", "phylip", "edges"):
        out = io.StringIO()
        write_similarity(out, names, run_all_pairs(registers, params, g,
                                                    0.1 if fmt == "edges" else None), fmt)
        outputs[fmt] = out.getvalue().splitlines()
    matrix = np.eye(len(names))
    for i, js, values in all_pairs(registers, params):
        matrix[i, js] = matrix[js, i] = values
    assert outputs["tsv"][0] == "#genome\t" + "\t".join(names)
    assert outputs["tsv"][1] == "g0\t" + "\t".join(f"{v:.6g}" for v in matrix[0])
    assert outputs["phylip"][0] == str(len(names))
    assert outputs["phylip"][2] == "g1 " + " ".join(f"{v:.6f}" for v in 1 - matrix[1])
    edges = {tuple(line.split("\t")[:2]) for line in outputs["edges"][1:]}
    expected = {(names[i], names[j]) for i, js, _ in all_pairs(registers, params, 0.1) for j in js}
    assert edges == expected and edges
    with pytest.raises(ValueError, match="format must be 'tsv', 'phylip' or 'edges', not 'csv'"):
        write_similarity(io.StringIO(), names, iter([]), "csv")
