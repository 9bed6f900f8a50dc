"""Progress lines count work done, and the rate leaves out time spent waiting for input."""

import io
import random

import numpy as np

from host.api.run import Run
from host.api.sketching import sketch_files
from host.progress import BaseCounter, Progress, count_bases
from kmerspec.golden.line_machine import ByteClass, LineState, classify, step_class
from tests.genomes import ADVERSARIAL_TEXTS, random_genome_bytes


class Terminal(io.StringIO):
    def isatty(self):
        return True


def bases_by_line_machine(data: bytes) -> int:
    """The bytes the SPEC line machine reads inside sequence lines (CR and LF skipped)."""
    state, bases = LineState.LS_RECORD, 0
    for byte in data:
        byte_class = classify(byte)
        state, _ = step_class(state, byte_class)
        if byte_class not in (ByteClass.CR, ByteClass.LF) and \
                state in (LineState.IN_SEQUENCE, LineState.IN_FASTQ_SEQ):
            bases += 1
    return bases


def test_count_bases_equals_the_line_machine():
    rng = random.Random(18)
    texts = list(ADVERSARIAL_TEXTS) + [random_genome_bytes(rng, fastq=fastq)
                                       for fastq in (False, True, False, True)]
    texts += [b"\r>h\r\nAC\rGT\n", b"@r\r\n\rAC\n+\nII\n", b">a\n\r\r\nACGT"]
    for text in texts:
        assert count_bases(text) == bases_by_line_machine(text), text


def test_base_counter_is_exact_across_any_block_boundaries():
    rng = random.Random(19)
    texts = list(ADVERSARIAL_TEXTS) + [random_genome_bytes(rng, fastq=fastq)
                                       for fastq in (False, True)]
    texts.append(b"".join(texts))
    for text in texts:
        expected = bases_by_line_machine(text)
        for _ in range(20):
            cuts = sorted(rng.randint(0, len(text)) for _ in range(rng.randint(1, 6)))
            counter = BaseCounter()
            added = sum(counter.feed(text[a:b]) for a, b in zip([0, *cuts], [*cuts, len(text)]))
            added += counter.finish()
            assert counter.bases == added == expected, (text, cuts)


def test_rate_leaves_out_waiting(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("host.progress.time.monotonic", lambda: clock[0])
    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        clock[0] = 100.0
        progress = Progress("sketch", 2, stream=stream)
        with progress.waiting():
            clock[0] += 3.0  # reading the first genome
        clock[0] += 1.0      # sketching it
        progress.advance(1, 10_000_000)
        with progress.waiting():
            clock[0] += 3.0
        clock[0] += 1.0
        progress.advance(1, 10_000_000)
        progress.close()
    assert pipe.getvalue() == ""
    last = terminal.getvalue().rsplit("\r", 1)[1]
    assert last.startswith("sketch: 2/2 genomes, 20.00 Mbases, 10.0 Mbases/s")
    assert terminal.getvalue().endswith("\n")


def test_sketch_progress_counts_genomes_sketched_not_read(tmp_path, monkeypatch):
    ticks = iter(range(10**6))
    monkeypatch.setattr("host.progress.time.monotonic", lambda: float(next(ticks)))
    paths = []
    for i in range(3):
        path = tmp_path / f"g{i}.fa"
        path.write_bytes(b">g\n" + b"ACGT" * 1000 * (i + 1) + b"\n")
        paths.append(str(path))
    terminal = Terminal()
    seen = []

    class RecordingBackend:
        name = "sw"

        def sketch_hll(self, genomes, k, params, canonical, threads=None):
            for files in genomes:  # the reader has this genome; the line must not count it
                seen.append(terminal.getvalue().rsplit("\r", 1)[-1])
                yield np.ones(params.m, dtype=np.uint8)

    run = Run(terminal=terminal, made_backend=RecordingBackend())
    sketches = sketch_files(paths, {"k": 31, "p": 10, "w": 4, "canonical": True}, run)
    assert len(sketches) == 3
    assert [line.split(",")[0] for line in seen] == ["", "sketch: 1/3 genomes",
                                                      "sketch: 2/3 genomes"]
    assert "sketch: 3/3 genomes, 0.02 Mbases" in terminal.getvalue()
