"""``cluster`` on 20 real bacterial genomes of 5 genera (Debian's ragout-examples and
kaptive-example, as bench/near_zero.py reads them): at --ani 95 it groups exactly the genomes
that the exact-k-mer ANI (Mash's formula on the exact Jaccard of the full sets of canonical
31-mers) groups, greedily and by single, average and complete linkage, with both estimators.

The exact groupings are made here from the exact matrix, independently of host.clustering: the
greedy rule in a few lines, and scipy's fcluster on the whole matrix for the linkages (the
command cuts each single-linkage component on its own)."""

import gzip

import numpy as np
import pytest

from bench.near_zero import distinct_kmers, exact_intersections, genome_files
from host.similarity import mash_distance
from tests.cli_helpers import run_status

K, ANI = 31, 95.0


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The genomes' sketch file, their exact ANI matrix and sizes, an --order file of exact
    size (largest first)."""
    directory = tmp_path_factory.mktemp("real")
    paths = [path for _, _, path in genome_files()]
    names = [path.name for path in paths]
    sets = [distinct_kmers(gzip.decompress(path.read_bytes()), K) for path in paths]
    sizes = np.array([s.size for s in sets], dtype=np.float64)
    shared = exact_intersections(sets)
    del sets
    exact_j = shared / (sizes[:, None] + sizes[None, :] - shared)
    ani = 100.0 * (1.0 - mash_distance(exact_j, K))
    sketch = directory / "real.sketch"
    assert run_status("sketch", *map(str, paths), "-o", sketch) == 0
    order = directory / "order.txt"
    preferred = np.lexsort((np.arange(len(names)), -sizes))
    order.write_text("".join(f"{names[i]}\t{int(sizes[i])}\n" for i in preferred))
    return {"names": names, "ani": ani, "sketch": sketch, "order": order,
            "preferred": preferred, "paths": paths}


def exact_greedy(ani: np.ndarray, preferred: np.ndarray) -> list[int]:
    """Each genome's representative: the closest earlier representative at >= ANI, else
    itself."""
    representative = [-1] * len(preferred)
    chosen: list[int] = []
    for genome in preferred.tolist():
        passing = [r for r in chosen if ani[genome, r] >= ANI]
        if passing:
            representative[genome] = max(passing, key=lambda r: (ani[genome, r],
                                                                 -chosen.index(r)))
        else:
            representative[genome] = genome
            chosen.append(genome)
    return representative


def exact_linkage(ani: np.ndarray, method: str) -> list[int]:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    distance = 1.0 - ani / 100.0
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform((distance + distance.T) / 2, checks=False), method=method)
    return fcluster(tree, t=1.0 - ANI / 100.0, criterion="distance").tolist()


def partition(labels) -> set[frozenset]:
    groups: dict = {}
    for genome, label in enumerate(labels):
        groups.setdefault(label, set()).add(genome)
    return {frozenset(group) for group in groups.values()}


def read_clusters(path, names):
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# kmer-sketch-accel") and "threshold=ani>=95" in lines[0]
    assert lines[1] == "#genome\tcluster\trepresentative\tani"
    rows = [line.split("\t") for line in lines[2:]]
    assert [row[0] for row in rows] == names  # input order
    index = {name: i for i, name in enumerate(names)}
    return ([int(row[1]) for row in rows], [index[row[2]] for row in rows],
            [float(row[3]) for row in rows])


def test_the_genomes_probe_the_threshold(real):
    """Pairs within 0.5 % ANI of 95 on both sides (H. pylori), so the groupings depend on it."""
    ani = real["ani"][np.triu_indices(len(real["names"]), 1)]
    assert np.any((ani >= ANI) & (ani < ANI + 0.5)) and np.any((ani < ANI) & (ani > ANI - 0.5))


@pytest.mark.parametrize("estimator", ["hll", "mle"])
@pytest.mark.parametrize("method", ["greedy", "single", "average", "complete"])
def test_cluster_groups_as_the_exact_ani_does(real, tmp_path, method, estimator):
    out = tmp_path / "clusters.tsv"
    assert run_status("cluster", real["sketch"], "--method", method, "--estimator", estimator,
                      "--order", real["order"], "-o", out) == 0
    cluster, representative, values = read_clusters(out, real["names"])
    if method == "greedy":
        expected = exact_greedy(real["ani"], real["preferred"])
        assert representative == expected
        got = partition(representative)
    else:
        expected = exact_linkage(real["ani"], method)
        got = partition(cluster)
    assert got == partition(expected)
    assert partition(cluster) == partition(representative)
    # every representative is its cluster's most preferred genome and its clusters are numbered
    # by it; the values are each genome's ANI to its representative, within 0.5 of the exact one
    rank = {genome: position for position, genome in enumerate(real["preferred"].tolist())}
    reps = sorted(set(representative), key=rank.get)
    assert [cluster[r] for r in reps] == list(range(1, len(reps) + 1))
    for genome, rep in enumerate(representative):
        assert rank[rep] <= rank[genome]
        assert abs(values[genome] - real["ani"][genome, rep]) < 0.5
        if method == "greedy" and genome != rep:
            assert values[genome] >= ANI


def test_methods_differ_on_the_real_genomes(real):
    """Complete linkage splits what single linkage joins at 95 % (the H. pylori chain)."""
    assert partition(exact_linkage(real["ani"], "complete")) != \
        partition(exact_linkage(real["ani"], "single"))


def test_reps_file_lists_the_representatives_paths(real, tmp_path):
    out, reps = tmp_path / "c.tsv", tmp_path / "reps.txt"
    assert run_status("cluster", real["sketch"], "--order", real["order"], "-o", out,
                      "--reps", reps) == 0
    cluster, representative, _ = read_clusters(out, real["names"])
    chosen = sorted(set(representative), key=lambda r: cluster[r])
    assert reps.read_text().splitlines() == [str(real["paths"][r]) for r in chosen]
