"""Expected records of the JSD kernels from the golden model (shared by the Amaranth-simulator
tests, the cocotb tests and the sim backend's self-checks)."""

from host.golden.entropy import entropy_fixed
from host.golden.jsd import JsdParams, build_state
from host.golden.parse import genome_kmers
from host.layout.jsd import PqaRecord

__all__ = ["expected_state", "expected_record", "compare_records"]


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
