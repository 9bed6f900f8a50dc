"""Parallel genome reading: order, errors and progress (the heatmap: tests/test_plot.py)."""

import gzip
import io

import pytest

from host.io import InputError
from host.reader import Progress, read_genomes


def test_genomes_arrive_in_order_with_read_ahead(tmp_path):
    paths = []
    for i in range(9):
        path = tmp_path / f"g{i}.fa.gz" if i % 2 else tmp_path / f"g{i}.fa"
        text = b">g%d\n%s\n" % (i, b"ACGT" * (i + 1))
        path.write_bytes(gzip.compress(text) if i % 2 else text)
        paths.append(str(path))
    got = list(read_genomes(paths, threads=3, prefetch=2))
    assert [p for p, _ in got] == paths
    assert [d for _, d in got] == [b">g%d\n%s\n" % (i, b"ACGT" * (i + 1)) for i in range(9)]


def test_an_unreadable_genome_raises_when_reached(tmp_path):
    good = tmp_path / "good.fa"
    good.write_bytes(b">a\nACGT\n")
    reader = read_genomes([str(good), str(tmp_path / "missing.fa")])
    assert next(reader)[0] == str(good)
    with pytest.raises(InputError, match="missing.fa: no such file"):
        next(reader)


def test_progress_draws_on_terminals_only():
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    pipe, terminal = io.StringIO(), Terminal()
    for stream in (pipe, terminal):
        progress = Progress(2, "sketch", stream=stream)
        progress.advance(1_000_000)
        progress.advance(2_000_000)
        progress.close()
    assert pipe.getvalue() == ""
    assert "2/2 genomes, 3.0 MB" in terminal.getvalue() and terminal.getvalue().endswith("\n")
