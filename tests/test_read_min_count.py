"""`--min-count` filters the FASTQ read files of a command only (a FASTA genome is sketched in
full, said once on stderr); `--min-count-fasta` filters every file, as before."""

from pathlib import Path

import numpy as np
import pytest

from host.cli import main
from host.reader import is_read_file
from host.reader import ReadsMinCount, read_file_groups
from host.sketchfile import read_sketches
from kmerspec.golden.mincount import MinCountParams

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
READS = EXAMPLES / "reads" / "SRR059298_2000.fq.gz"
DWV = EXAMPLES / "genomes" / "dwv.fa.gz"
VDV1 = EXAMPLES / "genomes" / "vdv1.fa.gz"
NOTE = ("note: --min-count 2 applies to the 1 FASTQ read file; 2 FASTA files sketched in full "
        "(--min-count-fasta filters them too)")


def sketch(tmp_path, name, *args):
    out = tmp_path / name
    assert main(["sketch", *map(str, args), "--index-bits", "12", "-o", str(out)]) == 0
    return read_sketches(out)


@pytest.mark.parametrize("backend", ["sw", "golden"])
def test_mixed_inputs_filter_the_reads_only(tmp_path, capsys, backend):
    mixed = sketch(tmp_path, "mixed.sketch", DWV, READS, VDV1, "--min-count", "2",
                   "--backend", backend)
    assert capsys.readouterr().err.splitlines() == [NOTE]
    reads = sketch(tmp_path, "reads.sketch", READS, "--min-count", "2")
    genomes = sketch(tmp_path, "genomes.sketch", DWV, VDV1)
    assert mixed.names == ["dwv.fa.gz", "SRR059298_2000.fq.gz", "vdv1.fa.gz"]
    assert mixed.files == [[str(DWV)], [str(READS)], [str(VDV1)]]
    registers = mixed.registers()
    assert np.array_equal(registers[1], reads.registers()[0])
    assert np.array_equal(registers[[0, 2]], genomes.registers())
    assert registers[0].any() and registers[2].any()
    assert mixed.min_counts == [{}, MinCountParams(min_count=2).record(), {}]


def test_dist_reads_against_a_reference(tmp_path, capsys):
    """The issue's command: the reference keeps its k-mers, so Jaccard(reads, reference) is
    that of the filtered reads against the whole genome; --min-count-fasta gives the old
    result (a FASTA genome's k-mers occur about once: nearly all of them filtered out)."""
    out = tmp_path / "d.tsv"
    assert main(["dist", str(READS), str(DWV), "--min-count", "2", "--index-bits", "12",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [NOTE.replace("2 FASTA files", "1 FASTA file")]
    filtered_reads = sketch(tmp_path, "r.sketch", READS, "--min-count", "2")
    whole_reference = sketch(tmp_path, "g.sketch", DWV)
    expected = tmp_path / "e.tsv"
    assert main(["dist", str(tmp_path / "r.sketch"), str(tmp_path / "g.sketch"),
                 "-o", str(expected)]) == 0
    assert out.read_text().splitlines()[1:] == expected.read_text().splitlines()[1:]
    value = float(out.read_text().splitlines()[2].split("\t")[2])
    assert value > 0.1
    assert filtered_reads.registers().any() and whole_reference.registers().any()

    capsys.readouterr()
    assert main(["dist", str(READS), str(DWV), "--min-count", "2", "--min-count-fasta",
                 "--index-bits", "12", "-o", str(out)]) == 0
    assert "note:" not in capsys.readouterr().err
    assert float(out.read_text().splitlines()[2].split("\t")[2]) < value / 10


def test_no_note_without_fasta_or_without_the_filter(tmp_path, capsys):
    sketch(tmp_path, "a.sketch", READS, "--min-count", "2")
    sketch(tmp_path, "b.sketch", DWV, READS)
    assert "note:" not in capsys.readouterr().err


def test_read_files_are_told_by_content(tmp_path):
    fastq = tmp_path / "reads.txt"
    fastq.write_bytes(b"\n\n@r\nACGT\n+\nIIII\n")
    fasta = tmp_path / "reads.fq"  # the name does not matter
    fasta.write_bytes(b">r\nACGT\n")
    assert is_read_file(READS) and is_read_file(fastq)
    assert not is_read_file(DWV) and not is_read_file(fasta)
    assert not is_read_file(tmp_path / "missing.fq")  # its error comes when it is read
    groups, note = read_file_groups([str(fasta), str(fastq)], ReadsMinCount(min_count=3))
    assert groups == [([1], MinCountParams(min_count=3)), ([0], MinCountParams())]
    assert note.startswith("--min-count 3 applies to the 1 FASTQ read file; 1 FASTA file ")
    groups, note = read_file_groups([str(fasta)], ReadsMinCount(min_count=3))
    assert groups == [([0], MinCountParams())]
    assert note == ("--min-count 3 applies to FASTQ read files and none was given; 1 FASTA "
                    "file sketched in full (--min-count-fasta filters them too)")
    everything = ReadsMinCount(min_count=3, fasta=True)
    assert read_file_groups([str(fasta), str(fastq)], everything) == \
        ([([0, 1], MinCountParams(min_count=3))], None)


@pytest.mark.timeout(20)  # opening the FIFO to look would wait for a writer
def test_a_pipe_is_not_read_to_tell_its_kind(tmp_path):
    """Looking at a FIFO would take its data from the command that reads it later."""
    import os
    fifo = tmp_path / "reads.fifo"
    os.mkfifo(fifo)
    assert is_read_file(fifo)  # returns at once: nothing opened the FIFO
