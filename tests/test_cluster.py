"""``cluster`` on 20 real bacterial genomes of 5 genera (Debian's ragout-examples and
kaptive-example, as bench/near_zero.py reads them): at --ani 95 it groups exactly the genomes
that the exact-k-mer ANI groups, greedily and by single, average and complete linkage, with
both estimators and both ANIs: Mash's formula on the exact Jaccard of the full sets of
canonical 31-mers (--ani-from jaccard), and 100 C^(1/k) of the exact containment of the smaller
genome in the larger (--ani-from containment, the default). Then the choice of representatives
(--order centrality, the default; --quality) on the five H. pylori genomes, and an incomplete
genome (the first half of E. coli MG1655) against its complete one.

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
    containment_ani = 100.0 * (shared / np.minimum(sizes[:, None], sizes[None, :])) ** (1 / K)
    sketch = directory / "real.sketch"
    assert run_status("sketch", *map(str, paths), "-o", sketch) == 0
    order = directory / "order.txt"
    preferred = np.lexsort((np.arange(len(names)), -sizes))
    order.write_text("".join(f"{names[i]}\t{int(sizes[i])}\n" for i in preferred))
    return {"names": names, "ani": {"jaccard": ani, "containment": containment_ani},
            "sketch": sketch, "order": order, "preferred": preferred, "paths": paths,
            "sizes": sizes}


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


def read_clusters(path, names, ani_from="containment"):
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# kmer-sketch-accel") and "threshold=ani>=95" in lines[0]
    assert f"ani_from={ani_from}" in lines[0]
    assert lines[1] == "#genome\tcluster\trepresentative\tani" + (
        "\taligned_fraction" if ani_from == "containment" else "")
    rows = [line.split("\t") for line in lines[2:]]
    assert [row[0] for row in rows] == names  # input order
    index = {name: i for i, name in enumerate(names)}
    return ([int(row[1]) for row in rows], [index[row[2]] for row in rows],
            [float(row[3]) for row in rows])


@pytest.mark.parametrize("ani_from, margin", [("jaccard", 0.5), ("containment", 0.6)])
def test_the_genomes_probe_the_threshold(real, ani_from, margin):
    """Pairs within 0.5 % ANI of 95 on both sides (H. pylori; 0.6 % for the containment ANI,
    which has Gambia94/24-Puno120 at 94.84 and G27-Gambia94/24 at 95.57), so the groupings
    depend on it."""
    ani = real["ani"][ani_from][np.triu_indices(len(real["names"]), 1)]
    assert np.any((ani >= ANI) & (ani < ANI + margin))
    assert np.any((ani < ANI) & (ani > ANI - margin))


@pytest.mark.parametrize("ani_from", ["jaccard", "containment"])
@pytest.mark.parametrize("estimator", ["hll", "mle"])
@pytest.mark.parametrize("method", ["greedy", "single", "average", "complete"])
def test_cluster_groups_as_the_exact_ani_does(real, tmp_path, method, estimator, ani_from):
    out = tmp_path / "clusters.tsv"
    assert run_status("cluster", real["sketch"], "--method", method, "--estimator", estimator,
                      "--order", real["order"], "--ani-from", ani_from, "-o", out) == 0
    cluster, representative, values = read_clusters(out, real["names"], ani_from)
    exact = real["ani"][ani_from]
    if method == "greedy":
        expected = exact_greedy(exact, real["preferred"])
        assert representative == expected
        got = partition(representative)
    else:
        expected = exact_linkage(exact, method)
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
        assert abs(values[genome] - exact[genome, rep]) < 0.5
        if method == "greedy" and genome != rep:
            assert values[genome] >= ANI


def test_methods_differ_on_the_real_genomes(real):
    """Complete linkage splits what single linkage joins at 95 % (the H. pylori chain)."""
    for exact in real["ani"].values():
        assert partition(exact_linkage(exact, "complete")) != \
            partition(exact_linkage(exact, "single"))


def test_reps_file_lists_the_representatives_paths(real, tmp_path):
    out, reps = tmp_path / "c.tsv", tmp_path / "reps.txt"
    assert run_status("cluster", real["sketch"], "--order", real["order"], "-o", out,
                      "--reps", reps) == 0
    cluster, representative, _ = read_clusters(out, real["names"])
    chosen = sorted(set(representative), key=lambda r: cluster[r])
    assert reps.read_text().splitlines() == [str(real["paths"][r]) for r in chosen]


PYLORI = ["ELS37.fasta.gz", "G27.fasta.gz", "Gambia94_24.fasta.gz", "Puno120.fasta.gz",
          "SJM180.fasta.gz"]


def pylori_groups(path, names) -> list[set[str]]:
    cluster, representative, _ = read_clusters(path, names)
    groups: dict = {}
    for genome, label in enumerate(cluster):
        if names[genome] in PYLORI:
            groups.setdefault(label, set()).add(names[genome])
    return list(groups.values())


def test_central_representatives_keep_a_species_whole(real, tmp_path):
    """The five H. pylori genomes at 95 % ANI, greedy: the largest-genome rule (--order size)
    makes Gambia94/24 the representative, 94.8 % from Puno120 (exact containment ANI), so
    Puno120 is a species of its own; the default, the most central genome first, makes one
    within 95 % of all four the representative and keeps the species whole."""
    index = {name: i for i, name in enumerate(real["names"])}
    exact = real["ani"]["containment"]
    pylori = [index[name] for name in PYLORI]
    by_size, central = tmp_path / "size.tsv", tmp_path / "central.tsv"
    assert run_status("cluster", real["sketch"], "--order", "size", "-o", by_size) == 0
    assert run_status("cluster", real["sketch"], "-o", central) == 0
    assert "order=centrality" in central.read_text().splitlines()[0]
    largest = max(pylori, key=lambda i: real["sizes"][i])
    assert real["names"][largest] == "Gambia94_24.fasta.gz"
    assert min(exact[largest, pylori]) < ANI  # it is on the species' edge
    assert sorted(map(sorted, pylori_groups(by_size, real["names"]))) == [
        sorted(set(PYLORI) - {"Puno120.fasta.gz"}), ["Puno120.fasta.gz"]]
    assert pylori_groups(central, real["names"]) == [set(PYLORI)]
    _, representative, _ = read_clusters(central, real["names"])
    rep = representative[index["Puno120.fasta.gz"]]
    assert min(exact[rep, pylori]) >= ANI
    # the representative is the most central of the five: the highest mean exact ANI to the
    # other four (within the estimates' error: ELS37 96.36, SJM180 96.26 exact)
    means = {i: np.mean([exact[i, j] for j in pylori if j != i]) for i in pylori}
    assert means[rep] >= max(means.values()) - 0.2


def test_quality_tables_order_the_representatives(real, tmp_path):
    """--quality with a CheckM2 report (names without suffixes) and a CheckM --tab_table
    (strain heterogeneity weighed in): the best score of each cluster is its representative;
    Puno120 best makes it split the species (Gambia94/24 is 94.8 % from it), SJM180 best keeps
    it whole."""
    def table(path, best, checkm1=False):
        header = ("Bin Id\tMarker lineage\tCompleteness\tContamination\tStrain heterogeneity\n"
                  if checkm1 else "Name\tCompleteness\tContamination\tCompleteness_Model_Used\n")
        lines = []
        for name in real["names"]:
            stem = name.split(".")[0]
            completeness = 99.0 if name == best else 95.0
            # CheckM1: 2 % contamination of which 100 % strain heterogeneity costs 8, not 10
            lines.append(f"{stem}\tk__Bacteria\t{completeness}\t2.0\t100.0\n" if checkm1 else
                         f"{stem}\t{completeness}\t1.0\tNeural Network\n")
        path.write_text(header + "".join(lines))
        return path

    for best, checkm1, whole in (("Puno120.fasta.gz", False, False),
                                 ("SJM180.fasta.gz", True, True)):
        out = tmp_path / "c.tsv"
        assert run_status("cluster", real["sketch"], "--quality",
                          table(tmp_path / "q.tsv", best, checkm1), "-o", out) == 0
        assert "order=quality" in out.read_text().splitlines()[0]
        _, representative, _ = read_clusters(out, real["names"])
        index = {name: i for i, name in enumerate(real["names"])}
        assert representative[index[best]] == index[best]
        assert (len(pylori_groups(out, real["names"])) == 1) == whole


@pytest.mark.parametrize("case, options, expected", [
    ("quality with order", ["--quality", "TABLE", "--order", "size"], "give one of them"),
    ("order quality alone", ["--order", "quality"], "needs --quality TABLE"),
    ("ani-from with jaccard", ["--jaccard", "0.5", "--ani-from", "jaccard"],
     "applies to --ani"),
    ("min-af with jaccard ani", ["--ani-from", "jaccard", "--min-af", "0.5"],
     "use it with --ani-from containment"),
    ("min-af above 1", ["--min-af", "1.5"], "must be from 0 to 1"),
    ("table without a genome", ["--quality", "SHORT"], "has no line for genome"),
    ("table without contamination", ["--quality", "NOCOLUMN"], "no Contamination column"),
])
def test_representative_and_ani_mistakes_are_one_line(real, tmp_path, capsys, case, options,
                                                      expected):
    table = tmp_path / "q.tsv"
    table.write_text("Name\tCompleteness\tContamination\n" + "".join(
        f"{name}\t90\t1\n" for name in real["names"]))
    short = tmp_path / "short.tsv"
    short.write_text("Name\tCompleteness\tContamination\nELS37\t90\t1\n")
    no_column = tmp_path / "nocolumn.tsv"
    no_column.write_text("Name\tCompleteness\nELS37\t90\n")
    files = {"TABLE": str(table), "SHORT": str(short), "NOCOLUMN": str(no_column)}
    out = tmp_path / "c.tsv"
    status = run_status("cluster", real["sketch"], *[files.get(o, o) for o in options],
                        "-o", out)
    assert status == 2 and not out.exists()
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: ") and expected in error[0], error


@pytest.fixture(scope="module")
def half_of_mg1655(real, tmp_path_factory):
    """E. coli MG1655 and its first half (an incomplete genome of identical sequence)."""
    directory = tmp_path_factory.mktemp("half")
    whole = next(path for path in real["paths"] if path.name.startswith("MG1655"))
    text = gzip.decompress(whole.read_bytes())
    sequence = b"".join(line.strip() for line in text.splitlines()[1:]
                        if not line.startswith(b">"))
    half = directory / "MG1655_half.fa"
    half.write_bytes(b">first half\n" + sequence[:len(sequence) // 2] + b"\n")
    return whole, half


def test_an_incomplete_genome_clusters_with_its_complete_one(half_of_mg1655, tmp_path):
    """The default (containment ANI) puts the first half of MG1655 in MG1655's cluster at
    99 %, at ANI 100 and aligned fraction 0.5; Mash's ANI (--ani-from jaccard: 98.7 %) makes
    it a cluster of its own, as does --min-af 0.6; search prints both ANIs, the containment
    one with its aligned fraction."""
    whole, half = half_of_mg1655
    clusters = {}
    for name, options in {"default": [], "jaccard": ["--ani-from", "jaccard"],
                          "min_af": ["--min-af", "0.6"]}.items():
        out = tmp_path / f"{name}.tsv"
        assert run_status("cluster", whole, half, "--ani", "99", *options, "-o", out) == 0
        clusters[name] = [line.split("\t") for line in out.read_text().splitlines()[2:]]
    assert [row[1] for row in clusters["default"]] == ["1", "1"]
    genome, cluster, representative, ani, fraction = clusters["default"][1]
    assert representative == whole.name and float(ani) == 100.0
    assert abs(float(fraction) - 0.5) < 0.02
    assert [row[1] for row in clusters["jaccard"]] == ["1", "2"]
    assert [row[1] for row in clusters["min_af"]] == ["1", "2"]
    values = {}
    both = tmp_path / "both.sketch"
    assert run_status("sketch", whole, half, "-o", both) == 0
    for ani_from in ("jaccard", "containment"):
        out = tmp_path / f"search_{ani_from}.tsv"
        assert run_status("search", half, "--db", both, "--metric", "ani", "--ani-from",
                          ani_from, "-o", out) == 0
        lines = out.read_text().splitlines()
        values[ani_from] = {row[1]: row[2:] for row in (line.split("\t") for line in lines[2:])}
    assert abs(float(values["jaccard"][whole.name][0]) - 98.7) < 0.05
    assert values["containment"][whole.name][0] == "100"
    assert abs(float(values["containment"][whole.name][1]) - 0.5) < 0.02
