"""Heatmaps of a matrix of the chosen metric (``dist --plot``, ``cluster --plot``; matplotlib and
scipy).

Rows and columns are ordered by the leaves of a linkage tree of the metric's distance (1 - J,
1 - C made symmetric, the Mash distance for ani and mash; average linkage unless ``cluster`` used
another), and that dendrogram is drawn at the left of the heatmap, as ``sourmash plot`` does;
``--plot-order input`` keeps the input order and draws no tree. The colour scale is the metric's
own: Jaccard and containment 0..1, ANI in percent from the lowest detected value (rounded down to
5 %, at most 95 %) to 100 and the Mash distance from 0 to the largest detected distance (rounded
up to 0.05), the values beyond drawn in the end colour (an undetected pair has ANI 0, distance 1);
the same colour means "close" for every metric. Genome names label the rows and columns up to
100 genomes, in a font that shrinks with their number; beyond, they are left off. ``cluster``
adds a strip of one colour per cluster between the tree and the heatmap, the representatives'
names in bold, and a dashed line at the threshold on the tree.
"""

from __future__ import annotations  # numpy's types named below, imported where used

import math
import sys

from .choices import PLOT_ORDERS
from .io import InputError
from .metrics import lower_is_better, metric_distance

__all__ = ["PLOT_ORDERS", "METRIC_TITLES", "MAX_LABELLED", "linkage_tree", "dendrogram_order",
           "plot_format", "plot_matrix"]

#: how a plot's title and colour bar name each metric
METRIC_TITLES = {"jaccard": "Jaccard", "containment": "containment (row in column)",
                 "ani": "ANI (%)", "mash": "Mash distance"}
#: how the dendrogram's axis names each metric's distance
DISTANCE_LABELS = {"jaccard": "1 - Jaccard", "containment": "1 - containment (mean of both ways)",
                   "ani": "Mash distance (1 - ANI/100)", "mash": "Mash distance"}
#: genome names are drawn up to this many genomes
MAX_LABELLED = 100


def _symmetric_distance(metric: str, values: np.ndarray) -> np.ndarray:
    import numpy as np  # here: the command line's parser needs the names alone
    distance = np.clip(metric_distance(metric, values), 0.0, None)
    distance = (distance + distance.T) / 2
    np.fill_diagonal(distance, 0.0)
    return distance


def linkage_tree(distance: np.ndarray, method: str = "average") -> np.ndarray:
    """scipy's linkage matrix of a symmetric distance matrix (at least two genomes)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform
    return linkage(squareform(distance, checks=False), method=method)


def dendrogram_order(distance: np.ndarray, method: str = "average") -> list[int]:
    """Leaf order of the linkage tree (``method``) of a symmetric distance matrix."""
    n = distance.shape[0]
    if n < 3:
        return list(range(n))
    from scipy.cluster.hierarchy import leaves_list
    return leaves_list(linkage_tree(distance, method)).tolist()


def _pyplot(path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import scipy  # noqa: F401  (the dendrogram needs it)
    except ImportError:
        raise InputError(f"{path}: plotting needs matplotlib and scipy "
                         f"(pip install 'kmer-sketch-accel[plot]')") from None
    return plt


def plot_format(path) -> str:
    """The image format named by the suffix of ``path``; checked before any work is done."""
    path = str(path)
    if path == "-":
        raise InputError("-: --plot needs a file name (its suffix picks the image format)")
    plt = _pyplot(path)
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if suffix not in formats:
        raise InputError(f"{path}: unknown image format {suffix or '(no suffix)'!r}; use one of "
                         f"{', '.join(sorted(formats))}")
    return suffix


def colour_range(metric: str, values: np.ndarray) -> tuple[float, float, str]:
    """(low, high, the side whose values lie beyond: "min", "max" or "neither")."""
    import numpy as np
    off = values[~np.eye(values.shape[0], dtype=bool)]
    if metric == "ani":
        detected = off[off > 0]
        low = min(95.0, 5 * math.floor(detected.min() / 5)) if detected.size else 0.0
        return low, 100.0, "min" if off.size and off.min() < low else "neither"
    if metric == "mash":
        detected = off[off < 1]
        high = max(0.05, 0.05 * math.ceil(detected.max() / 0.05)) if detected.size else 1.0
        return 0.0, min(1.0, high), "max" if off.size and off.max() > high else "neither"
    return 0.0, 1.0, "neither"


def plot_matrix(values: np.ndarray, metric: str, names: list[str], file, image_format: str,
                title: str, order: str = "dendrogram", method: str = "average",
                clusters: np.ndarray | None = None, representatives=(),
                cut: float | None = None, labels: tuple[str, str] | None = None) -> None:
    """Draw the heatmap of ``values`` (the metric, rows in columns) into the open binary
    ``file`` in ``image_format`` (plot_format). ``clusters``: a cluster number per genome
    (coloured strip); ``representatives``: indices whose names are bold; ``cut``: the
    threshold as a distance, a dashed line on the tree; ``labels``: (the colour bar's, the
    tree's axis) instead of the metric's (METRIC_TITLES, DISTANCE_LABELS)."""
    import numpy as np
    metric_label, distance_label = labels or (METRIC_TITLES[metric], DISTANCE_LABELS[metric])
    plt = _pyplot(getattr(file, "name", "plot"))
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap
    values = np.asarray(values, dtype=np.float64)
    n = len(names)
    tree = None
    if order == "dendrogram" and n >= 2:
        tree = linkage_tree(_symmetric_distance(metric, values), method)
        from scipy.cluster.hierarchy import leaves_list
        leaves = leaves_list(tree).tolist()
    else:
        leaves = list(range(n))
    ordered = values[np.ix_(leaves, leaves)]
    labelled = n <= MAX_LABELLED
    side = min(4.0 + 0.12 * n, 16.0)
    size = max(4.0, min(8.0, 700.0 / max(n, 1)))  # the names' font size, points
    # room for the row names at the right of the heatmap (about 0.8 em a character, bold ones)
    gap = 0.8 * size / 72 * max(map(len, names), default=0) + 0.3 if labelled else 0.2
    widths = ([2.0] if tree is not None else []) + ([0.25] if clusters is not None else []) \
        + [side, gap, 0.3]
    figure = plt.figure(figsize=(sum(widths) + 0.5, side + (gap if labelled else 0.5) + 0.8))
    grid = figure.add_gridspec(1, len(widths), width_ratios=widths, wspace=0.0)
    column = 0
    if tree is not None:
        axes = figure.add_subplot(grid[0, column])
        from scipy.cluster.hierarchy import dendrogram
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20 * n + 1000))  # scipy draws the tree recursively
        try:
            dendrogram(tree, orientation="left", no_labels=True, ax=axes,
                       color_threshold=0, above_threshold_color="0.25")
        finally:
            sys.setrecursionlimit(limit)
        axes.set_ylim(10 * n, 0)  # leaf i at 10 i + 5: the first leaf at the top, as the rows
        if cut is not None:
            axes.axvline(cut, color="0.4", linestyle="--", linewidth=0.8)
        axes.set_xlabel(distance_label, fontsize=8)
        for spine in ("top", "right", "left"):
            axes.spines[spine].set_visible(False)
        axes.set_yticks([])
        axes.tick_params(axis="x", labelsize=7)
        column += 1
    if clusters is not None:
        axes = figure.add_subplot(grid[0, column])
        ids = np.asarray(clusters)[leaves]
        # tab20's ten distinct hues first, then their light shades: neighbours differ in hue
        colours = colormaps["tab20"].colors
        palette = ListedColormap(colours[0::2] + colours[1::2])
        axes.imshow((ids - 1)[:, None] % 20, cmap=palette, vmin=0, vmax=19, aspect="auto",
                    interpolation="nearest")
        axes.set_xticks([])
        axes.set_yticks([])
        column += 1
    axes = figure.add_subplot(grid[0, column])
    low, high, extend = colour_range(metric, values)
    cmap = "viridis_r" if lower_is_better(metric) else "viridis"
    image = axes.imshow(ordered, cmap=cmap, vmin=low, vmax=high, interpolation="nearest",
                        aspect="auto")
    if labelled:
        labels = [names[i] for i in leaves]
        axes.set_xticks(range(n), labels, rotation=90, fontsize=size)
        axes.set_yticks(range(n), labels, fontsize=size)
        axes.yaxis.tick_right()
        bold = set(representatives)
        for tick_labels in (axes.get_xticklabels(), axes.get_yticklabels()):
            for label, genome in zip(tick_labels, leaves):
                if genome in bold:
                    label.set_fontweight("bold")
    else:
        axes.set_xticks([])
        axes.set_yticks([])
    axes.set_title(title, fontsize=10)
    colour_bar = figure.colorbar(image, cax=figure.add_subplot(grid[0, column + 2]),
                                 extend=extend)
    colour_bar.set_label(metric_label, fontsize=8)
    colour_bar.ax.tick_params(labelsize=7)
    figure.savefig(file, format=image_format, dpi=150, bbox_inches="tight")
    plt.close(figure)
