"""Clustered heatmap of a similarity matrix (matplotlib; rows ordered by average linkage)."""

import numpy as np

from .io import InputError

__all__ = ["cluster_order", "plot_format", "plot_heatmap"]


def cluster_order(similarity: np.ndarray) -> list[int]:
    """Leaf order of an average-linkage (UPGMA) tree on the distance 1 - similarity."""
    n = similarity.shape[0]
    if n < 3:
        return list(range(n))
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform
    distance = np.clip(1.0 - similarity, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    distance = (distance + distance.T) / 2
    return leaves_list(linkage(squareform(distance, checks=False), method="average")).tolist()


def _pyplot(path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import scipy  # noqa: F401  (cluster_order needs it)
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


def plot_heatmap(similarity: np.ndarray, names: list[str], file, image_format: str,
                 title: str) -> None:
    """Draw the heatmap into the open binary ``file`` in ``image_format`` (see plot_format)."""
    plt = _pyplot(getattr(file, "name", "plot"))
    order = cluster_order(similarity)
    ordered = similarity[np.ix_(order, order)]
    size = min(4 + 0.18 * len(names), 40)
    figure, axes = plt.subplots(figsize=(size + 1.5, size))
    image = axes.imshow(ordered, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    if len(names) <= 80:
        labels = [names[i] for i in order]
        axes.set_xticks(range(len(names)), labels, rotation=90, fontsize=7)
        axes.set_yticks(range(len(names)), labels, fontsize=7)
    else:
        axes.set_xticks([])
        axes.set_yticks([])
    axes.set_title(title)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    figure.tight_layout()
    figure.savefig(file, format=image_format, dpi=150)
    plt.close(figure)
