"""Trees (``dist --format newick``, host/trees.py) read back by a real Newick parser, Biopython's
Bio.Phylo: names as written (quoted where Newick needs it), branch lengths that give back an
additive distance (neighbour joining) or an ultrametric one (UPGMA) exactly."""

import io
import itertools

import numpy as np
import pytest
from Bio import Phylo

from host.trees import neighbour_joining, newick, newick_name, upgma
from tests.cli_helpers import run_status
from tests.genomes import Mutator

NAMES = ["a b", "o'k", "c_d", "e(f)", "g:h;", "plain.fa.gz", "x,y", "[z]"]


def parsed(text: str):
    tree = Phylo.read(io.StringIO(text), "newick")
    leaves = {leaf.name: leaf for leaf in tree.get_terminals()}
    return tree, leaves


def path_lengths(text: str, names) -> np.ndarray:
    tree, leaves = parsed(text)
    assert sorted(leaves) == sorted(names)
    n = len(names)
    out = np.zeros((n, n))
    for i, j in itertools.combinations(range(n), 2):
        out[i, j] = out[j, i] = tree.distance(leaves[names[i]], leaves[names[j]])
    return out


def random_tree_distances(rng, n: int, ultrametric: bool) -> np.ndarray:
    """Path lengths between the leaves of a random binary tree of positive branches; with
    ``ultrametric`` every leaf at the same depth below the root."""
    clusters = [[i] for i in range(n)]
    to_top = np.zeros(n)  # each leaf's path length up to the top of its cluster
    distance = np.zeros((n, n))
    while len(clusters) > 1:
        a, b = sorted(rng.choice(len(clusters), 2, replace=False).tolist(), reverse=True)
        left, right = clusters[a], clusters[b]
        if ultrametric:
            top = max(to_top[left[0]], to_top[right[0]]) + rng.uniform(0.01, 0.2)
            la, lb = top - to_top[left[0]], top - to_top[right[0]]
        else:
            la, lb = rng.uniform(0.01, 0.2, 2)
        for x in left:
            for y in right:
                distance[x, y] = distance[y, x] = to_top[x] + la + to_top[y] + lb
        to_top[left] += la
        to_top[right] += lb
        clusters.pop(a)
        clusters.pop(b)
        clusters.append(left + right)
    return distance


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("build, ultrametric", [(neighbour_joining, False), (upgma, True)])
def test_trees_give_back_the_distance_they_were_built_from(seed, build, ultrametric):
    """Neighbour joining gives back any additive distance, UPGMA an ultrametric one."""
    distance = random_tree_distances(np.random.default_rng(seed), len(NAMES), ultrametric)
    assert np.allclose(path_lengths(newick(build(distance), NAMES), NAMES), distance, atol=1e-7)


def test_names_are_quoted_only_where_newick_needs_it():
    assert newick_name("plain.fa.gz") == "plain.fa.gz"
    assert newick_name("c_d") == "'c_d'"  # unquoted, a parser reads _ as a blank
    assert newick_name("o'k") == "'o''k'"


def test_one_and_two_genomes_and_a_deep_tree():
    assert newick(upgma(np.zeros((1, 1))), ["only"]) == "only;"
    assert newick(neighbour_joining(np.array([[0, .4], [.4, 0]])), ["a", "b"]) == "(a:0.2,b:0.2);"
    n = 3000  # a caterpillar n deep: written without recursion
    distance = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(float)
    text = newick(upgma(distance), [f"g{i}" for i in range(n)])
    assert text.count("(") == n - 1


@pytest.fixture(scope="module")
def genomes(tmp_path_factory):
    """Six genomes evolved along a tree: a root sequence of 40 kb, two lineages with 3 % of
    their bases redrawn, each of them two or three genomes with 0.5 to 2 % more."""
    directory = tmp_path_factory.mktemp("tree_genomes")
    bases = Mutator(9)
    mutate = bases.mutate
    root = bases.random(40_000)
    lineages = [mutate(root, 0.03), mutate(root, 0.03)]
    leaves = [mutate(lineages[0], f) for f in (0.005, 0.01, 0.02)] + \
        [mutate(lineages[1], f) for f in (0.005, 0.015, 0.01)]
    paths = []
    for i, sequence in enumerate(leaves):
        path = directory / f"genome_{i}.fa"
        path.write_bytes(b">g\n" + sequence.tobytes() + b"\n")
        paths.append(str(path))
    return paths


def mash_matrix(genomes, path):
    assert run_status("dist", *genomes, "--metric", "mash", "-o", path) == 0
    lines = path.read_text().splitlines()
    names = lines[1].split("\t")[1:]
    return names, np.array([[float(v) for v in line.split("\t")[1:]] for line in lines[2:]])


@pytest.mark.parametrize("tree", ["upgma", "nj"])
def test_dist_newick_is_read_back_with_its_names_and_mash_distances(genomes, tmp_path, tree):
    """The tree's path lengths are those of scipy's average linkage (UPGMA: twice the
    cophenetic height) or of Biopython's own neighbour joining, on the Mash distances dist
    prints (6 significant digits)."""
    out = tmp_path / "tree.nwk"
    assert run_status("dist", *genomes, "--format", "newick", "--tree", tree, "-o", out) == 0
    names, mash = mash_matrix(genomes, tmp_path / "mash.tsv")
    assert names == [f"genome_{i}.fa" for i in range(len(genomes))]
    text = out.read_text()
    assert text.count("\n") == 1 and text.endswith(";\n")
    lengths = path_lengths(text.strip(), names)
    assert f"tree={tree} distance=mash" in (tmp_path / "tree.nwk.params").read_text()
    if tree == "upgma":
        from scipy.cluster.hierarchy import cophenet, linkage
        from scipy.spatial.distance import squareform
        expected = squareform(cophenet(linkage(squareform(mash, checks=False), "average")))
    else:
        from Bio.Phylo.TreeConstruction import DistanceMatrix, DistanceTreeConstructor
        reference = DistanceTreeConstructor().nj(DistanceMatrix(
            names, [mash[i, :i + 1].tolist() for i in range(len(names))]))
        assert min(clade.branch_length for clade in reference.find_clades()
                   if clade.branch_length is not None) >= 0  # no length clamped here
        leaves = {leaf.name: leaf for leaf in reference.get_terminals()}
        expected = np.array([[reference.distance(leaves[a], leaves[b]) if a != b else 0.0
                              for b in names] for a in names])
    assert np.allclose(lengths, expected, atol=1e-5)


def test_three_genomes_nj_is_exact(genomes, tmp_path):
    """Three distances are always additive (the lengths here are positive)."""
    out = tmp_path / "tree.nwk"
    three = [genomes[0], genomes[1], genomes[4]]
    assert run_status("dist", *three, "--format", "newick", "--tree", "nj", "-o", out) == 0
    names, mash = mash_matrix(three, tmp_path / "mash.tsv")
    assert np.allclose(path_lengths(out.read_text().strip(), names), mash, atol=2e-6)


@pytest.mark.parametrize("options, message", [
    (["--format", "newick", "--metric", "containment"],
     "--format newick: needs a symmetric distance"),
    (["--tree", "nj"], "--tree: chooses how --format newick builds its tree"),
    (["--format", "newick", "--pvalue"], "--pvalue: adds a column to --format edges lines")])
def test_newick_mistakes_are_one_line(genomes, tmp_path, capsys, options, message):
    out = tmp_path / "t.nwk"
    assert run_status("dist", *genomes, *options, "-o", out) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert not out.exists()
