"""The command line a Mash or sourmash user expects (issue 38 item 4): short options where they
mean what Mash means by the letter (-k k-mer size, -p threads, -m minimum copies, -o output),
the old double-dash forms kept as aliases, dist/search/jsd/motifs to standard output without -o,
sketch --help grouped by --kind, --plot documented."""

import pytest

from host.cli import build_parser
from host.sketchfile import read_sketches
from tests.genomes import write_related_genomes
from tests.cli_helpers import run


@pytest.fixture
def genomes(tmp_path):
    return write_related_genomes(tmp_path, count=3, length=6000, step=0.03, seed=38)


def parse(*args):
    return build_parser().parse_args([str(a) for a in args])


@pytest.mark.parametrize("short, long, dest, value", [
    ("-k", "--k", "k", 21), ("-k", "--ksize", "k", 21), ("-p", "--threads", "threads", 3),
    ("-m", "--min-count", "min_count", 2), ("-o", "--output", "output", "x.sketch"),
    ("--register-bits", "--w", "w", 5)])
def test_sketch_short_and_long_forms_are_one_option(short, long, dest, value):
    assert getattr(parse("sketch", "a.fa", short, value, "-o", "y"), dest) == \
        getattr(parse("sketch", "a.fa", long, value, "-o", "y"), dest)
    assert str(getattr(parse("sketch", "a.fa", "-o", "y", short, value), dest)) == str(value)


@pytest.mark.parametrize("new, old, dest", [
    ("--sample-bits", "--s", "s"), ("--cm-rows", "--d", "d"), ("--cm-width-bits", "--cw", "cw"),
    ("--queue-bits", "--R", "R"), ("--queue-entries", "--n", "n")])
def test_jsd_engine_options_have_names_and_keep_their_letters(new, old, dest):
    assert getattr(parse("jsd", "a.fa", new, 3), dest) == 3
    assert getattr(parse("jsd", "a.fa", old, 3), dest) == 3


def test_short_k_sketches_as_the_long_form(tmp_path, genomes):
    assert run("sketch", *genomes, "-k", 21, "-o", tmp_path / "short.sketch") == 0
    assert run("sketch", *genomes, "--k", 21, "-o", tmp_path / "long.sketch") == 0
    short, long = read_sketches(tmp_path / "short.sketch"), read_sketches(tmp_path / "long.sketch")
    assert short.params["k"] == 21
    assert (short.registers() == long.registers()).all()


@pytest.mark.parametrize("command", ["dist", "search", "jsd", "motifs"])
def test_text_outputs_go_to_standard_output_without_o(tmp_path, genomes, capsys, command):
    if command == "search":
        assert run("sketch", *genomes, "-o", tmp_path / "refs.sketch") == 0
        capsys.readouterr()
        args = ["search", genomes[0], "--db", tmp_path / "refs.sketch"]
    elif command == "motifs":
        args = ["motifs", "--test", genomes[0], "--control", genomes[1], "--kmin", 8,
                "--kmax", 9, "--cw", 10]
    else:
        args = [command, *genomes]
    assert run(*args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# kmer-sketch-accel 0.1.0 {command}")
    assert run(*args, "-o", tmp_path / "file.txt") == 0
    assert (tmp_path / "file.txt").read_text() == out


@pytest.mark.parametrize("command", ["sketch", "merge"])
def test_binary_outputs_still_need_o(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse(command, "a")
    assert exit_.value.code == 2
    assert "-o/--output" in capsys.readouterr().err


def test_sketch_help_groups_options_by_kind():
    text = build_parser()._subparsers._group_actions[0].choices["sketch"].format_help()
    text = text[text.index("\noptions:"):]  # the option list, not the usage line
    both = text.index("\nk-mers (every --kind):")
    hll = text.index("\n--kind hll (default): HyperLogLog")
    counts = text.index("\n--kind hll: minimum k-mer count")
    pqa = text.index("\n--kind pqa: priority-queue arrays")
    # each option under its own kind's heading
    assert both < text.index("-k K, --ksize K, --k K") < hll
    assert hll < text.index("--index-bits P ") < counts < text.index("-m M, --min-count M")
    assert counts < pqa < text.index("--sample-bits S, --s S") < text.index("--queue-bits R")


def test_plot_is_documented_in_dist_help():
    text = build_parser()._subparsers._group_actions[0].choices["dist"].format_help()
    assert "--plot IMAGE" in text and "matplotlib" in text
