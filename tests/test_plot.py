"""Heatmaps (host/plot.py; ``dist --plot``, ``cluster --plot``): the chosen metric drawn and named
in the title and colour bar, rows in the order of the average-linkage dendrogram drawn beside it
(or in input order), names up to 100 genomes and none above, clusters in colour."""

import re

import matplotlib
import numpy as np
import pytest

from host.plot import MAX_LABELLED, colour_range, dendrogram_order, plot_matrix
from tests.cli_helpers import run_status
from tests.genomes import write_related_genomes

PNG = b"\x89PNG\r\n\x1a\n"


def test_dendrogram_order_groups_similar_genomes():
    similarity = np.array([[1, .1, .9, .1], [.1, 1, .1, .8], [.9, .1, 1, .1], [.1, .8, .1, 1]])
    order = dendrogram_order(1 - similarity)
    assert sorted(order) == [0, 1, 2, 3]
    assert abs(order.index(0) - order.index(2)) == 1 and abs(order.index(1) - order.index(3)) == 1


def svg_text(tmp_path, values, metric, names, **options) -> str:
    """The plot as SVG with its text kept as text (svg.fonttype none)."""
    path = tmp_path / "p.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}), open(path, "wb") as file:
        plot_matrix(values, metric, names, file, "svg", "TITLE", **options)
    return path.read_text()


def pair_matrix(n: int, seed: int = 1) -> np.ndarray:
    """ANI values of n genomes in two groups (99 % within, 80 % across), input order mixed."""
    rng = np.random.default_rng(seed)
    group = rng.permutation(np.arange(n) % 2)
    values = np.where(group[:, None] == group[None, :], 99.0, 80.0) - rng.random((n, n)) * 0.1
    values = (values + values.T) / 2
    np.fill_diagonal(values, 100.0)
    return values, group


def label_order(svg: str, names) -> list[str]:
    """The genome names in the order their first labels appear in the SVG."""
    found = [name for name in re.findall(r">\s*([^<>]+?)\s*</text>", svg) if name in names]
    return list(dict.fromkeys(found))


def test_rows_follow_the_dendrogram_and_the_metric_is_named(tmp_path):
    values, group = pair_matrix(8)
    names = [f"genome{i}" for i in range(8)]
    svg = svg_text(tmp_path, values, "ani", names)
    assert "TITLE" in svg and "ANI (%)" in svg
    shown = [int(name[6:]) for name in label_order(svg, names)]
    assert sorted(shown) == list(range(8))
    assert len({tuple(group[shown[:4]]), tuple(group[shown[4:]])}) == 2  # groups contiguous
    assert set(group[shown[:4]]) in ({0}, {1})
    svg_input = svg_text(tmp_path, values, "ani", names, order="input")
    assert label_order(svg_input, names) == names
    # the dendrogram: its 7 links and an axis more than the picture without it
    assert svg.count("<path") >= svg_input.count("<path") + 7


def test_names_up_to_100_genomes_and_none_above(tmp_path):
    for n, labelled in ((MAX_LABELLED, True), (MAX_LABELLED + 1, False)):
        values, _ = pair_matrix(n)
        names = [f"genome{i}" for i in range(n)]
        assert bool(label_order(svg_text(tmp_path, values, "mash", names), names)) == labelled


def test_colour_ranges_are_the_metrics_own():
    values = np.array([[100.0, 96.3, 0.0], [96.3, 100.0, 91.2], [0.0, 91.2, 100.0]])
    assert colour_range("ani", values) == (90.0, 100.0, "min")
    assert colour_range("mash", 1 - values / 100) == (0.0, 0.1, "max")
    assert colour_range("jaccard", values / 100) == (0.0, 1.0, "neither")


@pytest.fixture(scope="module")
def genomes(tmp_path_factory):
    directory = tmp_path_factory.mktemp("plot_genomes")
    return [str(p) for p in write_related_genomes(directory, count=5, length=20_000, step=0.01,
                                                  seed=4)]


@pytest.mark.parametrize("options", [[], ["--metric", "ani"], ["--metric", "mash"],
                                     ["--metric", "containment", "--plot-order", "input"]])
def test_dist_plot_writes_an_image(genomes, tmp_path, options):
    image = tmp_path / "heat.png"
    assert run_status("dist", *genomes, "-o", tmp_path / "d.tsv", *options, "--plot",
                      image) == 0
    assert image.read_bytes()[:8] == PNG


@pytest.mark.parametrize("method", ["greedy", "complete"])
def test_cluster_plot_colours_the_clusters(genomes, tmp_path, method):
    image = tmp_path / "clusters.png"
    assert run_status("cluster", *genomes, "--ani", 98, "--method", method, "-o",
                      tmp_path / "c.tsv", "--plot", image) == 0
    assert image.read_bytes()[:8] == PNG
