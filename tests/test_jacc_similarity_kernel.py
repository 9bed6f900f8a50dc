# amaranth: UnusedElaboratable=no
"""The ``jacc_similarity`` kernel under cocotb (Verilator). CI build: V=4, D=2, p=10, w=4 with
23 sketches (related synthetic genomes, random, empty, saturated): the whole call plan of a
full-matrix run, of a pruned run (h = 0.3) with random stalls on every AXI channel, and of a
full run over the first 22 sketches (the last call loads fewer than V / D pivot groups). The slow
build (V=16, D=4, p=8, w=5: 8-bit register fields, 16-byte records, and groups shorter than the
record write-out, so the stream stalls at group ends) runs 30 sketches.

Checks: every feature record of every call equals the golden features of its union; the host
flow on the kernel's records gives exactly host.similarity.all_pairs; pruning loses no pair with
golden J >= h and drops only pairs below h; the stream runs at one beat per cycle. The buffers
lie across 2^32 (the kernel's 64-bit addresses step in two 32-bit halves)."""

import json

import numpy as np
import pytest

from host.allpairs import SimilarityJob, device_executor, run_all_pairs
from host.device import SimDevice
from kmerspec.golden.hll import HllParams, estimate, features, jaccard
from host.similarity import all_pairs
from hw.jacc_similarity import JaccSimilarityKernel
from hw.jacc_similarity.kernel import call_cycles_model, write_tail
from kmerspec.kernels.jacc_similarity import Params
from sim.runner import available_simulators, run_kernel_bench
from tests.similarity_sketches import sketch_set

pytestmark = pytest.mark.skipif(not available_simulators(), reason="no HDL simulator")

# (V, D, p, w, genome sketches, random sketches, threshold of the pruned run)
CONFIGS = [pytest.param((4, 2, 10, 4, 16, 5, 0.3), id="V4-D2-p10-w4"),
           pytest.param((16, 4, 8, 5, 20, 8, 0.2), id="V16-D4-p8-w5", marks=pytest.mark.slow)]


@pytest.fixture(scope="module", params=CONFIGS)
def kernel_run(request, tmp_path_factory):
    v, d, p, w, genomes, randoms, threshold = request.param
    # a sketch count whose last call has fewer than V / D pivot groups
    partial = (genomes + randoms + 2 - 2) // v * v + 2
    params = HllParams(p, w)
    registers = sketch_set(genomes, randoms, params, seed=3)
    path = tmp_path_factory.mktemp("similarity")
    np.save(path / "sketches.npy", registers)
    kernel = JaccSimilarityKernel(Params(v, d, p, w))
    run_kernel_bench(kernel.params, "sim.jacc_similarity.tb_kernel",
                     {"sketches": str(path / "sketches.npy"), "seed": 5,
                      # the first buffer from 256 bytes below 2^32: its addresses carry into the
                      # upper half
                      "address_base": (1 << 32) - 0x1100, "memory_bytes": (1 << 22) + 4096,
                      "runs": [[None, 0.0, None], [threshold, 0.3, None], [None, 0.2, partial]],
                      "out": str(path / "report.json")})
    report = json.loads((path / "report.json").read_text())
    return registers, params, kernel, report


def _golden_record(sorted_registers, call, q, j, s, geometry):
    """Features of record (j, s) of group q, from the kernel contract (docs), in pure Python."""
    n = len(sorted_registers)
    empty = [0] * geometry.m
    pivot_group = j // geometry.streams
    rank = call.first_pivot + j
    pivot = (sorted_registers[rank] if pivot_group <= q and pivot_group < call.pivot_groups
             and rank < n else empty)
    t = (call.first_group + q) * geometry.streams + s
    streamed = sorted_registers[t] if t < n else empty
    return features([max(a, b) for a, b in zip(pivot, streamed)], HllParams(geometry.p, geometry.w))


def _job(kernel_run, run):
    """The run's job (its plan) and the feature records the kernel wrote for each call."""
    registers, params, kernel, report = kernel_run
    registers = registers[:report[run]["count"]]
    job = SimilarityJob(registers, params, kernel.params, report[run]["threshold"])
    assert len(report[run]["features"]) == len(job.calls)
    return job, registers, [bytes.fromhex(h) for h in report[run]["features"]]


@pytest.mark.parametrize("run", [0, 1, 2])
def test_every_record_equals_golden_union_features(kernel_run, run):
    geometry = kernel_run[2].params
    job, registers, features_of_calls = _job(kernel_run, run)
    if run == 2:
        assert job.calls[-1].pivot_groups < geometry.pivot_groups
    sorted_registers = [list(map(int, row)) for row in registers[job.order]]
    for call, records in zip(job.calls, features_of_calls):
        for q in range(call.groups):
            for j in range(geometry.pivots):
                for s in range(geometry.streams):
                    at = (q * geometry.record_block_bytes
                          + (j * geometry.streams + s) * geometry.record_bytes)
                    nz = int.from_bytes(records[at:at + 4], "little")
                    z = int.from_bytes(records[at + 4:at + geometry.record_bytes], "little")
                    assert (z, nz) == _golden_record(sorted_registers, call, q, j, s, geometry), \
                        f"{call}: group {q} pivot {j} slot {s}"


@pytest.mark.parametrize("run", [0, 1, 2])
def test_host_flow_on_kernel_records_equals_all_pairs(kernel_run, run):
    params = kernel_run[1]
    job, registers, features_of_calls = _job(kernel_run, run)
    got = list(job.rows(features_of_calls))
    expected = list(all_pairs(registers, params, job.threshold))
    assert [r[0] for r in got] == [r[0] for r in expected]
    for (i, js, values), (ei, ejs, evalues) in zip(got, expected):
        assert np.array_equal(js, ejs) and np.array_equal(values, evalues), f"row {i}"


def test_pruning_keeps_every_pair_above_threshold(kernel_run):
    """Brute force with the golden estimator: every pair with J >= h is kept with its value,
    every other pair is absent."""
    params, kernel = kernel_run[1:3]
    job, registers, features_of_calls = _job(kernel_run, 1)
    threshold = job.threshold
    kept = {frozenset((i, int(j))): v for i, js, values in job.rows(features_of_calls)
            for j, v in zip(js, values)}
    rows = [list(map(int, r)) for r in registers]
    cards = [estimate(r, params) for r in rows]
    n = len(rows)
    above = 0
    for a in range(n):
        for b in range(a + 1, n):
            union = estimate([max(x, y) for x, y in zip(rows[a], rows[b])], params)
            j = jaccard(cards[a], cards[b], union)
            pair = frozenset((a, b))
            if j >= threshold:
                above += 1
                assert pair in kept and kept[pair] == j, f"pair {a}, {b} with J = {j} lost"
            else:
                assert pair not in kept
    assert above >= 5, "the sketch set must have pairs above the threshold"
    pruned_groups = sum(c.groups for c in job.calls)
    full_groups = sum(c.groups for c in SimilarityJob(registers, params, kernel.params).calls)
    assert pruned_groups <= full_groups
    largest_pivot_stops = [job.stops[c.first_pivot + c.n_pivots - 1] for c in job.calls]
    if min(largest_pivot_stops) <= n - kernel.params.streams:
        assert pruned_groups < full_groups, "pruning must shorten the streams"


def test_one_beat_per_cycle_and_call_cycles(kernel_run):
    """Without memory stalls a call reads one beat per cycle, except that a group end waits for
    the previous group's records when groups are shorter than the pipeline plus the record
    write-out; the measured cycles of every call equal the cycle model the benchmark uses."""
    registers, params, kernel, report = kernel_run
    geometry = kernel.params
    calls = report[0]["cycles"]   # the run without stalls
    start_latency = calls[0]["start_to_first_read"]
    assert start_latency < 20
    for call in calls:
        groups = call["groups"]
        assert call["start_to_first_read"] == start_latency
        assert call["read_span"] == geometry.beats_per_group + (groups - 1) * kernel.group_period
        assert call["first_read_to_last_write"] == (call["read_span"] + kernel.drain_cycles
                                                    + write_tail(geometry))
        assert (call["start_to_first_read"] + call["first_read_to_last_write"]
                == call_cycles_model(geometry, groups, start_latency))
    if kernel.group_period == geometry.beats_per_group:
        assert all(c["read_span"] == c["groups"] * geometry.beats_per_group for c in calls)


def test_host_flow_through_sim_device():
    """The driver path: host.allpairs executes its calls through host.device.SimDevice (the
    generated Verilog under cocotb, random stalls) and gives exactly host.similarity.all_pairs."""
    params = HllParams(10, 4)
    registers = sketch_set(3, 0, params, seed=8)      # 5 sketches: one call
    kernel = Params(4, 2, 10, 4)
    execute = device_executor(SimDevice(pause=0.2, seed=3), kernel)
    got = list(run_all_pairs(registers, params, kernel, None, execute))
    expected = list(all_pairs(registers, params))
    assert [(i, js.tolist(), v.tolist()) for i, js, v in got] == \
        [(i, js.tolist(), v.tolist()) for i, js, v in expected]
