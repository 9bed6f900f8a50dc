"""Expected records of the JSD kernels from the golden model (shared by the Amaranth-simulator
tests, the cocotb tests and the SimDevice tests)."""

import random

from kmerspec.golden.entropy import entropy_fixed
from kmerspec.golden.jsd import JsdParams, build_pqa, build_state
from kmerspec.golden.parse import genome_kmers
from kmerspec.kernels.jsd_builder import PqaRecord

__all__ = ["expected_state", "expected_record", "compare_records", "random_records"]


def expected_state(files, params: JsdParams):
    return build_state(genome_kmers(files, params.k, canonical_form=params.canonical), params)


def expected_record(tag: int, files, params: JsdParams) -> PqaRecord:
    pqa = expected_state(files, params).pqa
    return PqaRecord(tag=tag, entropy=entropy_fixed(pqa.values()), total=pqa.total(), pqa=pqa)


def compare_records(got: list[PqaRecord], expected: list[PqaRecord]) -> None:
    """Every queue entry, the entropy and the total must be equal (message names the first
    difference)."""
    assert len(got) == len(expected), f"{len(got)} records, expected {len(expected)}"
    for record, reference in zip(got, expected):
        assert record.tag == reference.tag, (record.tag, reference.tag)
        for q, (queue, queue_ref) in enumerate(zip(record.pqa.queues, reference.pqa.queues)):
            assert queue == queue_ref, f"genome {record.tag} queue {q}: {queue} != {queue_ref}"
        assert record.total == reference.total, f"genome {record.tag} total"
        assert record.entropy == reference.entropy, f"genome {record.tag} entropy"


def random_records(R: int, n: int, count: int, seed: int) -> list[PqaRecord]:
    """PQAs (with stored entropy and total) of overlapping random k-mer multisets, so tags are
    shared between them, plus one empty PQA (tag ``count``)."""
    rng = random.Random(seed)
    params = JsdParams(k=9, s=0, d=3, cw=6, R=R, n=n)
    pool = [rng.getrandbits(2 * params.k) for _ in range(60)]
    records = []
    for tag in range(count):
        share = rng.sample(pool, rng.randint(5, 50))
        pqa = build_pqa([rng.choice(share) for _ in range(rng.randint(20, 300))], params)
        records.append(PqaRecord(tag, entropy_fixed(pqa.values()), pqa.total(), pqa))
    empty = build_pqa([], params)
    records.append(PqaRecord(count, 0, 0, empty))
    return records
