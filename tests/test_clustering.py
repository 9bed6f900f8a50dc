"""host/clustering.py on synthetic values (greedy as defined, whatever its block size; single
linkage as scipy's; numbering), and the ``cluster`` command's options, detection and mistakes
(the real-genome groupings: tests/test_cluster.py)."""

import numpy as np
import pytest

from host.clustering import (central_first, centrality, components, greedy, linkage_clusters,
                             number_clusters)
from tests.cli_helpers import one_error_line, run_status
from tests.genomes import Mutator


def random_ani(n: int, seed: int) -> np.ndarray:
    """ANI of n genomes in a few loose groups, so that greedy has choices to make."""
    rng = np.random.default_rng(seed)
    centre = rng.integers(0, max(2, n // 4), n)
    values = np.where(centre[:, None] == centre[None, :], rng.uniform(93, 100, (n, n)),
                      rng.uniform(70, 96, (n, n)))
    values = np.round((values + values.T) / 2, 1)  # ties too
    np.fill_diagonal(values, 100.0)
    return values


def naive_greedy(ani, order, threshold):
    representative = {}
    chosen = []
    for genome in order:
        passing = [r for r in chosen if ani[genome, r] >= threshold]
        if passing:  # the best, ties to the earliest chosen
            representative[genome] = max(passing, key=lambda r: (ani[genome, r],
                                                                 -chosen.index(r)))
        else:
            representative[genome] = genome
            chosen.append(genome)
    return [representative[g] for g in range(len(order))]


@pytest.mark.parametrize("seed", range(6))
def test_greedy_is_the_rule_whatever_its_block(seed):
    ani = random_ani(40, seed)
    order = np.random.default_rng(seed).permutation(40)
    expected = naive_greedy(ani, order.tolist(), 95.0)
    calls = []

    def query(rows, columns):
        calls.append(rows.size * columns.size)
        return ani[np.ix_(rows, columns)]
    for block in (1, 3, 7, 256):
        representative, value = greedy(order, query, "ani", 95.0, block=block)
        assert representative.tolist() == expected
        assert np.array_equal(value, ani[np.arange(40), representative])
    # compared with the representatives only, never every pair
    assert max(calls) < 40 * 40


def test_greedy_mash_prefers_the_smallest_distance():
    distance = np.array([[0, .02, .08], [.02, 0, .01], [.08, .01, 0]])
    representative, value = greedy(np.array([0, 2, 1]), lambda r, c: distance[np.ix_(r, c)],
                                   "mash", 0.05)
    assert representative.tolist() == [0, 2, 2] and value.tolist() == [0.0, 0.01, 0.0]


@pytest.mark.parametrize("seed", range(4))
def test_components_are_single_linkage(seed):
    ani = random_ani(30, seed)
    rows = [(i, np.flatnonzero((ani[i] >= 95) & (np.arange(30) > i))) for i in range(30)]
    np.random.default_rng(seed).shuffle(rows)
    got = components(30, rows)
    expected = linkage_clusters(ani, "ani", "single", 95.0)
    assert len(set(zip(got.tolist(), expected.tolist()))) == len(set(got.tolist())) == \
        len(set(expected.tolist()))
    assert all(got[i] == min(np.flatnonzero(got == got[i])) for i in range(30))


def test_numbering_follows_the_representatives_preference():
    groups = np.array([5, 5, 9, 9, 9, 2])
    rank = np.array([4, 1, 5, 0, 3, 2])
    cluster, representative = number_clusters(groups, rank)
    assert representative.tolist() == [1, 1, 3, 3, 3, 5]
    assert cluster.tolist() == [2, 2, 1, 1, 1, 3]


def test_centrality_is_the_mean_value_to_the_other_members():
    """Every other member counted in a small group, an even sample of a large one; a genome
    alone is never central; a distance counts as its negative; ties go to tie_rank."""
    ani = random_ani(30, 9)
    groups = np.array([0] * 12 + [1] * 17 + [2])
    calls = []

    def query(rows, columns):
        calls.append((rows.size, columns.size))
        return ani[np.ix_(rows, columns)]
    found = centrality(groups, query, "ani", sample=12)
    members = np.arange(12)
    expected = (ani[np.ix_(members, members)].sum(axis=1) - 100.0) / 11
    assert np.allclose(found[:12], expected)
    sample = 12 + np.linspace(0, 16, 12).round().astype(int)
    for genome in range(12, 29):
        others = [g for g in sample if g != genome]
        assert found[genome] == pytest.approx(np.mean(ani[genome, others]))
    assert found[29] == -np.inf and (17, 12) in calls
    assert np.allclose(centrality(groups, lambda r, c: 1 - ani[np.ix_(r, c)] / 100, "mash",
                                  sample=12)[:12], expected / 100 - 1)
    rank = central_first(np.zeros(3, int), lambda r, c: np.ones((r.size, c.size)), "ani",
                         np.array([2, 0, 1]))
    assert rank.tolist() == [2, 0, 1]


# -- the command --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def genomes(tmp_path_factory):
    """a, its 1 %-mutated copy a1 and a shorter 1 %-mutated part a2; b unrelated; c sharing only
    1,500 bases with a (Jaccard about 0.04: below detection at p = 10); an empty file."""
    directory = tmp_path_factory.mktemp("cluster_genomes")
    bases = Mutator(12)
    a = bases.random(20_000)
    texts = {"a.fa": a, "a1.fa": bases.mutate(a, 0.01), "a2.fa": bases.mutate(a[:15_000], 0.01),
             "b.fa": bases.random(20_000),
             "c.fa": np.concatenate([a[:1500], bases.random(18_500)])}
    paths = {}
    for name, sequence in texts.items():
        paths[name] = directory / name
        paths[name].write_bytes(b">x\n" + sequence.tobytes() + b"\n")
    paths["empty.fa"] = directory / "empty.fa"
    paths["empty.fa"].write_bytes(b"")
    return paths


def rows_of(path):
    lines = path.read_text().splitlines()
    return lines[0], lines[1], {row[0]: row[1:] for row in (line.split("\t") for line in lines[2:])}


def test_default_is_greedy_at_95_containment_ani_central_first(genomes, tmp_path, capsys):
    """The defaults (issue 53): greedy at 95 % containment ANI with its aligned fraction, the
    most central genome first; --order size is the largest-genome rule as before."""
    out = tmp_path / "c.tsv"
    assert run_status("cluster", *genomes.values(), "--index-bits", 10, "-o", out) == 0
    header, columns, rows = rows_of(out)
    assert "metric=ani threshold=ani>=95 method=greedy order=centrality" in header
    assert "ani_from=containment min_af=0.15" in header
    assert columns == "#genome\tcluster\trepresentative\tani\taligned_fraction"
    assert list(rows) == list(genomes)  # input order
    rep = {name: row[1] for name, row in rows.items()}
    # a, the genome its two mutants are made from, is the most central of the three
    assert rep["a.fa"] == rep["a1.fa"] == rep["a2.fa"] == "a.fa"
    assert rep["b.fa"] == "b.fa" and rep["c.fa"] == "c.fa" and rep["empty.fa"] == "empty.fa"
    # a2, a 1 %-mutated 75 % of a: its containment ANI is its identity, about 99 % (Mash's
    # ANI from the Jaccard counts a's other quarter against it), its aligned fraction 0.75
    assert float(rows["a2.fa"][2]) > 98.5 and abs(float(rows["a2.fa"][3]) - 0.75) < 0.05
    assert "empty.fa: empty file" in capsys.readouterr().err
    out = tmp_path / "size.tsv"
    assert run_status("cluster", *genomes.values(), "--index-bits", 10, "--order", "size",
                      "-o", out) == 0
    header, _, rows = rows_of(out)
    assert "order=size" in header
    rep = {name: row[1] for name, row in rows.items()}
    # a and a1 are the largest (equal size, a first in input order): a represents the a's
    assert rep["a.fa"] == rep["a1.fa"] == rep["a2.fa"] == "a.fa"
    assert rows["a.fa"][0] == "1" and float(rows["a1.fa"][2]) > 95


def test_below_detection_never_joins(genomes, tmp_path):
    """c's Jaccard with a passes --jaccard 0.02, but not detection at p = 10 (J >= 0.0975)."""
    pair = [genomes["a.fa"], genomes["c.fa"]]
    for detection, joined in (("3", False), ("0", True)):
        for method in ("greedy", "single", "average", "complete"):
            out = tmp_path / f"c{detection}{method}.tsv"
            assert run_status("cluster", *pair, "--jaccard", 0.02, "--index-bits", 10,
                              "--method", method, "--detection", detection, "-o", out) == 0
            _, _, rows = rows_of(out)
            assert (rows["c.fa"][1] == "a.fa") == joined, (detection, method)


def test_order_file_and_reps(genomes, tmp_path):
    order, out, reps = tmp_path / "order.txt", tmp_path / "c.tsv", tmp_path / "reps.txt"
    order.write_text("# best first\na2.fa\tq=99\nb.fa\n\nc.fa\na1.fa\na.fa\nempty.fa\n")
    assert run_status("cluster", *genomes.values(), "--order", order, "--reps", reps,
                      "-o", out) == 0
    header, _, rows = rows_of(out)
    assert "order=file" in header
    assert rows["a.fa"][1] == rows["a1.fa"][1] == "a2.fa" and rows["a2.fa"][0] == "1"
    assert reps.read_text().splitlines() == [str(genomes[name]) for name in
                                             ("a2.fa", "b.fa", "c.fa", "empty.fa")]


@pytest.mark.parametrize("options, message", [
    (["--ani", "0"], "--ani: must be an ANI in percent above 0, at most 100, not 0"),
    (["--ani", "101"], "--ani: must be an ANI in percent above 0, at most 100, not 101"),
    (["--jaccard", "1.5"], "--jaccard: must be a Jaccard value above 0, at most 1, not 1.5"),
    (["--mash", "1"], "--mash: must be a Mash distance from 0, below 1, not 1"),
    (["--ani", "95", "--mash", "0.05"], "argument --mash: not allowed with argument --ani"),
    (["--method", "ward"], "argument --method: invalid choice: 'ward'"),
    (["--pvalue"], "--pvalue: cluster prints no p-values"),
    (["--order", "no-such-file"], "no-such-file: --order: No such file or directory"),
    (["--plot", "x.xyz"], "x.xyz: unknown image format 'xyz'"),
    (["--scheduler", "garbage"], "--scheduler garbage: not a Dask scheduler address"),
])
def test_mistakes_are_one_line_and_write_nothing(genomes, tmp_path, capsys, options, message):
    out, reps = tmp_path / "c.tsv", tmp_path / "reps.txt"
    capsys.readouterr()
    assert run_status("cluster", *genomes.values(), "-o", out, "--reps", reps, *options) == 2
    assert message in one_error_line(capsys)
    assert not out.exists() and not reps.exists()


@pytest.mark.parametrize("table, message", [
    ("a.fa\nnot-a-genome\n", "line 2: --order names 'not-a-genome', which is not an input genome"),
    ("a.fa\nb.fa\na.fa\n", "line 3: --order names 'a.fa' again (line 1)"),
    ("a.fa\n", "--order does not name 5 input genome(s), first 'a1.fa'; name every genome once"),
])
def test_order_file_mistakes(genomes, tmp_path, capsys, table, message):
    order, out = tmp_path / "order.txt", tmp_path / "c.tsv"
    order.write_text(table)
    capsys.readouterr()
    assert run_status("cluster", *genomes.values(), "--order", order, "-o", out) == 2
    assert f"error: {order}: {message}" in one_error_line(capsys)
    assert not out.exists()


def test_reps_may_not_overwrite_an_input(genomes, tmp_path, capsys):
    capsys.readouterr()
    assert run_status("cluster", *genomes.values(), "-o", tmp_path / "c.tsv", "--reps",
                      genomes["b.fa"]) == 2
    assert "is also an input" in one_error_line(capsys)


@pytest.mark.parametrize("command", [["cluster", "--method", "average"],
                                     ["cluster", "--method", "complete"],
                                     ["dist", "--format", "newick"]])
def test_without_scipy_linkage_and_upgma_are_refused_in_one_line(genomes, tmp_path, capsys,
                                                                 monkeypatch, command):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "scipy" else find_spec(name, *rest))
    out = tmp_path / "out"
    capsys.readouterr()
    assert run_status(command[0], *genomes.values(), *command[1:], "-o", out) == 2
    assert "needs scipy (pip install 'kmer-sketch-accel[plot]')" in one_error_line(capsys)
    assert not out.exists()
